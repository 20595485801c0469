/*
 * cpu_softmax.c - softmax and log_softmax over any dim, numerically stable: each lane (the
 * elements along dim at one outer/inner position) is shifted by its maximum before exp, so
 * large inputs do not overflow, and log_softmax is (x - max) - log(sum(exp(x - max))) rather than
 * the log of a rounded softmax. f16/bf16 compute in f32; sums accumulate in double.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_heavy.h"

/* One lane is x[0], x[inner], ..., x[(n-1)*inner]; y gets exp(x - max) first, then is scaled
 * (softmax) or replaced by (x - max) - log(sum) (log_softmax: x - max is exact, while adding
 * max and log(sum) first would round away the small differences of large inputs). */
#define DEFINE_SOFTMAX(NAME, T, EXP)                                                             \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, bool take_log)      \
    {                                                                                            \
        for (size_t o = 0; o < outer; o++)                                                       \
            for (size_t i = 0; i < inner; i++) {                                                 \
                const T *xs = x + o * n * inner + i;                                             \
                T *ys = y + o * n * inner + i;                                                   \
                T max = xs[0];                                                                   \
                for (size_t j = 1; j < n; j++)                                                   \
                    max = xs[j * inner] > max ? xs[j * inner] : max;                             \
                double sum = 0;                                                                  \
                for (size_t j = 0; j < n; j++) {                                                 \
                    ys[j * inner] = EXP(xs[j * inner] - max);                                    \
                    sum += ys[j * inner];                                                        \
                }                                                                                \
                T lse = (T)log(sum), scale = (T)(1.0 / sum);                                     \
                for (size_t j = 0; j < n; j++)                                                   \
                    ys[j * inner] = take_log ? (xs[j * inner] - max) - lse                       \
                                             : ys[j * inner] * scale;                            \
            }                                                                                    \
    }
DEFINE_SOFTMAX(softmax_f32, float, expf)
DEFINE_SOFTMAX(softmax_f64, double, exp)

tl_status tl_cpu_softmax(const tl_operand *dst, const tl_operand *src, size_t dim, bool take_log)
{
    const char *op = take_log ? "log_softmax" : "softmax";
    const tl_layout *l = src->layout;
    size_t outer = tl_shape_elems(l->shape, dim), n = l->shape[dim];
    size_t inner = tl_shape_elems(l->shape + dim + 1, l->ndim - dim - 1);
    if (outer * n * inner == 0)
        return TL_OK;
    tl_dtype ct = tl_cpu_compute_dtype(dst->dtype);
    size_t es = tl_dtype_size(ct), nbytes = outer * n * inner * es;
    bool direct = dst->dtype == ct; /* dst is fresh and contiguous: write into it */
    void *y = direct ? (char *)dst->buf + dst->layout->offset * es : tl_malloc(nbytes);
    if (!y)
        return tl_fail_nomem(op, nbytes);
    const void *x;
    void *owned;
    tl_status st = tl_cpu_contiguous(op, src, ct, &x, &owned);
    if (st == TL_OK) {
        if (ct == TL_F64)
            softmax_f64(x, y, outer, n, inner, take_log);
        else
            softmax_f32(x, y, outer, n, inner, take_log);
        if (!direct)
            st = tl_cpu_store_contiguous(dst, y, ct);
    }
    free(owned);
    if (!direct)
        free(y);
    return st;
}
