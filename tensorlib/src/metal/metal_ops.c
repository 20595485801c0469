/*
 * metal_ops.c - the Metal backend's tl_backend_i table. Each member turns its operands into
 * a kernels.h argument struct (layout_args.c) and one launch for metal_device.m to encode.
 * Plain C: nothing here touches Metal.
 *
 * Members left NULL (conv1d, conv2d, scatter, index_add) make the generic layer fail with
 * TL_ERR_UNSUPPORTED "no metal implementation for <op>"; a member given a dtype or a view its
 * kernels do not cover fails the same way, naming the op (metal_device.m, tlm_metal_encode).
 */
#include "backend.h"
#include "kernels.h"
#include "layout_args.h"
#include "metal_device.h"

static tl_status too_big(const char *op)
{
    return tl_fail(TL_ERR_UNSUPPORTED,
                   "no metal implementation for %s on this view: more than %d dims or element "
                   "indices past 2^32", op, TLK_MAX_DIMS);
}

static tl_view view_of(const tl_operand *o)
{
    return (tl_view){o->buf, o->dtype, o->layout->ndim, o->layout->shape, o->layout->stride,
                     o->layout->offset};
}

/* o's kernel layout; false (after tl_fail) when it does not fit 32-bit indexing. */
static bool layout_of(const char *op, const tl_operand *o, tlk_layout *l)
{
    tl_view v = view_of(o);
    return tlm_layout(&v, l) || (too_big(op), false);
}

static tlm_launch elementwise(const char *op, tlm_family fam, uint32_t code, tl_dtype dtype,
                              tl_dtype aux, bool contiguous, size_t n)
{
    return (tlm_launch){.op = op, .req = {fam, code, dtype, aux, contiguous},
                        .grid = TLM_GRID_ELEMENTWISE, .n = n};
}

/* Binds bufs in order; the last `written` of them are outputs. */
static tl_status run(tlm_launch *l, const void *args, size_t size, void *const *bufs, size_t n,
                     size_t written)
{
    l->args = args;
    l->args_size = size;
    for (size_t i = 0; i < n; i++)
        l->bufs[i] = bufs[i];
    l->nbufs = n;
    l->nreads = n - written;
    return tlm_metal_encode(l);
}

/* ---------------------------------------------------------------------------------------- */

/* Same dtype: any layouts. To another dtype: the cast kernels write a contiguous output from
 * element 0 of dst's buffer, which is what every caller converting dtypes passes (fresh
 * storage from to_dtype, copy or to_vec). */
static tl_status metal_copy(const tl_operand *dst, const tl_operand *src)
{
    size_t n = tl_layout_elems(dst->layout);
    if (dst->dtype != src->dtype) {
        tlk_map_args a = {.n = (uint32_t)n};
        if (!tl_layout_is_contiguous(dst->layout) || dst->layout->offset != 0)
            return tl_fail(TL_ERR_UNSUPPORTED, "no metal implementation for to_dtype into a "
                                               "strided or offset destination");
        if (!layout_of("to_dtype", src, &a.src))
            return TL_ERR_UNSUPPORTED;
        tlm_launch l = elementwise("to_dtype", TLM_CAST, 0, src->dtype, dst->dtype,
                                   tl_layout_is_contiguous(src->layout), n);
        return run(&l, &a, sizeof a, (void *[]){src->buf, dst->buf}, 2, 1);
    }
    tlk_copy_args a = {.n = (uint32_t)n};
    if (!layout_of("copy", src, &a.src) || !layout_of("copy", dst, &a.dst))
        return TL_ERR_UNSUPPORTED;
    tlm_launch l = elementwise("copy", TLM_COPY, 0, src->dtype, src->dtype,
                               tl_layout_is_contiguous(src->layout) && tl_layout_is_contiguous(dst->layout), n);
    return run(&l, &a, sizeof a, (void *[]){src->buf, dst->buf}, 2, 1);
}

/* The value is rounded on the host as the cpu backend stores it (integers saturate, NaN is
 * 0), then handed to the kernel as a float and as a 64-bit integer split in two halves. */
