/*
 * as_limit.c - a program that fits its address-space cap (RLIMIT_AS) with a little to spare:
 * 300,000 heap mutexes initialised, then 4 threads each taking its share of them in nested
 * pairs (300,000 new orders), then 4 MB more of its own. Prints "ok", or what was refused
 * and exits 1; with `peak`, also its peak address space (VmPeak, kB), which as_limit_test.py
 * reads from a run without the tracer to set the cap of the traced one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm_bytes.h"

#define LOCKS 300000
#define THREADS 4

static pthread_mutex_t *locks;

static void *pairs(void *arg)
{
    long k = (long)arg, per = LOCKS / THREADS;
    for (long i = k * per; i + 1 < (k + 1) * per; i++) {
        pthread_mutex_lock(&locks[i]);
        pthread_mutex_lock(&locks[i + 1]);
        pthread_mutex_unlock(&locks[i + 1]);
        pthread_mutex_unlock(&locks[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[THREADS];
    locks = calloc(LOCKS, sizeof *locks);
    if (!locks) {
        puts("calloc refused");
        return 1;
    }
    for (long i = 0; i < LOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    for (long k = 0; k < THREADS; k++)
        if (pthread_create(&th[k], NULL, pairs, (void *)k) != 0) {
            puts("pthread_create refused");
            return 1;
        }
    for (long k = 0; k < THREADS; k++)
        pthread_join(th[k], NULL);
    char *more = malloc(4 << 20);
    if (!more) {
        puts("malloc refused");
        return 1;
    }
    memset(more, 1, 4 << 20);
    if (argc > 1 && !strcmp(argv[1], "peak"))
        printf("peak %ld\n", vm_peak_bytes() / 1024);
    puts("ok");
    free(more);
    free(locks);
    return 0;
}
