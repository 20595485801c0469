/*
 * names.c - locks in every kind of place, each made to show up in a report, for the names
 * reports give unannotated locks (tests/tracer/names/names_test.py): a global, a file-static,
 * a function-static, a member of a global struct, one deep in a large .bss, a lock on this
 * thread's stack and on another thread's, thread-local ones, a heap block, a shared anonymous mapping, annotated
 * locks in an inversion's table, and thread dumps.
 *
 * Run with LOCKTRACE_ACTION=edeadlk: a relock reports and returns EDEADLK, so every scenario
 * ends normally. Also compiled as C++ (names_cpp.cpp), where the same variables have mangled
 * symbols that reports demangle. Usage: names SCENARIO
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locktrace.h"

#define NOINLINE __attribute__((noinline))

pthread_mutex_t config_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t order_a = PTHREAD_MUTEX_INITIALIZER;

struct registry {
    long count;
    pthread_mutex_t mu;
};
struct registry registry = {0, PTHREAD_MUTEX_INITIALIZER};

/* A lock 1 MiB into .bss: past the end of the file's mapping, in anonymous memory. */
struct {
    char filler[1 << 20];
    pthread_mutex_t mu;
} late = {{0}, PTHREAD_MUTEX_INITIALIZER};

/* Thread-local locks: a variable of its own, and a member of a struct (in another thread). */
__thread pthread_mutex_t tls_mu = PTHREAD_MUTEX_INITIALIZER;
__thread struct registry tls_registry = {0, PTHREAD_MUTEX_INITIALIZER};

/* Locks m twice: the second is a self-deadlock the tracer reports (EDEADLK with
 * LOCKTRACE_ACTION=edeadlk); prints what the relock returned. */
static NOINLINE void relock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    int rc = pthread_mutex_lock(m);
    printf("relock -> %s\n", rc == 0 ? "0" : strerror(rc));
    pthread_mutex_unlock(m);
}

static NOINLINE void function_static(void)
{
    static pthread_mutex_t fn_mu = PTHREAD_MUTEX_INITIALIZER;
    relock(&fn_mu);
}

/* A lock in this frame (its address escapes, so it lives there at -O2 too). */
static NOINLINE void stack_user(void)
{
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    relock(&m);
    pthread_mutex_destroy(&m);
}

static void *tls_worker(void *arg)
{
    (void)arg;
    relock(&tls_registry.mu);
    return NULL;
}

static void *stack_worker(void *arg)
{
    (void)arg;
    stack_user();
    return NULL;
}

/* Another thread's stack: T1 keeps a lock in its frame and sleeps on a semaphore (no lock),
 * while this thread takes it and order_a in both orders: an inversion found by T0 that
 * names a lock on T1's stack. Its frame is known only when T1 made a lock call from it
 * (other-stack), not when it never did (other-stack-unseen). */
static pthread_mutex_t *shared; /* __atomic builtins: this file is C++ too */
static sem_t done;

static void *stack_owner(void *arg)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; /* an init call would be seen from here */
    if (arg) { /* the tracer has seen this frame: a lock call from it */
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    __atomic_store_n(&shared, &m, __ATOMIC_RELEASE);
    while (sem_wait(&done) != 0)
        ;
    pthread_mutex_destroy(&m);
    return NULL;
}

static void both_orders(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
    pthread_mutex_lock(b);
    pthread_mutex_lock(a);
    pthread_mutex_unlock(a);
    pthread_mutex_unlock(b);
}

static void other_stack(int locked_there)
{
    pthread_t t;
    sem_init(&done, 0, 0);
    pthread_create(&t, NULL, stack_owner, locked_there ? &done : NULL);
    while (!__atomic_load_n(&shared, __ATOMIC_ACQUIRE))
        sched_yield();
    both_orders(&order_a, shared);
    sem_post(&done);
    pthread_join(t, NULL);
    printf("other stack\n");
}

struct object {
    char header[40];
    pthread_mutex_t mu;
};

