/*
 * conv.c - tl_conv1d/2d, tl_conv_transpose1d/2d and the 2-D pools (candle's ops, PyTorch
 * semantics): zero padding, stride and dilation the same on every spatial axis, grouped
 * channels. Read locks: x, then the kernel.
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

/* The output size of conv_transpose on one axis, overflow-checked:
 * (in - 1) * stride + dilation * (k - 1) + output_padding + 1 - 2 * padding. An empty input
 * gives an empty output; a kernel of size 0 fails, as conv's does (candle's k - 1 would
 * underflow). */
static tl_status transposed_size(const conv_call *c, const tl_tensor *k_t, size_t in, size_t k,
                                 size_t *out)
{
    size_t a, b, sum;
    char dk[TL_DESC_STR];
    if (k == 0)
        return tl_fail(TL_ERR_SHAPE, "%s: kernel %s has a spatial size of 0", c->op,
                       tl_describe(k_t, dk));
    if (in == 0) {
        *out = 0;
        return TL_OK;
    }
    if (__builtin_mul_overflow(in - 1, c->p.stride, &a) ||
        __builtin_mul_overflow(k - 1, c->p.dilation, &b) || __builtin_add_overflow(a, b, &sum) ||
        __builtin_add_overflow(sum, c->p.output_padding + 1, &sum) || sum > PTRDIFF_MAX)
        return tl_fail(TL_ERR_RANGE, "%s: the output size overflows", c->op);
    if (c->p.padding >= (sum + 1) / 2) /* an output of size 0 too, as PyTorch refuses it */
        return tl_fail(TL_ERR_SHAPE, "%s: padding %zu leaves no output (%zu before padding)",
                       c->op, c->p.padding, sum);
    *out = sum - 2 * c->p.padding;
    return TL_OK;
}

static tl_status conv_transpose_kernel(const tl_backend_i *be, const tl_operand *dst,
                                       const tl_operand *args, const void *ctx)
{
    return be->conv_transpose(dst, &args[0], &args[1], &((const conv_call *)ctx)->p);
}

/* x [b, c_in, spatial...], kernel [c_in, c_out/groups, spatial...]: PyTorch's conv_transpose. */
static tl_tensor *conv_transpose_op(const conv_call *c, const tl_tensor *x, const tl_tensor *k)
{
    char dx[TL_DESC_STR], dk[TL_DESC_STR];
    size_t shape[TL_MAX_DIMS];
    if (tl_check_same(c->op, x, k) != TL_OK || tl_check_float(c->op, x) != TL_OK ||
        TL_NEED(c->op, x, conv_transpose) != TL_OK)
        return NULL;
    const size_t *xs = x->layout.shape, *ks = k->layout.shape;
    if (x->layout.ndim != c->spatial + 2 || k->layout.ndim != c->spatial + 2)
        return tl_fail(TL_ERR_SHAPE, "%s: needs input and kernel of rank %zu, got %s and %s",
                       c->op, c->spatial + 2, tl_describe(x, dx), tl_describe(k, dk)), NULL;
    if (c->p.groups == 0 || c->p.stride == 0 || c->p.dilation == 0)
        return tl_fail(TL_ERR_ARG,
                       "%s: groups, stride and dilation must be >= 1 (got %zu, %zu, %zu)", c->op,
                       c->p.groups, c->p.stride, c->p.dilation), NULL;
    if (c->p.output_padding >= c->p.stride && c->p.output_padding >= c->p.dilation)
        return tl_fail(TL_ERR_ARG, "%s: output_padding %zu must be below stride or dilation",
                       c->op, c->p.output_padding), NULL;
    if (ks[0] != xs[1] || xs[1] % c->p.groups ||
        __builtin_mul_overflow(ks[1], c->p.groups, &shape[1]))
        return tl_fail(TL_ERR_SHAPE, "%s: kernel %s does not fit input %s with %zu groups "
                       "(kernel dim 0 must equal the input channels, divisible by groups)",
                       c->op, tl_describe(k, dk), tl_describe(x, dx), c->p.groups), NULL;
    shape[0] = xs[0];
    for (size_t d = 2; d < c->spatial + 2; d++)
        if (transposed_size(c, k, xs[d], ks[d], &shape[d]) != TL_OK)
            return NULL;
    const tl_tensor *in[] = {x, k};
    return tl_run_op(c->op, in, NULL, 2, shape, c->spatial + 2, x->dtype, conv_transpose_kernel,
                     c);
}

