/*
 * tensor.c - tensor handles: reference counting, queries, argument checks, and the two ways
 * a tensor comes to be (a new handle on existing storage, or fresh storage).
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"

tl_tensor *tl_tensor_wrap(const char *op, tl_storage *s, const tl_layout *l)
{
    tl_tensor *t = tl_malloc(sizeof *t);
    if (!t) {
        tl_fail_nomem(op, sizeof *t);
        return NULL;
    }
    atomic_init(&t->refcount, 1);
    tl_storage_retain(s);
    t->storage = s;
    t->layout = *l;
    t->dtype = s->dtype;
    t->device = s->device;
    return t;
}

tl_tensor *tl_tensor_empty(const char *op, const size_t *shape, size_t ndim, tl_dtype dtype,
                           tl_device device)
{
    tl_storage *s = tl_storage_new(op, device, dtype, shape, ndim);
    if (!s)
        return NULL;
    tl_layout l;
    tl_layout_contiguous(&l, shape, ndim, 0);
    tl_tensor *t = tl_tensor_wrap(op, s, &l);
    tl_storage_release(s); /* the handle holds it now, or nobody does */
    return t;
}

tl_operand tl_operand_of(const tl_tensor *t)
{
    return (tl_operand){.buf = t->storage->buf, .layout = &t->layout, .dtype = t->dtype};
}

tl_tensor *tl_retain(tl_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

void tl_release(tl_tensor *t)
{
    if (!t || atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1)
        return;
    tl_storage_release(t->storage);
    free(t);
}

tl_tensor *tl_clone(tl_tensor *t)
{
    if (tl_check_tensor("clone", t) != TL_OK)
        return NULL;
    return tl_retain(t);
}

/* Queries accept NULL and answer as for an empty scalar, so they never crash. */
size_t tl_ndim(const tl_tensor *t) { return t ? t->layout.ndim : 0; }
const size_t *tl_shape(const tl_tensor *t) { return t ? t->layout.shape : NULL; }
const size_t *tl_strides(const tl_tensor *t) { return t ? t->layout.stride : NULL; }
size_t tl_offset(const tl_tensor *t) { return t ? t->layout.offset : 0; }
size_t tl_elem_count(const tl_tensor *t) { return t ? tl_layout_elems(&t->layout) : 0; }
tl_dtype tl_dtype_of(const tl_tensor *t) { return t ? t->dtype : TL_DTYPE_COUNT; }
tl_device tl_device_of(const tl_tensor *t) { return t ? t->device : TL_CPU; }
bool tl_is_contiguous(const tl_tensor *t) { return t && tl_layout_is_contiguous(&t->layout); }

bool tl_shares_storage(const tl_tensor *a, const tl_tensor *b)
{
    return a && b && a->storage == b->storage;
}

const char *tl_describe(const tl_tensor *t, char *buf)
{
    char shape[TL_SHAPE_STR];
    snprintf(buf, TL_DESC_STR, "%s%s", tl_dtype_name(t->dtype),
             tl_shape_str(t->layout.shape, t->layout.ndim, shape));
    return buf;
}

tl_status tl_check_tensor(const char *op, const tl_tensor *t)
{
    return t ? TL_OK : tl_fail(TL_ERR_ARG, "%s: tensor argument is NULL", op);
}

tl_status tl_check_same(const char *op, const tl_tensor *a, const tl_tensor *b)
{
    char da[TL_DESC_STR], db[TL_DESC_STR];
    if (tl_check_tensor(op, a) != TL_OK || tl_check_tensor(op, b) != TL_OK)
        return TL_ERR_ARG;
    if (a->device != b->device)
        return tl_fail(TL_ERR_DEVICE, "%s: operands on different devices (%s and %s)", op,
                       tl_device_name(a->device), tl_device_name(b->device));
    if (a->dtype != b->dtype)
        return tl_fail(TL_ERR_DTYPE, "%s: dtype mismatch (%s and %s)", op, tl_describe(a, da),
                       tl_describe(b, db));
    return TL_OK;
}

tl_status tl_resolve_dim(const char *op, const tl_tensor *t, size_t rank, size_t *dim)
{
    char d[TL_DESC_STR];
    size_t back = 0 - *dim; /* how far from the end a negative dim counts */
    if (*dim < rank)
        return TL_OK;
    if (back >= 1 && back <= rank) { /* dim 0 of a scalar is no dim: back is 0 there */
        *dim = rank - back;
        return TL_OK;
    }
    if (back >= 1 && back <= TL_MAX_DIMS + 1) /* dim 0 is not "-0" */
        return tl_fail(TL_ERR_RANGE, "%s: dim -%zu out of range for %s", op, back,
                       tl_describe(t, d));
    return tl_fail(TL_ERR_RANGE, "%s: dim %zu out of range for %s", op, *dim, tl_describe(t, d));
}

tl_status tl_check_dim(const char *op, const tl_tensor *t, size_t *dim)
{
    return tl_resolve_dim(op, t, t->layout.ndim, dim);
}

tl_status tl_check_float(const char *op, const tl_tensor *t)
{
    char d[TL_DESC_STR];
    if (tl_dtype_is_float(t->dtype))
        return TL_OK;
    return tl_fail(TL_ERR_DTYPE, "%s: needs a float dtype, got %s", op, tl_describe(t, d));
}

tl_status tl_check_writable(const char *op, const tl_tensor *t)
{
    char d[TL_DESC_STR];
    if (tl_layout_elems(&t->layout) == 0) /* writes nothing; contiguous strides may be 0 */
        return TL_OK;
    for (size_t i = 0; i < t->layout.ndim; i++)
        if (t->layout.stride[i] == 0 && t->layout.shape[i] > 1)
            return tl_fail(TL_ERR_ARG, "%s: target %s is a broadcast view (dim %zu repeats one "
                           "element), so what it writes would depend on the order", op,
                           tl_describe(t, d), i);
    return TL_OK;
}
