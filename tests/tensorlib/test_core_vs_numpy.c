/*
 * test_core_vs_numpy.c - the core's elementwise and reduction ops against numpy
 * (fixtures/core.txt): unary exp/log/tanh/sqrt, broadcasting add/mul/div and
 * sum/mean/max/min/argmax over each dim, on every float dtype and layout variant. The core's
 * own tests check these by hand; this adds an independent reference.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static const struct {
    const char *name;
    tl_unary_op op;
} unary_cases[] = {{"unary_exp", TL_EXP}, {"unary_log", TL_LOG}, {"unary_tanh", TL_TANH},
                   {"unary_sqrt", TL_SQRT}};

static const struct {
    const char *name;
    tl_binary_op op;
} binary_cases[] = {{"binary_add_bcast", TL_ADD}, {"binary_mul_bcast", TL_MUL},
                    {"binary_div_bcast", TL_DIV}};

static const struct {
    const char *name;
    tl_reduce_op op;
} reduce_cases[] = {{"sum", TL_SUM}, {"mean", TL_MEAN}, {"max", TL_MAX}, {"min", TL_MIN},
                    {"argmax", TL_ARGMAX}};

static void check_result(tl_tensor *got, const fx_tensor *want, tl_dtype dtype, const char *label)
{
    CHECKF(fx_expect(got, want, dtype, label), "%s on %s", label, tl_dtype_name(dtype));
    tl_release(got);
}

static void run_unary(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    for (size_t i = 0; i < sizeof unary_cases / sizeof unary_cases[0]; i++)
        if (strcmp(c->name, unary_cases[i].name) == 0) {
            tl_tensor *x = fx_make(fx_get(c, "x"), dtype, v);
            tl_tensor *out = x ? tl_unary(unary_cases[i].op, x) : NULL;
            check_result(out, fx_get(c, "out"), dtype, c->name);
            tl_release(x);
        }
}

static void run_binary(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    for (size_t i = 0; i < sizeof binary_cases / sizeof binary_cases[0]; i++)
        if (strcmp(c->name, binary_cases[i].name) == 0) {
            tl_tensor *a = fx_make(fx_get(c, "a"), dtype, v);
            tl_tensor *b = fx_make(fx_get(c, "b"), dtype, (v + 1) % FX_VARIANT_COUNT);
            tl_tensor *out = a && b ? tl_broadcast_binary(binary_cases[i].op, a, b) : NULL;
            check_result(out, fx_get(c, "out"), dtype, c->name);
            tl_release(a);
            tl_release(b);
        }
}

static void run_reduce(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    if (strncmp(c->name, "reduce_", 7) != 0)
        return;
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = fx_make(fx_get(c, "x"), dtype, v);
    for (size_t i = 0; x && i < sizeof reduce_cases / sizeof reduce_cases[0]; i++) {
        char label[128];
        snprintf(label, sizeof label, "%s %s", c->name, reduce_cases[i].name);
        tl_dtype out_dtype = reduce_cases[i].op == TL_ARGMAX ? TL_U32 : dtype;
        check_result(tl_reduce(reduce_cases[i].op, x, &dim, 1, false),
                     fx_get(c, reduce_cases[i].name), out_dtype, label);
    }
    tl_release(x);
}

static void run_case(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    run_unary(c, dtype, v);
    run_binary(c, dtype, v);
    run_reduce(c, dtype, v);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "core", run_case));
    return check_summary();
}
