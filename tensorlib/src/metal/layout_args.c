/*
 * layout_args.c - tensorlib views to kernels.h argument structs. The kernels index with
 * 32-bit integers (cheaper on the GPU, and what Metal's thread positions are), so every view
 * is checked once here: its element count and its largest reachable element index must fit.
 */
#include "layout_args.h"

#include <stdint.h>

/* kernels.h's promise that C and MSL lay these out alike: 4-byte fields, no padding. */
#define WORDS(n) ((n) * sizeof(uint32_t))
_Static_assert(sizeof(tlk_layout) == WORDS(2 + 2 * TLK_MAX_DIMS), "tlk_layout");
_Static_assert(sizeof(tlk_fill_args) == WORDS(4) + sizeof(tlk_layout), "tlk_fill_args");
_Static_assert(sizeof(tlk_copy_args) == WORDS(1) + 2 * sizeof(tlk_layout), "tlk_copy_args");
_Static_assert(sizeof(tlk_map_args) == WORDS(3) + sizeof(tlk_layout), "tlk_map_args");
_Static_assert(sizeof(tlk_binary_args) == WORDS(1) + 2 * sizeof(tlk_layout), "tlk_binary_args");
_Static_assert(sizeof(tlk_where_args) == WORDS(1) + 3 * sizeof(tlk_layout), "tlk_where_args");
_Static_assert(sizeof(tlk_reduce_args) == WORDS(2) + 2 * sizeof(tlk_layout), "tlk_reduce_args");
_Static_assert(sizeof(tlk_softmax_args) == WORDS(4) + 2 * sizeof(tlk_layout), "tlk_softmax_args");
_Static_assert(sizeof(tlk_matmul_args) == WORDS(8) + 2 * sizeof(tlk_layout), "tlk_matmul_args");
_Static_assert(sizeof(tlk_index_args) == WORDS(3) + 3 * sizeof(tlk_layout), "tlk_index_args");

/* Builds out from explicit dims, checking the 32-bit limits. */
static bool make_layout(size_t ndim, const size_t *shape, const size_t *stride, size_t offset,
                        tlk_layout *out)
{
    if (ndim > TLK_MAX_DIMS || offset > UINT32_MAX)
        return false;
    uint64_t last = offset, count = 1;
    *out = (tlk_layout){.ndim = (uint32_t)ndim, .offset = (uint32_t)offset};
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] > UINT32_MAX || stride[d] > UINT32_MAX)
            return false;
        out->shape[d] = (uint32_t)shape[d];
        out->stride[d] = (uint32_t)stride[d];
        count *= shape[d];
        if (shape[d] > 0)
            last += (uint64_t)(shape[d] - 1) * stride[d];
        if (count > UINT32_MAX || last > UINT32_MAX)
            return false;
    }
    return true;
}

bool tlm_layout(const tl_view *v, tlk_layout *out)
{
    return make_layout(v->ndim, v->shape, v->strides, v->offset, out);
}

bool tlm_layout_broadcast(const tl_view *v, const size_t *shape, size_t ndim, tlk_layout *out)
{
    if (v->ndim > ndim || ndim > TLK_MAX_DIMS)
        return false;
    size_t stride[TLK_MAX_DIMS], lead = ndim - v->ndim;
    for (size_t d = 0; d < ndim; d++) {
        if (d < lead || (v->shape[d - lead] == 1 && shape[d] != 1))
            stride[d] = 0;
        else if (v->shape[d - lead] == shape[d])
            stride[d] = v->strides[d - lead];
        else
            return false;
    }
    return make_layout(ndim, shape, stride, v->offset, out);
}

static void contiguous_strides(const size_t *shape, size_t ndim, size_t *stride)
{
    size_t s = 1;
    for (size_t d = ndim; d-- > 0;) {
        stride[d] = s;
        s *= shape[d];
    }
}

bool tlm_layout_contiguous(const size_t *shape, size_t ndim, tlk_layout *out)
{
    size_t stride[TLK_MAX_DIMS];
    if (ndim > TLK_MAX_DIMS)
        return false;
    contiguous_strides(shape, ndim, stride);
    return make_layout(ndim, shape, stride, 0, out);
}

/* Copies the dims of src where pick[d] == want into out (shape and strides), returning how
 * many and the product of their sizes. */
