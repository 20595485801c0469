/*
 * interpose_once.c - pthread_once and C11 call_once (Linux: glibc's once word).
 *
 * A once-control is checked as a lock (kind LT_ONCE) that the thread running its init routine
 * holds: the init routine calling the same once again (directly or through callees) is a
 * self-deadlock found before libc waits for itself, and threads whose init routines wait for
 * each other's once-controls form a wait-for cycle. libc runs the init routine on the calling
 * thread but passes it no argument, so the routine is wrapped by a trampoline that finds its
 * record at the top of the thread's once_top list. Calls on a control already done return 0
 * at once, as libc's fast path does, and are not tracked: only a first, running init routine
 * can block anyone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#if LT_C11_THREADS
#include <threads.h>
#endif

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

static int (*real_pthread_once)(pthread_once_t *, void (*)(void)) LT_START_DATA;

void lt_interpose_once_resolve(void)
{
    real_pthread_once = (int (*)(pthread_once_t *, void (*)(void)))lt_platform_real(
        "pthread_once", NULL);
}

/* One init routine run through the tracer: its event (the once-control as a lock) and the
 * routine. `waiting`: the caller's wait for the control is published (it ends when this
 * thread turns out to be the one running the routine, or when libc returns). */
typedef struct lt_once_run {
    lt_event ev;
    void (*fn)(void);
    int waiting;
    int held; /* the control is held by this thread (trampoline) */
    struct lt_once_run *outer;
} lt_once_run;

/* glibc's once word: bit 1 set = done (the word is exactly 2 then). */
static inline int once_done(const pthread_once_t *ctl)
{
    return (__atomic_load_n(ctl, __ATOMIC_ACQUIRE) & 2) != 0;
}

static void run_end(void *arg)
{
    lt_once_run *r = arg;
    if (r->held && lt_enter(&lt_tls)) {
        lt_after_unlock(&r->ev, 0);
        lt_leave(&lt_tls);
    }
}

/* The thread cancelled while in once_slow's call of libc's pthread_once (in the routine, or
 * at the tracer's leave before it): its run and its wait end with it. */
static void once_cancelled(void *arg)
{
    lt_once_run *r = arg;
    int busy = lt_tls.busy;
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    r->ev.self->once_top = r->outer;
    if (r->waiting)
        lt_wait_end(&r->ev);
    lt_busy_restore(&lt_tls, busy);
}

/* libc calls this on the thread that runs the init routine: the control becomes held by it
 * for the routine's duration, also when the routine is cancelled (libc resets the control
 * then, and another caller runs it again). */
static void trampoline(void)
{
    lt_once_run *r = lt_tls.self->once_top;
    pthread_cleanup_push(run_end, r); /* (before the leave: interpose.c's wait says why) */
    if (lt_enter(&lt_tls)) {
        if (r->waiting)
            lt_wait_end(&r->ev);
        r->waiting = 0;
        lt_after_lock(&r->ev, 0);
        r->held = 1;
        lt_leave(&lt_tls);
    }
    r->fn();
    pthread_cleanup_pop(1);
}

/* The checked once of a control not yet done: returns 0, or EDEADLK when the call was refused
 * (LOCKTRACE_ACTION=edeadlk) because it could never return. Kept out of line: its event is built
 * on its frame, which a done control's call should not pay for. */
static __attribute__((noinline)) int once_slow(pthread_once_t *ctl, void (*fn)(void), lt_api api,
                                               uintptr_t ra, uintptr_t cfa)
{
    lt_once_run r = {{ctl, LT_ONCE, LT_MODE_WRITE, LT_WAIT_BLOCK, ra, cfa, NULL, NULL, NULL, 0, api, 0},
                     fn, 0, 0, NULL};
    if (once_done(ctl))
        return real_pthread_once(ctl, fn);
    if (!lt_enter(&lt_tls))
        return real_pthread_once(ctl, fn);
    r.ev.self = lt_self();
    if (!r.ev.self) {
        lt_leave(&lt_tls);
        return real_pthread_once(ctl, fn);
    }
    int rc = lt_before_lock(&r.ev);
    if (rc == 0 && r.ev.lock) {
        rc = lt_wait_begin(&r.ev);
        r.waiting = 1;
    }
    if (rc != 0) {
        if (r.waiting)
            lt_wait_end(&r.ev);
        lt_leave(&lt_tls);
        return rc;
    }
    r.outer = r.ev.self->once_top;
    r.ev.self->once_top = &r;
    pthread_cleanup_push(once_cancelled, &r); /* (before the leave, as trampoline's) */
    lt_leave(&lt_tls);
    rc = real_pthread_once(ctl, r.ev.lock ? trampoline : fn);
    lt_enter(&lt_tls);
    pthread_cleanup_pop(0);
    r.ev.self->once_top = r.outer;
    if (r.waiting)
        lt_wait_end(&r.ev);
    lt_leave(&lt_tls);
    return rc;
}

/* While the tracer resolves its real functions only the resolving thread runs (the others
 * wait for it): a once met then is run here, by glibc's rules. */
static int once_alone(pthread_once_t *ctl, void (*fn)(void))
{
    if (!once_done(ctl)) {
        fn();
        __atomic_store_n(ctl, 2, __ATOMIC_RELEASE);
    }
    return 0;
}

/* A control already done returns 0 at once, as glibc's own fast path does (an acquire load of
 * the word), before the tracer's readiness check and the event: most calls are such (libstdc++
 * calls it for every std::locale it constructs, so for every stream: Kea DHCP makes ~110 a
 * packet exchange), and they cost the tracer ~60 user-space instructions a call when they built
 * the event first, ~6 now. */
static inline int once(pthread_once_t *ctl, void (*fn)(void), lt_api api, uintptr_t ra, uintptr_t cfa)
{
    if (once_done(ctl))
        return 0;
    if (!lt_interpose_ready() || !real_pthread_once)
        return once_alone(ctl, fn);
    return once_slow(ctl, fn, api, ra, cfa);
}

LT_EXPORT int pthread_once(pthread_once_t *ctl, void (*fn)(void))
{
    return once(ctl, fn, LT_API_PTHREAD, (uintptr_t)__builtin_return_address(0),
                (uintptr_t)__builtin_dwarf_cfa());
}

#if LT_C11_THREADS
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag is a once word (glibc)");

LT_EXPORT void call_once(once_flag *flag, void (*fn)(void))
{
    once((pthread_once_t *)(void *)flag, fn, LT_API_C11, (uintptr_t)__builtin_return_address(0),
         (uintptr_t)__builtin_dwarf_cfa());
}
#endif
