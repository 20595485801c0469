/*
 * test_misuse.c - bad input to every public entry point is an error value whose message
 * starts with the name of the op the caller called ("log_sum_exp: ...", not the name of a
 * step it is built from, nor of its kernel: "format: to_vec: ...", "sum: reduce: out of
 * memory ..."), never a crash, print or abort: wrong shapes, wrong dtypes, dims
 * and indexes out of range, NULL, operands that share the target's storage, and views that
 * outlive the tensor they were taken from. test_null_args checks a NULL tensor everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tl_test.h"

/* Whether the last error is status `want` with a message starting with "op: ". */
static int named(tl_status got, tl_status want, const char *op, const char *what,
                 const char *file, int line)
{
    size_t n = strlen(op);
    const char *msg = tl_last_error();
    int ok = got == want && tl_last_status() == want && !strncmp(msg, op, n) && msg[n] == ':';
    check_record(ok, what, file, line);
    if (!ok)
        printf("    got status %d \"%s\", want status %d from \"%s: ...\"\n", (int)got,
               got == TL_OK ? "(success)" : msg, (int)want, op);
    return ok;
}

static tl_status result_status(tl_tensor *t)
{
    if (!t)
        return tl_last_status();
    tl_release(t);
    return TL_OK;
}

/* A tensor-returning call fails with want, named op. */
#define FAILS(call, want, op) named(result_status(call), (want), (op), #call, __FILE__, __LINE__)
/* A tl_status-returning call fails with want, named op. */
#define FAILS_ST(call, want, op) named((call), (want), (op), #call, __FILE__, __LINE__)

static void test_creation(void)
{
    FAILS(tl_zeros(SHAPE(2), TL_DTYPE_COUNT, TL_CPU), TL_ERR_DTYPE, "zeros");
    FAILS(tl_ones(NULL, 2, TL_F32, TL_CPU), TL_ERR_ARG, "ones");
    FAILS(tl_full(1, SHAPE(2), (tl_dtype)-1, TL_CPU), TL_ERR_DTYPE, "full");
    FAILS(tl_arange(0, 1, 0, TL_F32, TL_CPU), TL_ERR_ARG, "arange");
    FAILS(tl_arange(0, NAN, 1, TL_F32, TL_CPU), TL_ERR_ARG, "arange");
    FAILS(tl_from_data(NULL, SHAPE(2), TL_F32, TL_CPU), TL_ERR_ARG, "from_data");
    FAILS(tl_tril2(3, TL_DTYPE_COUNT, TL_CPU), TL_ERR_DTYPE, "tril2");
    FAILS(tl_triu2(3, TL_DTYPE_COUNT, TL_CPU), TL_ERR_DTYPE, "triu2");
    FAILS(tl_eye(3, TL_DTYPE_COUNT, TL_CPU), TL_ERR_DTYPE, "eye");
    FAILS(tl_rand(1, 0, SHAPE(2), TL_F32, TL_CPU, 1), TL_ERR_ARG, "rand");
    FAILS(tl_rand(0, 1, SHAPE(2), TL_U8, TL_CPU, 1), TL_ERR_DTYPE, "rand");
    FAILS(tl_randn(0, -1, SHAPE(2), TL_F32, TL_CPU, 1), TL_ERR_ARG, "randn");
    FAILS(tl_randn(0, NAN, SHAPE(2), TL_F32, TL_CPU, 1), TL_ERR_ARG, "randn");
    CHECK(strstr(tl_last_error(), "std nan is not a number >= 0")); /* it said "negative" */
    FAILS(tl_randn(0, 1, SHAPE(2), TL_I64, TL_CPU, 1), TL_ERR_DTYPE, "randn");
    if (!tl_device_available(TL_METAL))
        FAILS(tl_zeros(SHAPE(2), TL_F32, TL_METAL), TL_ERR_DEVICE, "zeros");
    FAILS(tl_ones(SHAPE(2), TL_F32, (tl_device)7), TL_ERR_DEVICE, "ones");
    CHECK(strstr(tl_last_error(), "invalid device 7"));
    FAILS(tl_eye(2, TL_F32, (tl_device)-1), TL_ERR_DEVICE, "eye");
}

