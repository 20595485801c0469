/*
 * cpu_sort.c - arg_sort along the last dim on the cpu: each row (as exact int64 for integer
 * dtypes, double otherwise) gets its index permutation from a stable merge sort.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_heavy.h"

typedef struct row_keys {
    const double *f; /* float rows */
    const int64_t *i; /* integer rows */
    bool ascending;
} row_keys;

/* Whether element a goes strictly before element b; NaN after every number, either way. */
static bool before(const row_keys *k, uint32_t a, uint32_t b)
{
    if (k->i)
        return k->ascending ? k->i[a] < k->i[b] : k->i[a] > k->i[b];
    double x = k->f[a], y = k->f[b];
    if (isnan(x) || isnan(y))
        return !isnan(x) && isnan(y) ? k->ascending : isnan(x) && !isnan(y) && !k->ascending;
    return k->ascending ? x < y : x > y;
}

/* Stable merge sort of idx[0..n) by the keys, with tmp of n entries. */
static void merge_sort(const row_keys *k, uint32_t *idx, uint32_t *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = before(k, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

tl_status tl_cpu_arg_sort(const tl_operand *dst, const tl_operand *src, bool ascending)
{
    const tl_layout *l = src->layout;
    size_t n = l->shape[l->ndim - 1], rows = n ? tl_layout_elems(l) / n : 0;
    if (rows == 0)
        return TL_OK;
    bool ints = !tl_dtype_is_float(src->dtype);
    const void *data;
    void *owned;
    tl_status st = tl_cpu_contiguous("arg_sort_last_dim", src, ints ? TL_I64 : TL_F64, &data,
                                     &owned);
    if (st != TL_OK)
        return st;
    uint32_t *tmp = tl_malloc(n * sizeof *tmp);
    if (!tmp) {
        free(owned);
        return tl_fail_nomem("arg_sort_last_dim", n * sizeof *tmp);
    }
    uint32_t *out = (uint32_t *)dst->buf + dst->layout->offset;
    for (size_t r = 0; r < rows; r++, out += n) {
        row_keys k = {ints ? NULL : (const double *)data + r * n,
                      ints ? (const int64_t *)data + r * n : NULL, ascending};
        for (size_t j = 0; j < n; j++)
            out[j] = (uint32_t)j;
        merge_sort(&k, out, tmp, n);
    }
    free(tmp);
    free(owned);
    return TL_OK;
}
