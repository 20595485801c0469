/*
 * scenarios.c - one small program per rule and per misuse, chosen by name:
 *   scenarios NAME
 * Each scenario ends by printing what its last lock call returned ("rdlock -> EDEADLK"), so
 * the same program shows what libc alone does, what the tracer reports, and what
 * LOCKTRACE_ACTION=edeadlk hands back. Functions are global and not inlined so that stacks
 * name them (the test build links with -rdynamic). meson.build holds the table of expected
 * outcomes, with the rule each row checks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../blocked.h"
#include "locktrace.h"

#define NOINLINE __attribute__((noinline))

static void result(const char *what, int rc)
{
    const char *name = rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : rc == EBUSY ? "EBUSY" : NULL;
    printf("%s -> %s\n", what, name ? name : strerror(rc));
    fflush(stdout);
}

/* A deadline 300 ms ahead on the given clock: a timed request for a lock the thread holds
 * times out there, with the tracer as without it. */
static struct timespec soon(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += 300000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

/* ------------------------------------------------------------------------------------------
 * rwlocks: the in-place-op shape (write the target, then read the operands).
 * ---------------------------------------------------------------------------------------- */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

NOINLINE void inplace_write_read(pthread_rwlock_t *dst, pthread_rwlock_t *src)
{
    pthread_rwlock_wrlock(dst);
    result("rdlock", pthread_rwlock_rdlock(src));
}

NOINLINE void inplace_write_write(pthread_rwlock_t *a, pthread_rwlock_t *b)
{
    pthread_rwlock_wrlock(a);
    result("wrlock", pthread_rwlock_wrlock(b));
}

NOINLINE void read_then_upgrade(pthread_rwlock_t *l)
{
    pthread_rwlock_rdlock(l);
    result("wrlock", pthread_rwlock_wrlock(l));
}

NOINLINE void write_then_timed_read(pthread_rwlock_t *l)
{
    struct timespec t = soon(CLOCK_REALTIME);
    pthread_rwlock_wrlock(l);
    result("timedrdlock", pthread_rwlock_timedrdlock(l, &t));
}

NOINLINE void read_then_clock_write(pthread_rwlock_t *l)
{
    struct timespec t = soon(CLOCK_MONOTONIC);
    pthread_rwlock_rdlock(l);
    result("clockwrlock", pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &t));
}

NOINLINE void read_twice(pthread_rwlock_t *l)
{
    pthread_rwlock_rdlock(l);
    result("rdlock", pthread_rwlock_rdlock(l));
    pthread_rwlock_unlock(l);
    pthread_rwlock_unlock(l);
}

/* The earlier acquisition's caller has returned: only its call site can be shown. */
NOINLINE void lock_for_write(pthread_rwlock_t *l)
{
    pthread_rwlock_wrlock(l);
}

NOINLINE void read_after_return(pthread_rwlock_t *l)
{
    result("rdlock", pthread_rwlock_rdlock(l));
}

static void *queue_writer(void *l)
{
    pthread_rwlock_wrlock(l);
    pthread_rwlock_unlock(l);
    return NULL;
}

/* A timed read again times out behind the writer; the first read's unlock then lets the
 * writer in. */
NOINLINE void read_again_with_writer_queued(pthread_rwlock_t *l, int timed)
{
    pthread_t th;
    pthread_rwlock_rdlock(l);
    pthread_create(&th, NULL, queue_writer, l);
    while (pthread_rwlock_tryrdlock(l) == 0) { /* fails once the writer is queued */
        pthread_rwlock_unlock(l);
        usleep(1000);
    }
    if (!timed) {
        result("rdlock", pthread_rwlock_rdlock(l));
        return;
    }
    struct timespec t = soon(CLOCK_REALTIME);
    result("timedrdlock", pthread_rwlock_timedrdlock(l, &t));
    pthread_rwlock_unlock(l);
    pthread_join(th, NULL);
}

static void writer_preferring(int timed)
{
    pthread_rwlockattr_t a;
    static pthread_rwlock_t l;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&l, &a);
    read_again_with_writer_queued(&l, timed);
}

