/*
 * cpu_indexing.c - index_select, gather, scatter (set and add) and index_add on the cpu.
 * Sources and index tensors are first made contiguous (cpu_scratch.c), so the kernels are
 * row-major walks. Every index is range-checked before anything is written: an in-place
 * scatter that fails leaves its target untouched. An index equal to its dtype's maximum (u8
 * 255, u32 4294967295, i64 2^63 - 1, ...) addresses nothing, as in candle (#2940): it reads
 * as 0 in index_select and gather and is skipped by scatter and index_add. The writing kernels address the target
 * through its own layout, so a strided or offset target is updated in place.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_heavy.h"

/* Index i of an index array. A negative i64 reads as huge, so it fails every range check. */
static uint64_t index_at(const tl_operand *ids, const void *data, size_t i)
{
    return (uint64_t)tl_load_i64(ids->dtype, data, i);
}

/* candle's "no index" marker: the index dtype's largest value. */
static bool index_none(const tl_operand *ids, uint64_t v)
{
    int64_t lo = 0, hi = 0;
    tl_int_range(ids->dtype, &lo, &hi);
    return v == (uint64_t)hi;
}

/* The elements before dim (outer) and after it (inner) of a shape. */
static void split_at(const tl_layout *l, size_t dim, size_t *outer, size_t *inner)
{
    *outer = tl_shape_elems(l->shape, dim);
    *inner = tl_shape_elems(l->shape + dim + 1, l->ndim - dim - 1);
}

/* Every index must address a slice of `target` (the indexed tensor's layout) along dim. */
static tl_status check_ids(const char *op, const tl_operand *ids, const void *data,
                           const tl_layout *target, size_t dim)
{
    size_t count = tl_layout_elems(ids->layout), limit = target->shape[dim];
    char shape[TL_SHAPE_STR];
    for (size_t i = 0; i < count; i++) {
        uint64_t v = index_at(ids, data, i);
        if (v >= limit && !index_none(ids, v))
            return tl_fail(TL_ERR_RANGE, "%s: index %lld out of range for dim %zu of %s", op,
                           (long long)(int64_t)v, dim,
                           tl_shape_str(target->shape, target->ndim, shape));
    }
    return TL_OK;
}

/* Contiguous copies of a source (in its own dtype) and of checked indexes. */
typedef struct index_args {
    const void *src, *ids;
    void *owned_src, *owned_ids;
} index_args;

static tl_status index_args_get(const char *op, const tl_operand *src, const tl_operand *ids,
                                const tl_layout *target, size_t dim, index_args *a)
{
    a->owned_src = a->owned_ids = NULL;
    tl_status st = tl_cpu_contiguous(op, ids, ids->dtype, &a->ids, &a->owned_ids);
    if (st == TL_OK)
        st = check_ids(op, ids, a->ids, target, dim);
    if (st == TL_OK)
        st = tl_cpu_contiguous(op, src, src->dtype, &a->src, &a->owned_src);
    return st;
}

static void index_args_free(index_args *a)
{
    free(a->owned_src);
    free(a->owned_ids);
}

tl_status tl_cpu_index_select(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                              size_t dim)
{
    size_t n = src->layout->shape[dim], m = tl_layout_elems(ids->layout), outer, inner;
    index_args a;
    tl_status st = index_args_get("index_select", src, ids, src->layout, dim, &a);
    if (st == TL_OK) {
        split_at(src->layout, dim, &outer, &inner);
        size_t block = inner * tl_dtype_size(src->dtype);
        char *d = (char *)dst->buf + dst->layout->offset * tl_dtype_size(dst->dtype);
        for (size_t o = 0; o < outer; o++)
            for (size_t j = 0; j < m; j++, d += block) {
                uint64_t id = index_at(ids, a.ids, j);
                if (index_none(ids, id))
                    memset(d, 0, block);
                else
                    memcpy(d, (const char *)a.src + (o * n + id) * block, block);
            }
    }
    index_args_free(&a);
    return st;
}

/* ids may be smaller than src on the dims but dim (candle's rule, torch's meaning): output
 * element p reads src at p with p[dim] replaced by ids[p], so the walk over ids' shape keeps
 * p's offset in the contiguous source (`at`, dim's term left out) as it goes. */
