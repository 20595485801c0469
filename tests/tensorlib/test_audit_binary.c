/*
 * test_audit_binary.c - two- and three-input elementwise ops against numpy
 * (fixtures/audit_binary.txt, from gen_audit.py), on every float dtype and layout variant
 * (the second operand in the next variant): arithmetic and comparisons on ordinary values and
 * on every pair of NaN, inf, -inf, -0, 0 and small numbers, candle's maximum/minimum with
 * NaN, numpy broadcasting with size-1, missing, 0-d and 0-size dims, a float scalar on the
 * right, integer arithmetic wrapping and dividing toward zero on every integer dtype, a
 * comparison of an integer tensor with a fractional scalar, where_cond with every integer
 * condition dtype, and pow.
 */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    tl_binary_op op;
    const char *name;
} binaries[] = {{TL_ADD, "add"}, {TL_SUB, "sub"}, {TL_MUL, "mul"},
                {TL_DIV, "div"}, {TL_MAXIMUM, "maximum"}, {TL_MINIMUM, "minimum"}};

static const struct {
    tl_cmp_op op;
    const char *name;
} cmps[] = {{TL_EQ, "eq"}, {TL_NE, "ne"}, {TL_LT, "lt"}, {TL_LE, "le"}, {TL_GT, "gt"},
            {TL_GE, "ge"}};

/* Every binary op and every comparison the case has a reference for; exact when rtol is 0. */
static void pairs(const fx_case *c, tl_dtype dt, fx_variant v, bool broadcast, double rtol)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    for (size_t i = 0; i < COUNT(binaries); i++)
        if (fx_get(c, binaries[i].name))
            EXPECT(c, binaries[i].name,
                   broadcast ? tl_broadcast_binary(binaries[i].op, a, b)
                             : tl_binary(binaries[i].op, a, b),
                   dt, rtol, rtol ? FLT_MIN : 0, v);
    for (size_t i = 0; i < COUNT(cmps); i++)
        if (fx_get(c, cmps[i].name))
            EXPECT(c, cmps[i].name,
                   broadcast ? tl_broadcast_cmp(cmps[i].op, a, b) : tl_cmp(cmps[i].op, a, b),
                   TL_U8, 0, 0, v);
    tl_release(a);
    tl_release(b);
}

static void run_binary(const fx_case *c, tl_dtype dt, fx_variant v)
{
    pairs(c, dt, v, false, fx_rtol(dt));
}

static void run_special(const fx_case *c, tl_dtype dt, fx_variant v)
{
    pairs(c, dt, v, false, 0);
}

static void run_bcast(const fx_case *c, tl_dtype dt, fx_variant v)
{
    pairs(c, dt, v, true, fx_rtol(dt));
}

/* Integer cases: exact. */
static void run_int(const fx_case *c, tl_dtype dt, fx_variant v)
{
    pairs(c, dt, v, false, 0);
}

static void run_scalar(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    double s = fx_p(c, 0);
    for (size_t i = 0; i < COUNT(binaries); i++)
        if (fx_get(c, binaries[i].name))
            EXPECT(c, binaries[i].name, tl_binary_scalar(binaries[i].op, x, s), dt, fx_rtol(dt),
                   fx_rtol(dt) ? FLT_MIN : 0, v);
    for (size_t i = 0; i < COUNT(cmps); i++)
        if (fx_get(c, cmps[i].name))
            EXPECT(c, cmps[i].name, tl_cmp_scalar(cmps[i].op, x, s), TL_U8, 0, 0, v);
    tl_release(x);
}

/* An integer tensor over each integral scalar of p (reference q0, q1, ...): exact. */
static void run_int_div_scalar(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    char name[24];
    for (size_t j = 0; j < fx_get(c, "p")->count; j++) {
        snprintf(name, sizeof name, "q%zu", j);
        EXPECT(c, name, tl_binary_scalar(TL_DIV, x, fx_p(c, j)), dt, 0, 0, v);
    }
    tl_release(x);
}

/* The condition in every integer dtype. */
static void run_where(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *t = fx_make(fx_get(c, "t"), dt, (v + 1) % FX_VARIANT_COUNT);
    tl_tensor *f = fx_make(fx_get(c, "f"), dt, (v + 2) % FX_VARIANT_COUNT);
    for (size_t i = 0; i < COUNT(fx_int_dtypes); i++) {
        tl_tensor *cond = fx_make(fx_get(c, "cond"), fx_int_dtypes[i], v);
        EXPECT(c, "out", tl_where_cond(cond, t, f), dt, 0, 0, v);
        tl_release(cond);
    }
    tl_release(t);
    tl_release(f);
}

/* exp(b * log(a)) rounds three times in the dtype, as candle's does. */
static void run_pow(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    EXPECT(c, "out", tl_pow(a, b), dt, 4 * fx_rtol(dt), FLT_MIN, v);
    tl_release(a);
    tl_release(b);
}

static const fx_runner runners[] = {
    {"pairs_special", run_special, FX_FLOATS},
    {"binary", run_binary, FX_FLOATS},
    {"bcast", run_bcast, FX_FLOATS},
    {"scalar", run_scalar, FX_FLOATS},
    {"int_", run_int, FX_OWN},
    {"intcmp_scalar_", run_scalar, FX_OWN},
    {"intdiv_scalar_", run_int_div_scalar, FX_OWN},
    {"where", run_where, FX_FLOATS},
    {"pow", run_pow, FX_FLOATS},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_binary", runners, COUNT(runners)));
    return check_summary();
}
