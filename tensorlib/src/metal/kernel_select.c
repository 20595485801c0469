/*
 * kernel_select.c - maps (op family, op, dtype, layout) to a Metal kernel name and its
 * function-constant values. The rules for which dtypes each family takes live here and only
 * here: Metal has no f64, and the transcendental, matmul and softmax kernels are
 * instantiated for the float dtypes alone.
 */
#include "kernel_select.h"

#include <stdio.h>

#include "backend.h"
#include "kernels.h"

typedef enum dtype_rule { ANY_DTYPE, FLOAT_DTYPE } dtype_rule;
typedef enum aux_rule { NO_AUX, INDEX_AUX, CAST_AUX } aux_rule;

typedef struct family_info {
    const char *prefix;   /* kernel name prefix */
    dtype_rule dtypes;
    aux_rule aux;
    uint32_t op_count;    /* ops in the family; 1 when it has a single op */
    const char *const *op_names;
} family_info;

/* Metal's name for each dtype it can hold; NULL: no Metal kernels (Metal has no double). */
static const char *const dtype_suffix[TL_DTYPE_COUNT] = {
    [TL_U8] = "u8", [TL_U32] = "u32", [TL_I64] = "i64", [TL_F16] = "f16",
    [TL_BF16] = "bf16", [TL_F32] = "f32", [TL_F64] = NULL,
};

/* tl_unary_op -> name; the kernel codes follow the same order (asserted below). */
static const char *const unary_names[] = {
    [TL_EXP] = "exp", [TL_LOG] = "log", [TL_SIN] = "sin", [TL_COS] = "cos",
    [TL_TANH] = "tanh", [TL_ABS] = "abs", [TL_NEG] = "neg", [TL_RECIP] = "recip",
    [TL_SQR] = "sqr", [TL_SQRT] = "sqrt", [TL_RELU] = "relu", [TL_GELU] = "gelu",
    [TL_GELU_ERF] = "gelu_erf", [TL_SILU] = "silu", [TL_FLOOR] = "floor",
    [TL_CEIL] = "ceil", [TL_ROUND] = "round", [TL_SIGN] = "sign", [TL_SIGMOID] = "sigmoid",
    [TL_ERF] = "erf",
};
_Static_assert(sizeof unary_names / sizeof *unary_names == TL_UNARY_COUNT, "unary names");
_Static_assert(TL_EXP == TLK_UNARY_EXP && TL_LOG == TLK_UNARY_LOG && TL_SIN == TLK_UNARY_SIN &&
                   TL_COS == TLK_UNARY_COS && TL_TANH == TLK_UNARY_TANH && TL_ABS == TLK_UNARY_ABS &&
                   TL_NEG == TLK_UNARY_NEG && TL_RECIP == TLK_UNARY_RECIP && TL_SQR == TLK_UNARY_SQR &&
                   TL_SQRT == TLK_UNARY_SQRT && TL_RELU == TLK_UNARY_RELU && TL_GELU == TLK_UNARY_GELU &&
                   TL_GELU_ERF == TLK_UNARY_GELU_ERF && TL_SILU == TLK_UNARY_SILU &&
                   TL_FLOOR == TLK_UNARY_FLOOR && TL_CEIL == TLK_UNARY_CEIL &&
                   TL_ROUND == TLK_UNARY_ROUND && TL_SIGN == TLK_UNARY_SIGN &&
                   TL_SIGMOID == TLK_UNARY_SIGMOID && TL_ERF == TLK_UNARY_ERF,
               "kernels.h unary codes follow tl_unary_op");

static const char *const scalar_names[] = {
    [TL_SCALAR_AFFINE] = "affine", [TL_SCALAR_POWF] = "powf",
    [TL_SCALAR_CLAMP] = "clamp", [TL_SCALAR_ELU] = "elu",
};
_Static_assert(sizeof scalar_names / sizeof *scalar_names == TL_SCALAR_COUNT, "scalar names");
_Static_assert(TL_SCALAR_AFFINE == TLK_SCALAR_AFFINE && TL_SCALAR_POWF == TLK_SCALAR_POWF &&
                   TL_SCALAR_CLAMP == TLK_SCALAR_CLAMP && TL_SCALAR_ELU == TLK_SCALAR_ELU,
               "kernels.h scalar codes follow tl_scalar_op (backend.h)");

