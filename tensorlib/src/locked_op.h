/*
 * locked_op.h - the common tail of the heavy ops (matmul.c, conv.c, indexing.c, concat.c,
 * softmax.c): allocate the result, read-lock the inputs in argument order (candle's order,
 * all held together), run one kernel, unlock. The ops themselves only validate and pick the
 * backend member.
 */
#ifndef TL_LOCKED_OP_H
#define TL_LOCKED_OP_H

#include "backend.h"

/* Runs under the locks: dst is the fresh contiguous result, args[i] is inputs[i]'s operand. */
typedef tl_status (*tl_locked_kernel)(const void *ctx, const tl_backend_i *be,
                                      const tl_operand *dst, const tl_operand *args);

/* A new tensor of shape/dtype on inputs[0]'s device, filled by kernel while inputs[0..n) are
 * read-locked; NULL (with the error set) when allocation, a lock or the kernel fails. */
tl_tensor *tl_locked_op(const char *op, const size_t *shape, size_t ndim, tl_dtype dtype,
                        const tl_tensor *const *inputs, size_t n, tl_locked_kernel kernel,
                        const void *ctx);

/* The backend of t's device, or NULL after failing with TL_ERR_UNSUPPORTED when that
 * backend leaves `member` NULL. */
#define TL_BACKEND_WITH(op, t, member) \
    (tl_backend_of((t)->device)->member ? tl_backend_of((t)->device) \
                                        : (tl_fail_unsupported((op), (t)->device), NULL))

/* Fails with TL_ERR_DTYPE unless ids has an index dtype (u8, u32, i64). */
tl_status tl_check_index_dtype(const char *op, const tl_tensor *ids);

#endif
