/*
 * heap.c - locks inside malloc blocks of every kind, each made to show up in a report, for the
 * names reports give them: "heap block 0x... (N bytes), offset K" (heap_test.py). The program
 * prints what each name must be, from its own pointers and malloc_usable_size, one line per
 * lock before its report:
 *   expect 0x<lock> heap block 0x<block> (<usable size> bytes), offset <lock - block>
 * and checks that the block is where the scenario says (the brk heap, a thread's arena, a
 * mapping of its own), exiting 3 when it is not.
 *
 * Run with LOCKTRACE_ACTION=edeadlk: a relock reports and returns EDEADLK, so every scenario
 * ends normally. stress makes reports while other threads allocate and free hard (run with
 * MALLOC_ARENA_MAX=1, so they change the very heap the tracer walks). Usage: heap SCENARIO
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../blocked.h"

#define NOINLINE __attribute__((noinline))

struct object {
    char header[40];
    pthread_mutex_t mu;
};

/* Prints the name the lock at `lock` in the block at `block` must have. */
static void expect(const void *lock, const void *block)
{
    printf("expect %p heap block %p (%zu bytes), offset %zu\n", lock, block,
           malloc_usable_size((void *)block), (size_t)((const char *)lock - (const char *)block));
    fflush(stdout);
}

/* Where a block is: 'b' in the brk heap (the main arena), 'm' anywhere else (a thread arena,
 * a mapping of its own). Exits 3 when it is not where the scenario needs it. */
static void need_place(const void *p, char place)
{
    extern char end; /* the end of .bss: the brk heap starts above it */
    int brk = (const char *)p > &end && (const char *)p < (const char *)sbrk(0);
    if (brk != (place == 'b')) {
        fprintf(stderr, "block %p is %sin the brk heap\n", p, brk ? "" : "not ");
        exit(3);
    }
}

/* Locks m twice: the second is a self-deadlock the tracer reports (EDEADLK). */
static NOINLINE void relock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    int rc = pthread_mutex_lock(m);
    printf("relock -> %s\n", rc == 0 ? "0" : strerror(rc));
    pthread_mutex_unlock(m);
}

/* A lock at `offset` in block b, initialized, its name announced, then relocked. */
static NOINLINE void relock_in(void *b, size_t offset, char place)
{
    pthread_mutex_t *m = (pthread_mutex_t *)((char *)b + offset);
    need_place(b, place);
    pthread_mutex_init(m, NULL);
    expect(m, b);
    relock(m);
    pthread_mutex_destroy(m);
}

static void small(void)
{
    struct object *o = (struct object *)calloc(1, sizeof *o);
    relock_in(o, offsetof(struct object, mu), 'b');
    free(o);
}

/* An array of structs from calloc: the lock of element 5. */
static void array(void)
{
    struct object *a = (struct object *)calloc(8, sizeof *a);
    relock_in(a, 5 * sizeof *a + offsetof(struct object, mu), 'b');
    free(a);
}

/* A block a second thread allocates: glibc gives the thread an arena of its own. */
static void *arena_worker(void *arg)
{
    (void)arg;
    struct object *o = (struct object *)malloc(sizeof *o);
    relock_in(o, offsetof(struct object, mu), 'm');
    free(o);
    return NULL;
}

/* A thread arena past its first heap (64 MiB): blocks until one lands in a new heap, then a
 * lock in the first block (its heap ends in the fence glibc leaves when it moves on) and one
 * in the last (a heap without the arena in it). */
static volatile int sink_heaps;

static NOINLINE void last_heap(char *b)
{
    relock_in(b, 256, 'm');
    sink_heaps++; /* not a tail call: a frame of its own, so a report of its own */
}

static void *heaps_worker(void *arg)
{
    enum { MAX = 100000 };
    static char *blocks[MAX];
    const uintptr_t heap = (uintptr_t)64 << 20;
    int n = 0;
    (void)arg;
    do
        blocks[n] = (char *)malloc(1000);
    while (((uintptr_t)blocks[n++] & ~(heap - 1)) == ((uintptr_t)blocks[0] & ~(heap - 1)) && n < MAX);
    if (n == MAX)
        exit(3);
    relock_in(blocks[0], 128, 'm');
    last_heap(blocks[n - 1]);
    while (n)
        free(blocks[--n]);
    return NULL;
}

