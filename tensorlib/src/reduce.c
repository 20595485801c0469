/*
 * reduce.c - sum, mean, max, min, argmax, argmin over a set of dims, with or without keepdim.
 * The backend always produces the keepdim shape; without keepdim the result is a view of it
 * with the reduced dims removed.
 */
#include "backend.h"

static const char *const reduce_names[] = {
    [TL_SUM] = "sum", [TL_MEAN] = "mean", [TL_MAX] = "max", [TL_MIN] = "min",
    [TL_ARGMAX] = "argmax", [TL_ARGMIN] = "argmin",
};
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == TL_REDUCE_COUNT, "reduce names");

/* The dims as a bitmask; ndims 0 means every dim. */
static tl_status reduced_mask(const char *op, const tl_tensor *t, const size_t *dims,
                              size_t ndims, uint32_t *mask)
{
    *mask = 0;
    if (ndims && !dims)
        return tl_fail(TL_ERR_ARG, "%s: dims is NULL", op);
    if (ndims > TL_MAX_DIMS)
        return tl_fail(TL_ERR_ARG, "%s: %zu dims given", op, ndims);
    for (size_t i = 0; i < ndims; i++) {
        size_t dim = dims[i];
        if (tl_check_dim(op, t, &dim) != TL_OK)
            return TL_ERR_RANGE;
        if (*mask & (1u << dim))
            return tl_fail(TL_ERR_ARG, "%s: dim %zu given twice", op, dim);
        *mask |= 1u << dim;
    }
    if (ndims == 0)
        *mask = (uint32_t)((1u << t->layout.ndim) - 1);
    return TL_OK;
}

typedef struct reduce_args {
    tl_reduce_op op;
    uint32_t mask;
} reduce_args;

static tl_status reduce_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                               const void *ctx)
{
    const reduce_args *a = ctx;
    return b->reduce(a->op, dst, &in[0], a->mask);
}

/* Drops the reduced dims from a keepdim result (a view of the same storage). */
static tl_tensor *drop_dims(const char *op, tl_tensor *r, uint32_t mask)
{
    tl_layout l = {.ndim = 0};
    for (size_t d = 0; d < r->layout.ndim; d++) {
        if (mask & (1u << d))
            continue;
        l.shape[l.ndim] = r->layout.shape[d];
        l.stride[l.ndim++] = r->layout.stride[d];
    }
    tl_tensor *out = tl_tensor_wrap(op, r->storage, &l);
    tl_release(r);
    return out;
}

tl_tensor *tl_reduce(tl_reduce_op op, const tl_tensor *t, const size_t *dims, size_t ndims,
                     bool keepdim)
{
    char d[TL_DESC_STR];
    if ((unsigned)op >= TL_REDUCE_COUNT)
        return tl_fail(TL_ERR_ARG, "reduce: invalid op %d", (int)op), NULL;
    const char *name = reduce_names[op];
    reduce_args a = {op, 0};
    if (tl_check_tensor(name, t) != TL_OK || reduced_mask(name, t, dims, ndims, &a.mask) != TL_OK)
        return NULL;
    bool arg = op == TL_ARGMAX || op == TL_ARGMIN;
    if (arg && ndims != 1)
        return tl_fail(TL_ERR_ARG, "%s: takes exactly one dim, got %zu", name, ndims), NULL;
    size_t shape[TL_MAX_DIMS];
    for (size_t i = 0; i < t->layout.ndim; i++) {
        bool r = a.mask & (1u << i);
        if (r && t->layout.shape[i] == 0 && op != TL_SUM && op != TL_MEAN)
            return tl_fail(TL_ERR_SHAPE, "%s: empty dim %zu of %s", name, i, tl_describe(t, d)),
                   NULL;
        shape[i] = r ? 1 : t->layout.shape[i];
    }
    /* the result is u32, as candle's: a longer dim's indices would wrap */
    for (size_t i = 0; arg && i < t->layout.ndim; i++)
        if ((a.mask & (1u << i)) && t->layout.shape[i] > (size_t)UINT32_MAX + 1)
            return tl_fail(TL_ERR_RANGE, "%s: dim %zu of %s has %zu elements, more than a u32 "
                           "index reaches", name, i, tl_describe(t, d), t->layout.shape[i]), NULL;
    if (TL_NEED(name, t, reduce) != TL_OK)
        return NULL;
    tl_tensor *r = tl_run_op(name, &t, NULL, 1, shape, t->layout.ndim, arg ? TL_U32 : t->dtype,
                             reduce_kernel, &a);
    return r && !keepdim ? drop_dims(name, r, a.mask) : r;
}
