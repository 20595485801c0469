/*
 * cross_deadlock.c - real deadlocks between threads, formed for sure, chosen by name:
 *   cross_deadlock NAME
 * Each thread takes its first lock, meets the others at a barrier, then requests the next
 * thread's lock, so the cycle always forms: without the tracer the program hangs, with it the
 * deadlock is reported before anyone blocks for good. Also long waits whose other half is not
 * a lock, and the thread dump. Functions are global and not inlined so that stacks name them
 * (the test build links with -rdynamic); meson.build holds the expected outcomes. Where one
 * thread must block before another acts, the other polls for it (blocked.h), never sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../blocked.h"
#include "locktrace.h"

#define NOINLINE __attribute__((noinline))
#define MAX_THREADS 8

static pthread_barrier_t barrier;
static pthread_mutex_t mutexes[MAX_THREADS];
static pthread_rwlock_t rwlocks[MAX_THREADS];
static pthread_spinlock_t spins[MAX_THREADS];
static int nthreads;

static void result(const char *what, int rc)
{
    const char *name = rc == 0           ? "0"
                       : rc == EDEADLK   ? "EDEADLK"
                       : rc == ETIMEDOUT ? "ETIMEDOUT"
                                         : strerror(rc);
    printf("%s -> %s\n", what, name);
    fflush(stdout);
}

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static blocked_probe probes[MAX_THREADS]; /* thread i announces its blocking request */

static struct timespec in_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void describe_storage(const void *object, char *buf, size_t size)
{
    snprintf(buf, size, "test storage #%d", (int)(*(const int *)object));
}

static int storage_ids[MAX_THREADS];

static void *(*body)(void *);

/* Names the thread "worker-<i>" before the barrier, so reports show the name. */
static void *named(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", (long)arg);
    pthread_setname_np(pthread_self(), name);
    return body(arg);
}

