/*
 * cancel.c - asynchronous cancellation held off while the tracer runs (the program's
 * pthread_setcanceltype is interpose_cancel.c's).
 *
 * A thread that turned asynchronous cancellation on (pthread_setcanceltype) may be cancelled
 * at any instruction, the tracer's too: half-way through its held set, or holding a tracer
 * lock that its unwinding then leaves owned by a thread that is gone (uWSGI's graceful reload,
 * whose worker threads run with it on and are cancelled, hung on the tracer's thread registry
 * 3 times in 22; a program of threads cancelled while they make, take and free mutexes
 * crashed in every run). Such a thread is LT_BUSY_ASYNC while outside the tracer: lt_enter
 * turns cancellation to deferred before anything of the tracer's is touched (lt_enter_busy),
 * and lt_leave turns it back (the LT_CRIT_ASYNC bit of crit sends it to lt_leave_slow, which
 * asks lt_cancel_async_again), where glibc acts on a cancellation that came meanwhile. A lock
 * wait leaves the tracer first, so a thread blocked on a lock is still cancelled at once.
 * Only the calling thread's own fields change, so no other thread needs to know.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "lt_internal.h"
#include "platform.h"

/* Resolved at the first call: a library's constructor may turn cancellation asynchronous
 * before the tracer's own resolution ran. */
canceltype_fn lt_cancel_real(void)
{
    static _Atomic(canceltype_fn) real;
    canceltype_fn f = atomic_load_explicit(&real, memory_order_acquire);
    if (!f) {
        f = (canceltype_fn)lt_platform_real("pthread_setcanceltype", NULL);
        atomic_store(&real, f);
    }
    return f;
}

void lt_cancel_async_mark(lt_tls_block *b, int on)
{
    b->crit = (uint16_t)(on ? b->crit | LT_CRIT_ASYNC : b->crit & ~LT_CRIT_ASYNC);
    lt_busy_set(b, on ? LT_BUSY_ASYNC : LT_BUSY_OUT);
}

int lt_enter_busy(lt_tls_block *b)
{
    if (b->busy != LT_BUSY_ASYNC)
        return 0;
    lt_cancel_real()(PTHREAD_CANCEL_DEFERRED, NULL);
    lt_busy_set(b, LT_BUSY_IN);
    return 1;
}

/* lt_leave_slow, busy LT_BUSY_OUT again: back to asynchronous, where a cancellation that came
 * while deferred is acted on (glibc's pthread_setcanceltype does so), the thread outside. */
void lt_cancel_async_again(lt_tls_block *b)
{
    lt_busy_set(b, LT_BUSY_ASYNC);
    lt_cancel_real()(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
}

/* The thread leaves for good (thread.c's thread_exit): deferred from here on, and never
 * turned back, so that no cancellation that comes now unwinds the thread out of the tracer's
 * last work for it. */
void lt_cancel_async_end(lt_tls_block *b)
{
    if (b->crit & LT_CRIT_ASYNC) {
        lt_cancel_real()(PTHREAD_CANCEL_DEFERRED, NULL);
        b->crit = (uint16_t)(b->crit & ~LT_CRIT_ASYNC);
    }
}
