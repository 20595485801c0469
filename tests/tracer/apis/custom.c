/*
 * custom.c - locks of our own that never call pthread, made visible with the annotation API
 * of locktrace.h (locktrace_mutex_*), chosen by name:
 *   custom self|upgrade|abba|inversion|stress
 * fmutex is a futex mutex (0 free, 1 locked, 2 locked with waiters), frw a futex rwlock
 * (-1 write-locked, n > 0 readers). self: relock of an fmutex; upgrade: frw read, then write;
 * abba: two threads, two fmutexes in opposite orders; inversion: the same orders one thread
 * after the other (no deadlock happens); stress: threads on fmutexes and an frw in one order,
 * with trylocks. Without the tracer the annotations cost a branch and the locks still work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locktrace.h"
#include "poll.h"

#define NOINLINE __attribute__((noinline))

static void futex_wait(_Atomic int *word, int val)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic int *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* ---- fmutex ---- */
typedef struct fmutex {
    _Atomic int state;
} fmutex;

static void fmutex_init(fmutex *m)
{
    atomic_store(&m->state, 0);
    locktrace_mutex_create(m, 0);
}

/* 0, or EDEADLK when the tracer refuses the request (LOCKTRACE_ACTION=edeadlk). */
static int fmutex_lock(fmutex *m)
{
    int rc = locktrace_mutex_pre_lock(m, 0);
    if (rc)
        return rc;
    int c = 0;
    if (!atomic_compare_exchange_strong(&m->state, &c, 1)) {
        if (c != 2)
            c = atomic_exchange(&m->state, 2);
        while (c != 0) {
            if (locktrace_mutex_block(m, 0)) {
                locktrace_mutex_post_lock(m, 0, 0);
                return EDEADLK;
            }
            futex_wait(&m->state, 2);
            c = atomic_exchange(&m->state, 2);
        }
    }
    locktrace_mutex_post_lock(m, 0, 1);
    return 0;
}

static int fmutex_trylock(fmutex *m)
{
    int c = 0;
    locktrace_mutex_pre_lock(m, LOCKTRACE_MUTEX_TRY);
    int ok = atomic_compare_exchange_strong(&m->state, &c, 1);
    locktrace_mutex_post_lock(m, LOCKTRACE_MUTEX_TRY, ok);
    return ok ? 0 : EBUSY;
}

static void fmutex_unlock(fmutex *m)
{
    locktrace_mutex_pre_unlock(m, 0);
    if (atomic_fetch_sub(&m->state, 1) != 1) {
        atomic_store(&m->state, 0);
        futex_wake(&m->state, 1);
    }
}

/* ---- frw ---- */
typedef struct frw {
    _Atomic int state;
} frw;

static void frw_init(frw *l)
{
    atomic_store(&l->state, 0);
    locktrace_mutex_create(l, LOCKTRACE_MUTEX_RW);
}

static int frw_lock(frw *l, unsigned mode)
{
    int rc = locktrace_mutex_pre_lock(l, mode);
    if (rc)
        return rc;
    for (;;) {
        int s = atomic_load(&l->state);
        if (mode == LOCKTRACE_MUTEX_READ ? s >= 0 && atomic_compare_exchange_strong(&l->state, &s, s + 1)
                                         : s == 0 && atomic_compare_exchange_strong(&l->state, &s, -1))
            break;
        if (s == 0 || (mode == LOCKTRACE_MUTEX_READ && s > 0))
            continue; /* changed under us: try again */
        if (locktrace_mutex_block(l, mode)) {
            locktrace_mutex_post_lock(l, mode, 0);
            return EDEADLK;
        }
        futex_wait(&l->state, s);
    }
    locktrace_mutex_post_lock(l, mode, 1);
    return 0;
}

static void frw_unlock(frw *l, unsigned mode)
{
    locktrace_mutex_pre_unlock(l, mode);
    if (mode == LOCKTRACE_MUTEX_READ ? atomic_fetch_sub(&l->state, 1) == 1
                                     : (atomic_store(&l->state, 0), 1))
        futex_wake(&l->state, 1 << 30);
}

/* ---- scenarios ---- */
static fmutex a, b;
static frw rw;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : rc == EBUSY ? "EBUSY" : "?");
    fflush(stdout);
}

NOINLINE void custom_relock(void)
{
    fmutex_init(&a);
    fmutex_lock(&a);
    result("fmutex_lock", fmutex_lock(&a));
}

NOINLINE void custom_upgrade(void)
{
    frw_init(&rw);
    frw_lock(&rw, LOCKTRACE_MUTEX_READ);
    result("frw write", frw_lock(&rw, 0));
}

static _Atomic int first_tid;

NOINLINE void *take_a_then_b(void *arg)
{
    (void)arg;
    fmutex_lock(&a);
    first_tid = gettid();
    fmutex_lock(&b);
    fmutex_unlock(&b);
    fmutex_unlock(&a);
    return NULL;
}

/* main holds b; the thread takes a, then waits for b; main then asks for a. */
NOINLINE void custom_abba(void)
{
    pthread_t th;
    fmutex_init(&a);
    fmutex_init(&b);
    fmutex_lock(&b);
    pthread_create(&th, NULL, take_a_then_b, NULL);
    while (!first_tid)
        sched_yield();
    blocked_wait_tid(first_tid);
    result("fmutex_lock", fmutex_lock(&a));
}

NOINLINE void *take_b_then_a(void *arg)
{
    (void)arg;
    fmutex_lock(&b);
    fmutex_lock(&a);
    fmutex_unlock(&a);
    fmutex_unlock(&b);
    return NULL;
}

NOINLINE void custom_inversion(void)
{
    pthread_t th;
    fmutex_init(&a);
    fmutex_init(&b);
    pthread_create(&th, NULL, take_a_then_b, NULL);
    pthread_join(th, NULL);
    pthread_create(&th, NULL, take_b_then_a, NULL);
    pthread_join(th, NULL);
    printf("both orders done\n");
}

static long counter;

static void *stress_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        unsigned mode = i % 4 ? LOCKTRACE_MUTEX_READ : 0;
        frw_lock(&rw, mode);
        fmutex_lock(&a);
        if (fmutex_trylock(&b) == 0)
            fmutex_unlock(&b);
        counter++;
        fmutex_unlock(&a);
        frw_unlock(&rw, mode);
    }
    return NULL;
}

NOINLINE void custom_stress(void)
{
    pthread_t th[4];
    fmutex_init(&a);
    fmutex_init(&b);
    frw_init(&rw);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, stress_worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    locktrace_mutex_destroy(&a);
    locktrace_mutex_destroy(&b);
    locktrace_mutex_destroy(&rw);
    printf("counter %ld\n", counter);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } scenarios[] = {{"self", custom_relock}, {"upgrade", custom_upgrade}, {"abba", custom_abba},
                     {"inversion", custom_inversion}, {"stress", custom_stress}};
    for (size_t i = 0; argc == 2 && i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].fn();
            return 0;
        }
    }
    fprintf(stderr, "usage: custom self|upgrade|abba|inversion|stress\n");
    return 64;
}
