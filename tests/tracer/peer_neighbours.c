/*
 * peer_neighbours.c - misuse the peers (Helgrind, DRD, ThreadSanitizer) report, and what
 * follows it, next to the legal calls that look like it and must stay silent:
 *   - a condition wait on a mutex the thread does not hold: glibc unlocks a normal mutex all
 *     the same (whoever held it holds it no more) and refuses the wait with EPERM for one that
 *     checks its owner. Neither is a deadlock with the thread that held the mutex.
 *   - memory that holds no mutex (0xff bytes) locked and unlocked: glibc refuses it as it
 *     refuses a destroyed mutex, but nothing destroyed it.
 *   - a read again of a writer-preferring rwlock this thread reads, no writer queued: glibc's
 *     are not recursive, a writer queued between the two reads would hang both (lockdep's
 *     recursive read of a rwsem). Reported and the call goes on; a tryrdlock is silent.
 *   - a condition variable destroyed while its waiter, timed out or cancelled, retakes the
 *     mutex the destroying thread holds (libc counts it on the condition variable no more).
 *   - an rwlock destroyed while another thread reads it: glibc destroys it without a word
 *     (the reader's unlock after it goes through), where a held mutex's destroy is refused.
 *     Next to it: a destroy after the readers left, and after a stray unlock by a thread that
 *     held nothing (glibc's reader count goes below zero: no reader holds it).
 *   - a process-shared mutex in memory mapped at two addresses (a ring buffer mapped twice):
 *     locked at one and unlocked at the other is one lock (silent); locked again at the
 *     other by its holder hangs natively, as any normal mutex relocked.
 *   - a cancelled join, signal handlers taking locks while their thread is blocked in a lock
 *     or a condition wait, condition waits on CLOCK_MONOTONIC, C11 timed and recursive mutexes.
 *   peer_neighbours NAME
 * Each scenario prints what its calls returned and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <threads.h>
#include <unistd.h>
#include <time.h>

#include "apis/poll.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t mutex, other = PTHREAD_MUTEX_INITIALIZER, inner = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static blocked_probe holder_probe, waiter_probe;
static _Atomic int signalled, handled, holding;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EPERM ? "EPERM" : strerror(rc));
    fflush(stdout);
}

/* The mutex's holder: takes it, then blocks on `other`, which main holds. */
static void *hold_mutex_then_other(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mutex);
    blocked_announce_on(&holder_probe, &other, sizeof other);
    result("holder's lock of other", pthread_mutex_lock(&other));
    pthread_mutex_unlock(&other);
    result("holder's unlock of the mutex", pthread_mutex_unlock(&mutex));
    return NULL;
}

/* Wakes main once it sleeps in its condition wait. */
static void *signal_waiter(void *arg)
{
    (void)arg;
    blocked_until(&waiter_probe);
    signalled = 1;
    pthread_cond_broadcast(&changed);
    return NULL;
}

/* Main holds `other` and waits with `mutex`, which another thread holds and which main does
 * not: a normal mutex is unlocked by the wait (the holder, blocked on `other`, holds it no
 * more: main retakes it and goes on), one that checks its owner makes the wait fail. */
NOINLINE static void wait_unheld(int type)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, type);
    pthread_mutex_init(&mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_t holder, signaller;
    pthread_mutex_lock(&other);
    pthread_create(&holder, NULL, hold_mutex_then_other, NULL);
    blocked_until(&holder_probe);
    int waits = type == PTHREAD_MUTEX_NORMAL; /* the others' wait fails at once */
    if (waits)
        pthread_create(&signaller, NULL, signal_waiter, NULL);
    blocked_announce_on(&waiter_probe, &changed, sizeof changed);
    int rc = pthread_cond_wait(&changed, &mutex);
    result("wait", rc);
    while (rc == 0 && !signalled)
        pthread_cond_wait(&changed, &mutex);
    if (rc == 0)
        pthread_mutex_unlock(&mutex);
    pthread_mutex_unlock(&other);
    pthread_join(holder, NULL);
    if (waits)
        pthread_join(signaller, NULL);
}

/* A mutex of 0xff bytes: its kind reads -1, as a destroyed one's, with a lock word and an
 * owner that no destroy leaves. A trylock is a question the program checks: silent. */