/* ------------------------------------------------------------------------------------------
 * mutexes and spinlocks
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;

NOINLINE void mutex_relock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    result("lock", pthread_mutex_lock(m));
}

NOINLINE void mutex_timed_relock(pthread_mutex_t *m)
{
    struct timespec t = soon(CLOCK_REALTIME);
    pthread_mutex_lock(m);
    result("timedlock", pthread_mutex_timedlock(m, &t));
}

NOINLINE void mutex_clock_relock(pthread_mutex_t *m)
{
    struct timespec t = soon(CLOCK_MONOTONIC);
    pthread_mutex_lock(m);
    result("clocklock", pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &t));
}

NOINLINE void mutex_of_type(int type, pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    pthread_mutex_init(m, &a);
}

/* init gives the address a new identity: what was held under the old one does not count. */
NOINLINE void reinit_then_lock(void)
{
    static pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m);
    pthread_mutex_init(&m, NULL);
    result("lock", pthread_mutex_lock(&m));
    pthread_mutex_unlock(&m);
}

NOINLINE void recursive_relock(void)
{
    pthread_mutex_t m;
    mutex_of_type(PTHREAD_MUTEX_RECURSIVE, &m);
    pthread_mutex_lock(&m);
    result("lock", pthread_mutex_lock(&m));
    pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&m);
    pthread_mutex_destroy(&m);
}

NOINLINE void spin_relock(pthread_spinlock_t *s)
{
    pthread_spin_lock(s);
    result("spin_lock", pthread_spin_lock(s));
}

NOINLINE void trylock_backoff(void)
{
    pthread_spinlock_t s;
    pthread_spin_init(&s, 0);
    pthread_rwlock_wrlock(&rw);
    result("tryrdlock", pthread_rwlock_tryrdlock(&rw));
    result("trywrlock", pthread_rwlock_trywrlock(&rw));
    pthread_rwlock_unlock(&rw);
    pthread_mutex_lock(&plain);
    result("trylock", pthread_mutex_trylock(&plain));
    pthread_mutex_unlock(&plain);
    pthread_spin_lock(&s);
    result("spin_trylock", pthread_spin_trylock(&s));
    pthread_spin_unlock(&s);
    pthread_spin_destroy(&s);
}

/* ------------------------------------------------------------------------------------------
 * condition variables
 * ---------------------------------------------------------------------------------------- */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready_flag;

static blocked_probe cond_waiter;

static void *signal_later(void *arg)
{
    (void)arg;
    blocked_until(&cond_waiter); /* signal a thread that waits, not one on its way */
    pthread_mutex_lock(&plain);
    ready_flag = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&plain);
    return NULL;
}

NOINLINE void cond_wait_then_relock_other(void)
{
    pthread_t th;
    pthread_mutex_lock(&plain);
    pthread_create(&th, NULL, signal_later, NULL);
    blocked_announce(&cond_waiter);
    while (!ready_flag)
        pthread_cond_wait(&cv, &plain);
    int rc = pthread_cond_timedwait(&cv, &plain, &(struct timespec){0, 0});
    result("cond_timedwait", rc == ETIMEDOUT ? 0 : rc);
    pthread_mutex_unlock(&plain);
    pthread_join(th, NULL);
}

static void unlock_plain(void *arg)
{
    pthread_mutex_unlock(arg);
}

static blocked_probe waiter;

static void *wait_forever(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&plain);
    pthread_cleanup_push(unlock_plain, &plain);
    blocked_announce(&waiter);
    for (;;)
        pthread_cond_wait(&cv, &plain);
    pthread_cleanup_pop(1);
    return NULL;
}

/* A cancelled condition wait retakes the mutex; the cancellation handler releases it. */
NOINLINE void cond_wait_cancelled(void)
{
    pthread_t th;
    pthread_create(&th, NULL, wait_forever, NULL);
    blocked_until(&waiter); /* cancel the wait itself, not the way to it */
    pthread_cancel(th);
    pthread_join(th, NULL);
    result("lock after cancel", pthread_mutex_lock(&plain));
    pthread_mutex_unlock(&plain);
}

/* ------------------------------------------------------------------------------------------
 * misuse
 * ---------------------------------------------------------------------------------------- */
NOINLINE void unlock_not_held(pthread_mutex_t *m)
{
    result("unlock", pthread_mutex_unlock(m));
}

/* An unlock of a mutex another thread holds ("held": the report names it and where it took
 * the mutex) or left locked when it exited ("gone"). glibc unlocks a normal mutex for any
 * thread. */
static pthread_mutex_t handed = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int handed_state;

NOINLINE void *hold_handed(void *arg)
{
    pthread_setname_np(pthread_self(), "holder");
    pthread_mutex_lock(&handed);
    handed_state = 1;
    while (!strcmp(arg, "held") && handed_state != 2)
        sched_yield();
    return NULL;
}

