/*
 * interpose_barrier.c - pthread_barrier_init, _wait and _destroy (Linux: glibc's barrier
 * word). A destroy while threads wait in a round not yet complete makes glibc's destroy wait
 * for them forever; an init then forgets their round. Both are reported (barrier-misuse),
 * the destroy with LOCKTRACE_ACTION's outcome: abort, or EBUSY without destroying (POSIX
 * lets a destroy of a barrier in use fail so). Waits are records in cond.c's queues; which
 * of them are in an incomplete round, glibc's word says (lt_platform_barrier_blocked).
 * Everything else goes to libc untouched: an init glibc refuses (count 0) stays its EINVAL,
 * and a barrier nobody waits on costs a wait two short spinlock turns and nothing more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"
#include "report.h"

#define CALLER (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa()

typedef int (*init_fn)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
typedef int (*one_fn)(pthread_barrier_t *);


/* Enters the tracer for barrier b (ev->self set); 0 when the tracer is not to look. */
static int enter(lt_event *ev, pthread_barrier_t *b, uintptr_t ra, uintptr_t cfa)
{
    *ev = (lt_event){.addr = b, .kind = LT_BARRIER, .wait = LT_WAIT_BLOCK, .ra = ra, .cfa = cfa,
                     .api = LT_API_PTHREAD};
    if (!lt_interpose_ready() || atomic_load_explicit(&lt_untracked, memory_order_relaxed) ||
        !lt_enter(&lt_tls))
        return 0;
    if ((ev->self = lt_self()) == NULL)
        lt_leave(&lt_tls);
    return ev->self != NULL;
}

/* The threads glibc counts in an incomplete round of b, when this process has waits on b
 * (else b may be memory no init has made a barrier yet: its word says nothing). Inside the
 * tracer: a signal handler's condition signal must not find cond.c's spinlock taken. */
static unsigned blocked_on(const pthread_barrier_t *b)
{
    unsigned blocked = 0;
    if (lt_interpose_ready() && lt_enter(&lt_tls)) {
        blocked = lt_barrier_recorded(b) ? lt_platform_barrier_blocked(b) : 0;
        lt_leave(&lt_tls);
    }
    return blocked;
}

/* 1 when the call is refused. */
static int waited(pthread_barrier_t *b, lt_reason why, unsigned blocked, uintptr_t ra,
                  uintptr_t cfa)
{
    lt_event ev;
    int refused = 0;
    if (blocked && enter(&ev, b, ra, cfa)) {
        refused = lt_barrier_waited(&ev, why, blocked);
        lt_leave(&lt_tls);
    }
    return refused;
}

/* An init forgets the round of threads that wait: read before, reported once libc accepted
 * the init (a count of 0 is refused and changes nothing). */
LT_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr,
                                   unsigned count)
{
    static _Atomic(void *) real; /* a library's constructor may start its threads at a barrier */
    unsigned blocked = blocked_on(b);
    int rc = ((init_fn)lt_platform_real_lazy(&real, "pthread_barrier_init"))(b, attr, count);
    if (rc == 0)
        waited(b, LT_WHY_INIT_WAITED, blocked, CALLER);
    return rc;
}

LT_EXPORT int pthread_barrier_destroy(pthread_barrier_t *b)
{
    static _Atomic(void *) real;
    if (waited(b, LT_WHY_DESTROY_WAITED, blocked_on(b), CALLER))
        return EBUSY;
    return ((one_fn)lt_platform_real_lazy(&real, "pthread_barrier_destroy"))(b);
}

/* Not a cancellation point, but asynchronous cancellation or a pthread_exit from a signal
 * handler can end the wait: the record leaves the queue then too (glibc keeps counting the
 * thread's arrival, and its word is what decides). */
static void left(void *arg)
{
    lt_cond_waiter *w = arg;
    if (w->cv && lt_enter(&lt_tls)) {
        lt_cond_leave(w, 0);
        lt_leave(&lt_tls);
    }
}

LT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    static _Atomic(void *) real;
    one_fn wait = (one_fn)lt_platform_real_lazy(&real, "pthread_barrier_wait");
    lt_event ev;
    lt_cond_waiter w = {0};
    int rc;
    pthread_cleanup_push(left, &w); /* (before the leave: interpose.c's wait says why) */
    if (enter(&ev, b, CALLER)) {
        lt_barrier_arrive(&ev, &w);
        lt_leave(&lt_tls);
    }
    rc = wait(b);
    pthread_cleanup_pop(1);
    return rc;
}
