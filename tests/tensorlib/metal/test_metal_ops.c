/*
 * test_metal_ops.c - every Metal op against the CPU result for the same inputs, copy
 * independence, and the "no metal implementation" errors. Needs a Mac with a Metal GPU;
 * anywhere else it prints why and exits 77, which meson reports as SKIP.
 *
 * Each case builds its inputs on the CPU, moves them to Metal with tl_to_device, runs the op
 * on both devices, brings the Metal result back and compares element by element as f64, with
 * a tolerance for the dtype (f16/bf16 round much earlier than f32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tl.h"

#define SKIP 77
#define N(a) (sizeof(a) / sizeof *(a))

static const tl_dtype all_dtypes[] = {TL_F32, TL_F16, TL_BF16, TL_U32, TL_U8, TL_I64};
static const tl_dtype float_dtypes[] = {TL_F32, TL_F16, TL_BF16};

static double tolerance(tl_dtype d)
{
    return d == TL_F32 ? 1e-4 : d == TL_F16 ? 1e-2 : d == TL_BF16 ? 5e-2 : 0;
}

static tl_tensor *metal_of(const tl_tensor *cpu)
{
    return cpu ? tl_to_device(cpu, TL_METAL) : NULL;
}

/* t's elements as doubles (caller frees), read through the CPU. */
static double *values(const tl_tensor *t, size_t *n)
{
    tl_tensor *c = tl_device_of(t) == TL_CPU ? tl_retain((tl_tensor *)t) : tl_to_device(t, TL_CPU);
    tl_tensor *d = c ? tl_to_dtype(c, TL_F64) : NULL;
    *n = t ? tl_elem_count(t) : 0;
    double *v = malloc((*n ? *n : 1) * sizeof *v);
    if (!d || !v || tl_to_vec(d, v, *n * sizeof *v) != TL_OK) {
        free(v);
        v = NULL;
    }
    tl_release(d);
    tl_release(c);
    return v;
}

static bool same_shape(const tl_tensor *a, const tl_tensor *b)
{
    return tl_ndim(a) == tl_ndim(b) && memcmp(tl_shape(a), tl_shape(b), tl_ndim(a) * sizeof(size_t)) == 0;
}

/* Compares and releases both results. tol is relative to max(1, |cpu value|). */
static void compare(const char *what, tl_tensor *cpu, tl_tensor *metal, double tol)
{
    size_t n = 0, m = 0, bad = 0;
    if (!CHECKF(cpu && metal, "%s: %s", what, tl_last_error()))
        goto out;
    if (!CHECKF(same_shape(cpu, metal) && tl_dtype_of(cpu) == tl_dtype_of(metal), "%s: shape/dtype", what))
        goto out;
    double *c = values(cpu, &n), *g = values(metal, &m);
    for (size_t i = 0; c && g && i < n; i++) {
        bool same = c[i] == g[i] || (isnan(c[i]) && isnan(g[i])); /* also equal infinities */
        if (!same && !(fabs(c[i] - g[i]) <= tol * fmax(1.0, fabs(c[i]))) && bad++ == 0)
            printf("    %s: element %zu cpu %.9g metal %.9g\n", what, i, c[i], g[i]);
    }
    CHECKF(c && g && bad == 0, "%s: %zu of %zu elements differ", what, bad, n);
    free(c);
    free(g);
out:
    tl_release(cpu);
    tl_release(metal);
}

/* Random values in [lo, hi) as dtype; integers are rounded so every dtype holds them. */
static tl_tensor *input(const size_t *shape, size_t ndim, tl_dtype dtype, double lo, double hi, uint64_t seed)
{
    tl_tensor *r = tl_rand(lo, hi, shape, ndim, TL_F32, TL_CPU, seed);
    if (dtype == TL_F32 || !r)
        return r;
    bool is_float = dtype == TL_F16 || dtype == TL_BF16;
    tl_tensor *rounded = is_float ? tl_retain(r) : tl_unary(TL_FLOOR, r);
    tl_tensor *out = rounded ? tl_to_dtype(rounded, dtype) : NULL;
    tl_release(rounded);
    tl_release(r);
    return out;
}

static tl_tensor *input_f32(const size_t *shape, size_t ndim, uint64_t seed)
{
    return input(shape, ndim, TL_F32, -2.0, 2.0, seed);
}

/* ---- cases ---- */

static const size_t s234[] = {2, 3, 4};

