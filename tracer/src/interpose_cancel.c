/*
 * interpose_cancel.c - pthread_setcanceltype: a thread that turns asynchronous cancellation on
 * is marked, so that the tracer defers it while the thread is inside (cancel.c says why).
 * pthread_cancel: the thread it is for is marked, since the waits a cancellation ends are no
 * deadlock (waitfor.c).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

/* The program's call: marked before an asynchronous type takes effect (from then on a
 * cancellation may come at once), unmarked after a deferred one did. Called from inside the
 * tracer (a handler deferred to lt_leave), the call is the program's alone. */
LT_EXPORT int pthread_setcanceltype(int type, int *old)
{
    lt_tls_block *b = &lt_tls;
    canceltype_fn real = lt_cancel_real(); /* (resolved before the mark: no dlsym from a
                                              handler's lt_enter meanwhile) */
    int outside = lt_outside(b);
    if (outside && type == PTHREAD_CANCEL_ASYNCHRONOUS)
        lt_cancel_async_mark(b, 1);
    int rc = real(type, old);
    if (outside && (rc != 0 || type != PTHREAD_CANCEL_ASYNCHRONOUS) && b->busy == LT_BUSY_ASYNC)
        lt_cancel_async_mark(b, 0);
    return rc;
}

typedef int (*cancel_fn)(pthread_t);

/* Marked before libc sends the cancellation, and after: a thread with asynchronous
 * cancellation on may be gone at once. Inside the tracer, so that the canceller is not
 * cancelled in between (cancel.c); one that cancels itself is so as it leaves, where glibc
 * acts on it with asynchronous cancellation on (at its next cancellation point if not). */
LT_EXPORT int pthread_cancel(pthread_t th)
{
    static _Atomic(void *) real;
    cancel_fn cancel = (cancel_fn)lt_platform_real_lazy(&real, "pthread_cancel");
    if (!lt_interpose_ready() || !lt_enter(&lt_tls))
        return cancel(th);
    lt_cancel_sent((uintptr_t)th);
    int rc = cancel(th);
    lt_cancel_delivered((uintptr_t)th, rc);
    lt_leave(&lt_tls);
    return rc;
}