/* A heap block; prints the name its lock must have (heap.c has every other kind of block). */
static void heap(void)
{
    struct object *o = (struct object *)calloc(1, sizeof *o);
    printf("heap block %p (%zu bytes), offset %zu\n", (void *)o, malloc_usable_size(o),
           offsetof(struct object, mu));
    relock(&o->mu);
    free(o);
}

/* A process-shared mutex in a MAP_SHARED | MAP_ANONYMOUS mapping, as a program shares one
 * with its fork children; its second page, so the offset says which. */
static void shared_anon(void)
{
    size_t len = 2 * (size_t)sysconf(_SC_PAGESIZE), at = len / 2 + 64;
    char *p = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t a;
    pthread_mutex_t *m = (pthread_mutex_t *)(p + at);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(m, &a);
    printf("shared anonymous mapping %p (%zu bytes), offset %zu\n", (void *)p, len, at);
    relock(m);
    munmap(p, len);
}

/* Two annotated locks, and the inversion between them. */
struct account {
    pthread_mutex_t mu;
    int id;
};

static void describe_account(const void *object, char *buf, size_t size)
{
    snprintf(buf, size, "account #%d", ((const struct account *)object)->id);
}

static struct account savings = {PTHREAD_MUTEX_INITIALIZER, 1};
static struct account checking = {PTHREAD_MUTEX_INITIALIZER, 2};

static void annotated(void)
{
    locktrace_annotate_lock(&savings.mu, &savings, describe_account);
    locktrace_annotate_lock(&checking.mu, &checking, describe_account);
    both_orders(&savings.mu, &checking.mu);
    printf("annotated\n");
}

/* Thread dumps: T1 holds config_mu and a lock in its own frame, then sleeps on a semaphore;
 * this thread then makes a report that aborts (the dump after it shows T1) or raises the
 * dump signal (LOCKTRACE_DUMP_SIGNAL=SIGUSR1). */
static sem_t holding;

static NOINLINE void *dump_holder(void *arg)
{
    pthread_mutex_t m;
    (void)arg;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&config_mu);
    pthread_mutex_lock(&m);
    sem_post(&holding);
    while (sem_wait(&done) != 0)
        ;
    pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&config_mu);
    return NULL;
}

static void dump(int by_signal)
{
    pthread_t t;
    sem_init(&done, 0, 0);
    sem_init(&holding, 0, 0);
    pthread_create(&t, NULL, dump_holder, NULL);
    while (sem_wait(&holding) != 0)
        ;
    if (by_signal)
        raise(SIGUSR1);
    else
        relock(&registry.mu);
    sem_post(&done);
    pthread_join(t, NULL);
    printf("dumped\n");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    pthread_t t;
    if (!strcmp(s, "global"))
        relock(&config_mu);
    else if (!strcmp(s, "file-static"))
        relock(&file_mu);
    else if (!strcmp(s, "function-static"))
        function_static();
    else if (!strcmp(s, "member"))
        relock(&registry.mu);
    else if (!strcmp(s, "far-bss"))
        relock(&late.mu);
    else if (!strcmp(s, "stack"))
        stack_user();
    else if (!strcmp(s, "thread-stack") && pthread_create(&t, NULL, stack_worker, NULL) == 0)
        pthread_join(t, NULL);
    else if (!strcmp(s, "thread-local"))
        relock(&tls_mu);
    else if (!strcmp(s, "thread-local-thread") && pthread_create(&t, NULL, tls_worker, NULL) == 0)
        pthread_join(t, NULL);
    else if (!strcmp(s, "other-stack"))
        other_stack(1);
    else if (!strcmp(s, "other-stack-unseen"))
        other_stack(0);
    else if (!strcmp(s, "heap"))
        heap();
    else if (!strcmp(s, "shared-anon"))
        shared_anon();
    else if (!strcmp(s, "table")) {
        both_orders(&order_a, &registry.mu);
        printf("table\n");
    } else if (!strcmp(s, "annotated"))
        annotated();
    else if (!strcmp(s, "dump-abort"))
        dump(0);
    else if (!strcmp(s, "dump-signal"))
        dump(1);
    else {
        fprintf(stderr, "usage: names SCENARIO\n");
        return 2;
    }
    return 0;
}
