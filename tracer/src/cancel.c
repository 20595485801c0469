/*
 * cancel.c - asynchronous cancellation held off while the tracer runs (the program's
 * pthread_setcanceltype is interpose_cancel.c's); which threads have been sent a cancellation
 * (pthread_cancel, interpose_cancel.c, marks them) and which waits it will end (the end of
 * this file).
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
#include <sched.h>
#include <time.h>

#include "lt_internal.h"
#include "platform.h"

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
    lt_cancel_settle(b->self);
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

/* ------------------------------------------------------------------------------------------
 * Which threads have been sent a cancellation. pthread_cancel(handle) marks the thread with
 * that handle (LT_CANCEL_MARKED) before libc sends it, so that a wait-for check that finds the
 * canceller waiting (for the thread's exit, most often) finds the mark too, and again once
 * libc has (LT_CANCEL_SENT), all inside the tracer, so that no cancellation of the canceller
 * comes in between. pthread_create returns the handle before the new thread has run the
 * tracer's start (interpose.c), and a pool's stop may cancel a thread that has not: the handle
 * then stays pending, and the thread takes its mark as it registers (lt_cancel_claim), as a
 * pthread_detach's does (waitfor.c). The handle is left pending before the walk of the
 * registry, and a thread's handle is set under the registry's lock: either the walk finds the
 * thread, or the thread registers after the walk and finds the handle (the same for the
 * second mark). A handle also stays pending when its thread has already left (a cancellation
 * of an exited thread not yet joined), and glibc gives the handle to a thread made later: each
 * pending handle keeps how many threads had been made when it was left (lt_thread_count), and
 * a thread made since takes no mark from it, only frees its slot. With every slot taken, the
 * cancellation is not marked, as none was before: its waits count, a report kept, none lost.
 * ---------------------------------------------------------------------------------------- */
#define PENDING 64
#define PENDING_FILLING ((uintptr_t)1) /* a slot being written: no handle is 1 */
#define PENDING_SENT ((uintptr_t)2)    /* in a pending handle (aligned): libc has sent it */

static _Atomic uintptr_t pending[PENDING];
static _Atomic int pending_made[PENDING]; /* lt_thread_count when the handle was left */
static _Atomic int npending LT_START_DATA; /* read by every registration */

static void pend(uintptr_t handle)
{
    for (int i = 0; i < PENDING; i++) {
        uintptr_t none = 0;
        if (atomic_compare_exchange_strong(&pending[i], &none, PENDING_FILLING)) {
            atomic_store(&pending_made[i], lt_thread_count());
            atomic_fetch_add(&npending, 1);
            atomic_store(&pending[i], handle);
            return;
        }
    }
}

/* Takes one slot of `handle` out of the pending set: its word (the handle, PENDING_SENT in it
 * once sent) and *made (its count), or 0 when there was none. */
static uintptr_t unpend(uintptr_t handle, int *made)
{
    for (int i = 0; i < PENDING; i++) {
        uintptr_t w = atomic_load(&pending[i]);
        if ((w & ~PENDING_SENT) != handle)
            continue;
        *made = atomic_load(&pending_made[i]); /* (written before the handle) */
        if (atomic_compare_exchange_strong(&pending[i], &w, 0)) {
            atomic_fetch_sub(&npending, 1);
            return w;
        }
    }
    return 0;
}

typedef struct marking {
    uintptr_t handle;
    int found;
} marking;

static void mark_cancelled(lt_thread *t, void *arg)
{
    marking *m = arg;
    uint8_t none = LT_CANCEL_NONE;
    if (t->handle == m->handle) {
        atomic_compare_exchange_strong(&t->cancelled, &none, LT_CANCEL_MARKED);
        m->found = 1;
    }
}

void lt_cancel_sent(uintptr_t handle)
{
    marking m = {handle, 0};
    int made;
    pend(handle);
    lt_thread_each(mark_cancelled, &m);
    if (m.found)
        unpend(handle, &made);
}

static void mark_sent(lt_thread *t, void *arg)
{
    uint8_t marked = LT_CANCEL_MARKED;
    if (t->handle == *(const uintptr_t *)arg)
        atomic_compare_exchange_strong(&t->cancelled, &marked, LT_CANCEL_SENT);
}

