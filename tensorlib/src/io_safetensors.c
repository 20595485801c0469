/*
 * io_safetensors.c - the safetensors format: an 8-byte little-endian header length N, N bytes
 * of JSON ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
 * optionally "__metadata__": {string: string}}), then the raw little-endian data, offsets
 * relative to its start. The header is read with jansson and checked as the reference
 * implementation checks it: known keys and dtypes only, sizes that match the shapes, and
 * tensors that tile the data exactly (no gaps, no overlaps). Files are mapped, not read.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

#define HEADER_MAX (100u << 20) /* the reference implementation's limit */

static const struct {
    const char *name;
    tl_dtype dtype;
} st_types[] = {
    {"U8", TL_U8},   {"U32", TL_U32}, {"I16", TL_I16}, {"I32", TL_I32}, {"I64", TL_I64},
    {"F16", TL_F16}, {"BF16", TL_BF16}, {"F32", TL_F32}, {"F64", TL_F64},
};

static const char *st_name(tl_dtype dtype)
{
    for (size_t i = 0; i < sizeof st_types / sizeof st_types[0]; i++)
        if (st_types[i].dtype == dtype)
            return st_types[i].name;
    return NULL;
}

/* One header entry, checked. */
typedef struct st_entry {
    const char *name;
    tl_dtype dtype;
    size_t ndim, shape[TL_MAX_DIMS];
    size_t begin, end;
} st_entry;

/* A JSON integer in [0, SIZE_MAX]. */
static bool as_size(const json_t *j, size_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return false;
    *out = (size_t)json_integer_value(j);
    return true;
}

static tl_status parse_entry(const char *op, const char *name, const json_t *v, size_t data_size,
                             st_entry *e)
{
    const json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    const json_t *offs = json_object_get(v, "data_offsets");
    e->name = name;
    if (!json_is_object(v) || json_object_size(v) != 3 || !json_is_string(dt) ||
        !json_is_array(shape) || !json_is_array(offs) || json_array_size(offs) != 2)
        return tl_fail(TL_ERR_ARG, "%s: tensor %s: want exactly dtype, shape and data_offsets",
                       op, name);
    e->dtype = TL_DTYPE_COUNT;
    for (size_t i = 0; i < sizeof st_types / sizeof st_types[0]; i++)
        if (strcmp(json_string_value(dt), st_types[i].name) == 0)
            e->dtype = st_types[i].dtype;
    if (e->dtype == TL_DTYPE_COUNT)
        return tl_fail(TL_ERR_DTYPE, "%s: tensor %s: dtype %s is not supported", op, name,
                       json_string_value(dt));
    e->ndim = json_array_size(shape);
    if (e->ndim > TL_MAX_DIMS)
        return tl_fail(TL_ERR_SHAPE, "%s: tensor %s has %zu dims, at most %d supported", op,
                       name, e->ndim, TL_MAX_DIMS);
    for (size_t i = 0; i < e->ndim; i++)
        if (!as_size(json_array_get(shape, i), &e->shape[i]))
            return tl_fail(TL_ERR_SHAPE, "%s: tensor %s: shape entries must be integers >= 0",
                           op, name);
    size_t nbytes;
    if (!as_size(json_array_get(offs, 0), &e->begin) || !as_size(json_array_get(offs, 1), &e->end) ||
        e->begin > e->end || e->end > data_size)
        return tl_fail(TL_ERR_ARG, "%s: tensor %s: data_offsets outside the %zu data bytes", op,
                       name, data_size);
    if (tl_shape_check(op, e->shape, e->ndim, tl_dtype_size(e->dtype), &nbytes) != TL_OK)
        return tl_last_status();
    if (nbytes != e->end - e->begin)
        return tl_fail(TL_ERR_SHAPE, "%s: tensor %s: %zu bytes for a %s tensor of %zu", op, name,
                       e->end - e->begin, json_string_value(dt), nbytes);
    return TL_OK;
}

static int by_begin(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    return x->begin != y->begin ? (x->begin < y->begin ? -1 : 1)
                                : (x->end > y->end) - (x->end < y->end);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const tl_named *)a)->name, ((const tl_named *)b)->name);
}

