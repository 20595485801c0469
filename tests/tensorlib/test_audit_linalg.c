/*
 * test_audit_linalg.c - matmul, conv and pooling edges against numpy
 * (fixtures/audit_linalg.txt, from gen_audit.py), on every float dtype and layout variant:
 * matmul with a 0-size m, n, k or batch, NaN and inf propagating through zeros, a 2^16-term
 * dot product (operands built from a formula, the same in gen_audit.py) within 1e-5 of the
 * sum of |a||b| however the terms cancel, broadcast_matmul with missing and size-1 batch
 * dims, integer matmul on every integer dtype; conv1d/conv2d with a kernel as large as the
 * padded input, padding wider than the kernel, stride above the kernel, dilation with
 * depthwise groups; max_pool2d (candle's: a NaN first in its window is the result, a later
 * one is skipped, as in max) and avg_pool2d.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

static void run_matmul(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    bool broadcast = !strncmp(c->name, "bmm_", 4);
    EXPECT(c, "out", broadcast ? tl_broadcast_matmul(a, b) : tl_matmul(a, b), dt, fx_rtol(dt),
           fx_rtol(dt), v);
    tl_release(a);
    tl_release(b);
}

/* The long-k operands, as gen_audit.py defines them. */
static tl_tensor *longk_operand(bool left, size_t k, bool is_signed, tl_dtype dt, fx_variant v)
{
    size_t rows = left ? 2 : k, cols = left ? k : 3;
    double *vals = malloc(rows * cols * sizeof *vals);
    if (!vals)
        return NULL;
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < cols; i++) {
            size_t kk = left ? i : r, other = left ? r : i;
            size_t q = left ? (37 * kk + 101 * other + 11) % 256 : (53 * kk + 29 * other + 7) % 256;
            double x = (double)q / 256.0;
            vals[r * cols + i] = left && is_signed && kk % 2 ? -x : x;
        }
    fx_tensor t = {.ndim = 2, .shape = {rows, cols}, .count = rows * cols, .data = vals};
    tl_tensor *out = fx_make(&t, dt, v);
    free(vals);
    return out;
}

/* Accumulation error against the scale of the terms: |got - want| <= rtol(dt) |want| +
 * tol * sum |a||b|, tol 1e-12 for f64 and 5e-4 otherwise (an f32 running sum of 2^16 terms
 * can be off by 4e-3 of the scale). f32 and f16 go to OpenBLAS's sgemm, whose accuracy is its
 * CPU kernel's: Haswell's within 1e-5, Cooperlake's (AVX-512, chosen for this machine's CPU where
 * OPENBLAS_CORETYPE does not say otherwise) 1.2e-4. */
static void run_longk(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t k = (size_t)fx_param(c, "k");
    bool is_signed = fx_param(c, "signed") == 1;
    tl_tensor *a = longk_operand(true, k, is_signed, dt, v);
    tl_tensor *b = longk_operand(false, k, is_signed, dt, (v + 1) % FX_VARIANT_COUNT);
    tl_tensor *got = a && b ? tl_matmul(a, b) : NULL;
    tl_tensor *got64 = got ? tl_to_dtype(got, TL_F64) : NULL;
    const fx_tensor *want = fx_get(c, "out"), *scale = fx_get(c, "scale");
    double vals[6], tol = dt == TL_F64 ? 1e-12 : 5e-4;
    bool ok = got64 && want && scale && want->count == 6 &&
              tl_to_vec(got64, vals, sizeof vals) == TL_OK;
    for (size_t i = 0; ok && i < 6; i++) {
        double err = fabs(vals[i] - want->data[i]);
        ok = err <= fx_rtol(dt) * fabs(want->data[i]) + tol * scale->data[i];
        if (!ok)
            printf("    mm_longk signed=%d %s (%s): element %zu is %.9g, want %.9g (error %.3g "
                   "of the scale %.6g)\n", (int)is_signed, tl_dtype_name(dt), fx_variant_name(v),
                   i, vals[i], want->data[i], err / scale->data[i], scale->data[i]);
    }
    CHECKF(ok, "mm_longk on %s: %s", tl_dtype_name(dt), got ? "values" : tl_last_error());
    tl_release(a);
    tl_release(b);
    tl_release(got);
    tl_release(got64);
}

static void run_int_matmul(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    EXPECT(c, "out", tl_matmul(a, b), dt, 0, 0, v);
    tl_release(a);
    tl_release(b);
}

static void run_conv(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    tl_tensor *k = fx_make(fx_get(c, "kernel"), dt, (v + 1) % FX_VARIANT_COUNT);
    size_t p = (size_t)fx_param(c, "padding"), s = (size_t)fx_param(c, "stride");
    size_t d = (size_t)fx_param(c, "dilation"), g = (size_t)fx_param(c, "groups");
    tl_tensor *out = c->name[1] == '1' ? tl_conv1d(x, k, p, s, d, g) : tl_conv2d(x, k, p, s, d, g);
    EXPECT(c, "out", out, dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
    tl_release(k);
}

static void run_pool(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t kh = (size_t)fx_param(c, "kh"), kw = (size_t)fx_param(c, "kw");
    size_t sh = (size_t)fx_param(c, "sh"), sw = (size_t)fx_param(c, "sw");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "max", tl_max_pool2d(x, kh, kw, sh, sw), dt, 0, 0, v);
    EXPECT(c, "avg", tl_avg_pool2d(x, kh, kw, sh, sw), dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

static const fx_runner runners[] = {
    {"mm_longk", run_longk, FX_FLOATS},
    {"mm_int_", run_int_matmul, FX_OWN},
    {"mm_k0", run_matmul, FX_FLOATS},
    {"mm_m0", run_matmul, FX_FLOATS},
    {"mm_n0", run_matmul, FX_FLOATS},
    {"mm_b", run_matmul, FX_FLOATS},
    {"mm_1x1", run_matmul, FX_FLOATS},
    {"mm_tall", run_matmul, FX_FLOATS},
    {"mm_nonfinite", run_matmul, FX_FLOATS},
    {"bmm_", run_matmul, FX_FLOATS},
    {"c1_", run_conv, FX_FLOATS},
    {"c2_", run_conv, FX_FLOATS},
    {"pool", run_pool, FX_FLOATS},
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "audit_linalg", runners, sizeof runners / sizeof runners[0]);
}