tl_tensor *tl_conv_transpose1d(const tl_tensor *x, const tl_tensor *kernel, size_t padding,
                               size_t output_padding, size_t stride, size_t dilation,
                               size_t groups)
{
    conv_call c = {"conv_transpose1d", 1, {padding, stride, dilation, groups, output_padding}};
    return conv_transpose_op(&c, x, kernel);
}

tl_tensor *tl_conv_transpose2d(const tl_tensor *x, const tl_tensor *kernel, size_t padding,
                               size_t output_padding, size_t stride, size_t dilation)
{
    conv_call c = {"conv_transpose2d", 2, {padding, stride, dilation, 1, output_padding}};
    return conv_transpose_op(&c, x, kernel);
}

tl_tensor *tl_conv1d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups)
{
    conv_call c = {"conv1d", 1, {padding, stride, dilation, groups, 0}};
    return conv_op(&c, x, kernel);
}

tl_tensor *tl_conv2d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups)
{
    conv_call c = {"conv2d", 2, {padding, stride, dilation, groups, 0}};
    return conv_op(&c, x, kernel);
}

typedef struct pool_call {
    size_t window[2], stride[2];
    bool max;
} pool_call;

static tl_status pool_kernel(const tl_backend_i *be, const tl_operand *dst,
                             const tl_operand *args, const void *ctx)
{
    const pool_call *c = ctx;
    return be->pool2d(dst, &args[0], c->window, c->stride, c->max);
}

/* candle's max_pool2d_with_stride / avg_pool2d_with_stride: [b, c, h, w], no padding. */
static tl_tensor *pool2d(const char *op, const tl_tensor *t, const pool_call *c)
{
    char d[TL_DESC_STR];
    /* max_pool2d takes every dtype (candle's MaxPool2D does); candle's avg_pool2d of an
     * integer tensor multiplies by (1 / window) as the dtype, 0: refused here */
    if (tl_check_tensor(op, t) != TL_OK || (!c->max && tl_check_float(op, t) != TL_OK) ||
        TL_NEED(op, t, pool2d) != TL_OK)
        return NULL;
    if (t->layout.ndim != 4)
        return tl_fail(TL_ERR_SHAPE, "%s: needs [b, c, h, w], got %s", op, tl_describe(t, d)),
               NULL;
    size_t shape[4] = {t->layout.shape[0], t->layout.shape[1], 0, 0};
    for (size_t i = 0; i < 2; i++) {
        size_t in = t->layout.shape[2 + i];
        if (c->window[i] == 0 || c->stride[i] == 0 || c->window[i] > in)
            return tl_fail(TL_ERR_SHAPE, "%s: window %zux%zu with stride %zux%zu does not fit %s",
                           op, c->window[0], c->window[1], c->stride[0], c->stride[1],
                           tl_describe(t, d)), NULL;
        shape[2 + i] = (in - c->window[i]) / c->stride[i] + 1;
    }
    return tl_run_op(op, &t, NULL, 1, shape, 4, t->dtype, pool_kernel, c);
}

tl_tensor *tl_max_pool2d(const tl_tensor *t, size_t kh, size_t kw, size_t sh, size_t sw)
{
    pool_call c = {{kh, kw}, {sh, sw}, true};
    return pool2d("max_pool2d", t, &c);
}

tl_tensor *tl_avg_pool2d(const tl_tensor *t, size_t kh, size_t kw, size_t sh, size_t sw)
{
    pool_call c = {{kh, kw}, {sh, sw}, false};
    return pool2d("avg_pool2d", t, &c);
}