static void test_views(tl_tensor *x, tl_tensor *v, tl_tensor *s)
{
    tl_tensor *out[4];
    size_t count;
    FAILS(tl_narrow(x, 1, 2, 2), TL_ERR_RANGE, "narrow");
    FAILS(tl_narrow(x, 3, 0, 1), TL_ERR_RANGE, "narrow");
    FAILS(tl_narrow(x, TL_DIM(-3), 0, 1), TL_ERR_RANGE, "narrow");
    FAILS(tl_squeeze(x, 2), TL_ERR_RANGE, "squeeze");
    FAILS(tl_unsqueeze(x, 4), TL_ERR_RANGE, "unsqueeze");
    FAILS(tl_reshape(x, SHAPE(4, 2)), TL_ERR_SHAPE, "reshape");
    FAILS(tl_reshape(x, SHAPE(TL_INFER, 4)), TL_ERR_SHAPE, "reshape");
    FAILS(tl_transpose(x, 0, 2), TL_ERR_RANGE, "transpose");
    FAILS(tl_t(v), TL_ERR_SHAPE, "t");
    FAILS(tl_permute(x, (const size_t[]){0, 0}, 2), TL_ERR_RANGE, "permute");
    FAILS(tl_permute(x, (const size_t[]){0}, 1), TL_ERR_SHAPE, "permute");
    FAILS(tl_broadcast_as(x, SHAPE(2, 2)), TL_ERR_SHAPE, "broadcast_as");
    FAILS(tl_broadcast_as(x, SHAPE(3)), TL_ERR_SHAPE, "broadcast_as");
    FAILS(tl_broadcast_left(x, NULL, 1), TL_ERR_ARG, "broadcast_left");
    FAILS(tl_flatten(x, 3, 0), TL_ERR_RANGE, "flatten");
    FAILS(tl_flatten(x, 0, 2), TL_ERR_RANGE, "flatten");
    FAILS_ST(tl_chunk(x, 0, 0, out, &count), TL_ERR_ARG, "chunk");
    FAILS_ST(tl_chunk(x, 2, 2, out, &count), TL_ERR_RANGE, "chunk");
    FAILS(tl_get(x, 2), TL_ERR_RANGE, "get");
    FAILS(tl_t(s), TL_ERR_SHAPE, "t");
    FAILS(tl_to_dtype(x, TL_DTYPE_COUNT), TL_ERR_DTYPE, "to_dtype");
    if (!tl_device_available(TL_METAL))
        FAILS(tl_to_device(x, TL_METAL), TL_ERR_DEVICE, "to_device");
}

static void test_elementwise(tl_tensor *x, tl_tensor *v, tl_tensor *i)
{
    tl_tensor *x64 = tl_to_dtype(x, TL_F64), *c = tl_to_dtype(x, TL_U8);
    tl_tensor *four = tl_zeros(SHAPE(4), TL_F32, TL_CPU), *sq = tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU);
    FAILS(tl_unary(TL_EXP, i), TL_ERR_DTYPE, "exp");
    FAILS(tl_unary(TL_GELU_ERF, i), TL_ERR_DTYPE, "gelu_erf");
    FAILS(tl_unary(TL_UNARY_COUNT, x), TL_ERR_ARG, "unary");
    FAILS(tl_powf(i, 2), TL_ERR_DTYPE, "powf");
    FAILS(tl_elu(i, 1), TL_ERR_DTYPE, "elu");
    FAILS(tl_add(x, v), TL_ERR_SHAPE, "add");
    FAILS(tl_sub(x, x64), TL_ERR_DTYPE, "sub");
    FAILS(tl_binary(TL_BINARY_COUNT, x, x), TL_ERR_ARG, "binary");
    FAILS(tl_broadcast_mul(x, four), TL_ERR_SHAPE, "broadcast_mul");
    FAILS(tl_broadcast_div(x, x64), TL_ERR_DTYPE, "broadcast_div");
    FAILS(tl_cmp(TL_LT, x, v), TL_ERR_SHAPE, "lt");
    FAILS(tl_cmp(TL_EQ, x, x64), TL_ERR_DTYPE, "eq");
    FAILS(tl_broadcast_cmp(TL_GE, x, sq), TL_ERR_SHAPE, "broadcast_ge");
    FAILS(tl_cmp_scalar(TL_CMP_COUNT, x, 0), TL_ERR_ARG, "cmp_scalar");
    FAILS(tl_binary_scalar(TL_BINARY_COUNT, x, 0), TL_ERR_ARG, "binary_scalar");
    FAILS(tl_where_cond(x, x, x), TL_ERR_DTYPE, "where_cond");
    FAILS(tl_where_cond(c, x, x64), TL_ERR_DTYPE, "where_cond");
    FAILS(tl_where_cond(c, v, v), TL_ERR_SHAPE, "where_cond");
    FAILS(tl_pow(i, i), TL_ERR_DTYPE, "pow");
    FAILS(tl_pow(x, v), TL_ERR_SHAPE, "pow");
    FAILS(tl_pow(x, x64), TL_ERR_DTYPE, "pow");
    RELEASE(x64, c, four, sq);
}