static void test_fill_and_copy(void)
{
    for (size_t i = 0; i < N(all_dtypes); i++) {
        tl_dtype d = all_dtypes[i];
        char what[64];
        snprintf(what, sizeof what, "full %s", tl_dtype_name(d));
        compare(what, tl_full(3.0, s234, 3, d, TL_CPU), tl_full(3.0, s234, 3, d, TL_METAL), tolerance(d));

        tl_tensor *x = input(s234, 3, d, 0.0, 100.0, 1 + i), *gx = metal_of(x);
        tl_tensor *xt = x ? tl_transpose(x, 0, 2) : NULL, *gt = gx ? tl_transpose(gx, 0, 2) : NULL;
        snprintf(what, sizeof what, "copy %s", tl_dtype_name(d));
        compare(what, tl_copy(x), tl_copy(gx), 0);
        snprintf(what, sizeof what, "contiguous of a transpose %s", tl_dtype_name(d));
        compare(what, tl_contiguous(xt), tl_contiguous(gt), 0);
        /* const_set through a strided view (strided fill) */
        if (xt && gt && tl_const_set(xt, 7.0) == TL_OK && tl_const_set(gt, 7.0) == TL_OK) {
            snprintf(what, sizeof what, "const_set on a view %s", tl_dtype_name(d));
            compare(what, tl_retain(x), tl_retain(gx), 0);
        }
        tl_release(xt);
        tl_release(gt);
        tl_release(x);
        tl_release(gx);
    }
}

static void test_unary(void)
{
    for (size_t f = 0; f < N(float_dtypes); f++) {
        tl_dtype d = float_dtypes[f];
        for (int op = 0; op < TL_UNARY_COUNT; op++) {
            /* log, sqrt and recip get positive inputs so both devices see defined values */
            bool positive = op == TL_LOG || op == TL_SQRT || op == TL_RECIP;
            tl_tensor *x = input(s234, 3, d, positive ? 0.1 : -3.0, 3.0, 10 + (uint64_t)op), *gx = metal_of(x);
            tl_tensor *xt = x ? tl_transpose(x, 1, 2) : NULL, *gt = gx ? tl_transpose(gx, 1, 2) : NULL;
            char what[64];
            snprintf(what, sizeof what, "%s %s", tl_unary_name((tl_unary_op)op), tl_dtype_name(d));
            compare(what, tl_unary((tl_unary_op)op, x), tl_unary((tl_unary_op)op, gx), tolerance(d));
            snprintf(what, sizeof what, "%s %s strided", tl_unary_name((tl_unary_op)op), tl_dtype_name(d));
            compare(what, tl_unary((tl_unary_op)op, xt), tl_unary((tl_unary_op)op, gt), tolerance(d));
            tl_release(xt);
            tl_release(gt);
            tl_release(x);
            tl_release(gx);
        }
    }
}

static void test_scalar_ops(void)
{
    tl_tensor *x = input(s234, 3, TL_F32, 0.1, 3.0, 30), *gx = metal_of(x);
    tl_tensor *y = input_f32(s234, 3, 31), *gy = metal_of(y);
    compare("affine", tl_affine(y, 1.5, -0.25), tl_affine(gy, 1.5, -0.25), 1e-5);
    compare("powf", tl_powf(x, 2.5), tl_powf(gx, 2.5), 1e-4);
    compare("clamp", tl_clamp(y, -0.5, 0.75), tl_clamp(gy, -0.5, 0.75), 0);
    compare("elu", tl_elu(y, 0.7), tl_elu(gy, 0.7), 1e-5);
    tl_release(x);
    tl_release(gx);
    tl_release(y);
    tl_release(gy);
}

