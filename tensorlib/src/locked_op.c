/*
 * locked_op.c - see locked_op.h.
 */
#include <stdlib.h>

#include "locked_op.h"

tl_tensor *tl_locked_op(const char *op, const size_t *shape, size_t ndim, tl_dtype dtype,
                        const tl_tensor *const *inputs, size_t n, tl_locked_kernel kernel,
                        const void *ctx)
{
    tl_operand small[4], *args = n <= 4 ? small : malloc(n * sizeof *args);
    if (!args) {
        tl_fail_nomem(op, n * sizeof *args);
        return NULL;
    }
    tl_tensor *out = tl_tensor_empty(op, shape, ndim, dtype, inputs[0]->device);
    tl_status st = out ? tl_lock_read_all(inputs, n, op) : TL_ERR_NOMEM;
    if (st == TL_OK) {
        for (size_t i = 0; i < n; i++)
            args[i] = tl_operand_of(inputs[i]);
        tl_operand dst = tl_operand_of(out);
        st = kernel(ctx, tl_backend_of(inputs[0]->device), &dst, args);
        tl_unlock_all(inputs, n);
    }
    if (args != small)
        free(args);
    if (st != TL_OK) {
        tl_release(out);
        return NULL;
    }
    return out;
}

tl_status tl_check_index_dtype(const char *op, const tl_tensor *ids)
{
    char d[TL_DESC_STR];
    if (ids->dtype == TL_U8 || ids->dtype == TL_U32 || ids->dtype == TL_I64)
        return TL_OK;
    return tl_fail(TL_ERR_DTYPE, "%s: indexes must be u8, u32 or i64, got %s", op,
                   tl_describe(ids, d));
}
