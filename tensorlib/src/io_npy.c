/*
 * io_npy.c - numpy's .npy (format versions 1 to 3) and .npz (a zip of .npy files, as np.savez
 * writes it: entries stored, not compressed). Reading takes little- and big-endian data and
 * Fortran order; writing makes version 1.0 little-endian C-order files, headers padded to 64
 * bytes as numpy pads them. Every length and offset is checked against the file before use.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

#define NPY_MAGIC "\x93NUMPY"

/* ------------------------------------------------------------------------------------------
 * dtypes: numpy's descr ('<f4') <-> tl_dtype
 * ---------------------------------------------------------------------------------------- */
static const struct {
    char kind;
    size_t size;
    tl_dtype dtype;
} npy_types[] = {
    {'u', 1, TL_U8},  {'b', 1, TL_U8},  {'u', 4, TL_U32}, {'i', 2, TL_I16}, {'i', 4, TL_I32},
    {'i', 8, TL_I64}, {'f', 2, TL_F16}, {'f', 4, TL_F32}, {'f', 8, TL_F64},
};

static bool npy_descr(tl_dtype dtype, char *out, size_t size)
{
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dtype == dtype && npy_types[i].kind != 'b') {
            snprintf(out, size, "%c%c%zu", npy_types[i].size == 1 ? '|' : '<', npy_types[i].kind,
                     npy_types[i].size);
            return true;
        }
    return false;
}

/* ------------------------------------------------------------------------------------------
 * The header: a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * ---------------------------------------------------------------------------------------- */
typedef struct npy_header {
    tl_dtype dtype;
    bool swap;    /* big-endian data */
    bool fortran; /* column-major data */
    size_t ndim, shape[TL_MAX_DIMS];
} npy_header;

/* The text after 'key': in h (NULL when absent), spaces skipped. */
static const char *after_key(const char *h, size_t len, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen + 2 <= len; i++) {
        if ((h[i] != '\'' && h[i] != '"') || memcmp(h + i + 1, key, klen) != 0 ||
            h[i + 1 + klen] != h[i])
            continue;
        size_t j = i + klen + 2;
        while (j < len && h[j] == ' ')
            j++;
        if (j < len && h[j] == ':') {
            for (j++; j < len && h[j] == ' '; j++)
                ;
            return h + j;
        }
    }
    return NULL;
}

static tl_status parse_header(const char *op, const char *h, size_t len, npy_header *out)
{
    const char *end = h + len, *d = after_key(h, len, "descr");
    const char *f = after_key(h, len, "fortran_order"), *s = after_key(h, len, "shape");
    if (!d || !f || !s || d + 4 > end || (*d != '\'' && *d != '"'))
        return tl_fail(TL_ERR_ARG, "%s: the header lacks descr, fortran_order or shape", op);
    /* descr: byte order, kind, size */
    char order = d[1], kind = d[2];
    size_t size = 0;
    const char *p = d + 3;
    for (; p < end && isdigit((unsigned char)*p) && size < 100; p++)
        size = size * 10 + (size_t)(*p - '0');
    if (p >= end || *p != *d || !strchr("<>|=", order))
        return tl_fail(TL_ERR_ARG, "%s: malformed descr in the header", op);
    out->dtype = TL_DTYPE_COUNT;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].kind == kind && npy_types[i].size == size)
            out->dtype = npy_types[i].dtype;
    if (out->dtype == TL_DTYPE_COUNT)
        return tl_fail(TL_ERR_DTYPE, "%s: numpy dtype %.*s is not supported", op,
                       (int)(p - d - 1), d + 1);
    out->swap = order == '>' && size > 1;
    /* fortran_order */
    if (end - f >= 4 && memcmp(f, "True", 4) == 0)
        out->fortran = true;
    else if (end - f >= 5 && memcmp(f, "False", 5) == 0)
        out->fortran = false;
    else
        return tl_fail(TL_ERR_ARG, "%s: fortran_order is neither True nor False", op);
    /* shape: (n, m, ...) */
    if (*s != '(')
        return tl_fail(TL_ERR_ARG, "%s: malformed shape in the header", op);
    out->ndim = 0;
    for (p = s + 1;;) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p < end && *p == ')')
            break;
        if (p >= end || !isdigit((unsigned char)*p) || out->ndim == TL_MAX_DIMS)
            return tl_fail(TL_ERR_SHAPE, "%s: malformed shape, or more than %d dims", op,
                           TL_MAX_DIMS);
        size_t v = 0;
        for (; p < end && isdigit((unsigned char)*p); p++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
                return tl_fail(TL_ERR_RANGE, "%s: a dim in the shape overflows", op);
        out->shape[out->ndim++] = v;
    }
    return TL_OK;
}

