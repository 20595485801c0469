/*
 * layout_args.h - turns tensorlib views (shape, strides and offset in elements) into the
 * argument structs of kernels.h: 32-bit layouts, broadcasting to an output shape, and the
 * kept/reduced split of reductions and softmax. Plain C, unit-tested on every platform.
 *
 * Every function returns false when a view does not fit the kernels' 32-bit indexing (an
 * element index past UINT32_MAX, more than TLK_MAX_DIMS dims) or the shapes do not match;
 * the backend turns that into an error naming the op.
 */
#ifndef TL_METAL_LAYOUT_ARGS_H
#define TL_METAL_LAYOUT_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels.h"
#include "tl.h"

/* v as it is. */
bool tlm_layout(const tl_view *v, tlk_layout *out);

/* v right-aligned to shape[ndim], numpy style: stride 0 on dims v lacks or has as 1. */
bool tlm_layout_broadcast(const tl_view *v, const size_t *shape, size_t ndim, tlk_layout *out);

/* A contiguous layout of shape[ndim] at offset 0. */
bool tlm_layout_contiguous(const size_t *shape, size_t ndim, tlk_layout *out);

/* Reduction of src over the dims with reduce[d] true. */
bool tlm_reduce_args(const tl_view *src, const bool *reduce, tlk_reduce_args *args);

/* Softmax of src along dim into a contiguous output of src's shape. */
bool tlm_softmax_args(const tl_view *src, size_t dim, tlk_softmax_args *args);

/* a [..., m, k] @ b [..., k, n], leading dims equal. */
bool tlm_matmul_args(const tl_view *a, const tl_view *b, tlk_matmul_args *args);

/* index_select (ids 1-D) and gather (ids of src's rank) along dim. */
bool tlm_index_select_args(const tl_view *src, const tl_view *ids, size_t dim, tlk_index_args *args);
bool tlm_gather_args(const tl_view *src, const tl_view *ids, size_t dim, tlk_index_args *args);

#endif
