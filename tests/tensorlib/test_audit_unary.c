/*
 * test_audit_unary.c - one-input ops against numpy (fixtures/audit_unary.txt, from
 * gen_audit.py), on every float dtype and layout variant: the unary table on ordinary values
 * and on NaN, inf, -inf, -0, 0 (exactly as candle computes them); the integer unary ops
 * wrapping on every integer dtype; affine, powf, clamp (a NaN stays NaN) and elu with float
 * parameters; integer affine and clamp saturating as candle's `as` does.
 */
#include <float.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

/* Below the dtype's smallest normal a result may flush (sigmoid far in the tail). */
static double tiny(tl_dtype dt)
{
    return dt == TL_F16 ? 6.2e-5 : dt == TL_F64 ? DBL_MIN : FLT_MIN;
}

/* The op named after the first '_' of the case name ("special_gelu_erf" -> TL_GELU_ERF). */
static tl_unary_op op_of(const fx_case *c)
{
    const char *name = strchr(c->name, '_') + 1;
    for (int op = 0; op < TL_UNARY_COUNT; op++)
        if (!strcmp(name, tl_unary_name((tl_unary_op)op)))
            return (tl_unary_op)op;
    return TL_UNARY_COUNT;
}

static void run_unary(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    bool exact = !strncmp(c->name, "special_", 8);
    EXPECT(c, "out", tl_unary(op_of(c), x), dt, exact ? 0 : fx_rtol(dt), exact ? 0 : tiny(dt),
           v);
    tl_release(x);
}

static void run_int_unary(const fx_case *c, tl_dtype dt, fx_variant v)
{
    static const struct {
        tl_unary_op op;
        const char *want;
    } ops[] = {{TL_ABS, "abs"},     {TL_NEG, "neg"},   {TL_SQR, "sqr"},  {TL_RELU, "relu"},
               {TL_SIGN, "sign"},   {TL_FLOOR, "same"}, {TL_CEIL, "same"}, {TL_ROUND, "same"}};
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        EXPECT(c, ops[i].want, tl_unary(ops[i].op, x), dt, 0, 0, v);
    tl_release(x);
}

/* affine, powf, clamp, elu (float and integer cases) with the parameters in p. */
static void run_param(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v), *out;
    const char *kind = strncmp(c->name, "int", 3) ? c->name : c->name + 3;
    if (!strncmp(kind, "affine", 6))
        out = tl_affine(x, fx_p(c, 0), fx_p(c, 1));
    else if (!strncmp(kind, "powf", 4))
        out = tl_powf(x, fx_p(c, 0));
    else if (!strncmp(kind, "clamp", 5))
        out = tl_clamp(x, fx_p(c, 0), fx_p(c, 1));
    else
        out = tl_elu(x, fx_p(c, 0));
    EXPECT(c, "out", out, dt, fx_rtol(dt), tiny(dt), v);
    tl_release(x);
}

static const fx_runner runners[] = {
    {"unary_", run_unary, FX_FLOATS},
    {"special_", run_unary, FX_FLOATS},
    {"intunary_", run_int_unary, FX_OWN},
    {"affine", run_param, FX_FLOATS},
    {"powf", run_param, FX_FLOATS},
    {"clamp", run_param, FX_FLOATS},
    {"elu", run_param, FX_FLOATS},
    {"intaffine_", run_param, FX_OWN},
    {"intclamp_", run_param, FX_OWN},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_unary", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
