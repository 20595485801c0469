/*
 * dispatch.c - the common path of an op that makes a new tensor from read-locked inputs.
 */
#include <stdlib.h>

#include "backend.h"

#define STACK_OPERANDS 4 /* more inputs (cat) take one allocation */

tl_tensor *tl_run_op(const char *op, const tl_tensor *const *in, const tl_layout *const *layouts,
                     size_t n, const size_t *shape, size_t ndim, tl_dtype dtype, tl_kernel_fn fn,
                     const void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        if (tl_check_tensor(op, in[i]) != TL_OK)
            return NULL;
        if (in[i]->device != in[0]->device)
            return tl_fail(TL_ERR_DEVICE, "%s: operands on different devices (%s and %s)", op,
                           tl_device_name(in[0]->device), tl_device_name(in[i]->device)), NULL;
    }
    tl_device device = n ? in[0]->device : TL_CPU;
    tl_operand stack[STACK_OPERANDS], *ops = stack;
    if (n > STACK_OPERANDS && !(ops = tl_malloc(n * sizeof *ops)))
        return tl_fail_nomem(op, n * sizeof *ops), NULL;
    tl_tensor *out = tl_tensor_empty(op, shape, ndim, dtype, device);
    if (out && tl_lock_read_all(in, n, op) != TL_OK) {
        tl_release(out);
        out = NULL;
    }
    if (out) {
        for (size_t i = 0; i < n; i++) {
            ops[i] = tl_operand_of(in[i]);
            if (layouts)
                ops[i].layout = layouts[i];
        }
        tl_operand dst = tl_operand_of(out);
        tl_status st = fn(out->storage->backend, &dst, ops, ctx);
        tl_unlock_all(in, n);
        if (st != TL_OK) {
            tl_release(out);
            out = NULL;
        }
    }
    if (ops != stack)
        free(ops);
    return out;
}
