/*
 * backend.h - the device interface. The generic op layer (tensor.c, ops_*.c, reduce.c, ...)
 * validates arguments, takes the storage locks and then calls one member of a backend's table;
 * only backends touch device memory. Each device fills one `static const tl_backend_i`
 * (cpu/cpu_backend.c; metal/ on macOS).
 *
 * Conventions for every kernel member:
 *   - operands arrive as tl_operand {buffer, layout, dtype}; layouts may be strided, offset
 *     or broadcast (stride 0) unless the member says otherwise;
 *   - `dst` is freshly allocated and contiguous, except for members documented as writing
 *     through an arbitrary layout (copy, fill, the in-place index ops) and, on a backend
 *     that sets strided_dst, the elementwise members, whose fresh dst may be dense in the
 *     memory order of its inputs (tl_run_elementwise);
 *   - inputs of elementwise members already have dst's shape (the generic layer broadcasts);
 *   - a member returns TL_OK or the status of a tl_fail() it made.
 * alloc, free, read and write are required. Any other member may be NULL (the ones marked
 * (optional) are expected to be, on some devices): the generic layer checks with TL_NEED
 * before dispatching and fails with TL_ERR_UNSUPPORTED "no <device> implementation for <op>".
 */
#ifndef TL_BACKEND_H
#define TL_BACKEND_H

#include "tl_internal.h"

/* Parameterised elementwise ops: one member, a scalar pair each. */
typedef enum tl_scalar_op {
    TL_SCALAR_AFFINE, /* x * p0 + p1 */
    TL_SCALAR_POWF,   /* x ^ p0 */
    TL_SCALAR_CLAMP,  /* min(max(x, p0), p1) */
    TL_SCALAR_ELU,    /* x >= 0 ? x : p0 * (exp(x) - 1) */
    TL_SCALAR_COUNT
} tl_scalar_op;

typedef struct tl_conv_params {
    size_t padding, stride, dilation, groups; /* the same on every spatial axis */
    size_t output_padding;                    /* conv_transpose only */
} tl_conv_params;

typedef struct tl_backend_i {
    const char *name; /* "cpu", "metal": used in messages */
    /* the elementwise members (unary, scalar, binary, cmp, where) write any dense dst layout,
     * so a result can follow its inputs' memory order (tl_run_elementwise) */
    bool strided_dst;

    /* (optional) whether the device can be used in this process; NULL: always */
    bool (*available)(void);

    /* buffer of nbytes (nbytes may be 0); NULL when out of memory */
    void *(*alloc)(size_t nbytes);
    /* releases a buffer from alloc; NULL buf is fine */
    void (*free)(void *buf);
    /* host -> device: nbytes from src to buf + offset (bytes) */
    tl_status (*write)(void *buf, size_t offset, const void *src, size_t nbytes);
    /* device -> host: nbytes from buf + offset (bytes) to dst; waits for pending work */
    tl_status (*read)(const void *buf, size_t offset, void *dst, size_t nbytes);

    /* dst = src elementwise over one shape, converting dtypes; both layouts arbitrary
     * (dst is never broadcast). Serves copy, contiguous, to_dtype, slice_set, var_set, cat. */
    tl_status (*copy)(const tl_operand *dst, const tl_operand *src);
    /* every element of dst's layout = value (converted to dst's dtype) */
    tl_status (*fill)(const tl_operand *dst, double value);

    /* dst = op(src) */
    tl_status (*unary)(tl_unary_op op, const tl_operand *dst, const tl_operand *src);
    /* dst = op(src; p0, p1), see tl_scalar_op */
    tl_status (*scalar)(tl_scalar_op op, const tl_operand *dst, const tl_operand *src,
                        double p0, double p1);
    /* dst = a op b; a, b have dst's dtype */
    tl_status (*binary)(tl_binary_op op, const tl_operand *dst, const tl_operand *a,
                        const tl_operand *b);
    /* (optional) dst = a ^ b, a float dtype, rounded once from libm's pow where a is positive
     * and finite and b finite; elsewhere candle's exp(b * log(a)) (a <= 0 gives NaN, 0 ^ b
     * 0 or inf). NULL: the generic layer composes exp(b * log(a)) one precision up. */
    tl_status (*pow)(const tl_operand *dst, const tl_operand *a, const tl_operand *b);
    /* dst (u8) = a op b ? 1 : 0 */
    tl_status (*cmp)(tl_cmp_op op, const tl_operand *dst, const tl_operand *a,
                     const tl_operand *b);
    /* dst = cond != 0 ? t : f; cond is an integer dtype */
    tl_status (*where)(const tl_operand *dst, const tl_operand *cond, const tl_operand *t,
                       const tl_operand *f);
    /* dst has src's shape with the dims in `reduced` (a bitmask) set to 1; arg ops write u32 */
    tl_status (*reduce)(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                        uint32_t reduced);

    /* (optional) dst[..., m, n] = a[..., m, k] @ b[..., k, n]; leading dims equal */
    tl_status (*matmul)(const tl_operand *dst, const tl_operand *a, const tl_operand *b);
    /* (optional) dst = conv1d(x [b, c_in, l], k [c_out, c_in/groups, kl]) */
    tl_status (*conv1d)(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p);
    /* (optional) dst = conv2d(x [b, c_in, h, w], k [c_out, c_in/groups, kh, kw]) */
    tl_status (*conv2d)(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p);
    /* (optional) dst = conv_transpose1d/2d(x [b, c_in, spatial...], k [c_in, c_out/groups,
     * spatial...]) for 1 or 2 spatial dims (x's rank says which) */
    tl_status (*conv_transpose)(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                                const tl_conv_params *p);
    /* (optional) dst [b, c, oh, ow] = max or mean of each kh x kw window of src [b, c, h, w],
     * windows sh / sw apart, no padding */
    tl_status (*pool2d)(const tl_operand *dst, const tl_operand *src, const size_t *window,
                        const size_t *stride, bool max);
    /* (optional) dst = src with dim indexed by ids (1-D) */
    tl_status (*index_select)(const tl_operand *dst, const tl_operand *src,
                              const tl_operand *ids, size_t dim);
    /* (optional) dst = src gathered along dim by ids (ids has dst's shape) */
    tl_status (*gather)(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                        size_t dim);
    /* (optional) in place: dst[.. ids[i] ..] = (add ? dst + : ) src[i] along dim; dst's
     * layout arbitrary (serves scatter_add on a copy, scatter_set, scatter_add_set) */
    tl_status (*scatter)(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                         size_t dim, bool add);
    /* (optional) in place: dst slice ids[i] along dim += src slice i along dim */
    tl_status (*index_add)(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                           size_t dim);
    /* (optional) dst = softmax (log_softmax when log) of src over dim; NULL: the generic layer
     * may compose it from reduce/binary/unary */
    tl_status (*softmax)(const tl_operand *dst, const tl_operand *src, size_t dim, bool log);
    /* (optional) dst (u32, src's shape) = per row along the last dim, the indexes that sort
     * it stably, ascending or descending, NaN after every number */
    tl_status (*arg_sort)(const tl_operand *dst, const tl_operand *src, bool ascending);
    /* (optional) dst (src's shape and dtype) = the running sum, or product when `product`, of
     * src along dim, one term at a time with each partial result rounded to the dtype (numpy's
     * cumsum/cumprod in that dtype); integers wrap. NULL: the op runs it on the cpu. */
    tl_status (*scan)(const tl_operand *dst, const tl_operand *src, size_t dim, bool product);
} tl_backend_i;