static void test_reductions(tl_tensor *x, tl_tensor *i)
{
    size_t d2 = 2, d01[] = {0, 1}, d00[] = {0, 0};
    tl_tensor *empty = tl_zeros(SHAPE(0, 3), TL_F32, TL_CPU);
    FAILS(tl_reduce(TL_SUM, x, &d2, 1, false), TL_ERR_RANGE, "sum");
    FAILS(tl_reduce(TL_MEAN, x, d00, 2, false), TL_ERR_ARG, "mean");
    FAILS(tl_reduce(TL_ARGMAX, x, d01, 2, false), TL_ERR_ARG, "argmax");
    FAILS(tl_reduce(TL_ARGMIN, x, NULL, 0, false), TL_ERR_ARG, "argmin");
    FAILS(tl_reduce(TL_MAX, empty, NULL, 0, false), TL_ERR_SHAPE, "max");
    FAILS(tl_reduce(TL_REDUCE_COUNT, x, NULL, 0, false), TL_ERR_ARG, "reduce");
    FAILS(tl_softmax(x, 2), TL_ERR_RANGE, "softmax");
    FAILS(tl_softmax(i, 0), TL_ERR_DTYPE, "softmax");
    FAILS(tl_log_softmax(x, TL_DIM(-3)), TL_ERR_RANGE, "log_softmax");
    FAILS(tl_var(x, 2, false), TL_ERR_RANGE, "var");
    FAILS(tl_var(i, 0, false), TL_ERR_DTYPE, "var");
    FAILS(tl_log_sum_exp(x, &d2, 1, false), TL_ERR_RANGE, "log_sum_exp");
    FAILS(tl_log_sum_exp(x, d00, 2, false), TL_ERR_ARG, "log_sum_exp");
    FAILS(tl_log_sum_exp(i, NULL, 0, false), TL_ERR_DTYPE, "log_sum_exp");
    FAILS(tl_log_sum_exp(empty, NULL, 0, false), TL_ERR_SHAPE, "log_sum_exp");
    tl_tensor *empty16 = tl_zeros(SHAPE(0, 3), TL_F16, TL_CPU);
    FAILS(tl_log_sum_exp(empty16, NULL, 0, false), TL_ERR_SHAPE, "log_sum_exp");
    CHECK(strstr(tl_last_error(), "f16[0, 3]")); /* the caller's tensor, not an f32 detour */
    tl_release(empty16);
    FAILS(tl_cumsum(x, 2), TL_ERR_RANGE, "cumsum");
    FAILS(tl_cumprod(x, 2), TL_ERR_RANGE, "cumprod");
    FAILS(tl_norm(i), TL_ERR_DTYPE, "norm");
    tl_release(empty);
}