static tl_status metal_fill(const tl_operand *dst, double value)
{
    double v = tl_round_to_dtype(dst->dtype, value);
    _Alignas(8) unsigned char cell[8];
    tl_store(dst->dtype, cell, 0, value);
    uint64_t bits = tl_dtype_is_float(dst->dtype) ? 0 : (uint64_t)tl_load_i64(dst->dtype, cell, 0);
    tlk_fill_args a = {.n = (uint32_t)tl_layout_elems(dst->layout), .fvalue = (float)v,
                       .ivalue_lo = (uint32_t)bits, .ivalue_hi = (uint32_t)(bits >> 32)};
    if (!layout_of("fill", dst, &a.dst))
        return TL_ERR_UNSUPPORTED;
    tlm_launch l = elementwise("fill", TLM_FILL, 0, dst->dtype, dst->dtype,
                               tl_layout_is_contiguous(dst->layout), a.n);
    return run(&l, &a, sizeof a, (void *[]){dst->buf}, 1, 1);
}

/* unary and scalar: contiguous dst <- f(src). */
static tl_status map(const char *op, tlm_family fam, uint32_t code, const tl_operand *dst,
                     const tl_operand *src, double p0, double p1)
{
    tlk_map_args a = {.n = (uint32_t)tl_layout_elems(dst->layout), .p0 = (float)p0, .p1 = (float)p1};
    if (!layout_of(op, src, &a.src))
        return TL_ERR_UNSUPPORTED;
    tlm_launch l = elementwise(op, fam, code, src->dtype, src->dtype,
                               tl_layout_is_contiguous(src->layout), a.n);
    return run(&l, &a, sizeof a, (void *[]){src->buf, dst->buf}, 2, 1);
}

static tl_status metal_unary(tl_unary_op op, const tl_operand *dst, const tl_operand *src)
{
    return map(tl_unary_name(op), TLM_UNARY, (uint32_t)op, dst, src, 0, 0);
}

static tl_status metal_scalar(tl_scalar_op op, const tl_operand *dst, const tl_operand *src,
                              double p0, double p1)
{
    return map(tlm_op_name(TLM_SCALAR, (uint32_t)op), TLM_SCALAR, (uint32_t)op, dst, src, p0, p1);
}

/* binary and cmp: a and b already have dst's shape (the generic layer broadcasts). */
static tl_status two_inputs(tlm_family fam, uint32_t code, const tl_operand *dst,
                            const tl_operand *a, const tl_operand *b)
{
    const char *op = tlm_op_name(fam, code);
    tlk_binary_args args = {.n = (uint32_t)tl_layout_elems(dst->layout)};
    if (!layout_of(op, a, &args.a) || !layout_of(op, b, &args.b))
        return TL_ERR_UNSUPPORTED;
    bool contiguous = tl_layout_is_contiguous(a->layout) && tl_layout_is_contiguous(b->layout);
    tlm_launch l = elementwise(op, fam, code, a->dtype, a->dtype, contiguous, args.n);
    return run(&l, &args, sizeof args, (void *[]){a->buf, b->buf, dst->buf}, 3, 1);
}

static tl_status metal_binary(tl_binary_op op, const tl_operand *dst, const tl_operand *a,
                              const tl_operand *b)
{
    return two_inputs(TLM_BINARY, (uint32_t)op, dst, a, b);
}

static tl_status metal_cmp(tl_cmp_op op, const tl_operand *dst, const tl_operand *a,
                           const tl_operand *b)
{
    return two_inputs(TLM_CMP, (uint32_t)op, dst, a, b);
}

static tl_status metal_where(const tl_operand *dst, const tl_operand *cond, const tl_operand *t,
                             const tl_operand *f)
{
    tlk_where_args a = {.n = (uint32_t)tl_layout_elems(dst->layout)};
    if (!layout_of("where_cond", cond, &a.cond) || !layout_of("where_cond", t, &a.on_true) ||
        !layout_of("where_cond", f, &a.on_false))
        return TL_ERR_UNSUPPORTED;
    bool contiguous = tl_layout_is_contiguous(cond->layout) && tl_layout_is_contiguous(t->layout) &&
                      tl_layout_is_contiguous(f->layout);
    tlm_launch l = elementwise("where_cond", TLM_WHERE, 0, t->dtype, cond->dtype, contiguous, a.n);
    return run(&l, &a, sizeof a, (void *[]){cond->buf, t->buf, f->buf, dst->buf}, 4, 1);
}

/* ---------------------------------------------------------------------------------------- */