/* Runs fn(i) on n threads and joins them. */
static void run_threads(int n, void *(*fn)(void *))
{
    pthread_t th[MAX_THREADS];
    nthreads = n;
    body = fn;
    pthread_barrier_init(&barrier, NULL, (unsigned)n);
    for (long i = 0; i < n; i++)
        pthread_create(&th[i], NULL, named, (void *)i);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* ------------------------------------------------------------------------------------------
 * Cycles: thread i holds lock i and requests lock i+1.
 * ---------------------------------------------------------------------------------------- */
NOINLINE void *mutex_cycle(void *arg)
{
    long i = (long)arg;
    pthread_mutex_lock(&mutexes[i]);
    pthread_barrier_wait(&barrier);
    int rc = pthread_mutex_lock(&mutexes[(i + 1) % nthreads]);
    result("lock", rc);
    if (rc == 0)
        pthread_mutex_unlock(&mutexes[(i + 1) % nthreads]);
    pthread_mutex_unlock(&mutexes[i]);
    return NULL;
}

/* The in-place-op shape of the demo's abba: write my storage, then read the other's. */
NOINLINE void *rwlock_write_read(void *arg)
{
    long i = (long)arg;
    pthread_rwlock_wrlock(&rwlocks[i]);
    pthread_barrier_wait(&barrier);
    int rc = pthread_rwlock_rdlock(&rwlocks[(i + 1) % nthreads]);
    result("rdlock", rc);
    if (rc == 0)
        pthread_rwlock_unlock(&rwlocks[(i + 1) % nthreads]);
    pthread_rwlock_unlock(&rwlocks[i]);
    return NULL;
}

/* Readers hold, writers want: every reader blocks the next writer. */
NOINLINE void *rwlock_read_write(void *arg)
{
    long i = (long)arg;
    pthread_rwlock_rdlock(&rwlocks[i]);
    pthread_barrier_wait(&barrier);
    int rc = pthread_rwlock_wrlock(&rwlocks[(i + 1) % nthreads]);
    result("wrlock", rc);
    if (rc == 0)
        pthread_rwlock_unlock(&rwlocks[(i + 1) % nthreads]);
    pthread_rwlock_unlock(&rwlocks[i]);
    return NULL;
}

NOINLINE void *spin_cycle(void *arg)
{
    long i = (long)arg;
    pthread_spin_lock(&spins[i]);
    pthread_barrier_wait(&barrier);
    pthread_spin_lock(&spins[(i + 1) % nthreads]);
    return NULL;
}

/* Thread 0 holds a mutex and wants an rwlock for read; thread 1 holds the rwlock for write
 * and wants the mutex. */
NOINLINE void *mixed_cycle(void *arg)
{
    long i = (long)arg;
    if (i == 0) {
        pthread_mutex_lock(&mutexes[0]);
        pthread_barrier_wait(&barrier);
        pthread_rwlock_rdlock(&rwlocks[0]);
    } else {
        pthread_rwlock_wrlock(&rwlocks[0]);
        pthread_barrier_wait(&barrier);
        pthread_mutex_lock(&mutexes[0]);
    }
    return NULL;
}

/* Thread 1 waits with a deadline: the cycle is real but ends when that wait times out. */
NOINLINE void *timed_cycle(void *arg)
{
    long i = (long)arg;
    pthread_mutex_lock(&mutexes[i]);
    pthread_barrier_wait(&barrier);
    if (i == 1) {
        blocked_until(&probes[0]); /* thread 0 blocks first: the timed wait closes the cycle */
        struct timespec t = in_ms(1500);
        int rc = pthread_mutex_timedlock(&mutexes[0], &t);
        result("timedlock", rc);
        if (rc == 0)
            pthread_mutex_unlock(&mutexes[0]);
    } else {
        blocked_announce_on(&probes[0], &mutexes[1], sizeof mutexes[1]);
        result("lock", pthread_mutex_lock(&mutexes[1]));
        pthread_mutex_unlock(&mutexes[1]);
    }
    pthread_mutex_unlock(&mutexes[i]);
    return NULL;
}

/*
 * Writer preference: thread 0 holds W for read, thread 1 holds M; thread 2 queues for write
 * on W (blocked by thread 0's read); thread 1 requests read on W and queues behind thread 2;
 * thread 0 requests M. No holder stops thread 1, the queued writer does: the wait-for check
 * must count it.
 */
static pthread_rwlock_t wp;

/* Only readers hold l: a tryrdlock fails once a writer is queued on it. */
static void wait_for_queued_writer(pthread_rwlock_t *l)
{
    while (pthread_rwlock_tryrdlock(l) == 0) {
        pthread_rwlock_unlock(l);
        pause_ms(10);
    }
}

NOINLINE void *writer_queued_cycle(void *arg)
{
    long i = (long)arg;
    if (i == 0)
        pthread_rwlock_rdlock(&wp);
    if (i == 1)
        pthread_mutex_lock(&mutexes[0]);
    pthread_barrier_wait(&barrier);
    if (i == 2) {
        pthread_rwlock_wrlock(&wp);
    } else if (i == 1) {
        wait_for_queued_writer(&wp);
        blocked_announce_on(&probes[1], &wp, sizeof wp);
        pthread_rwlock_rdlock(&wp);
    } else {
        blocked_until(&probes[1]); /* thread 0's request closes the cycle */
        pthread_mutex_lock(&mutexes[0]);
    }
    return NULL;
}

/* Main holds a mutex and joins a thread that needs it: the join closes the cycle. */
NOINLINE void *needs_the_mutex(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "needs-mutex");
    blocked_announce_on(&probes[1], &mutexes[0], sizeof mutexes[0]);
    pthread_mutex_lock(&mutexes[0]);
    pthread_mutex_unlock(&mutexes[0]);
    return NULL;
}

NOINLINE void join_while_holding(void)
{
    pthread_t th;
    pthread_mutex_lock(&mutexes[0]);
    pthread_create(&th, NULL, needs_the_mutex, NULL);
    blocked_until(&probes[1]); /* the join closes the cycle */
    result("join", pthread_join(th, NULL));
    pthread_mutex_unlock(&mutexes[0]);
}

/* A join that is no deadlock: the joined thread takes another lock. */
NOINLINE void join_legit(void)
{
    pthread_t th;
    pthread_mutex_lock(&mutexes[1]);
    pthread_create(&th, NULL, needs_the_mutex, NULL);
    result("join", pthread_join(th, NULL));
    pthread_mutex_unlock(&mutexes[1]);
}