/* Past the mmap threshold (128 KiB): a block with a mapping of its own; the lock deep in it. */
static void large(void)
{
    char *b = (char *)malloc(300 << 10);
    relock_in(b, 200000, 'm');
    free(b);
}

/* memalign in the main arena (glibc splits the chunk) and for a large block (the chunk moves
 * inside its mapping: the mapping's first word no longer starts it). */
static void aligned(void)
{
    void *b;
    if (posix_memalign(&b, 256, 200) != 0)
        exit(3);
    relock_in(b, 64, 'b');
    free(b);
    b = aligned_alloc(64 << 10, 512 << 10);
    relock_in(b, 300000, 'm');
    free(b);
}

/* A block realloc moved: the lock lives in the new one. The block after b must be in use for
 * b to move; a free neighbour (the tracer frees too) lets it grow in place: then again. */
static void moved(void)
{
    void *left[64];
    int n = 0;
    char *b, *c;
    do {
        b = (char *)malloc(5000);
        left[n++] = malloc(5000); /* after b, when both come from the top chunk */
        c = (char *)realloc(b, 9000);
        if (c == b)
            left[n++] = c;
    } while (c == b && n < 62);
    if (c == b)
        exit(3);
    relock_in(c, 1024, 'b');
    free(c);
    while (n)
        free(left[--n]);
}

/* An object at or above `above` (chunks freed lower down are left alone). */
static struct object *object_above(const char *above)
{
    struct object *o;
    for (int i = 0; i < (1 << 20) && (char *)(o = (struct object *)calloc(1, sizeof *o)) < above; i++)
        ;
    return o;
}

/* Two objects at or above `above`, with their locks initialized and their names announced. */
static void object_pair_above(struct object **a, struct object **b, const char *above)
{
    *a = object_above(above);
    *b = object_above(above);
    pthread_mutex_init(&(*a)->mu, NULL);
    pthread_mutex_init(&(*b)->mu, NULL);
    expect(&(*a)->mu, *a);
    expect(&(*b)->mu, *b);
}

static void object_pair(struct object **a, struct object **b)
{
    object_pair_above(a, b, NULL);
}

static void *in_order(void *arg)
{
    struct object **o = (struct object **)arg;
    pthread_mutex_lock(&o[0]->mu);
    pthread_mutex_lock(&o[1]->mu);
    pthread_mutex_unlock(&o[1]->mu);
    pthread_mutex_unlock(&o[0]->mu);
    return NULL;
}

/* Both orders of two heap locks: an inversion whose table names both blocks. */
static void inversion(void)
{
    struct object *a, *b;
    object_pair(&a, &b);
    in_order((struct object *[]){a, b});
    in_order((struct object *[]){b, a});
    printf("inversion\n");
    free(a);
    free(b);
}

/* Under `ulimit -s unlimited` (run so: exits 3 otherwise) Linux lays the brk heap out below the
 * main stack with nothing mapped between, and the main stack's bounds reach down to the heap's
 * end as it was when they were read, at the first lock call. Returns a pair of objects above
 * that end (allocated until the heap has grown past it): neither is the main thread's stack. */
static void grown_pair(struct object **a, struct object **b)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur != RLIM_INFINITY) {
        fprintf(stderr, "RLIMIT_STACK is not unlimited\n");
        exit(3);
    }
    static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&first);
    pthread_mutex_unlock(&first);
    char *end = (char *)sbrk(0);
    object_pair_above(a, b, end);
    if ((char *)*a < end || (char *)*b < end) {
        fprintf(stderr, "the heap did not grow past %p\n", (void *)end);
        exit(3);
    }
    need_place(*a, 'b');
    need_place(*b, 'b');
}

static void grown(void)
{
    struct object *a, *b;
    grown_pair(&a, &b);
    in_order((struct object *[]){a, b});
    in_order((struct object *[]){b, a});
    printf("inversion\n");
}

