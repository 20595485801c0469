/*
 * tsan_core.c - the tracer's core under ThreadSanitizer. Threads drive the event API
 * (detect.h) directly, the way interpose.c does, on shared mutexes and rwlocks: lookups and
 * new entries in the shadow table, held sets, new lock-order edges, waits published and
 * searched for cycles, stacks interned, identities renewed by init and destroy. Linked
 * against a -fsanitize=thread build of the core without the entry points, so every pthread
 * call here goes straight to libc. A race TSan sees makes the program fail (exit 66).
 *
 * Locks are taken in ascending index order with blocking requests, and out of order only by
 * trylock, so the program itself has no deadlock and no lock-order inversion: the tracer
 * must stay silent, and does its cross-thread work (waits, edges) all the time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lt_internal.h"

#define THREADS 4
#define SHARED 16 /* mutexes 0..15, rwlocks 16..31 */
#define PRIVATE 8
#define ROUNDS 3000

static pthread_mutex_t mutexes[SHARED];
static pthread_rwlock_t rwlocks[SHARED];

typedef struct lockref {
    void *addr;
    lt_kind kind;
    lt_mode mode;
} lockref;

static lockref pick(unsigned i, unsigned *seed)
{
    if (i < SHARED)
        return (lockref){&mutexes[i], LT_MUTEX, LT_MODE_WRITE};
    return (lockref){&rwlocks[i - SHARED], LT_RWLOCK,
                     rand_r(seed) % 4 ? LT_MODE_READ : LT_MODE_WRITE};
}

static lt_event event(const lockref *l, lt_wait wait)
{
    lt_event ev = {0};
    ev.addr = l->addr;
    ev.kind = l->kind;
    ev.mode = l->mode;
    ev.wait = wait;
    ev.ra = (uintptr_t)__builtin_return_address(0);
    ev.cfa = (uintptr_t)__builtin_frame_address(0);
    ev.self = lt_self();
    return ev;
}

static int real_try(const lockref *l)
{
    if (l->kind == LT_MUTEX)
        return pthread_mutex_trylock(l->addr);
    return l->mode == LT_MODE_READ ? pthread_rwlock_tryrdlock(l->addr)
                                   : pthread_rwlock_trywrlock(l->addr);
}

static int real_block(const lockref *l)
{
    if (l->kind == LT_MUTEX)
        return pthread_mutex_lock(l->addr);
    return l->mode == LT_MODE_READ ? pthread_rwlock_rdlock(l->addr)
                                   : pthread_rwlock_wrlock(l->addr);
}

static int real_unlock(const lockref *l)
{
    return l->kind == LT_MUTEX ? pthread_mutex_unlock(l->addr) : pthread_rwlock_unlock(l->addr);
}

/* interpose.c's acquire(), over the event API. */
static int take(const lockref *l, lt_wait wait)
{
    lt_event ev = event(l, wait);
    lt_tls.busy = 1;
    int rc = lt_before_lock(&ev);
    if (rc == 0)
        rc = real_try(l);
    if (rc == EBUSY && wait != LT_WAIT_TRY) {
        rc = lt_wait_begin(&ev);
        if (rc == 0) {
            lt_tls.busy = 0;
            rc = real_block(l);
            lt_tls.busy = 1;
        }
        lt_wait_end(&ev);
    }
    lt_after_lock(&ev, rc);
    lt_tls.busy = 0;
    return rc;
}

static void give(const lockref *l)
{
    lt_event ev = event(l, LT_WAIT_TRY);
    lt_tls.busy = 1;
    lt_after_unlock(&ev, real_unlock(l));
    lt_tls.busy = 0;
}

/* init and destroy of a thread's own lock: a new identity while others look theirs up. */
static void renew(pthread_mutex_t *m)
{
    lockref l = {m, LT_MUTEX, LT_MODE_WRITE};
    lt_event ev = event(&l, LT_WAIT_TRY);
    lt_tls.busy = 1;
    lt_on_destroy(&ev);
    lt_tls.busy = 0;
    pthread_mutex_destroy(m);
    pthread_mutex_init(m, NULL);
    ev = event(&l, LT_WAIT_TRY);
    lt_tls.busy = 1;
    lt_on_init(&ev);
    lt_tls.busy = 0;
}

/* Workers end parked, not exited: libunwind's thread-exit destructor (it is dlopened by the
 * tracer, and not instrumented) crashes TSan's runtime in this build. */
static pthread_barrier_t done;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    pthread_mutex_t own[PRIVATE];
    for (int i = 0; i < PRIVATE; i++)
        pthread_mutex_init(&own[i], NULL);
    for (int round = 0; round < ROUNDS; round++) {
        lockref held[5];
        int n = 0;
        unsigned next = rand_r(&seed) % (2 * SHARED);
        for (int k = 1 + rand_r(&seed) % 3; k > 0 && next < 2 * SHARED; k--) {
            held[n] = pick(next, &seed);
            if (take(&held[n], LT_WAIT_BLOCK) == 0)
                n++;
            next += 1 + rand_r(&seed) % 8;
        }
        lockref extra = pick(rand_r(&seed) % (2 * SHARED), &seed);
        if (take(&extra, LT_WAIT_TRY) == 0)
            held[n++] = extra;
        lockref mine = {&own[round % PRIVATE], LT_MUTEX, LT_MODE_WRITE};
        if (take(&mine, LT_WAIT_BLOCK) == 0)
            give(&mine);
        while (n > 0)
            give(&held[--n]);
        if (round % 64 == 0)
            renew(&own[rand_r(&seed) % PRIVATE]);
    }
    pthread_barrier_wait(&done);
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    pthread_t th[THREADS];
    lt_config_load();
    for (int i = 0; i < SHARED; i++) {
        pthread_mutex_init(&mutexes[i], NULL);
        pthread_rwlock_init(&rwlocks[i], NULL);
    }
    pthread_barrier_init(&done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
            return 1;
    pthread_barrier_wait(&done);
    printf("tsan_core: %d threads x %d rounds\n", THREADS, ROUNDS);
    return 0;
}