static void test_binary_and_cmp(void)
{
    static const size_t s31[] = {3, 1};
    for (size_t i = 0; i < N(all_dtypes); i++) {
        tl_dtype d = all_dtypes[i];
        /* b > 0 so integer division is defined; b broadcasts over a */
        tl_tensor *a = input(s234, 3, d, 0.0, 50.0, 40 + i), *b = input(s31, 2, d, 1.0, 50.0, 50 + i);
        tl_tensor *ga = metal_of(a), *gb = metal_of(b);
        for (int op = 0; op < TL_BINARY_COUNT; op++) {
            char what[64];
            snprintf(what, sizeof what, "binary %d %s broadcast", op, tl_dtype_name(d));
            compare(what, tl_broadcast_binary((tl_binary_op)op, a, b),
                    tl_broadcast_binary((tl_binary_op)op, ga, gb), tolerance(d));
        }
        for (int op = 0; op < TL_CMP_COUNT; op++) {
            char what[64];
            snprintf(what, sizeof what, "cmp %d %s broadcast", op, tl_dtype_name(d));
            compare(what, tl_broadcast_cmp((tl_cmp_op)op, a, b),
                    tl_broadcast_cmp((tl_cmp_op)op, ga, gb), 0);
        }
        tl_tensor *c = tl_broadcast_cmp(TL_GT, a, b), *gc = metal_of(c);
        tl_tensor *bb = tl_broadcast_as(b, s234, 3), *gbb = tl_broadcast_as(gb, s234, 3);
        compare("where_cond", tl_where_cond(c, a, bb), tl_where_cond(gc, ga, gbb), 0);
        tl_release(c);
        tl_release(gc);
        tl_release(bb);
        tl_release(gbb);
        tl_release(a);
        tl_release(b);
        tl_release(ga);
        tl_release(gb);
    }
}

static void test_reductions(void)
{
    static const size_t s456[] = {4, 5, 6}, one[] = {1}, two[] = {0, 2};
    for (size_t i = 0; i < N(all_dtypes); i++) {
        tl_dtype d = all_dtypes[i];
        tl_tensor *x = input(s456, 3, d, 0.0, 4.0, 60 + i), *gx = metal_of(x);
        for (int op = 0; op < TL_REDUCE_COUNT; op++) {
            char what[64];
            snprintf(what, sizeof what, "reduce %d over dim 1 %s", op, tl_dtype_name(d));
            /* sums of many f16/bf16 values round differently in a tree than in a loop */
            double tol = d == TL_F32 ? 1e-4 : tolerance(d) * 4;
            compare(what, tl_reduce((tl_reduce_op)op, x, one, 1, true),
                    tl_reduce((tl_reduce_op)op, gx, one, 1, true), tol);
            if (op == TL_ARGMAX || op == TL_ARGMIN)
                continue;
            snprintf(what, sizeof what, "reduce %d over dims 0,2 %s", op, tl_dtype_name(d));
            compare(what, tl_reduce((tl_reduce_op)op, x, two, 2, false),
                    tl_reduce((tl_reduce_op)op, gx, two, 2, false), tol);
        }
        tl_release(x);
        tl_release(gx);
    }
}

static void test_to_dtype(void)
{
    for (size_t i = 0; i < N(all_dtypes); i++) {
        /* small whole numbers: every dtype holds them exactly */
        tl_tensor *x = input(s234, 3, all_dtypes[i], 0.0, 100.0, 70 + i), *gx = metal_of(x);
        tl_tensor *xt = x ? tl_transpose(x, 0, 1) : NULL, *gt = gx ? tl_transpose(gx, 0, 1) : NULL;
        for (size_t j = 0; j < N(all_dtypes); j++) {
            char what[64];
            snprintf(what, sizeof what, "to_dtype %s -> %s", tl_dtype_name(all_dtypes[i]),
                     tl_dtype_name(all_dtypes[j]));
            compare(what, tl_to_dtype(xt, all_dtypes[j]), tl_to_dtype(gt, all_dtypes[j]), 0);
        }
        tl_release(xt);
        tl_release(gt);
        tl_release(x);
        tl_release(gx);
    }
}

static void test_matmul(void)
{
    static const size_t sa[] = {2, 3, 20}, sb[] = {2, 20, 17}, sbt[] = {2, 17, 20};
    for (size_t f = 0; f < N(float_dtypes); f++) {
        tl_dtype d = float_dtypes[f];
        tl_tensor *a = input(sa, 3, d, -1.0, 1.0, 80), *b = input(sb, 3, d, -1.0, 1.0, 81);
        tl_tensor *bt0 = input(sbt, 3, d, -1.0, 1.0, 82), *bt = bt0 ? tl_transpose(bt0, 1, 2) : NULL;
        tl_tensor *ga = metal_of(a), *gb = metal_of(b), *gbt0 = metal_of(bt0);
        tl_tensor *gbt = gbt0 ? tl_transpose(gbt0, 1, 2) : NULL;
        compare("matmul", tl_matmul(a, b), tl_matmul(ga, gb), tolerance(d) * 10);
        compare("matmul with a transposed operand", tl_matmul(a, bt), tl_matmul(ga, gbt), tolerance(d) * 10);
        tl_release(a);
        tl_release(b);
        tl_release(bt0);
        tl_release(bt);
        tl_release(ga);
        tl_release(gb);
        tl_release(gbt0);
        tl_release(gbt);
    }
}

