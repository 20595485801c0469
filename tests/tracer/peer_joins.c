/*
 * peer_joins.c - deadlocks through pthread_join that Helgrind, DRD and ThreadSanitizer
 * programs show, and the legal joins next to them:
 *   - two threads that join each other (neither holds a lock);
 *   - three threads in a ring of joins;
 *   - a thread that holds a mutex, wakes a condition waiter of that mutex and joins it: the
 *     waiter must retake the mutex before its wait returns;
 *   - the same when the joiner has not signalled (whatever ends the wait, it needs the mutex),
 *     and through C11's thrd_join, cnd_wait and mtx_t, and when a detach of an exited thread
 *     came before (the new thread gets its descriptor);
 * and silent: a chain of joins that ends in a thread that exits, joins of exited and
 * detached threads, a timed join and a tryjoin of a blocked thread, a joiner holding a mutex
 * that its condition-waiting target does not use, a waiter the joiner wakes after letting the
 * mutex go, a "join" of a detached waiter (glibc refuses it at once; detached at creation, by
 * pthread_detach or by C11 thrd_detach), a pool of idle workers told to quit and joined, a cancelled waiter joined, a fork
 * child that joins nothing of its parent's; and a condition wait that a joiner's search shows
 * while its own thread is publishing it (the clock read below holds it there), whose stack
 * the later deadlock report shows whole.
 *   peer_joins NAME
 * Each scenario prints what its calls returned and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

#include "../pc.h"
#include "apis/poll.h"
#if defined(__x86_64__)
#include "trapstep.h"
#endif

#define NOINLINE __attribute__((noinline))
#define POOL 4

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER, other = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go, quit;
static pthread_t ring[3];
static blocked_probe probes[3];
static sem_t finished;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what,
           rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : rc == EBUSY ? "EBUSY" :
           rc == ETIMEDOUT ? "ETIMEDOUT" : rc == EINVAL ? "EINVAL" : strerror(rc));
    fflush(stdout);
}

/* ---- rings of joins ---- */

/* Ring member i joins member i + 1 (mod n) once it is there; the last to join closes the
 * ring. Each says what its join returned before it ends. */
typedef struct member {
    int i, n;
    sem_t *started;
} member;

NOINLINE static void join_next(int i, int n)
{
    pthread_t next = ring[(i + 1) % n];
    char what[32];
    blocked_announce_on(&probes[i], (const void *)next, 4096);
    int rc = pthread_join(next, NULL);
    snprintf(what, sizeof what, "join %d", i);
    result(what, rc);
}

static sem_t joined_ready;

static void *ring_member(void *arg)
{
    member *m = arg;
    sem_wait(&joined_ready); /* every handle of the ring is known */
    /* members join in order: each waits for the one before it to block in its join */
    if (m->i > 0)
        blocked_until(&probes[m->i - 1]);
    join_next(m->i, m->n);
    sem_post(&finished);
    return NULL;
}

/* Each member is joined only by the member before it, so the main thread waits for them by
 * semaphore. glibc 2.36 waits forever (peer-join.2n). With LOCKTRACE_ACTION=edeadlk the
 * closing join fails with EDEADLK, its thread ends, and the ring unwinds. */
NOINLINE static void join_ring(int n)
{
    member m[3];
    sem_init(&joined_ready, 0, 0);
    sem_init(&finished, 0, 0);
    for (int i = 0; i < n; i++) {
        m[i] = (member){i, n, NULL};
        pthread_create(&ring[i], NULL, ring_member, &m[i]);
    }
    for (int i = 0; i < n; i++)
        sem_post(&joined_ready);
    for (int i = 0; i < n; i++)
        sem_wait(&finished);
}

/* ---- a joiner holding the mutex its condition-waiting target retakes ---- */

static blocked_probe waiter;

NOINLINE static void wait_for_go(void)
{
    pthread_mutex_lock(&mutex);
    blocked_announce_on(&waiter, &cond, sizeof cond);
    while (!go)
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
}

static void *go_waiter(void *arg)
{
    (void)arg;
    wait_for_go();
    return NULL;
}

/* The joiner takes `held`, says go (signalling when `wake`; under `held` when that is the
 * waiter's mutex) and joins the waiter still holding `held`. If `held` is the waiter's
 * mutex, the waiter cannot return from its wait: a deadlock; with LOCKTRACE_ACTION=edeadlk
 * the join fails, the joiner lets the mutex go, wakes the waiter and joins again. */