/* ------------------------------------------------------------------------------------------
 * One .npy image in memory -> a tensor
 * ---------------------------------------------------------------------------------------- */
static tl_tensor *npy_parse(const char *op, const unsigned char *b, size_t size,
                            tl_device device)
{
    if (size < 10 || memcmp(b, NPY_MAGIC, 6) != 0)
        return tl_fail(TL_ERR_ARG, "%s: not a .npy file (no \\x93NUMPY magic)", op), NULL;
    unsigned major = b[6];
    size_t fixed = major == 1 ? 10 : 12;
    if (major < 1 || major > 3 || size < fixed)
        return tl_fail(TL_ERR_ARG, "%s: unsupported .npy version %u.%u", op, major, b[7]), NULL;
    size_t hlen = (size_t)tl_io_le(b + 8, major == 1 ? 2 : 4);
    if (hlen > size - fixed)
        return tl_fail(TL_ERR_ARG, "%s: header of %zu bytes runs past the end (%zu bytes)", op,
                       hlen, size), NULL;
    npy_header h = {0};
    if (parse_header(op, (const char *)b + fixed, hlen, &h) != TL_OK)
        return NULL;
    const unsigned char *data = b + fixed + hlen;
    size_t nbytes = size - fixed - hlen, es = tl_dtype_size(h.dtype);
    size_t shape[TL_MAX_DIMS]; /* Fortran order: the reversed shape, stored row-major */
    for (size_t i = 0; i < h.ndim; i++)
        shape[i] = h.fortran ? h.shape[h.ndim - 1 - i] : h.shape[i];
    unsigned char *swapped = NULL;
    if (h.swap) {
        if (!(swapped = tl_malloc(nbytes)))
            return tl_fail_nomem(op, nbytes), NULL;
        for (size_t i = 0; i + es <= nbytes; i += es)
            for (size_t k = 0; k < es; k++)
                swapped[i + k] = data[i + es - 1 - k];
        data = swapped;
    }
    tl_tensor *t = tl_io_tensor(op, data, nbytes, shape, h.ndim, h.dtype, device);
    free(swapped);
    if (t && h.fortran && h.ndim > 1) {
        size_t perm[TL_MAX_DIMS];
        for (size_t i = 0; i < h.ndim; i++)
            perm[i] = h.ndim - 1 - i;
        tl_tensor *v = tl_permute(t, perm, h.ndim);
        tl_release(t);
        t = v ? tl_contiguous(v) : NULL;
        tl_release(v);
    }
    return t;
}

tl_tensor *tl_load_npy(const char *path, tl_device device)
{
    tl_io_map_t m;
    if (tl_io_map("load_npy", path, &m) != TL_OK)
        return NULL;
    tl_tensor *t = npy_parse("load_npy", m.data, m.size, device);
    tl_io_unmap(&m);
    return t;
}

/* The .npy header of t (magic, version 1.0, length, dict padded to 64 bytes); returns its
 * length, or 0 after tl_fail. */
