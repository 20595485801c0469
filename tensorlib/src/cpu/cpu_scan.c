/*
 * cpu_scan.c - running sums and products along one dim (cumsum, cumprod).
 *
 * Position i along dim of the result is position i - 1 of the result combined with position
 * i of the source, each element rounded to the dtype as it is stored, so every prefix is summed or
 * multiplied one term at a time in the dtype: numpy's cumsum/cumprod in that dtype, to the
 * bit, for f32 and f64. f16 and bf16 carry the running value in f32 instead and round each
 * result once (half_scan). Integers wrap; the arithmetic runs on uint64, whose low bits are
 * what the narrower dtype keeps.
 *
 * Each run of the iterator over the other dims is one block of lines along dim, walked line
 * by line or slice by slice, whichever follows dst's memory (by_lines).
 */
#include <stdlib.h>

#include "cpu_heavy.h"

/* One run of the iterator over the other dims: `inner` lines along dim (their first elements
 * di / si apart in dst / src), each n long (elements ds / ss apart). */
typedef struct block {
    size_t d0, s0, inner, di, si, n, ds, ss;
} block;

/* The order a block is walked in: line by line when dim is the faster of the two in dst's
 * memory (a scan over the last dim), else slice by slice (over dim 0 of a tall matrix each
 * slice is a row). Each partial result is stored in the dtype before the next step reads it,
 * so the order changes nothing in the values. */
static bool by_lines(const block *b)
{
    return b->ds < b->di || b->inner == 1;
}

/* f32 and f64 in their own type: one add or multiply of two values of the type is rounded
 * once either way (computing in double and rounding gives the same bits for f32). */
#define TYPED_BLOCK(T, NAME)                                                                          static void NAME(void *dbuf, const void *sbuf, const block *b, bool product)                      {                                                                                                     T *d = (T *)dbuf + b->d0;                                                                         const T *s = (const T *)sbuf + b->s0;                                                             if (by_lines(b)) {                                                                                    for (size_t i = 0; i < b->inner; i++) {                                                               T *dl = d + i * b->di;                                                                            const T *sl = s + i * b->si;                                                                      T acc = sl[0];                                                                                    dl[0] = acc;                                                                                      for (size_t at = 1; at < b->n; at++) {                                                                acc = product ? acc * sl[at * b->ss] : acc + sl[at * b->ss];                                      dl[at * b->ds] = acc;                                                                         }                                                                                             }                                                                                                 return;                                                                                       }                                                                                                 for (size_t i = 0; i < b->inner; i++)                                                                 d[i * b->di] = s[i * b->si];                                                                  for (size_t at = 1; at < b->n; at++) {                                                                T *dn = d + at * b->ds;                                                                           const T *dp = dn - b->ds, *sn = s + at * b->ss;                                                   for (size_t i = 0; i < b->inner; i++)                                                                 dn[i * b->di] = product ? dp[i * b->di] * sn[i * b->si]                                                                   : dp[i * b->di] + sn[i * b->si];                                  }                                                                                             }
TYPED_BLOCK(float, block_f32)
TYPED_BLOCK(double, block_f64)

/* Element `at` of line i of an integer scan: the running value before it (dst) combined with
 * src's element in uint64, whose low bits the narrower dtypes keep when stored. */
static void generic_step(const tl_operand *dst, const tl_operand *src, const block *b, size_t i,
                         size_t at, bool product)
{
    size_t di = b->d0 + i * b->di + at * b->ds, si = b->s0 + i * b->si + at * b->ss;
    uint64_t x = (uint64_t)tl_load_i64(src->dtype, src->buf, si);
    if (at) {
        uint64_t p = (uint64_t)tl_load_i64(dst->dtype, dst->buf, di - b->ds);
        x = product ? p * x : p + x;
    }
    tl_store_i64(dst->dtype, dst->buf, di, (int64_t)x);
}

static void generic_block(const tl_operand *dst, const tl_operand *src, const block *b,
                          bool product)
{
    bool lines = by_lines(b);
    for (size_t o = 0; o < (lines ? b->inner : b->n); o++)
        for (size_t q = 0; q < (lines ? b->n : b->inner); q++)
            generic_step(dst, src, b, lines ? o : q, lines ? q : o, product);
}

/* f16 and bf16: the scan of an f32 copy, each result rounded once, as PyTorch's scans (a float
 * accumulator for half types) and candle's cumsum (a matmul by triu2, which gemm computes in
 * f32 for f16) give. Rounded to the dtype at every step, f16 2048 + 1 stayed 2048 for good (a
 * row of 4096 ones ended at 2048, bf16 ones at 256), while the sum of the same row is 4096. */
static tl_status half_scan(const tl_operand *dst, const tl_operand *src, size_t dim,
                           bool product)
{
    const void *x;
    void *owned; /* always a copy: the dtype changes */
    tl_status st = tl_cpu_contiguous(product ? "cumprod" : "cumsum", src, TL_F32, &x, &owned);
    if (st != TL_OK)
        return st;
    tl_layout l;
    tl_layout_contiguous(&l, src->layout->shape, src->layout->ndim, 0);
    tl_operand f = {owned, &l, TL_F32};
    st = tl_cpu_scan(&f, &f, dim, product); /* in place: each element is read, then written */
    if (st == TL_OK)
        st = tl_cpu_store_contiguous(dst, owned, TL_F32);
    free(owned);
    return st;
}

tl_status tl_cpu_scan(const tl_operand *dst, const tl_operand *src, size_t dim, bool product)
{
    /* the iterator walks the other dims (dim seen as size 1); each of its runs is a block */
    tl_layout d = *dst->layout, s = *src->layout;
    block b = {.n = s.shape[dim], .ds = d.stride[dim], .ss = s.stride[dim]};
    d.shape[dim] = s.shape[dim] = 1;
    const tl_layout *ls[2] = {&d, &s};
    tl_iter it;
    if (b.n == 0 || !tl_iter_init(&it, d.shape, d.ndim, ls, 2))
        return TL_OK; /* an empty dim: nothing to write */
    if (src->dtype == TL_F16 || src->dtype == TL_BF16)
        return half_scan(dst, src, dim, product);
    do {
        b.d0 = it.off[0];
        b.s0 = it.off[1];
        b.inner = it.inner;
        b.di = it.step[0];
        b.si = it.step[1];
        if (src->dtype == TL_F32)
            block_f32(dst->buf, src->buf, &b, product);
        else if (src->dtype == TL_F64)
            block_f64(dst->buf, src->buf, &b, product);
        else
            generic_block(dst, src, &b, product);
    } while (tl_iter_next(&it));
    return TL_OK;
}