static void say_go(void)
{
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&mutex);
}

NOINLINE static void join_holding(pthread_mutex_t *held, int wake)
{
    pthread_t t;
    pthread_create(&t, NULL, go_waiter, NULL);
    blocked_until(&waiter);
    pthread_mutex_lock(held);
    if (held == &mutex && wake) {
        go = 1;
        pthread_cond_signal(&cond);
    }
    struct timespec deadline = ms_from_now(20);
    if (held != &mutex) /* the waiter is not woken yet: a join can only time out */
        result("timedjoin", pthread_timedjoin_np(t, NULL, &deadline));
    else
        result("join", pthread_join(t, NULL));
    pthread_mutex_unlock(held);
    if (!go)
        say_go();
    result("join again", pthread_join(t, NULL));
}

/* The same through C11 <threads.h>: thrd_join holding the mtx_t of the waiter's cnd_wait. */
static mtx_t c11_mutex;
static cnd_t c11_cond;
static int c11_go;

NOINLINE static void c11_wait_for_go(void)
{
    mtx_lock(&c11_mutex);
    blocked_announce_on(&waiter, &c11_cond, sizeof c11_cond);
    while (!c11_go)
        cnd_wait(&c11_cond, &c11_mutex);
    mtx_unlock(&c11_mutex);
}

static int c11_waiter(void *arg)
{
    (void)arg;
    c11_wait_for_go();
    return 5;
}

static const char *thrd_word(int rc)
{
    return rc == thrd_success ? "thrd_success" : rc == thrd_error ? "thrd_error" : "?";
}

NOINLINE static void c11_join_holding(void)
{
    thrd_t t;
    int res = 0;
    mtx_init(&c11_mutex, mtx_plain);
    cnd_init(&c11_cond);
    thrd_create(&t, c11_waiter, NULL);
    blocked_until(&waiter);
    mtx_lock(&c11_mutex);
    c11_go = 1;
    cnd_signal(&c11_cond);
    int rc = thrd_join(t, &res);
    printf("thrd_join -> %s\n", thrd_word(rc));
    mtx_unlock(&c11_mutex);
    if (rc != thrd_success)
        printf("thrd_join again -> %s\n", thrd_word(thrd_join(t, &res)));
    printf("result %d\n", res);
}

/* The same as join_detached through C11: the waiter detached by thrd_detach right after
 * thrd_create, or by itself; glibc's thrd_join refuses the join of a detached thread
 * (thrd_error). */
static int c11_detached_waiter(void *arg)
{
    if (arg) /* it detaches itself, registered by then for sure */
        printf("thrd_detach -> %s\n", thrd_word(thrd_detach(thrd_current())));
    c11_wait_for_go();
    sem_post(&finished);
    return 0;
}

NOINLINE static void c11_join_detached(int itself)
{
    thrd_t t;
    sem_init(&finished, 0, 0);
    mtx_init(&c11_mutex, mtx_plain);
    cnd_init(&c11_cond);
    thrd_create(&t, c11_detached_waiter, itself ? &t : NULL);
    if (!itself)
        printf("thrd_detach -> %s\n", thrd_word(thrd_detach(t)));
    blocked_until(&waiter);
    mtx_lock(&c11_mutex);
    c11_go = 1;
    cnd_signal(&c11_cond);
    printf("thrd_join -> %s\n", thrd_word(thrd_join(t, NULL)));
    mtx_unlock(&c11_mutex);
    sem_wait(&finished);
}

/* A detach of a thread that has already exited, then a new thread, which glibc gives the
 * exited one's cached descriptor (the same pthread_t): that detach is not the new thread's,
 * and a join that waits for it while holding the mutex of its wait is a deadlock found. */
static void *exits_at_once(void *arg)
{
    (void)arg;
    return NULL;
}

NOINLINE static void detach_exited_then_join_new(void)
{
    pthread_t gone, t;
    clockid_t clock;
    pthread_create(&gone, NULL, exits_at_once, NULL);
    while (pthread_getcpuclockid(gone, &clock) != ESRCH) /* glibc: its kernel tid is cleared */
        sched_yield();
    result("detach of an exited thread", pthread_detach(gone));
    pthread_create(&t, NULL, go_waiter, NULL);
    blocked_until(&waiter);
    pthread_mutex_lock(&mutex);
    result("join", pthread_join(t, NULL));
    pthread_mutex_unlock(&mutex);
}

