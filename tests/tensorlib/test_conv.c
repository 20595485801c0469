/*
 * test_conv.c - tl_conv1d / tl_conv2d against numpy (fixtures/conv.txt: padding, stride,
 * dilation, groups, depthwise, rectangular kernels) on every float dtype and on contiguous,
 * transposed and offset inputs and kernels; a by-hand identity; the error paths.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static void run_case(const fx_case *c, tl_dtype dtype, fx_variant vx, fx_variant vk)
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
    tl_release(x);
    tl_release(k);
    tl_release(out);
}

static void test_fixtures(const char *dir)
{
    fx_file f;
    if (!CHECK(fx_load(dir, "conv", &f)))
        return;
    for (size_t i = 0; i < f.ncases; i++)
        for (size_t d = 0; d < 4; d++)
            for (int vx = 0; vx < FX_VARIANT_COUNT; vx++)
                for (int vk = 0; vk < FX_VARIANT_COUNT; vk++)
                    run_case(&f.cases[i], fx_float_dtypes[d], vx, vk);
    fx_free(&f);
}

/* A 1x1 kernel that swaps two channels returns the input with its channels swapped. */
static void test_identity(void)
{
    const double xv[] = {1, 2, 3, 4, 5, 6, 7, 8}, kv[] = {0, 1, 1, 0};
    size_t xs[] = {1, 2, 2, 2}, ks[] = {2, 2, 1, 1};
    tl_tensor *x = tl_from_data(xv, xs, 4, TL_F64, TL_CPU), *k = tl_from_data(kv, ks, 4, TL_F64, TL_CPU);
    tl_tensor *y = tl_conv2d(x, k, 0, 1, 1, 1);
    double got[8] = {0};
    CHECK(y && tl_to_vec(y, got, sizeof got) == TL_OK);
    CHECK(got[0] == 5 && got[3] == 8 && got[4] == 1 && got[7] == 4);
    tl_release(x);
    tl_release(k);
    tl_release(y);
}

static void expect_error(tl_tensor *got, tl_status status, const char *op, const char *part)
{
    CHECKF(!got && tl_last_status() == status, "status %d (%s)", (int)tl_last_status(),
           tl_last_error());
    CHECKF(strstr(tl_last_error(), op) && strstr(tl_last_error(), part),
           "message '%s' lacks '%s'", tl_last_error(), part);
    tl_release(got);
}

static void test_errors(void)
{
    size_t xs[] = {1, 4, 5, 5}, ks[] = {2, 2, 3, 3}, x1s[] = {1, 4, 5}, k1s[] = {2, 4, 7};
    tl_tensor *x = tl_zeros(xs, 4, TL_F32, TL_CPU), *k = tl_zeros(ks, 4, TL_F32, TL_CPU);
    tl_tensor *x1 = tl_zeros(x1s, 3, TL_F32, TL_CPU), *k1 = tl_zeros(k1s, 3, TL_F32, TL_CPU);
    tl_tensor *kd = tl_zeros(ks, 4, TL_F64, TL_CPU), *xi = tl_zeros(xs, 4, TL_U32, TL_CPU);
    tl_tensor *ki = tl_zeros(ks, 4, TL_U32, TL_CPU);
    expect_error(tl_conv2d(x, k, 0, 1, 1, 1), TL_ERR_SHAPE, "conv2d", "f32[2, 2, 3, 3]");
    expect_error(tl_conv2d(x, k, 0, 0, 1, 2), TL_ERR_ARG, "conv2d", "stride");
    expect_error(tl_conv2d(x1, k, 0, 1, 1, 2), TL_ERR_SHAPE, "conv2d", "f32[1, 4, 5]");
    expect_error(tl_conv1d(x1, k1, 0, 1, 1, 1), TL_ERR_SHAPE, "conv1d", "f32[2, 4, 7]");
    expect_error(tl_conv2d(x, kd, 0, 1, 1, 2), TL_ERR_DTYPE, "conv2d", "f64");
    expect_error(tl_conv2d(xi, ki, 0, 1, 1, 2), TL_ERR_DTYPE, "conv2d", "u32");
    tl_tensor *ok = tl_conv2d(x, k, 1, 2, 2, 2); /* the same operands fit with 2 groups */
    CHECKF(ok && tl_shape(ok)[1] == 2 && tl_shape(ok)[2] == 2, "%s", tl_last_error());
    tl_release(ok);
    tl_release(x);
    tl_release(k);
    tl_release(x1);
    tl_release(k1);
    tl_release(kd);
    tl_release(xi);
    tl_release(ki);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    test_fixtures(argv[1]);
    test_identity();
    test_errors();
    return check_summary();
}
