/*
 * cpu_softmax.c - softmax and log_softmax over any dim, numerically stable: each lane (the
 * elements along dim at one outer/inner position) is shifted by its maximum before exp, so
 * large inputs do not overflow, and log_softmax is (x - max) - log(sum(exp(x - max))) rather than
 * the log of a rounded softmax. f16/bf16 compute in f32 (exp by the vectorizable polynomial
 * of cpu.h, about 1 ulp); sums accumulate in double. log_softmax takes log(sum) as
 * log1p((ones - 1) + rest), ones the count of terms exactly 1 (exp(0) at the maximum) and rest
 * the sum of the others: log(sum) rounded the rest into that 1 (2^-53 absolute), so a log
 * probability near 0 - the largest element's when it dominates, -log(1 + rest) - lost its
 * relative accuracy (1e4 ulps at -7.5e-6 in f64; 0 for -2e-210). Only a sum below 2 needs it
 * (above, log(sum) > 0.69 and its rounding is below an ulp), so the split takes a second pass
 * over the exps then only; softmax keeps the plain sum.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_heavy.h"

/* dim is the last one (inner == 1): each lane is a contiguous row. Every pass over a row is a
 * loop the compiler vectorizes: the maximum and the sum keep several partial results (the sum
 * in double, as accurate as one running double sum, without its chain of dependent adds), and
 * f32 takes the polynomial exp. y gets exp(x - max) first, then is scaled (softmax) or replaced
 * by (x - max) - log(sum) (log_softmax: x - max is exact, while adding max and log(sum) first
 * would round away the small differences of large inputs). */
#define LANES 16
#define DEFINE_SOFTMAX_ROWS(SUFFIX, T, EXP)                                                      \
    SIMD_CLONES static T row_max##SUFFIX(const T *x, size_t n)                                   \
    {                                                                                            \
        T part[LANES];                                                                           \
        size_t j = 0;                                                                            \
        for (int k = 0; k < LANES; k++)                                                          \
            part[k] = -(T)INFINITY;                                                              \
        for (; j + LANES <= n; j += LANES)                                                       \
            for (int k = 0; k < LANES; k++)                                                      \
                part[k] = x[j + k] > part[k] ? x[j + k] : part[k];                               \
        for (; j < n; j++)                                                                       \
            part[0] = x[j] > part[0] ? x[j] : part[0];                                           \
        for (int k = 1; k < LANES; k++)                                                          \
            part[0] = part[k] > part[0] ? part[k] : part[0];                                     \
        return part[0];                                                                          \
    }                                                                                            \
    SIMD_CLONES static double row_exp_sum##SUFFIX(const T *x, T *y, size_t n, T max)             \
    {                                                                                            \
        double part[LANES / 2] = {0};                                                            \
        size_t j = 0;                                                                            \
        for (size_t i = 0; i < n; i++)                                                           \
            y[i] = EXP(x[i] - max);                                                              \
        for (; j + LANES / 2 <= n; j += LANES / 2)                                               \
            for (int k = 0; k < LANES / 2; k++)                                                  \
                part[k] += (double)y[j + k];                                                     \
        for (; j < n; j++)                                                                       \
            part[0] += (double)y[j];                                                             \
        for (int k = 1; k < LANES / 2; k++)                                                      \
            part[0] += part[k];                                                                  \
        return part[0];                                                                          \
    }                                                                                            \
    /* the sum of the exps y that are not exactly 1, and (in *ones) how many are */              \
    SIMD_CLONES static double row_rest##SUFFIX(const T *y, size_t n, double *ones)               \
    {                                                                                            \
        double part[LANES / 2] = {0}, one[LANES / 2] = {0};                                      \
        size_t j = 0;                                                                            \
        for (; j + LANES / 2 <= n; j += LANES / 2)                                               \
            for (int k = 0; k < LANES / 2; k++) {                                                \
                double v = y[j + k], is_one = v == 1.0 ? 1.0 : 0.0;                              \
                part[k] += v - is_one;                                                           \
                one[k] += is_one;                                                                \
            }                                                                                    \
        for (; j < n; j++) {                                                                     \
            double v = y[j], is_one = v == 1.0 ? 1.0 : 0.0;                                      \
            part[0] += v - is_one;                                                               \
            one[0] += is_one;                                                                    \
        }                                                                                        \
        for (int k = 1; k < LANES / 2; k++) {                                                    \
            part[0] += part[k];                                                                  \
            one[0] += one[k];                                                                    \
        }                                                                                        \
        *ones = one[0];                                                                          \
        return part[0];                                                                          \
    }                                                                                            \
    SIMD_CLONES static void row_finish##SUFFIX(const T *x, T *y, size_t n, T max, double sum,    \
                                               bool take_log)                                    \
    {                                                                                            \
        double ones = 1, rest = sum - 1; /* exact for a sum below 2 */                          \
        if (take_log && sum < 2)                                                                 \
            rest = row_rest##SUFFIX(y, n, &ones);                                                \
        T lse = (T)log1p((ones - 1) + rest), scale = (T)(1.0 / sum);                             \
        if (take_log)                                                                            \
            for (size_t j = 0; j < n; j++)                                                       \
                y[j] = (x[j] - max) - lse;                                                       \
        else                                                                                     \
            for (size_t j = 0; j < n; j++)                                                       \
                y[j] *= scale;                                                                   \
    }                                                                                            \
    static void rows##SUFFIX(const T *x, T *y, size_t rows, size_t n, bool take_log)             \
    {                                                                                            \
        for (size_t r = 0; r < rows; r++, x += n, y += n) {                                      \
            T max = row_max##SUFFIX(x, n);                                                       \
            row_finish##SUFFIX(x, y, n, max, row_exp_sum##SUFFIX(x, y, n, max), take_log);       \
        }                                                                                        \
    }