tl_status tl_cpu_gather(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                        size_t dim)
{
    const tl_layout *il = ids->layout;
    size_t count = tl_layout_elems(il), nd = il->ndim, cs[TL_MAX_DIMS], p[TL_MAX_DIMS] = {0};
    index_args a;
    tl_status st = index_args_get("gather", src, ids, src->layout, dim, &a);
    if (st == TL_OK) {
        for (size_t d = nd, step = 1; d-- > 0; step *= src->layout->shape[d])
            cs[d] = step;
        size_t es = tl_dtype_size(src->dtype), at = 0;
        char *d = (char *)dst->buf + dst->layout->offset * es;
        for (size_t e = 0; e < count; e++) {
            uint64_t id = index_at(ids, a.ids, e);
            if (index_none(ids, id))
                memset(d + e * es, 0, es);
            else
                memcpy(d + e * es, (const char *)a.src + (at + id * cs[dim]) * es, es);
            for (size_t k = nd; k-- > 0;) { /* the next p, row-major */
                size_t step = k == dim ? 0 : cs[k];
                if (++p[k] < il->shape[k]) {
                    at += step;
                    break;
                }
                at -= (il->shape[k] - 1) * step;
                p[k] = 0;
            }
        }
    }
    index_args_free(&a);
    return st;
}

/* dst[di] += src[si], in dst's dtype; integers add in int64 and wrap into the narrower
 * integers, the header's integer rule. */
static void add_elem(tl_dtype dtype, void *dst, size_t di, const void *src, size_t si)
{
    switch (dtype) {
    case TL_U8:
    case TL_U32:
    case TL_I16:
    case TL_I32:
    case TL_I64: {
        uint64_t a = (uint64_t)tl_load_i64(dtype, dst, di);
        uint64_t b = (uint64_t)tl_load_i64(dtype, src, si);
        tl_store_i64(dtype, dst, di, (int64_t)(a + b));
        break;
    }
    case TL_F32: ((float *)dst)[di] += ((const float *)src)[si]; break;
    case TL_F64: ((double *)dst)[di] += ((const double *)src)[si]; break;
    default: tl_store(dtype, dst, di, tl_load(dtype, dst, di) + tl_load(dtype, src, si)); break;
    }
}

/* Writes (or adds) every element of the contiguous src, whose shape is shape, into dst at the
 * same position except along dim, where it goes to ids[e] (scatter: one index per element)
 * or ids[idx[dim]] (index_add: one index per slice). */
static void scatter_walk(const tl_operand *dst, const void *src, const size_t *shape,
                         const tl_operand *ids, const void *id_data, size_t dim,
                         bool per_element, bool add)
{
    const tl_layout *dl = dst->layout;
    size_t es = tl_dtype_size(dst->dtype), count = tl_shape_elems(shape, dl->ndim);
    size_t idx[TL_MAX_DIMS] = {0};
    for (size_t e = 0; e < count; e++) {
        uint64_t id = index_at(ids, id_data, per_element ? e : idx[dim]);
        if (!index_none(ids, id)) {
            size_t off = dl->offset + id * dl->stride[dim];
            for (size_t d = 0; d < dl->ndim; d++)
                off += d == dim ? 0 : idx[d] * dl->stride[d];
            if (add)
                add_elem(dst->dtype, dst->buf, off, src, e);
            else
                memcpy((char *)dst->buf + off * es, (const char *)src + e * es, es);
        }
        for (size_t d = dl->ndim; d-- > 0;) { /* next row-major position */
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
}

tl_status tl_cpu_scatter(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                         size_t dim, bool add)
{
    const char *op = add ? "scatter_add" : "scatter_set";
    index_args a;
    tl_status st = index_args_get(op, src, ids, dst->layout, dim, &a);
    if (st == TL_OK)
        scatter_walk(dst, a.src, src->layout->shape, ids, a.ids, dim, true, add);
    index_args_free(&a);
    return st;
}

tl_status tl_cpu_index_add(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                           size_t dim)
{
    index_args a;
    tl_status st = index_args_get("index_add", src, ids, dst->layout, dim, &a);
    if (st == TL_OK)
        scatter_walk(dst, a.src, src->layout->shape, ids, a.ids, dim, false, true);
    index_args_free(&a);
    return st;
}
