/*
 * test_candle.c - the candle ops added for issue #16 against numpy (fixtures/candle.txt, from
 * gen.py's gen_candle), on every float dtype and layout variant: sigmoid, erf, gelu_erf, pow,
 * var, log_sum_exp, mean over several dims, cumsum, flip, repeat, pad_with_zeros/same,
 * tril2/triu2/eye, broadcast_matmul, scatter, slice_scatter, sort; against PyTorch
 * (fixtures/torch.txt, from gen_torch.py): max/avg_pool2d, conv_transpose1d/2d and nearest
 * upsampling; then the scalar operands, broadcast_left and the error paths by hand.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

/* The list params d0, d1, ... (count nd) of a case. */
static size_t dims_of(const fx_case *c, size_t *dims)
{
    size_t n = (size_t)fx_param(c, "nd");
    for (size_t i = 0; i < n && i < TL_MAX_DIMS; i++) {
        char key[8];
        snprintf(key, sizeof key, "d%zu", i);
        dims[i] = (size_t)fx_param(c, key);
    }
    return n;
}

/* The op a case names, applied to its inputs x (and a/b, src, ids) made in dtype / variant. */
static tl_tensor *apply(const fx_case *c, tl_dtype dt, fx_variant v, const char *want_name)
{
    const char *n = c->name;
    size_t dims[TL_MAX_DIMS], nd = dims_of(c, dims);
    size_t dim = (size_t)fx_param(c, "dim");
    const fx_tensor *fxx = fx_get(c, "x");
    tl_tensor *x = fxx ? fx_make(fxx, dt, v) : NULL, *r = NULL;
    if (!strcmp(n, "sigmoid"))
        r = tl_unary(TL_SIGMOID, x);
    else if (!strcmp(n, "erf"))
        r = tl_unary(TL_ERF, x);
    else if (!strcmp(n, "gelu_erf"))
        r = tl_unary(TL_GELU_ERF, x);
    else if (!strcmp(n, "var"))
        r = tl_var(x, dim, false);
    else if (!strcmp(n, "log_sum_exp"))
        r = tl_log_sum_exp(x, dims, nd, false);
    else if (!strcmp(n, "mean"))
        r = tl_reduce(TL_MEAN, x, dims, nd, false);
    else if (!strcmp(n, "cumsum"))
        r = tl_cumsum(x, dim);
    else if (!strcmp(n, "flip"))
        r = tl_flip(x, dims, nd);
    else if (!strcmp(n, "repeat"))
        r = tl_repeat(x, dims, nd);
    else if (!strcmp(n, "pad_with_zeros"))
        r = tl_pad_with_zeros(x, dim, (size_t)fx_param(c, "left"), (size_t)fx_param(c, "right"));
    else if (!strcmp(n, "pad_with_same"))
        r = tl_pad_with_same(x, dim, (size_t)fx_param(c, "left"), (size_t)fx_param(c, "right"));
    else if (!strcmp(n, "tril2"))
        r = tl_tril2((size_t)fx_param(c, "n"), dt, TL_CPU);
    else if (!strcmp(n, "triu2"))
        r = tl_triu2((size_t)fx_param(c, "n"), dt, TL_CPU);
    else if (!strcmp(n, "eye"))
        r = tl_eye((size_t)fx_param(c, "n"), dt, TL_CPU);
    else if (!strcmp(n, "pow") || !strcmp(n, "broadcast_matmul")) {
        tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
        tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
        r = !strcmp(n, "pow") ? tl_pow(a, b) : tl_broadcast_matmul(a, b);
        FX_RELEASE(a, b);
    } else if (!strcmp(n, "slice_scatter") || !strcmp(n, "scatter")) {
        tl_tensor *src = fx_make(fx_get(c, "src"), dt, (v + 1) % FX_VARIANT_COUNT);
        tl_tensor *ids = fx_get(c, "ids") ? fx_make(fx_get(c, "ids"), TL_I64, v) : NULL;
        r = ids ? tl_scatter(x, ids, src, dim)
                : tl_slice_scatter(x, src, dim, (size_t)fx_param(c, "start"));
        FX_RELEASE(src, ids);
    } else if (!strcmp(n, "sort")) {
        bool asc = !strncmp(want_name, "asc", 3);
        tl_tensor *ids = NULL;
        r = tl_sort_last_dim(x, asc, &ids);
        if (strstr(want_name, "idx")) {
            tl_release(r);
            r = ids ? tl_to_dtype(ids, dt) : NULL;
            tl_release(ids);
        } else {
            tl_release(ids);
        }
    }
    tl_release(x);
    return r;
}

