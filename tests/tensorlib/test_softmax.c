/*
 * test_softmax.c - tl_softmax / tl_log_softmax against numpy over every dim
 * (fixtures/softmax.txt), on every float dtype and layout variant; stability on inputs whose
 * exp overflows; the error paths.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static void run_case(const fx_case *c, tl_dtype dtype, fx_variant vx)
{
    char label[192];
    snprintf(label, sizeof label, "%s x=%s", c->name, fx_variant_name(vx));
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = fx_make(fx_get(c, "x"), dtype, vx);
    tl_tensor *sm = x ? tl_softmax(x, dim) : NULL, *lsm = x ? tl_log_softmax(x, dim) : NULL;
    CHECKF(fx_expect(sm, fx_get(c, "softmax"), dtype, label), "softmax %s on %s", label,
           tl_dtype_name(dtype));
    CHECKF(fx_expect(lsm, fx_get(c, "log_softmax"), dtype, label), "log_softmax %s on %s", label,
           tl_dtype_name(dtype));
    FX_RELEASE(x, sm, lsm);
}

/* r (computed on the [3, 2] transpose when `columns`) as f64 in the [2, 3] order. */
static tl_tensor *as_rows(tl_tensor *r, bool columns)
{
    tl_tensor *v = !r ? NULL : columns ? tl_transpose(r, 0, 1) : tl_retain(r);
    tl_tensor *f64 = v ? tl_to_dtype(v, TL_F64) : NULL;
    FX_RELEASE(r, v);
    return f64;
}

/* exp(1000) overflows f32 and f64: a naive softmax returns NaN here. The lanes are rows (the
 * last dim) or, with `columns`, run down dim 0 of the transposed copy. */
static void test_stability(tl_dtype dtype, bool columns)
{
    const double xv[] = {1000, 1001, 1002, -1000, -1001, -1002};
    const double want_sm[] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
    const double want_lsm[] = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806};
    size_t shape[] = {2, 3}, dim = columns ? 0 : 1;
    tl_tensor *x64 = tl_from_data(xv, shape, 2, TL_F64, TL_CPU);
    tl_tensor *rows = tl_to_dtype(x64, dtype);
    tl_tensor *t = columns && rows ? tl_transpose(rows, 0, 1) : NULL;
    tl_tensor *x = columns ? (t ? tl_copy(t) : NULL) : tl_retain(rows);
    tl_tensor *sm = as_rows(x ? tl_softmax(x, dim) : NULL, columns);
    tl_tensor *lsm = as_rows(x ? tl_log_softmax(x, dim) : NULL, columns);
    double got_sm[6] = {0}, got_lsm[6] = {0};
    CHECK(sm && tl_to_vec(sm, got_sm, sizeof got_sm) == TL_OK);
    CHECK(lsm && tl_to_vec(lsm, got_lsm, sizeof got_lsm) == TL_OK);
    for (int i = 0; i < 3; i++) {
        const char *dt = tl_dtype_name(dtype);
        CHECKF(fabs(got_sm[i] - want_sm[i]) < 1e-6, "%s softmax[%d] = %g", dt, i, got_sm[i]);
        CHECKF(fabs(got_sm[5 - i] - want_sm[i]) < 1e-6, "%s softmax[%d] = %g", dt, 5 - i,
               got_sm[5 - i]);
        CHECKF(fabs(got_lsm[i] - want_lsm[i]) < 1e-5, "%s log_softmax[%d] = %g", dt, i,
               got_lsm[i]);
    }
    FX_RELEASE(x64, rows, t, x, sm, lsm);
}

