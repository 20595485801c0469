/*
 * lock.c - every storage lock tensorlib takes goes through here, so the locking contract
 * (candle's: read locks on inputs in argument order, held together; write lock on an
 * in-place target first) is visible in one place (this file and the inline acquiring
 * functions in tl_internal.h). A pthread error is never ignored: the op
 * fails with TL_ERR_LOCK, naming the op, the storage and the error, and nothing stays locked.
 *
 * EDEADLK has several causes, and the message says which one it was: each thread notes the
 * storage locks it holds (innermost last), so the failing request can tell "this thread holds
 * it for write" (glibc's own EDEADLK) from "holds it for read" (an upgrade, refused by a
 * tracer such as locktrace) and from "does not hold it" (a deadlock between threads, refused by
 * the tracer).
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

/* Nesting deeper than this (custom ops calling ops) is counted, not recorded. */
#define HELD_MAX 32

static _Thread_local struct {
    const tl_storage *storage;
    bool write;
} held[HELD_MAX];
static _Thread_local size_t nheld, unrecorded;

void tl_lock_taken(const tl_tensor *t, bool write)
{
    if (nheld == HELD_MAX) {
        unrecorded++;
        return;
    }
    held[nheld].storage = t->storage;
    held[nheld++].write = write;
}

/* This thread's innermost hold of s, -1 when it has none on record. */
static long held_index(const tl_storage *s)
{
    for (size_t i = nheld; i-- > 0;)
        if (held[i].storage == s)
            return (long)i;
    return -1;
}

static const char *deadlock_cause(const tl_tensor *t, bool want_write)
{
    long i = held_index(t->storage);
    if (i >= 0 && held[i].write)
        return "; this thread already holds that storage's write lock";
    if (i >= 0 && want_write)
        return "; this thread holds that storage's read lock, and a read lock cannot be upgraded "
               "to a write lock";
    if (i >= 0)
        return "; this thread holds that storage's read lock and a writer waits behind it";
    if (unrecorded)
        return "; this thread may hold that storage's lock already";
    return "; another thread holds it and waits, directly or through others, for a lock this "
           "thread holds: a deadlock";
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
                   rc == EDEADLK ? deadlock_cause(t, mode[0] == 'w') : "");
}

void tl_unlock(const tl_tensor *t)
{
    long i = held_index(t->storage);
    if (unrecorded) { /* the innermost holds were not recorded */
        unrecorded--;
    } else if (i >= 0) {
        nheld--;
        for (size_t k = (size_t)i; k < nheld; k++)
            held[k] = held[k + 1];
    }
    /* Fails only for a lock this thread does not hold, which the callers here never do. */
    pthread_rwlock_unlock(&t->storage->lock);
}

void tl_unlock_all(const tl_tensor *const *ts, size_t n)
{
    for (size_t i = n; i-- > 0;)
        tl_unlock(ts[i]);
}