/* TL_OK when the backend of tensor t has member; otherwise fails with TL_ERR_UNSUPPORTED
 * naming op and the device. (A tensor exists only on a device whose backend is built in.) */
#define TL_NEED(op, t, member)                                                                    \
    ((t)->storage->backend->member ? TL_OK : tl_fail_unsupported((op), (t)->device))

/* The table for device, or NULL when tensorlib was built without it. */
const tl_backend_i *tl_backend_of(tl_device device);

/* alloc.c: b->alloc unless the test hook injects a failure. */
void *tl_backend_alloc(const tl_backend_i *b, size_t nbytes);

/* dispatch.c: the shape of most ops. Creates a contiguous result of shape/dtype on the
 * inputs' device, read-locks in[0..n) in argument order (held together, as candle does),
 * calls fn with the operands (layouts[i] replaces in[i]'s layout when layouts is non-NULL,
 * e.g. a broadcast view), unlocks, and returns the result or NULL. fn checks that the
 * backend member it needs is not NULL (tl_fail_unsupported). */
typedef tl_status (*tl_kernel_fn)(const tl_backend_i *b, const tl_operand *dst,
                                  const tl_operand *in, const void *ctx);
tl_tensor *tl_run_op(const char *op, const tl_tensor *const *in, const tl_layout *const *layouts,
                     size_t n, const size_t *shape, size_t ndim, tl_dtype dtype, tl_kernel_fn fn,
                     const void *ctx);

/* tl_run_op for elementwise ops: when every input (seen through layouts) lays its elements out
 * densely in one memory order, and the backend writes strided results, the result follows
 * that order too (numpy's order='K'), so a kernel over a transposed view streams through both
 * buffers instead of transposing. Otherwise the result is row-major. */
tl_tensor *tl_run_elementwise(const char *op, const tl_tensor *const *in,
                              const tl_layout *const *layouts, size_t n, const size_t *shape,
                              size_t ndim, tl_dtype dtype, tl_kernel_fn fn, const void *ctx);

/* Instances (cpu/cpu_backend.c, metal/). */
extern const tl_backend_i tl_cpu_backend;

#endif