static void test_rearranging(tl_tensor *x, tl_tensor *s, tl_tensor *i)
{
    size_t d2 = 2, rep1[] = {2};
    tl_tensor *ids = MAKE(TL_I64, SHAPE(2, 1), 0, 5), *fids = MAKE(TL_F32, SHAPE(2, 1), 0, 1);
    tl_tensor *src = tl_zeros(SHAPE(2, 1), TL_F32, TL_CPU);
    FAILS(tl_flip(x, &d2, 1), TL_ERR_RANGE, "flip");
    FAILS(tl_roll(x, 1, 2), TL_ERR_RANGE, "roll");
    FAILS(tl_repeat(x, rep1, 1), TL_ERR_SHAPE, "repeat");
    FAILS(tl_repeat(x, (const size_t[]){1, SIZE_MAX / 4}, 2), TL_ERR_RANGE, "repeat");
    FAILS(tl_pad_with_zeros(x, 2, 1, 1), TL_ERR_RANGE, "pad_with_zeros");
    FAILS(tl_pad_with_same(x, TL_DIM(-3), 1, 1), TL_ERR_RANGE, "pad_with_same");
    FAILS(tl_upsample_nearest1d(x, 4), TL_ERR_SHAPE, "upsample_nearest1d");
    FAILS(tl_upsample_nearest2d(x, 4, 4), TL_ERR_SHAPE, "upsample_nearest2d");
    tl_tensor *row = tl_zeros(SHAPE(1, 1, 2), TL_F32, TL_CPU);
    FAILS(tl_upsample_nearest1d(row, (size_t)1 << 62), TL_ERR_RANGE, "upsample_nearest1d");
    /* it named the input's size: "dim of 2 is too large" */
    CHECK(strstr(tl_last_error(), "size 4611686018427387904 along dim 2 is too large"));
    tl_release(row);
    FAILS(tl_scatter(x, fids, src, 1), TL_ERR_DTYPE, "scatter");
    FAILS(tl_scatter(x, ids, src, 1), TL_ERR_RANGE, "scatter");
    FAILS(tl_scatter(x, ids, src, 2), TL_ERR_RANGE, "scatter");
    FAILS(tl_slice_scatter(x, src, 1, 3), TL_ERR_SHAPE, "slice_scatter");
    FAILS(tl_slice_scatter(x, i, 1, 0), TL_ERR_DTYPE, "slice_scatter");
    FAILS(tl_arg_sort_last_dim(s, true), TL_ERR_SHAPE, "arg_sort_last_dim");
    FAILS(tl_sort_last_dim(s, true, NULL), TL_ERR_SHAPE, "sort_last_dim");
    RELEASE(ids, fids, src);
}

static void test_linalg(tl_tensor *x, tl_tensor *v, tl_tensor *i)
{
    tl_tensor *x64 = tl_to_dtype(x, TL_F64);
    tl_tensor *a = tl_zeros(SHAPE(2, 2, 3), TL_F32, TL_CPU), *b = tl_zeros(SHAPE(3, 3, 2), TL_F32, TL_CPU);
    tl_tensor *x3 = tl_zeros(SHAPE(1, 2, 5), TL_F32, TL_CPU), *k3 = tl_zeros(SHAPE(4, 1, 3), TL_F32, TL_CPU);
    tl_tensor *x4 = tl_zeros(SHAPE(1, 2, 5, 5), TL_F32, TL_CPU);
    tl_tensor *k4 = tl_zeros(SHAPE(4, 1, 3, 3), TL_F32, TL_CPU);
    FAILS(tl_matmul(x, x), TL_ERR_SHAPE, "matmul");
    FAILS(tl_matmul(v, v), TL_ERR_SHAPE, "matmul");
    FAILS(tl_matmul(x, x64), TL_ERR_DTYPE, "matmul");
    FAILS(tl_broadcast_matmul(a, b), TL_ERR_SHAPE, "broadcast_matmul");
    FAILS(tl_broadcast_matmul(a, x64), TL_ERR_DTYPE, "broadcast_matmul");
    FAILS(tl_conv1d(x, k3, 0, 1, 1, 1), TL_ERR_SHAPE, "conv1d");
    FAILS(tl_conv1d(x3, k3, 0, 1, 1, 3), TL_ERR_SHAPE, "conv1d");
    FAILS(tl_conv1d(x3, k3, 0, 0, 1, 2), TL_ERR_ARG, "conv1d");
    FAILS(tl_conv1d(x3, k3, 0, 1, 1, 1), TL_ERR_SHAPE, "conv1d");
    FAILS(tl_conv2d(x3, k4, 0, 1, 1, 2), TL_ERR_SHAPE, "conv2d");
    FAILS(tl_conv2d(x4, k4, 0, 1, 0, 2), TL_ERR_ARG, "conv2d");
    FAILS(tl_conv_transpose1d(x4, k3, 0, 0, 1, 1, 1), TL_ERR_SHAPE, "conv_transpose1d");
    FAILS(tl_conv_transpose1d(x3, k3, 0, 3, 2, 1, 1), TL_ERR_ARG, "conv_transpose1d");
    FAILS(tl_conv_transpose2d(x3, k4, 0, 0, 1, 1), TL_ERR_SHAPE, "conv_transpose2d");
    FAILS(tl_max_pool2d(x3, 2, 2, 2, 2), TL_ERR_SHAPE, "max_pool2d");
    FAILS(tl_max_pool2d(x4, 6, 2, 1, 1), TL_ERR_SHAPE, "max_pool2d");
    FAILS(tl_avg_pool2d(x4, 2, 2, 0, 1), TL_ERR_SHAPE, "avg_pool2d");
    FAILS(tl_avg_pool2d(i, 1, 1, 1, 1), TL_ERR_DTYPE, "avg_pool2d");
    FAILS(tl_avg_pool2d(x, 1, 1, 1, 1), TL_ERR_SHAPE, "avg_pool2d");
    RELEASE(x64, a, b, x3, k3, x4, k4);
}