/* The joiner lets the mutex go before it joins: the waiter retakes it and returns. */
NOINLINE static void wake_then_join(void)
{
    pthread_t t;
    pthread_create(&t, NULL, go_waiter, NULL);
    blocked_until(&waiter);
    say_go();
    result("join", pthread_join(t, NULL));
}

/* The joiner holds the mutex a detached condition waiter must retake, and joins it: glibc
 * refuses the join (EINVAL; POSIX leaves it undefined), so nothing waits. The thread is
 * detached when created, or by pthread_detach. */
static void *detached_waiter(void *arg)
{
    (void)arg;
    wait_for_go();
    sem_post(&finished);
    return NULL;
}

NOINLINE static void join_detached(int at_create)
{
    pthread_t t;
    pthread_attr_t attr;
    sem_init(&finished, 0, 0);
    pthread_attr_init(&attr);
    if (at_create)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &attr, detached_waiter, NULL);
    pthread_attr_destroy(&attr);
    if (!at_create) /* mostly before the thread has started (interpose_detach.c) */
        result("detach", pthread_detach(t));
    blocked_until(&waiter);
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_signal(&cond);
    result("join", pthread_join(t, NULL));
    pthread_mutex_unlock(&mutex);
    sem_wait(&finished);
}

/* ---- legal joins ---- */

static void *returns(void *arg)
{
    return arg;
}

static void *joins_returner(void *arg)
{
    pthread_t t;
    (void)arg;
    pthread_create(&t, NULL, returns, NULL);
    result("inner join", pthread_join(t, NULL));
    return NULL;
}

static sem_t release;

static void *waits_for_release(void *arg)
{
    (void)arg;
    sem_wait(&release);
    return NULL;
}

/* main joins A, A joins B, B returns: a chain, not a cycle; then a thread joined long after
 * it exited, and a detached one that still runs (EINVAL from glibc). */
NOINLINE static void legal_joins(void)
{
    pthread_t a, done, detached;
    pthread_attr_t attr;
    pthread_create(&a, NULL, joins_returner, NULL);
    result("outer join", pthread_join(a, NULL));
    pthread_create(&done, NULL, returns, NULL);
    sem_init(&release, 0, 0);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&detached, &attr, waits_for_release, NULL);
    pthread_attr_destroy(&attr);
    result("detached join", pthread_join(detached, NULL));
    sem_post(&release);
    result("exited join", pthread_join(done, NULL));
}

/* A timed join and a tryjoin of a thread that waits on a condition variable with the mutex
 * the joiner holds: they return, and the waiter goes on once the joiner lets the mutex go. */
NOINLINE static void timed_joins(void)
{
    pthread_t t;
    pthread_create(&t, NULL, go_waiter, NULL);
    blocked_until(&waiter);
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_signal(&cond);
    struct timespec deadline = ms_from_now(20);
    result("timedjoin", pthread_timedjoin_np(t, NULL, &deadline));
    result("tryjoin", pthread_tryjoin_np(t, NULL));
    pthread_mutex_unlock(&mutex);
    result("join", pthread_join(t, NULL));
}

/* A pool of workers idle in condition waits, told to quit by broadcast and joined, once with
 * the pool's mutex let go and once with another mutex held by the joiner. */
static int idle;

static void *pool_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mutex);
    idle++;
    while (!quit)
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

NOINLINE static void idle_pool(void)
{
    pthread_t w[POOL];
    for (int i = 0; i < POOL; i++)
        pthread_create(&w[i], NULL, pool_worker, NULL);
    for (;;) {
        pthread_mutex_lock(&mutex);
        int n = idle;
        pthread_mutex_unlock(&mutex);
        if (n == POOL)
            break;
        sched_yield();
    }
    pthread_mutex_lock(&other);
    pthread_mutex_lock(&mutex);
    quit = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mutex);
    for (int i = 0; i < POOL; i++)
        result("pool join", pthread_join(w[i], NULL));
    pthread_mutex_unlock(&other);
}

/* A waiter cancelled in its condition wait (its cleanup lets the retaken mutex go) and
 * joined by a thread that held that mutex to cancel it and let it go before joining. */
static void unlock_mutex(void *arg)
{
    pthread_mutex_unlock(arg);
}

static void *cancellable_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mutex);
    pthread_cleanup_push(unlock_mutex, &mutex);
    blocked_announce_on(&waiter, &cond, sizeof cond);
    for (;;)
        pthread_cond_wait(&cond, &mutex);
    pthread_cleanup_pop(1);
    return NULL;
}

