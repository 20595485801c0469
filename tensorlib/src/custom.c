/*
 * custom.c - user-defined ops through a {name, cpu_fwd, metal_fwd} table.
 *
 * custom_op1/2/3 read-lock their inputs like any op and let the forward build the result.
 * inplace_op1/2/3 are candle's InplaceOp1/2/3: the write lock on the target first, then read
 * locks on the other operands, with NO same-storage check. Given one storage twice, the
 * thread waits for itself: glibc answers EDEADLK (reported as TL_ERR_LOCK), other platforms
 * hang. That is kept on purpose; it is the bug class locktrace exists to catch. The _safe
 * variants copy an operand that shares the target's storage before calling the plain one.
 */
#include "backend.h"

#define MAX_ARGS 3

static tl_view view_of(const tl_tensor *t)
{
    return (tl_view){
        .data = t->storage->buf,
        .dtype = t->dtype,
        .ndim = t->layout.ndim,
        .shape = t->layout.shape,
        .strides = t->layout.stride,
        .offset = t->layout.offset,
    };
}

/* Checks the table and the operands; all operands on one device. */
static tl_status check_call(const char *name, const void *op, const tl_tensor *const *ts,
                            size_t n)
{
    if (!op)
        return tl_fail(TL_ERR_ARG, "%s: op table is NULL", name);
    for (size_t i = 0; i < n; i++) {
        if (tl_check_tensor(name, ts[i]) != TL_OK)
            return TL_ERR_ARG;
        if (ts[i]->device != ts[0]->device)
            return tl_fail(TL_ERR_DEVICE, "%s: operands on different devices (%s and %s)", name,
                           tl_device_name(ts[0]->device), tl_device_name(ts[i]->device));
    }
    return TL_OK;
}

static const char *op_name(const char *name)
{
    return name ? name : "custom op";
}

static tl_tensor *custom_op(const tl_tensor *const *ts, size_t n, const tl_custom_op *op)
{
    const char *name = op_name(op ? op->name : NULL);
    if (check_call(name, op, ts, n) != TL_OK)
        return NULL;
    tl_tensor *(*fwd)(void *, const tl_view *, size_t) =
        ts[0]->device == TL_METAL ? op->metal_fwd : op->cpu_fwd;
    if (!fwd)
        return tl_fail_unsupported(name, ts[0]->device), NULL;
    if (tl_lock_read_all(ts, n, name) != TL_OK)
        return NULL;
    tl_view views[MAX_ARGS];
    for (size_t i = 0; i < n; i++)
        views[i] = view_of(ts[i]);
    unsigned fails = tl_fail_count();
    tl_tensor *out = fwd(op->ctx, views, n);
    tl_unlock_all(ts, n);
    if (!out && tl_fail_count() == fails)
        tl_fail(TL_ERR_BACKEND, "%s: forward returned no tensor and no error", name);
    return out;
}

tl_tensor *tl_custom_op1(const tl_tensor *a, const tl_custom_op *op)
{
    const tl_tensor *ts[1] = {a};
    return custom_op(ts, 1, op);
}

tl_tensor *tl_custom_op2(const tl_tensor *a, const tl_tensor *b, const tl_custom_op *op)
{
    const tl_tensor *ts[2] = {a, b};
    return custom_op(ts, 2, op);
}

tl_tensor *tl_custom_op3(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                         const tl_custom_op *op)
{
    const tl_tensor *ts[3] = {a, b, c};
    return custom_op(ts, 3, op);
}

/* ts[0] is the target: write lock, then read locks on ts[1..n) in order. */
static tl_status inplace_op(const tl_tensor *const *ts, size_t n, const tl_inplace_op *op)
{
    const char *name = op_name(op ? op->name : NULL);
    tl_status st = check_call(name, op, ts, n);
    if (st != TL_OK)
        return st;
    tl_status (*fwd)(void *, const tl_view *, const tl_view *, size_t) =
        ts[0]->device == TL_METAL ? op->metal_fwd : op->cpu_fwd;
    if (!fwd)
        return tl_fail_unsupported(name, ts[0]->device);
    st = tl_lock_write(ts[0], name);
    if (st != TL_OK)
        return st;
    st = tl_lock_read_all(ts + 1, n - 1, name);
    if (st != TL_OK) {
        tl_unlock(ts[0]);
        return st;
    }
    tl_view dst = view_of(ts[0]), args[MAX_ARGS];
    for (size_t i = 1; i < n; i++)
        args[i - 1] = view_of(ts[i]);
    unsigned fails = tl_fail_count();
    st = fwd(op->ctx, &dst, args, n - 1);
    tl_unlock_all(ts + 1, n - 1);
    tl_unlock(ts[0]);
    if (st != TL_OK && tl_fail_count() == fails)
        st = tl_fail(st, "%s: forward failed without saying why", name);
    return st;
}

tl_status tl_inplace_op1(tl_tensor *t, const tl_inplace_op *op)
{
    const tl_tensor *ts[1] = {t};
    return inplace_op(ts, 1, op);
}

tl_status tl_inplace_op2(tl_tensor *t, const tl_tensor *a, const tl_inplace_op *op)
{
    const tl_tensor *ts[2] = {t, a};
    return inplace_op(ts, 2, op);
}

tl_status tl_inplace_op3(tl_tensor *t, const tl_tensor *a, const tl_tensor *b,
                         const tl_inplace_op *op)
{
    const tl_tensor *ts[3] = {t, a, b};
    return inplace_op(ts, 3, op);
}

/* Replaces *arg by a copy (released through *owned) when it shares t's storage. */
static tl_status unshare(const tl_tensor *t, const tl_tensor **arg, tl_tensor **owned)
{
    *owned = NULL;
    if (!tl_shares_storage(t, *arg))
        return TL_OK;
    if (!(*owned = tl_copy(*arg)))
        return tl_last_status();
    *arg = *owned;
    return TL_OK;
}

tl_status tl_inplace_op2_safe(tl_tensor *t, const tl_tensor *a, const tl_inplace_op *op)
{
    tl_tensor *copy;
    tl_status st = unshare(t, &a, &copy);
    if (st == TL_OK)
        st = tl_inplace_op2(t, a, op);
    tl_release(copy);
    return st;
}

tl_status tl_inplace_op3_safe(tl_tensor *t, const tl_tensor *a, const tl_tensor *b,
                              const tl_inplace_op *op)
{
    tl_tensor *copy_a, *copy_b = NULL;
    tl_status st = unshare(t, &a, &copy_a);
    if (st == TL_OK)
        st = unshare(t, &b, &copy_b);
    if (st == TL_OK)
        st = tl_inplace_op3(t, a, b, op);
    tl_release(copy_a);
    tl_release(copy_b);
    return st;
}