NOINLINE void unlock_held_by_other(const char *how)
{
    pthread_t th;
    int gone = !strcmp(how, "gone");
    pthread_create(&th, NULL, hold_handed, (void *)how);
    if (gone)
        pthread_join(th, NULL);
    while (!handed_state)
        sched_yield();
    result("unlock", pthread_mutex_unlock(&handed));
    handed_state = 2;
    if (!gone)
        pthread_join(th, NULL);
}

/* Locks taken past the tracer, through libc's own functions (found in libc's handle, as
 * Python's ctypes.CDLL("libc.so.6") finds them; a library loaded with RTLD_DEEPBIND calls
 * them too), and released through the ordinary calls: each thread holds what it unlocks,
 * libc's words say so. Holding nothing, then holding another lock (an out-of-order release),
 * then an rwlock held for write. */
NOINLINE void unlock_taken_past_tracer(void)
{
    static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
    static pthread_rwlock_t w = PTHREAD_RWLOCK_INITIALIZER;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    int (*lock)(pthread_mutex_t *) =
        libc ? (int (*)(pthread_mutex_t *))dlsym(libc, "pthread_mutex_lock") : NULL;
    int (*wrlock)(pthread_rwlock_t *) =
        libc ? (int (*)(pthread_rwlock_t *))dlsym(libc, "pthread_rwlock_wrlock") : NULL;
    if (!lock || !wrlock) {
        result("libc's own lock functions", ENOENT);
        return;
    }
    lock(&plain);
    result("unlock", pthread_mutex_unlock(&plain));
    pthread_mutex_lock(&other);
    lock(&plain);
    result("unlock under another", pthread_mutex_unlock(&plain));
    pthread_mutex_unlock(&other);
    wrlock(&w);
    result("wrunlock", pthread_rwlock_unlock(&w));
    dlclose(libc);
}

/* Reports of one kind stop after a cap, saying so once. */
/* The same, then the program runs itself again in the same process (exec keeps the pid), and
 * that image reports too: each image's report has a file of its own. */
NOINLINE void unlock_not_held_then_exec(pthread_mutex_t *m, const char *self)
{
    unlock_not_held(m);
    execl(self, self, "bad-unlock", (char *)NULL);
    perror("execl");
}

NOINLINE void unlock_not_held_often(pthread_mutex_t *m)
{
    for (int i = 0; i < 150; i++)
        pthread_mutex_unlock(m);
    result("unlocks", 0);
}

NOINLINE void destroy_while_held(void)
{
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m);
    result("destroy", pthread_mutex_destroy(&m));
}

/* A 10 ms timed wait on cv with m (ETIMEDOUT): libc releases m and retakes it (blocking)
 * under whatever else the thread holds. */
static int wait_briefly(pthread_cond_t *cv, pthread_mutex_t *m)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 10 * 1000 * 1000;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cv, m, &t);
}

/* M, then A, then a wait on M's condition with A held: the retake is A -> M, the inversion
 * of M -> A (ThreadSanitizer and Helgrind report it too). `same`: A is taken first both
 * times (A -> M and the retake A -> M), and `alone` waits with M alone held, then takes A
 * under M: the legal neighbours, silent. */
NOINLINE void cond_retake(const char *how)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, a = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int same = !strcmp(how, "same"), alone = !strcmp(how, "alone");
    if (same)
        pthread_mutex_lock(&a);
    pthread_mutex_lock(&m);
    if (!same && !alone)
        pthread_mutex_lock(&a);
    result("timedwait", wait_briefly(&cv, &m));
    if (alone)
        pthread_mutex_lock(&a);
    if (same) {
        pthread_mutex_unlock(&m);
        pthread_mutex_unlock(&a);
    } else {
        pthread_mutex_unlock(&a);
        pthread_mutex_unlock(&m);
    }
}

/* glibc refuses to destroy a held mutex (EBUSY) and leaves it as it was: the unlock that
 * follows is correct, and the mutex keeps its order (held, it is taken in both orders with
 * another one around the refused destroy). */
NOINLINE void destroy_refused(void)
{
    pthread_mutex_t m, other;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_init(&other, NULL);
    pthread_mutex_lock(&m);
    pthread_mutex_lock(&other);
    pthread_mutex_unlock(&other);
    result("destroy", pthread_mutex_destroy(&m));
    result("unlock", pthread_mutex_unlock(&m));
    pthread_mutex_lock(&other);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&other);
    result("destroy", pthread_mutex_destroy(&m));
}