/* Checks __metadata__: an object of strings. */
static tl_status check_metadata(const char *op, const json_t *m)
{
    const char *k;
    const json_t *v;
    if (!json_is_object(m))
        return tl_fail(TL_ERR_ARG, "%s: __metadata__ must be an object", op);
    json_object_foreach((json_t *)m, k, v)
        if (!json_is_string(v))
            return tl_fail(TL_ERR_ARG, "%s: __metadata__ value of %s is not a string", op, k);
    return TL_OK;
}

/* The entries of the header object, checked one by one and then for tiling the data. */
static tl_status parse_header(const char *op, const json_t *root, size_t data_size,
                              st_entry **entries, size_t *n)
{
    const char *key;
    json_t *v;
    size_t count = json_object_size(root), k = 0;
    *entries = tl_calloc(count ? count : 1, sizeof **entries);
    if (!*entries)
        return tl_fail_nomem(op, count * sizeof **entries);
    tl_status st = TL_OK;
    json_object_foreach((json_t *)root, key, v) {
        if (strcmp(key, "__metadata__") == 0)
            st = check_metadata(op, v);
        else if (!key[0])
            st = tl_fail(TL_ERR_ARG, "%s: a tensor has an empty name", op);
        else
            st = parse_entry(op, key, v, data_size, &(*entries)[k++]);
        if (st != TL_OK)
            return st;
    }
    *n = k;
    qsort(*entries, k, sizeof **entries, by_begin);
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        if ((*entries)[i].begin != at)
            return tl_fail(TL_ERR_ARG, "%s: tensor %s starts at byte %zu, where %zu was due (the "
                           "tensors must tile the data without gaps or overlaps)", op,
                           (*entries)[i].name, (*entries)[i].begin, at);
        at = (*entries)[i].end;
    }
    if (at != data_size)
        return tl_fail(TL_ERR_ARG, "%s: the tensors cover %zu of the %zu data bytes", op, at,
                       data_size);
    return TL_OK;
}

tl_status tl_load_safetensors_buffer(const void *buf, size_t size, tl_device device,
                                     tl_named **out, size_t *count)
{
    const char *op = "load_safetensors";
    const unsigned char *b = buf;
    if (!out || !count || (size && !buf))
        return tl_fail(TL_ERR_ARG, "%s: buffer, out or count is NULL", op);
    *out = NULL;
    *count = 0;
    if (size < 8)
        return tl_fail(TL_ERR_ARG, "%s: %zu bytes, too short for the header length", op, size);
    uint64_t hlen = tl_io_le(b, 8);
    if (hlen > size - 8 || hlen > HEADER_MAX)
        return tl_fail(TL_ERR_ARG, "%s: header length %llu exceeds the %zu bytes after it (or "
                       "the 100 MiB limit)", op, (unsigned long long)hlen, size - 8);
    json_error_t err;
    json_t *root = json_loadb((const char *)b + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return tl_fail(TL_ERR_ARG, "%s: header is not valid JSON: %s (line %d, column %d)", op,
                       err.text, err.line, err.column);
    st_entry *entries = NULL;
    size_t n = 0, cap = 0;
    const unsigned char *data = b + 8 + hlen;
    tl_status st = json_is_object(root)
                       ? parse_header(op, root, size - 8 - (size_t)hlen, &entries, &n)
                       : tl_fail(TL_ERR_ARG, "%s: header is not a JSON object", op);
    for (size_t i = 0; st == TL_OK && i < n; i++) {
        const st_entry *e = &entries[i];
        tl_tensor *t = tl_io_tensor(op, data + e->begin, e->end - e->begin, e->shape, e->ndim,
                                    e->dtype, device);
        st = t ? tl_io_named_add(op, out, count, &cap, e->name, strlen(e->name), t)
               : tl_last_status();
    }
    free(entries);
    json_decref(root);
    if (st != TL_OK) {
        tl_named_free(*out, *count);
        *out = NULL;
        *count = 0;
    } else if (*count > 1) {
        qsort(*out, *count, sizeof **out, by_name);
    }
    return st;
}

tl_status tl_load_safetensors(const char *path, tl_device device, tl_named **out, size_t *count)
{
    tl_io_map_t m;
    if (out)
        *out = NULL;
    if (count)
        *count = 0;
    tl_status st = tl_io_map("load_safetensors", path, &m);
    if (st == TL_OK)
        st = tl_load_safetensors_buffer(m.data, m.size, device, out, count);
    tl_io_unmap(&m);
    return st;
}

/* The JSON entry of one tensor whose data sits at [at, at + nbytes). */
static json_t *header_entry(const tl_tensor *t, const char *dtype, size_t at, size_t nbytes)
{
    json_t *shape = json_array();
    for (size_t d = 0; shape && d < t->layout.ndim; d++)
        if (json_array_append_new(shape, json_integer((json_int_t)t->layout.shape[d])) != 0) {
            json_decref(shape);
            return NULL;
        }
    return shape ? json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype, "shape", shape,
                             "data_offsets", (json_int_t)at, (json_int_t)(at + nbytes))
                 : NULL;
}

