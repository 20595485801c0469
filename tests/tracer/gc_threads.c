/*
 * gc_threads.c - a real stop-the-world collector (Boehm GC, libgc) under the tracer. Four
 * threads started with GC_pthread_create allocate lists from the collected heap and take
 * nested pthread mutexes, making new ones as they go, while main collects 300 times. Each
 * collection stops the world with libgc's suspend signal, whose handler acknowledges and
 * then waits in sigsuspend for the restart signal: a thread stopped inside the tracer (in
 * the order graph's gate, holding a tracer lock) stopped the collector's next lock for good.
 * Each thread then checks the list it kept through the collections. Prints how many
 * collections there were (at least), then "done".
 */
#define GC_THREADS
#include <gc.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "random_pair.h"

#define WORKERS 4
#define LOCKS 256
#define COLLECTIONS 300
#define KEPT 2000

typedef struct node {
    struct node *next;
    long value;
} node;

static pthread_mutex_t locks[LOCKS];
static atomic_int stop, broken;

/* A mutex in the collected heap, new to the tracer, taken under one of the shared ones. */
static void fresh_lock(unsigned *r)
{
    pthread_mutex_t *m = GC_MALLOC(sizeof *m);
    pthread_mutex_t *outer = &locks[random_next(r) % LOCKS];
    pthread_mutex_init(m, NULL);
    pthread_mutex_lock(outer);
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    pthread_mutex_unlock(outer);
    pthread_mutex_destroy(m);
}

static void *worker(void *arg)
{
    unsigned r = (unsigned)(size_t)arg + 1, low;
    node *kept = NULL, *garbage = NULL;
    for (long n = 0; n < KEPT; n++) { /* reachable only from this thread's stack */
        node *x = GC_MALLOC(sizeof *x);
        x->next = kept;
        x->value = n;
        kept = x;
    }
    for (unsigned n = 0; !atomic_load(&stop); n++) {
        node *x = GC_MALLOC(sizeof *x);
        x->next = n % 1000 ? garbage : NULL;
        garbage = x;
        random_pair(locks, LOCKS, &r, &low);
        if (n % 128 == 0)
            fresh_lock(&r);
    }
    long expect = KEPT;
    for (node *x = kept; x; x = x->next)
        if (x->value != --expect)
            atomic_store(&broken, 1);
    if (expect != 0)
        atomic_store(&broken, 1);
    return NULL;
}

int main(void)
{
    pthread_t th[WORKERS];
    unsigned r = 7, low;
    GC_INIT();
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    for (int i = 0; i < WORKERS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(size_t)i) != 0)
            return 1;
    for (int k = 0; k < COLLECTIONS; k++) {
        GC_gcollect();
        random_pair(locks, LOCKS, &r, &low);
        fresh_lock(&r);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    printf("collections: %s %d\n", GC_get_gc_no() >= COLLECTIONS ? "at least" : "fewer than",
           COLLECTIONS);
    printf("kept lists: %s\n", atomic_load(&broken) ? "broken" : "intact");
    puts("done");
    return 0;
}
