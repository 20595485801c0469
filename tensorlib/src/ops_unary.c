/*
 * ops_unary.c - one-input elementwise ops: the unary table, affine, powf, clamp, elu.
 * Each reads its input under the read lock and returns new storage of the same dtype.
 */
#include <math.h>

#include "backend.h"

static const char *const unary_names[] = {
    [TL_EXP] = "exp", [TL_LOG] = "log", [TL_SIN] = "sin", [TL_COS] = "cos",
    [TL_TANH] = "tanh", [TL_ABS] = "abs", [TL_NEG] = "neg", [TL_RECIP] = "recip",
    [TL_SQR] = "sqr", [TL_SQRT] = "sqrt", [TL_RELU] = "relu", [TL_GELU] = "gelu",
    [TL_GELU_ERF] = "gelu_erf", [TL_SILU] = "silu", [TL_FLOOR] = "floor", [TL_CEIL] = "ceil",
    [TL_ROUND] = "round", [TL_SIGN] = "sign", [TL_SIGMOID] = "sigmoid", [TL_ERF] = "erf",
};
_Static_assert(sizeof unary_names / sizeof unary_names[0] == TL_UNARY_COUNT, "unary name table");

const char *tl_unary_name(tl_unary_op op)
{
    return (unsigned)op < TL_UNARY_COUNT ? unary_names[op] : "invalid-unary-op";
}

/* Ops that make sense on integers too (computed exactly through doubles). */
static bool unary_takes_ints(tl_unary_op op)
{
    switch (op) {
    case TL_ABS: case TL_NEG: case TL_SQR: case TL_RELU: case TL_SIGN:
    case TL_FLOOR: case TL_CEIL: case TL_ROUND:
        return true;
    default:
        return false;
    }
}

static tl_status unary_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                              const void *ctx)
{
    return b->unary(*(const tl_unary_op *)ctx, dst, &in[0]);
}

tl_tensor *tl_unary(tl_unary_op op, const tl_tensor *t)
{
    if ((unsigned)op >= TL_UNARY_COUNT)
        return tl_fail(TL_ERR_ARG, "unary: invalid op %d", (int)op), NULL;
    const char *name = unary_names[op];
    if (tl_check_tensor(name, t) != TL_OK ||
        (!unary_takes_ints(op) && tl_check_float(name, t) != TL_OK) ||
        TL_NEED(name, t, unary) != TL_OK)
        return NULL;
    return tl_run_elementwise(name, &t, NULL, 1, t->layout.shape, t->layout.ndim, t->dtype,
                              unary_kernel, &op);
}

typedef struct scalar_args {
    tl_scalar_op op;
    double p0, p1;
} scalar_args;

static tl_status scalar_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                               const void *ctx)
{
    const scalar_args *a = ctx;
    return b->scalar(a->op, dst, &in[0], a->p0, a->p1);
}

static tl_tensor *scalar_op(const char *name, tl_scalar_op op, const tl_tensor *t, double p0,
                            double p1, bool float_only)
{
    if (tl_check_tensor(name, t) != TL_OK || (float_only && tl_check_float(name, t) != TL_OK) ||
        TL_NEED(name, t, scalar) != TL_OK)
        return NULL;
    scalar_args a = {op, p0, p1};
    return tl_run_elementwise(name, &t, NULL, 1, t->layout.shape, t->layout.ndim, t->dtype,
                              scalar_kernel, &a);
}

tl_tensor *tl_affine(const tl_tensor *t, double mul, double add)
{
    return scalar_op("affine", TL_SCALAR_AFFINE, t, mul, add, false);
}

tl_tensor *tl_powf(const tl_tensor *t, double exponent)
{
    return scalar_op("powf", TL_SCALAR_POWF, t, exponent, 0.0, true);
}

/* min(max(t, lo), hi): a lo above hi gives hi everywhere, as numpy's clip, candle's and
 * PyTorch's clamp do; a NaN bound has no such answer the three agree on. */
/* candle's clamp is maximum(lo) then minimum(hi), each bound converted to t's dtype first: on
 * a float tensor a NaN bound changes nothing (x < NaN is false in its maximum's test), on an
 * integer tensor it is 0 (Rust's NaN as an integer). A float bound is rounded here because
 * f16 and bf16 are clamped in double: a bound too small for the dtype is a zero there, of its
 * own sign, which candle's maximum does not put in place of an x of the other zero. */
tl_tensor *tl_clamp(const tl_tensor *t, double lo, double hi)
{
    bool f = t && tl_dtype_is_float(t->dtype); /* a NULL t fails in scalar_op */
    if (isnan(lo))
        lo = f ? -INFINITY : 0.0;
    if (isnan(hi))
        hi = f ? INFINITY : 0.0;
    if (f) {
        lo = tl_round_to_dtype(t->dtype, lo);
        hi = tl_round_to_dtype(t->dtype, hi);
    }
    return scalar_op("clamp", TL_SCALAR_CLAMP, t, lo > hi ? hi : lo, hi, false);
}

tl_tensor *tl_elu(const tl_tensor *t, double alpha)
{
    return scalar_op("elu", TL_SCALAR_ELU, t, alpha, 0.0, true);
}
