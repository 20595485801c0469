/*
 * interpose_detach.c - pthread_detach and C11 thrd_detach: a detached thread is one no join
 * waits for (waitfor.c, lt_waitfor_detached). glibc's thrd_detach calls its internal detach,
 * not the exported pthread_detach, so it needs an entry of its own.
 */
#define _GNU_SOURCE
#include <pthread.h>
#if LT_C11_THREADS
#include <threads.h>
#endif

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

typedef int (*detach_fn)(pthread_t);

/* The real function of that name, resolved at the first call (a library's constructor may
 * detach before the tracer's own resolution ran). */
static detach_fn real_of(_Atomic(detach_fn) *slot, const char *name)
{
    detach_fn detach = atomic_load_explicit(slot, memory_order_acquire);
    if (!detach) {
        detach = (detach_fn)lt_platform_real(name, NULL);
        atomic_store(slot, detach);
    }
    return detach;
}

static void detached(pthread_t th)
{
    if (lt_interpose_ready() && lt_enter(&lt_tls)) {
        lt_waitfor_detached((uintptr_t)th);
        lt_leave(&lt_tls);
    }
}

LT_EXPORT int pthread_detach(pthread_t th)
{
    static _Atomic(detach_fn) real;
    int rc = real_of(&real, "pthread_detach")(th);
    if (rc == 0)
        detached(th);
    return rc;
}

#if LT_C11_THREADS
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is a pthread_t (glibc)");

LT_EXPORT int thrd_detach(thrd_t th)
{
    static _Atomic(detach_fn) real;
    int rc = real_of(&real, "thrd_detach")(th);
    if (rc == thrd_success)
        detached(th);
    return rc;
}
#endif
