/*
 * format.c - reading a tensor out to the host: tl_to_vec (raw elements in logical order) and
 * tl_format (text like candle's: [[4.0, 6.0], [3.0, 4.0]]).
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Under t's read lock: contiguous views are read directly, others are first gathered into a
 * contiguous device buffer (the generic layer never reads device memory itself). */
static tl_status read_locked(const tl_tensor *t, void *dst, size_t nbytes)
{
    const tl_backend_i *b = t->storage->backend;
    size_t size = tl_dtype_size(t->dtype);
    if (tl_is_contiguous(t))
        return b->read(t->storage->buf, t->layout.offset * size, dst, nbytes);
    if (TL_NEED("to_vec", t, copy) != TL_OK)
        return TL_ERR_UNSUPPORTED;
    void *tmp = tl_backend_alloc(b, nbytes);
    if (!tmp)
        return tl_fail_nomem("to_vec", nbytes);
    tl_layout l;
    tl_layout_contiguous(&l, t->layout.shape, t->layout.ndim, 0);
    tl_operand to = {.buf = tmp, .layout = &l, .dtype = t->dtype}, from = tl_operand_of(t);
    tl_status st = b->copy(&to, &from);
    if (st == TL_OK)
        st = b->read(tmp, 0, dst, nbytes);
    b->free(tmp);
    return st;
}

tl_status tl_to_vec(const tl_tensor *t, void *dst, size_t capacity)
{
    const char *op = "to_vec";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK)
        return TL_ERR_ARG;
    size_t nbytes;
    if (__builtin_mul_overflow(tl_elem_count(t), tl_dtype_size(t->dtype), &nbytes))
        return tl_fail(TL_ERR_RANGE, "%s: %s has more bytes than memory can hold", op,
                       tl_describe(t, d));
    if (!dst && nbytes)
        return tl_fail(TL_ERR_ARG, "%s: destination is NULL", op);
    if (capacity < nbytes)
        return tl_fail(TL_ERR_RANGE, "%s: %s needs %zu bytes, capacity is %zu", op,
                       tl_describe(t, d), nbytes, capacity);
    if (nbytes == 0)
        return TL_OK;
    tl_status st = tl_lock_read(t, op);
    if (st != TL_OK)
        return st;
    st = read_locked(t, dst, nbytes);
    tl_unlock(t);
    return st;
}

/* ------------------------------------------------------------------------------------------
 * Text. Floats print like Rust's {:?} (what candle's to_vec output shows): the shortest
 * digits that read back to the same value in the tensor's dtype, always with a decimal point
 * or an exponent; exponent form outside [1e-4, 1e16).
 * ---------------------------------------------------------------------------------------- */
typedef struct writer {
    char *buf;
    size_t size, len; /* len counts everything, including what did not fit */
} writer;

static void put(writer *w, const char *s)
{
    size_t n = strlen(s);
    if (w->len < w->size) {
        size_t room = w->size - w->len;
        memcpy(w->buf + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

/* Shortest "%.*e" rendering of v that rounds back to v in dtype: digits and exponent. */
static void shortest_digits(double v, tl_dtype dtype, char *digits, int *exp10)
{
    char tmp[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, v);
        if (tl_round_to_dtype(dtype, strtod(tmp, NULL)) == v)
            break;
    }
    /* tmp is "d.ddde+XX" (v > 0 here) */
    char *e = strchr(tmp, 'e');
    *exp10 = atoi(e + 1);
    size_t n = 0;
    for (char *p = tmp; p < e; p++)
        if (*p != '.')
            digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
}

static void format_float(double v, tl_dtype dtype, char *out, size_t size)
{
    if (isnan(v)) {
        snprintf(out, size, "NaN");
        return;
    }
    if (isinf(v) || v == 0) {
        snprintf(out, size, "%s%s", signbit(v) ? "-" : "", isinf(v) ? "inf" : "0.0");
        return;
    }
    char digits[24];
    int e;
    double a = fabs(v);
    shortest_digits(a, dtype, digits, &e);
    int k = (int)strlen(digits);
    const char *sign = v < 0 ? "-" : "";
    if (a < 1e-4 || a >= 1e16) {
        snprintf(out, size, "%s%c%s%s", sign, digits[0], k > 1 ? "." : "", digits + 1);
        snprintf(out + strlen(out), size - strlen(out), "e%d", e);
    } else if (e < 0) {
        snprintf(out, size, "%s0.%.*s%s", sign, -e - 1, "0000", digits);
    } else if (k <= e + 1) {
        snprintf(out, size, "%s%s%.*s.0", sign, digits, e + 1 - k, "0000000000000000");
    } else {
        snprintf(out, size, "%s%.*s.%s", sign, e + 1, digits, digits + e + 1);
    }
}

static void format_elem(const void *host, tl_dtype dtype, size_t i, char *out, size_t size)
{
    switch (dtype) {
    case TL_U8: snprintf(out, size, "%u", ((const uint8_t *)host)[i]); break;
    case TL_U32: snprintf(out, size, "%" PRIu32, ((const uint32_t *)host)[i]); break;
    case TL_I64: snprintf(out, size, "%" PRId64, ((const int64_t *)host)[i]); break;
    case TL_I16: snprintf(out, size, "%d", ((const int16_t *)host)[i]); break;
    case TL_I32: snprintf(out, size, "%" PRId32, ((const int32_t *)host)[i]); break;
    default: format_float(tl_load(dtype, host, i), dtype, out, size); break;
    }
}

/* Writes dims d.. of the row-major block starting at element *next. */
static void format_dims(writer *w, const tl_tensor *t, const void *host, size_t d, size_t *next)
{
    char elem[64];
    if (d == t->layout.ndim) {
        format_elem(host, t->dtype, (*next)++, elem, sizeof elem);
        put(w, elem);
        return;
    }
    put(w, "[");
    for (size_t i = 0; i < t->layout.shape[d]; i++) {
        if (i)
            put(w, ", ");
        format_dims(w, t, host, d + 1, next);
    }
    put(w, "]");
}

int tl_format(const tl_tensor *t, char *buf, size_t size)
{
    if (tl_check_tensor("format", t) != TL_OK)
        return -1;
    if (!buf && size)
        return tl_fail(TL_ERR_ARG, "format: buf is NULL with size %zu", size), -1;
    size_t nbytes = tl_elem_count(t) * tl_dtype_size(t->dtype);
    void *host = tl_malloc(nbytes);
    if (!host)
        return tl_fail_nomem("format", nbytes), -1;
    if (tl_to_vec(t, host, nbytes) != TL_OK) {
        free(host);
        return tl_fail_within("format"), -1;
    }
    writer w = {buf, size, 0};
    size_t next = 0;
    format_dims(&w, t, host, 0, &next);
    free(host);
    if (size)
        buf[w.len < size ? w.len : size - 1] = '\0';
    if (w.len > INT_MAX)
        return tl_fail(TL_ERR_RANGE, "format: text of %zu bytes is too long", w.len), -1;
    return (int)w.len;
}
