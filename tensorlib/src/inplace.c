/*
 * inplace.c - the built-in in-place ops: const_set, slice_set and var_set. They write
 * through the target's layout under its write lock. slice_set and var_set keep candle's
 * same-storage guard (TL_ERR_SHARED_STORAGE) and candle's lock order:
 *   slice_set: read src, then write dst   (unguarded, a shared storage would hang for real:
 *                                          glibc blocks a read-to-write upgrade forever)
 *   var_set:   write dst, then read src   (unguarded, glibc would return EDEADLK)
 */
#include "backend.h"

tl_status tl_const_set(tl_tensor *t, double value)
{
    const char *op = "const_set";
    if (tl_check_tensor(op, t) != TL_OK)
        return TL_ERR_ARG;
    if (TL_NEED(op, t, fill) != TL_OK)
        return TL_ERR_UNSUPPORTED;
    tl_status st = tl_lock_write(t, op);
    if (st != TL_OK)
        return st;
    tl_operand dst = tl_operand_of(t);
    st = t->storage->backend->fill(&dst, value);
    tl_unlock(t);
    return st;
}

/* Same dtype and device, a target that is no broadcast view, a backend that copies, and not
 * one storage (candle's guard). */
static tl_status check_guarded(const char *op, const tl_tensor *t, const tl_tensor *src)
{
    char dt[TL_DESC_STR], ds[TL_DESC_STR];
    tl_status st = tl_check_same(op, t, src);
    if (st == TL_OK)
        st = tl_check_writable(op, t);
    if (st == TL_OK)
        st = TL_NEED(op, t, copy);
    if (st == TL_OK && tl_shares_storage(t, src))
        st = tl_fail(TL_ERR_SHARED_STORAGE,
                     "%s: target %s and source %s share their storage (use a copy of the source)",
                     op, tl_describe(t, dt), tl_describe(src, ds));
    return st;
}

/* The region of t that slice_set writes: dim narrowed to [offset, offset + src's size). */
static tl_status slice_region(const char *op, const tl_tensor *t, const tl_tensor *src,
                              size_t dim, size_t offset, tl_layout *region)
{
    char dt[TL_DESC_STR], ds[TL_DESC_STR];
    const tl_layout *tl = &t->layout, *sl = &src->layout;
    bool fits = tl->ndim == sl->ndim && dim < tl->ndim && offset <= tl->shape[dim] &&
                sl->shape[dim] <= tl->shape[dim] - offset;
    for (size_t i = 0; fits && i < tl->ndim; i++)
        fits = i == dim || tl->shape[i] == sl->shape[i];
    if (!fits)
        return tl_fail(dim < tl->ndim ? TL_ERR_SHAPE : TL_ERR_RANGE,
                       "%s: source %s does not fit target %s at dim %zu offset %zu", op,
                       tl_describe(src, ds), tl_describe(t, dt), dim, offset);
    *region = *tl;
    region->shape[dim] = sl->shape[dim];
    region->offset += offset * tl->stride[dim];
    return TL_OK;
}

tl_status tl_slice_set(tl_tensor *t, const tl_tensor *src, size_t dim, size_t offset)
{
    const char *op = "slice_set";
    tl_layout region;
    tl_status st = check_guarded(op, t, src);
    if (st == TL_OK)
        st = tl_check_dim(op, t, &dim);
    if (st == TL_OK)
        st = slice_region(op, t, src, dim, offset, &region);
    if (st == TL_OK)
        st = tl_lock_read(src, op);
    if (st != TL_OK)
        return st;
    st = tl_lock_write(t, op);
    if (st == TL_OK) {
        tl_operand dst = tl_operand_of(t), from = tl_operand_of(src);
        dst.layout = &region;
        st = t->storage->backend->copy(&dst, &from);
        tl_unlock(t);
    }
    tl_unlock(src);
    return st;
}

tl_status tl_var_set(tl_tensor *t, const tl_tensor *src)
{
    const char *op = "var_set";
    char dt[TL_DESC_STR], ds[TL_DESC_STR];
    tl_status st = check_guarded(op, t, src);
    if (st != TL_OK)
        return st;
    if (!tl_same_shape(&t->layout, &src->layout))
        return tl_fail(TL_ERR_SHAPE, "%s: shape mismatch, target %s, source %s", op,
                       tl_describe(t, dt), tl_describe(src, ds));
    st = tl_lock_write(t, op);
    if (st != TL_OK)
        return st;
    st = tl_lock_read(src, op);
    if (st == TL_OK) {
        tl_operand dst = tl_operand_of(t), from = tl_operand_of(src);
        st = t->storage->backend->copy(&dst, &from);
        tl_unlock(src);
    }
    tl_unlock(t);
    return st;
}