static void test_indexing(tl_tensor *x, tl_tensor *v, tl_tensor *i)
{
    tl_tensor *far = MAKE(TL_U32, SHAPE(2), 0, 3), *neg = MAKE(TL_I64, SHAPE(2), 0, -1);
    tl_tensor *fl = MAKE(TL_F32, SHAPE(2), 0, 1), *ids2 = MAKE(TL_I64, SHAPE(2, 1), 1, 0);
    tl_tensor *src = tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU), *x64 = tl_to_dtype(x, TL_F64);
    tl_tensor *negcol = tl_reshape(neg, SHAPE(2, 1)), *src64 = tl_zeros(SHAPE(2, 1), TL_F64, TL_CPU);
    const tl_tensor *mixed[] = {x, x64}, *shapes[] = {x, v}, *same[] = {x, x};
    FAILS(tl_index_select(x, far, 0), TL_ERR_RANGE, "index_select");
    FAILS(tl_index_select(x, neg, 1), TL_ERR_RANGE, "index_select");
    FAILS(tl_index_select(x, fl, 0), TL_ERR_DTYPE, "index_select");
    FAILS(tl_index_select(x, ids2, 0), TL_ERR_SHAPE, "index_select");
    FAILS(tl_index_select(x, far, 2), TL_ERR_RANGE, "index_select");
    FAILS(tl_gather(x, far, 0), TL_ERR_SHAPE, "gather");
    FAILS(tl_gather(x, negcol, 1), TL_ERR_RANGE, "gather");
    FAILS(tl_scatter_add(x, ids2, src, 1), TL_ERR_SHAPE, "scatter_add");
    CHECK(strstr(tl_last_error(), "indexes i64[2, 1] must have the shape of source f32[2, 2]"));
    FAILS(tl_scatter_add(x, ids2, src64, 1), TL_ERR_DTYPE, "scatter_add");
    FAILS(tl_index_add(x, far, src, 1), TL_ERR_RANGE, "index_add");
    FAILS(tl_index_add(x, ids2, src, 1), TL_ERR_SHAPE, "index_add");
    FAILS(tl_index_add(x, fl, src, 1), TL_ERR_DTYPE, "index_add");
    FAILS(tl_cat(NULL, 0, 0), TL_ERR_ARG, "cat");
    FAILS(tl_cat(mixed, 2, 0), TL_ERR_DTYPE, "cat");
    FAILS(tl_cat(shapes, 2, 0), TL_ERR_SHAPE, "cat");
    FAILS(tl_cat(same, 2, 2), TL_ERR_RANGE, "cat");
    FAILS(tl_stack(mixed, 2, 0), TL_ERR_DTYPE, "stack");
    FAILS(tl_stack(shapes, 2, 0), TL_ERR_SHAPE, "stack");
    FAILS(tl_stack(same, 2, 3), TL_ERR_RANGE, "stack");
    FAILS(tl_stack(NULL, 2, 0), TL_ERR_ARG, "stack");
    (void)i;
    RELEASE(far, neg, fl, ids2, src, x64, negcol, src64);
}

