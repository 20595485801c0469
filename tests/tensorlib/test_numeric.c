/*
 * test_numeric.c - the edges an independent numeric oracle tries, against numpy
 * (fixtures/numeric.txt, from gen.py's gen_numeric), in every layout variant: gelu/gelu_erf in
 * the negative tail to the dtype's relative accuracy, NaN and inf in max/min/argmax/argmin,
 * integer overflow in u8/i16/i32 (arithmetic, sums, cumsum, matmul), i64 -> narrower
 * conversions, integer tensors with float scalars, f64 -> f16/bf16 rounding, softmax on large
 * values and -inf, a sum of ten million f32 terms, var of values far from 0, elu just below 0,
 * cumsum with NaN/inf and over 10^5 elements (numpy's sequential sum in the dtype). Where
 * candle and numpy differ (NaN in max/argmax, scalars on integers, sums keeping the dtype)
 * the fixture follows candle and gen.py says why.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static bool all_dtypes(tl_dtype dt)
{
    (void)dt;
    return true;
}

static bool wide_floats(tl_dtype dt)
{
    return dt == TL_F32 || dt == TL_F64;
}

/* Checks got (released) against the case's tensor `name`. */
#define expect(c, name, got, dt, rtol, atol, v) CHECK(fx_check(c, name, got, dt, rtol, atol, v))

/* Relative accuracy everywhere, however small the value (no absolute slack). */
static void run_gelu(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    tl_unary_op op = strstr(c->name, "erf") ? TL_GELU_ERF : TL_GELU;
    expect(c, "out", x ? tl_unary(op, x) : NULL, dt, fx_rtol(dt), 0, v);
    tl_release(x);
}

static void run_nan_reduce(const fx_case *c, tl_dtype dt, fx_variant v)
{
    static const struct {
        const char *name;
        tl_reduce_op op;
    } ops[] = {{"max", TL_MAX}, {"min", TL_MIN}, {"argmax", TL_ARGMAX}, {"argmin", TL_ARGMIN}};
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    for (size_t i = 0; x && i < sizeof ops / sizeof ops[0]; i++) {
        bool arg = ops[i].op == TL_ARGMAX || ops[i].op == TL_ARGMIN;
        expect(c, ops[i].name, tl_reduce(ops[i].op, x, &dim, 1, false), arg ? TL_U32 : dt, 0, 0,
               v);
    }
    tl_release(x);
}

static void run_wrap(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *a = fx_make(fx_get(c, "a"), dt, v);
    tl_tensor *b = fx_make(fx_get(c, "b"), dt, (v + 1) % FX_VARIANT_COUNT);
    tl_tensor *bt = b ? tl_t(b) : NULL;
    size_t d0 = 0, d1 = 1;
    expect(c, "add", tl_add(a, b), dt, 0, 0, v);
    expect(c, "sub", tl_sub(a, b), dt, 0, 0, v);
    expect(c, "mul", tl_mul(a, b), dt, 0, 0, v);
    expect(c, "neg", tl_unary(TL_NEG, a), dt, 0, 0, v);
    expect(c, "sqr", tl_unary(TL_SQR, a), dt, 0, 0, v);
    expect(c, "sum0", tl_reduce(TL_SUM, a, &d0, 1, false), dt, 0, 0, v);
    expect(c, "sum1", tl_reduce(TL_SUM, a, &d1, 1, false), dt, 0, 0, v);
    expect(c, "cumsum1", tl_cumsum(a, 1), dt, 0, 0, v);
    expect(c, "matmul", tl_matmul(a, bt), dt, 0, 0, v);
    FX_RELEASE(a, b, bt);
}

static void run_convert(const fx_case *c, fx_variant v)
{
    static const tl_dtype to[] = {TL_U8, TL_I16, TL_I32, TL_U32};
    tl_tensor *x = fx_make(fx_get(c, "x"), TL_I64, v);
    for (size_t i = 0; x && i < sizeof to / sizeof to[0]; i++)
        expect(c, tl_dtype_name(to[i]), tl_to_dtype(x, to[i]), to[i], 0, 0, v);
    tl_release(x);
}

static void run_int_scalar(const fx_case *c, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), TL_U8, v);
    expect(c, "mul_half", tl_binary_scalar(TL_MUL, x, 0.5), TL_U8, 0, 0, v);
    expect(c, "add_m1_5", tl_binary_scalar(TL_ADD, x, -1.5), TL_U8, 0, 0, v);
    expect(c, "div_2_5", tl_binary_scalar(TL_DIV, x, 2.5), TL_U8, 0, 0, v);
    expect(c, "mul_3", tl_binary_scalar(TL_MUL, x, 3), TL_U8, 0, 0, v);
    tl_release(x);
}