/* The other order, once the main thread has left by pthread_exit (joined): the locks and the
 * first order outlive it, and the report names them (the process's /proc/self/maps then reads
 * empty and process_vm_readv of its pid finds no memory). */
static pthread_t main_thread;
static struct object *left_pair[2];

static void *after_main(void *arg)
{
    (void)arg;
    pthread_join(main_thread, NULL);
    in_order((struct object *[]){left_pair[1], left_pair[0]});
    printf("inversion\n");
    fflush(stdout);
    return NULL;
}

static void main_leaves(int grow)
{
    pthread_t t;
    if (grow)
        grown_pair(&left_pair[0], &left_pair[1]);
    else
        object_pair(&left_pair[0], &left_pair[1]);
    if (pthread_create(&t, NULL, in_order, left_pair) != 0 || pthread_join(t, NULL) != 0)
        exit(4);
    main_thread = pthread_self();
    if (pthread_create(&t, NULL, after_main, NULL) != 0)
        exit(4);
    pthread_exit(NULL);
}

/* A real deadlock: T1 and T2 each hold their object's lock, then want the other's. T2 asks
 * only once T1 sleeps waiting, so T2's request closes the cycle and is the one refused. */
static struct object *pair[2];
static pthread_barrier_t both_hold;
static blocked_probe first_waits;

static void *cycle_worker(void *arg)
{
    long i = (long)arg;
    pthread_mutex_lock(&pair[i]->mu);
    pthread_barrier_wait(&both_hold);
    if (i == 0)
        blocked_announce_on(&first_waits, &pair[1]->mu, sizeof pair[1]->mu);
    else
        blocked_until(&first_waits);
    int rc = pthread_mutex_lock(&pair[1 - i]->mu);
    printf("lock -> %s\n", rc == 0 ? "0" : strerror(rc));
    if (rc == 0)
        pthread_mutex_unlock(&pair[1 - i]->mu);
    pthread_mutex_unlock(&pair[i]->mu);
    return NULL;
}

static void cycle(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pair[i] = (struct object *)calloc(1, sizeof *pair[i]);
        pthread_mutex_init(&pair[i]->mu, NULL);
        expect(&pair[i]->mu, pair[i]);
    }
    pthread_barrier_init(&both_hold, NULL, 2);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, cycle_worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

/* A long wait (LOCKTRACE_WAIT_TIMEOUT=1): T1 holds a heap lock for 2.5 s once this thread
 * waits for it; the report names the lock. */
static blocked_probe waiter;

static void *slow_holder(void *arg)
{
    pthread_mutex_t *m = (pthread_mutex_t *)arg;
    pthread_mutex_lock(m);
    pthread_barrier_wait(&both_hold);
    blocked_until(&waiter);
    usleep(2500 * 1000); /* the wait the report is about, not a guess at ordering */
    pthread_mutex_unlock(m);
    return NULL;
}

static void long_wait(void)
{
    pthread_t t;
    struct object *o = (struct object *)calloc(1, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    expect(&o->mu, o);
    pthread_barrier_init(&both_hold, NULL, 2);
    pthread_create(&t, NULL, slow_holder, &o->mu);
    pthread_barrier_wait(&both_hold);
    blocked_announce_on(&waiter, &o->mu, sizeof o->mu);
    pthread_mutex_lock(&o->mu);
    pthread_mutex_unlock(&o->mu);
    pthread_join(t, NULL);
    printf("waited\n");
    free(o);
}

/* free-held: the block freed while its lock is held; free names the block it releases, in
 * the same words. */
static void free_held(void)
{
    struct object *o = (struct object *)calloc(1, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    expect(&o->mu, o);
    pthread_mutex_lock(&o->mu);
    free(o);
    printf("freed\n");
}

/* Stress: CHURNERS threads malloc, realloc and free blocks of all sizes (large ones come
 * and go as mappings, the brk heap grows and shrinks) while this thread relocks REPORTS heap
 * locks, each from a caller of its own. */
#define CHURNERS 3
#define REPORTS 100
static _Atomic int stop;

static void *churner(void *arg)
{
    void *slot[64] = {0};
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop)) {
        unsigned r = rand_r(&seed), k = r % 64;
        size_t size = r % 97 == 0 ? (size_t)(200 << 10) : 16 + r % 4096;
        if (!slot[k])
            slot[k] = malloc(size);
        else if (r % 3 == 0)
            slot[k] = realloc(slot[k], size);
        else {
            free(slot[k]);
            slot[k] = NULL;
        }
        if (slot[k])
            memset(slot[k], (int)r, 16);
    }
    for (int k = 0; k < 64; k++)
        free(slot[k]);
    return NULL;
}

