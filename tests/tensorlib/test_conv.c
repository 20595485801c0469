/*
 * test_conv.c - tl_conv1d / tl_conv2d against numpy (fixtures/conv.txt: padding, stride,
 * dilation, groups, depthwise, rectangular kernels) on every float dtype and on contiguous,
 * transposed and offset inputs and kernels; a by-hand identity; the error paths.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static void run_variant(const fx_case *c, tl_dtype dtype, fx_variant vx, fx_variant vk)
{
    char label[192];
    snprintf(label, sizeof label, "%s x=%s kernel=%s", c->name, fx_variant_name(vx),
             fx_variant_name(vk));
    tl_tensor *x = fx_make(fx_get(c, "x"), dtype, vx);
    tl_tensor *k = fx_make(fx_get(c, "kernel"), dtype, vk);
    size_t p = (size_t)fx_param(c, "padding"), s = (size_t)fx_param(c, "stride");
    size_t d = (size_t)fx_param(c, "dilation"), g = (size_t)fx_param(c, "groups");
    tl_tensor *out = NULL;
    if (x && k)
        out = tl_ndim(x) == 3 ? tl_conv1d(x, k, p, s, d, g) : tl_conv2d(x, k, p, s, d, g);
    CHECKF(fx_expect(out, fx_get(c, "out"), dtype, label), "%s on %s", label,
           tl_dtype_name(dtype));
    FX_RELEASE(x, k, out);
}

/* The input in layout vx with the kernel in every layout. */
static void run_case(const fx_case *c, tl_dtype dtype, fx_variant vx)
{
    for (int vk = 0; vk < FX_VARIANT_COUNT; vk++)
        run_variant(c, dtype, vx, vk);
}

/* A 1x1 kernel that swaps two channels returns the input with its channels swapped. */
static void test_identity(void)
{
    const double xv[] = {1, 2, 3, 4, 5, 6, 7, 8}, kv[] = {0, 1, 1, 0};
    size_t xs[] = {1, 2, 2, 2}, ks[] = {2, 2, 1, 1};
    tl_tensor *x = tl_from_data(xv, xs, 4, TL_F64, TL_CPU);
    tl_tensor *k = tl_from_data(kv, ks, 4, TL_F64, TL_CPU);
    tl_tensor *y = tl_conv2d(x, k, 0, 1, 1, 1);
    double got[8] = {0};
    CHECK(y && tl_to_vec(y, got, sizeof got) == TL_OK);
    CHECK(got[0] == 5 && got[3] == 8 && got[4] == 1 && got[7] == 4);
    FX_RELEASE(x, k, y);
}

/* A batch of two that is one sample broadcast (batch stride 0): both outputs are equal. */
static void test_broadcast_batch(void)
{
    const float xv[] = {1, 2, 3, 4, 5}, kv[] = {1, 0, -1};
    size_t xs[] = {1, 1, 5}, xb[] = {2, 1, 5}, ks[] = {1, 1, 3};
    tl_tensor *x1 = tl_from_data(xv, xs, 3, TL_F32, TL_CPU);
    tl_tensor *k = tl_from_data(kv, ks, 3, TL_F32, TL_CPU);
    tl_tensor *x = tl_broadcast_as(x1, xb, 3);
    tl_tensor *y = x ? tl_conv1d(x, k, 1, 1, 1, 1) : NULL;
    float got[10] = {0};
    CHECK(y && tl_shape(y)[0] == 2 && tl_shape(y)[2] == 5);
    CHECK(y && tl_to_vec(y, got, sizeof got) == TL_OK);
    /* y[j] = x[j-1] - x[j+1] with zero padding */
    CHECK(got[0] == -2 && got[1] == -2 && got[4] == 4 && got[5] == -2 && got[9] == 4);
    FX_RELEASE(x1, k, x, y);
}

static void test_errors(void)
{
    size_t xs[] = {1, 4, 5, 5}, ks[] = {2, 2, 3, 3}, x1s[] = {1, 4, 5}, k1s[] = {2, 4, 7};
    tl_tensor *x = tl_zeros(xs, 4, TL_F32, TL_CPU), *k = tl_zeros(ks, 4, TL_F32, TL_CPU);
    tl_tensor *x1 = tl_zeros(x1s, 3, TL_F32, TL_CPU), *k1 = tl_zeros(k1s, 3, TL_F32, TL_CPU);
    tl_tensor *kd = tl_zeros(ks, 4, TL_F64, TL_CPU), *xi = tl_zeros(xs, 4, TL_U32, TL_CPU);
    tl_tensor *ki = tl_zeros(ks, 4, TL_U32, TL_CPU);
    FX_FAILS(tl_conv2d(x, k, 0, 1, 1, 1), TL_ERR_SHAPE,
             "conv2d: kernel f32[2, 2, 3, 3] does not fit input f32[1, 4, 5, 5] with 1 groups");
    FX_FAILS(tl_conv2d(x, k, 0, 0, 1, 2), TL_ERR_ARG,
             "conv2d: groups, stride and dilation must be >= 1 (got 2, 0, 1)");
    FX_FAILS(tl_conv2d(x1, k, 0, 1, 1, 2), TL_ERR_SHAPE,
             "conv2d: needs input and kernel of rank 4, got f32[1, 4, 5] and f32[2, 2, 3, 3]");
    FX_FAILS(tl_conv1d(x1, k1, 0, 1, 1, 1), TL_ERR_SHAPE,
             "conv1d: kernel f32[2, 4, 7] (dilation 1) does not fit input f32[1, 4, 5] "
             "padded by 0");
    FX_FAILS(tl_conv2d(x, kd, 0, 1, 1, 2), TL_ERR_DTYPE,
             "conv2d: dtype mismatch (f32[1, 4, 5, 5] and f64[2, 2, 3, 3])");
    FX_FAILS(tl_conv2d(xi, ki, 0, 1, 1, 2), TL_ERR_DTYPE,
             "conv2d: needs a float dtype, got u32[1, 4, 5, 5]");
    tl_tensor *ok = tl_conv2d(x, k, 1, 2, 2, 2); /* the same operands fit with 2 groups */
    CHECKF(ok && tl_shape(ok)[1] == 2 && tl_shape(ok)[2] == 2, "%s", tl_last_error());
    FX_RELEASE(ok, x, k, x1, k1, kd, xi, ki);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "conv", run_case));
    test_identity();
    test_broadcast_batch();
    test_errors();
    return check_summary();
}