static void test_indexing(void)
{
    static const size_t s43[] = {4, 3};
    static const uint32_t ids[] = {3, 0, 2, 2, 1};
    static const uint32_t gids[] = {2, 0, 1, 1, 1, 0, 0, 2, 2, 1, 0, 0};
    static const size_t sids[] = {5};
    tl_tensor *x = input(s43, 2, TL_F32, -5.0, 5.0, 90), *gx = metal_of(x);
    tl_tensor *i = tl_from_data(ids, sids, 1, TL_U32, TL_CPU), *gi = metal_of(i);
    tl_tensor *g = tl_from_data(gids, s43, 2, TL_U32, TL_CPU), *gg = metal_of(g);
    compare("index_select dim 0", tl_index_select(x, i, 0), tl_index_select(gx, gi, 0), 0);
    compare("gather dim 1", tl_gather(x, g, 1), tl_gather(gx, gg, 1), 0);
    tl_release(x);
    tl_release(gx);
    tl_release(i);
    tl_release(gi);
    tl_release(g);
    tl_release(gg);
}

static void test_softmax(void)
{
    static const size_t s3[] = {3, 7, 5};
    for (size_t f = 0; f < N(float_dtypes); f++) {
        tl_dtype d = float_dtypes[f];
        tl_tensor *x = input(s3, 3, d, -4.0, 4.0, 100), *gx = metal_of(x);
        for (size_t dim = 0; dim < 3; dim++) {
            char what[64];
            snprintf(what, sizeof what, "softmax dim %zu %s", dim, tl_dtype_name(d));
            compare(what, tl_softmax(x, dim), tl_softmax(gx, dim), tolerance(d));
            snprintf(what, sizeof what, "log_softmax dim %zu %s", dim, tl_dtype_name(d));
            compare(what, tl_log_softmax(x, dim), tl_log_softmax(gx, dim), tolerance(d));
        }
        tl_release(x);
        tl_release(gx);
    }
}

/* Integers computed in 64 bits and stored wrapping, floats into integers saturating and NaN
 * to 0, as the cpu backend does. */
static void test_integer_overflow(void)
{
    static const size_t s5[] = {5};
    static const float f[] = {300.5f, -3.0f, 7.9f, 1e10f, NAN};
    static const uint8_t a[] = {200, 255, 0, 17, 128}, b[] = {100, 1, 1, 3, 2};
    tl_tensor *x = tl_from_data(f, s5, 1, TL_F32, TL_CPU), *gx = metal_of(x);
    tl_tensor *ua = tl_from_data(a, s5, 1, TL_U8, TL_CPU), *ub = tl_from_data(b, s5, 1, TL_U8, TL_CPU);
    tl_tensor *ga = metal_of(ua), *gb = metal_of(ub);
    static const size_t all[] = {0};
    for (size_t i = 0; i < N(all_dtypes); i++) {
        char what[64];
        snprintf(what, sizeof what, "to_dtype f32 -> %s out of range", tl_dtype_name(all_dtypes[i]));
        if (all_dtypes[i] != TL_F32)
            compare(what, tl_to_dtype(x, all_dtypes[i]), tl_to_dtype(gx, all_dtypes[i]), tolerance(all_dtypes[i]));
    }
    for (int op = TL_ADD; op <= TL_MUL; op++)
        compare("u8 overflow", tl_binary((tl_binary_op)op, ua, ub), tl_binary((tl_binary_op)op, ga, gb), 0);
    compare("u8 sum", tl_reduce(TL_SUM, ua, all, 1, false), tl_reduce(TL_SUM, ga, all, 1, false), 0);
    compare("u8 mean", tl_reduce(TL_MEAN, ua, all, 1, false), tl_reduce(TL_MEAN, ga, all, 1, false), 0);
    tl_release(x);
    tl_release(gx);
    tl_release(ua);
    tl_release(ub);
    tl_release(ga);
    tl_release(gb);
}

