/*
 * interpose_detach.c - pthread_detach: a detached thread is one no join waits for (waitfor.c,
 * lt_waitfor_detached).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

typedef int (*detach_fn)(pthread_t);
static _Atomic(detach_fn) real_detach;

LT_EXPORT int pthread_detach(pthread_t th)
{
    detach_fn detach = atomic_load_explicit(&real_detach, memory_order_acquire);
    if (!detach) {
        detach = (detach_fn)lt_platform_real("pthread_detach", NULL);
        atomic_store(&real_detach, detach);
    }
    int rc = detach(th);
    if (rc == 0 && lt_interpose_ready() && lt_enter(&lt_tls)) {
        lt_waitfor_detached((uintptr_t)th);
        lt_leave(&lt_tls);
    }
    return rc;
}
