/*
 * layout.c - shapes, strides and the strided element iterator. Pure arithmetic on layouts:
 * no storage, no locks, no device memory.
 */
#include <stdio.h>
#include <string.h>

#include "tl_internal.h"

size_t tl_shape_elems(const size_t *shape, size_t ndim)
{
    size_t n = 1;
    for (size_t i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

tl_status tl_shape_check(const char *op, const size_t *shape, size_t ndim, size_t elem_size,
                         size_t *nbytes)
{
    if (ndim > TL_MAX_DIMS)
        return tl_fail(TL_ERR_SHAPE, "%s: %zu dims, at most %d supported", op, ndim, TL_MAX_DIMS);
    if (ndim > 0 && !shape)
        return tl_fail(TL_ERR_ARG, "%s: shape is NULL", op);
    size_t n = elem_size;
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] != 0 && n > SIZE_MAX / shape[i]) {
            char buf[TL_SHAPE_STR];
            return tl_fail(TL_ERR_RANGE, "%s: shape %s is too large", op,
                           tl_shape_str(shape, ndim, buf));
        }
        n *= shape[i];
    }
    if (nbytes)
        *nbytes = n;
    return TL_OK;
}

void tl_layout_contiguous(tl_layout *l, const size_t *shape, size_t ndim, size_t offset)
{
    size_t stride = 1;
    l->ndim = ndim;
    l->offset = offset;
    for (size_t i = ndim; i-- > 0;) {
        l->shape[i] = shape[i];
        l->stride[i] = stride;
        stride *= shape[i];
    }
}

bool tl_layout_is_contiguous(const tl_layout *l)
{
    size_t expect = 1;
    for (size_t i = l->ndim; i-- > 0;) {
        if (l->shape[i] != 1 && l->stride[i] != expect)
            return false;
        expect *= l->shape[i];
    }
    return true;
}

bool tl_layout_follow_order(tl_layout *out, const tl_layout *in)
{
    size_t order[TL_MAX_DIMS], n = 0;
    for (size_t d = 0; d < in->ndim; d++) {
        if (in->shape[d] == 0)
            return false;
        if (in->shape[d] == 1)
            continue;
        size_t at = n++; /* insertion sort by stride, largest first */
        while (at > 0 && in->stride[order[at - 1]] < in->stride[d]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = d;
    }
    tl_layout_contiguous(out, in->shape, in->ndim, 0);
    size_t stride = 1;
    for (size_t i = n; i-- > 0;) {
        if (in->stride[order[i]] != stride) /* a gap, an overlap or a broadcast */
            return false;
        out->stride[order[i]] = stride;
        stride *= in->shape[order[i]];
    }
    return true;
}

bool tl_same_shape(const tl_layout *a, const tl_layout *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, a->ndim * sizeof a->shape[0]) == 0;
}

size_t tl_layout_elems(const tl_layout *l)
{
    return tl_shape_elems(l->shape, l->ndim);
}