NOINLINE void *exit_holding(void *l)
{
    pthread_setname_np(pthread_self(), "holder");
    pthread_rwlock_wrlock(l);
    return NULL;
}

NOINLINE void request_orphan(pthread_rwlock_t *l)
{
    result("rdlock", pthread_rwlock_rdlock(l));
}

NOINLINE void *pthread_exit_holding(void *m)
{
    pthread_mutex_lock(m);
    pthread_exit(NULL);
}

/* pthread_exit is an exit too; the orphan is never requested, so the program just ends. */
static void exit_via_pthread_exit(void)
{
    pthread_t th;
    pthread_create(&th, NULL, pthread_exit_holding, &plain);
    pthread_join(th, NULL);
    result("trylock", pthread_mutex_trylock(&plain));
}

/* A thread-specific value whose destructor releases the lock: nothing is held at exit. */
static pthread_key_t unlock_key;

static void unlock_value(void *m)
{
    pthread_mutex_unlock(m);
}

static void *unlock_in_destructor(void *m)
{
    pthread_mutex_lock(m);
    pthread_setspecific(unlock_key, m);
    return NULL;
}

/* holder takes the lock and sets key, whose destructor dtor releases it. */
static void destructor_releases(pthread_key_t *key, void (*dtor)(void *), void *(*holder)(void *))
{
    pthread_t th;
    pthread_key_create(key, dtor);
    pthread_create(&th, NULL, holder, &plain);
    pthread_join(th, NULL);
    result("trylock", pthread_mutex_trylock(&plain));
}

/* The same release made in a later round of key destructors: the destructor sets its key
 * again twice (glibc runs rounds while a destructor sets a value, 4 at most), and releases
 * the lock in the third round. */
static pthread_key_t late_key;
static pthread_mutex_t *late_lock;

static void unlock_late(void *round)
{
    if ((intptr_t)round < 3)
        pthread_setspecific(late_key, (void *)((intptr_t)round + 1));
    else
        pthread_mutex_unlock(late_lock);
}

static void *unlock_in_late_round(void *m)
{
    late_lock = m;
    pthread_mutex_lock(m);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

static void *exit_holding_robust(void *m)
{
    pthread_mutex_lock(m);
    return NULL;
}

/* A robust mutex whose owner died is handed over with EOWNERDEAD: no hang, no abort. */
static void orphaned_robust(void)
{
    pthread_t th;
    pthread_mutexattr_t a;
    static pthread_mutex_t m;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &a);
    pthread_create(&th, NULL, exit_holding_robust, &m);
    pthread_join(th, NULL);
    int rc = pthread_mutex_lock(&m);
    result("lock", rc == EOWNERDEAD ? 0 : rc);
    pthread_mutex_consistent(&m);
    pthread_mutex_unlock(&m);
}

/* A request made while the leaving holder is still writing its exit-held report: that report
 * is kept from ending (stderr is a full pipe) until main's request has been made. The holder
 * leaves for good once its key destructors ran, so its lock is an orphan from then: a timed
 * request reports it, then times out as natively (a blocking one would hang: it used to find
 * the holder alive and wait silently). */
static int pipe_read_end;
static _Atomic int holder_tid, requester_tid;

static void *exit_holding_plain(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&plain);
    holder_tid = blocked_tid();
    return NULL;
}

#ifdef SYS_poll
#define POLL_CALL SYS_poll /* glibc's poll() where the kernel has the call (x86-64) */
#else
#define POLL_CALL SYS_ppoll
#endif

/* In the system call `nr` now. */
static int in_syscall(int tid, long nr)
{
    char path[64], buf[32];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int in = fgets(buf, sizeof buf, f) && strtol(buf, NULL, 10) == nr;
    fclose(f);
    return in;
}

/* Once main sleeps (in its timed request, or waiting for the report lock the holder keeps
 * while it waits for the pipe), empties the pipe until the holder is gone. */
static void *drain_when_requested(void *arg)
{
    (void)arg;
    blocked_wait_tid(requester_tid);
    char buf[4096], path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)holder_tid);
    fcntl(pipe_read_end, F_SETFL, O_NONBLOCK);
    while (access(path, F_OK) == 0)
        if (read(pipe_read_end, buf, sizeof buf) <= 0)
            sched_yield();
    return NULL;
}

