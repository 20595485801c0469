/*
 * indexing.c - index_select, gather, scatter_add, index_add (new tensors) and the in-place
 * scatter_set / scatter_add_set, with candle's locks:
 *   index_select, gather   R self, R ids
 *   scatter_add, index_add R self, R ids, R src (self is copied into the result first)
 *   scatter_*_set          W self, then R ids, R src. Like candle, only src is checked for
 *                          sharing self's storage (TL_ERR_SHARED_STORAGE); ids that are a view
 *                          of self are not, so the read lock on them meets the write lock
 *                          (EDEADLK on glibc -> TL_ERR_LOCK, a hang elsewhere): the tracer
 *                          demo relies on exactly this.
 */
#include "backend.h"

typedef struct index_call {
    const char *op;
    size_t dim;
} index_call;

static tl_status check_index_dtype(const char *op, const tl_tensor *ids)
{
    char d[TL_DESC_STR];
    if (!tl_dtype_is_float(ids->dtype))
        return TL_OK;
    return tl_fail(TL_ERR_DTYPE, "%s: indexes must be an integer dtype, got %s", op,
                   tl_describe(ids, d));
}

/* Fails as unsupported unless t's backend has the member the op needs. */
static tl_status check_backend(const char *op, const tl_tensor *t, bool has_member)
{
    return has_member ? TL_OK : tl_fail_unsupported(op, t->device);
}

/* Also resolves *dim (counted from the end when negative). */
static tl_status check_operands(const char *op, const tl_tensor *t, const tl_tensor *ids,
                                size_t *dim)
{
    if (tl_check_tensor(op, t) != TL_OK || tl_check_tensor(op, ids) != TL_OK)
        return TL_ERR_ARG;
    if (ids->device != t->device)
        return tl_fail(TL_ERR_DEVICE, "%s: operands on different devices (%s and %s)", op,
                       tl_device_name(t->device), tl_device_name(ids->device));
    tl_status st = check_index_dtype(op, ids);
    return st == TL_OK ? tl_check_dim(op, t, dim) : st;
}

static tl_status check_1d(const char *op, const tl_tensor *ids)
{
    char d[TL_DESC_STR];
    if (ids->layout.ndim == 1)
        return TL_OK;
    return tl_fail(TL_ERR_SHAPE, "%s: indexes must be 1-D, got %s", op, tl_describe(ids, d));
}

/* How check_fits compares b's dims to a's. */
typedef enum fit { FIT_BUT_DIM, FIT_ALL, FIT_WITHIN } fit;

/* a and b have one rank and the same size on every dim but dim (FIT_ALL: on all, b is then
 * the indexes of source a; FIT_WITHIN: b at most a's size outside dim, gather's indexes). */
static tl_status check_fits(const char *op, const tl_tensor *a, const tl_tensor *b, size_t dim,
                            fit how)
{
    char da[TL_DESC_STR], db[TL_DESC_STR];
    bool ok = a->layout.ndim == b->layout.ndim;
    for (size_t d = 0; ok && d < a->layout.ndim; d++) {
        size_t x = a->layout.shape[d], y = b->layout.shape[d];
        ok = how == FIT_ALL ? x == y : d == dim || (how == FIT_WITHIN ? y <= x : x == y);
    }
    if (ok)
        return TL_OK;
    if (how == FIT_ALL)
        return tl_fail(TL_ERR_SHAPE, "%s: indexes %s must have the shape of source %s", op,
                       tl_describe(b, db), tl_describe(a, da));
    if (how == FIT_WITHIN)
        return tl_fail(TL_ERR_SHAPE, "%s: indexes %s must have the rank of %s and no dim but %zu "
                       "larger", op, tl_describe(b, db), tl_describe(a, da), dim);
    return tl_fail(TL_ERR_SHAPE, "%s: shapes %s and %s differ outside dim %zu", op,
                   tl_describe(a, da), tl_describe(b, db), dim);
}

static tl_status index_select_kernel(const tl_backend_i *be, const tl_operand *dst,
                                     const tl_operand *args, const void *ctx)
{
    return be->index_select(dst, &args[0], &args[1], ((const index_call *)ctx)->dim);
}

tl_tensor *tl_index_select(const tl_tensor *t, const tl_tensor *ids, size_t dim)
{
    index_call c = {"index_select", dim};
    if (check_operands(c.op, t, ids, &c.dim) != TL_OK || check_1d(c.op, ids) != TL_OK ||
        check_backend(c.op, t, tl_backend_of(t->device)->index_select != NULL) != TL_OK)
        return NULL;
    size_t shape[TL_MAX_DIMS];
    for (size_t d = 0; d < t->layout.ndim; d++)
        shape[d] = d == c.dim ? ids->layout.shape[0] : t->layout.shape[d];
    const tl_tensor *in[] = {t, ids};
    return tl_run_op(c.op, in, NULL, 2, shape, t->layout.ndim, t->dtype, index_select_kernel,
                     &c);
}

static tl_status gather_kernel(const tl_backend_i *be, const tl_operand *dst,
                               const tl_operand *args, const void *ctx)
{
    return be->gather(dst, &args[0], &args[1], ((const index_call *)ctx)->dim);
}

