/*
 * test_candle_src.c - semantics checked against candle's own source (huggingface/candle 0.11.0),
 * where tensorlib had differed. Each case names the candle function it follows; the expected
 * values are worked out by hand from that function, with the reasoning beside them.
 */
#include <math.h>
#include <stdint.h>

#include "tl_test.h"

/* candle-core/src/cpu_backend/mod.rs, IndexSelect/Gather/Scatter/IndexAdd (since #2940): an
 * index equal to the index dtype's maximum is "no index": index_select and gather read 0
 * there, scatter, scatter_add and index_add skip it. Any other index past the dim fails. */
static void index_max_is_none(void)
{
    /* u8 ids on a dim of 300 rows: 255 is the marker even though row 255 exists */
    tl_tensor *x = tl_arange(0, 300, 1, TL_F32, TL_CPU);
    tl_tensor *ids = tl_from_data((const uint8_t[]){255, 2, 254}, SHAPE(3), TL_U8, TL_CPU);
    EXPECT_FMT(tl_index_select(x, ids, 0), "[0.0, 2.0, 254.0]");
    EXPECT_FMT(tl_gather(x, ids, 0), "[0.0, 2.0, 254.0]");
    tl_release(ids);

    /* u32 / i64 / i16 markers on a small tensor: 0 or nothing, where they failed as out of
     * range; the marker's own dtype decides (u32 4294967295, i64 2^63 - 1, i16 32767) */
    tl_tensor *m = MAKE(TL_F32, SHAPE(2, 2), 1, 2, 3, 4);
    tl_tensor *iu = tl_from_data((const uint32_t[]){1, UINT32_MAX}, SHAPE(2), TL_U32, TL_CPU);
    EXPECT_FMT(tl_index_select(m, iu, 0), "[[3.0, 4.0], [0.0, 0.0]]");
    EXPECT_FMT(tl_index_select(m, iu, 1), "[[2.0, 0.0], [4.0, 0.0]]");
    tl_tensor *il = tl_from_data((const int64_t[]){INT64_MAX, 0, 1, INT64_MAX}, SHAPE(2, 2),
                                 TL_I64, TL_CPU);
    EXPECT_FMT(tl_gather(m, il, 1), "[[0.0, 1.0], [4.0, 0.0]]");
    /* scatter along dim 1: src[0][0] and src[1][1] (marker) go nowhere, src[0][1] (20) to
     * column 0 of row 0, src[1][0] (30) to column 1 of row 1 */
    tl_tensor *src = MAKE(TL_F32, SHAPE(2, 2), 10, 20, 30, 40);
    EXPECT_FMT(tl_scatter(m, il, src, 1), "[[20.0, 2.0], [3.0, 30.0]]");
    EXPECT_FMT(tl_scatter_add(m, il, src, 1), "[[21.0, 2.0], [3.0, 34.0]]");
    CHECK(tl_scatter_add_set(m, il, src, 1) == TL_OK);
    EXPECT_FMT(tl_retain(m), "[[21.0, 2.0], [3.0, 34.0]]");
    CHECK(tl_scatter_set(m, il, src, 1) == TL_OK);
    EXPECT_FMT(tl_retain(m), "[[20.0, 2.0], [3.0, 30.0]]");
    /* index_add along dim 0: src's row 0 goes nowhere, its row 1 (30, 40) adds into row 0 */
    tl_tensor *ih = tl_from_data((const int16_t[]){INT16_MAX, 0}, SHAPE(2), TL_I16, TL_CPU);
    EXPECT_FMT(tl_index_add(m, ih, src, 0), "[[50.0, 42.0], [3.0, 30.0]]");
    /* one below the marker is an ordinary index, out of range here */
    tl_tensor *bad = tl_from_data((const uint32_t[]){UINT32_MAX - 1}, SHAPE(1), TL_U32, TL_CPU);
    EXPECT_FAIL(tl_index_select(m, bad, 0), TL_ERR_RANGE, "index_select: index 4294967294");
    /* a negative i64 is no marker: it reads as huge and fails */
    tl_tensor *neg = tl_from_data((const int64_t[]){-1}, SHAPE(1), TL_I64, TL_CPU);
    EXPECT_FAIL(tl_index_select(m, neg, 0), TL_ERR_RANGE, "index -1");
    RELEASE(x, m, iu, il, src, ih, bad, neg);
}

