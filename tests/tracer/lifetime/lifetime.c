/*
 * lifetime.c - a lock's identity lives and dies with its memory (issue "A lock's identity
 * lives and dies with its memory"), chosen by name:
 *   lifetime NAME
 * The locks here are never initialised or destroyed by a call (zeroed memory, static
 * initialisers copied in), like std::mutex on glibc, except in the destroy-* scenarios. Scenarios that depend on an address
 * being reused say so in their output ("reused"), so a run where the allocator chose
 * otherwise fails its test instead of passing without checking anything. meson.build holds
 * the expected outcomes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blocked.h"
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

/* Addresses as integers: the first one's memory may be gone (the compiler would warn). */
static void said_reused(uintptr_t a, uintptr_t b)
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
    uintptr_t was = (uintptr_t)a;
    free(a);
    object *b = object_new(2);
    registry_then_object(b);
    said_reused(was, (uintptr_t)b);
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
    uintptr_t was = (uintptr_t)a;
    void *moved = move(a);
    object *b = object_new(2);
    registry_then_object(b);
    said_reused(was, (uintptr_t)b);
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
    said_reused((uintptr_t)a, (uintptr_t)b);
    munmap(b, page);
}

/* ------------------------------------------------------------------------------------------
 * Part of a mapping, and mremap. pages(n) maps n pages, each holding an object at offset
 * (page / 2) (a page is 4 KiB or more).
 * ---------------------------------------------------------------------------------------- */
