/*
 * lifetime.c - a lock's identity lives and dies with its memory (issue "A lock's identity
 * lives and dies with its memory"), chosen by name:
 *   lifetime NAME
 * The locks here are never initialised or destroyed by a call (zeroed memory, static
 * initialisers copied in), like std::mutex on glibc. Scenarios that depend on an address
 * being reused say so in their output ("reused"), so a run where the allocator chose
 * otherwise fails its test instead of passing without checking anything. meson.build holds
 * the expected outcomes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locktrace.h"

#define NOINLINE __attribute__((noinline))

typedef struct object {
    long id;
    pthread_mutex_t mu;
    char payload[40];
} object;

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;

static object *object_new(long id)
{
    object *o = malloc(sizeof *o); /* malloc, not calloc: glibc's calloc skips its tcache */
    memset(o, 0, sizeof *o);       /* a zero-filled mutex: never initialised by a call */
    o->id = id;
    return o;
}

/* The object's lock, then the registry's. */
NOINLINE void object_then_registry(object *o)
{
    pthread_mutex_lock(&o->mu);
    pthread_mutex_lock(&registry);
    pthread_mutex_unlock(&registry);
    pthread_mutex_unlock(&o->mu);
}

/* The registry's lock, then the object's: the other order. */
NOINLINE void registry_then_object(object *o)
{
    pthread_mutex_lock(&registry);
    pthread_mutex_lock(&o->mu);
    pthread_mutex_unlock(&o->mu);
    pthread_mutex_unlock(&registry);
}

static void said_reused(const void *a, const void *b)
{
    puts(a == b ? "reused" : "not reused");
}

/* ------------------------------------------------------------------------------------------
 * free + reuse: two objects that were never alive at the same time share an address.
 * ---------------------------------------------------------------------------------------- */
static void free_reuse(void)
{
    object *a = object_new(1);
    object_then_registry(a);
    void *was = a;
    free(a);
    object *b = object_new(2);
    registry_then_object(b);
    said_reused(was, b);
    free(b);
}

/* The same with both objects alive: a real inversion, which must still be reported. */
static void live_inversion(void)
{
    object *a = object_new(1), *b = object_new(2);
    (void)b;
    object_then_registry(a);
    registry_then_object(a);
    puts("both orders on one live object");
    free(a);
    free(b);
}

/* realloc and reallocarray move the block (too big to grow in place): the lock at the old
 * address is gone. */
static void *by_realloc(object *o) { return realloc(o, 1 << 20); }
static void *by_reallocarray(object *o) { return reallocarray(o, 1 << 14, sizeof *o); }

static void moved_reuse(void *(*move)(object *))
{
    object *a = object_new(1);
    object_then_registry(a);
    void *was = a;
    void *moved = move(a);
    object *b = object_new(2);
    registry_then_object(b);
    said_reused(was, b);
    free(b);
    free(moved);
}

