/*
 * test_null_args.c - misuse is an error, never a crash: every entry point given a NULL
 * tensor (or a NULL buffer, shape, list or path), in each of its pointer arguments, fails
 * with TL_ERR_ARG and a message naming the op; the queries and releases take NULL.
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

/* The entry points test_tensor_returning leaves out: each pointer argument NULL in turn. */
static void test_every_tensor_argument(const tl_tensor *x, const tl_tensor *m, const tl_tensor *ids)
{
    const tl_tensor *pair[2] = {x, NULL};
    size_t dims[1] = {0};
    EXPECT_FAIL(tl_zeros(NULL, 1, TL_F32, TL_CPU), TL_ERR_ARG, "zeros");
    EXPECT_FAIL(tl_full(1, NULL, 2, TL_F32, TL_CPU), TL_ERR_ARG, "full");
    EXPECT_FAIL(tl_rand(0, 1, NULL, 1, TL_F32, TL_CPU, 1), TL_ERR_ARG, "rand");
    EXPECT_FAIL(tl_randn(0, 1, NULL, 1, TL_F32, TL_CPU, 1), TL_ERR_ARG, "randn");
    EXPECT_FAIL(tl_clone(NULL), TL_ERR_ARG, "clone");
    EXPECT_FAIL(tl_t(NULL), TL_ERR_ARG, "t");
    EXPECT_FAIL(tl_broadcast_left(NULL, SHAPE(2)), TL_ERR_ARG, "broadcast_left");
    EXPECT_FAIL(tl_broadcast_binary(TL_ADD, x, NULL), TL_ERR_ARG, "broadcast_add");
    EXPECT_FAIL(tl_broadcast_binary(TL_SUB, NULL, x), TL_ERR_ARG, "broadcast_sub");
    EXPECT_FAIL(tl_binary_scalar(TL_MUL, NULL, 2), TL_ERR_ARG, "mul");
    EXPECT_FAIL(tl_cmp_scalar(TL_EQ, NULL, 2), TL_ERR_ARG, "eq");
    EXPECT_FAIL(tl_broadcast_cmp(TL_GT, x, NULL), TL_ERR_ARG, "gt");
    EXPECT_FAIL(tl_where_cond(x, x, NULL), TL_ERR_ARG, "where_cond");
    EXPECT_FAIL(tl_reduce(TL_SUM, x, NULL, 1, false), TL_ERR_ARG, "sum");
    EXPECT_FAIL(tl_reduce(TL_ARGMAX, NULL, dims, 1, false), TL_ERR_ARG, "argmax");
    EXPECT_FAIL(tl_softmax(NULL, 0), TL_ERR_ARG, "softmax");
    EXPECT_FAIL(tl_log_softmax(NULL, 0), TL_ERR_ARG, "log_softmax");
    EXPECT_FAIL(tl_var(NULL, 0, false), TL_ERR_ARG, "var");
    EXPECT_FAIL(tl_log_sum_exp(NULL, NULL, 0, false), TL_ERR_ARG, "log_sum_exp");
    EXPECT_FAIL(tl_log_sum_exp(x, NULL, 1, false), TL_ERR_ARG, "log_sum_exp");
    EXPECT_FAIL(tl_rms_norm(NULL, x, 1e-5), TL_ERR_ARG, "rms_norm");
    EXPECT_FAIL(tl_rms_norm(x, NULL, 1e-5), TL_ERR_ARG, "rms_norm");
    EXPECT_FAIL(tl_layer_norm(x, x, NULL, 1e-5), TL_ERR_ARG, "layer_norm");
    EXPECT_FAIL(tl_pow(x, NULL), TL_ERR_ARG, "pow");
    EXPECT_FAIL(tl_cumsum(NULL, 0), TL_ERR_ARG, "cumsum");
    EXPECT_FAIL(tl_flip(NULL, dims, 1), TL_ERR_ARG, "flip");
    EXPECT_FAIL(tl_flip(x, NULL, 1), TL_ERR_ARG, "flip");
    EXPECT_FAIL(tl_repeat(NULL, SHAPE(2)), TL_ERR_ARG, "repeat");
    EXPECT_FAIL(tl_repeat(x, NULL, 1), TL_ERR_SHAPE, "repeat");
    EXPECT_FAIL(tl_pad_with_zeros(NULL, 0, 1, 1), TL_ERR_ARG, "pad_with_zeros");
    EXPECT_FAIL(tl_pad_with_same(NULL, 0, 1, 1), TL_ERR_ARG, "pad_with_same");
    EXPECT_FAIL(tl_upsample_nearest1d(NULL, 4), TL_ERR_ARG, "upsample_nearest1d");
    EXPECT_FAIL(tl_upsample_nearest2d(NULL, 4, 4), TL_ERR_ARG, "upsample_nearest2d");
    EXPECT_FAIL(tl_scatter(x, ids, NULL, 0), TL_ERR_ARG, "scatter");
    EXPECT_FAIL(tl_scatter(x, NULL, x, 0), TL_ERR_ARG, "scatter");
    EXPECT_FAIL(tl_slice_scatter(x, NULL, 0, 0), TL_ERR_ARG, "slice_scatter");
    EXPECT_FAIL(tl_arg_sort_last_dim(NULL, true), TL_ERR_ARG, "arg_sort_last_dim");
    EXPECT_FAIL(tl_sort_last_dim(NULL, false, NULL), TL_ERR_ARG, "sort_last_dim");
    EXPECT_FAIL(tl_matmul(m, NULL), TL_ERR_ARG, "matmul");
    EXPECT_FAIL(tl_broadcast_matmul(NULL, m), TL_ERR_ARG, "broadcast_matmul");
    EXPECT_FAIL(tl_mv(m, NULL), TL_ERR_ARG, "mv");
    EXPECT_FAIL(tl_dot(NULL, x), TL_ERR_ARG, "dot");
    EXPECT_FAIL(tl_conv1d(NULL, m, 0, 1, 1, 1), TL_ERR_ARG, "conv1d");
    EXPECT_FAIL(tl_conv2d(m, NULL, 0, 1, 1, 1), TL_ERR_ARG, "conv2d");
    EXPECT_FAIL(tl_conv_transpose1d(m, NULL, 0, 0, 1, 1, 1), TL_ERR_ARG, "conv_transpose1d");
    EXPECT_FAIL(tl_conv_transpose2d(NULL, m, 0, 0, 1, 1), TL_ERR_ARG, "conv_transpose2d");
    EXPECT_FAIL(tl_max_pool2d(NULL, 1, 1, 1, 1), TL_ERR_ARG, "max_pool2d");
    EXPECT_FAIL(tl_avg_pool2d(NULL, 1, 1, 1, 1), TL_ERR_ARG, "avg_pool2d");
    EXPECT_FAIL(tl_index_select(x, NULL, 0), TL_ERR_ARG, "index_select");
    EXPECT_FAIL(tl_index_select(NULL, ids, 0), TL_ERR_ARG, "index_select");
    EXPECT_FAIL(tl_gather(x, NULL, 0), TL_ERR_ARG, "gather");
    EXPECT_FAIL(tl_scatter_add(x, ids, NULL, 0), TL_ERR_ARG, "scatter_add");
    EXPECT_FAIL(tl_index_add(NULL, ids, x, 0), TL_ERR_ARG, "index_add");
    EXPECT_FAIL(tl_cat(NULL, 2, 0), TL_ERR_ARG, "cat");
    EXPECT_FAIL(tl_cat(pair, 2, 0), TL_ERR_ARG, "cat");
    EXPECT_FAIL(tl_stack(NULL, 1, 0), TL_ERR_ARG, "stack");
    EXPECT_FAIL(tl_stack(pair, 2, 0), TL_ERR_ARG, "stack");
    EXPECT_FAIL(tl_load_npy(NULL, TL_CPU), TL_ERR_ARG, "load_npy");
    EXPECT_STATUS(tl_chunk(x, 2, 0, (tl_tensor *[2]){NULL, NULL}, NULL), TL_ERR_ARG, "chunk");
}

