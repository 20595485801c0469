/*
 * views.c - new handles on the same storage with another layout. Views take no lock: they
 * read only the handle, never the storage's contents. reshape of a non-contiguous tensor is
 * the one exception and copies.
 */
#include <string.h>

#include "backend.h"

/* The handle for layout l on t's storage. */
static tl_tensor *view(const char *op, const tl_tensor *t, const tl_layout *l)
{
    return tl_tensor_wrap(op, t->storage, l);
}

tl_tensor *tl_narrow(const tl_tensor *t, size_t dim, size_t start, size_t len)
{
    const char *op = "narrow";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    if (start > t->layout.shape[dim] || len > t->layout.shape[dim] - start)
        return tl_fail(TL_ERR_RANGE, "%s: start %zu + len %zu exceeds dim %zu of %s", op, start,
                       len, dim, tl_describe(t, d)), NULL;
    tl_layout l = t->layout;
    l.shape[dim] = len;
    l.offset += start * l.stride[dim]; /* as candle's Layout::narrow, also for len 0 */
    return view(op, t, &l);
}

/* candle's squeeze: a dim of size other than 1 leaves the tensor as it is (a new handle). */
tl_tensor *tl_squeeze(const tl_tensor *t, size_t dim)
{
    const char *op = "squeeze";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    tl_layout l = t->layout;
    if (l.shape[dim] == 1) {
        memmove(&l.shape[dim], &l.shape[dim + 1], (l.ndim - dim - 1) * sizeof l.shape[0]);
        memmove(&l.stride[dim], &l.stride[dim + 1], (l.ndim - dim - 1) * sizeof l.stride[0]);
        l.ndim--;
    }
    return view(op, t, &l);
}

tl_tensor *tl_unsqueeze(const tl_tensor *t, size_t dim)
{
    const char *op = "unsqueeze";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK ||
        tl_resolve_dim(op, t, t->layout.ndim + 1, &dim) != TL_OK)
        return NULL;
    if (t->layout.ndim == TL_MAX_DIMS)
        return tl_fail(TL_ERR_RANGE, "%s: cannot insert dim %zu into %s", op, dim,
                       tl_describe(t, d)), NULL;
    tl_layout l = t->layout;
    memmove(&l.shape[dim + 1], &l.shape[dim], (l.ndim - dim) * sizeof l.shape[0]);
    memmove(&l.stride[dim + 1], &l.stride[dim], (l.ndim - dim) * sizeof l.stride[0]);
    l.shape[dim] = 1;
    /* any stride works for a size-1 dim; this one keeps a contiguous tensor contiguous */
    l.stride[dim] = dim < t->layout.ndim ? t->layout.shape[dim] * t->layout.stride[dim] : 1;
    l.ndim++;
    return view(op, t, &l);
}

/* Resolves one TL_INFER entry of shape into out; checks the element count matches. */
static tl_status reshape_target(const char *op, const tl_tensor *t, const size_t *shape,
                                size_t ndim, size_t *out)
{
    char d[TL_DESC_STR], s[TL_SHAPE_STR];
    size_t known = 1, hole = ndim;
    if (ndim > TL_MAX_DIMS || (ndim && !shape))
        return tl_fail(TL_ERR_SHAPE, "%s: bad target shape (%zu dims)", op, ndim);
    for (size_t i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == TL_INFER) {
            if (hole != ndim)
                return tl_fail(TL_ERR_SHAPE, "%s: more than one TL_INFER dim", op);
            hole = i;
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            return tl_fail(TL_ERR_SHAPE, "%s: cannot reshape %s to %s (element count overflows)",
                           op, tl_describe(t, d), tl_shape_str(shape, ndim, s));
        }
    }
    size_t n = tl_elem_count(t);
    if (hole != ndim && known != 0 && n % known == 0)
        out[hole] = n / known;
    if ((hole != ndim && (known == 0 || n % known != 0)) || tl_shape_elems(out, ndim) != n)
        return tl_fail(TL_ERR_SHAPE, "%s: cannot reshape %s to %s", op, tl_describe(t, d),
                       tl_shape_str(shape, ndim, s));
    return TL_OK;
}

tl_tensor *tl_reshape(const tl_tensor *t, const size_t *shape, size_t ndim)
{
    const char *op = "reshape";
    size_t target[TL_MAX_DIMS];
    if (tl_check_tensor(op, t) != TL_OK || reshape_target(op, t, shape, ndim, target) != TL_OK)
        return NULL;
    tl_tensor *src = tl_within(op, tl_contiguous(t));
    if (!src)
        return NULL;
    tl_layout l;
    tl_layout_contiguous(&l, target, ndim, src->layout.offset);
    tl_tensor *out = view(op, src, &l);
    tl_release(src);
    return out;
}

tl_tensor *tl_transpose(const tl_tensor *t, size_t dim1, size_t dim2)
{
    const char *op = "transpose";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim1) != TL_OK ||
        tl_check_dim(op, t, &dim2) != TL_OK)
        return NULL;
    tl_layout l = t->layout;
    l.shape[dim1] = t->layout.shape[dim2];
    l.stride[dim1] = t->layout.stride[dim2];
    l.shape[dim2] = t->layout.shape[dim1];
    l.stride[dim2] = t->layout.stride[dim1];
    return view(op, t, &l);
}

tl_tensor *tl_t(const tl_tensor *t)
{
    char d[TL_DESC_STR];
    if (tl_check_tensor("t", t) != TL_OK)
        return NULL;
    if (t->layout.ndim < 2)
        return tl_fail(TL_ERR_SHAPE, "t: needs at least 2 dims, got %s", tl_describe(t, d)), NULL;
    return tl_transpose(t, t->layout.ndim - 2, t->layout.ndim - 1);
}

