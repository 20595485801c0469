/*
 * interpose_detach.c - pthread_detach. A join of a detached thread fails at once (glibc:
 * EINVAL; POSIX leaves it undefined), so it waits for nothing: the wait-for check must not
 * count it as waiting for that thread (waitfor.c reads lt_thread.detached). Threads created
 * detached are marked as they start (interpose.c). A thread detached before it has started
 * (registered) is not found here and stays unmarked: a join of it, undefined anyway, is then
 * taken as a wait, as before this file.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

typedef int (*detach_fn)(pthread_t);
static _Atomic(detach_fn) real_detach;

static void mark(lt_thread *t, void *arg)
{
    if (t->handle == *(const uintptr_t *)arg)
        t->detached = 1;
}

LT_EXPORT int pthread_detach(pthread_t th)
{
    detach_fn detach = atomic_load_explicit(&real_detach, memory_order_acquire);
    if (!detach) {
        detach = (detach_fn)lt_platform_real("pthread_detach", NULL);
        atomic_store(&real_detach, detach);
    }
    int rc = detach(th);
    if (rc == 0 && lt_interpose_ready() && lt_enter(&lt_tls)) {
        uintptr_t handle = (uintptr_t)th;
        lt_thread_each(mark, &handle);
        lt_leave(&lt_tls);
    }
    return rc;
}