/* munmap, then a new mapping at the same place. */
static void munmap_reuse(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    object *a = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    object_then_registry(a);
    munmap(a, page);
    object *b = mmap(a, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    registry_then_object(b);
    said_reused(a, b);
    munmap(b, page);
}

/* ------------------------------------------------------------------------------------------
 * Annotations end with the memory: the next object is not described by the old callback.
 * ---------------------------------------------------------------------------------------- */
static int described;

static void describe_object(const void *obj, char *buf, size_t size)
{
    const object *o = obj;
    described++;
    snprintf(buf, size, "object #%ld", o->id);
}

NOINLINE void relock(object *o)
{
    pthread_mutex_lock(&o->mu);
    int rc = pthread_mutex_lock(&o->mu); /* with LOCKTRACE_ACTION=edeadlk: EDEADLK */
    printf("relock -> %d\n", rc);
}

static void stale_annotation(void)
{
    object *a = object_new(1);
    locktrace_annotate_lock(&a->mu, a, describe_object);
    pthread_mutex_lock(&a->mu);
    pthread_mutex_unlock(&a->mu);
    void *was = a;
    free(a);
    object *b = object_new(2);
    said_reused(was, b);
    relock(b);
    printf("described %d\n", described);
}

/* ------------------------------------------------------------------------------------------
 * free-held: memory released while a lock in it is held.
 * ---------------------------------------------------------------------------------------- */
static _Atomic int holding, released;

NOINLINE void *hold_object_lock(void *arg)
{
    object *o = arg;
    pthread_mutex_lock(&o->mu);
    atomic_store(&holding, 1);
    while (!atomic_load(&released))
        usleep(1000);
    return NULL; /* never unlocks: the memory is gone */
}

NOINLINE void free_while_other_holds(void)
{
    pthread_t th;
    object *o = object_new(1);
    locktrace_annotate_lock(&o->mu, o, describe_object);
    pthread_create(&th, NULL, hold_object_lock, o);
    while (!atomic_load(&holding))
        usleep(1000);
    free(o);
    atomic_store(&released, 1);
    pthread_join(th, NULL);
    puts("freed while another thread holds it");
}

NOINLINE void free_while_self_holds(void)
{
    object *o = object_new(1);
    pthread_mutex_lock(&o->mu);
    free(o);
    puts("freed while this thread holds it");
}

NOINLINE void realloc_while_held(void)
{
    object *o = object_new(1);
    pthread_mutex_lock(&o->mu);
    void *moved = realloc(o, 1 << 20);
    puts("reallocated while held");
    free(moved);
}

NOINLINE void munmap_while_held(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    pthread_rwlock_t *rw = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
    pthread_rwlock_rdlock(rw);
    munmap(rw, page);
    puts("unmapped while read-held");
}

/* ------------------------------------------------------------------------------------------
 * Locks on a thread's stack end when the thread exits.
 * ---------------------------------------------------------------------------------------- */
static void *stack_lock_addr[2];

NOINLINE void *stack_lock_thread(void *arg)
{
    long round = (long)arg;
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    stack_lock_addr[round] = &local;
    pthread_mutex_lock(round ? &registry : &local);
    pthread_mutex_lock(round ? &local : &registry);
    pthread_mutex_unlock(round ? &local : &registry);
    pthread_mutex_unlock(round ? &registry : &local);
    return NULL;
}

static void stack_reuse(void)
{
    for (long round = 0; round < 2; round++) {
        pthread_t th;
        pthread_create(&th, NULL, stack_lock_thread, (void *)round);
        pthread_join(th, NULL);
    }
    said_reused(stack_lock_addr[0], stack_lock_addr[1]);
}

/* ------------------------------------------------------------------------------------------
 * Churn: short-lived heap locks, each in a block of random size at a random offset (a lock
 * member of objects of many shapes), a window of them alive at a time, each locked once and
 * freed. The addresses keep changing, so a tracer that kept every lock it ever saw would grow
 * with their number; VmRSS after many rounds is compared with VmRSS after a warm-up.
 * ---------------------------------------------------------------------------------------- */
#define WINDOW 1024

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static void churn_rounds(char **live, long n, unsigned *seed)
{
    for (long i = 0; i < n; i++) {
        size_t k = (size_t)i % WINDOW, size = 64 + (size_t)rand_r(seed) % 4032;
        free(live[k]);
        live[k] = malloc(size);
        pthread_mutex_t *m = (pthread_mutex_t *)(void *)(live[k] + (size_t)rand_r(seed) %
                                                         ((size - sizeof *m) / 8) * 8);
        memset(m, 0, sizeof *m);
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
    }
}

static void churn(long n)
{
    static char *live[WINDOW];
    unsigned seed = 1;
    churn_rounds(live, 50000, &seed);
    long before = rss_kib();
    churn_rounds(live, n, &seed);
    long grown = rss_kib() - before;
    printf("churn %ld: rss grew %s\n", n, grown < 4096 ? "less than 4 MiB" : "4 MiB or more");
    if (grown >= 4096)
        printf("(grew %ld KiB)\n", grown);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "free-reuse"))
        free_reuse();
    else if (!strcmp(name, "live-inversion"))
        live_inversion();
    else if (!strcmp(name, "realloc-reuse"))
        moved_reuse(by_realloc);
    else if (!strcmp(name, "reallocarray-reuse"))
        moved_reuse(by_reallocarray);
    else if (!strcmp(name, "munmap-reuse"))
        munmap_reuse();
    else if (!strcmp(name, "stale-annotation"))
        stale_annotation();
    else if (!strcmp(name, "free-held-other"))
        free_while_other_holds();
    else if (!strcmp(name, "free-held-self"))
        free_while_self_holds();
    else if (!strcmp(name, "realloc-held"))
        realloc_while_held();
    else if (!strcmp(name, "munmap-held"))
        munmap_while_held();
    else if (!strcmp(name, "stack-reuse"))
        stack_reuse();
    else if (!strcmp(name, "churn"))
        churn(argc > 2 ? atol(argv[2]) : 300000);
    else
        return 64;
    return 0;
}
