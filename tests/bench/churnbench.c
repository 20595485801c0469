/*
 * churnbench.c - short-lived heap locks and the cost of free(), for run_churn.py:
 *   churnbench churn N    N heap locks, each in a block of random size (64..4096 bytes) at a
 *                         random offset, a window of 4096 alive: malloc, lock, unlock, free
 *                         (no init or destroy); prints seconds= and the peak rss_kib=
 *   churnbench free N     N malloc/free pairs of 16..255 bytes, no lock in their 64 KiB
 *                         while heap locks are known elsewhere in the heap; prints
 *                         pairs_per_sec= of the fast quartile's slowest window of 100,000
 *   churnbench near N     the same pairs, each block between two small heap objects whose
 *                         mutexes are known (objects with locks next to plain allocations)
 *   churnbench realloc N  N malloc/realloc/free triples (16..255 bytes, then grown to a
 *                         size up to 255: the block moves when its chunk grows), the
 *                         blocks between objects with mutexes as in near
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 4096

static double clock_s(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* The pairs are timed in this thread's CPU time, in windows of WINDOW_PAIRS, and the
 * fastest windows count: on a shared machine, time spent waiting for a CPU or beside a busy
 * neighbour is nobody's cost and varies far more than the cost being measured. Not the one
 * fastest: on this virtual machine a window's CPU time is now and then far too short (a
 * clock step), so the slowest of the fastest quarter of the windows is taken. */
#define WINDOW_PAIRS 100000
#define MAX_WINDOWS 1024
static double cpu_now(void)
{
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static long peak_rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static void churn(long n)
{
    static char *live[WINDOW];
    unsigned seed = 1;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        size_t k = (size_t)i % WINDOW, size = 64 + (size_t)rand_r(&seed) % 4032;
        free(live[k]);
        live[k] = malloc(size);
        pthread_mutex_t *m = (pthread_mutex_t *)(void *)(live[k] + (size_t)rand_r(&seed) %
                                                         ((size - sizeof *m) / 8) * 8);
        memset(m, 0, sizeof *m);
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
    }
    printf("seconds=%.3f rss_kib=%ld\n", now() - t0, peak_rss_kib());
}

#define SIZES 240 /* the timed blocks are 16 .. 16 + SIZES - 1 bytes */

/* A known heap lock in a 48-byte object of its own. */
static void *lock_object(void)
{
    pthread_mutex_t *m = calloc(1, 48);
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    return m;
}

/* Objects with locks 16 KiB into a 64 KiB chunk that lies inside a kept 192 KiB heap block
 * (below the mmap threshold set in main), so no other block is within 16 KiB of them or
 * shares their chunk. */
static void far_from_locks(void **locks)
{
    char *kept = malloc(192 << 10);
    uintptr_t chunk = (((uintptr_t)kept + 0xffff) & ~(uintptr_t)0xffff) + (16 << 10);
    for (int i = 0; i < 16; i++) {
        pthread_mutex_t *m = (pthread_mutex_t *)(void *)(kept + (chunk - (uintptr_t)kept) +
                                                         (size_t)i * 64);
        memset(m, 0, sizeof *m);
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        locks[i] = m;
    }
}

/* For every size the timed loop asks for, a free block between two objects with locks:
 * glibc hands it back for that size (its per-thread cache is last in, first out). */
static void between_locks(void **plain)
{
    lock_object();
    for (int i = 0; i < SIZES; i++) {
        plain[i] = malloc(16 + (size_t)i);
        lock_object();
    }
    for (int i = 0; i < SIZES; i++)
        free(plain[i]);
}

/* Whether p is one of the n blocks of set (same == 1) or in the 64 KiB chunk of one of them
 * (same == 0). */
static int among(uintptr_t p, void **set, int n, int same)
{
    for (int i = 0; i < n; i++)
        if (same ? p == (uintptr_t)set[i] : p >> 16 == (uintptr_t)set[i] >> 16)
            return 1;
    return 0;
}

/* Whether the block the timed loop got for every size was where the row says. */
static int placed(int near, void **around)
{
    for (int i = 0; i < SIZES; i++) {
        void *block = malloc(16 + (size_t)i);
        uintptr_t p = (uintptr_t)block;
        free(block);
        if (near ? !among(p, around, SIZES, 1) : among(p, around, 16, 0))
            return 0;
    }
    return 1;
}

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One window of timed operations: malloc/free pairs, or malloc/realloc/free triples. A block
 * only grows: shrunk, glibc would split it, and the blocks would leave their places. */
static void window(int resize, unsigned *seed)
{
    for (long i = 0; i < WINDOW_PAIRS; i++) {
        size_t size = (size_t)rand_r(seed) % SIZES;
        void *p = malloc(16 + size);
        __asm__ volatile("" : : "r"(p) : "memory");
        if (resize) {
            p = realloc(p, 16 + size + (size_t)rand_r(seed) % (SIZES - size));
            __asm__ volatile("" : : "r"(p) : "memory");
        }
        free(p);
    }
}

/* Timed pairs (or triples: resize); near: between objects with locks, else far from any.
 * Checks that the blocks really are where the row says (else prints an error and returns
 * 1). */
static int free_cost(long n, int near, int resize)
{
    static void *around[SIZES]; /* near: the blocks between locks; far: the locks */
    static double times[MAX_WINDOWS];
    unsigned seed = 2;
    size_t windows = 0;
    if (n < WINDOW_PAIRS) {
        fprintf(stderr, "churnbench: at least %d pairs\n", WINDOW_PAIRS);
        return 64;
    }
    if (near)
        between_locks(around);
    else
        far_from_locks(around);
    for (long done = 0; done < n && windows < MAX_WINDOWS; done += WINDOW_PAIRS) {
        double t0 = cpu_now();
        window(resize, &seed);
        times[windows++] = cpu_now() - t0;
    }
    qsort(times, windows, sizeof *times, by_time);
    double fast = times[windows / 4];
    if (!placed(near, around)) {
        fprintf(stderr, "churnbench: the timed blocks are %s\n",
                near ? "not between the lock objects" : "within 64 KiB of a lock");
        return 1;
    }
    printf("pairs_per_sec=%.0f\n", WINDOW_PAIRS / fast);
    return 0;
}

int main(int argc, char **argv)
{
    long n = argc > 2 ? atol(argv[2]) : 0;
    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* far_from_locks' block comes from the heap */
    if (argc > 2 && !strcmp(argv[1], "churn"))
        churn(n);
    else if (argc > 2 && !strcmp(argv[1], "free"))
        return free_cost(n, 0, 0);
    else if (argc > 2 && !strcmp(argv[1], "near"))
        return free_cost(n, 1, 0);
    else if (argc > 2 && !strcmp(argv[1], "realloc"))
        return free_cost(n, 1, 1);
    else
        return 64;
    return 0;
}