/* candle-core/src/cpu_backend/mod.rs, Affine: mul and add go into the tensor's dtype first
 * (T::from_f64, Rust's `as`: truncated, saturated, NaN 0) and `v * mul + add` is computed in
 * it, wrapping (a release build). tensor.rs, bin_trait!: `t + s` is affine(1, s), `t - s`
 * affine(1, -s), `t * s` affine(s, 0), `t / s` affine(1 / s, 0) (issue #2115: "kind of by
 * design", u8 3 / 4.0 is 0 there). */
static void integer_affine_in_dtype(void)
{
    tl_tensor *u = MAKE(TL_U8, SHAPE(4), 0, 3, 200, 255);
    EXPECT_FMT(tl_affine(u, 0.5, 0), "[0, 0, 0, 0]");          /* 0.5 as u8 = 0 */
    EXPECT_FMT(tl_affine(u, 1, 100), "[100, 103, 44, 99]");    /* 300, 355 wrap mod 256 */
    EXPECT_FMT(tl_affine(u, 1, -1), "[0, 3, 200, 255]");       /* -1 as u8 = 0 */
    EXPECT_FMT(tl_affine(u, 2.9, 1.9), "[1, 7, 145, 255]");    /* 2 and 1: 401 -> 145, 511 -> 255 */
    EXPECT_FMT(tl_affine(u, NAN, 7), "[7, 7, 7, 7]");          /* NaN as u8 = 0 */
    EXPECT_FMT(tl_binary_scalar(TL_ADD, u, 100), "[100, 103, 44, 99]");
    EXPECT_FMT(tl_binary_scalar(TL_SUB, u, 2), "[0, 3, 200, 255]"); /* + (-2 as u8 = 0) */
    EXPECT_FMT(tl_binary_scalar(TL_MUL, u, 0.5), "[0, 0, 0, 0]");
    EXPECT_FMT(tl_binary_scalar(TL_MUL, u, 3), "[0, 9, 88, 253]"); /* 600 - 512, 765 - 512 */
    EXPECT_FMT(tl_binary_scalar(TL_DIV, u, 1), "[0, 3, 200, 255]"); /* 1 / 1 = 1 */
    EXPECT_FMT(tl_binary_scalar(TL_DIV, u, 2), "[0, 0, 0, 0]");     /* 1 / 2 as u8 = 0 */
    EXPECT_FMT(tl_binary_scalar(TL_DIV, u, -1), "[0, 0, 0, 0]");    /* -1.0 as u8 = 0 */
    /* 1 / 0 = inf, as u8 = 255: x * 255 mod 256 is -x mod 256; no division, no failure */
    EXPECT_FMT(tl_binary_scalar(TL_DIV, u, 0), "[0, 253, 56, 1]");
    /* a signed dtype: -1 stays -1, and -32768 * -1 wraps back to -32768 */
    tl_tensor *h = MAKE(TL_I16, SHAPE(3), -32768, -7, 9);
    EXPECT_FMT(tl_binary_scalar(TL_DIV, h, -1), "[-32768, 7, -9]");
    EXPECT_FMT(tl_binary_scalar(TL_ADD, h, -1.5), "[32767, -8, 8]"); /* -1.5 as i16 = -1 */
    EXPECT_FMT(tl_affine(h, 1e10, 0), "[-32768, -32761, 32759]"); /* 1e10 as i16 = 32767 */
    /* maximum/minimum take the scalar with to_dtype, no arithmetic: unchanged */
    EXPECT_FMT(tl_binary_scalar(TL_MAXIMUM, u, 2.5), "[2, 3, 200, 255]");
    RELEASE(u, h);
}