/* The copy check: candle's Metal copy() shares the buffer; ours must not. */
static void test_copy_is_independent(void)
{
    float v[24];
    tl_tensor *x = tl_full(1.0, s234, 3, TL_F32, TL_METAL), *c = x ? tl_copy(x) : NULL;
    CHECKF(c != NULL, "copy: %s", tl_last_error());
    CHECK(c && !tl_shares_storage(x, c));
    CHECK(c && tl_const_set(c, 7.0) == TL_OK);
    CHECK(tl_to_vec(x, v, sizeof v) == TL_OK && v[0] == 1.0f && v[23] == 1.0f);
    CHECK(c && tl_to_vec(c, v, sizeof v) == TL_OK && v[0] == 7.0f && v[23] == 7.0f);
    CHECK(x && tl_const_set(x, 3.0) == TL_OK);
    CHECK(c && tl_to_vec(c, v, sizeof v) == TL_OK && v[5] == 7.0f);
    tl_release(c);
    tl_release(x);
}

static tl_tensor *cpu_only_fwd(void *ctx, const tl_view *args, size_t nargs)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    tl_fail(TL_ERR_BACKEND, "the cpu forward must not run for a metal tensor");
    return NULL;
}

static tl_status cpu_only_inplace(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx;
    (void)dst;
    (void)args;
    (void)nargs;
    return tl_fail(TL_ERR_BACKEND, "the cpu forward must not run for a metal tensor");
}

static bool unsupported(const char *needle)
{
    return tl_last_status() == TL_ERR_UNSUPPORTED && strstr(tl_last_error(), needle) != NULL;
}

/* Custom ops without metal_fwd on an unshared copy, an op with no Metal kernel, f64. */
static void test_no_metal_implementation(void)
{
    static const size_t s3[] = {1, 1, 3}, k[] = {1, 1, 1};
    tl_custom_op op = {"cpu_only_op", cpu_only_fwd, NULL, NULL};
    tl_inplace_op iop = {"cpu_only_inplace", cpu_only_inplace, NULL, NULL};
    tl_tensor *x = tl_full(1.0, s3, 3, TL_F32, TL_METAL), *c = x ? tl_copy(x) : NULL;
    CHECK(c && tl_custom_op1(c, &op) == NULL && unsupported("no metal implementation for cpu_only_op"));
    CHECK(c && tl_inplace_op2(x, c, &iop) == TL_ERR_UNSUPPORTED &&
          unsupported("no metal implementation for cpu_only_inplace"));
    tl_tensor *w = tl_full(1.0, k, 3, TL_F32, TL_METAL);
    CHECK(w && tl_conv1d(x, w, 0, 1, 1, 1) == NULL && unsupported("no metal implementation for conv1d"));
    CHECK(tl_full(1.0, s3, 3, TL_F64, TL_METAL) == NULL && unsupported("no metal implementation for fill on f64"));
    /* issue #16's ops without a natural Metal kernel, and the dtypes the kernels lack */
    CHECK(tl_arg_sort_last_dim(x, true) == NULL &&
          unsupported("no metal implementation for arg_sort_last_dim"));
    CHECK(w && tl_conv_transpose1d(x, w, 0, 0, 1, 1, 1) == NULL &&
          unsupported("no metal implementation for conv_transpose1d"));
    static const size_t s4[] = {1, 1, 2, 2};
    tl_tensor *img = tl_full(1.0, s4, 4, TL_F32, TL_METAL);
    CHECK(img && tl_max_pool2d(img, 2, 2, 1, 1) == NULL &&
          unsupported("no metal implementation for max_pool2d"));
    CHECK(img && tl_avg_pool2d(img, 2, 2, 1, 1) == NULL &&
          unsupported("no metal implementation for avg_pool2d"));
    CHECK(tl_full(1.0, s3, 3, TL_I32, TL_METAL) == NULL && unsupported("no metal implementation for fill on i32"));
    tl_release(img);
    tl_release(w);
    tl_release(c);
    tl_release(x);
}

int main(void)
{
    if (!tl_device_available(TL_METAL)) {
        tl_tensor *t = tl_zeros(s234, 3, TL_F32, TL_METAL);
        printf("Metal unavailable: %s\n", t ? "tl_device_available says no, yet creation worked"
                                             : tl_last_error());
        tl_release(t);
        return SKIP;
    }
    test_fill_and_copy();
    test_unary();
    test_scalar_ops();
    test_binary_and_cmp();
    test_reductions();
    test_to_dtype();
    test_matmul();
    test_indexing();
    test_softmax();
    test_integer_overflow();
    test_copy_is_independent();
    test_no_metal_implementation();
    return check_summary();
}