tl_tensor *tl_gather(const tl_tensor *t, const tl_tensor *ids, size_t dim)
{
    index_call c = {"gather", dim};
    if (check_operands(c.op, t, ids, &c.dim) != TL_OK ||
        check_fits(c.op, t, ids, c.dim, FIT_WITHIN) != TL_OK ||
        check_backend(c.op, t, tl_backend_of(t->device)->gather != NULL) != TL_OK)
        return NULL;
    const tl_tensor *in[] = {t, ids};
    return tl_run_op(c.op, in, NULL, 2, ids->layout.shape, ids->layout.ndim, t->dtype,
                     gather_kernel, &c);
}

/* Checks shared by the scatter family: src has t's dtype and fits t outside dim; ids has
 * src's shape. Resolves *dim. */
static tl_status check_scatter(const char *op, const tl_tensor *t, const tl_tensor *ids,
                               const tl_tensor *src, size_t *dim)
{
    tl_status st = check_operands(op, t, ids, dim);
    if (st == TL_OK)
        st = tl_check_same(op, t, src);
    if (st == TL_OK)
        st = check_fits(op, t, src, *dim, FIT_BUT_DIM);
    return st == TL_OK ? check_fits(op, src, ids, *dim, FIT_ALL) : st;
}

/* Copies self (args[0]) into dst, then lets the backend add into it in place. */
static tl_status scatter_add_kernel(const tl_backend_i *be, const tl_operand *dst,
                                    const tl_operand *args, const void *ctx)
{
    tl_status st = be->copy(dst, &args[0]);
    return st == TL_OK ? be->scatter(dst, &args[1], &args[2], ((const index_call *)ctx)->dim, true)
                       : st;
}

tl_tensor *tl_scatter_add(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src,
                          size_t dim)
{
    index_call c = {"scatter_add", dim};
    if (check_scatter(c.op, t, ids, src, &c.dim) != TL_OK ||
        check_backend(c.op, t, tl_backend_of(t->device)->scatter != NULL) != TL_OK)
        return NULL;
    const tl_tensor *in[] = {t, ids, src};
    return tl_run_op(c.op, in, NULL, 3, t->layout.shape, t->layout.ndim, t->dtype,
                     scatter_add_kernel, &c);
}

static tl_status index_add_kernel(const tl_backend_i *be, const tl_operand *dst,
                                  const tl_operand *args, const void *ctx)
{
    tl_status st = be->copy(dst, &args[0]);
    return st == TL_OK ? be->index_add(dst, &args[1], &args[2], ((const index_call *)ctx)->dim)
                       : st;
}

tl_tensor *tl_index_add(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src,
                        size_t dim)
{
    index_call c = {"index_add", dim};
    char di[TL_DESC_STR], ds[TL_DESC_STR];
    if (check_operands(c.op, t, ids, &c.dim) != TL_OK || check_1d(c.op, ids) != TL_OK ||
        tl_check_same(c.op, t, src) != TL_OK ||
        check_fits(c.op, t, src, c.dim, FIT_BUT_DIM) != TL_OK ||
        check_backend(c.op, t, tl_backend_of(t->device)->index_add != NULL) != TL_OK)
        return NULL;
    if (src->layout.shape[c.dim] != ids->layout.shape[0]) {
        tl_fail(TL_ERR_SHAPE, "%s: source %s has %zu slices along dim %zu but indexes %s has %zu",
                c.op, tl_describe(src, ds), src->layout.shape[c.dim], c.dim, tl_describe(ids, di),
                ids->layout.shape[0]);
        return NULL;
    }
    const tl_tensor *in[] = {t, ids, src};
    return tl_run_op(c.op, in, NULL, 3, t->layout.shape, t->layout.ndim, t->dtype,
                     index_add_kernel, &c);
}

/* W t, then R ids, R src (candle's scatter_set order); the backend writes through t's layout. */
static tl_status scatter_in_place(const char *op, tl_tensor *t, const tl_tensor *ids,
                                  const tl_tensor *src, size_t dim, bool add)
{
    char d[TL_DESC_STR];
    tl_status st = check_scatter(op, t, ids, src, &dim);
    if (st == TL_OK)
        st = tl_check_writable(op, t);
    if (st != TL_OK)
        return st;
    if (tl_shares_storage(t, src))
        return tl_fail(TL_ERR_SHARED_STORAGE, "%s: source shares storage with the target %s",
                       op, tl_describe(t, d));
    const tl_backend_i *be = tl_backend_of(t->device);
    if ((st = check_backend(op, t, be->scatter != NULL)) != TL_OK)
        return st;
    const tl_tensor *reads[] = {ids, src};
    if ((st = tl_lock_write(t, op)) != TL_OK)
        return st;
    if ((st = tl_lock_read_all(reads, 2, op)) == TL_OK) {
        tl_operand dst = tl_operand_of(t), oi = tl_operand_of(ids), os = tl_operand_of(src);
        st = be->scatter(&dst, &oi, &os, dim, add);
        tl_unlock_all(reads, 2);
    }
    tl_unlock(t);
    /* The kernel names itself after the out-of-place op it also serves (scatter_add). */
    return st == TL_OK ? st : tl_fail_within(op);
}

tl_status tl_scatter_set(tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim)
{
    return scatter_in_place("scatter_set", t, ids, src, dim, false);
}

tl_status tl_scatter_add_set(tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim)
{
    return scatter_in_place("scatter_add_set", t, ids, src, dim, true);
}