/*
 * Thread 0 waits on a condition variable while it holds mutex 1; thread 1, which signalled
 * that condition variable before, now needs mutex 1 before it signals again. Thread 1's
 * request has a deadline, so the program ends: then it signals without the mutex.
 */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;

NOINLINE void wait_for_phase(int p)
{
    pthread_mutex_lock(&mutexes[0]);
    while (phase < p)
        pthread_cond_wait(&cv, &mutexes[0]);
    pthread_mutex_unlock(&mutexes[0]);
}

NOINLINE void signal_phase(int p)
{
    pthread_mutex_lock(&mutexes[0]);
    phase = p;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mutexes[0]);
}

NOINLINE void *cond_cycle(void *arg)
{
    if ((long)arg == 0) {
        wait_for_phase(1);
        pthread_mutex_lock(&mutexes[1]);
        blocked_announce(&probes[0]);
        wait_for_phase(2); /* holding mutex 1 */
        pthread_mutex_unlock(&mutexes[1]);
    } else {
        signal_phase(1);
        blocked_until(&probes[0]); /* thread 0 waits for phase 2, holding mutex 1 */
        struct timespec t = in_ms(1000);
        int rc = pthread_mutex_timedlock(&mutexes[1], &t);
        result("timedlock", rc);
        if (rc == 0)
            pthread_mutex_unlock(&mutexes[1]);
        signal_phase(2);
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * A crowd: CROWD threads blocked at once, as a pool's idle workers and a herd on one lock are,
 * each holding a mutex of its own. A third wait on crowd_cv (signalled before by the main
 * thread, which only polls), a third queue on crowd_gate (which the main thread holds), a third
 * hold rwlocks[0] for read and wait on crowd_cv; half of each third with a deadline. Around
 * them two threads form a cycle through rwlocks[0] (crowd-cycle) or only wait (crowd).
 * ---------------------------------------------------------------------------------------- */
#define CROWD 900
static pthread_mutex_t crowd_own[CROWD];
static pthread_mutex_t crowd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t crowd_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t crowd_cv = PTHREAD_COND_INITIALIZER;
static int crowd_go;
static blocked_probe crowd_probes[CROWD];
static pthread_t crowd_th[CROWD];

NOINLINE void *crowd_member(void *arg)
{
    long i = (long)arg;
    int timed = i % 2;
    struct timespec t = in_ms(600 * 1000);
    pthread_mutex_lock(&crowd_own[i]);
    if (i % 3 == 2)
        pthread_rwlock_rdlock(&rwlocks[0]);
    if (i % 3 == 1) {
        blocked_announce_on(&crowd_probes[i], &crowd_gate, sizeof crowd_gate);
        if (timed ? pthread_mutex_timedlock(&crowd_gate, &t) : pthread_mutex_lock(&crowd_gate))
            abort();
        pthread_mutex_unlock(&crowd_gate);
    } else {
        pthread_mutex_lock(&crowd_lock);
        blocked_announce(&crowd_probes[i]);
        while (!crowd_go)
            if (timed)
                pthread_cond_timedwait(&crowd_cv, &crowd_lock, &t);
            else
                pthread_cond_wait(&crowd_cv, &crowd_lock);
        pthread_mutex_unlock(&crowd_lock);
    }
    if (i % 3 == 2)
        pthread_rwlock_unlock(&rwlocks[0]);
    pthread_mutex_unlock(&crowd_own[i]);
    return NULL;
}

/* Returns once the whole crowd is blocked. */
static void crowd_gather(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 128 * 1024);
    pthread_mutex_lock(&crowd_gate);
    pthread_cond_broadcast(&crowd_cv); /* the main thread is crowd_cv's last signaller */
    for (long i = 0; i < CROWD; i++) {
        pthread_mutex_init(&crowd_own[i], NULL);
        if (pthread_create(&crowd_th[i], &a, crowd_member, (void *)i) != 0)
            abort();
    }
    pthread_attr_destroy(&a);
    for (int i = 0; i < CROWD; i++)
        blocked_until(&crowd_probes[i]);
}

static void crowd_release(void)
{
    pthread_mutex_lock(&crowd_lock);
    crowd_go = 1;
    pthread_cond_broadcast(&crowd_cv);
    pthread_mutex_unlock(&crowd_lock);
    pthread_mutex_unlock(&crowd_gate);
    for (int i = 0; i < CROWD; i++)
        pthread_join(crowd_th[i], NULL);
    puts("crowd released");
}

static _Atomic int pair_done;

/* Thread 0 reads rwlocks[0] beside the crowd's readers and wants mutex 1; thread 1 holds
 * mutex 1 and wants to write rwlocks[0]: it waits for every reader, thread 0 among them. */
NOINLINE void *crowd_pair(void *arg)
{
    long i = (long)arg;
    if (i == 0)
        pthread_rwlock_rdlock(&rwlocks[0]);
    else
        pthread_mutex_lock(&mutexes[1]);
    pthread_barrier_wait(&barrier);
    int rc = i == 0 ? pthread_mutex_lock(&mutexes[1]) : pthread_rwlock_wrlock(&rwlocks[0]);
    result(i == 0 ? "lock" : "wrlock", rc);
    if (rc == 0 && i == 0)
        pthread_mutex_unlock(&mutexes[1]);
    if (rc == 0 || i == 0)
        pthread_rwlock_unlock(&rwlocks[0]);
    if (i == 1)
        pthread_mutex_unlock(&mutexes[1]);
    atomic_fetch_add(&pair_done, 1);
    return NULL;
}

/* The cycle closes while the crowd waits; the call refused (LOCKTRACE_ACTION=edeadlk) lets
 * the other go on, or waits for the crowd's readers, so the crowd is let go then. */
NOINLINE void crowd_cycle(void)
{
    pthread_t th[2];
    crowd_gather();
    pthread_barrier_init(&barrier, NULL, 2);
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, crowd_pair, (void *)i);
    while (atomic_load(&pair_done) == 0)
        sched_yield();
    crowd_release();
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
}

