/*
 * churnbench.c - short-lived heap locks and the cost of free(), for run_churn.py:
 *   churnbench churn N    N heap locks, each in a block of random size (64..4096 bytes) at a
 *                         random offset, a window of 4096 alive: malloc, lock, unlock, free
 *                         (no init or destroy); prints seconds= and the peak rss_kib=
 *   churnbench free N     N malloc/free pairs of 16..256 bytes (no lock near them, while a
 *                         few heap locks are known); prints pairs_per_sec=
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 4096

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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

static void free_cost(long n)
{
    static void *some[16];
    unsigned seed = 2;
    for (int i = 0; i < 16; i++) { /* known heap locks, so the heap's region has some */
        some[i] = calloc(1, sizeof(pthread_mutex_t));
        pthread_mutex_lock(some[i]);
        pthread_mutex_unlock(some[i]);
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        void *p = malloc(16 + (size_t)rand_r(&seed) % 240);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
    printf("pairs_per_sec=%.0f\n", (double)n / (now() - t0));
}

int main(int argc, char **argv)
{
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (argc > 2 && !strcmp(argv[1], "churn"))
        churn(n);
    else if (argc > 2 && !strcmp(argv[1], "free"))
        free_cost(n);
    else
        return 64;
    return 0;
}