static const char *const binary_names[] = {
    [TL_ADD] = "add", [TL_SUB] = "sub", [TL_MUL] = "mul", [TL_DIV] = "div",
    [TL_MAXIMUM] = "maximum", [TL_MINIMUM] = "minimum",
};
_Static_assert(sizeof binary_names / sizeof *binary_names == TL_BINARY_COUNT, "binary names");
_Static_assert(TL_ADD == TLK_BINARY_ADD && TL_SUB == TLK_BINARY_SUB && TL_MUL == TLK_BINARY_MUL &&
                   TL_DIV == TLK_BINARY_DIV && TL_MAXIMUM == TLK_BINARY_MAXIMUM &&
                   TL_MINIMUM == TLK_BINARY_MINIMUM,
               "kernels.h binary codes follow tl_binary_op");

static const char *const cmp_names[] = {
    [TL_EQ] = "eq", [TL_NE] = "ne", [TL_LT] = "lt", [TL_LE] = "le", [TL_GT] = "gt", [TL_GE] = "ge",
};
_Static_assert(sizeof cmp_names / sizeof *cmp_names == TL_CMP_COUNT, "cmp names");
_Static_assert(TL_EQ == TLK_CMP_EQ && TL_NE == TLK_CMP_NE && TL_LT == TLK_CMP_LT && TL_LE == TLK_CMP_LE &&
                   TL_GT == TLK_CMP_GT && TL_GE == TLK_CMP_GE,
               "kernels.h cmp codes follow tl_cmp_op");

static const char *const reduce_names[] = {
    [TL_SUM] = "sum", [TL_MEAN] = "mean", [TL_MAX] = "max",
    [TL_MIN] = "min", [TL_ARGMAX] = "argmax", [TL_ARGMIN] = "argmin",
};
_Static_assert(sizeof reduce_names / sizeof *reduce_names == TL_REDUCE_COUNT, "reduce names");
_Static_assert(TL_SUM == TLK_REDUCE_SUM && TL_MEAN == TLK_REDUCE_MEAN && TL_MAX == TLK_REDUCE_MAX &&
                   TL_MIN == TLK_REDUCE_MIN && TL_ARGMAX == TLK_REDUCE_ARGMAX &&
                   TL_ARGMIN == TLK_REDUCE_ARGMIN,
               "kernels.h reduce codes follow tl_reduce_op");

static const char *const softmax_names[] = {[TLK_SOFTMAX] = "softmax", [TLK_LOG_SOFTMAX] = "log_softmax"};

static const char *const fill_name[] = {"fill"}, *const copy_name[] = {"copy"},
                         *const where_name[] = {"where_cond"}, *const cast_name[] = {"to_dtype"},
                         *const matmul_name[] = {"matmul"}, *const index_select_name[] = {"index_select"},
                         *const gather_name[] = {"gather"};

#define OPS(names) (uint32_t)(sizeof names / sizeof *names), names