/* A scalar has no dim 0 (it was taken as one, and softmax read past the layout). */
static void test_scalar_dims(tl_tensor *s)
{
    size_t d0 = 0;
    tl_tensor *out[2], *ids = tl_zeros(SHAPE(1), TL_I64, TL_CPU), *t = tl_zeros(SCALAR, TL_F32, TL_CPU);
    tl_tensor *sid = tl_zeros(SCALAR, TL_I64, TL_CPU);
    size_t count;
    FAILS(tl_softmax(s, 0), TL_ERR_RANGE, "softmax");
    FAILS(tl_log_softmax(s, 0), TL_ERR_RANGE, "log_softmax");
    FAILS(tl_var(s, 0, false), TL_ERR_RANGE, "var");
    FAILS(tl_cumsum(s, 0), TL_ERR_RANGE, "cumsum");
    FAILS(tl_cumprod(s, 0), TL_ERR_RANGE, "cumprod");
    FAILS(tl_roll(s, 1, 0), TL_ERR_RANGE, "roll");
    FAILS(tl_narrow(s, 0, 0, 1), TL_ERR_RANGE, "narrow");
    FAILS(tl_squeeze(s, 0), TL_ERR_RANGE, "squeeze");
    FAILS(tl_transpose(s, 0, 0), TL_ERR_RANGE, "transpose");
    FAILS(tl_reduce(TL_SUM, s, &d0, 1, false), TL_ERR_RANGE, "sum");
    FAILS(tl_reduce(TL_ARGMAX, s, &d0, 1, false), TL_ERR_RANGE, "argmax");
    FAILS(tl_log_sum_exp(s, &d0, 1, false), TL_ERR_RANGE, "log_sum_exp");
    FAILS(tl_flip(s, &d0, 1), TL_ERR_RANGE, "flip");
    FAILS(tl_pad_with_zeros(s, 0, 1, 1), TL_ERR_RANGE, "pad_with_zeros");
    FAILS(tl_pad_with_same(s, 0, 1, 1), TL_ERR_RANGE, "pad_with_same");
    FAILS(tl_index_select(s, ids, 0), TL_ERR_RANGE, "index_select");
    FAILS(tl_gather(s, sid, 0), TL_ERR_RANGE, "gather");
    FAILS(tl_cat((const tl_tensor *[]){s, s}, 2, 0), TL_ERR_RANGE, "cat");
    FAILS_ST(tl_chunk(s, 1, 0, out, &count), TL_ERR_RANGE, "chunk");
    FAILS_ST(tl_slice_set(t, s, 0, 0), TL_ERR_RANGE, "slice_set");
    EXPECT_VALS(tl_reduce(TL_SUM, s, NULL, 0, false), 0, 0);  /* no dims: all of them */
    tl_tensor *u = tl_unsqueeze(s, 0); /* a scalar can gain dim 0 */
    CHECK(u && tl_ndim(u) == 1);
    RELEASE(u, ids, t, sid);
}