tl_status tl_broadcast_shape(const char *op, const tl_layout *a, const tl_layout *b,
                             size_t *out, size_t *out_ndim)
{
    size_t n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (size_t i = 0; i < n; i++) {
        /* right-aligned: dim i of the result is dim i-(n-ndim) of each operand */
        size_t da = i + a->ndim >= n ? a->shape[i + a->ndim - n] : 1;
        size_t db = i + b->ndim >= n ? b->shape[i + b->ndim - n] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[TL_SHAPE_STR], sb[TL_SHAPE_STR];
            return tl_fail(TL_ERR_SHAPE, "%s: shapes %s and %s do not broadcast", op,
                           tl_shape_str(a->shape, a->ndim, sa),
                           tl_shape_str(b->shape, b->ndim, sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *out_ndim = n;
    return TL_OK;
}

tl_status tl_layout_broadcast(const char *op, const tl_layout *src, const size_t *shape,
                              size_t ndim, tl_layout *out)
{
    char ss[TL_SHAPE_STR], ds[TL_SHAPE_STR];
    if (ndim > TL_MAX_DIMS || ndim < src->ndim)
        goto bad;
    tl_layout r = {.ndim = ndim, .offset = src->offset};
    size_t lead = ndim - src->ndim;
    for (size_t i = 0; i < ndim; i++) {
        r.shape[i] = shape[i];
        if (i < lead) {
            r.stride[i] = 0;
        } else if (src->shape[i - lead] == shape[i]) {
            r.stride[i] = src->stride[i - lead];
        } else if (src->shape[i - lead] == 1) {
            r.stride[i] = 0;
        } else {
            goto bad;
        }
    }
    *out = r;
    return TL_OK;
bad:
    return tl_fail(TL_ERR_SHAPE, "%s: cannot broadcast shape %s to %s", op,
                   tl_shape_str(src->shape, src->ndim, ss), tl_shape_str(shape, ndim, ds));
}

/* A size at most 2^31 below 2^64 is shown as the negative int it was written as: TL_INFER (a
 * reshape's hole) is "-1", and a -3 a caller converted to size_t reads "-3", not 2^64 - 3.
 * Every other size, 2^63 and the rest past PTRDIFF_MAX included, is the number it is. */
#define NEGATIVE_SHOWN ((size_t)1 << 31)
const char *tl_shape_str(const size_t *shape, size_t ndim, char *buf)
{
    size_t len = 0, cap = TL_SHAPE_STR;
    buf[len++] = '[';
    for (size_t i = 0; i < ndim && i < TL_MAX_DIMS; i++)
        len += 0 - shape[i] <= NEGATIVE_SHOWN && shape[i] != 0
                   ? (size_t)snprintf(buf + len, cap - len, i ? ", -%zu" : "-%zu", 0 - shape[i])
                   : (size_t)snprintf(buf + len, cap - len, i ? ", %zu" : "%zu", shape[i]);
    snprintf(buf + len, cap - len, "]");
    return buf;
}

/* Can dims d and d+1 be walked as one for every operand? */
static bool mergeable(const tl_iter *it, size_t d)
{
    for (size_t k = 0; k < it->n; k++)
        if (it->stride[k][d] != it->stride[k][d + 1] * it->shape[d + 1])
            return false;
    return true;
}

bool tl_iter_init(tl_iter *it, const size_t *shape, size_t ndim, const tl_layout *const *layouts,
                  size_t n)
{
    memset(it, 0, sizeof *it);
    it->n = n;
    size_t nd = 0;
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] == 0)
            return false;
        if (shape[d] == 1) /* contributes no movement */
            continue;
        it->shape[nd] = shape[d];
        for (size_t k = 0; k < n; k++)
            it->stride[k][nd] = layouts[k]->stride[d];
        if (nd > 0 && mergeable(it, nd - 1)) {
            it->shape[nd - 1] *= shape[d];
            for (size_t k = 0; k < n; k++)
                it->stride[k][nd - 1] = layouts[k]->stride[d];
        } else {
            nd++;
        }
    }
    for (size_t k = 0; k < n; k++) {
        it->off[k] = layouts[k]->offset;
        it->step[k] = nd ? it->stride[k][nd - 1] : 0;
    }
    it->inner = nd ? it->shape[nd - 1] : 1;
    it->outer = nd ? nd - 1 : 0;
    return true;
}

bool tl_iter_init_dst_order(tl_iter *it, const size_t *shape, size_t ndim,
                            const tl_layout *const *layouts, size_t n)
{
    size_t order[TL_MAX_DIMS];
    for (size_t d = 0; d < ndim; d++) { /* stable insertion sort, largest stride first */
        size_t at = d;
        while (at > 0 && layouts[0]->stride[order[at - 1]] < layouts[0]->stride[d]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = d;
    }
    tl_layout sorted[TL_ITER_MAX];
    const tl_layout *ptrs[TL_ITER_MAX];
    size_t sorted_shape[TL_MAX_DIMS];
    for (size_t k = 0; k < n; k++) {
        sorted[k] = *layouts[k];
        for (size_t d = 0; d < ndim; d++)
            sorted[k].stride[d] = layouts[k]->stride[order[d]];
        ptrs[k] = &sorted[k];
    }
    for (size_t d = 0; d < ndim; d++)
        sorted_shape[d] = shape[order[d]];
    return tl_iter_init(it, sorted_shape, ndim, ptrs, n);
}

bool tl_iter_next(tl_iter *it)
{
    for (size_t d = it->outer; d-- > 0;) {
        for (size_t k = 0; k < it->n; k++)
            it->off[k] += it->stride[k][d];
        if (++it->idx[d] < it->shape[d])
            return true;
        for (size_t k = 0; k < it->n; k++)
            it->off[k] -= it->stride[k][d] * it->shape[d];
        it->idx[d] = 0;
    }
    return false;
}
