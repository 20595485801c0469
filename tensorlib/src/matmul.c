/*
 * matmul.c - tl_matmul: [..., m, k] @ [..., k, n] -> [..., m, n], batched over equal leading
 * dims (candle's Tensor::matmul). Read locks: a, then b. Also candle's broadcast_matmul, mv
 * and dot, built on it and on the elementwise ops as candle builds them.
 */
#include <string.h>

#include "backend.h"

#define OP "matmul"

static tl_status matmul_shape(const tl_tensor *a, const tl_tensor *b, size_t *shape)
{
    const tl_layout *la = &a->layout, *lb = &b->layout;
    char da[TL_DESC_STR], db[TL_DESC_STR];
    size_t nd = la->ndim;
    if (nd < 2 || lb->ndim != nd)
        return tl_fail(TL_ERR_SHAPE, "%s: needs two operands of one rank >= 2, got %s @ %s", OP,
                       tl_describe(a, da), tl_describe(b, db));
    for (size_t d = 0; d + 2 < nd; d++)
        if (la->shape[d] != lb->shape[d])
            return tl_fail(TL_ERR_SHAPE, "%s: batch dims differ in %s @ %s", OP,
                           tl_describe(a, da), tl_describe(b, db));
    if (la->shape[nd - 1] != lb->shape[nd - 2])
        return tl_fail(TL_ERR_SHAPE, "%s: inner dims differ (%zu vs %zu) in %s @ %s", OP,
                       la->shape[nd - 1], lb->shape[nd - 2], tl_describe(a, da),
                       tl_describe(b, db));
    for (size_t d = 0; d < nd; d++)
        shape[d] = la->shape[d];
    shape[nd - 1] = lb->shape[nd - 1];
    return TL_OK;
}

static tl_status matmul_kernel(const tl_backend_i *be, const tl_operand *dst,
                               const tl_operand *args, const void *ctx)
{
    (void)ctx;
    return be->matmul(dst, &args[0], &args[1]);
}

tl_tensor *tl_matmul(const tl_tensor *a, const tl_tensor *b)
{
    size_t shape[TL_MAX_DIMS];
    if (tl_check_same(OP, a, b) != TL_OK || matmul_shape(a, b, shape) != TL_OK)
        return NULL;
    if (!tl_backend_of(a->device)->matmul)
        return tl_fail_unsupported(OP, a->device), NULL;
    const tl_tensor *in[] = {a, b};
    return tl_run_op(OP, in, NULL, 2, shape, a->layout.ndim, a->dtype, matmul_kernel, NULL);
}

/* candle's broadcast_matmul: the leading (batch) dims of a and b broadcast numpy-style, then
 * matmul on the broadcast views (stride 0 on repeated batches: nothing is copied). */
tl_tensor *tl_broadcast_matmul(const tl_tensor *a, const tl_tensor *b)
{
    const char *op = "broadcast_matmul";
    char da[TL_DESC_STR], db[TL_DESC_STR];
    if (tl_check_same(op, a, b) != TL_OK)
        return NULL;
    const tl_layout *la = &a->layout, *lb = &b->layout;
    if (la->ndim < 2 || lb->ndim < 2 || la->shape[la->ndim - 1] != lb->shape[lb->ndim - 2])
        return tl_fail(TL_ERR_SHAPE, "%s: needs operands of rank >= 2 with matching inner dims, "
                       "got %s @ %s", op, tl_describe(a, da), tl_describe(b, db)), NULL;
    tl_layout ba = {.ndim = la->ndim - 2}, bb = {.ndim = lb->ndim - 2};
    memcpy(ba.shape, la->shape, ba.ndim * sizeof ba.shape[0]);
    memcpy(bb.shape, lb->shape, bb.ndim * sizeof bb.shape[0]);
    size_t sa[TL_MAX_DIMS], sb[TL_MAX_DIMS], n;
    if (tl_broadcast_shape(op, &ba, &bb, sa, &n) != TL_OK)
        return NULL;
    memcpy(sb, sa, n * sizeof sa[0]);
    sa[n] = la->shape[la->ndim - 2], sa[n + 1] = la->shape[la->ndim - 1];
    sb[n] = lb->shape[lb->ndim - 2], sb[n + 1] = lb->shape[lb->ndim - 1];
    tl_tensor *va = tl_broadcast_as(a, sa, n + 2), *vb = va ? tl_broadcast_as(b, sb, n + 2) : NULL;
    tl_tensor *out = vb ? tl_matmul(va, vb) : NULL;
    tl_release(va);
    tl_release(vb);
    return tl_within(op, out);
}

/* candle's mv: [m, k] @ [k] -> [m], a matmul with b as a column. */
tl_tensor *tl_mv(const tl_tensor *a, const tl_tensor *b)
{
    const char *op = "mv";
    char da[TL_DESC_STR], db[TL_DESC_STR];
    if (tl_check_same(op, a, b) != TL_OK)
        return NULL;
    if (a->layout.ndim != 2 || b->layout.ndim != 1 || a->layout.shape[1] != b->layout.shape[0])
        return tl_fail(TL_ERR_SHAPE, "%s: needs [m, k] and [k], got %s and %s", op,
                       tl_describe(a, da), tl_describe(b, db)), NULL;
    tl_tensor *col = tl_unsqueeze(b, 1), *r = col ? tl_matmul(a, col) : NULL;
    tl_tensor *out = r ? tl_squeeze(r, 1) : NULL;
    tl_release(col);
    tl_release(r);
    return tl_within(op, out);
}

/* candle's dot: sum(a * b) of two 1-D tensors of one length, a 0-d tensor (products in the
 * dtype, then summed as tl_reduce sums). */
tl_tensor *tl_dot(const tl_tensor *a, const tl_tensor *b)
{
    const char *op = "dot";
    char da[TL_DESC_STR], db[TL_DESC_STR];
    if (tl_check_same(op, a, b) != TL_OK)
        return NULL;
    if (a->layout.ndim != 1 || b->layout.ndim != 1 || a->layout.shape[0] != b->layout.shape[0])
        return tl_fail(TL_ERR_SHAPE, "%s: needs two 1-D tensors of one length, got %s and %s",
                       op, tl_describe(a, da), tl_describe(b, db)), NULL;
    tl_tensor *p = tl_mul(a, b), *out = p ? tl_reduce(TL_SUM, p, NULL, 0, false) : NULL;
    tl_release(p);
    return tl_within(op, out);
}
