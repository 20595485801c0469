/*
 * test_audit_more.c - the ops a candle user reaches for that came later, against numpy
 * (fixtures/audit_more.txt, from gen_audit.py), on every dtype they take and every layout
 * variant: cumprod along each dim (NaN, inf and 0 in a prefix; integers wrapping in their
 * dtype), roll by positive, negative and larger-than-the-dim shifts (and along an empty dim),
 * norm (NaN, inf, empty), candle-nn's rms_norm and layer_norm (a constant row, a zero row, two
 * eps; alpha and beta in other layouts), dot and mv (empty k); then zeros_like/ones_like/
 * full_like, which copy a view's shape, dtype and device into new storage, integer dot, and
 * the argument checks of the norms, dot and mv.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

static void run_cumprod(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    if (fx_get(c, "out")) {
        EXPECT(c, "out", tl_cumprod(x, (size_t)fx_param(c, "dim")), dt, fx_rtol(dt),
               fx_rtol(dt), v);
    } else {
        EXPECT(c, "out0", tl_cumprod(x, 0), dt, 0, 0, v);
        EXPECT(c, "out1", tl_cumprod(x, TL_DIM(-1)), dt, 0, 0, v);
    }
    tl_release(x);
}

/* roll only moves values: every dtype, with the values fx_as_dtype_values gives it. */
static void run_roll(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_tensor x_vals = fx_as_dtype_values(fx_get(c, "x"), dt);
    fx_tensor want = fx_as_dtype_values(fx_get(c, "out"), dt);
    fx_case s = *c;
    for (size_t i = 0; i < s.ntensors; i++)
        s.tensors[i] = !strcmp(s.tensors[i].name, "x") ? x_vals : want;
    tl_tensor *x = fx_make(&x_vals, dt, v);
    EXPECT(&s, "out", tl_roll(x, (ptrdiff_t)fx_param(c, "shift"), fx_dim(c, "dim")), dt, 0, 0, v);
    tl_release(x);
    free(x_vals.data);
    free(want.data);
}

static void run_norm(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "out", tl_norm(x), dt, fx_rtol(dt), 0, v);
    tl_release(x);
}

/* f16/bf16 round twice (the normalised value, then times alpha): twice the tolerance. */
static void run_nn_norm(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    tl_tensor *alpha = fx_make(fx_get(c, "alpha"), dt, (v + 1) % FX_VARIANT_COUNT);
    tl_tensor *beta = fx_get(c, "beta") ? fx_make(fx_get(c, "beta"), dt, (v + 2) % FX_VARIANT_COUNT)
                                        : NULL;
    tl_tensor *out = beta ? tl_layer_norm(x, alpha, beta, fx_p(c, 0)) : tl_rms_norm(x, alpha, fx_p(c, 0));
    EXPECT(c, "out", out, dt, 2 * fx_rtol(dt), 2 * fx_rtol(dt), v);
    FX_RELEASE(x, alpha, beta);
}

/* a and b in different layouts; dot gives a 0-d tensor, mv a 1-D one. */
static void run_dot_mv(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    EXPECT(c, "out", c->name[0] == 'd' ? tl_dot(a, b) : tl_mv(a, b), dt, fx_rtol(dt),
           fx_rtol(dt), v);
    FX_RELEASE(a, b);
}

static const tl_dtype all_dtypes[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_U8,
                                      TL_U32, TL_I16, TL_I32, TL_I64};

static const fx_runner runners[] = {
    {"cumprod", run_cumprod, FX_FLOATS},
    {"intcumprod_", run_cumprod, FX_OWN},
    {"roll", run_roll, all_dtypes, sizeof all_dtypes / sizeof all_dtypes[0]},
    {"norm_", run_norm, FX_FLOATS},
    {"rms_norm", run_nn_norm, FX_FLOATS},
    {"layer_norm", run_nn_norm, FX_FLOATS},
    {"dot", run_dot_mv, FX_FLOATS},
    {"mv", run_dot_mv, FX_FLOATS},
};

/* Integer dot wraps in the dtype (each product, then the sum: candle's mul then sum_all);
 * shapes that are not [m, k] and [k], or two 1-D of one length, fail naming both. */
static void test_dot_mv_ints_and_misuse(void)
{
    const uint8_t a8[3] = {200, 3, 17}, b8[3] = {2, 100, 16};
    tl_tensor *a = tl_from_data(a8, (const size_t[]){3}, 1, TL_U8, TL_CPU);
    tl_tensor *b = tl_from_data(b8, (const size_t[]){3}, 1, TL_U8, TL_CPU);
    tl_tensor *d = tl_dot(a, b);
    uint8_t got = 0;
    CHECK(d && tl_ndim(d) == 0 && tl_to_vec(d, &got, 1) == TL_OK &&
          got == (uint8_t)((200 * 2 % 256) + 300 % 256 + 272 % 256));
    tl_tensor *m = tl_zeros((const size_t[]){2, 3}, 2, TL_U8, TL_CPU);
    tl_tensor *b2 = tl_zeros((const size_t[]){2}, 1, TL_U8, TL_CPU);
    tl_tensor *bf = tl_zeros((const size_t[]){3}, 1, TL_F32, TL_CPU);
    FX_FAILS(tl_dot(a, b2), TL_ERR_SHAPE,
             "dot: needs two 1-D tensors of one length, got u8[3] and u8[2]");
    FX_FAILS(tl_dot(m, m), TL_ERR_SHAPE, "dot: needs two 1-D");
    FX_FAILS(tl_dot(a, bf), TL_ERR_DTYPE, "dot: dtype mismatch");
    FX_FAILS(tl_mv(m, b2), TL_ERR_SHAPE, "mv: needs [m, k] and [k], got u8[2, 3] and u8[2]");
    FX_FAILS(tl_mv(a, m), TL_ERR_SHAPE, "mv: needs [m, k]");
    FX_FAILS(tl_mv(NULL, a), TL_ERR_ARG, "mv");
    FX_RELEASE(a, b, d, m, b2, bf);
}

