/*
 * cpu_pool.c - max_pool2d and avg_pool2d on the cpu: each output element folds its window of
 * the (contiguous, double) source. The maximum is candle's MaxPool2D fold, the same as its max
 * reduction (ReduceIndex): start from the window's first element (top left), move only to a
 * strictly greater one, rows in order. So a NaN first in its window is the result and a later
 * NaN is skipped, as tl_reduce's max does; one rule for both (PyTorch would propagate any).
 */
#include <stdlib.h>

#include "cpu_heavy.h"

tl_status tl_cpu_pool2d(const tl_operand *dst, const tl_operand *src, const size_t *window,
                        const size_t *stride, bool max)
{
    const char *op = max ? "max_pool2d" : "avg_pool2d";
    const size_t *s = src->layout->shape, *o = dst->layout->shape;
    size_t planes = s[0] * s[1], h = s[2], w = s[3], oh = o[2], ow = o[3];
    size_t n = planes * oh * ow;
    const void *data;
    void *owned;
    tl_status st = tl_cpu_contiguous(op, src, TL_F64, &data, &owned);
    double *out = st == TL_OK ? tl_malloc(n * sizeof *out) : NULL;
    if (st == TL_OK && !out)
        st = tl_fail_nomem(op, n * sizeof *out);
    if (st == TL_OK) {
        const double *x = data;
        double *r = out;
        for (size_t pl = 0; pl < planes; pl++, x += h * w)
            for (size_t y = 0; y < oh; y++)
                for (size_t xx = 0; xx < ow; xx++) {
                    const double *win = x + y * stride[0] * w + xx * stride[1];
                    double acc = max ? win[0] : 0;
                    for (size_t ky = 0; ky < window[0]; ky++)
                        for (size_t kx = 0; kx < window[1]; kx++) {
                            double v = win[ky * w + kx];
                            acc = !max ? acc + v : v > acc ? v : acc;
                        }
                    *r++ = max ? acc : acc / (double)(window[0] * window[1]);
                }
        st = tl_cpu_store_contiguous(dst, out, TL_F64);
    }
    free(out);
    free(owned);
    return st;
}
