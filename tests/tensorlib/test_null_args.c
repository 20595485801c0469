/*
 * test_null_args.c - misuse is an error, never a crash: every entry point given a NULL
 * tensor (or a NULL buffer) fails with TL_ERR_ARG and a message naming the op.
 */
#include "tl_test.h"

static tl_status nop_inplace(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx, (void)dst, (void)args, (void)nargs;
    return TL_OK;
}

static tl_tensor *nop_custom(void *ctx, const tl_view *args, size_t nargs)
{
    (void)ctx, (void)args, (void)nargs;
    return tl_zeros(SCALAR, TL_F32, TL_CPU);
}

static void test_tensor_returning(const tl_tensor *x)
{
    static const tl_custom_op custom = {"my-op", nop_custom, NULL, NULL};
    EXPECT_FAIL(tl_narrow(NULL, 0, 0, 1), TL_ERR_ARG, "narrow");
    EXPECT_FAIL(tl_squeeze(NULL, 0), TL_ERR_ARG, "squeeze");
    EXPECT_FAIL(tl_unsqueeze(NULL, 0), TL_ERR_ARG, "unsqueeze");
    EXPECT_FAIL(tl_reshape(NULL, SHAPE(1)), TL_ERR_ARG, "reshape");
    EXPECT_FAIL(tl_reshape(x, NULL, 1), TL_ERR_SHAPE, "reshape");
    EXPECT_FAIL(tl_transpose(NULL, 0, 1), TL_ERR_ARG, "transpose");
    EXPECT_FAIL(tl_permute(NULL, (const size_t[]){0}, 1), TL_ERR_ARG, "permute");
    EXPECT_FAIL(tl_permute(x, NULL, 1), TL_ERR_SHAPE, "permute");
    EXPECT_FAIL(tl_broadcast_as(NULL, SHAPE(2)), TL_ERR_ARG, "broadcast_as");
    EXPECT_FAIL(tl_broadcast_as(x, NULL, 1), TL_ERR_ARG, "broadcast_as");
    EXPECT_FAIL(tl_detach(NULL), TL_ERR_ARG, "detach");
    EXPECT_FAIL(tl_flatten(NULL, 0, 0), TL_ERR_ARG, "flatten");
    EXPECT_FAIL(tl_flatten_all(NULL), TL_ERR_ARG, "flatten_all");
    EXPECT_FAIL(tl_get(NULL, 0), TL_ERR_ARG, "get");
    EXPECT_FAIL(tl_contiguous(NULL), TL_ERR_ARG, "contiguous");
    EXPECT_FAIL(tl_copy(NULL), TL_ERR_ARG, "copy");
    EXPECT_FAIL(tl_to_dtype(NULL, TL_F32), TL_ERR_ARG, "to_dtype");
    EXPECT_FAIL(tl_to_device(NULL, TL_CPU), TL_ERR_ARG, "to_device");
    EXPECT_FAIL(tl_unary(TL_SQRT, NULL), TL_ERR_ARG, "sqrt");
    EXPECT_FAIL(tl_affine(NULL, 1, 0), TL_ERR_ARG, "affine");
    EXPECT_FAIL(tl_powf(NULL, 2), TL_ERR_ARG, "powf");
    EXPECT_FAIL(tl_clamp(NULL, 0, 1), TL_ERR_ARG, "clamp");
    EXPECT_FAIL(tl_elu(NULL, 1), TL_ERR_ARG, "elu");
    EXPECT_FAIL(tl_div(x, NULL), TL_ERR_ARG, "div");
    EXPECT_FAIL(tl_binary(TL_MAXIMUM, NULL, x), TL_ERR_ARG, "maximum");
    EXPECT_FAIL(tl_cmp(TL_LE, x, NULL), TL_ERR_ARG, "le");
    EXPECT_FAIL(tl_where_cond(NULL, x, x), TL_ERR_ARG, "where_cond");
    EXPECT_FAIL(tl_where_cond(x, NULL, x), TL_ERR_ARG, "where_cond");
    EXPECT_FAIL(tl_reduce(TL_MIN, NULL, NULL, 0, true), TL_ERR_ARG, "min");
    EXPECT_FAIL(tl_cumprod(NULL, 0), TL_ERR_ARG, "cumprod");
    EXPECT_FAIL(tl_roll(NULL, 1, 0), TL_ERR_ARG, "roll");
    EXPECT_FAIL(tl_norm(NULL), TL_ERR_ARG, "norm");
    EXPECT_FAIL(tl_zeros_like(NULL), TL_ERR_ARG, "zeros_like");
    EXPECT_FAIL(tl_ones_like(NULL), TL_ERR_ARG, "ones_like");
    EXPECT_FAIL(tl_full_like(NULL, 2), TL_ERR_ARG, "full_like");
    EXPECT_FAIL(tl_custom_op1(NULL, &custom), TL_ERR_ARG, "my-op");
    EXPECT_FAIL(tl_custom_op3(x, x, NULL, &custom), TL_ERR_ARG, "my-op");
    EXPECT_FAIL(tl_custom_op2(x, x, NULL), TL_ERR_ARG, "op table is NULL");
}

static void test_status_returning(tl_tensor *x)
{
    static const tl_inplace_op op = {"my-inplace", nop_inplace, NULL, NULL};
    tl_tensor *out[2];
    size_t count;
    char buf[8];
    EXPECT_STATUS(tl_chunk(NULL, 2, 0, out, &count), TL_ERR_ARG, "chunk");
    EXPECT_STATUS(tl_chunk(x, 2, 0, NULL, &count), TL_ERR_ARG, "chunk");
    EXPECT_STATUS(tl_const_set(NULL, 0), TL_ERR_ARG, "const_set");
    EXPECT_STATUS(tl_slice_set(NULL, x, 0, 0), TL_ERR_ARG, "slice_set");
    EXPECT_STATUS(tl_slice_set(x, NULL, 0, 0), TL_ERR_ARG, "slice_set");
    EXPECT_STATUS(tl_var_set(x, NULL), TL_ERR_ARG, "var_set");
    EXPECT_STATUS(tl_inplace_op1(NULL, &op), TL_ERR_ARG, "my-inplace");
    EXPECT_STATUS(tl_inplace_op2(x, NULL, &op), TL_ERR_ARG, "my-inplace");
    EXPECT_STATUS(tl_inplace_op3(x, x, NULL, &op), TL_ERR_ARG, "my-inplace");
    EXPECT_STATUS(tl_inplace_op3_safe(NULL, x, x, &op), TL_ERR_ARG, "my-inplace");
    EXPECT_STATUS(tl_inplace_op2(x, x, NULL), TL_ERR_ARG, "op table is NULL");
    EXPECT_STATUS(tl_to_vec(NULL, buf, sizeof buf), TL_ERR_ARG, "to_vec");
    CHECK(tl_format(NULL, buf, sizeof buf) == -1 && strstr(tl_last_error(), "format"));
}

int main(void)
{
    tl_tensor *x = tl_zeros(SHAPE(2), TL_F32, TL_CPU);
    test_tensor_returning(x);
    test_status_returning(x);
    tl_release(x);
    return check_summary();
}
