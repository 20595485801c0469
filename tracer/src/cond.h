/*
 * cond.h - condition-variable misuse (cond.c): who waits on which condition variable with
 * which mutex, so that a destroy while threads wait and one condition variable used with two
 * mutexes are reported. interpose.c calls these around the real condition calls.
 */
#ifndef LT_COND_H
#define LT_COND_H

#include "lt_internal.h"

/* One thread in a condition wait (or barrier wait): lives on that thread's stack for the
 * wait's duration. */
typedef struct lt_cond_waiter {
    const void *cv, *mutex; /* cv: the condition variable or barrier; mutex NULL: a barrier */
    lt_thread_info who;
    uintptr_t ra;       /* call site of the wait */
    uintptr_t cfa;      /* the waiting call's frame (waitfor.c: a shown wait's, left_behind) */
    int api;            /* lt_api of the wait (pthread_cond_wait, cnd_wait) */
    int shown;          /* a joiner's search published this wait for its thread (waitfor.c) */
    int timed;          /* a wait with a deadline: a destroy waits for it only until then */
    uint64_t ticket;    /* its arrival in the queue: older waiters have lower tickets */
    struct lt_cond_waiter *next, *prev; /* its condition variable's queue (cond.c) */
} lt_cond_waiter;

/* ev is the wait's mutex event (self, ra, api filled). */
void lt_cond_arrive(lt_event *ev, const void *cv, lt_cond_waiter *w);
/* woken: the wait returned 0 (a signal or broadcast woke it, or libc woke it spuriously). */
void lt_cond_leave(lt_cond_waiter *w, int woken);
void lt_cond_signalled(const void *cv, int all);
/* A condition wait of the thread with sequence number `seq`, as a joiner's search finds it:
 * `w` is where the thread's lt_thread.cond_wait points, `seen` a copy of it made with
 * lt_platform_read (the thread may have left the wait, and its frame, meanwhile; its stack
 * stays until the join). When w is
 * still that thread's wait, as seen, calls show(arg) while the thread cannot leave the wait,
 * marks w shown (the thread then calls lt_waitfor_shown_end as it leaves) and returns show's
 * result; 0 otherwise. */
int lt_cond_show(const lt_cond_waiter *seen, lt_cond_waiter *w, int seq,
                 int (*show)(void *arg), void *arg);
/* Whether a signal or broadcast since w arrived has marked it (1): it no longer waits for
 * one. 0 while unmarked, and for a wait that was not counted (no memory). */
int lt_cond_woken(const lt_cond_waiter *w);
/* A condition wait on cv with ev's mutex that does not do what it says (why: the thread does
 * not hold the mutex, or holds it more than once: held is then its entry, whose stack says
 * where the lock the wait keeps was taken). */
void lt_cond_wait_misuse(lt_event *ev, const void *cv, lt_reason why, const lt_held *held);
/* ev->addr is the condition variable; 1 when the destroy is refused (LOCKTRACE_ACTION=
 * edeadlk: it returns EBUSY without calling libc). */
int lt_cond_destroy(lt_event *ev);
void lt_cond_fork(lt_fork_phase phase);

/* A barrier wait on ev->addr begins (ev: kind LT_BARRIER, self, ra, api); lt_cond_leave(w, 0)
 * ends it. */
void lt_barrier_arrive(lt_event *ev, lt_cond_waiter *w);
/* Whether barrier b has waits here (inside the tracer: it takes cond.c's spinlock). */
int lt_barrier_recorded(const void *b);
/* A destroy or init (why: LT_WHY_DESTROY_WAITED, LT_WHY_INIT_WAITED) of barrier ev->addr
 * while glibc's word counts `blocked` threads in an incomplete round: reported when this
 * process has waiters on it to name. 1 when a destroy is to be refused (LOCKTRACE_ACTION=
 * edeadlk: it returns EBUSY without calling libc). */
int lt_barrier_waited(lt_event *ev, lt_reason why, unsigned blocked);

#endif