static void exit_held_mid_report(void)
{
    int p[2], saved = dup(2);
    if (pipe(p) != 0 || saved < 0)
        return;
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    char fill[512];
    memset(fill, '.', sizeof fill);
    while (write(p[1], fill, sizeof fill) > 0)
        continue;
    fcntl(p[1], F_SETFL, 0);
    pipe_read_end = p[0];
    dup2(p[1], 2);
    pthread_t holder, drainer;
    pthread_create(&holder, NULL, exit_holding_plain, NULL);
    /* the tracer waits in poll for a pipe to take its text (since 2026-12-06), then writes */
    while (!holder_tid || !(in_syscall(holder_tid, POLL_CALL) || in_syscall(holder_tid, SYS_write)))
        sched_yield();
    dup2(saved, 2);
    requester_tid = blocked_tid();
    pthread_create(&drainer, NULL, drain_when_requested, NULL);
    struct timespec deadline = soon(CLOCK_REALTIME);
    result("timedlock", pthread_mutex_timedlock(&plain, &deadline));
    pthread_join(drainer, NULL);
    pthread_join(holder, NULL);
}

/* A thread already waiting for a lock when its holder leaves holding it waits for good,
 * natively in silence. The holder leaves once the waiter (main) sleeps in its wait. `how`:
 * the holder takes a mutex ("mutex"), a robust one (its waiter gets EOWNERDEAD: "robust"),
 * one a key destructor releases as it leaves ("destructor"), the rwlock for read or write
 * ("rw-read", "rw-write"); or it takes the mutex while main waits for another one, which a
 * third thread holds until the holder has gone ("other"); or a third thread, still running,
 * ends the process while main waits for the mutex (as uWSGI's reload does: "ended"). */
static const char *waited_how;
static blocked_probe orphan_waiter;
static _Atomic int waited_holding, waited_holder_tid, waited_other_held;
static pthread_mutex_t waited_robust, waited_other = PTHREAD_MUTEX_INITIALIZER;

static int waited(const char *how)
{
    return !strcmp(waited_how, how);
}

NOINLINE void *leave_while_waited(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "holder");
    if (waited("rw-read"))
        pthread_rwlock_rdlock(&rw);
    else if (waited("rw-write"))
        pthread_rwlock_wrlock(&rw);
    else
        pthread_mutex_lock(waited("robust") ? &waited_robust : &plain);
    if (waited("destructor"))
        pthread_setspecific(unlock_key, &plain);
    waited_holder_tid = blocked_tid();
    waited_holding = 1;
    blocked_until(&orphan_waiter);
    return NULL;
}

/* "other": lets main's mutex go once the holder has gone. */
static void *release_after_holder(void *arg)
{
    char path[64];
    (void)arg;
    pthread_mutex_lock(&waited_other);
    waited_other_held = 1;
    while (!waited_holding)
        sched_yield();
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)waited_holder_tid);
    while (access(path, F_OK) == 0)
        sched_yield();
    pthread_mutex_unlock(&waited_other);
    return NULL;
}

/* "ended": ends the process a while after the holder has gone, main waiting still. */
static void *exit_after_holder(void *arg)
{
    char path[64];
    (void)arg;
    while (!waited_holding)
        sched_yield();
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)waited_holder_tid);
    while (access(path, F_OK) == 0)
        sched_yield();
    usleep(300000); /* (no wait for a state: this thread must only be alive meanwhile) */
    puts("exit");
    exit(0);
}

NOINLINE void wait_for_leaving_holder(void)
{
    pthread_t holder, other;
    if (waited("robust")) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&waited_robust, &a);
    }
    if (waited("destructor"))
        pthread_key_create(&unlock_key, unlock_value);
    if (waited("other") || waited("ended"))
        pthread_create(&other, NULL, waited("other") ? release_after_holder : exit_after_holder,
                       NULL);
    pthread_create(&holder, NULL, leave_while_waited, NULL);
    while (!waited_holding || (waited("other") && !waited_other_held))
        sched_yield();
    if (waited("rw-read") || waited("rw-write")) {
        blocked_announce_on(&orphan_waiter, &rw, sizeof rw);
        result(waited("rw-read") ? "wrlock" : "rdlock",
               waited("rw-read") ? pthread_rwlock_wrlock(&rw) : pthread_rwlock_rdlock(&rw));
        return;
    }
    pthread_mutex_t *m = waited("robust") ? &waited_robust : waited("other") ? &waited_other
                                                                              : &plain;
    blocked_announce_on(&orphan_waiter, m, sizeof *m);
    int rc = pthread_mutex_lock(m);
    result("lock", rc);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(m);
    pthread_mutex_unlock(m);
    pthread_join(holder, NULL);
    if (waited("other"))
        pthread_join(other, NULL);
}