/* Exactly numpy's (f16) or the round-to-nearest-even (bf16) value. */
static void run_round(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), TL_F64, v);
    expect(c, "out", x ? tl_to_dtype(x, dt) : NULL, dt, 0, 0, v);
    tl_release(x);
}

static void run_softmax(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t dim = (size_t)fx_param(c, "dim");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    expect(c, "softmax", x ? tl_softmax(x, dim) : NULL, dt, fx_rtol(dt), fx_rtol(dt), v);
    expect(c, "log_softmax", x ? tl_log_softmax(x, dim) : NULL, dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

static void run_var(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    expect(c, "out", x ? tl_var(x, (size_t)fx_param(c, "dim"), false) : NULL, dt, fx_rtol(dt), 0,
           v);
    tl_release(x);
}

static void run_elu(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    expect(c, "out", x ? tl_elu(x, (double)fx_param(c, "alpha")) : NULL, dt, fx_rtol(dt), 0, v);
    tl_release(x);
}

static void run_cumsum_nonfinite(const fx_case *c, tl_dtype dt, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    expect(c, "out0", x ? tl_cumsum(x, 0) : NULL, dt, fx_rtol(dt), fx_rtol(dt), v);
    expect(c, "out1", x ? tl_cumsum(x, 1) : NULL, dt, fx_rtol(dt), fx_rtol(dt), v);
    tl_release(x);
}

/* The last of n running sums of one value (a broadcast view): numpy's cumsum in the dtype to
 * the bit, one term at a time (a tree scan's 10000.0001 in f32 is more accurate and wrong). */
static void run_cumsum_long(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t n = (size_t)fx_param(c, "n");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    tl_tensor *many = x ? tl_broadcast_as(x, &n, 1) : NULL;
    tl_tensor *sums = many ? tl_cumsum(many, 0) : NULL;
    expect(c, dt == TL_F32 ? "last_f32" : "last_f64",
           sums ? tl_narrow(sums, 0, n - 1, 1) : NULL, dt, 0, 0, v);
    FX_RELEASE(x, many, sums);
}

/* n copies of one value as a broadcast view (no n-element buffer), summed. */
static void run_long_sum(const fx_case *c, tl_dtype dt, fx_variant v)
{
    size_t n = (size_t)fx_param(c, "n");
    tl_tensor *x = fx_make(fx_get(c, "x"), dt, v);
    tl_tensor *many = x ? tl_broadcast_as(x, &n, 1) : NULL;
    expect(c, "out", many ? tl_reduce(TL_SUM, many, NULL, 0, false) : NULL, dt, 1e-6, 0, v);
    FX_RELEASE(x, many);
}

static const struct {
    const char *prefix;
    void (*run)(const fx_case *, tl_dtype, fx_variant);
    bool (*dtype_ok)(tl_dtype);
} float_cases[] = {
    {"gelu", run_gelu, wide_floats},
    {"nan_reduce", run_nan_reduce, all_dtypes},
    {"softmax_big", run_softmax, wide_floats},
    {"long_sum", run_long_sum, wide_floats},
    {"var_offset", run_var, wide_floats},
    {"elu_small", run_elu, wide_floats},
    {"cumsum_nonfinite", run_cumsum_nonfinite, all_dtypes},
    {"cumsum_long", run_cumsum_long, wide_floats},
};

static void run_case(const fx_case *c, tl_dtype dt, fx_variant v)
{
    for (size_t i = 0; i < sizeof float_cases / sizeof float_cases[0]; i++)
        if (!strncmp(c->name, float_cases[i].prefix, strlen(float_cases[i].prefix)) &&
            float_cases[i].dtype_ok(dt))
            float_cases[i].run(c, dt, v);
    /* the cases of one dtype run once per variant */
    if (dt != fx_float_dtypes[0])
        return;
    if (!strncmp(c->name, "wrap_", 5))
        run_wrap(c, fx_case_dtype(c), v);
    else if (!strcmp(c->name, "convert_i64"))
        run_convert(c, v);
    else if (!strcmp(c->name, "int_scalar_u8"))
        run_int_scalar(c, v);
    else if (!strncmp(c->name, "to_", 3))
        run_round(c, fx_case_dtype(c), v);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "numeric", run_case));
    return check_summary();
}
