/*
 * stress.c - legitimate locking under load, which must produce no report: several threads,
 * many rwlocks taken in mixed modes (blocking, try, timed, recursive read, nested in address
 * order), mutexes with condition-variable hand-offs, spinlocks, and locks created and
 * destroyed while others run. Prints one line that does not depend on timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 6
#define LOCKS 64
#define ITERS 200000

static pthread_rwlock_t locks[LOCKS];
static long counters[LOCKS];
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static int queue_items;
static pthread_spinlock_t spin;
static long spin_total;

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static struct timespec soon(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 10;
    return t;
}

/* Two locks in address order, the first for write and the second for read. */
static void nested(int a, int b)
{
    if (a == b)
        return;
    int lo = a < b ? a : b, hi = a < b ? b : a;
    pthread_rwlock_wrlock(&locks[lo]);
    pthread_rwlock_rdlock(&locks[hi]);
    counters[lo]++;
    pthread_rwlock_unlock(&locks[hi]);
    pthread_rwlock_unlock(&locks[lo]);
}

static void one_op(unsigned *seed)
{
    unsigned r = next_rand(seed);
    int i = (int)(r % LOCKS), j = (int)((r >> 8) % LOCKS);
    struct timespec t;
    switch ((r >> 16) % 8) {
    case 0: nested(i, j); break;
    case 1:
        if (pthread_rwlock_trywrlock(&locks[i]) == 0) {
            counters[i]++;
            pthread_rwlock_unlock(&locks[i]);
        }
        break;
    case 2:
        t = soon();
        if (pthread_rwlock_timedrdlock(&locks[i], &t) == 0)
            pthread_rwlock_unlock(&locks[i]);
        break;
    case 3: /* recursive read on a default (reader-preferring) rwlock */
        pthread_rwlock_rdlock(&locks[i]);
        pthread_rwlock_rdlock(&locks[i]);
        pthread_rwlock_unlock(&locks[i]);
        pthread_rwlock_unlock(&locks[i]);
        break;
    case 4:
        pthread_spin_lock(&spin);
        spin_total++;
        pthread_spin_unlock(&spin);
        break;
    default:
        pthread_rwlock_rdlock(&locks[i]);
        pthread_rwlock_unlock(&locks[i]);
    }
}

/* Short-lived locks at reused addresses. */
static void churn(void)
{
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_mutex_destroy(&m);
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg * 7919u + 1;
    for (int n = 0; n < ITERS; n++) {
        one_op(&seed);
        if (n % 100 == 0) {
            churn();
            pthread_mutex_lock(&queue_lock);
            queue_items++;
            pthread_cond_signal(&queue_cond);
            pthread_mutex_unlock(&queue_lock);
        }
    }
    return NULL;
}

/* Consumes what the workers produce, waiting on the condition variable. */
static void *consumer(void *arg)
{
    int want = *(int *)arg, got = 0;
    while (got < want) {
        pthread_mutex_lock(&queue_lock);
        while (queue_items == 0)
            pthread_cond_wait(&queue_cond, &queue_lock);
        got += queue_items;
        queue_items = 0;
        pthread_mutex_unlock(&queue_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[THREADS], cons;
    int want = THREADS * (ITERS / 100);
    for (int i = 0; i < LOCKS; i++)
        pthread_rwlock_init(&locks[i], NULL);
    pthread_spin_init(&spin, 0);
    pthread_create(&cons, NULL, consumer, &want);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(size_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_join(cons, NULL);
    for (int i = 0; i < LOCKS; i++)
        pthread_rwlock_destroy(&locks[i]);
    pthread_spin_destroy(&spin);
    printf("stress done: %d threads, %d locks, %d ops each\n", THREADS, LOCKS, ITERS);
    return 0;
}