static void orphaned(void)
{
    pthread_t th;
    pthread_create(&th, NULL, exit_holding, &rw);
    pthread_join(th, NULL);
    request_orphan(&rw);
}

/* ------------------------------------------------------------------------------------------
 * annotations
 * ---------------------------------------------------------------------------------------- */
struct storage {
    pthread_rwlock_t lock;
    float data[4];
};

static void describe_storage(const void *object, char *buf, size_t size)
{
    snprintf(buf, size, "test storage f32[2,2] cpu %zu B", sizeof ((struct storage *)object)->data);
}

NOINLINE void annotated_inplace(void)
{
    static struct storage s;
    pthread_rwlock_init(&s.lock, NULL);
    locktrace_annotate_lock(&s.lock, &s, describe_storage);
    printf("active %d\n", locktrace_active());
    fflush(stdout);
    inplace_write_read(&s.lock, &s.lock);
}

/* ------------------------------------------------------------------------------------------
 * held-paths: every way a lock leaves the held set, checked by what a thread still holds when
 * it exits (the exit-held report lists exactly those, with where each was taken) and by the
 * lock order recorded meanwhile (a lock the set kept by mistake would make an edge).
 * ---------------------------------------------------------------------------------------- */
enum { MANY = 40 }; /* more than the held set keeps unindexed */
static pthread_mutex_t ha, hb, hc, hd, he, ht, hbusy, hrec, hmany[MANY];
static pthread_rwlock_t hrw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t hbar;

NOINLINE void take_a(void) { pthread_mutex_lock(&ha); }
NOINLINE void take_b(void) { pthread_mutex_lock(&hb); }
NOINLINE void take_kept(void) { pthread_mutex_lock(&hc); }
NOINLINE void take_recursive(void) { pthread_mutex_lock(&hrec); }
NOINLINE void take_many(int i) { pthread_mutex_lock(&hmany[i]); }
NOINLINE void take_many_kept(int i) { pthread_mutex_lock(&hmany[i]); }

static struct timespec ms_ahead(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += ms * 1000000;
    t.tv_sec += t.tv_nsec / 1000000000;
    t.tv_nsec %= 1000000000;
    return t;
}

NOINLINE void *held_paths_thread(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "mixer");
    take_kept();
    take_a(); /* out of order: the middle one, then the newest */
    take_b();
    pthread_mutex_unlock(&ha);
    pthread_mutex_unlock(&hb);
    for (int i = 0; i < 3; i++) /* recursive: three times in, two out */
        take_recursive();
    pthread_mutex_unlock(&hrec);
    pthread_mutex_unlock(&hrec);
    int rc = pthread_mutex_trylock(&hd); /* trylock taken, then busy: held once */
    if (rc != 0 || pthread_mutex_trylock(&hd) != EBUSY)
        printf("trylock -> unexpected\n");
    pthread_mutex_unlock(&hd);
    struct timespec t = ms_ahead(5000); /* timed: taken */
    if (pthread_mutex_timedlock(&ht, &t) != 0 || pthread_rwlock_timedrdlock(&hrw, &t) != 0)
        printf("timedlock -> unexpected\n");
    pthread_rwlock_unlock(&hrw);
    pthread_mutex_unlock(&ht);
    t = ms_ahead(20); /* timed out: main holds it, so not held here */
    if (pthread_mutex_timedlock(&hbusy, &t) != ETIMEDOUT)
        printf("timedlock busy -> unexpected\n");
    for (int i = 0; i < MANY; i++) /* a large set, emptied in a scattered order but one */
        i == 17 ? take_many_kept(i) : take_many(i);
    for (int i = 0; i < MANY; i++)
        if ((i * 7) % MANY != 17)
            pthread_mutex_unlock(&hmany[(i * 7) % MANY]);
    pthread_mutex_lock(&he); /* edges into he: from the kept ones only */
    pthread_mutex_unlock(&he);
    pthread_mutex_lock(&hd); /* another thread unlocks hd while this one holds it */
    pthread_barrier_wait(&hbar);
    pthread_barrier_wait(&hbar);
    pthread_mutex_lock(&hd); /* free again: no self-deadlock */
    pthread_mutex_unlock(&hd);
    return NULL;
}

