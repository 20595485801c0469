/*
 * stressbench.c - the two scale shapes of the performance table, natively or under the tracer.
 *   stressbench groups GROUPS SIZE LOOPS
 *       one thread: init GROUPS x SIZE mutexes, lock them all (group after group, each group in
 *       index order: SIZE nested locks), unlock them in the order taken, destroy them; LOOPS
 *       times. Thousands of locks are held at once.
 *   stressbench lazy THREADS LOCKS ITERS
 *       LOCKS rwlocks set up by PTHREAD_RWLOCK_INITIALIZER (never init'ed: first seen on first
 *       use); each of THREADS threads does ITERS rounds of: pick 1-10 distinct locks, take them
 *       in increasing index order (one in five for write), release them newest first.
 *   stressbench threads AT_ONCE ROUNDS LOCKS
 *       ROUNDS times: start AT_ONCE threads, each takes and releases LOCKS times one mutex they
 *       share, and join them. Threads that live for a few locks: their start and exit cost.
 *   stressbench churn THREADS MUTEXES ITERS
 *       each of THREADS threads has MUTEXES mutexes of its own (one heap array per thread) and
 *       does ITERS rounds of: for each of them, init, lock, unlock, destroy. Locks made and
 *       unmade by many threads at once.
 * Prints "seconds=<wall time of the timed part>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static unsigned step(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* ---------------------------------------------------------------------------------------- */

static int groups(long ngroups, long size, long loops)
{
    size_t n = (size_t)(ngroups * size);
    pthread_mutex_t *m = malloc(n * sizeof *m);
    if (!m)
        return 1;
    for (long k = 0; k < loops; k++) {
        for (size_t i = 0; i < n; i++)
            pthread_mutex_init(&m[i], NULL);
        for (size_t i = 0; i < n; i++) /* group g is m[g*size .. g*size+size-1], in order */
            pthread_mutex_lock(&m[i]);
        for (size_t i = 0; i < n; i++)
            pthread_mutex_unlock(&m[i]);
        for (size_t i = 0; i < n; i++)
            pthread_mutex_destroy(&m[i]);
    }
    free(m);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static pthread_rwlock_t *lazy_locks;
static long lazy_n, lazy_iters;
static pthread_barrier_t lazy_start;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void *lazy_worker(void *arg)
{
    unsigned seed = 2463534242u + (unsigned)(size_t)arg * 7919u;
    int pick[10], write[10];
    long sink = 0;
    pthread_barrier_wait(&lazy_start);
    for (long it = 0; it < lazy_iters; it++) {
        int k = 1 + (int)(step(&seed) % 10), n = 0;
        while (n < k) {
            int x = (int)(step(&seed) % (unsigned)lazy_n), dup = 0;
            for (int j = 0; j < n; j++)
                dup |= pick[j] == x;
            if (!dup)
                pick[n++] = x;
        }
        qsort(pick, (size_t)n, sizeof pick[0], cmp_int);
        for (int j = 0; j < n; j++) {
            write[j] = step(&seed) % 5 == 0;
            if (write[j])
                pthread_rwlock_wrlock(&lazy_locks[pick[j]]);
            else
                pthread_rwlock_rdlock(&lazy_locks[pick[j]]);
            sink += pick[j];
        }
        for (int j = n; j-- > 0;)
            pthread_rwlock_unlock(&lazy_locks[pick[j]]);
    }
    return (void *)sink;
}

static int lazy(long threads, long nlocks, long iters)
{
    pthread_rwlock_t init = PTHREAD_RWLOCK_INITIALIZER;
    pthread_t th[64];
    lazy_locks = malloc((size_t)nlocks * sizeof *lazy_locks);
    if (!lazy_locks || threads > 64)
        return 1;
    for (long i = 0; i < nlocks; i++)
        lazy_locks[i] = init;
    lazy_n = nlocks;
    lazy_iters = iters;
    pthread_barrier_init(&lazy_start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, lazy_worker, (void *)(size_t)i);
    for (long i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&lazy_start);
    free(lazy_locks);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static long churn_n, churn_iters;
static pthread_barrier_t churn_start;

static void *churn_worker(void *arg)
{
    pthread_mutex_t *m = malloc((size_t)churn_n * sizeof *m);
    (void)arg;
    pthread_barrier_wait(&churn_start);
    for (long it = 0; m && it < churn_iters; it++)
        for (long i = 0; i < churn_n; i++) {
            pthread_mutex_init(&m[i], NULL);
            pthread_mutex_lock(&m[i]);
            pthread_mutex_unlock(&m[i]);
            pthread_mutex_destroy(&m[i]);
        }
    free(m);
    return m ? NULL : (void *)1;
}

static int churn(long threads, long nmutexes, long iters)
{
    pthread_t th[64];
    void *failed = NULL;
    if (threads > 64)
        return 1;
    churn_n = nmutexes;
    churn_iters = iters;
    pthread_barrier_init(&churn_start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, churn_worker, NULL);
    for (long i = 0; i < threads; i++) {
        void *r;
        pthread_join(th[i], &r);
        failed = failed ? failed : r;
    }
    pthread_barrier_destroy(&churn_start);
    return failed != NULL;
}

/* ---------------------------------------------------------------------------------------- */

static pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static long short_locks;

static void *short_worker(void *arg)
{
    for (long i = 0; i < short_locks; i++) {
        pthread_mutex_lock(&short_lock);
        pthread_mutex_unlock(&short_lock);
    }
    return arg;
}

static int short_lived(long at_once, long rounds, long locks)
{
    pthread_t th[64];
    if (at_once > 64)
        return 1;
    short_locks = locks;
    for (long r = 0; r < rounds; r++) {
        long started = 0;
        while (started < at_once && !pthread_create(&th[started], NULL, short_worker, NULL))
            started++;
        for (long i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        if (started < at_once)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "groups") && strcmp(argv[1], "lazy") &&
                      strcmp(argv[1], "churn") && strcmp(argv[1], "threads"))) {
        fprintf(stderr, "usage: stressbench groups GROUPS SIZE LOOPS | lazy THREADS LOCKS ITERS"
                        " | churn THREADS MUTEXES ITERS | threads AT_ONCE ROUNDS LOCKS\n");
        return 2;
    }
    long a = atol(argv[2]), b = atol(argv[3]), c = atol(argv[4]);
    if (a < 1 || b < 1 || c < 1)
        return 2;
    double t0 = now();
    int rc = !strcmp(argv[1], "groups") ? groups(a, b, c)
             : !strcmp(argv[1], "lazy") ? lazy(a, b < 10 ? 10 : b, c)
             : !strcmp(argv[1], "churn")  ? churn(a, b, c)
                                        : short_lived(a, b, c);
    printf("seconds=%.6f\n", now() - t0);
    return rc;
}
