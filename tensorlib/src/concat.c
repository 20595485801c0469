/*
 * concat.c - tl_cat and tl_stack. cat read-locks every argument in order (one storage twice
 * when an argument repeats, as candle does) and copies each into its slice of the result
 * through the backend's copy member; stack is cat of unsqueezed views, which take no lock.
 * One argument is returned itself, as candle does (stack: its unsqueezed view).
 */
#include <stdlib.h>

#include "backend.h"

typedef struct cat_call {
    size_t n, dim;
} cat_call;

static tl_status check_args(const char *op, const tl_tensor *const *ts, size_t n)
{
    if (!ts || n == 0)
        return tl_fail(TL_ERR_ARG, "%s: needs at least one tensor", op);
    for (size_t i = 0; i < n; i++)
        if (tl_check_tensor(op, ts[i]) != TL_OK || tl_check_same(op, ts[0], ts[i]) != TL_OK)
            return tl_last_status();
    return TL_OK;
}

/* Also resolves *dim (counted from the end when negative). */
static tl_status cat_shape(const char *op, const tl_tensor *const *ts, size_t n, size_t *dim_io,
                           size_t *shape)
{
    char d0[TL_DESC_STR], di[TL_DESC_STR];
    if (check_args(op, ts, n) != TL_OK || tl_check_dim(op, ts[0], dim_io) != TL_OK)
        return tl_last_status();
    size_t dim = *dim_io;
    const tl_layout *l0 = &ts[0]->layout;
    for (size_t d = 0; d < l0->ndim; d++)
        shape[d] = d == dim ? 0 : l0->shape[d];
    for (size_t i = 0; i < n; i++) {
        const tl_layout *li = &ts[i]->layout;
        bool fits = li->ndim == l0->ndim;
        for (size_t d = 0; fits && d < l0->ndim; d++)
            fits = d == dim || li->shape[d] == l0->shape[d];
        if (!fits)
            return tl_fail(TL_ERR_SHAPE, "%s: %s and %s differ outside dim %zu (argument %zu)",
                           op, tl_describe(ts[0], d0), tl_describe(ts[i], di), dim, i);
        if (__builtin_add_overflow(shape[dim], li->shape[dim], &shape[dim]))
            return tl_fail(TL_ERR_RANGE, "%s: dim %zu of the result overflows (argument %zu)",
                           op, dim, i);
    }
    return TL_OK;
}

/* Copies args[i] into the slice of dst that starts where args[i-1]'s ended along dim. */
static tl_status cat_kernel(const tl_backend_i *be, const tl_operand *dst,
                            const tl_operand *args, const void *ctx)
{
    const cat_call *c = ctx;
    tl_layout slice = *dst->layout;
    tl_status st = TL_OK;
    for (size_t i = 0; i < c->n && st == TL_OK; i++) {
        slice.shape[c->dim] = args[i].layout->shape[c->dim];
        tl_operand part = {dst->buf, &slice, dst->dtype};
        st = be->copy(&part, &args[i]);
        slice.offset += slice.shape[c->dim] * slice.stride[c->dim];
    }
    return st;
}

/* cat under the name op (stack reports its errors as its own). */
static tl_tensor *cat_op(const char *op, const tl_tensor *const *ts, size_t n, size_t dim)
{
    size_t shape[TL_MAX_DIMS];
    if (cat_shape(op, ts, n, &dim, shape) != TL_OK)
        return NULL;
    if (n == 1) /* candle's cat of one tensor is that tensor (a clone: the same storage) */
        return tl_retain((tl_tensor *)ts[0]);
    cat_call c = {n, dim};
    return tl_run_op(op, ts, NULL, n, shape, ts[0]->layout.ndim, ts[0]->dtype, cat_kernel, &c);
}

tl_tensor *tl_cat(const tl_tensor *const *ts, size_t n, size_t dim)
{
    return cat_op("cat", ts, n, dim);
}

tl_tensor *tl_stack(const tl_tensor *const *ts, size_t n, size_t dim)
{
    if (check_args("stack", ts, n) != TL_OK)
        return NULL;
    if (tl_resolve_dim("stack", ts[0], ts[0]->layout.ndim + 1, &dim) != TL_OK)
        return NULL;
    tl_tensor **views = tl_calloc(n, sizeof *views);
    if (!views) {
        tl_fail_nomem("stack", n * sizeof *views);
        return NULL;
    }
    size_t made = 0;
    while (made < n && (views[made] = tl_unsqueeze(ts[made], dim)))
        made++;
    tl_tensor *out = made == n ? cat_op("stack", (const tl_tensor *const *)views, n, dim)
                               : tl_within("stack", NULL);
    for (size_t i = 0; i < made; i++)
        tl_release(views[i]);
    free(views);
    return out;
}