/* No cycle: a writer of rwlocks[0] holding mutex 1 waits for the crowd's readers. */
NOINLINE void *crowd_writer(void *arg)
{
    pthread_mutex_lock(&mutexes[1]);
    blocked_announce_on(&probes[0], &rwlocks[0], sizeof rwlocks[0]);
    pthread_rwlock_wrlock(&rwlocks[0]);
    pthread_rwlock_unlock(&rwlocks[0]);
    pthread_mutex_unlock(&mutexes[1]);
    return arg;
}

NOINLINE void crowd_no_cycle(void)
{
    pthread_t th;
    crowd_gather();
    pthread_create(&th, NULL, crowd_writer, NULL);
    blocked_until(&probes[0]);
    crowd_release();
    pthread_join(th, NULL);
}

static void init_all(void)
{
    for (int i = 0; i < MAX_THREADS; i++) {
        pthread_mutex_init(&mutexes[i], NULL);
        pthread_rwlock_init(&rwlocks[i], NULL);
        pthread_spin_init(&spins[i], PTHREAD_PROCESS_PRIVATE);
        storage_ids[i] = i;
        locktrace_annotate_lock(&rwlocks[i], &storage_ids[i], describe_storage);
    }
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&wp, &a);
}

/* ------------------------------------------------------------------------------------------
 * Long waits whose other half is not a lock, and the thread dump.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;

/* Holds the lock across a slow "I/O" (a sleep) once thread 1 waits for it: long enough for
 * LOCKTRACE_WAIT_TIMEOUT=1 to pass. */
NOINLINE void slow_io_holding_lock(void)
{
    pthread_mutex_lock(&io_lock);
    pthread_barrier_wait(&barrier);
    blocked_until(&probes[1]);
    pause_ms(2500);
    pthread_mutex_unlock(&io_lock);
}

void holder_waits(void);
static const char *holder_does; /* "cond", "lock", "join": what the holder does (below) */

NOINLINE void *long_wait(void *arg)
{
    if ((long)arg == 0 && holder_does) {
        holder_waits();
    } else if ((long)arg == 0) {
        slow_io_holding_lock();
    } else {
        pthread_barrier_wait(&barrier);
        blocked_announce_on(&probes[1], &io_lock, sizeof io_lock);
        result("lock", pthread_mutex_lock(&io_lock));
        pthread_mutex_unlock(&io_lock);
    }
    return NULL;
}