/* libc answered rc to pthread_cancel(handle): the pending handle is marked sent, or taken
 * out when libc refused (ESRCH), and so is the thread. */
void lt_cancel_delivered(uintptr_t handle, int rc)
{
    int made;
    for (int i = 0; i < PENDING && atomic_load(&npending); i++) {
        uintptr_t h = handle;
        if (rc == 0)
            atomic_compare_exchange_strong(&pending[i], &h, handle | PENDING_SENT);
        else if (atomic_load(&pending[i]) == handle)
            unpend(handle, &made);
    }
    if (rc == 0)
        lt_thread_each(mark_sent, &handle);
}

/* The calling thread t registers: the cancellations sent to its handle before, that is to
 * it if it was made before they were. */
void lt_cancel_claim(lt_thread *t)
{
    int made;
    uintptr_t w;
    while (atomic_load(&npending) && (w = unpend(t->handle, &made)) != 0)
        if (t->info.seq < made)
            atomic_store(&t->cancelled,
                         w & PENDING_SENT ? LT_CANCEL_SENT : LT_CANCEL_MARKED);
}

/* How long a thread waits for the cancellation marked for it to be sent (lt_cancel_settle):
 * its canceller goes from the mark to libc's send in microseconds, unless it is descheduled
 * or libc's pthread_cancel blocks. glibc's does where it first needs libgcc_s (the first
 * cancellation in a process of a thread that has not exited): it loads it, which takes the
 * loader's lock, and a thread that holds that lock (running a library's constructor) and joins
 * a thread there waited here for good (harm-cancel.25). After it the thread goes on as if the
 * cancellation had not been sent yet: natively too it may come at any later moment. */
#define MARKED_WAIT_MS 100

/* The calling thread t, outside the tracer, is about to wait where a cancellation would end
 * the wait (a join, a condition wait), or, with asynchronous cancellation on, to enter the
 * tracer. When it has been sent one with its cancellation enabled, one still due acts here,
 * where the call would act on it (a cancellation point's start) or could (anywhere,
 * asynchronous), and the thread unwinds from outside the tracer: pthread_testcancel acts on
 * one libc has marked, and a system call's return runs the signal by which libc sends one to a
 * thread with asynchronous cancellation on (glibc marks the thread in its handler only). If the
 * thread is still here, its cancellation has acted or the thread called pthread_exit: it runs
 * its cleanup handlers or key destructors, where POSIX has cancellation disabled and none
 * acts again, but glibc reads back enabled (and asynchronous, after one acted in a blocking
 * call). No cancellation ends its waits from now on (LT_CANCEL_SPENT): a cleanup handler that
 * joins a thread blocked on a lock it holds waits for good, a deadlock (it was silent, the
 * join taken for one the cancellation ends). A mark not yet sent is waited for: its canceller
 * is inside the tracer, in libc's pthread_cancel (a nap, which lets a canceller of any
 * priority run), for MARKED_WAIT_MS at most (see there). */
void lt_cancel_settle(lt_thread *t)
{
    int state;
    if (!t || atomic_load_explicit(&t->cancelled, memory_order_relaxed) == LT_CANCEL_NONE)
        return;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (atomic_load(&t->cancelled) == LT_CANCEL_MARKED) {
        lt_platform_nap(20);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >=
            MARKED_WAIT_MS)
            return;
    }
    if (atomic_load(&t->cancelled) != LT_CANCEL_SENT)
        return;
    sched_yield(); /* a system call, whose return runs the cancellation signal if it came */
    if (pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state) != 0)
        return;
    pthread_setcancelstate(state, NULL);
    if (state != PTHREAD_CANCEL_ENABLE)
        return;
    pthread_testcancel();
    atomic_store(&t->cancelled, LT_CANCEL_SPENT);
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
    if ((!at_point && !(b->crit & LT_CRIT_ASYNC)) ||
        (b->self && atomic_load(&b->self->cancelled) == LT_CANCEL_SPENT))
        return 0;
    if (pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state) != 0)
        return 0;
    pthread_setcancelstate(state, NULL);
    return state == PTHREAD_CANCEL_ENABLE;
}