/* Why jansson refused entry i of the header: its keys must be UTF-8, else it ran out of
 * memory. */
static tl_status entry_refused(const char *op, const char *name, size_t i)
{
    json_t *probe = json_string(name);
    bool utf8 = probe != NULL;
    json_decref(probe);
    if (utf8)
        return tl_fail(TL_ERR_NOMEM, "%s: out of memory for the header", op);
    return tl_fail(TL_ERR_ARG, "%s: entry %zu's name is not UTF-8 (safetensors names are JSON "
                   "strings)", op, i);
}

/* The header for list (data in list order): length field, JSON, spaces up to a multiple of 8
 * bytes so the data starts aligned. NULL after tl_fail. */
static char *build_header(const char *op, const tl_named *list, size_t n, size_t *len)
{
    json_t *root = json_object();
    size_t at = 0;
    tl_status st = root ? TL_OK : tl_fail(TL_ERR_NOMEM, "%s: out of memory for the header", op);
    for (size_t i = 0; st == TL_OK && i < n; i++) {
        const tl_tensor *t = list[i].tensor;
        const char *dt = st_name(t->dtype);
        size_t nbytes;
        if (!dt || strcmp(list[i].name, "__metadata__") == 0)
            st = tl_fail(TL_ERR_ARG, "%s: %s: %s", op, list[i].name,
                         dt ? "the name is reserved" : "safetensors has no such dtype");
        else
            st = tl_shape_check(op, t->layout.shape, t->layout.ndim, tl_dtype_size(t->dtype),
                                &nbytes);
        if (st == TL_OK && json_object_set_new(root, list[i].name,
                                               header_entry(t, dt, at, nbytes)) != 0)
            st = entry_refused(op, list[i].name, i);
        at += st == TL_OK ? nbytes : 0;
    }
    char *text = st == TL_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (st == TL_OK && !text)
        tl_fail(TL_ERR_NOMEM, "%s: out of memory for the header", op);
    if (!text)
        return NULL;
    size_t raw = strlen(text), padded = (8 + raw + 7) / 8 * 8 - 8;
    char *out = tl_malloc(8 + padded);
    if (out) {
        tl_io_put_le((unsigned char *)out, padded, 8);
        memcpy(out + 8, text, raw);
        memset(out + 8 + raw, ' ', padded - raw);
        *len = 8 + padded;
    } else {
        tl_fail_nomem(op, 8 + padded);
    }
    free(text);
    return out;
}

tl_status tl_save_safetensors(const char *path, const tl_named *list, size_t n)
{
    const char *op = "save_safetensors";
    tl_status st = tl_io_check_named(op, list, n);
    if (st != TL_OK)
        return st;
    size_t hlen = 0;
    char *header = build_header(op, list, n, &hlen);
    tl_io_piece *pieces = header ? tl_calloc(n + 1, sizeof *pieces) : NULL;
    if (!header)
        return tl_last_status();
    if (!pieces) {
        free(header);
        return tl_fail_nomem(op, (n + 1) * sizeof *pieces);
    }
    pieces[0] = (tl_io_piece){header, hlen};
    for (size_t i = 0; st == TL_OK && i < n; i++) {
        void *bytes;
        st = tl_io_tensor_bytes(op, list[i].tensor, &bytes, &pieces[i + 1].size);
        pieces[i + 1].data = bytes;
    }
    if (st == TL_OK)
        st = tl_io_write(op, path, pieces, n + 1);
    for (size_t i = 1; i <= n; i++)
        free((void *)pieces[i].data);
    free(pieces);
    free(header);
    return st;
}