static size_t npy_header_of(const char *op, const tl_tensor *t, char *out, size_t cap)
{
    char descr[8], shape[TL_SHAPE_STR + 8];
    if (!npy_descr(t->dtype, descr, sizeof descr))
        return tl_fail(TL_ERR_DTYPE, "%s: numpy has no %s", op, tl_dtype_name(t->dtype)), 0;
    size_t len = 0;
    shape[len++] = '(';
    for (size_t i = 0; i < t->layout.ndim; i++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%zu,%s", t->layout.shape[i],
                                i + 1 < t->layout.ndim ? " " : "");
    if (t->layout.ndim > 1)
        len--; /* "(2, 3)" but "(3,)" */
    snprintf(shape + len, sizeof shape - len, ")");
    int n = snprintf(out + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    memcpy(out, NPY_MAGIC "\x01\x00", 8);
    memset(out + 10 + n, ' ', padded - total);
    out[padded - 1] = '\n';
    tl_io_put_le((unsigned char *)out + 8, padded - 10, 2);
    return padded;
}

#define NPY_HEADER_MAX 512

tl_status tl_save_npy(const tl_tensor *t, const char *path)
{
    const char *op = "save_npy";
    char header[NPY_HEADER_MAX];
    void *bytes;
    size_t size, hlen;
    if (tl_check_tensor(op, t) != TL_OK || !(hlen = npy_header_of(op, t, header, sizeof header)))
        return tl_last_status();
    tl_status st = tl_io_tensor_bytes(op, t, &bytes, &size);
    if (st == TL_OK)
        st = tl_io_write(op, path, (tl_io_piece[]){{header, hlen}, {bytes, size}}, 2);
    free(bytes);
    return st;
}

/* ------------------------------------------------------------------------------------------
 * .npz: the zip container (stored entries; zip64 sizes and offsets read)
 * ---------------------------------------------------------------------------------------- */
static uint32_t crc32_of(const unsigned char *p, size_t n, uint32_t crc)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc >> 1 ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

#define ZIP_EOCD 0x06054b50u
#define ZIP_EOCD64 0x06064b50u
#define ZIP_LOCATOR64 0x07064b50u
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_LOCAL 0x04034b50u

typedef struct zip_dir {
    uint64_t entries, offset, size;
} zip_dir;

static tl_status find_directory(const char *op, const unsigned char *b, size_t size, zip_dir *d)
{
    size_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
    for (size_t at = size >= 22 ? size - 22 + 1 : 0; at-- > lowest;) {
        if (tl_io_le(b + at, 4) != ZIP_EOCD)
            continue;
        d->entries = tl_io_le(b + at + 10, 2);
        d->size = tl_io_le(b + at + 12, 4);
        d->offset = tl_io_le(b + at + 16, 4);
        if ((d->entries == 0xffff || d->offset == 0xffffffffu || d->size == 0xffffffffu) &&
            at >= 20 && tl_io_le(b + at - 20, 4) == ZIP_LOCATOR64) {
            uint64_t rec = tl_io_le(b + at - 12, 8);
            if (rec > size - 56 || size < 56 || tl_io_le(b + rec, 4) != ZIP_EOCD64)
                break;
            d->entries = tl_io_le(b + rec + 32, 8);
            d->size = tl_io_le(b + rec + 40, 8);
            d->offset = tl_io_le(b + rec + 48, 8);
        }
        if (d->offset > size || d->size > size - d->offset)
            break;
        return TL_OK;
    }
    return tl_fail(TL_ERR_ARG, "%s: not a zip archive (no valid end of central directory)", op);
}

/* One central-directory entry at b + at: its name, stored data and CRC; *next after it. */
typedef struct zip_entry {
    const char *name;
    size_t name_len;
    const unsigned char *data;
    uint64_t size;
} zip_entry;

static tl_status read_entry(const char *op, const unsigned char *b, size_t size, uint64_t at,
                            uint64_t end, zip_entry *e, uint64_t *next)
{
    if (at > end || end - at < 46 || tl_io_le(b + at, 4) != ZIP_CENTRAL)
        return tl_fail(TL_ERR_ARG, "%s: corrupt zip central directory", op);
    const unsigned char *c = b + at;
    unsigned method = (unsigned)tl_io_le(c + 10, 2);
    uint32_t crc = (uint32_t)tl_io_le(c + 16, 4);
    uint64_t csize = tl_io_le(c + 20, 4), usize = tl_io_le(c + 24, 4);
    size_t nlen = (size_t)tl_io_le(c + 28, 2), xlen = (size_t)tl_io_le(c + 30, 2);
    size_t clen = (size_t)tl_io_le(c + 32, 2);
    uint64_t local = tl_io_le(c + 42, 4);
    if (46 + nlen + xlen + clen > end - at)
        return tl_fail(TL_ERR_ARG, "%s: corrupt zip central directory", op);
    /* zip64 extra field: the 0xffffffff fields, in order usize, csize, offset */
    for (size_t x = 0; x + 4 <= xlen;) {
        const unsigned char *f = c + 46 + nlen + x;
        size_t tag = (size_t)tl_io_le(f, 2), flen = (size_t)tl_io_le(f + 2, 2), k = 4;
        if (flen > xlen - x - 4)
            break;
        if (tag == 1) {
            uint64_t *fields[] = {&usize, &csize, &local};
            for (size_t i = 0; i < 3; i++)
                if (*fields[i] == 0xffffffffu && k + 8 <= 4 + flen)
                    *fields[i] = tl_io_le(f + k, 8), k += 8;
        }
        x += 4 + flen;
    }
    *next = at + 46 + nlen + xlen + clen;
    e->name = (const char *)c + 46;
    e->name_len = nlen;
    if (method != 0)
        return tl_fail(TL_ERR_UNSUPPORTED, "%s: entry %.*s is compressed (method %u): only "
                       "np.savez archives (stored entries) are read, not np.savez_compressed",
                       op, (int)nlen, e->name, method);
    if (csize != usize || local > size || size - local < 30 || tl_io_le(b + local, 4) != ZIP_LOCAL)
        return tl_fail(TL_ERR_ARG, "%s: corrupt zip entry %.*s", op, (int)nlen, e->name);
    uint64_t start = local + 30 + tl_io_le(b + local + 26, 2) + tl_io_le(b + local + 28, 2);
    if (start > size || csize > size - start)
        return tl_fail(TL_ERR_ARG, "%s: zip entry %.*s runs past the end", op, (int)nlen,
                       e->name);
    e->data = b + start;
    e->size = csize;
    if (crc32_of(e->data, (size_t)csize, 0) != crc)
        return tl_fail(TL_ERR_ARG, "%s: zip entry %.*s fails its CRC check", op, (int)nlen,
                       e->name);
    return TL_OK;
}

static tl_status npz_parse(const char *op, const unsigned char *b, size_t size, tl_device device,
                           tl_named **out, size_t *count)
{
    zip_dir d = {0};
    size_t cap = 0;
    tl_status st = find_directory(op, b, size, &d);
    uint64_t at = d.offset;
    for (uint64_t i = 0; st == TL_OK && i < d.entries; i++) {
        zip_entry e = {0};
        st = read_entry(op, b, size, at, d.offset + d.size, &e, &at);
        if (st != TL_OK)
            break;
        size_t nlen = e.name_len >= 4 && memcmp(e.name + e.name_len - 4, ".npy", 4) == 0
                          ? e.name_len - 4
                          : e.name_len;
        tl_tensor *t = npy_parse(op, e.data, (size_t)e.size, device);
        st = t ? tl_io_named_add(op, out, count, &cap, e.name, nlen, t) : tl_last_status();
    }
    return st;
}

tl_status tl_load_npz(const char *path, tl_device device, tl_named **out, size_t *count)
{
    const char *op = "load_npz";
    tl_io_map_t m;
    if (!out || !count)
        return tl_fail(TL_ERR_ARG, "%s: out or count is NULL", op);
    *out = NULL;
    *count = 0;
    tl_status st = tl_io_map(op, path, &m);
    if (st == TL_OK)
        st = npz_parse(op, m.data, m.size, device, out, count);
    tl_io_unmap(&m);
    if (st != TL_OK) {
        tl_named_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return st;
}

/* np.savez's layout: per tensor a local header, "name.npy" and the .npy image; then the
 * central directory and its end record (no zip64: at most 4 GiB and 65535 entries). */
tl_status tl_save_npz(const char *path, const tl_named *list, size_t n)
{
    const char *op = "save_npz";
    tl_status st = tl_io_check_named(op, list, n);
    if (st != TL_OK)
        return st;
    if (n > 0xffff)
        return tl_fail(TL_ERR_RANGE, "%s: %zu entries need zip64", op, n);
    size_t npieces = 4 * n + 2, off = 0, dir_len = 0;
    tl_io_piece *pieces = tl_calloc(npieces, sizeof *pieces);
    unsigned char *meta = tl_calloc(n + 1, 30 + 46 + NPY_HEADER_MAX);
    void **data = tl_calloc(n + 1, sizeof *data);
    unsigned char *dir = NULL;
    size_t total_names = 0;
    for (size_t i = 0; i < n; i++)
        total_names += strlen(list[i].name) + 4;
    if (pieces && meta && data)
        dir = tl_malloc(46 * n + total_names + 22);
    if (!dir)
        st = tl_fail_nomem(op, npieces * sizeof *pieces);
    for (size_t i = 0; st == TL_OK && i < n; i++) {
        unsigned char *local = meta + i * (30 + 46 + NPY_HEADER_MAX);
        char *header = (char *)local + 30 + 46;
        size_t nlen = strlen(list[i].name), hlen, size;
        if (!(hlen = npy_header_of(op, list[i].tensor, header, NPY_HEADER_MAX)) ||
            tl_io_tensor_bytes(op, list[i].tensor, &data[i], &size) != TL_OK) {
            st = tl_last_status();
            break;
        }
        if (nlen + 4 > 0xffff || size > 0xffffffffu - hlen || off > 0xffffffffu - size - hlen) {
            st = tl_fail(TL_ERR_RANGE, "%s: %s is too large for a zip without zip64", op,
                         list[i].name);
            break;
        }
        uint32_t crc = crc32_of(data[i], size, crc32_of((unsigned char *)header, hlen, 0));
        uint64_t entry = hlen + size;
        unsigned char *c = dir + dir_len;
        memset(local, 0, 30);
        memset(c, 0, 46);
        tl_io_put_le(local, ZIP_LOCAL, 4);
        tl_io_put_le(local + 4, 20, 2);
        tl_io_put_le(c, ZIP_CENTRAL, 4);
        tl_io_put_le(c + 4, 20, 2);
        tl_io_put_le(c + 6, 20, 2);
        unsigned char *sums[2] = {local + 14, c + 16}; /* crc, compressed and real size */
        for (size_t k = 0; k < 2; k++) {
            tl_io_put_le(sums[k], crc, 4);
            tl_io_put_le(sums[k] + 4, entry, 4);
            tl_io_put_le(sums[k] + 8, entry, 4);
        }
        tl_io_put_le(local + 26, nlen + 4, 2);
        tl_io_put_le(c + 28, nlen + 4, 2);
        tl_io_put_le(c + 42, off, 4);
        memcpy(c + 46, list[i].name, nlen);
        memcpy(c + 46 + nlen, ".npy", 4);
        pieces[4 * i] = (tl_io_piece){local, 30};
        pieces[4 * i + 1] = (tl_io_piece){c + 46, nlen + 4};
        pieces[4 * i + 2] = (tl_io_piece){header, hlen};
        pieces[4 * i + 3] = (tl_io_piece){data[i], size};
        dir_len += 46 + nlen + 4;
        off += 30 + nlen + 4 + entry;
    }
    if (st == TL_OK) {
        unsigned char *end = dir + dir_len;
        memset(end, 0, 22);
        tl_io_put_le(end, ZIP_EOCD, 4);
        tl_io_put_le(end + 8, n, 2);
        tl_io_put_le(end + 10, n, 2);
        tl_io_put_le(end + 12, dir_len, 4);
        tl_io_put_le(end + 16, off, 4);
        pieces[4 * n] = (tl_io_piece){dir, dir_len};
        pieces[4 * n + 1] = (tl_io_piece){end, 22};
        st = tl_io_write(op, path, pieces, npieces);
    }
    for (size_t i = 0; data && i < n; i++)
        free(data[i]);
    free(data);
    free(dir);
    free(meta);
    free(pieces);
    return st;
}