static void run_case(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    for (size_t i = 0; i < c->ntensors; i++) {
        const fx_tensor *want = &c->tensors[i];
        if (strcmp(want->name, "out") && strcmp(c->name, "sort"))
            continue;
        if (!strcmp(c->name, "sort") && !strcmp(want->name, "x"))
            continue;
        tl_tensor *got = apply(c, dtype, v, want->name);
        CHECKF(fx_expect(got, want, dtype, c->name), "%s %s on %s (%s)", c->name, want->name,
               tl_dtype_name(dtype), fx_variant_name(v));
        tl_release(got);
    }
}

/* PyTorch's references (fixtures/torch.txt, from gen_torch.py): pools, conv_transpose,
 * nearest upsampling. */
static void run_torch_case(const fx_case *c, tl_dtype dt, fx_variant v)
{
    const char *n = c->name;
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v), *k = NULL, *r = NULL;
    size_t kh = (size_t)fx_param(c, "kh"), kw = (size_t)fx_param(c, "kw");
    size_t sh = (size_t)fx_param(c, "sh"), sw = (size_t)fx_param(c, "sw");
    size_t pad = (size_t)fx_param(c, "padding"), opad = (size_t)fx_param(c, "output_padding");
    size_t stride = (size_t)fx_param(c, "stride"), dil = (size_t)fx_param(c, "dilation");
    if (fx_get(c, "k"))
        k = fx_make(fx_get(c, "k"), dt, (v + 1) % FX_VARIANT_COUNT);
    if (!strcmp(n, "max_pool2d"))
        r = tl_max_pool2d(x, kh, kw, sh, sw);
    else if (!strcmp(n, "avg_pool2d"))
        r = tl_avg_pool2d(x, kh, kw, sh, sw);
    else if (!strcmp(n, "conv_transpose1d"))
        r = tl_conv_transpose1d(x, k, pad, opad, stride, dil, (size_t)fx_param(c, "groups"));
    else if (!strcmp(n, "conv_transpose2d"))
        r = tl_conv_transpose2d(x, k, pad, opad, stride, dil);
    else if (!strcmp(n, "upsample_nearest1d"))
        r = tl_upsample_nearest1d(x, (size_t)fx_param(c, "h"));
    else if (!strcmp(n, "upsample_nearest2d"))
        r = tl_upsample_nearest2d(x, (size_t)fx_param(c, "h"), (size_t)fx_param(c, "w"));
    CHECKF(fx_expect(r, fx_get(c, "out"), dt, n), "%s on %s (%s)", n, tl_dtype_name(dt),
           fx_variant_name(v));
    FX_RELEASE(x, k, r);
}

/* Checks that t (owned) prints as want. */
static void prints(tl_tensor *t, const char *want, const char *what)
{
    char buf[512] = "";
    int ok = t && tl_format(t, buf, sizeof buf) >= 0 && !strcmp(buf, want);
    CHECKF(ok, "%s: got %s, want %s %s", what, buf, want, t ? "" : tl_last_error());
    tl_release(t);
}