tl_tensor *tl_permute(const tl_tensor *t, const size_t *dims, size_t ndim)
{
    const char *op = "permute";
    char d[TL_DESC_STR];
    bool seen[TL_MAX_DIMS] = {false};
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (ndim != t->layout.ndim || (ndim && !dims))
        return tl_fail(TL_ERR_SHAPE, "%s: %zu dims given for %s", op, ndim, tl_describe(t, d)),
               NULL;
    tl_layout l = t->layout;
    for (size_t i = 0; i < ndim; i++) {
        size_t dim = dims[i];
        if (tl_check_dim(op, t, &dim) != TL_OK)
            return NULL;
        if (seen[dim])
            return tl_fail(TL_ERR_RANGE, "%s: dims are not a permutation of 0..%zu", op,
                           ndim - 1), NULL;
        seen[dim] = true;
        l.shape[i] = t->layout.shape[dim];
        l.stride[i] = t->layout.stride[dim];
    }
    return view(op, t, &l);
}

tl_tensor *tl_broadcast_as(const tl_tensor *t, const size_t *shape, size_t ndim)
{
    const char *op = "broadcast_as";
    tl_layout l;
    if (tl_check_tensor(op, t) != TL_OK || tl_shape_check(op, shape, ndim, 1, NULL) != TL_OK ||
        tl_layout_broadcast(op, &t->layout, shape, ndim, &l) != TL_OK)
        return NULL;
    return view(op, t, &l);
}

tl_tensor *tl_broadcast_left(const tl_tensor *t, const size_t *left, size_t nleft)
{
    const char *op = "broadcast_left";
    size_t shape[TL_MAX_DIMS];
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (nleft && !left)
        return tl_fail(TL_ERR_ARG, "%s: left is NULL", op), NULL;
    if (nleft > TL_MAX_DIMS - t->layout.ndim)
        return tl_fail(TL_ERR_SHAPE, "%s: cannot add %zu dims to %zu", op, nleft,
                       t->layout.ndim), NULL;
    if (nleft)
        memcpy(shape, left, nleft * sizeof shape[0]);
    memcpy(shape + nleft, t->layout.shape, t->layout.ndim * sizeof shape[0]);
    return tl_within(op, tl_broadcast_as(t, shape, nleft + t->layout.ndim));
}

/* candle's detach: a new handle (no op history here) on the same storage. */
tl_tensor *tl_detach(const tl_tensor *t)
{
    if (tl_check_tensor("detach", t) != TL_OK)
        return NULL;
    return view("detach", t, &t->layout);
}

tl_tensor *tl_flatten(const tl_tensor *t, size_t start_dim, size_t end_dim)
{
    const char *op = "flatten";
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (t->layout.ndim == 0) /* a scalar flattens to one element */
        return tl_within(op, tl_reshape(t, (size_t[]){1}, 1));
    if (tl_check_dim(op, t, &start_dim) != TL_OK || tl_check_dim(op, t, &end_dim) != TL_OK)
        return NULL;
    if (start_dim >= end_dim) /* candle's flatten leaves t as it is (its clone) */
        return tl_retain((tl_tensor *)t);
    size_t shape[TL_MAX_DIMS], n = 0;
    for (size_t i = 0; i < start_dim; i++)
        shape[n++] = t->layout.shape[i];
    shape[n++] = tl_shape_elems(&t->layout.shape[start_dim], end_dim - start_dim + 1);
    for (size_t i = end_dim + 1; i < t->layout.ndim; i++)
        shape[n++] = t->layout.shape[i];
    return tl_within(op, tl_reshape(t, shape, n));
}

tl_tensor *tl_flatten_all(const tl_tensor *t)
{
    if (tl_check_tensor("flatten_all", t) != TL_OK)
        return NULL;
    return tl_within("flatten_all", tl_flatten(t, 0, t->layout.ndim ? t->layout.ndim - 1 : 0));
}

tl_status tl_chunk(const tl_tensor *t, size_t n, size_t dim, tl_tensor **out, size_t *count)
{
    const char *op = "chunk";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return tl_last_status();
    if (n == 0 || !out || !count)
        return tl_fail(TL_ERR_ARG, "%s: needs n > 0 and out/count buffers", op);
    /* candle's pieces: sizes differ by one at most, the longer first (numpy's array_split);
     * a dim shorter than n gives one piece per element */
    size_t size = t->layout.shape[dim], pieces = size < n ? size : n;
    size_t base = pieces ? size / pieces : 0, longer = pieces ? size % pieces : 0;
    *count = 0;
    for (size_t i = 0, start = 0; i < pieces; i++) {
        size_t len = base + (i < longer);
        tl_tensor *c = tl_narrow(t, dim, start, len);
        start += len;
        if (!c) {
            for (size_t i = 0; i < *count; i++)
                tl_release(out[i]);
            *count = 0;
            return tl_fail_within(op);
        }
        out[(*count)++] = c;
    }
    return TL_OK;
}

tl_tensor *tl_get(const tl_tensor *t, size_t index)
{
    const char *op = "get";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (t->layout.ndim == 0) /* candle's get: a scalar is its own element, whatever the index */
        return tl_retain((tl_tensor *)t);
    if (index >= t->layout.shape[0])
        return tl_fail(TL_ERR_RANGE, "%s: index %zu out of range for %s", op, index,
                       tl_describe(t, d)), NULL;
    tl_layout l = t->layout;
    l.offset += index * l.stride[0];
    memmove(&l.shape[0], &l.shape[1], (l.ndim - 1) * sizeof l.shape[0]);
    memmove(&l.stride[0], &l.stride[1], (l.ndim - 1) * sizeof l.stride[0]);
    l.ndim--;
    return view(op, t, &l);
}