NOINLINE static void garbage_mutex(void)
{
    pthread_mutex_t m;
    memset(&m, 0xff, sizeof m);
    result("trylock", pthread_mutex_trylock(&m));
    result("lock", pthread_mutex_lock(&m));
    result("unlock", pthread_mutex_unlock(&m));
}

/* One process-shared normal mutex seen at two addresses: a memfd mapped twice. Taken at one
 * address and released at the other, then taken at one and requested at the other: timed
 * (it times out, as natively), then blocking when relock is set (it hangs natively). */
NOINLINE static void mapped_twice(int relock)
{
    int fd = memfd_create("ring", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return;
    pthread_mutex_t *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    pthread_mutex_t *b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (a == MAP_FAILED || b == MAP_FAILED)
        return;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(a, &attr);
    result("lock at a", pthread_mutex_lock(a));
    result("unlock at b", pthread_mutex_unlock(b));
    result("lock at b", pthread_mutex_lock(b));
    result("unlock at a", pthread_mutex_unlock(a));
    result("lock at a", pthread_mutex_lock(a)); /* no order b -> a: b was released at a */
    struct timespec deadline = ms_from_now(50);
    result("timedlock at b", pthread_mutex_timedlock(b, &deadline));
    if (relock)
        result("lock at b", pthread_mutex_lock(b));
    result("unlock at a", pthread_mutex_unlock(a));
}

/* Reads of a writer-preferring rwlock taken again by the reading thread: blocking, timed,
 * and a try (silent); nobody writes. */
NOINLINE static void reread_writer_preferring(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlock_t rw;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&rw, &attr);
    result("rdlock", pthread_rwlock_rdlock(&rw));
    result("tryrdlock again", pthread_rwlock_tryrdlock(&rw));
    result("rdlock again", pthread_rwlock_rdlock(&rw));
    struct timespec deadline = ms_from_now(1000);
    result("timedrdlock again", pthread_rwlock_timedrdlock(&rw, &deadline));
    for (int i = 0; i < 4; i++)
        pthread_rwlock_unlock(&rw);
    result("wrlock", pthread_rwlock_wrlock(&rw));
    result("unlock", pthread_rwlock_unlock(&rw));
    result("destroy", pthread_rwlock_destroy(&rw));
}

/* An rwlock destroyed while another thread holds it for read (stray 0), then made again, read
 * and released, and destroyed (silent); or (stray 1) unlocked by a thread that holds nothing,
 * then destroyed: a bad unlock, and no reader holds it at the destroy. */
static pthread_rwlock_t shared_rw;
static _Atomic int read_stage;

static void *read_until_told(void *arg)
{
    (void)arg;
    pthread_rwlock_rdlock(&shared_rw);
    read_stage = 1;
    while (read_stage != 2)
        sched_yield();
    result("reader's unlock", pthread_rwlock_unlock(&shared_rw));
    return NULL;
}

static void *stray_unlock(void *arg)
{
    (void)arg;
    result("stray unlock", pthread_rwlock_unlock(&shared_rw));
    return NULL;
}

NOINLINE static void destroy_read_held(int stray)
{
    pthread_t t;
    pthread_rwlock_init(&shared_rw, NULL);
    pthread_create(&t, NULL, stray ? stray_unlock : read_until_told, NULL);
    while (!stray && read_stage != 1)
        sched_yield();
    if (stray)
        pthread_join(t, NULL);
    result("destroy", pthread_rwlock_destroy(&shared_rw));
    if (stray)
        return;
    read_stage = 2;
    pthread_join(t, NULL);
    pthread_rwlock_init(&shared_rw, NULL);
    pthread_create(&t, NULL, read_until_told, NULL);
    while (read_stage != 1)
        sched_yield();
    read_stage = 2;
    pthread_join(t, NULL);
    result("destroy after the reader left", pthread_rwlock_destroy(&shared_rw));
}

/* ---- legal neighbours ---- */

/* A condition variable destroyed while its one waiter, timed out (c = 0) or cancelled (1),
 * sleeps on the mutex the destroying thread holds: libc no longer counts that waiter on the
 * condition variable (it left it before retaking the mutex), so the destroy is legal and
 * returns at once. */
static _Atomic int waiter_tid;

static void unlock_mutex(void *arg)
{
    pthread_mutex_unlock(arg);
}

