/*
 * cpu_pool.c - max_pool2d and avg_pool2d on the cpu: each output element folds its window of
 * the contiguous source, held as double (floats) or int64 (integers: max_pool2d only, as
 * candle's MaxPool2D takes every dtype; an i64 past 2^53 would not survive a double). The
 * maximum is candle's MaxPool2D fold, the same as its max reduction (ReduceIndex): start from
 * the window's first element (top left), move only to a strictly greater one, rows in order.
 * So a NaN first in its window is the result and a later NaN is skipped, as tl_reduce's max
 * does; one rule for both (PyTorch would propagate any).
 */
#include <stdint.h>
#include <stdlib.h>

#include "cpu_heavy.h"

/* Whether element i of the work array x is strictly greater than element j. */
static bool greater(tl_dtype work, const void *x, size_t i, size_t j)
{
    if (work == TL_I64)
        return ((const int64_t *)x)[i] > ((const int64_t *)x)[j];
    return ((const double *)x)[i] > ((const double *)x)[j];
}

tl_status tl_cpu_pool2d(const tl_operand *dst, const tl_operand *src, const size_t *window,
                        const size_t *stride, bool max)
{
    const char *op = max ? "max_pool2d" : "avg_pool2d";
    const size_t *s = src->layout->shape, *o = dst->layout->shape;
    size_t planes = s[0] * s[1], h = s[2], w = s[3], oh = o[2], ow = o[3];
    size_t n = planes * oh * ow;
    tl_dtype work = tl_dtype_is_float(src->dtype) ? TL_F64 : TL_I64;
    size_t es = tl_dtype_size(work);
    const void *data;
    void *owned;
    tl_status st = tl_cpu_contiguous(op, src, work, &data, &owned);
    char *out = st == TL_OK ? tl_malloc(n * es) : NULL;
    if (st == TL_OK && !out)
        st = tl_fail_nomem(op, n * es);
    if (st == TL_OK) {
        size_t r = 0;
        for (size_t pl = 0; pl < planes; pl++)
            for (size_t y = 0; y < oh; y++)
                for (size_t xx = 0; xx < ow; xx++, r++) {
                    size_t w0 = pl * h * w + y * stride[0] * w + xx * stride[1], best = w0;
                    double acc = 0;
                    for (size_t ky = 0; ky < window[0]; ky++)
                        for (size_t kx = 0; kx < window[1]; kx++) {
                            size_t i = w0 + ky * w + kx;
                            if (!max)
                                acc += ((const double *)data)[i];
                            else if (greater(work, data, i, best))
                                best = i;
                        }
                    if (max)
                        memcpy(out + r * es, (const char *)data + best * es, es);
                    else
                        ((double *)out)[r] = acc / (double)(window[0] * window[1]);
                }
        st = tl_cpu_store_contiguous(dst, out, work);
    }
    free(out);
    free(owned);
    return st;
}
