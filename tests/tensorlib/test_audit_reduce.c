/*
 * test_audit_reduce.c - reductions and the ops built on them against numpy
 * (fixtures/audit_reduce.txt, from gen_audit.py), on every float dtype and layout variant:
 * sum/mean/max/min over every dim and set of dims with and without keepdim, argmax/argmin
 * with ties (the first index), empty dims, integer reductions at each dtype's ends,
 * softmax/log_softmax along each dim of a 4-D tensor with -inf entries and an all -inf row,
 * var (n = 1 gives NaN), log_sum_exp with keepdim and -inf, cumsum along each dim (integers
 * wrapping in their dtype), and the stable sort with NaN and -0.
 */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

/* The dims in params nd, d0, d1, ... */
static size_t dims_of(const fx_case *c, size_t *dims)
{
    size_t nd = (size_t)fx_param(c, "nd");
    char key[8];
    for (size_t i = 0; i < nd && i < TL_MAX_DIMS; i++) {
        snprintf(key, sizeof key, "d%zu", i);
        dims[i] = fx_dim(c, key);
    }
    return nd;
}

static void run_reduce(const fx_case *c, tl_dtype dt, fx_variant v)
{
    static const struct {
        tl_reduce_op op;
        const char *name;
    } ops[] = {{TL_SUM, "sum"},   {TL_MEAN, "mean"},     {TL_MAX, "max"},
               {TL_MIN, "min"},   {TL_ARGMAX, "argmax"}, {TL_ARGMIN, "argmin"}};
    size_t dims[TL_MAX_DIMS], nd = dims_of(c, dims);
    bool keep = fx_param(c, "keep") == 1;
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!fx_get(c, ops[i].name))
            continue;
        bool arg = ops[i].op == TL_ARGMAX || ops[i].op == TL_ARGMIN;
        EXPECT(c, ops[i].name, tl_reduce(ops[i].op, x, dims, nd, keep), arg ? TL_U32 : dt,
               fx_rtol(dt), fx_rtol(dt), v);
    }
    tl_release(x);
}

/* Small integers: every dtype but the unsigned ones (the values go below 0). */
static void run_ties(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t dim = (size_t)fx_param(c, "dim");
    if (dt == TL_U8 || dt == TL_U32)
        return;
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "argmax", tl_reduce(TL_ARGMAX, x, &dim, 1, false), TL_U32, 0, 0, v);
    EXPECT(c, "argmin", tl_reduce(TL_ARGMIN, x, &dim, 1, false), TL_U32, 0, 0, v);
    tl_release(x);
}

static void run_empty(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t d0 = 0, d1 = 1;
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "sum0", tl_reduce(TL_SUM, x, &d0, 1, false), dt, 0, 0, v);
    EXPECT(c, "sum1", tl_reduce(TL_SUM, x, &d1, 1, false), dt, 0, 0, v);
    EXPECT(c, "mean0", tl_reduce(TL_MEAN, x, &d0, 1, false), dt, 0, 0, v);
    EXPECT(c, "sumall", tl_reduce(TL_SUM, x, NULL, 0, false), dt, 0, 0, v);
    tl_release(x);
}

static void run_int_reduce(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v), *small = fx_make(fx_get(c, "small"), dt, v);
    char name[16];
    for (size_t dim = 0; dim < 2; dim++) {
        static const tl_reduce_op on_x[] = {TL_MAX, TL_MIN, TL_ARGMAX, TL_ARGMIN};
        static const char *const x_names[] = {"max", "min", "argmax", "argmin"};
        for (size_t i = 0; i < 4; i++) {
            snprintf(name, sizeof name, "%s%zu", x_names[i], dim);
            EXPECT(c, name, tl_reduce(on_x[i], x, &dim, 1, false), i < 2 ? dt : TL_U32, 0, 0, v);
        }
        snprintf(name, sizeof name, "sum%zu", dim);
        EXPECT(c, name, tl_reduce(TL_SUM, small, &dim, 1, false), dt, 0, 0, v);
        snprintf(name, sizeof name, "mean%zu", dim);
        EXPECT(c, name, tl_reduce(TL_MEAN, small, &dim, 1, false), dt, 0, 0, v);
    }
    tl_release(x);
    tl_release(small);
}

static void run_softmax(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "softmax", tl_softmax(x, dim), dt, fx_rtol(dt), fx_rtol(dt), v);
    EXPECT(c, "log_softmax", tl_log_softmax(x, dim), dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

static void run_var(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "out", tl_var(x, (size_t)fx_param(c, "dim"), fx_param(c, "keep") == 1), dt,
           fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

static void run_log_sum_exp(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t dims[TL_MAX_DIMS], nd = dims_of(c, dims);
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    EXPECT(c, "out", tl_log_sum_exp(x, dims, nd, fx_param(c, "keep") == 1), dt, fx_rtol(dt), 0,
           v);
    tl_release(x);
}

static void run_cumsum(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    if (fx_get(c, "out")) {
        EXPECT(c, "out", tl_cumsum(x, (size_t)fx_param(c, "dim")), dt, fx_rtol(dt), fx_rtol(dt),
               v);
    } else {
        EXPECT(c, "out0", tl_cumsum(x, 0), dt, 0, 0, v);
        EXPECT(c, "out1", tl_cumsum(x, TL_DIM(-1)), dt, 0, 0, v);
    }
    tl_release(x);
}

static void run_sort(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v), *ids = NULL;
    EXPECT(c, "asc_idx", tl_arg_sort_last_dim(x, true), TL_U32, 0, 0, v);
    EXPECT(c, "desc_idx", tl_arg_sort_last_dim(x, false), TL_U32, 0, 0, v);
    EXPECT(c, "asc", tl_sort_last_dim(x, true, NULL), dt, 0, 0, v);
    EXPECT(c, "desc", tl_sort_last_dim(x, false, &ids), dt, 0, 0, v);
    EXPECT(c, "desc_idx", ids, TL_U32, 0, 0, v);
    tl_release(x);
}

static const fx_runner runners[] = {
    {"ties", run_ties, FX_FLOATS},
    {"ties", run_ties, FX_INTS},
    {"empty", run_empty, FX_FLOATS},
    {"reduce", run_reduce, FX_FLOATS},
    {"intreduce_", run_int_reduce, FX_OWN},
    {"softmax", run_softmax, FX_FLOATS},
    {"var", run_var, FX_FLOATS},
    {"log_sum_exp", run_log_sum_exp, FX_FLOATS},
    {"cumsum", run_cumsum, FX_FLOATS},
    {"intcumsum_", run_cumsum, FX_OWN},
    {"sort", run_sort, FX_FLOATS},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_reduce", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