static tlm_launch rows(const char *op, tlm_family fam, uint32_t code, tl_dtype dtype, size_t n,
                       size_t row_len)
{
    return (tlm_launch){.op = op, .req = {fam, code, dtype, dtype, false},
                        .grid = TLM_GRID_ROWS, .n = n, .row_len = row_len};
}

static tl_status metal_reduce(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                              uint32_t reduced)
{
    const char *name = tlm_op_name(TLM_REDUCE, (uint32_t)op);
    bool dims[TL_MAX_DIMS];
    tlk_reduce_args a;
    tl_view v = view_of(src);
    for (size_t d = 0; d < TL_MAX_DIMS; d++)
        dims[d] = (reduced >> d) & 1u;
    if (!tlm_reduce_args(&v, dims, &a))
        return too_big(name);
    tlm_launch l = rows(name, TLM_REDUCE, (uint32_t)op, src->dtype, a.out_n, a.reduced_n);
    return run(&l, &a, sizeof a, (void *[]){src->buf, dst->buf}, 2, 1);
}

static tl_status metal_softmax(const tl_operand *dst, const tl_operand *src, size_t dim, bool log)
{
    uint32_t code = log ? TLK_LOG_SOFTMAX : TLK_SOFTMAX;
    const char *name = tlm_op_name(TLM_SOFTMAX, code);
    tlk_softmax_args a;
    tl_view v = view_of(src);
    if (!tlm_softmax_args(&v, dim, &a))
        return too_big(name);
    tlm_launch l = rows(name, TLM_SOFTMAX, code, src->dtype, a.rows, a.len);
    return run(&l, &a, sizeof a, (void *[]){src->buf, dst->buf}, 2, 1);
}

static tl_status metal_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b)
{
    tlk_matmul_args m;
    tl_view va = view_of(a), vb = view_of(b);
    if (!tlm_matmul_args(&va, &vb, &m))
        return too_big("matmul");
    tlm_launch l = {.op = "matmul", .req = {TLM_MATMUL, 0, a->dtype, a->dtype, false},
                    .grid = TLM_GRID_MATMUL, .batch = m.batch, .m = m.m, .cols = m.n};
    return run(&l, &m, sizeof m, (void *[]){a->buf, b->buf, dst->buf}, 3, 1);
}

/* index_select and gather share the kernel arguments and the launch. */
static tl_status indexed(const char *op, tlm_family fam, const tl_operand *dst,
                         const tl_operand *src, const tl_operand *ids, size_t dim)
{
    tlk_index_args a;
    tl_view vs = view_of(src), vi = view_of(ids);
    bool ok = fam == TLM_GATHER ? tlm_gather_args(&vs, &vi, dim, &a)
                                : tlm_index_select_args(&vs, &vi, dim, &a);
    if (!ok)
        return too_big(op);
    tlm_launch l = elementwise(op, fam, 0, src->dtype, ids->dtype, false, a.n);
    return run(&l, &a, sizeof a, (void *[]){src->buf, ids->buf, dst->buf}, 3, 1);
}

static tl_status metal_index_select(const tl_operand *dst, const tl_operand *src,
                                    const tl_operand *ids, size_t dim)
{
    return indexed("index_select", TLM_INDEX_SELECT, dst, src, ids, dim);
}

static tl_status metal_gather(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                              size_t dim)
{
    return indexed("gather", TLM_GATHER, dst, src, ids, dim);
}

/* ---------------------------------------------------------------------------------------- */

const tl_backend_i tl_metal_backend = {
    .name = "metal",
    .available = tlm_metal_available,
    .alloc = tlm_metal_alloc,
    .free = tlm_metal_free,
    .write = tlm_metal_write,
    .read = tlm_metal_read,
    .copy = metal_copy,
    .fill = metal_fill,
    .unary = metal_unary,
    .scalar = metal_scalar,
    .binary = metal_binary,
    .cmp = metal_cmp,
    .where = metal_where,
    .reduce = metal_reduce,
    .matmul = metal_matmul,
    .conv1d = NULL,               /* no Metal kernel */
    .conv2d = NULL,               /* no Metal kernel */
    .index_select = metal_index_select,
    .gather = metal_gather,
    .scatter = NULL,              /* no Metal kernel */
    .index_add = NULL,            /* no Metal kernel */
    .softmax = metal_softmax,
    .scan = NULL,                 /* no Metal kernel: cumsum/cumprod run on the cpu */
};
