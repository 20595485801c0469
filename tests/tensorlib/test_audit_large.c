/*
 * test_audit_large.c - shapes past the cpu kernels' block sizes against numpy
 * (fixtures/audit_large.txt, from gen_audit.py), on every float dtype and layout variant:
 * elementwise ops over 70 x 67 operands (chunks of 256; 64 x 64 tiles when an operand is
 * transposed), reductions of a 9 x 33 x 17 tensor over each dim and set of dims (eight-way
 * partial sums, eight-row groups, ties for argmax/argmin), softmax rows of 131 (16 lanes and
 * a tail) and columns, cumsum over 300 (nine rounds) and a stable sort of rows of 300 with
 * many ties. The inputs are a formula, not fixture data: element i (row-major) is
 * ((7919 i + 31 seed) mod 97 - 48) / 8, as gen_audit.py's formula().
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

/* The formula's tensor of shape in dtype and layout variant v. */
static tl_tensor *formula(const size_t *shape, size_t ndim, long seed, tl_dtype dt, fx_variant v)
{
    fx_tensor t = {.ndim = ndim, .count = 1};
    for (size_t d = 0; d < ndim; d++)
        t.count *= t.shape[d] = shape[d];
    t.data = malloc(t.count * sizeof *t.data);
    if (!t.data)
        return NULL;
    for (size_t i = 0; i < t.count; i++)
        t.data[i] = (double)((long)((7919 * i + 31 * (size_t)seed) % 97) - 48) / 8.0;
    tl_tensor *out = fx_make(&t, dt, v);
    free(t.data);
    return out;
}

static void run_elementwise(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t shape[2] = {(size_t)fx_param(c, "rows"), (size_t)fx_param(c, "cols")};
    tl_tensor *a = formula(shape, 2, 1, dt, v);
    tl_tensor *b = formula(shape, 2, 2, dt, (v + 1) % FX_VARIANT_COUNT);
    tl_tensor *row = b ? tl_narrow(b, 0, 3, 1) : NULL;
    EXPECT(c, "add", tl_add(a, b), dt, 0, 0, v);
    EXPECT(c, "maximum", tl_maximum(a, b), dt, 0, 0, v);
    EXPECT(c, "lt", tl_cmp(TL_LT, a, b), TL_U8, 0, 0, v);
    EXPECT(c, "bcast_sub", tl_broadcast_sub(a, row), dt, 0, 0, v);
    tl_release(a);
    tl_release(b);
    tl_release(row);
}

static void run_reduce(const fx_case *c, tl_dtype dt, fx_variant v)
{
    static const struct {
        tl_reduce_op op;
        const char *name;
    } ops[] = {{TL_SUM, "sum"}, {TL_MEAN, "mean"}, {TL_MAX, "max"},
               {TL_MIN, "min"}, {TL_ARGMAX, "argmax"}, {TL_ARGMIN, "argmin"}};
    size_t dims[3], nd = (size_t)fx_param(c, "nd");
    char key[4];
    for (size_t i = 0; i < nd && i < 3; i++) {
        snprintf(key, sizeof key, "d%zu", i);
        dims[i] = (size_t)fx_param(c, key);
    }
    tl_tensor *x = formula((const size_t[]){9, 33, 17}, 3, 3, dt, v);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!fx_get(c, ops[i].name))
            continue;
        bool arg = ops[i].op == TL_ARGMAX || ops[i].op == TL_ARGMIN;
        EXPECT(c, ops[i].name, tl_reduce(ops[i].op, x, dims, nd, false), arg ? TL_U32 : dt,
               fx_rtol(dt), fx_rtol(dt), v);
    }
    tl_release(x);
}

static void run_softmax(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t shape[2] = {(size_t)fx_param(c, "rows"), (size_t)fx_param(c, "cols")};
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = formula(shape, 2, 4, dt, v);
    EXPECT(c, "softmax", tl_softmax(x, dim), dt, fx_rtol(dt), fx_rtol(dt) * 1e-3, v);
    EXPECT(c, "log_softmax", tl_log_softmax(x, dim), dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

static void run_scan(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t shape[2] = {(size_t)fx_param(c, "rows"), (size_t)fx_param(c, "cols")};
    tl_tensor *x = formula(shape, 2, 5, dt, v);
    EXPECT(c, "cumsum0", tl_cumsum(x, 0), dt, fx_rtol(dt), fx_rtol(dt), v);
    EXPECT(c, "cumsum1", tl_cumsum(x, 1), dt, fx_rtol(dt), fx_rtol(dt), v);
    EXPECT(c, "asc_idx", tl_arg_sort_last_dim(x, true), TL_U32, 0, 0, v);
    EXPECT(c, "desc_idx", tl_arg_sort_last_dim(x, false), TL_U32, 0, 0, v);
    tl_release(x);
}

static const fx_runner runners[] = {
    {"ew_large", run_elementwise, FX_FLOATS},
    {"reduce_large", run_reduce, FX_FLOATS},
    {"softmax_large", run_softmax, FX_FLOATS},
    {"scan_large", run_scan, FX_FLOATS},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_large", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
