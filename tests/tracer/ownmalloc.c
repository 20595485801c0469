/*
 * ownmalloc.c - a program with its own malloc that takes a pthread mutex on every call, so
 * the tracer meets pthread calls from inside itself: from the pthread_create wrapper, and
 * from libdw while it formats a report (and from dlsym while it resolves libc,
 * where a libc allocates there; glibc 2.36 does not when every symbol is found).
 *   ownmalloc clean|self
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ARENA (64u << 20)

static _Alignas(64) char arena[ARENA];
static size_t used;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

/* Bump allocation under the mutex; each block remembers its size just before it. */
static void *take(size_t size, size_t align)
{
    void *p = NULL;
    pthread_mutex_lock(&arena_lock);
    size_t at = (used + sizeof(size_t) + align - 1) & ~(align - 1);
    if (at + size <= ARENA) {
        ((size_t *)(arena + at))[-1] = size;
        p = arena + at;
        used = at + size;
    }
    pthread_mutex_unlock(&arena_lock);
    return p;
}

#include "take_alloc.h"

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *worker(void *arg)
{
    for (int i = 0; i < 10000; i++) {
        pthread_rwlock_rdlock(&rw);
        free(malloc(32));
        pthread_rwlock_unlock(&rw);
    }
    return arg;
}

__attribute__((noinline)) void relock_with_own_malloc(void)
{
    pthread_rwlock_wrlock(&rw);
    pthread_rwlock_wrlock(&rw);
    puts("not reached under the tracer");
}

int main(int argc, char **argv)
{
    pthread_t th[4];
    if (argc > 1 && !strcmp(argv[1], "self")) {
        relock_with_own_malloc();
        return 0;
    }
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    puts("own malloc: done");
    return 0;
}