static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static char *pages(void *where, size_t n)
{
    int fixed = where ? MAP_FIXED_NOREPLACE : 0;
    char *p = mmap(where, n * page_size(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static object *object_in(char *page)
{
    return (object *)(void *)(page + page_size() / 2);
}

static void describe_object(const void *obj, char *buf, size_t size);

/* Three pages with objects in the first and the last; the last page goes (munmap of one
 * byte: the kernel takes the whole page) and a new object is mapped there. The first
 * object's lock is still known: both orders on it are an inversion; the new one's are not. */
static void munmap_part(void)
{
    char *p = pages(NULL, 3);
    object *a = object_in(p), *b = object_in(p + 2 * page_size());
    a->id = 1;
    b->id = 2;
    locktrace_annotate_lock(&a->mu, a, describe_object);
    locktrace_annotate_lock(&b->mu, b, describe_object);
    object_then_registry(a);
    object_then_registry(b);
    munmap(p + 2 * page_size(), 1);
    char *again = pages(p + 2 * page_size(), 1);
    if (!again) {
        puts("not reused");
        return;
    }
    object *c = object_in(again);
    c->id = 3;
    locktrace_annotate_lock(&c->mu, c, describe_object);
    registry_then_object(c);
    said_reused((uintptr_t)b, (uintptr_t)c);
    registry_then_object(a);
}

/* A mapping shrinks: the object in its lost tail is gone, the one in what is kept is not. */
static void mremap_shrink(void)
{
    char *p = pages(NULL, 2);
    object *a = object_in(p), *b = object_in(p + page_size());
    a->id = 1;
    locktrace_annotate_lock(&a->mu, a, describe_object);
    object_then_registry(a);
    object_then_registry(b);
    if (mremap(p, 2 * page_size(), page_size(), 0) != p)
        puts("mremap failed");
    char *again = pages(p + page_size(), 1);
    object *c = again ? object_in(again) : NULL;
    if (c)
        registry_then_object(c);
    said_reused((uintptr_t)b, (uintptr_t)c);
    registry_then_object(a);
}

/* A mapping grows and must move (the page after it is taken): its object is gone from the
 * old address, and a new object mapped there is another lock. The moved object is a new
 * lock at its new address. */
static void mremap_move(void)
{
    char *p = pages(NULL, 2);
    munmap(p + page_size(), page_size());
    char *blocker = pages(p + page_size(), 1);
    object *a = object_in(p);
    object_then_registry(a);
    char *moved = mremap(p, page_size(), 4 * page_size(), MREMAP_MAYMOVE);
    if (moved == MAP_FAILED || moved == p || !blocker)
        puts("did not move");
    char *again = pages(p, 1);
    object *b = again ? object_in(again) : NULL;
    if (b)
        registry_then_object(b);
    said_reused((uintptr_t)a, (uintptr_t)b);
    registry_then_object(object_in(moved));
}

/* MREMAP_FIXED: the mapping moves onto another, whose object is gone as well. */
static void mremap_fixed(void)
{
    char *from = pages(NULL, 1), *onto = pages(NULL, 1);
    object_then_registry(object_in(from));
    object_then_registry(object_in(onto));
    char *moved = mremap(from, page_size(), page_size(), MREMAP_MAYMOVE | MREMAP_FIXED, onto);
    char *again = pages(from, 1); /* before the tracer may map something there */
    if (moved != onto)
        puts("did not move");
    registry_then_object(object_in(moved));
    object *b = again ? object_in(again) : NULL;
    if (b)
        registry_then_object(b);
    said_reused((uintptr_t)object_in(from), (uintptr_t)b);
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
    uintptr_t was = (uintptr_t)a;
    free(a);
    object *b = object_new(2);
    said_reused(was, (uintptr_t)b);
    relock(b);
    printf("described %d\n", described);
}

/* destroy and init at the same address: the new lock keeps the entry (shadow.c) but not the
 * annotation. `again`: the new lock is annotated too, and reports name it by its own. */
static void destroy_annotated(int again)
{
    object *a = object_new(1), *b = object_new(2);
    pthread_mutex_init(&a->mu, NULL);
    locktrace_annotate_lock(&a->mu, a, describe_object);
    pthread_mutex_lock(&a->mu);
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_init(&a->mu, NULL);
    if (again)
        locktrace_annotate_lock(&a->mu, b, describe_object);
    relock(a);
    printf("described %d\n", described);
}

/* ------------------------------------------------------------------------------------------
 * free-held: memory released while a lock in it is held.
 * ---------------------------------------------------------------------------------------- */
static _Atomic int holding, released;

/* A holder's thread, once it holds its lock: it never unlocks, the memory is gone. */
static void *hold_until_released(void)
{
    atomic_store(&holding, 1);
    while (!atomic_load(&released))
        usleep(1000);
    return NULL;
}

NOINLINE void *hold_object_lock(void *arg)
{
    object *o = arg;
    pthread_mutex_lock(&o->mu);
    return hold_until_released();
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

NOINLINE void *hold_pool_read(void *arg)
{
    pthread_rwlock_rdlock(arg);
    return hold_until_released();
}

/* The same for a read hold: the rwlock's word still counts the reader (holder_confirmed). */
NOINLINE void free_while_other_reads(void)
{
    pthread_t th;
    pthread_rwlock_t *rw = calloc(1, 200);
    pthread_create(&th, NULL, hold_pool_read, rw);
    while (!atomic_load(&holding))
        usleep(1000);
    free(rw);
    atomic_store(&released, 1);
    pthread_join(th, NULL);
    puts("freed while another thread reads it");
}

NOINLINE void free_while_self_holds(void)
{
    object *o = object_new(1);
    pthread_mutex_lock(&o->mu);
    free(o);
    puts("freed while this thread holds it");
}

/* The unlock a free-held report foretells, made: the holder (this thread, or another one)
 * unlocks the freed memory. The mutex starts a small block, whose first 16 bytes free takes
 * for its cache's list: the mutex's owner field among them, so libc's word no longer names
 * the holder (as in a C++ object deleted under its own lock_guard). Its kind, past them, is
 * left, and with MALLOC_PERTURB_ off libc's unlock still takes it for a normal mutex. */
#define FREED_BLOCK 64
#define FREED_AT 0

static pthread_mutex_t *mutex_in_block(char *block)
{
    return (pthread_mutex_t *)(block + FREED_AT);
}

/* free out of the compiler's sight: its -Wuse-after-free is about the use these tests make. */
NOINLINE void free_block(char *block)
{
    free(block);
}

NOINLINE void free_then_unlock_self(void)
{
    char *block = calloc(1, FREED_BLOCK);
    pthread_mutex_lock(mutex_in_block(block));
    free_block(block);
    printf("unlock after free -> %d\n", pthread_mutex_unlock(mutex_in_block(block)));
}

static _Atomic int other_freed;

NOINLINE void *hold_then_unlock_freed(void *block)
{
    pthread_mutex_lock(mutex_in_block(block));
    atomic_store(&holding, 1);
    while (!atomic_load(&other_freed))
        usleep(1000);
    return (void *)(intptr_t)pthread_mutex_unlock(mutex_in_block(block));
}

NOINLINE void free_then_unlock_other(void)
{
    pthread_t th;
    void *rc;
    char *block = calloc(1, FREED_BLOCK);
    pthread_create(&th, NULL, hold_then_unlock_freed, block);
    while (!atomic_load(&holding))
        usleep(1000);
    free_block(block);
    atomic_store(&other_freed, 1);
    pthread_join(th, &rc);
    printf("unlock after free -> %d\n", (int)(intptr_t)rc);
}

NOINLINE void realloc_while_held(void)
{
    object *o = object_new(1);
    pthread_mutex_lock(&o->mu);
    void *moved = realloc(o, 1 << 20);
    puts("reallocated while held");
    free(moved);
}

NOINLINE void mremap_while_held(int shrink)
{
    char *p = pages(NULL, 2);
    object *o = object_in(p + page_size());
    pthread_mutex_lock(&o->mu);
    if (shrink)
        mremap(p, 2 * page_size(), page_size(), 0);
    else
        mremap(p, 2 * page_size(), 2 * page_size(), MREMAP_MAYMOVE | MREMAP_FIXED,
               pages(NULL, 2));
    puts(shrink ? "shrunk while held" : "moved while held");
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

/* A lock's last holder hands it over and its memory is freed at once: a thread pool's
 * shutdown (MariaDB's tpool, whose destructor waits on a condition variable under the pool's
 * mutex until its last worker, holding that mutex, signals that none is left). Once libc has
 * let go of the lock the next owner may take it, release it and free its memory before the
 * last holder is back from libc's unlock (its futex wake of the waiter): no thread holds the
 * lock then. The same for a read-held rwlock the freeing thread waits to write-lock. */
typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t none_left;
    pthread_rwlock_t rw;
    int workers;
    char payload[40];
} pool;

NOINLINE void *pool_worker_end(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->mu); /* the owner is in its wait: it let go of the mutex there */
    p->workers--;
    pthread_cond_signal(&p->none_left);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static blocked_probe writer;

NOINLINE void *pool_reader_end(void *arg)
{
    pool *p = arg;
    pthread_rwlock_rdlock(&p->rw);
    atomic_store(&holding, 1);
    blocked_until(&writer); /* the owner waits for the write lock */
    pthread_rwlock_unlock(&p->rw);
    return NULL;
}

NOINLINE void handoff_free(long rounds, int read)
{
    for (long i = 0; i < rounds; i++) {
        pool *p = calloc(1, sizeof *p);
        pthread_t th;
        if (read) {
            atomic_store(&holding, 0);
            atomic_store(&writer.tid, 0);
            pthread_create(&th, NULL, pool_reader_end, p);
            while (!atomic_load(&holding))
                sched_yield();
            blocked_announce_on(&writer, &p->rw, sizeof p->rw);
            pthread_rwlock_wrlock(&p->rw);
            pthread_rwlock_unlock(&p->rw);
        } else {
            p->workers = 1;
            pthread_mutex_lock(&p->mu);
            pthread_create(&th, NULL, pool_worker_end, p);
            while (p->workers)
                pthread_cond_wait(&p->none_left, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        free(p);
        pthread_join(th, NULL);
    }
    puts("rounds done");
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
    said_reused((uintptr_t)stack_lock_addr[0], (uintptr_t)stack_lock_addr[1]);
}

/* ------------------------------------------------------------------------------------------
 * destroy, then the same address: init'ed again, taken again without init (the memory
 * reused as a zero-filled lock), or freed and reused by another object. Each time the lock is
 * a new one: taken in the other order around the registry, it makes no inversion.
 * ---------------------------------------------------------------------------------------- */
static void destroy_reuse(void)
{
    object *o = object_new(1);
    for (int round = 0; round < 4; round++) { /* init, destroy; init again, the other order */
        pthread_mutex_init(&o->mu, NULL);
        if (round % 2)
            registry_then_object(o);
        else
            object_then_registry(o);
        pthread_mutex_destroy(&o->mu);
    }
    memset(&o->mu, 0, sizeof o->mu); /* destroyed, then a zero-filled lock at its address */
    registry_then_object(o);
    pthread_mutex_init(&o->mu, NULL);
    object_then_registry(o);
    pthread_mutex_destroy(&o->mu);
    uintptr_t was = (uintptr_t)o;
    free(o); /* destroyed, then freed: the next object's lock is new */
    object *b = object_new(2);
    registry_then_object(b);
    said_reused(was, (uintptr_t)b);
    free(b);
}

/* Threads that init and destroy their own locks at once, each round in the other order
 * around a shared lock (every round's locks are new ones), with a fork in the middle whose
 * child does the same. */
#define DESTROY_THREADS 6
#define DESTROY_LOCKS 500
#define DESTROY_ROUNDS 12

static void *destroy_rounds(void *arg)
{
    pthread_mutex_t *own = arg;
    for (int round = 0; round < DESTROY_ROUNDS; round++) {
        for (int i = 0; i < DESTROY_LOCKS; i++) {
            pthread_mutex_init(&own[i], NULL);
            pthread_mutex_t *first = round % 2 ? &registry : &own[i];
            pthread_mutex_lock(first);
            pthread_mutex_lock(round % 2 ? &own[i] : &registry);
            pthread_mutex_unlock(round % 2 ? &own[i] : &registry);
            pthread_mutex_unlock(first);
        }
        for (int i = 0; i < DESTROY_LOCKS; i++)
            pthread_mutex_destroy(&own[i]);
    }
    return NULL;
}

static int destroy_threads_once(void)
{
    static pthread_mutex_t own[DESTROY_THREADS][DESTROY_LOCKS];
    pthread_t th[DESTROY_THREADS];
    for (int k = 0; k < DESTROY_THREADS; k++)
        if (pthread_create(&th[k], NULL, destroy_rounds, own[k]))
            return 1;
    for (int k = 0; k < DESTROY_THREADS; k++)
        pthread_join(th[k], NULL);
    return 0;
}

static void destroy_threads(void)
{
    if (destroy_threads_once())
        return;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        _exit(destroy_threads_once());
    int status = 0, parent = destroy_threads_once();
    waitpid(child, &status, 0);
    puts(!parent && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "rounds done" : "failed");
}

/* Locks destroyed at addresses that never come back, in memory never freed: what the tracer
 * keeps of destroyed locks stays bounded. */
static long rss_kib(void);
static long status_kib(const char *field);

static void destroy_spread(long n)
{
    size_t size = (size_t)n * 64;
    char *space = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (space == MAP_FAILED)
        return;
    memset(space, 1, size);
    pthread_mutex_t warm;
    pthread_mutex_init(&warm, NULL);
    pthread_mutex_destroy(&warm);
    long before = rss_kib();
    for (long i = 0; i < n; i++) {
        pthread_mutex_t *m = (pthread_mutex_t *)(void *)(space + i * 64);
        pthread_mutex_init(m, NULL);
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        pthread_mutex_destroy(m);
    }
    long grown = rss_kib() - before;
    printf("destroyed %ld: rss grew %s\n", n, grown < 24576 ? "less than 24 MiB" : "24 MiB or more");
    if (grown >= 24576)
        printf("(grew %ld KiB)\n", grown);
}

/* An annotation needs memory of the tracer's (a lock's side record, shadow.c). With none left
 * (the address space capped where it is), the tracer says so once and checks nothing more:
 * the relock after it is not reported (an error-checking mutex, so libc answers EDEADLK
 * without the tracer), and the program goes on. */
static void annotate_out_of_memory(void)
{
    pthread_mutex_t mu;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&mu, &attr);
    object *o = object_new(1);
    pthread_mutex_lock(&mu); /* its shadow entry is made before the cap */
    pthread_mutex_unlock(&mu);
    printf("capping the address space\n");
    fflush(stdout);
    long vm = status_kib("VmSize:");
    struct rlimit r = {(rlim_t)vm * 1024, (rlim_t)vm * 1024};
    if (vm < 0 || setrlimit(RLIMIT_AS, &r) != 0)
        return;
    locktrace_annotate_lock(&mu, o, describe_object);
    pthread_mutex_lock(&mu);
    int rc = pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    printf("annotated, relock -> %d, described %d\n", rc, described);
}

/* ------------------------------------------------------------------------------------------
 * Churn: short-lived heap locks, each in a block of random size at a random offset (a lock
 * member of objects of many shapes), a window of them alive at a time, each locked once and
 * freed. The addresses keep changing, so a tracer that kept every lock it ever saw would grow
 * with their number; VmRSS after many rounds is compared with VmRSS after a warm-up.
 * ---------------------------------------------------------------------------------------- */
#define WINDOW 1024

/* A size /proc/self/status gives in KiB ("VmRSS:", "VmSize:"), -1 when it has none. */
static long status_kib(const char *field)
{
    char line[256];
    long kib = -1;
    size_t n = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n))
            kib = strtol(line + n, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static long rss_kib(void)
{
    return status_kib("VmRSS:");
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
    else if (!strcmp(name, "destroy-annotated"))
        destroy_annotated(0);
    else if (!strcmp(name, "destroy-reannotated"))
        destroy_annotated(1);
    else if (!strcmp(name, "annotate-out-of-memory"))
        annotate_out_of_memory();
    else if (!strcmp(name, "free-held-other"))
        free_while_other_holds();
    else if (!strcmp(name, "free-held-other-read"))
        free_while_other_reads();
    else if (!strcmp(name, "free-held-self"))
        free_while_self_holds();
    else if (!strcmp(name, "free-held-self-unlock"))
        free_then_unlock_self();
    else if (!strcmp(name, "free-held-other-unlock"))
        free_then_unlock_other();
    else if (!strcmp(name, "realloc-held"))
        realloc_while_held();
    else if (!strcmp(name, "munmap-held"))
        munmap_while_held();
    else if (!strcmp(name, "munmap-part"))
        munmap_part();
    else if (!strcmp(name, "mremap-shrink"))
        mremap_shrink();
    else if (!strcmp(name, "mremap-move"))
        mremap_move();
    else if (!strcmp(name, "mremap-fixed"))
        mremap_fixed();
    else if (!strcmp(name, "mremap-shrink-held"))
        mremap_while_held(1);
    else if (!strcmp(name, "mremap-move-held"))
        mremap_while_held(0);
    else if (!strcmp(name, "handoff-free"))
        handoff_free(argc > 2 ? atol(argv[2]) : 2000, 0);
    else if (!strcmp(name, "handoff-free-read"))
        handoff_free(argc > 2 ? atol(argv[2]) : 2000, 1);
    else if (!strcmp(name, "stack-reuse"))
        stack_reuse();
    else if (!strcmp(name, "destroy-reuse"))
        destroy_reuse();
    else if (!strcmp(name, "destroy-threads"))
        destroy_threads();
    else if (!strcmp(name, "destroy-spread"))
        destroy_spread(argc > 2 ? atol(argv[2]) : 500000);
    else if (!strcmp(name, "churn"))
        churn(argc > 2 ? atol(argv[2]) : 300000);
    else
        return 64;
    return 0;
}