/* Locks that left the set before the thread took he: one kept by mistake would have made an
 * edge into he, so main taking them after he would close a cycle. (Of hmany, only those
 * taken after hmany[17] are free of the real path hmany[i] -> hmany[17] -> he.) */
NOINLINE void held_paths(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&hrec, &a);
    pthread_barrier_init(&hbar, NULL, 2);
    pthread_mutex_lock(&hbusy);
    pthread_t th;
    pthread_create(&th, NULL, held_paths_thread, NULL);
    pthread_barrier_wait(&hbar);
    pthread_mutex_unlock(&hd); /* not this thread's: a bad unlock, which glibc performs */
    pthread_barrier_wait(&hbar);
    pthread_join(th, NULL);
    pthread_mutex_unlock(&hbusy);
    pthread_mutex_lock(&he);
    pthread_mutex_lock(&ha);
    pthread_mutex_lock(&hb);
    pthread_mutex_lock(&hd);
    pthread_mutex_lock(&ht);
    for (int i = 18; i < MANY; i++)
        pthread_mutex_lock(&hmany[i]);
    result("locks", 0);
}

/* Locks released out of order (the middle one, then the oldest) from a small set and from
 * one large enough to be indexed: the others stay held, so taking the newest or an older one
 * again is a self-deadlock (with LOCKTRACE_ACTION=edeadlk the call returns EDEADLK; natively
 * it hangs), and the released one is free. */
NOINLINE void unlock_out_of_order(void)
{
    enum { MAX = 40 };
    static pthread_mutex_t m[MAX];
    static const int sizes[] = {4, MAX};
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        for (int i = 0; i < n; i++) {
            pthread_mutex_init(&m[i], NULL);
            pthread_mutex_lock(&m[i]);
        }
        pthread_mutex_unlock(&m[n / 2]);
        pthread_mutex_unlock(&m[0]);
        result("newest", pthread_mutex_lock(&m[n - 1]));
        result("older", pthread_mutex_lock(&m[1]));
        result("released", pthread_mutex_lock(&m[n / 2]));
        for (int i = n; i-- > 1;)
            pthread_mutex_unlock(&m[i]);
        for (int i = 0; i < n; i++)
            pthread_mutex_destroy(&m[i]);
    }
}

/* The thread dump lists what a thread holds from a large set released oldest first (its
 * first entries are holes by then), the newest included. */
NOINLINE void dump_large_set(void)
{
    enum { N = 40, GONE = 5 };
    static pthread_mutex_t m[N];
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&m[i], NULL);
        pthread_mutex_lock(&m[i]);
    }
    for (int i = 0; i < GONE; i++)
        pthread_mutex_unlock(&m[i]);
    raise(SIGUSR1);
    for (int i = GONE; i < N; i++)
        pthread_mutex_unlock(&m[i]);
    printf("newest %p\n", (void *)&m[N - 1]);
}

/* A mutex this thread holds among many is initialised again by another thread (libc's init
 * rewrites its word: it is free) and taken again by this one: a new lock, held once, whose
 * release must not leave the old identity's entry answering for the new one (then this
 * thread would seem to hold it on, and taking another lock would order the two: with a third
 * thread's reverse order, an inversion of locks never held together). Natively it runs. */
static pthread_mutex_t rmany[100], rextra, rb;

static void *reinit_first(void *arg)
{
    (void)arg;
    pthread_mutex_init(&rmany[0], NULL);
    return NULL;
}

static void *b_then_first(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rb);
    pthread_mutex_lock(&rmany[0]);
    pthread_mutex_unlock(&rmany[0]);
    pthread_mutex_unlock(&rb);
    return NULL;
}