/* A broadcast input (stride 0 along dim 0): every row gets the same answer. */
static void test_broadcast(void)
{
    const float row[] = {1, 2, 3};
    size_t s13[] = {1, 3}, s43[] = {4, 3};
    tl_tensor *r = tl_from_data(row, s13, 2, TL_F32, TL_CPU);
    tl_tensor *x = tl_broadcast_as(r, s43, 2);
    tl_tensor *sm = x ? tl_softmax(x, 1) : NULL, *down = x ? tl_softmax(x, 0) : NULL;
    float got[12] = {0}, col[12] = {0};
    CHECK(sm && tl_to_vec(sm, got, sizeof got) == TL_OK);
    CHECK(down && tl_to_vec(down, col, sizeof col) == TL_OK);
    CHECK(fabsf(got[0] - 0.09003057f) < 1e-6f && got[9] == got[0] && got[11] == got[2]);
    CHECK(col[0] == 0.25f && col[11] == 0.25f); /* four equal entries down each column */
    FX_RELEASE(r, x, sm, down);
}

/* Rows long enough for the vector loops (16 lanes and a remainder) against libm in double. */
static void test_long_rows(tl_dtype dtype)
{
    enum { ROWS = 3, N = 1031 };
    static double x[ROWS * N], sm[ROWS * N], lsm[ROWS * N];
    tl_tensor *r = tl_rand(-20, 20, (const size_t[]){ROWS, N}, 2, dtype, TL_CPU, 9);
    tl_tensor *s = tl_softmax(r, 1), *l = tl_log_softmax(r, 1);
    tl_tensor *r64 = tl_to_dtype(r, TL_F64), *s64 = tl_to_dtype(s, TL_F64);
    tl_tensor *l64 = tl_to_dtype(l, TL_F64);
    if (!CHECK(r64 && s64 && l64 && tl_to_vec(r64, x, sizeof x) == TL_OK &&
               tl_to_vec(s64, sm, sizeof sm) == TL_OK && tl_to_vec(l64, lsm, sizeof lsm) == TL_OK))
        goto out;
    double tol = dtype == TL_F32 ? 4e-6 : 1e-13, worst = 0, worst_log = 0;
    for (size_t i = 0; i < ROWS; i++) {
        const double *row = x + i * N;
        double max = row[0], sum = 0;
        for (size_t j = 0; j < N; j++)
            max = row[j] > max ? row[j] : max;
        for (size_t j = 0; j < N; j++)
            sum += exp(row[j] - max);
        for (size_t j = 0; j < N; j++) {
            double want = exp(row[j] - max) / sum, want_log = row[j] - max - log(sum);
            double err = fabs(sm[i * N + j] - want) / want;
            double err_log = fabs(lsm[i * N + j] - want_log) / fmax(1, fabs(want_log));
            worst = err > worst ? err : worst;
            worst_log = err_log > worst_log ? err_log : worst_log;
        }
    }
    CHECKF(worst <= tol && worst_log <= tol, "%s: relative error %g (log %g), allowed %g",
           tl_dtype_name(dtype), worst, worst_log, tol);
out:
    FX_RELEASE(r, s, l, r64, s64, l64);
}

static void test_errors(void)
{
    size_t shape[] = {2, 3};
    tl_tensor *xi = tl_zeros(shape, 2, TL_I64, TL_CPU), *x = tl_zeros(shape, 2, TL_F32, TL_CPU);
    tl_tensor *bad = tl_softmax(xi, 0);
    CHECK(!bad && tl_last_status() == TL_ERR_DTYPE);
    CHECKF(strstr(tl_last_error(), "softmax") && strstr(tl_last_error(), "i64[2, 3]"), "%s",
           tl_last_error());
    bad = tl_log_softmax(x, 2);
    CHECK(!bad && tl_last_status() == TL_ERR_RANGE);
    CHECKF(strstr(tl_last_error(), "log_softmax") && strstr(tl_last_error(), "f32[2, 3]"), "%s",
           tl_last_error());
    CHECK(!tl_softmax(NULL, 0) && tl_last_status() == TL_ERR_ARG);
    FX_RELEASE(xi, x);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "softmax", run_case));
    for (int columns = 0; columns < 2; columns++) {
        test_stability(TL_F32, columns);
        test_stability(TL_F64, columns);
    }
    test_long_rows(TL_F32);
    test_long_rows(TL_F64);
    test_broadcast();
    test_errors();
    return check_summary();
}
