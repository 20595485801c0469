/*
 * lock.c - every storage lock tensorlib takes goes through here, so the locking contract
 * (candle's: read locks on inputs in argument order, held together; write lock on an
 * in-place target first) is visible in one place (this file and the inline acquiring
 * functions in tl_internal.h). A pthread error is never ignored: the op
 * fails with TL_ERR_LOCK, naming the op, the storage and the error, and nothing stays locked.
 */
#include <errno.h>
#include <string.h>

#include "tl_internal.h"

static const char *errno_name(int rc)
{
    switch (rc) {
    case EDEADLK: return "EDEADLK";
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case EPERM: return "EPERM";
    default: return "error";
    }
}

tl_status tl_lock_failed(const tl_tensor *t, const char *op, const char *mode, int rc)
{
    char desc[256], why[128];
    tl_storage_describe(t->storage, desc, sizeof desc);
    /* XSI strerror_r (this file asks for POSIX only): thread-safe on glibc and macOS. */
    if (strerror_r(rc, why, sizeof why) != 0)
        why[0] = '\0';
    return tl_fail(TL_ERR_LOCK, "%s: cannot take the %s lock on %s: %s (%s)%s", op, mode, desc,
                   why, errno_name(rc),
                   rc == EDEADLK ? "; this thread already holds that storage's write lock" : "");
}

void tl_unlock(const tl_tensor *t)
{
    /* Fails only for a lock this thread does not hold, which the callers here never do. */
    pthread_rwlock_unlock(&t->storage->lock);
}

void tl_unlock_all(const tl_tensor *const *ts, size_t n)
{
    for (size_t i = n; i-- > 0;)
        tl_unlock(ts[i]);
}
