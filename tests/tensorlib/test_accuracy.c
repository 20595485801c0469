/*
 * test_accuracy.c - results an independent numeric reference would reject, found by tens12's
 * sweep (every f16/bf16 value, random f32 bit patterns, f64 against 60-digit decimal). The
 * expected values are worked out by hand, or were computed at test-writing time with Python's
 * decimal module at 60+ digits (the formulas beside each case) and rounded once to the dtype;
 * none comes from tensorlib.
 */
#include <math.h>

#include "tl_test.h"

/* A float sum adds in double whatever the layout (cpu_reduce.c): a column sum over dim 0 of a
 * contiguous matrix (the eight-rows-at-a-time path) must cancel as exactly as a row sum. Each
 * column holds 1e8, 1, -1e8 and 13 zeros: the exact sum is 1 (1e8 + 1 is 1e8 in f32). */
static void sum_over_rows_in_double(void)
{
    double v[16 * 3] = {0};
    for (size_t j = 0; j < 3; j++) {
        v[0 * 3 + j] = 1e8;
        v[1 * 3 + j] = 1;
        v[2 * 3 + j] = -1e8;
    }
    v[5 * 3 + 1] = 0.5; /* column 1: 1.5 */
    for (int dt = TL_F32; dt <= TL_F64; dt++) {
        tl_tensor *m = tt_make((tl_dtype)dt, v, SHAPE(16, 3));
        size_t d0 = 0;
        EXPECT_FMT(tl_reduce(TL_SUM, m, &d0, 1, false), "[1.0, 1.5, 1.0]");
        EXPECT_FMT(tl_reduce(TL_MEAN, m, &d0, 1, false), "[0.0625, 0.09375, 0.0625]");
        tl_tensor *t = tl_t(m); /* the same columns as rows of a view: the folding path */
        size_t d1 = 1;
        EXPECT_FMT(tl_reduce(TL_SUM, t, &d1, 1, false), "[1.0, 1.5, 1.0]");
        RELEASE(m, t);
    }
}

int main(void)
{
    sum_over_rows_in_double();
    return check_summary();
}