static size_t pick_dims(const tlk_layout *src, const bool *pick, bool want, tlk_layout *out, uint32_t *count)
{
    size_t n = 0;
    *count = 1;
    for (uint32_t d = 0; d < src->ndim; d++) {
        if (pick[d] != want)
            continue;
        out->shape[n] = src->shape[d];
        out->stride[n] = src->stride[d];
        *count *= src->shape[d];
        n++;
    }
    out->ndim = (uint32_t)n;
    return n;
}

bool tlm_reduce_args(const tl_view *src, const bool *reduce, tlk_reduce_args *args)
{
    tlk_layout l;
    if (!tlm_layout(src, &l))
        return false;
    *args = (tlk_reduce_args){0};
    pick_dims(&l, reduce, false, &args->kept, &args->out_n);
    pick_dims(&l, reduce, true, &args->reduced, &args->reduced_n);
    args->kept.offset = l.offset;
    return true;
}

bool tlm_softmax_args(const tl_view *src, size_t dim, tlk_softmax_args *args)
{
    size_t dst_stride[TLK_MAX_DIMS];
    bool only[TLK_MAX_DIMS] = {false};
    tlk_layout l, dst;
    if (dim >= src->ndim || !tlm_layout(src, &l))
        return false;
    contiguous_strides(src->shape, src->ndim, dst_stride);
    if (!make_layout(src->ndim, src->shape, dst_stride, 0, &dst))
        return false;
    only[dim] = true;
    *args = (tlk_softmax_args){.len = l.shape[dim], .src_stride = l.stride[dim],
                               .dst_stride = dst.stride[dim]};
    pick_dims(&l, only, false, &args->kept_src, &args->rows);
    pick_dims(&dst, only, false, &args->kept_dst, &args->rows);
    args->kept_src.offset = l.offset;
    return true;
}

bool tlm_matmul_args(const tl_view *a, const tl_view *b, tlk_matmul_args *args)
{
    size_t nd = a->ndim;
    tlk_layout la, lb;
    if (nd < 2 || b->ndim != nd || a->shape[nd - 1] != b->shape[nd - 2])
        return false;
    for (size_t d = 0; d + 2 < nd; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    if (!tlm_layout(a, &la) || !tlm_layout(b, &lb))
        return false;
    *args = (tlk_matmul_args){.m = la.shape[nd - 2], .n = lb.shape[nd - 1], .k = la.shape[nd - 1],
                              .a_row_stride = la.stride[nd - 2], .a_col_stride = la.stride[nd - 1],
                              .b_row_stride = lb.stride[nd - 2], .b_col_stride = lb.stride[nd - 1]};
    bool matrix_dim[TLK_MAX_DIMS] = {false};
    matrix_dim[nd - 2] = matrix_dim[nd - 1] = true;
    pick_dims(&la, matrix_dim, false, &args->a_batch, &args->batch);
    pick_dims(&lb, matrix_dim, false, &args->b_batch, &args->batch);
    args->a_batch.offset = la.offset;
    args->b_batch.offset = lb.offset;
    return true;
}

/* The parts index_select and gather share: src and ids layouts, output layout of shape. */
static bool index_args(const tl_view *src, const tl_view *ids, size_t dim, const size_t *out_shape,
                       tlk_index_args *args)
{
    *args = (tlk_index_args){.dim = (uint32_t)dim};
    if (dim >= src->ndim || !tlm_layout(src, &args->src) || !tlm_layout(ids, &args->ids) ||
        !tlm_layout_contiguous(out_shape, src->ndim, &args->out))
        return false;
    args->dim_size = args->src.shape[dim];
    args->n = 1;
    for (size_t d = 0; d < src->ndim; d++)
        args->n *= args->out.shape[d];
    return true;
}

bool tlm_index_select_args(const tl_view *src, const tl_view *ids, size_t dim, tlk_index_args *args)
{
    size_t shape[TLK_MAX_DIMS];
    if (ids->ndim != 1 || src->ndim > TLK_MAX_DIMS || dim >= src->ndim)
        return false;
    for (size_t d = 0; d < src->ndim; d++)
        shape[d] = d == dim ? ids->shape[0] : src->shape[d];
    return index_args(src, ids, dim, shape, args);
}

bool tlm_gather_args(const tl_view *src, const tl_view *ids, size_t dim, tlk_index_args *args)
{
    if (ids->ndim != src->ndim || dim >= src->ndim)
        return false;
    /* ids smaller than src outside dim is candle's rule: the kernel reads src at the output's
     * coordinates */
    for (size_t d = 0; d < src->ndim; d++)
        if (d != dim && ids->shape[d] > src->shape[d])
            return false;
    return index_args(src, ids, dim, ids->shape, args);
}