/* REPORTS callers of relock, one per report: a report is known by its lock call and that
 * call's two callers, so a repeat of a caller would be counted, not reported again. */
static volatile int sink;
#define CALLER(n)                                                                           \
    static NOINLINE void relock_##n(pthread_mutex_t *m)                                     \
    {                                                                                       \
        relock(m);                                                                          \
        sink += 1##n; /* not a tail call, and no two callers alike (gcc folds those) */    \
    }
#define CALLERS10(d) CALLER(d##0) CALLER(d##1) CALLER(d##2) CALLER(d##3) CALLER(d##4) \
    CALLER(d##5) CALLER(d##6) CALLER(d##7) CALLER(d##8) CALLER(d##9)
CALLERS10(0) CALLERS10(1) CALLERS10(2) CALLERS10(3) CALLERS10(4)
CALLERS10(5) CALLERS10(6) CALLERS10(7) CALLERS10(8) CALLERS10(9)
#define NAME10(d) relock_##d##0, relock_##d##1, relock_##d##2, relock_##d##3, relock_##d##4, \
    relock_##d##5, relock_##d##6, relock_##d##7, relock_##d##8, relock_##d##9
static void (*const callers[REPORTS])(pthread_mutex_t *) = {
    NAME10(0), NAME10(1), NAME10(2), NAME10(3), NAME10(4),
    NAME10(5), NAME10(6), NAME10(7), NAME10(8), NAME10(9)};

static void stress(void)
{
    pthread_t t[CHURNERS];
    for (long i = 0; i < CHURNERS; i++)
        pthread_create(&t[i], NULL, churner, (void *)(i + 1));
    for (unsigned i = 0; i < REPORTS; i++) {
        size_t size = 64 + 48 * (i % 50);
        char *b = (char *)malloc(size);
        pthread_mutex_t *m = (pthread_mutex_t *)(b + size - sizeof *m - 8 * (i % 3));
        pthread_mutex_init(m, NULL);
        expect(m, b);
        callers[i](m);
        pthread_mutex_destroy(m);
        free(b);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < CHURNERS; i++)
        pthread_join(t[i], NULL);
    printf("stressed\n");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    pthread_t t;
    if (!strcmp(s, "small"))
        small();
    else if (!strcmp(s, "array"))
        array();
    else if (!strcmp(s, "thread-arena") && pthread_create(&t, NULL, arena_worker, NULL) == 0)
        pthread_join(t, NULL);
    else if (!strcmp(s, "arena-heaps") && pthread_create(&t, NULL, heaps_worker, NULL) == 0)
        pthread_join(t, NULL);
    else if (!strcmp(s, "large"))
        large();
    else if (!strcmp(s, "aligned"))
        aligned();
    else if (!strcmp(s, "moved"))
        moved();
    else if (!strcmp(s, "inversion"))
        inversion();
    else if (!strcmp(s, "grown"))
        grown();
    else if (!strcmp(s, "main-left"))
        main_leaves(0);
    else if (!strcmp(s, "grown-main-left"))
        main_leaves(1);
    else if (!strcmp(s, "cycle"))
        cycle();
    else if (!strcmp(s, "long-wait"))
        long_wait();
    else if (!strcmp(s, "free-held"))
        free_held();
    else if (!strcmp(s, "stress"))
        stress();
    else {
        fprintf(stderr, "usage: heap SCENARIO\n");
        return 2;
    }
    return 0;
}
