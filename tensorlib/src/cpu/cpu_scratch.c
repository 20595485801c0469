/*
 * cpu_scratch.c - contiguous working copies for the heavy cpu kernels. BLAS, im2col and the
 * index kernels want row-major memory of one dtype; these helpers hand out the operand's own
 * memory when it already is that and otherwise copy through the cpu copy member, so every
 * kernel accepts strided, offset, broadcast and f16/bf16 operands.
 */
#include <stdlib.h>

#include "cpu_heavy.h"

tl_status tl_cpu_contiguous(const char *op, const tl_operand *o, tl_dtype dtype,
                            const void **data, void **owned)
{
    const tl_layout *l = o->layout;
    size_t es = tl_dtype_size(dtype);
    *owned = NULL;
    if (o->dtype == dtype && tl_layout_is_contiguous(l)) {
        *data = (const char *)o->buf + l->offset * es;
        return TL_OK;
    }
    size_t nbytes;
    tl_status st = tl_shape_check(op, l->shape, l->ndim, es, &nbytes);
    if (st != TL_OK) /* a broadcast view may hold more elements than memory has bytes */
        return st;
    void *buf = tl_malloc(nbytes);
    if (!buf)
        return tl_fail_nomem(op, nbytes);
    tl_layout cl;
    tl_layout_contiguous(&cl, l->shape, l->ndim, 0);
    tl_operand copy = {buf, &cl, dtype};
    st = tl_cpu_copy(&copy, o);
    if (st != TL_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *owned = buf;
    return TL_OK;
}

tl_dtype tl_cpu_compute_dtype(tl_dtype dtype)
{
    return dtype == TL_F64 ? TL_F64 : TL_F32;
}

tl_status tl_cpu_store_contiguous(const tl_operand *dst, const void *src, tl_dtype dtype)
{
    const tl_layout *l = dst->layout;
    tl_layout cl;
    tl_layout_contiguous(&cl, l->shape, l->ndim, 0);
    tl_operand from = {(void *)src, &cl, dtype};
    return tl_cpu_copy(dst, &from);
}
