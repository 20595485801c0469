/*
 * cancel.c - asynchronous cancellation held off while the tracer runs (the program's
 * pthread_setcanceltype is interpose_cancel.c's); which waits a cancellation sent will end
 * (pthread_cancel, interpose_cancel.c, marks its thread; the end of this file).
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

#define CANCEL_GRACE_US (50 * 1000) /* for a cancellation to come (lt_cancel_ends_mine) */

/* Resolved at the first call: a library's constructor may turn cancellation asynchronous
 * before the tracer's own resolution ran. */
canceltype_fn lt_cancel_real(void)
{
    static _Atomic(void *) real;
    return (canceltype_fn)lt_platform_real_lazy(&real, "pthread_setcanceltype");
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

/* pthread_cancel(handle) is about to be sent: the thread with that handle is marked before,
 * so that a wait-for check that finds the canceller waiting (for the thread's exit, most
 * often) finds the mark too. A thread cancelled before it registered (between pthread_create
 * and its start) is not marked: its waits count as before, which only keeps a report. */
static void mark_cancelled(lt_thread *t, void *arg)
{
    if (t->handle == *(const uintptr_t *)arg)
        atomic_store(&t->cancelled, 1);
}

void lt_cancel_sent(uintptr_t handle)
{
    lt_thread_each(mark_cancelled, &handle);
}

/* A cancellation ends a wait of a thread whose cancellation is enabled when the wait is at a
 * cancellation point, or anywhere when the thread's type is asynchronous (the program's: the
 * tracer defers it only while the thread is inside, and its waits are outside). A lock request
 * is no cancellation point, so a thread with deferred cancellation that waits for a lock waits
 * on, cancelled or not. The state is asked of libc by turning cancellation off and back, as the
 * unwinds do: it has no getter, and inside the tracer (the type deferred) neither turn acts
 * on a cancellation already sent. */
int lt_cancel_would_end(const lt_tls_block *b, int at_point)
{
    int state;
    if (!at_point && !(b->crit & LT_CRIT_ASYNC))
        return 0;
    if (pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state) != 0)
        return 0;
    pthread_setcancelstate(state, NULL);
    return state == PTHREAD_CANCEL_ENABLE;
}

/* Whether the calling thread t has been sent a cancellation that ends the wait it begins now
 * (detect.c: a request that would never be granted). One not sent yet is given a grace to
 * come: a thread whose lock's holder was cancelled holding it asks for the lock while its
 * canceller is still cancelling the others in turn (a pool's stop). The nap is no
 * cancellation point (the thread is inside the tracer). */
int lt_cancel_ends_mine(const lt_thread *t, int at_point)
{
    if (!lt_cancel_would_end(&lt_tls, at_point))
        return 0;
    if (!atomic_load(&t->cancelled))
        lt_platform_nap(CANCEL_GRACE_US);
    return atomic_load(&t->cancelled);
}
