/*
 * ops_binary.c - two- and three-input elementwise ops with numpy broadcasting: arithmetic,
 * comparisons (u8 result) and where_cond. Inputs are read-locked together, in argument order.
 */
#include "backend.h"

static const char *const binary_names[] = {
    [TL_ADD] = "add", [TL_SUB] = "sub", [TL_MUL] = "mul", [TL_DIV] = "div",
    [TL_MAXIMUM] = "maximum", [TL_MINIMUM] = "minimum",
};
_Static_assert(sizeof binary_names / sizeof binary_names[0] == TL_BINARY_COUNT, "binary names");

static const char *const cmp_names[] = {
    [TL_EQ] = "eq", [TL_NE] = "ne", [TL_LT] = "lt", [TL_LE] = "le", [TL_GT] = "gt", [TL_GE] = "ge",
};
_Static_assert(sizeof cmp_names / sizeof cmp_names[0] == TL_CMP_COUNT, "cmp names");

/* The broadcast result shape of a and b, and each seen with that shape. */
typedef struct broadcast2 {
    size_t shape[TL_MAX_DIMS];
    size_t ndim;
    tl_layout la, lb;
} broadcast2;

static tl_status broadcast_pair(const char *op, const tl_tensor *a, const tl_tensor *b,
                                broadcast2 *bc)
{
    tl_status st = tl_check_same(op, a, b);
    if (st == TL_OK)
        st = tl_broadcast_shape(op, &a->layout, &b->layout, bc->shape, &bc->ndim);
    if (st == TL_OK)
        st = tl_layout_broadcast(op, &a->layout, bc->shape, bc->ndim, &bc->la);
    if (st == TL_OK)
        st = tl_layout_broadcast(op, &b->layout, bc->shape, bc->ndim, &bc->lb);
    return st;
}

/* a op b over their broadcast shape, into a new tensor of dtype (TL_DTYPE_COUNT: a's). */
static tl_tensor *broadcast_op(const char *name, const tl_tensor *a, const tl_tensor *b,
                               tl_dtype dtype, tl_kernel_fn fn, const void *ctx)
{
    broadcast2 bc;
    if (broadcast_pair(name, a, b, &bc) != TL_OK)
        return NULL;
    const tl_tensor *in[2] = {a, b};
    const tl_layout *ls[2] = {&bc.la, &bc.lb};
    return tl_run_elementwise(name, in, ls, 2, bc.shape, bc.ndim,
                              dtype == TL_DTYPE_COUNT ? a->dtype : dtype, fn, ctx);
}

static tl_status binary_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                               const void *ctx)
{
    return b->binary(*(const tl_binary_op *)ctx, dst, &in[0], &in[1]);
}

tl_tensor *tl_binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b)
{
    if ((unsigned)op >= TL_BINARY_COUNT)
        return tl_fail(TL_ERR_ARG, "binary: invalid op %d", (int)op), NULL;
    if (a && TL_NEED(binary_names[op], a, binary) != TL_OK) /* a NULL a fails below */
        return NULL;
    return broadcast_op(binary_names[op], a, b, TL_DTYPE_COUNT, binary_kernel, &op);
}

static tl_status cmp_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                            const void *ctx)
{
    return b->cmp(*(const tl_cmp_op *)ctx, dst, &in[0], &in[1]);
}

tl_tensor *tl_cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b)
{
    if ((unsigned)op >= TL_CMP_COUNT)
        return tl_fail(TL_ERR_ARG, "cmp: invalid op %d", (int)op), NULL;
    if (a && TL_NEED(cmp_names[op], a, cmp) != TL_OK)
        return NULL;
    return broadcast_op(cmp_names[op], a, b, TL_U8, cmp_kernel, &op);
}

static tl_status where_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                              const void *ctx)
{
    (void)ctx;
    return b->where(dst, &in[0], &in[1], &in[2]);
}

tl_tensor *tl_where_cond(const tl_tensor *cond, const tl_tensor *on_true, const tl_tensor *on_false)
{
    const char *op = "where_cond";
    char d[TL_DESC_STR];
    broadcast2 bc;
    if (tl_check_tensor(op, cond) != TL_OK || broadcast_pair(op, on_true, on_false, &bc) != TL_OK)
        return NULL;
    if (tl_dtype_is_float(cond->dtype))
        return tl_fail(TL_ERR_DTYPE, "%s: condition must be u8, u32 or i64, got %s", op,
                       tl_describe(cond, d)), NULL;
    if (TL_NEED(op, on_true, where) != TL_OK)
        return NULL;
    if (cond->device != on_true->device)
        return tl_fail(TL_ERR_DEVICE, "%s: condition on %s, values on %s", op,
                       tl_device_name(cond->device), tl_device_name(on_true->device)), NULL;
    /* the result shape is all three broadcast together */
    tl_layout shape_ab = {.ndim = bc.ndim};
    size_t shape[TL_MAX_DIMS], ndim;
    for (size_t i = 0; i < bc.ndim; i++)
        shape_ab.shape[i] = bc.shape[i];
    if (tl_broadcast_shape(op, &cond->layout, &shape_ab, shape, &ndim) != TL_OK)
        return NULL;
    tl_layout ls3[3];
    const tl_tensor *in[3] = {cond, on_true, on_false};
    for (size_t i = 0; i < 3; i++)
        if (tl_layout_broadcast(op, &in[i]->layout, shape, ndim, &ls3[i]) != TL_OK)
            return NULL;
    const tl_layout *ls[3] = {&ls3[0], &ls3[1], &ls3[2]};
    return tl_run_elementwise(op, in, ls, 3, shape, ndim, on_true->dtype, where_kernel, NULL);
}
