/*
 * dispatch.c - the common path of an op that makes a new tensor from read-locked inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

#define STACK_OPERANDS 4 /* more inputs (cat) take one allocation */

/* Lays the fresh result out in its inputs' memory order when they all share one dense order. */
static void follow_inputs(tl_tensor *out, const tl_tensor *const *in,
                          const tl_layout *const *layouts, size_t n)
{
    tl_layout first, other;
    if (!tl_layout_follow_order(&first, layouts ? layouts[0] : &in[0]->layout))
        return;
    for (size_t i = 1; i < n; i++)
        if (!tl_layout_follow_order(&other, layouts ? layouts[i] : &in[i]->layout) ||
            memcmp(other.stride, first.stride, first.ndim * sizeof first.stride[0]) != 0)
            return;
    out->layout = first;
}

/* tl_run_op with the result's layout in the order of the inputs' memory when `follow`. */
static tl_tensor *run(const char *op, const tl_tensor *const *in, const tl_layout *const *layouts,
                      size_t n, const size_t *shape, size_t ndim, tl_dtype dtype, tl_kernel_fn fn,
                      const void *ctx, bool follow)
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
    if (out && follow && n > 0 && out->storage->backend->strided_dst)
        follow_inputs(out, in, layouts, n);
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
            tl_fail_within(op); /* a kernel's own failure ("reduce: out of memory") */
            tl_release(out);
            out = NULL;
        }
    }
    if (ops != stack)
        free(ops);
    return out;
}

tl_tensor *tl_run_op(const char *op, const tl_tensor *const *in, const tl_layout *const *layouts,
                     size_t n, const size_t *shape, size_t ndim, tl_dtype dtype, tl_kernel_fn fn,
                     const void *ctx)
{
    return run(op, in, layouts, n, shape, ndim, dtype, fn, ctx, false);
}

tl_tensor *tl_run_elementwise(const char *op, const tl_tensor *const *in,
                              const tl_layout *const *layouts, size_t n, const size_t *shape,
                              size_t ndim, tl_dtype dtype, tl_kernel_fn fn, const void *ctx)
{
    return run(op, in, layouts, n, shape, ndim, dtype, fn, ctx, true);
}
