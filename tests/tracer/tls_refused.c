/*
 * tls_refused.c - a thread started while the program's malloc refuses every thread but the
 * main one (as a program near its memory's end sees), which then takes two locks nested at
 * call sites not seen before; then the main thread takes them the other way round (an
 * inversion, which the tracer still reports). glibc makes a dlopened library's thread-local
 * block (the tracer's libunwind's) with the program's malloc and ends the process when it is
 * refused.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ARENA (16u << 20)

static _Alignas(64) char arena[ARENA];
static _Atomic size_t used;
static _Atomic int refuse;
static pid_t main_tid;

/* Bump allocation; each block keeps its size just before it. While `refuse` is set, threads
 * other than the main one get nothing. */
static void *take(size_t size, size_t align)
{
    if (atomic_load(&refuse) && gettid() != main_tid)
        return NULL;
    size_t at, end, old = atomic_load(&used);
    do {
        at = (old + sizeof(size_t) + align - 1) & ~(align - 1);
        end = at + size;
        if (end > ARENA)
            return NULL;
    } while (!atomic_compare_exchange_weak(&used, &old, end));
    ((size_t *)(arena + at))[-1] = size;
    return arena + at;
}

#include "take_alloc.h"

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void take_both(void)
{
    pthread_mutex_lock(&a);
    pthread_mutex_lock(&b);
    pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
}

static __attribute__((noinline)) void take_reversed(void)
{
    pthread_mutex_lock(&b);
    pthread_mutex_lock(&a);
    pthread_mutex_unlock(&a);
    pthread_mutex_unlock(&b);
}

static void *worker(void *arg)
{
    (void)arg;
    take_both();
    return NULL;
}

int main(void)
{
    main_tid = gettid();
    pthread_mutex_lock(&a); /* the tracer is ready */
    pthread_mutex_unlock(&a);
    pthread_t t;
    atomic_store(&refuse, 1);
    int rc = pthread_create(&t, NULL, worker, NULL);
    if (rc == 0)
        pthread_join(t, NULL);
    atomic_store(&refuse, 0);
    take_reversed();
    printf("thread %s, its locks taken nested, then the other way round: done\n",
           rc == 0 ? "started" : "refused");
    return 0;
}
