/*
 * conv.c - tl_conv1d and tl_conv2d (candle's conv1d/conv2d, PyTorch semantics): zero padding,
 * stride and dilation the same on every spatial axis, grouped channels. Read locks: x, then
 * the kernel.
 */
#include <stdint.h>

#include "backend.h"

typedef struct conv_call {
    const char *op;
    size_t spatial; /* 1 or 2 */
    tl_conv_params p;
} conv_call;

static tl_status conv_check_params(const conv_call *c, const tl_tensor *x, const tl_tensor *k)
{
    char dx[TL_DESC_STR], dk[TL_DESC_STR];
    const size_t *xs = x->layout.shape, *ks = k->layout.shape;
    if (x->layout.ndim != c->spatial + 2 || k->layout.ndim != c->spatial + 2)
        return tl_fail(TL_ERR_SHAPE, "%s: needs input and kernel of rank %zu, got %s and %s",
                       c->op, c->spatial + 2, tl_describe(x, dx), tl_describe(k, dk));
    if (c->p.groups == 0 || c->p.stride == 0 || c->p.dilation == 0)
        return tl_fail(TL_ERR_ARG,
                       "%s: groups, stride and dilation must be >= 1 (got %zu, %zu, %zu)", c->op,
                       c->p.groups, c->p.stride, c->p.dilation);
    if (xs[1] == 0 || xs[1] % c->p.groups || ks[0] % c->p.groups || ks[1] * c->p.groups != xs[1])
        return tl_fail(TL_ERR_SHAPE,
                       "%s: kernel %s does not fit input %s with %zu groups (kernel dim 1 times "
                       "groups must equal the input channels; both channel counts divisible "
                       "by groups)", c->op, tl_describe(k, dk), tl_describe(x, dx), c->p.groups);
    return TL_OK;
}

/* [b, c_out, out...]; each out = (in + 2*padding - dilation*(k-1) - 1) / stride + 1. */
static tl_status conv_shape(const conv_call *c, const tl_tensor *x, const tl_tensor *k,
                            size_t *shape)
{
    tl_status st = conv_check_params(c, x, k);
    if (st != TL_OK)
        return st;
    char dx[TL_DESC_STR], dk[TL_DESC_STR];
    shape[0] = x->layout.shape[0];
    shape[1] = k->layout.shape[0];
    for (size_t d = 2; d < c->spatial + 2; d++) {
        size_t in, reach, ks = k->layout.shape[d];
        /* the cpu kernel indexes the padded input with signed offsets: it must fit ptrdiff_t */
        if (__builtin_mul_overflow(c->p.padding, 2, &in) ||
            __builtin_add_overflow(in, x->layout.shape[d], &in) || in > PTRDIFF_MAX)
            return tl_fail(TL_ERR_RANGE, "%s: padding %zu of input %s is too large", c->op,
                           c->p.padding, tl_describe(x, dx));
        if (ks == 0 || __builtin_mul_overflow(c->p.dilation, ks - 1, &reach) || reach >= in)
            return tl_fail(TL_ERR_SHAPE, "%s: kernel %s (dilation %zu) does not fit input %s "
                           "padded by %zu", c->op, tl_describe(k, dk), c->p.dilation,
                           tl_describe(x, dx), c->p.padding);
        shape[d] = (in - reach - 1) / c->p.stride + 1; /* the window covers reach + 1 */
    }
    return TL_OK;
}

static tl_status conv_kernel(const tl_backend_i *be, const tl_operand *dst,
                             const tl_operand *args, const void *ctx)
{
    const conv_call *c = ctx;
    return c->spatial == 1 ? be->conv1d(dst, &args[0], &args[1], &c->p)
                           : be->conv2d(dst, &args[0], &args[1], &c->p);
}

static tl_tensor *conv_op(const conv_call *c, const tl_tensor *x, const tl_tensor *k)
{
    size_t shape[TL_MAX_DIMS];
    if (tl_check_same(c->op, x, k) != TL_OK || tl_check_float(c->op, x) != TL_OK ||
        conv_shape(c, x, k, shape) != TL_OK)
        return NULL;
    const tl_backend_i *be = tl_backend_of(x->device);
    if (!(c->spatial == 1 ? be->conv1d : be->conv2d))
        return tl_fail_unsupported(c->op, x->device), NULL;
    const tl_tensor *in[] = {x, k};
    return tl_run_op(c->op, in, NULL, 2, shape, c->spatial + 2, x->dtype, conv_kernel, c);
}

tl_tensor *tl_conv1d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups)
{
    conv_call c = {"conv1d", 1, {padding, stride, dilation, groups}};
    return conv_op(&c, x, kernel);
}

tl_tensor *tl_conv2d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups)
{
    conv_call c = {"conv2d", 2, {padding, stride, dilation, groups}};
    return conv_op(&c, x, kernel);
}