static void *wait_on_mutex_cond(void *arg)
{
    int timed = arg != NULL, rc = 0;
    pthread_mutex_lock(&mutex);
    pthread_cleanup_push(unlock_mutex, &mutex);
    waiter_tid = blocked_tid();
    blocked_announce_on(&waiter_probe, &changed, sizeof changed);
    struct timespec deadline = ms_from_now(timed ? 50 : 60 * 1000);
    while (rc == 0)
        rc = timed ? pthread_cond_timedwait(&changed, &mutex, &deadline)
                   : pthread_cond_wait(&changed, &mutex);
    pthread_cleanup_pop(1);
    return (void *)(intptr_t)rc;
}

NOINLINE static void destroy_left_cond(int cancelled)
{
    pthread_t t;
    void *rc;
    pthread_mutex_init(&mutex, NULL);
    pthread_create(&t, NULL, wait_on_mutex_cond, cancelled ? NULL : &mutex);
    blocked_until(&waiter_probe);
    pthread_mutex_lock(&mutex);
    if (cancelled)
        pthread_cancel(t);
    /* until the waiter, its wait over, sleeps on the mutex */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)waiter_tid);
    uintptr_t word;
    while (!blocked_futex_word_at(path, &word) || word < (uintptr_t)&mutex ||
           word - (uintptr_t)&mutex >= sizeof mutex)
        sched_yield();
    result("destroy", pthread_cond_destroy(&changed));
    pthread_mutex_unlock(&mutex);
    pthread_join(t, &rc);
    printf("waiter %s\n", rc == PTHREAD_CANCELED ? "cancelled" : strerror((int)(intptr_t)rc));
}


static void *sleep_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static pthread_t sleeper;

static void unlock_other(void *arg)
{
    (void)arg;
    pthread_mutex_unlock(&other);
}

/* Holds `other` and joins a thread that never ends; cancelled there, its cleanup lets go. */
static void *join_holding(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&other);
    pthread_cleanup_push(unlock_other, NULL);
    blocked_announce(&holder_probe);
    pthread_join(sleeper, NULL);
    pthread_cleanup_pop(1);
    return NULL;
}

NOINLINE static void cancelled_join(void)
{
    pthread_t joiner;
    pthread_create(&sleeper, NULL, sleep_forever, NULL);
    pthread_create(&joiner, NULL, join_holding, NULL);
    blocked_until(&holder_probe);
    result("cancel", pthread_cancel(joiner));
    result("join", pthread_join(joiner, NULL));
    /* the joiner holds nothing and waits for nothing any more */
    pthread_mutex_lock(&inner);
    result("lock", pthread_mutex_lock(&other));
    pthread_mutex_unlock(&other);
    pthread_mutex_unlock(&inner);
    pthread_cancel(sleeper);
    result("sleeper join", pthread_join(sleeper, NULL));
}

static void take_inner(int sig)
{
    (void)sig;
    pthread_mutex_lock(&inner);
    handled++;
    pthread_mutex_unlock(&inner);
}

static void *block_on_other(void *arg)
{
    (void)arg;
    blocked_announce_on(&holder_probe, &other, sizeof other);
    int rc = pthread_mutex_lock(&other);
    pthread_mutex_unlock(&other);
    return (void *)(intptr_t)rc;
}

static void *wait_on_changed(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&other);
    blocked_announce_on(&holder_probe, &changed, sizeof changed);
    while (!signalled)
        pthread_cond_wait(&changed, &other);
    pthread_mutex_unlock(&other);
    return NULL;
}

/* 20 signals, each delivered while the thread sleeps in its lock or condition wait, whose
 * handler takes another lock; the wait goes on after each. */
NOINLINE static void signals_in_waits(int cond)
{
    struct sigaction sa = {.sa_handler = take_inner};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    void *rc;
    if (!cond)
        pthread_mutex_lock(&other);
    pthread_create(&t, NULL, cond ? wait_on_changed : block_on_other, NULL);
    for (int i = 0; i < 20; i++) {
        blocked_until(&holder_probe);
        pthread_kill(t, SIGUSR1);
        while (handled == i)
            sched_yield();
    }
    if (cond) {
        pthread_mutex_lock(&other);
        signalled = 1;
        pthread_cond_signal(&changed);
    }
    pthread_mutex_unlock(&other);
    pthread_join(t, &rc);
    printf("handled %d\n", (int)handled);
    result(cond ? "wait" : "lock", (int)(intptr_t)rc);
}