/* In-place ops: wrong operands, and operands that share the target's storage. */
static void test_in_place(tl_tensor *x, tl_tensor *v, tl_tensor *i)
{
    tl_tensor *t = tl_zeros(SHAPE(4, 3), TL_F32, TL_CPU);
    tl_tensor *top = tl_narrow(t, 0, 0, 2), *bottom = tl_narrow(t, 0, 2, 2);
    tl_tensor *ids = MAKE(TL_I64, SHAPE(2, 3), 0, 1, 2, 3, 0, 1), *far = MAKE(TL_I64, SHAPE(2, 3), 0, 1, 2, 3, 4, 1);
    tl_tensor *src = tl_ones(SHAPE(2, 3), TL_F32, TL_CPU);
    FAILS_ST(tl_slice_set(t, bottom, 0, 0), TL_ERR_SHARED_STORAGE, "slice_set");
    FAILS_ST(tl_slice_set(t, src, 0, 3), TL_ERR_SHAPE, "slice_set");
    FAILS_ST(tl_slice_set(t, i, 0, 0), TL_ERR_DTYPE, "slice_set");
    FAILS_ST(tl_slice_set(t, src, 2, 0), TL_ERR_RANGE, "slice_set");
    FAILS_ST(tl_scatter_set(top, ids, bottom, 0), TL_ERR_SHARED_STORAGE, "scatter_set");
    FAILS_ST(tl_scatter_set(t, far, src, 0), TL_ERR_RANGE, "scatter_set");
    FAILS_ST(tl_scatter_add_set(top, ids, bottom, 0), TL_ERR_SHARED_STORAGE, "scatter_add_set");
    /* the kernel's range check is shared with scatter_add, whose name it gave (chain_torch) */
    FAILS_ST(tl_scatter_add_set(t, far, src, 0), TL_ERR_RANGE, "scatter_add_set");
    FAILS_ST(tl_scatter_add_set(t, ids, i, 0), TL_ERR_DTYPE, "scatter_add_set");
    FAILS_ST(tl_var_set(top, bottom), TL_ERR_SHARED_STORAGE, "var_set");
    FAILS_ST(tl_var_set(t, src), TL_ERR_SHAPE, "var_set");
    FAILS_ST(tl_var_set(x, i), TL_ERR_DTYPE, "var_set");
    /* nothing above wrote anything */
    EXPECT_VALS(tl_reduce(TL_SUM, t, NULL, 0, false), 0, 0);
    FAILS_ST(tl_const_set(NULL, 1), TL_ERR_ARG, "const_set");
    (void)v;
    RELEASE(t, top, bottom, ids, far, src);
}