/* Wrong alpha/beta shapes, dtypes and an integer or 0-d x fail naming the op. */
static void test_nn_norm_misuse(void)
{
    tl_tensor *x = tl_zeros((const size_t[]){2, 4}, 2, TL_F32, TL_CPU);
    tl_tensor *a4 = tl_ones((const size_t[]){4}, 1, TL_F32, TL_CPU);
    tl_tensor *a2 = tl_ones((const size_t[]){2}, 1, TL_F32, TL_CPU);
    tl_tensor *a14 = tl_ones((const size_t[]){1, 4}, 2, TL_F32, TL_CPU);
    tl_tensor *a4d = tl_ones((const size_t[]){4}, 1, TL_F64, TL_CPU);
    tl_tensor *xi = tl_zeros((const size_t[]){2, 4}, 2, TL_I32, TL_CPU);
    tl_tensor *ai = tl_ones((const size_t[]){4}, 1, TL_I32, TL_CPU);
    tl_tensor *s = tl_zeros(NULL, 0, TL_F32, TL_CPU);
    FX_FAILS(tl_rms_norm(x, a2, 1e-5), TL_ERR_SHAPE,
             "rms_norm: alpha must be [4] (the last dim of f32[2, 4]), got f32[2]");
    FX_FAILS(tl_rms_norm(x, a14, 1e-5), TL_ERR_SHAPE, "rms_norm: alpha");
    FX_FAILS(tl_rms_norm(x, a4d, 1e-5), TL_ERR_DTYPE, "rms_norm: dtype");
    FX_FAILS(tl_rms_norm(xi, ai, 1e-5), TL_ERR_DTYPE, "rms_norm");
    FX_FAILS(tl_rms_norm(s, a4, 1e-5), TL_ERR_RANGE, "rms_norm: dim");
    FX_FAILS(tl_rms_norm(NULL, a4, 1e-5), TL_ERR_ARG, "rms_norm");
    FX_FAILS(tl_layer_norm(x, a4, a2, 1e-5), TL_ERR_SHAPE, "layer_norm: beta must be [4]");
    FX_FAILS(tl_layer_norm(x, a4, NULL, 1e-5), TL_ERR_ARG, "layer_norm");
    FX_RELEASE(x, a4, a2, a14, a4d, xi, ai, s);
}

/* Fresh storage with the view's shape, dtype and device, filled; the view is untouched. */
static void test_like(void)
{
    tl_tensor *base = tl_arange(0, 24, 1, TL_I16, TL_CPU);
    tl_tensor *m = base ? tl_reshape(base, (const size_t[]){4, 6}, 2) : NULL;
    tl_tensor *view = m ? tl_narrow(m, 1, 1, 3) : NULL; /* [4, 3], strided */
    tl_tensor *made[3] = {tl_zeros_like(view), tl_ones_like(view), tl_full_like(view, -7)};
    const int16_t want[3] = {0, 1, -7};
    for (size_t k = 0; k < 3; k++) {
        int16_t got[12];
        CHECK(made[k] && tl_ndim(made[k]) == 2 && tl_shape(made[k])[0] == 4 &&
              tl_shape(made[k])[1] == 3 && tl_dtype_of(made[k]) == TL_I16 &&
              tl_device_of(made[k]) == TL_CPU && !tl_shares_storage(made[k], view) &&
              tl_is_contiguous(made[k]));
        CHECK(made[k] && tl_to_vec(made[k], got, sizeof got) == TL_OK);
        for (size_t i = 0; made[k] && i < 12; i++)
            CHECK(got[i] == want[k]);
        tl_release(made[k]);
    }
    tl_tensor *scalar = tl_full(2.5, NULL, 0, TL_F64, TL_CPU);
    tl_tensor *like = tl_full_like(scalar, 0.25);
    double d = 0;
    CHECK(like && tl_ndim(like) == 0 && tl_to_vec(like, &d, sizeof d) == TL_OK && d == 0.25);
    tl_release(like);
    tl_release(scalar);
    tl_release(view);
    tl_release(m);
    tl_release(base);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_more", runners, sizeof runners / sizeof runners[0]));
    test_like();
    test_nn_norm_misuse();
    test_dot_mv_ints_and_misuse();
    return check_summary();
}