static const family_info families[TLM_FAMILY_COUNT] = {
    [TLM_FILL] = {"fill", ANY_DTYPE, NO_AUX, OPS(fill_name)},
    [TLM_COPY] = {"copy", ANY_DTYPE, NO_AUX, OPS(copy_name)},
    [TLM_UNARY] = {"unary", FLOAT_DTYPE, NO_AUX, OPS(unary_names)},
    [TLM_SCALAR] = {"scalar", FLOAT_DTYPE, NO_AUX, OPS(scalar_names)},
    [TLM_BINARY] = {"binary", ANY_DTYPE, NO_AUX, OPS(binary_names)},
    [TLM_CMP] = {"cmp", ANY_DTYPE, NO_AUX, OPS(cmp_names)},
    [TLM_WHERE] = {"where", ANY_DTYPE, INDEX_AUX, OPS(where_name)},
    [TLM_REDUCE] = {"reduce", ANY_DTYPE, NO_AUX, OPS(reduce_names)},
    [TLM_CAST] = {"cast", ANY_DTYPE, CAST_AUX, OPS(cast_name)},
    [TLM_MATMUL] = {"matmul", FLOAT_DTYPE, NO_AUX, OPS(matmul_name)},
    [TLM_INDEX_SELECT] = {"index_select", ANY_DTYPE, INDEX_AUX, OPS(index_select_name)},
    [TLM_GATHER] = {"gather", ANY_DTYPE, INDEX_AUX, OPS(gather_name)},
    [TLM_SOFTMAX] = {"softmax", FLOAT_DTYPE, NO_AUX, OPS(softmax_names)},
};

static bool is_float(tl_dtype d)
{
    return d == TL_F32 || d == TL_F16 || d == TL_BF16;
}

static bool dtype_allowed(const family_info *f, tl_dtype d)
{
    if ((unsigned)d >= TL_DTYPE_COUNT || !dtype_suffix[d])
        return false;
    return f->dtypes == ANY_DTYPE || is_float(d);
}

/* TLK_AUX_* code of an index/condition dtype, or -1. */
static int index_code(tl_dtype d)
{
    switch (d) {
    case TL_U8: return TLK_AUX_U8;
    case TL_U32: return TLK_AUX_U32;
    case TL_I64: return TLK_AUX_I64;
    default: return -1;
    }
}

static bool name_kernel(const family_info *f, const tlm_request *req, tlm_kernel *k)
{
    int len;
    if (f->aux == CAST_AUX)
        len = snprintf(k->name, sizeof k->name, "%s_%s_%s", f->prefix, dtype_suffix[req->dtype],
                       dtype_suffix[req->aux]);
    else
        len = snprintf(k->name, sizeof k->name, "%s_%s", f->prefix, dtype_suffix[req->dtype]);
    return len > 0 && (size_t)len < sizeof k->name;
}

bool tlm_select(const tlm_request *req, tlm_kernel *k)
{
    if ((unsigned)req->family >= TLM_FAMILY_COUNT)
        return false;
    const family_info *f = &families[req->family];
    if (req->op >= f->op_count || !dtype_allowed(f, req->dtype))
        return false;
    k->op = req->op;
    k->contiguous = req->contiguous;
    k->aux_dtype = 0;
    if (f->aux == INDEX_AUX) {
        int code = index_code(req->aux);
        if (code < 0)
            return false;
        k->aux_dtype = (uint32_t)code;
    } else if (f->aux == CAST_AUX) {
        if (req->aux == req->dtype || !dtype_allowed(f, req->aux))
            return false;
    }
    return name_kernel(f, req, k);
}

const char *tlm_op_name(tlm_family family, uint32_t op)
{
    if ((unsigned)family >= TLM_FAMILY_COUNT || op >= families[family].op_count)
        return "unknown op";
    return families[family].op_names[op];
}

/* One request per (family, dtype, cast target) that names a distinct kernel; op and aux are
 * function constants, so op 0 and the first index dtype stand for all of them. */
void tlm_for_each_kernel_name(void (*fn)(const char *name, void *ctx), void *ctx)
{
    for (int fam = 0; fam < TLM_FAMILY_COUNT; fam++) {
        for (int d = 0; d < TL_DTYPE_COUNT; d++) {
            for (int a = 0; a < TL_DTYPE_COUNT; a++) {
                tlm_request req = {(tlm_family)fam, 0, (tl_dtype)d, (tl_dtype)a, true};
                tlm_kernel k;
                if (families[fam].aux == NO_AUX && a > 0)
                    break;
                if (families[fam].aux == INDEX_AUX && (tl_dtype)a != TL_U8)
                    continue;
                if (tlm_select(&req, &k))
                    fn(k.name, ctx);
            }
        }
    }
}
