/*
 * copy.c - operations that produce new storage holding a tensor's elements: copy,
 * contiguous, to_dtype, to_device.
 */
#include <math.h>
#include <stdlib.h>

#include "backend.h"

static tl_status copy_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                             const void *ctx)
{
    (void)ctx;
    return b->copy(dst, &in[0]);
}

tl_tensor *tl_copy_as(const char *op, const tl_tensor *t, tl_dtype dtype)
{
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (!tl_dtype_valid(dtype))
        return tl_fail(TL_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype), NULL;
    if (TL_NEED(op, t, copy) != TL_OK)
        return NULL;
    return tl_run_op(op, &t, NULL, 1, t->layout.shape, t->layout.ndim, dtype, copy_kernel, NULL);
}

tl_tensor *tl_copy(const tl_tensor *t)
{
    return tl_copy_as("copy", t, t ? t->dtype : TL_F32);
}

tl_tensor *tl_contiguous(const tl_tensor *t)
{
    if (tl_check_tensor("contiguous", t) != TL_OK)
        return NULL;
    if (tl_is_contiguous(t))
        return tl_retain((tl_tensor *)t); /* a new reference to the same handle */
    return tl_copy_as("contiguous", t, t->dtype);
}

tl_tensor *tl_to_dtype(const tl_tensor *t, tl_dtype dtype)
{
    return tl_copy_as("to_dtype", t, dtype);
}

tl_tensor *tl_widen_half(const tl_tensor *t)
{
    bool half = t->dtype == TL_F16 || t->dtype == TL_BF16;
    return half ? tl_to_dtype(t, TL_F32) : tl_retain((tl_tensor *)t);
}

tl_tensor *tl_widen_squares(const tl_tensor *t)
{
    bool wide = (t->dtype == TL_F32 || t->dtype == TL_BF16) && t->device == TL_CPU;
    return wide ? tl_to_dtype(t, TL_F64) : tl_widen_half(t);
}

int tl_has_inf(const tl_tensor *t)
{
    if (tl_elem_count(t) == 0)
        return 0;
    tl_tensor *a = tl_unary(TL_ABS, t), *inf = NULL, *any = NULL;
    if (a)
        inf = tl_cmp_scalar(TL_EQ, a, INFINITY);
    if (inf)
        any = tl_reduce(TL_MAX, inf, NULL, 0, false);
    uint8_t found = 0;
    int r = any && tl_to_vec(any, &found, sizeof found) == TL_OK ? found != 0 : -1;
    tl_release(a);
    tl_release(inf);
    tl_release(any);
    return r;
}

/* Moves the elements through host memory: read under t's read lock, write to new storage. */
tl_tensor *tl_to_device(const tl_tensor *t, tl_device device)
{
    const char *op = "to_device";
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (device == t->device)
        return tl_copy_as(op, t, t->dtype);
    size_t nbytes;
    if (tl_shape_check(op, t->layout.shape, t->layout.ndim, tl_dtype_size(t->dtype), &nbytes))
        return NULL;
    void *host = tl_malloc(nbytes);
    if (!host)
        return tl_fail_nomem(op, nbytes), NULL;
    tl_tensor *out = NULL;
    if (tl_to_vec(t, host, nbytes) == TL_OK)
        out = tl_from_data(host, t->layout.shape, t->layout.ndim, t->dtype, device);
    free(host);
    return tl_within(op, out);
}