static void test_every_status_argument(tl_tensor *x, const tl_tensor *ids)
{
    static const tl_inplace_op op = {"my-inplace", nop_inplace, NULL, NULL};
    tl_named list[1] = {{"a", NULL}}, *out = NULL;
    size_t count = 0;
    EXPECT_STATUS(tl_scatter_set(NULL, ids, x, 0), TL_ERR_ARG, "scatter_set");
    EXPECT_STATUS(tl_scatter_set(x, NULL, x, 0), TL_ERR_ARG, "scatter_set");
    EXPECT_STATUS(tl_scatter_add_set(x, ids, NULL, 0), TL_ERR_ARG, "scatter_add_set");
    EXPECT_STATUS(tl_var_set(NULL, x), TL_ERR_ARG, "var_set");
    EXPECT_STATUS(tl_inplace_op2_safe(x, NULL, &op), TL_ERR_ARG, "my-inplace");
    EXPECT_STATUS(tl_inplace_op1(x, NULL), TL_ERR_ARG, "op table is NULL");
    EXPECT_STATUS(tl_to_vec(x, NULL, 8), TL_ERR_ARG, "to_vec");
    EXPECT_STATUS(tl_save_npy(NULL, "/nonexistent/x.npy"), TL_ERR_ARG, "save_npy");
    EXPECT_STATUS(tl_save_npy(x, NULL), TL_ERR_ARG, "save_npy");
    EXPECT_STATUS(tl_save_npz(NULL, list, 1), TL_ERR_ARG, "save_npz");
    EXPECT_STATUS(tl_save_npz("/nonexistent/x.npz", NULL, 1), TL_ERR_ARG, "save_npz");
    EXPECT_STATUS(tl_save_npz("/nonexistent/x.npz", list, 1), TL_ERR_ARG, "save_npz");
    EXPECT_STATUS(tl_save_safetensors("/nonexistent/x.safetensors", list, 1), TL_ERR_ARG,
                  "save_safetensors");
    EXPECT_STATUS(tl_save_safetensors(NULL, list, 1), TL_ERR_ARG, "save_safetensors");
    EXPECT_STATUS(tl_load_npz(NULL, TL_CPU, &out, &count), TL_ERR_ARG, "load_npz");
    EXPECT_STATUS(tl_load_safetensors(NULL, TL_CPU, &out, &count), TL_ERR_ARG,
                  "load_safetensors");
    EXPECT_STATUS(tl_load_safetensors_buffer(NULL, 16, TL_CPU, &out, &count), TL_ERR_ARG,
                  "load_safetensors");
    EXPECT_STATUS(tl_load_safetensors_buffer("\0\0\0\0\0\0\0\0", 8, TL_CPU, NULL, &count),
                  TL_ERR_ARG, "load_safetensors");
    CHECK(out == NULL);
    /* queries and releases take NULL and answer as for an empty scalar */
    tl_named_free(NULL, 3);
    tl_release(NULL);
    CHECK(tl_retain(NULL) == NULL);
    CHECK(tl_ndim(NULL) == 0 && tl_shape(NULL) == NULL && tl_strides(NULL) == NULL);
    CHECK(tl_offset(NULL) == 0 && tl_elem_count(NULL) == 0 && !tl_is_contiguous(NULL));
    CHECK(!tl_shares_storage(NULL, NULL) && !tl_shares_storage(x, NULL));
    CHECK(tl_dtype_of(NULL) == TL_DTYPE_COUNT && tl_device_of(NULL) == TL_CPU);
    CHECK(!strcmp(tl_dtype_name(TL_DTYPE_COUNT), "invalid-dtype") &&
          tl_dtype_size((tl_dtype)-1) == 0);
    CHECK(!strcmp(tl_device_name((tl_device)9), "invalid-device") &&
          !tl_device_available((tl_device)9));
    CHECK(!strcmp(tl_unary_name(TL_UNARY_COUNT), "invalid-unary-op"));
}

int main(void)
{
    tl_tensor *x = tl_zeros(SHAPE(2), TL_F32, TL_CPU);
    tl_tensor *m = tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU);
    tl_tensor *ids = tl_zeros(SHAPE(2), TL_U32, TL_CPU);
    test_tensor_returning(x);
    test_status_returning(x);
    test_every_tensor_argument(x, m, ids);
    test_every_status_argument(x, ids);
    RELEASE(x, m, ids);
    return check_summary();
}
