/*
 * interpose_detach.c - pthread_detach and C11 thrd_detach: a detached thread is one no join
 * waits for (waitfor.c, lt_waitfor_detached). glibc's thrd_detach calls its internal detach,
 * not the exported pthread_detach, so it needs an entry of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>
#if LT_C11_THREADS
#include <threads.h>
#endif

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

typedef int (*detach_fn)(pthread_t);


/* Whether th has exited: glibc clears a thread's kernel tid as it exits, and
 * pthread_getcpuclockid answers ESRCH for it then. Asked before the detach, which frees the
 * descriptor of an exited thread. */
static int exited(pthread_t th)
{
    clockid_t clock;
    return pthread_getcpuclockid(th, &clock) == ESRCH;
}

/* A detach of a thread that has exited frees it and marks nothing: left pending, its handle
 * would be claimed by the next thread that glibc gives the same cached descriptor, whose joins
 * would then wait unseen. */
static void detached(pthread_t th, int gone)
{
    if (!gone && lt_interpose_ready() && lt_enter(&lt_tls)) {
        lt_waitfor_detached((uintptr_t)th);
        lt_leave(&lt_tls);
    }
}

LT_EXPORT int pthread_detach(pthread_t th)
{
    static _Atomic(void *) real; /* a library's constructor may detach before the tracer's
                                    own resolution ran */
    int gone = exited(th);
    int rc = ((detach_fn)lt_platform_real_lazy(&real, "pthread_detach"))(th);
    if (rc == 0)
        detached(th, gone);
    return rc;
}

#if LT_C11_THREADS
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is a pthread_t (glibc)");

LT_EXPORT int thrd_detach(thrd_t th)
{
    static _Atomic(void *) real;
    int gone = exited(th);
    int rc = ((detach_fn)lt_platform_real_lazy(&real, "thrd_detach"))(th);
    if (rc == thrd_success)
        detached(th, gone);
    return rc;
}
#endif