/* The holder of io_lock waits itself once thread 1 waits for it, for 3 s: on a condition
 * variable no one signals (keeping io_lock, as a consumer that waits holding a lock its
 * producer needs), for a lock a sleeping thread holds, or in a join of a sleeping thread. A
 * long-wait report says what the holder does, not only where it took the lock. */
static pthread_mutex_t side_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t side_cv = PTHREAD_COND_INITIALIZER;
static atomic_int side_taken;

static void *sleeper(void *arg)
{
    if (arg)
        pthread_mutex_lock(&side_lock);
    atomic_store(&side_taken, 1);
    pause_ms(3000);
    if (arg)
        pthread_mutex_unlock(&side_lock);
    return NULL;
}

NOINLINE void holder_waits(void)
{
    pthread_t th;
    struct timespec t = in_ms(3000);
    pthread_mutex_lock(&io_lock);
    pthread_barrier_wait(&barrier);
    blocked_until(&probes[1]);
    if (!strcmp(holder_does, "cond")) {
        pthread_mutex_lock(&side_lock);
        while (pthread_cond_timedwait(&side_cv, &side_lock, &t) == 0)
            ;
        pthread_mutex_unlock(&side_lock);
    } else {
        int lock = !strcmp(holder_does, "lock");
        pthread_create(&th, NULL, sleeper, lock ? &side_lock : NULL);
        while (lock && !atomic_load(&side_taken))
            sched_yield();
        if (lock) {
            pthread_mutex_lock(&side_lock);
            pthread_mutex_unlock(&side_lock);
        }
        pthread_join(th, NULL);
    }
    pthread_mutex_unlock(&io_lock);
}

NOINLINE void *dump_waiter(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    blocked_announce_on(&probes[1], &mutexes[0], sizeof mutexes[0]);
    pthread_mutex_lock(&mutexes[0]);
    pthread_mutex_unlock(&mutexes[0]);
    return NULL;
}

/* Main holds two locks while a worker waits for one, and signals itself for a dump. */
NOINLINE void dump_on_signal(void)
{
    pthread_t th;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_rwlock_rdlock(&rwlocks[0]);
    pthread_mutex_lock(&mutexes[0]);
    pthread_create(&th, NULL, dump_waiter, NULL);
    pthread_barrier_wait(&barrier);
    blocked_until(&probes[1]);
    raise(SIGUSR1);
    pthread_mutex_unlock(&mutexes[0]);
    pthread_rwlock_unlock(&rwlocks[0]);
    pthread_join(th, NULL);
    puts("dumped");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    init_all();
    if (!strcmp(s, "mutex-2"))
        run_threads(2, mutex_cycle);
    else if (!strcmp(s, "mutex-3"))
        run_threads(3, mutex_cycle);
    else if (!strcmp(s, "rwlock-abba"))
        run_threads(2, rwlock_write_read);
    else if (!strcmp(s, "rwlock-3"))
        run_threads(3, rwlock_write_read);
    else if (!strcmp(s, "rwlock-read-write"))
        run_threads(2, rwlock_read_write);
    else if (!strcmp(s, "spin-2"))
        run_threads(2, spin_cycle);
    else if (!strcmp(s, "mixed"))
        run_threads(2, mixed_cycle);
    else if (!strcmp(s, "timed"))
        run_threads(2, timed_cycle);
    else if (!strcmp(s, "writer-queued"))
        run_threads(3, writer_queued_cycle);
    else if (!strcmp(s, "cond"))
        run_threads(2, cond_cycle);
    else if (!strcmp(s, "join"))
        join_while_holding();
    else if (!strcmp(s, "join-legit"))
        join_legit();
    else if (!strcmp(s, "long-wait"))
        run_threads(2, long_wait);
    else if (!strncmp(s, "long-wait-", 10) && (holder_does = s + 10))
        run_threads(2, long_wait);
    else if (!strcmp(s, "dump"))
        dump_on_signal();
    else if (!strcmp(s, "crowd-cycle"))
        crowd_cycle();
    else if (!strcmp(s, "crowd"))
        crowd_no_cycle();
    else {
        fprintf(stderr, "unknown scenario '%s'\n", s);
        return 64;
    }
    return 0;
}