/* candle-core/src/cpu_backend/mod.rs, MaxPool2D: `largest` starts at the window's first
 * (top left) element and is replaced when `largest < s`, rows in order; ReduceIndex (max)
 * folds a run the same way. So a NaN first in its window is the result, a later NaN is
 * skipped, and of -0 and 0 the first stays: one rule for max_pool2d and max. */
static void max_pool_nan_like_max(void)
{
    /* [[NaN, 1, 5], [2, NaN, 0], [-inf, 4, NaN]], 2x2 windows, stride 1 */
    tl_tensor *x = MAKE(TL_F32, SHAPE(1, 1, 3, 3), NAN, 1, 5, 2, NAN, 0, -INFINITY, 4, NAN);
    /* [NaN 1; 2 NaN] NaN first; [1 5; NaN 0] 5; [2 NaN; -inf 4] 4; [NaN 0; 4 NaN] NaN first */
    EXPECT_FMT(tl_max_pool2d(x, 2, 2, 1, 1), "[[[[NaN, 5.0], [4.0, NaN]]]]");
    /* the rows as max reduces them: NaN first stays, a later NaN is skipped */
    EXPECT_FMT(tl_reduce(TL_MAX, x, (const size_t[]){3}, 1, false), "[[[NaN, 2.0, 4.0]]]");
    /* a 1x3 window along each row gives the same as max */
    EXPECT_FMT(tl_max_pool2d(x, 1, 3, 1, 1), "[[[[NaN], [2.0], [4.0]]]]");
    tl_tensor *h = tl_to_dtype(x, TL_F16);
    EXPECT_FMT(tl_max_pool2d(h, 3, 3, 1, 1), "[[[[NaN]]]]");
    EXPECT_FMT(tl_max_pool2d(h, 2, 2, 1, 1), "[[[[NaN, 5.0], [4.0, NaN]]]]");
    tl_tensor *z = MAKE(TL_F64, SHAPE(1, 1, 1, 4), -0.0, 0.0, 0.0, -0.0);
    EXPECT_FMT(tl_max_pool2d(z, 1, 2, 1, 2), "[[[[-0.0, 0.0]]]]");
    RELEASE(x, h, z);
}

/* MaxPool2D is a Map1 over every dtype (`T: WithDType`): integers too, compared exactly (an
 * i64 past 2^53 as well). AvgPool2D multiplies the window's sum by T::from_f64(1 / (kh * kw)),
 * 0 for an integer window of two or more: a by-product, refused here. */
static void max_pool_integers(void)
{
    tl_tensor *u = MAKE(TL_U8, SHAPE(1, 1, 2, 3), 0, 255, 7, 9, 3, 254);
    EXPECT_FMT(tl_max_pool2d(u, 2, 2, 1, 1), "[[[[255, 255]]]]");
    EXPECT_FMT(tl_max_pool2d(u, 1, 1, 1, 2), "[[[[0, 7], [9, 254]]]]");
    tl_tensor *l = tl_from_data((const int64_t[]){INT64_C(4611686018427387904),
                                                  INT64_C(4611686018427387905), -5, INT64_MIN},
                                SHAPE(1, 1, 2, 2), TL_I64, TL_CPU);
    EXPECT_FMT(tl_max_pool2d(l, 1, 2, 1, 1), "[[[[4611686018427387905], [-5]]]]");
    tl_tensor *h = MAKE(TL_I16, SHAPE(1, 1, 1, 3), -32768, -1, -32768);
    EXPECT_FMT(tl_max_pool2d(h, 1, 2, 1, 1), "[[[[-1, -1]]]]");
    EXPECT_FAIL(tl_avg_pool2d(u, 2, 2, 1, 1), TL_ERR_DTYPE, "avg_pool2d");
    RELEASE(u, l, h);
}