/* A view keeps its storage alive after the tensor it came from is released. */
static void test_view_outlives_parent(void)
{
    tl_tensor *parent = MAKE(TL_F32, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tl_tensor *col = tl_narrow(parent, 1, 1, 1), *tr = tl_t(parent);
    tl_release(parent);
    EXPECT_VALS(tl_add(col, col), 0, 4, 10);
    EXPECT_VALS(tl_contiguous(tr), 0, 1, 4, 2, 5, 3, 6);
    CHECK(tl_const_set(col, -1) == TL_OK);
    EXPECT_VALS(tl_copy(tr), 0, 1, 4, -1, -1, 3, 6);
    RELEASE(col, tr);
}

static void test_read_out(tl_tensor *x)
{
    float small[3];
    char buf[4];
    FAILS_ST(tl_to_vec(x, small, sizeof small), TL_ERR_RANGE, "to_vec");
    FAILS_ST(tl_to_vec(x, NULL, 24), TL_ERR_ARG, "to_vec");
    CHECK(tl_format(x, NULL, 0) > 0);
    CHECK(tl_format(x, buf, sizeof buf) > (int)sizeof buf && buf[3] == '\0');
}

static void test_files(tl_tensor *x)
{
    tl_named *list = NULL;
    size_t n = 0;
    FAILS(tl_load_npy("/nonexistent/x.npy", TL_CPU), TL_ERR_ARG, "load_npy");
    FAILS_ST(tl_save_npy(x, "/nonexistent/x.npy"), TL_ERR_ARG, "save_npy");
    FAILS_ST(tl_load_npz("/nonexistent/x.npz", TL_CPU, &list, &n), TL_ERR_ARG, "load_npz");
    FAILS_ST(tl_load_safetensors("/nonexistent/x.st", TL_CPU, &list, &n), TL_ERR_ARG,
             "load_safetensors");
    FAILS_ST(tl_load_safetensors_buffer("xx", 2, TL_CPU, &list, &n), TL_ERR_ARG,
             "load_safetensors");
    CHECK(list == NULL && n == 0);
}

/* A failure inside a step of an op (a read-out's to_vec, a kernel's own buffer, reshape's
 * copy) is named by the op called: every allocation of each call fails in turn. */
static const char *const step_ops[] = {"format", "save_npy", "save_npz", "save_safetensors",
                                       "sum", "broadcast_add", "reshape", "flatten_all",
                                       "conv_transpose2d"};

static tl_status step_call(size_t k, tl_tensor *t, tl_tensor *row, tl_tensor *img,
                           const char *dir)
{
    char path[256], buf[64];
    tl_named one = {"t", t};
    snprintf(path, sizeof path, "%s/%zu", dir, k);
    switch (k) {
    case 0: return tl_format(t, buf, sizeof buf) < 0 ? tl_last_status() : TL_OK;
    case 1: return tl_save_npy(t, path);
    case 2: return tl_save_npz(path, &one, 1);
    case 3: return tl_save_safetensors(path, &one, 1);
    case 4: return result_status(tl_reduce(TL_SUM, t, (const size_t[]){0}, 1, false));
    case 5: return result_status(tl_broadcast_add(t, row));
    case 6: return result_status(tl_reshape(t, SHAPE(6)));
    case 7: return result_status(tl_flatten_all(t));
    default: return result_status(tl_conv_transpose2d(img, img, 0, 0, 1, 1));
    }
}

static void test_failing_steps(tl_tensor *x)
{
    char dir[] = "/tmp/tl_misuse_XXXXXX", path[64];
    tl_tensor *t = tl_t(x), *row = tl_ones(SHAPE(2), TL_F32, TL_CPU);
    tl_tensor *img = tl_ones(SHAPE(1, 1, 2, 2), TL_F32, TL_CPU);
    tl_tensor *num = MAKE(TL_I32, SHAPE(2), 1, 2), *zero = tl_zeros(SHAPE(1), TL_I32, TL_CPU);
    if (!CHECK(t && row && img && num && zero && mkdtemp(dir)))
        goto out;
    for (size_t k = 0; k < sizeof step_ops / sizeof *step_ops; k++) {
        for (long nth = 1; nth < 100; nth++) { /* each takes a few allocations */
            tl_debug_fail_alloc(nth);
            tl_status st = step_call(k, t, row, img, dir);
            long left = tl_debug_fail_alloc(0);
            if (st == TL_OK && left > 0)
                break;
            named(st, TL_ERR_NOMEM, step_ops[k], step_ops[k], __FILE__, __LINE__);
        }
        snprintf(path, sizeof path, "%s/%zu", dir, k);
        unlink(path);
    }
    rmdir(dir);
    /* a kernel's error: the division by zero found while dividing */
    FAILS(tl_broadcast_div(num, zero), TL_ERR_RANGE, "broadcast_div");
out:
    RELEASE(t, row, img, num, zero);
}

/* A broadcast view may hold more elements than memory has bytes (2^61 + 1 f64s: 2^64 + 8
 * bytes, 8 after wrapping). Ops whose result is small but which copy such an operand
 * contiguous first must refuse it, not copy into the wrapped byte count. */
static void test_huge_broadcast(void)
{
    size_t n = ((size_t)1 << 61) + 1;
    tl_tensor *one = tl_ones(SHAPE(1), TL_F64, TL_CPU), *big = tl_broadcast_as(one, &n, 1);
    tl_tensor *ids = tl_zeros(SHAPE(3), TL_U8, TL_CPU), *img = NULL, *sig = NULL;
    if (!CHECK(big && ids))
        goto out;
    FAILS(tl_index_select(big, ids, 0), TL_ERR_RANGE, "index_select");
    FAILS(tl_gather(big, ids, 0), TL_ERR_RANGE, "gather");
    size_t wide[] = {1, 1, 1, n}, line[] = {1, 1, n};
    img = tl_broadcast_as(one, wide, 4);
    sig = tl_broadcast_as(one, line, 3);
    if (!CHECK(img && sig))
        goto out;
    FAILS(tl_avg_pool2d(img, 1, n, 1, 1), TL_ERR_RANGE, "avg_pool2d");
    FAILS(tl_conv1d(sig, sig, 0, 1, 1, 1), TL_ERR_RANGE, "conv1d");
out:
    RELEASE(one, big, ids, img, sig);
}

int main(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tl_tensor *v = MAKE(TL_F32, SHAPE(3), 1, 2, 3), *i = MAKE(TL_I64, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tl_tensor *s = tl_zeros(SCALAR, TL_F32, TL_CPU);
    test_creation();
    test_views(x, v, s);
    test_elementwise(x, v, i);
    test_reductions(x, i);
    test_rearranging(x, s, i);
    test_linalg(x, v, i);
    test_indexing(x, v, i);
    test_scalar_dims(s);
    test_in_place(x, v, i);
    test_view_outlives_parent();
    test_read_out(x);
    test_failing_steps(x);
    test_files(x);
    test_huge_broadcast();
    RELEASE(x, v, i, s);
    return check_summary();
}
