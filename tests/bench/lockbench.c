/*
 * lockbench.c - a lock-heavy microbenchmark: threads x rwlocks x iterations, ~90 % reads and
 * a small write under each lock otherwise.
 *   lockbench flat|nested|relock THREADS LOCKS ITERS
 * flat:   one lock per iteration.
 * nested: two locks per iteration, always in index order (write the lower ~10 % of the time,
 *         read the higher).
 * relock: one recursive mutex per iteration, taken and taken again while held (a library
 *         calling itself through its own API: GLib's GRecMutex, coturn's), two pairs.
 * Prints "ns_per_lock=<ns per lock/unlock pair> locks_per_s=<pairs per second>", best of
 * three runs. run_bench.py runs it natively and under the tracer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct slot {
    pthread_rwlock_t lock;
    long value;
    char pad[64 - sizeof(long)];
} slot;

static slot *slots;
static pthread_mutex_t *recursive; /* relock's, apart: the other modes' slots stay as they are */
static int nlocks, nested, relock;
static long iters;
static pthread_barrier_t start;

static unsigned step(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static long one(unsigned *seed)
{
    unsigned r = step(seed);
    slot *a = &slots[r % (unsigned)nlocks];
    long v;
    if ((r >> 24) % 10 == 0) {
        pthread_rwlock_wrlock(&a->lock);
        v = ++a->value;
    } else {
        pthread_rwlock_rdlock(&a->lock);
        v = a->value;
    }
    pthread_rwlock_unlock(&a->lock);
    return v;
}

static long two(unsigned *seed)
{
    unsigned r = step(seed);
    unsigned i = r % (unsigned)nlocks, j = (r >> 12) % (unsigned)nlocks;
    if (i == j)
        j = (j + 1) % (unsigned)nlocks;
    slot *lo = &slots[i < j ? i : j], *hi = &slots[i < j ? j : i];
    long v;
    if ((r >> 24) % 10 == 0) {
        pthread_rwlock_wrlock(&lo->lock);
        pthread_rwlock_rdlock(&hi->lock);
        v = lo->value += hi->value + 1;
    } else {
        pthread_rwlock_rdlock(&lo->lock);
        pthread_rwlock_rdlock(&hi->lock);
        v = lo->value + hi->value;
    }
    pthread_rwlock_unlock(&hi->lock);
    pthread_rwlock_unlock(&lo->lock);
    return v;
}

static long again(unsigned *seed)
{
    unsigned r = step(seed);
    unsigned i = r % (unsigned)nlocks;
    pthread_mutex_lock(&recursive[i]);
    pthread_mutex_lock(&recursive[i]);
    long v = ++slots[i].value;
    pthread_mutex_unlock(&recursive[i]);
    pthread_mutex_unlock(&recursive[i]);
    return v;
}

static void *worker(void *arg)
{
    unsigned seed = 2463534242u + (unsigned)(size_t)arg * 7919u;
    long sink = 0;
    pthread_barrier_wait(&start);
    for (long n = 0; n < iters; n++)
        sink += relock ? again(&seed) : nested ? two(&seed) : one(&seed);
    return (void *)sink;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double run(int threads)
{
    pthread_t th[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, worker, (void *)(size_t)i);
    pthread_barrier_wait(&start);
    double t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double t = now() - t0;
    pthread_barrier_destroy(&start);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "flat") && strcmp(argv[1], "nested") &&
                      strcmp(argv[1], "relock"))) {
        fprintf(stderr, "usage: lockbench flat|nested|relock THREADS LOCKS ITERS\n");
        return 2;
    }
    nested = !strcmp(argv[1], "nested");
    relock = !strcmp(argv[1], "relock");
    int threads = atoi(argv[2]);
    nlocks = atoi(argv[3]);
    iters = atol(argv[4]);
    if (threads < 1 || threads > 64 || nlocks < 2 || iters < 1)
        return 2;
    slots = aligned_alloc(64, sizeof(slot) * (size_t)nlocks);
    for (int i = 0; i < nlocks; i++) {
        pthread_rwlock_init(&slots[i].lock, NULL);
        slots[i].value = 0;
    }
    if (relock) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
        recursive = malloc(sizeof *recursive * (size_t)nlocks);
        for (int i = 0; recursive && i < nlocks; i++)
            pthread_mutex_init(&recursive[i], &a);
        if (!recursive)
            return 2;
    }
    run(threads); /* warm-up: first sight of every lock, page faults */
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t = run(threads);
        best = t < best ? t : best;
    }
    double pairs = (double)iters * threads * (nested || relock ? 2 : 1);
    printf("ns_per_lock=%.2f locks_per_s=%.0f\n", best * 1e9 / pairs * threads, pairs / best);
    return 0;
}