/* dim is not the last one: the lanes of one outer index are the columns of an n x inner
 * block, so every pass walks whole rows of it (contiguous, vectorizable) and keeps one max and
 * one sum (log_softmax: one rest and one count of ones) per column in mx, sum and ones (inner
 * entries each) - walking one lane at a time would stride through memory and miss the cache on
 * every element. */
#define DEFINE_SOFTMAX_COLS(NAME, T, EXP)                                                        \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, bool take_log,      \
                     T *mx, double *sum, double *ones)                                           \
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
            bool split = false;                                                                  \
            for (size_t i = 0; i < inner && take_log; i++) {                                     \
                split |= sum[i] < 2;                                                             \
                ones[i] = 1;                                                                     \
                sum[i] -= 1; /* the rest; exact for a sum below 2 */                            \
            }                                                                                    \
            if (split) { /* the rest and the count of ones apart */                             \
                for (size_t i = 0; i < inner; i++)                                               \
                    sum[i] = ones[i] = 0;                                                        \
                for (size_t j = 0; j < n; j++)                                                   \
                    for (size_t i = 0; i < inner; i++) {                                         \
                        double v = y[j * inner + i], is_one = v == 1.0 ? 1.0 : 0.0;              \
                        sum[i] += v - is_one;                                                    \
                        ones[i] += is_one;                                                       \
                    }                                                                            \
            }                                                                                    \
            for (size_t i = 0; i < inner; i++) /* sum becomes log(sum) or 1 / sum */           \
                sum[i] = take_log ? log1p((ones[i] - 1) + sum[i]) : 1.0 / sum[i];                \
            for (size_t j = 0; j < n; j++)                                                       \
                for (size_t i = 0; i < inner; i++)                                               \
                    y[j * inner + i] = take_log ? (x[j * inner + i] - mx[i]) - (T)sum[i]         \
                                                : y[j * inner + i] * (T)sum[i];                  \
        }                                                                                        \
    }
DEFINE_SOFTMAX_ROWS(_f32, float, tl_exp_f32)
DEFINE_SOFTMAX_ROWS(_f64, double, exp)
DEFINE_SOFTMAX_COLS(cols_f32, float, tl_exp_f32)
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
    size_t nbytes = inner * (tl_dtype_size(dtype) + 2 * sizeof(double));
    double *sum = tl_malloc(nbytes);
    if (!sum)
        return tl_fail_nomem(op, nbytes);
    double *ones = sum + inner;
    if (dtype == TL_F64)
        cols_f64(x, y, outer, n, inner, take_log, (double *)(ones + inner), sum, ones);
    else
        cols_f32(x, y, outer, n, inner, take_log, (float *)(ones + inner), sum, ones);
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
