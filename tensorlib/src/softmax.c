/*
 * softmax.c - tl_softmax and tl_log_softmax over any dim. candle composes softmax from five
 * ops (five read locks in a row); here one fused, numerically stable kernel runs under a
 * single read lock on the input.
 */
#include "locked_op.h"

static tl_status softmax_kernel(const void *ctx, const tl_backend_i *be, const tl_operand *dst,
                                const tl_operand *args)
{
    const size_t *dim_log = ctx; /* {dim, log} */
    return be->softmax(dst, &args[0], dim_log[0], dim_log[1] != 0);
}

static tl_tensor *softmax_op(const char *op, const tl_tensor *t, size_t dim, bool log)
{
    if (tl_check_tensor(op, t) != TL_OK || tl_check_float(op, t) != TL_OK ||
        tl_check_dim(op, t, dim) != TL_OK || !TL_BACKEND_WITH(op, t, softmax))
        return NULL;
    const size_t dim_log[] = {dim, log};
    const tl_tensor *inputs[] = {t};
    return tl_locked_op(op, t->layout.shape, t->layout.ndim, t->dtype, inputs, 1,
                        softmax_kernel, dim_log);
}

tl_tensor *tl_softmax(const tl_tensor *t, size_t dim)
{
    return softmax_op("softmax", t, dim, false);
}

tl_tensor *tl_log_softmax(const tl_tensor *t, size_t dim)
{
    return softmax_op("log_softmax", t, dim, true);
}
