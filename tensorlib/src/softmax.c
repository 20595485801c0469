/*
 * softmax.c - tl_softmax and tl_log_softmax over any dim. candle composes softmax from five
 * ops (five read locks in a row); here one fused, numerically stable kernel runs under a
 * single read lock on the input.
 */
#include "backend.h"

typedef struct softmax_call {
    size_t dim;
    bool log;
} softmax_call;

static tl_status softmax_kernel(const tl_backend_i *be, const tl_operand *dst,
                                const tl_operand *args, const void *ctx)
{
    const softmax_call *c = ctx;
    return be->softmax(dst, &args[0], c->dim, c->log);
}

static tl_tensor *softmax_op(const char *op, const tl_tensor *t, size_t dim, bool log)
{
    if (tl_check_tensor(op, t) != TL_OK || tl_check_float(op, t) != TL_OK ||
        tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    if (!tl_backend_of(t->device)->softmax)
        return tl_fail_unsupported(op, t->device), NULL;
    softmax_call c = {dim, log};
    return tl_run_op(op, &t, NULL, 1, t->layout.shape, t->layout.ndim, t->dtype, softmax_kernel,
                     &c);
}

tl_tensor *tl_softmax(const tl_tensor *t, size_t dim)
{
    return softmax_op("softmax", t, dim, false);
}

tl_tensor *tl_log_softmax(const tl_tensor *t, size_t dim)
{
    return softmax_op("log_softmax", t, dim, true);
}