NOINLINE static void cancelled_waiter(void)
{
    pthread_t t;
    void *ret;
    pthread_create(&t, NULL, cancellable_waiter, NULL);
    blocked_until(&waiter);
    pthread_mutex_lock(&mutex);
    result("cancel", pthread_cancel(t));
    pthread_mutex_unlock(&mutex);
    result("join", pthread_join(t, &ret));
    puts(ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
}

/* A fork while a thread is joining a condition waiter: the child has neither; it joins a
 * thread of its own and exits; the parent's join returns once the waiter is told to go. */
static blocked_probe joiner;

static void *joins_waiter(void *arg)
{
    blocked_announce_on(&joiner, (const void *)**(pthread_t **)arg, 4096);
    result("join in parent", pthread_join(**(pthread_t **)arg, NULL));
    return NULL;
}

NOINLINE static void fork_while_joining(void)
{
    pthread_t w, j, *target = &w;
    int status;
    pthread_create(&w, NULL, go_waiter, NULL);
    blocked_until(&waiter);
    pthread_create(&j, NULL, joins_waiter, &target);
    blocked_until(&joiner);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t own;
        pthread_create(&own, NULL, returns, NULL);
        _exit(pthread_join(own, NULL) == 0 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    printf("child -> %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    say_go();
    pthread_join(j, NULL);
}

/* ---- a joiner's search shows a condition wait its thread is publishing itself ---- */

/* The waiter holds `other` and waits on `cond` with `mutex`; the tracer publishes that wait
 * (it holds a lock), and reads the clock on the way, after it has recorded where the wait is
 * and before it takes its wait-for lock. This program's clock_gettime (the tracer's call
 * comes here: -rdynamic) holds the waiter there, once, until the main thread sleeps in its
 * join of it, whose search has shown the wait meanwhile (a condition wait found from its
 * record, with its call site alone). Then a third thread takes `mutex`, which the wait must
 * retake, and asks for `other`: a deadlock, whose report shows where the waiter waits, with
 * the caller of its wait. */
static _Atomic int hook_tid; /* the waiter, from its wait until the clock read */
static _Atomic int held_at_clock;
static blocked_probe joining, publisher;

int clock_gettime(clockid_t clock, struct timespec *t)
{
    if (atomic_load(&hook_tid) && atomic_load(&hook_tid) == blocked_tid()) {
        atomic_store(&hook_tid, 0);
        atomic_store(&held_at_clock, 1);
        blocked_until(&joining);
    }
    return (int)syscall(SYS_clock_gettime, clock, t);
}

NOINLINE static void wait_holding_other(void)
{
    pthread_mutex_lock(&mutex);
    blocked_announce_on(&publisher, &cond, sizeof cond);
    atomic_store(&hook_tid, blocked_tid());
    while (!go)
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
}

NOINLINE static void hold_other_and_wait(void)
{
    pthread_mutex_lock(&other);
    wait_holding_other();
    pthread_mutex_unlock(&other);
}

static void *publishing_waiter(void *arg)
{
    (void)arg;
    hold_other_and_wait();
    return NULL;
}

NOINLINE static void *closes_cycle(void *arg)
{
    (void)arg;
    blocked_until(&publisher);
    pthread_mutex_lock(&mutex);
    pthread_mutex_lock(&other);
    pthread_mutex_unlock(&other);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

NOINLINE static void join_while_published(void)
{
    pthread_t w, c;
    pthread_create(&w, NULL, publishing_waiter, NULL);
    pthread_create(&c, NULL, closes_cycle, NULL);
    while (!atomic_load(&held_at_clock))
        sched_yield();
    blocked_announce_on(&joining, (const void *)w, 4096);
    result("join", pthread_join(w, NULL));
    pthread_join(c, NULL);
}

/* ---- a shown wait, and a signal handler's lock wait in its thread ---- */

/* The waiter's last wait before its condition wait was made far down its stack (a lock call
 * under a 256 KiB frame); its condition wait, holding nothing, is not published, and the
 * main thread's join, holding `other`, shows it. A signal handler in the waiter then waits
 * for a lock (`hand`, which the third thread holds until the handler sleeps on it): a wait
 * nested in the shown one, below it on the stack, which leaves the shown wait in place. Once
 * the waiter sleeps in its condition wait again, the third thread takes `mutex`, which that
 * wait must retake, and asks for `other`: a deadlock through the shown wait. The shown wait
 * had the frame of the waiter's last wait, and the handler's wait, above that one, took the
 * shown wait down as one left behind: the deadlock went unreported and the program hung. */
static pthread_mutex_t deep = PTHREAD_MUTEX_INITIALIZER, hand = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe deep_waiter, handler_waiter, cond_waiter;
static _Atomic int handled;

NOINLINE static void lock_deep(void)
{
    volatile char pad[256 * 1024];
    pad[0] = 1;
    blocked_announce_on(&deep_waiter, &deep, sizeof deep);
    pthread_mutex_lock(&deep);
    pthread_mutex_unlock(&deep);
    pad[sizeof pad - 1] = pad[0];
}

static void take_hand(int sig)
{
    (void)sig;
    blocked_announce_on(&handler_waiter, &hand, sizeof hand);
    pthread_mutex_lock(&hand);
    pthread_mutex_unlock(&hand);
    atomic_store(&handled, 1);
}

NOINLINE static void wait_after_deep(void)
{
    lock_deep();
    pthread_mutex_lock(&mutex);
    blocked_announce_on(&cond_waiter, &cond, sizeof cond);
    while (!go)
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
}

static void *deep_then_wait(void *arg)
{
    (void)arg;
    wait_after_deep();
    return NULL;
}

NOINLINE static void *signal_then_close(void *arg)
{
    pthread_t w = *(pthread_t *)arg;
    blocked_until(&joining); /* the join has shown the wait */
    pthread_mutex_lock(&hand);
    pthread_kill(w, SIGUSR1);
    blocked_until(&handler_waiter);
    pthread_mutex_unlock(&hand);
    while (!atomic_load(&handled))
        sched_yield();
    blocked_until(&cond_waiter); /* back in its condition wait */
    pthread_mutex_lock(&mutex);
    pthread_mutex_lock(&other);
    pthread_mutex_unlock(&other);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

NOINLINE static void join_shown_then_handler(void)
{
    pthread_t w, c;
    struct sigaction sa = {.sa_handler = take_hand, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_mutex_lock(&deep);
    pthread_create(&w, NULL, deep_then_wait, NULL);
    blocked_until(&deep_waiter);
    pthread_mutex_unlock(&deep);
    blocked_until(&cond_waiter);
    pthread_mutex_lock(&other);
    pthread_create(&c, NULL, signal_then_close, &w);
    blocked_announce_on(&joining, (const void *)w, 4096);
    result("join", pthread_join(w, NULL));
    pthread_mutex_unlock(&other);
    pthread_join(c, NULL);
}

#if defined(__x86_64__)
/* ---- a condition wait shown before its own thread looks at its wait slot ---- */

/* The waiter holds `reads` for read and waits on `cond` with `mutex`: a wait the tracer
 * publishes (it holds a lock), with its read hold indexed for the writers that wait for it.
 * Single-stepped from just before the wait (trapstep.h), the waiter is held at the entry of
 * the tracer's lt_waitfor_cond_begin, its wait recorded but not yet looked at, until the
 * main thread sleeps in its join, whose search has shown the wait meanwhile. The third thread
 * then takes `mutex`, which the wait must retake, and asks to write `reads`: a deadlock
 * through the waiter's read hold. The waiter used to keep the shown wait, without its read
 * holds (nor its signaller hint): the deadlock went unreported and the program hung. A
 * first wait at the same place, holding nothing and unstepped, makes the tracer's first-time
 * work there (with every signal blocked, a trap would kill).
 * The same through the signaller hint (hinted): the waiter holds `other` instead; between the
 * rounds the third thread signals `cond` (nobody waits: it is the condition variable's last
 * signaller), then, the wait shown and the waiter asleep in it, asks for `other`: a cycle
 * through the hint (a warning, once every other thread is seen asleep), after which the
 * program stays stuck until killed. The shown wait had no hint: nothing was reported. */
static pthread_rwlock_t reads = PTHREAD_RWLOCK_INITIALIZER;
static uintptr_t cond_begin;
static volatile sig_atomic_t stepping;
static _Atomic int held_at_begin, first_round_over, hinted;
static blocked_probe stepped_waiter;

static void step_to_cond_begin(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info;
    ucontext_t *uc = uctx;
    if (!stepping) {
        trapstep_flag(uc, 0);
        return;
    }
    if (pc_interrupted(uc) != cond_begin) {
        trapstep_flag(uc, 1);
        return;
    }
    stepping = 0;
    trapstep_flag(uc, 0);
    atomic_store(&held_at_begin, 1);
    blocked_until(&joining);
}

NOINLINE static void wait_round(int round)
{
    pthread_mutex_lock(&mutex);
    blocked_announce_on(&stepped_waiter, &cond, sizeof cond);
    if (round) {
        stepping = 1;
        raise(SIGTRAP);
    }
    while (go <= round)
        pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
}

static void *read_and_wait(void *arg)
{
    (void)arg;
    wait_round(0);
    pthread_rwlock_rdlock(&reads);
    wait_round(1);
    pthread_rwlock_unlock(&reads);
    return NULL;
}

NOINLINE static void *write_reads(void *arg)
{
    (void)arg;
    blocked_until(&joining);
    blocked_until(&stepped_waiter); /* in its condition wait */
    pthread_mutex_lock(&mutex);
    pthread_rwlock_wrlock(&reads);
    pthread_rwlock_unlock(&reads);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

static void *hold_and_wait(void *arg)
{
    (void)arg;
    wait_round(0);
    atomic_store(&first_round_over, 1);
    pthread_mutex_lock(&other);
    while (!atomic_load(&hinted))
        sched_yield();
    wait_round(1);
    pthread_mutex_unlock(&other);
    return NULL;
}

NOINLINE static void *signal_then_want_other(void *arg)
{
    (void)arg;
    while (!atomic_load(&first_round_over)) /* its signal was main's */
        sched_yield();
    pthread_cond_signal(&cond);
    atomic_store(&hinted, 1);
    blocked_until(&joining);
    blocked_until(&stepped_waiter); /* in its condition wait */
    pthread_mutex_lock(&other);
    pthread_mutex_unlock(&other);
    return NULL;
}

NOINLINE static void join_shown_before_look(int hint)
{
    pthread_t w, c;
    cond_begin = trapstep_tracer_function("lt_waitfor_cond_begin");
    if (!cond_begin || pc_probe_install(SIGTRAP, step_to_cond_begin, 0) != 0) {
        puts("lt_waitfor_cond_begin not found");
        return;
    }
    pthread_create(&w, NULL, hint ? hold_and_wait : read_and_wait, NULL);
    if (hint) /* every thread there before the hint's signal */
        pthread_create(&c, NULL, signal_then_want_other, NULL);
    blocked_until(&stepped_waiter);
    say_go(); /* go 1: the first round ends */
    while (!atomic_load(&held_at_begin))
        sched_yield();
    if (!hint)
        pthread_create(&c, NULL, write_reads, NULL);
    blocked_announce_on(&joining, (const void *)w, 4096);
    result("join", pthread_join(w, NULL));
    pthread_join(c, NULL);
}
#endif

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "join-each-other"))
        join_ring(2);
    else if (!strcmp(s, "join-ring"))
        join_ring(3);
    else if (!strcmp(s, "wake-join-holding"))
        join_holding(&mutex, 1);
    else if (!strcmp(s, "c11-wake-join-holding"))
        c11_join_holding();
    else if (!strcmp(s, "join-holding"))
        join_holding(&mutex, 0);
    else if (!strcmp(s, "join-holding-other"))
        join_holding(&other, 0);
    else if (!strcmp(s, "wake-then-join"))
        wake_then_join();
    else if (!strcmp(s, "join-detached-at-create"))
        join_detached(1);
    else if (!strcmp(s, "join-detached"))
        join_detached(0);
    else if (!strcmp(s, "c11-join-detached"))
        c11_join_detached(0);
    else if (!strcmp(s, "c11-join-self-detached"))
        c11_join_detached(1);
    else if (!strcmp(s, "detach-exited-join-new"))
        detach_exited_then_join_new();
    else if (!strcmp(s, "legal-joins"))
        legal_joins();
    else if (!strcmp(s, "timed-joins"))
        timed_joins();
    else if (!strcmp(s, "idle-pool"))
        idle_pool();
    else if (!strcmp(s, "cancelled-waiter"))
        cancelled_waiter();
    else if (!strcmp(s, "fork-while-joining"))
        fork_while_joining();
    else if (!strcmp(s, "join-while-published"))
        join_while_published();
    else if (!strcmp(s, "join-shown-then-handler"))
        join_shown_then_handler();
#if defined(__x86_64__)
    else if (!strcmp(s, "join-shown-before-look"))
        join_shown_before_look(0);
    else if (!strcmp(s, "join-shown-before-look-hinted"))
        join_shown_before_look(1);
#endif
    else {
        fprintf(stderr, "peer_joins: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