/* Timed condition waits on the monotonic clock that time out, under another lock. */
NOINLINE static void monotonic_waits(void)
{
    pthread_condattr_t attr;
    pthread_cond_t cv;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &attr);
    pthread_mutex_lock(&inner);
    pthread_mutex_lock(&other);
    struct timespec deadline = clock_ms_from_now(CLOCK_MONOTONIC, 20);
    result("timedwait", pthread_cond_timedwait(&cv, &other, &deadline));
    deadline = clock_ms_from_now(CLOCK_MONOTONIC, 20);
    result("clockwait", pthread_cond_clockwait(&changed, &other, CLOCK_MONOTONIC, &deadline));
    pthread_mutex_unlock(&other);
    pthread_mutex_unlock(&inner);
    result("destroy", pthread_cond_destroy(&cv));
}

static int c11_holder(void *arg)
{
    mtx_t *m = arg;
    mtx_lock(m);
    holding = 1;
    while (!signalled)
        sched_yield();
    mtx_unlock(m);
    return 0;
}

/* C11: a recursive timed mutex taken three times around a timed-out cnd_timedwait on a plain
 * one; a timed lock of a mutex another thread holds times out; trylocks. */
NOINLINE static void c11_locks(void)
{
    mtx_t plain, rec;
    cnd_t cv;
    thrd_t t;
    mtx_init(&plain, mtx_timed);
    mtx_init(&rec, mtx_recursive | mtx_timed);
    cnd_init(&cv);
    mtx_lock(&rec);
    mtx_trylock(&rec);
    struct timespec deadline = ms_from_now(20);
    printf("timedlock recursive -> %d\n", mtx_timedlock(&rec, &deadline) == thrd_success);
    mtx_lock(&plain);
    deadline = ms_from_now(20);
    printf("cnd_timedwait -> %d\n", cnd_timedwait(&cv, &plain, &deadline) == thrd_timedout);
    mtx_unlock(&plain);
    for (int i = 0; i < 3; i++)
        mtx_unlock(&rec);
    thrd_create(&t, c11_holder, &plain);
    while (!holding)
        sched_yield();
    printf("trylock held -> %d\n", mtx_trylock(&plain) == thrd_busy);
    deadline = ms_from_now(20);
    printf("timedlock held -> %d\n", mtx_timedlock(&plain, &deadline) == thrd_timedout);
    signalled = 1;
    thrd_join(t, NULL);
    mtx_lock(&rec);
    mtx_lock(&plain);
    mtx_unlock(&plain);
    mtx_unlock(&rec);
    mtx_destroy(&plain);
    mtx_destroy(&rec);
    cnd_destroy(&cv);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "cond-unheld-normal"))
        wait_unheld(PTHREAD_MUTEX_NORMAL);
    else if (!strcmp(name, "cond-unheld-errorcheck"))
        wait_unheld(PTHREAD_MUTEX_ERRORCHECK);
    else if (!strcmp(name, "cond-unheld-recursive"))
        wait_unheld(PTHREAD_MUTEX_RECURSIVE);
    else if (!strcmp(name, "garbage"))
        garbage_mutex();
    else if (!strcmp(name, "mapped-twice"))
        mapped_twice(0);
    else if (!strcmp(name, "mapped-twice-relock"))
        mapped_twice(1);
    else if (!strcmp(name, "reread-writer-preferring"))
        reread_writer_preferring();
    else if (!strcmp(name, "destroy-read-held"))
        destroy_read_held(0);
    else if (!strcmp(name, "destroy-after-stray-unlock"))
        destroy_read_held(1);
    else if (!strcmp(name, "cond-destroy-timed-out"))
        destroy_left_cond(0);
    else if (!strcmp(name, "cond-destroy-cancelled"))
        destroy_left_cond(1);
    else if (!strcmp(name, "cancelled-join"))
        cancelled_join();
    else if (!strcmp(name, "signals-in-lock"))
        signals_in_waits(0);
    else if (!strcmp(name, "signals-in-cond"))
        signals_in_waits(1);
    else if (!strcmp(name, "monotonic"))
        monotonic_waits();
    else if (!strcmp(name, "c11"))
        c11_locks();
    else {
        fprintf(stderr, "unknown scenario '%s'\n", name);
        return 2;
    }
    puts("done");
    return 0;
}