static void by_hand(void)
{
    const float xv[] = {1, 2, 3, 4, 5, 6};
    tl_tensor *x = tl_from_data(xv, (const size_t[]){2, 3}, 2, TL_F32, TL_CPU);
    prints(tl_binary_scalar(TL_ADD, x, 0.5), "[[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]]", "x + 0.5");
    prints(tl_binary_scalar(TL_DIV, x, 2), "[[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]", "x / 2");
    prints(tl_binary_scalar(TL_MAXIMUM, x, 3), "[[3.0, 3.0, 3.0], [4.0, 5.0, 6.0]]", "max(x, 3)");
    prints(tl_cmp_scalar(TL_GE, x, 3), "[[0, 0, 1], [1, 1, 1]]", "x >= 3");
    /* the scalar takes the tensor's dtype first, as in candle: u8 x < 2.5 compares with 2 */
    const uint8_t uv[] = {1, 2, 3};
    tl_tensor *u = tl_from_data(uv, (const size_t[]){3}, 1, TL_U8, TL_CPU);
    prints(tl_cmp_scalar(TL_LT, u, 2.5), "[1, 0, 0]", "u8 < 2.5");
    /* u - 2 is candle's affine(1, -2), -2 becoming u8 0 first */
    prints(tl_binary_scalar(TL_SUB, u, 2), "[1, 2, 3]", "u8 - 2 (candle's affine in u8)");
    tl_release(u);
    tl_tensor *bl = tl_broadcast_left(x, (const size_t[]){2}, 1);
    CHECK(bl && tl_ndim(bl) == 3 && tl_shape(bl)[0] == 2 && tl_strides(bl)[0] == 0);
    prints(bl, "[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]",
           "broadcast_left");
    /* upsample: index i reads floor(i * in / out) */
    tl_tensor *l = tl_reshape(x, (const size_t[]){1, 2, 3}, 3);
    prints(tl_upsample_nearest1d(l, 5), "[[[1.0, 1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 5.0, 6.0]]]",
           "upsample_nearest1d");
    tl_tensor *img = tl_reshape(x, (const size_t[]){1, 1, 2, 3}, 4);
    prints(tl_upsample_nearest2d(img, 4, 3),
           "[[[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [4.0, 5.0, 6.0]]]]",
           "upsample_nearest2d");
    /* sort: stable on ties, NaN last ascending and first descending; integers exactly */
    const double sv[] = {2, NAN, 1, 2, -1};
    tl_tensor *s = tl_from_data(sv, (const size_t[]){5}, 1, TL_F64, TL_CPU);
    prints(tl_arg_sort_last_dim(s, true), "[4, 2, 0, 3, 1]", "argsort ascending");
    prints(tl_arg_sort_last_dim(s, false), "[1, 0, 3, 2, 4]", "argsort descending");
    const int64_t iv[] = {INT64_MAX, INT64_MAX - 1, INT64_MIN};
    tl_tensor *big = tl_from_data(iv, (const size_t[]){3}, 1, TL_I64, TL_CPU);
    prints(tl_arg_sort_last_dim(big, true), "[2, 1, 0]", "argsort i64");
    tl_release(big);
    tl_release(s);
    /* integer cumsum is int64 and wraps like matmul */
    const uint8_t cv[] = {200, 50, 10};
    tl_tensor *cu = tl_from_data(cv, (const size_t[]){3}, 1, TL_U8, TL_CPU);
    prints(tl_cumsum(cu, 0), "[200, 250, 4]", "u8 cumsum");
    tl_release(cu);
    /* errors */
    FX_FAILS(tl_broadcast_matmul(x, l), TL_ERR_SHAPE, "broadcast_matmul");
    FX_FAILS(tl_pad_with_same(x, 5, 1, 1), TL_ERR_RANGE, "dim 5");
    FX_FAILS(tl_repeat(x, (const size_t[]){2}, 1), TL_ERR_SHAPE, "repeat");
    FX_FAILS(tl_upsample_nearest2d(x, 2, 2), TL_ERR_SHAPE, "rank 4");
    FX_FAILS(tl_max_pool2d(img, 3, 1, 1, 1), TL_ERR_SHAPE, "window");
    FX_FAILS(tl_avg_pool2d(img, 1, 1, 0, 1), TL_ERR_SHAPE, "stride");
    tl_tensor *k = tl_ones((const size_t[]){2, 1, 3}, 3, TL_F32, TL_CPU);
    FX_FAILS(tl_conv_transpose1d(l, k, 0, 1, 1, 1, 1), TL_ERR_ARG, "output_padding");
    FX_FAILS(tl_conv_transpose1d(l, k, 3, 0, 1, 1, 1), TL_ERR_SHAPE, "padding 3 leaves no output");
    FX_FAILS(tl_conv_transpose1d(l, k, 0, 0, SIZE_MAX / 2, 1, 1), TL_ERR_RANGE, "overflows");
    FX_FAILS(tl_conv_transpose1d(l, k, 0, 0, 1, 1, 3), TL_ERR_SHAPE, "groups");
    tl_release(k);
    FX_FAILS(tl_var(x, 7, false), TL_ERR_RANGE, "var");
    tl_tensor *xi = tl_to_dtype(x, TL_I64);
    FX_FAILS(tl_pow(xi, xi), TL_ERR_DTYPE, "pow");
    FX_FAILS(tl_unary(TL_SIGMOID, xi), TL_ERR_DTYPE, "sigmoid");
    FX_RELEASE(xi, x, l, img);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "candle", run_case));
    CHECK(fx_each_case(dir, "torch", run_torch_case));
    by_hand();
    return check_summary();
}
