/*
 * sort.c - candle's arg_sort_last_dim and sort_last_dim: a stable sort of each row along the
 * last dim, ascending or descending, NaN ordered after every number (so last ascending, first
 * descending). Read lock: the input.
 */
#include "backend.h"

static tl_status sort_kernel(const tl_backend_i *be, const tl_operand *dst, const tl_operand *in,
                             const void *ctx)
{
    return be->arg_sort(dst, &in[0], *(const bool *)ctx);
}

tl_tensor *tl_arg_sort_last_dim(const tl_tensor *t, bool ascending)
{
    const char *op = "arg_sort_last_dim";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK || TL_NEED(op, t, arg_sort) != TL_OK)
        return NULL;
    if (t->layout.ndim == 0)
        return tl_fail(TL_ERR_SHAPE, "%s: needs at least 1 dim, got %s", op, tl_describe(t, d)),
               NULL;
    if (t->layout.shape[t->layout.ndim - 1] > UINT32_MAX)
        return tl_fail(TL_ERR_RANGE, "%s: rows of %s are too long for u32 indexes", op,
                       tl_describe(t, d)), NULL;
    return tl_run_op(op, &t, NULL, 1, t->layout.shape, t->layout.ndim, TL_U32, sort_kernel,
                     &ascending);
}

tl_tensor *tl_sort_last_dim(const tl_tensor *t, bool ascending, tl_tensor **indices)
{
    tl_tensor *ids = tl_arg_sort_last_dim(t, ascending); /* its checks name arg_sort_last_dim */
    tl_tensor *sorted = ids ? tl_gather(t, ids, TL_DIM(-1)) : NULL;
    if (sorted && indices)
        *indices = tl_retain(ids);
    tl_release(ids);
    return tl_within("sort_last_dim", sorted);
}
