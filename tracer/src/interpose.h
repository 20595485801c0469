/*
 * interpose.h - interpose.c's shared paths, for entry points kept in files of their own
 * (interpose_c11.c). Each takes the program's call site (ra, cfa) from the entry point that
 * received the call, so stacks start in the program.
 */
#ifndef LT_INTERPOSE_H
#define LT_INTERPOSE_H

#include <pthread.h>
#include <time.h>

#include "lt_internal.h"

/* One lock request: the event, and the deadline of a timed request (clock given or
 * CLOCK_REALTIME). */
typedef struct lt_call {
    lt_event ev;
    int has_clock;
    clockid_t clock;
    const struct timespec *abstime;
} lt_call;

/* 1 when the tracer is ready; 0 inside the resolving thread's own resolution (then the
 * entry point answers success without locking: there is only that one thread). */
int lt_interpose_ready(void);
/* The checked lock request of c->ev (kind, mode, wait), made with the real pthread function
 * of that kind; returns its errno result. */
int lt_interpose_acquire(lt_call *c);
/* The checked condition wait on cv with the mutex of c->ev. */
int lt_interpose_cond_wait(lt_call *c, pthread_cond_t *cv);
/* The destroy check of condition variable cv: EBUSY when the destroy is refused. */
int lt_interpose_cond_destroy(void *cv, lt_api api, uintptr_t ra, uintptr_t cfa);
/* The checked unlock, made with the real pthread unlock of that kind; its errno result. */
int lt_interpose_unlock(const void *lock, lt_kind kind, lt_api api, uintptr_t ra, uintptr_t cfa);
/* One event around an init or destroy (fn from detect.h). */
void lt_interpose_hook(void (*fn)(lt_event *), const void *lock, lt_kind kind, lt_api api,
                       uintptr_t ra, uintptr_t cfa);
/* A join (pthread_join, thrd_join) as a wait the wait-for check sees: join(th, arg) makes
 * the real call; its result is returned, or EDEADLK when the wait would close a deadlock
 * (LOCKTRACE_ACTION=edeadlk). api names the call in reports; ra and cfa are the program's
 * call, as for a lock call (its stack is read through the call-site table, not unwound). */
int lt_interpose_join(pthread_t th, int (*join)(pthread_t th, void *arg), void *arg, lt_api api,
                      uintptr_t ra, uintptr_t cfa);
/* A child made by the fork system call itself (interpose_vfork.c): prepare (0 when the
 * tracer has not started: then nothing else), then parent or child after the call. */
int lt_interpose_fork_unseen_prepare(void);
void lt_interpose_fork_unseen_parent(void);
void lt_interpose_fork_unseen_child(void);
/* interpose_c11.c, interpose_once.c: resolve their real functions, from interpose.c's one
 * resolution. */
void lt_interpose_c11_resolve(void);
void lt_interpose_once_resolve(void);
/* A thread start through the tracer: lt_interpose_start_new (in the creating thread, NULL when
 * the tracer does not follow it) and lt_interpose_started (first thing in the new thread:
 * registers it, frees the record and returns its copy). */
typedef struct lt_start {
    void *fn;
    void *arg;
    int seq;
    int detached; /* created detached: no join of it ever waits (waitfor.c) */
} lt_start;
lt_start *lt_interpose_start_new(void *fn, void *arg);
lt_start lt_interpose_started(lt_start *s);

#endif
