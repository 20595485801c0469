/*
 * test_metal_select.c - kernel selection: names by family and dtype, function constants by
 * op and layout, and the refusals that become "no metal implementation" errors.
 */
#include <string.h>

#include "check.h"
#include "backend.h"
#include "kernel_select.h"
#include "kernels.h"

static bool pick(tlm_family fam, uint32_t op, tl_dtype dt, tl_dtype aux, bool contig, tlm_kernel *k)
{
    tlm_request req = {fam, op, dt, aux, contig};
    return tlm_select(&req, k);
}

static void test_names_and_constants(void)
{
    tlm_kernel k;
    CHECK(pick(TLM_UNARY, TL_EXP, TL_F32, TL_F32, true, &k));
    CHECK(strcmp(k.name, "unary_f32") == 0 && k.op == TLK_UNARY_EXP && k.contiguous);
    CHECK(pick(TLM_UNARY, TL_SIGN, TL_BF16, TL_F32, false, &k));
    CHECK(strcmp(k.name, "unary_bf16") == 0 && k.op == TLK_UNARY_SIGN && !k.contiguous);
    CHECK(pick(TLM_BINARY, TL_MINIMUM, TL_I64, TL_F32, false, &k));
    CHECK(strcmp(k.name, "binary_i64") == 0 && k.op == TLK_BINARY_MINIMUM);
    CHECK(pick(TLM_CMP, TL_GE, TL_U8, TL_F32, true, &k));
    CHECK(strcmp(k.name, "cmp_u8") == 0 && k.op == TLK_CMP_GE);
    CHECK(pick(TLM_CAST, 0, TL_F16, TL_U32, true, &k));
    CHECK(strcmp(k.name, "cast_f16_u32") == 0);
    CHECK(pick(TLM_WHERE, 0, TL_F32, TL_I64, false, &k));
    CHECK(strcmp(k.name, "where_f32") == 0 && k.aux_dtype == TLK_AUX_I64);
    CHECK(pick(TLM_GATHER, 0, TL_U8, TL_U32, false, &k));
    CHECK(strcmp(k.name, "gather_u8") == 0 && k.aux_dtype == TLK_AUX_U32);
    CHECK(pick(TLM_REDUCE, TL_ARGMIN, TL_U32, TL_F32, true, &k));
    CHECK(strcmp(k.name, "reduce_u32") == 0 && k.op == TLK_REDUCE_ARGMIN);
    CHECK(pick(TLM_SOFTMAX, TLK_LOG_SOFTMAX, TL_F16, TL_F32, true, &k));
    CHECK(strcmp(k.name, "softmax_f16") == 0 && k.op == TLK_LOG_SOFTMAX);
    CHECK(pick(TLM_SCALAR, TL_SCALAR_CLAMP, TL_F32, TL_F32, true, &k));
    CHECK(strcmp(k.name, "scalar_f32") == 0 && k.op == TLK_SCALAR_CLAMP);
}

static void test_refusals(void)
{
    tlm_kernel k;
    CHECK(!pick(TLM_BINARY, TL_ADD, TL_F64, TL_F32, true, &k));       /* Metal has no double */
    CHECK(!pick(TLM_UNARY, TL_EXP, TL_U32, TL_F32, true, &k));        /* float-only family */
    CHECK(!pick(TLM_MATMUL, 0, TL_I64, TL_F32, true, &k));
    CHECK(pick(TLM_REDUCE, TL_MEAN, TL_U8, TL_F32, true, &k));        /* integer mean, as on cpu */
    CHECK(!pick(TLM_UNARY, TL_UNARY_COUNT, TL_F32, TL_F32, true, &k)); /* op out of range */
    CHECK(!pick(TLM_CAST, 0, TL_F32, TL_F32, true, &k));              /* same dtype: a copy */
    CHECK(!pick(TLM_CAST, 0, TL_F32, TL_F64, true, &k));
    CHECK(!pick(TLM_INDEX_SELECT, 0, TL_F32, TL_F16, true, &k));      /* ids must be integers */
    CHECK(!pick(TLM_FAMILY_COUNT, 0, TL_F32, TL_F32, true, &k));
}

static void test_op_names(void)
{
    CHECK(strcmp(tlm_op_name(TLM_UNARY, TL_GELU_ERF), "gelu_erf") == 0);
    CHECK(strcmp(tlm_op_name(TLM_SCALAR, TL_SCALAR_POWF), "powf") == 0);
    CHECK(strcmp(tlm_op_name(TLM_REDUCE, TL_ARGMAX), "argmax") == 0);
    CHECK(strcmp(tlm_op_name(TLM_CAST, 0), "to_dtype") == 0);
    CHECK(strcmp(tlm_op_name(TLM_UNARY, 99), "unknown op") == 0);
}

static void count_name(const char *name, void *ctx)
{
    (void)name;
    (*(int *)ctx)++;
}

/* 6 dtypes for fill, copy, binary, cmp, where, reduce, index_select, gather (8 families),
 * 3 float dtypes for unary, scalar, matmul, softmax (4), and 6 x 5 casts. */
static void test_enumeration(void)
{
    int n = 0;
    tlm_for_each_kernel_name(count_name, &n);
    CHECKF(n == 8 * 6 + 4 * 3 + 30, "got %d kernel names", n);
}

int main(void)
{
    test_names_and_constants();
    test_refusals();
    test_op_names();
    test_enumeration();
    return check_summary();
}