NOINLINE void reinit_by_other_among_many(void)
{
    enum { N = sizeof rmany / sizeof rmany[0] };
    pthread_t th;
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&rmany[i], NULL);
        pthread_mutex_lock(&rmany[i]);
    }
    pthread_create(&th, NULL, reinit_first, NULL);
    pthread_join(th, NULL);
    pthread_mutex_lock(&rmany[0]);
    pthread_mutex_lock(&rextra);
    pthread_mutex_unlock(&rmany[0]);
    pthread_mutex_unlock(&rextra);
    for (int i = 1; i < N; i++) /* oldest first */
        pthread_mutex_unlock(&rmany[i]);
    pthread_mutex_lock(&rb);
    pthread_mutex_unlock(&rb);
    pthread_create(&th, NULL, b_then_first, NULL);
    pthread_join(th, NULL);
    result("lock", pthread_mutex_lock(&rmany[0]));
    pthread_mutex_unlock(&rmany[0]);
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    pthread_spinlock_t spin;
    pthread_mutex_t m;
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "rw-write-read"))
        inplace_write_read(&rw, &rw);
    else if (!strcmp(s, "rw-write-write"))
        inplace_write_write(&rw, &rw);
    else if (!strcmp(s, "rw-read-write"))
        read_then_upgrade(&rw);
    else if (!strcmp(s, "rw-write-timedread"))
        write_then_timed_read(&rw);
    else if (!strcmp(s, "rw-read-clockwrite"))
        read_then_clock_write(&rw);
    else if (!strcmp(s, "mutex-clock-relock"))
        mutex_clock_relock(&plain);
    else if (!strcmp(s, "rw-read-read"))
        read_twice(&rw);
    else if (!strcmp(s, "rw-after-return")) {
        lock_for_write(&rw);
        read_after_return(&rw);
    } else if (!strcmp(s, "rw-writer-queued"))
        writer_preferring(0);
    else if (!strcmp(s, "rw-writer-queued-timed"))
        writer_preferring(1);
    else if (!strcmp(s, "mutex-relock"))
        mutex_relock(&plain);
    else if (!strcmp(s, "mutex-timed-relock"))
        mutex_timed_relock(&plain);
    else if (!strcmp(s, "mutex-errorcheck")) {
        mutex_of_type(PTHREAD_MUTEX_ERRORCHECK, &m);
        mutex_relock(&m);
    } else if (!strcmp(s, "mutex-reinit"))
        reinit_then_lock();
    else if (!strcmp(s, "mutex-recursive"))
        recursive_relock();
    else if (!strcmp(s, "spin-relock")) {
        pthread_spin_init(&spin, 0);
        spin_relock(&spin);
    } else if (!strcmp(s, "trylock"))
        trylock_backoff();
    else if (!strcmp(s, "cond"))
        cond_wait_then_relock_other();
    else if (!strcmp(s, "cond-cancel"))
        cond_wait_cancelled();
    else if (!strcmp(s, "bad-unlock"))
        unlock_not_held(&plain);
    else if (!strncmp(s, "bad-unlock-", 11) && (!strcmp(s + 11, "held") || !strcmp(s + 11, "gone")))
        unlock_held_by_other(s + 11);
    else if (!strcmp(s, "bad-unlock-exec"))
        unlock_not_held_then_exec(&plain, "/proc/self/exe");
    else if (!strcmp(s, "unlock-past-tracer"))
        unlock_taken_past_tracer();
    else if (!strcmp(s, "bad-unlock-many"))
        unlock_not_held_often(&plain);
    else if (!strcmp(s, "destroy-held"))
        destroy_while_held();
    else if (!strcmp(s, "destroy-refused"))
        destroy_refused();
    else if (!strncmp(s, "cond-retake-", 12))
        cond_retake(s + 12);
    else if (!strcmp(s, "exit-held"))
        orphaned();
    else if (!strcmp(s, "exit-held-mid-report"))
        exit_held_mid_report();
    else if (!strcmp(s, "exit-held-pthread-exit"))
        exit_via_pthread_exit();
    else if (!strcmp(s, "exit-destructor-unlocks"))
        destructor_releases(&unlock_key, unlock_value, unlock_in_destructor);
    else if (!strcmp(s, "exit-destructor-unlocks-late"))
        destructor_releases(&late_key, unlock_late, unlock_in_late_round);
    else if (!strcmp(s, "exit-held-robust"))
        orphaned_robust();
    else if (!strncmp(s, "exit-held-waited-", 17)) {
        waited_how = s + 17;
        wait_for_leaving_holder();
    }
    else if (!strcmp(s, "held-paths"))
        held_paths();
    else if (!strcmp(s, "unlock-out-of-order"))
        unlock_out_of_order();
    else if (!strcmp(s, "dump-large-set"))
        dump_large_set();
    else if (!strcmp(s, "reinit-by-other-among-many"))
        reinit_by_other_among_many();
    else if (!strcmp(s, "annotated"))
        annotated_inplace();
    else {
        fprintf(stderr, "unknown scenario '%s'\n", s);
        return 64;
    }
    return 0;
}