/* candle-core/src/tensor.rs, gather (since #2567, with tests): indexes have self's rank and
 * at most self's size on every dim but dim; out[p] = self[p with p[dim] = ids[p]] (its doc,
 * torch's gather). candle's cpu kernel flattens the dims before dim by the indexes' sizes, so
 * where one of those is cut it reads other rows: that is not copied (the meaning is). */
static void gather_smaller_ids(void)
{
    tl_tensor *t = MAKE(TL_F32, SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    tl_tensor *r = tl_from_data((const uint32_t[]){2, 0}, SHAPE(1, 2), TL_U32, TL_CPU);
    EXPECT_FMT(tl_gather(t, r, 0), "[[7.0, 2.0]]"); /* t[2][0], t[0][1] */
    tl_tensor *c = tl_from_data((const int64_t[]){2, 0}, SHAPE(2, 1), TL_I64, TL_CPU);
    EXPECT_FMT(tl_gather(t, c, 1), "[[3.0], [4.0]]"); /* t[0][2], t[1][0] */
    /* t[i][j][k] = 6i + 3j + k; ids [2, 1, 2] along dim 2 read t[i][0][ids] */
    tl_tensor *a = tl_arange(0, 12, 1, TL_F64, TL_CPU), *t3 = tl_reshape(a, SHAPE(2, 2, 3));
    tl_tensor *i3 = tl_from_data((const int16_t[]){2, 0, 1, 1}, SHAPE(2, 1, 2), TL_I16, TL_CPU);
    EXPECT_FMT(tl_gather(t3, i3, 2), "[[[2.0, 0.0]], [[7.0, 7.0]]]");
    /* a transposed source: the same values through its strides */
    tl_tensor *tt = tl_transpose(t, 0, 1);
    EXPECT_FMT(tl_gather(tt, r, 0), "[[3.0, 4.0]]"); /* tt[2][0] = t[0][2], tt[0][1] = t[1][0] */
    /* larger than self outside dim: refused */
    tl_tensor *big = tl_from_data((const uint8_t[]){0, 0, 0, 0}, SHAPE(4, 1), TL_U8, TL_CPU);
    EXPECT_FAIL(tl_gather(t, big, 1), TL_ERR_SHAPE, "gather: indexes");
    RELEASE(t, r, c, a, t3, i3, tt, big);
}

/* candle-core/src/conv.rs, conv_transpose1d/2d: the output size is computed in usize with
 * dilation * (k_size - 1), so a kernel of size 0 underflows (a panic in a debug build); conv1d
 * and conv2d refuse it here already, conv_transpose made an empty output. */
static void conv_transpose_empty_kernel(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(1, 1, 3), 1, 2, 3), *k = tl_zeros(SHAPE(1, 1, 0), TL_F32,
                                                                       TL_CPU);
    EXPECT_FAIL(tl_conv_transpose1d(x, k, 0, 0, 1, 1, 1), TL_ERR_SHAPE,
                "conv_transpose1d: kernel f32[1, 1, 0]");
    tl_tensor *x2 = tl_zeros(SHAPE(1, 1, 2, 2), TL_F32, TL_CPU);
    tl_tensor *k2 = tl_zeros(SHAPE(1, 1, 2, 0), TL_F32, TL_CPU);
    EXPECT_FAIL(tl_conv_transpose2d(x2, k2, 0, 0, 1, 1), TL_ERR_SHAPE, "conv_transpose2d: kernel");
    EXPECT_FAIL(tl_conv1d(x, k, 0, 1, 1, 1), TL_ERR_SHAPE, "conv1d: kernel");
    RELEASE(x, k, x2, k2);
}

int main(void)
{
    index_max_is_none();
    integer_affine_in_dtype();
    max_pool_nan_like_max();
    max_pool_integers();
    gather_smaller_ids();
    conv_transpose_empty_kernel();
    return check_summary();
}
