/*
 * cpu_softmax.c - softmax and log_softmax over any dim, numerically stable: each lane (the
 * elements along dim at one outer/inner position) is shifted by its maximum before exp, so
 * large inputs do not overflow, and log_softmax is (x - max) - log(sum(exp(x - max))) rather than
 * the log of a rounded softmax. f16/bf16 compute in f32; sums accumulate in double.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_heavy.h"

/* dim is the last one (inner == 1): each lane is a contiguous row. y gets exp(x - max) first,
 * then is scaled (softmax) or replaced by (x - max) - log(sum) (log_softmax: x - max is exact,
 * while adding max and log(sum) first would round away the small differences of large
 * inputs). */
#define DEFINE_SOFTMAX_ROWS(NAME, T, EXP)                                                        \
    static void NAME(const T *x, T *y, size_t rows, size_t n, bool take_log)                     \
    {                                                                                            \
        for (size_t r = 0; r < rows; r++, x += n, y += n) {                                      \
            T max = x[0];                                                                        \
            for (size_t j = 1; j < n; j++)                                                       \
                max = x[j] > max ? x[j] : max;                                                   \
            double sum = 0;                                                                      \
            for (size_t j = 0; j < n; j++) {                                                     \
                y[j] = EXP(x[j] - max);                                                          \
                sum += y[j];                                                                     \
            }                                                                                    \
            T lse = (T)log(sum), scale = (T)(1.0 / sum);                                         \
            for (size_t j = 0; j < n; j++)                                                       \
                y[j] = take_log ? (x[j] - max) - lse : y[j] * scale;                             \
        }                                                                                        \
    }

/* dim is not the last one: the lanes of one outer index are the columns of an n x inner
 * block, so every pass walks whole rows of it (contiguous, vectorizable) and keeps one max and
 * one sum per column in mx and sum (inner entries each) - walking one lane at a time would
 * stride through memory and miss the cache on every element. */
#define DEFINE_SOFTMAX_COLS(NAME, T, EXP)                                                        \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, bool take_log,      \
                     T *mx, double *sum)                                                         \
    {                                                                                            \
        for (size_t o = 0; o < outer; o++, x += n * inner, y += n * inner) {                     \
            for (size_t i = 0; i < inner; i++) {                                                 \
                mx[i] = x[i];                                                                    \
                sum[i] = 0;                                                                      \
            }                                                                                    \
            for (size_t j = 1; j < n; j++)                                                       \
                for (size_t i = 0; i < inner; i++)                                               \
                    mx[i] = x[j * inner + i] > mx[i] ? x[j * inner + i] : mx[i];                 \
            for (size_t j = 0; j < n; j++)                                                       \
                for (size_t i = 0; i < inner; i++) {                                             \
                    y[j * inner + i] = EXP(x[j * inner + i] - mx[i]);                            \
                    sum[i] += y[j * inner + i];                                                  \
                }                                                                                \
            for (size_t i = 0; i < inner; i++) /* sum becomes log(sum) or 1 / sum */           \
                sum[i] = take_log ? log(sum[i]) : 1.0 / sum[i];                                  \
            for (size_t j = 0; j < n; j++)                                                       \
                for (size_t i = 0; i < inner; i++)                                               \
                    y[j * inner + i] = take_log ? (x[j * inner + i] - mx[i]) - (T)sum[i]         \
                                                : y[j * inner + i] * (T)sum[i];                  \
        }                                                                                        \
    }
DEFINE_SOFTMAX_ROWS(rows_f32, float, expf)
DEFINE_SOFTMAX_ROWS(rows_f64, double, exp)
DEFINE_SOFTMAX_COLS(cols_f32, float, expf)
DEFINE_SOFTMAX_COLS(cols_f64, double, exp)

/* Softmax of the contiguous [outer, n, inner] block x into y, both of dtype (f32 or f64). */
static tl_status softmax_block(const char *op, tl_dtype dtype, const void *x, void *y,
                               size_t outer, size_t n, size_t inner, bool take_log)
{
    if (inner == 1) {
        if (dtype == TL_F64)
            rows_f64(x, y, outer, n, take_log);
        else
            rows_f32(x, y, outer, n, take_log);
        return TL_OK;
    }
    size_t nbytes = inner * (tl_dtype_size(dtype) + sizeof(double));
    double *sum = tl_malloc(nbytes);
    if (!sum)
        return tl_fail_nomem(op, nbytes);
    if (dtype == TL_F64)
        cols_f64(x, y, outer, n, inner, take_log, (double *)(sum + inner), sum);
    else
        cols_f32(x, y, outer, n, inner, take_log, (float *)(sum + inner), sum);
    free(sum);
    return TL_OK;
}

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
    void *owned = NULL;
    tl_status st = tl_cpu_contiguous(op, src, ct, &x, &owned);
    if (st == TL_OK)
        st = softmax_block(op, ct, x, y, outer, n, inner, take_log);
    if (st == TL_OK && !direct)
        st = tl_cpu_store_contiguous(dst, y, ct);
    free(owned);
    if (!direct)
        free(y);
    return st;
}
