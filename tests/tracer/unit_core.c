/*
 * unit_core.c - unit checks of the tracer's internals, linked without the entry points:
 * the small formatter, the stack depot, held sets, shadow identities (generations), and the
 * recovery of an earlier acquisition's stack from its call site and frame.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "known.h"
#include "lifetime.h"
#include "lt_internal.h"
#include "platform.h"
#include "vm_bytes.h"

static void check_fmt(void)
{
    char buf[32];
    size_t n = lt_fmt_hex(buf, sizeof buf, 0, 0x1f);
    CHECKF(n == 4 && !strcmp(buf, "0x1f"), "got %s", buf);
    n = lt_fmt_dec(buf, sizeof buf, lt_fmt_str(buf, sizeof buf, 0, "n="), -42);
    CHECKF(!strcmp(buf, "n=-42") && n == 5, "got %s", buf);
    n = lt_fmt_str(buf, 4, 0, "truncated");
    CHECK(n == 3 && !strcmp(buf, "tru"));
}

static void check_depot(void)
{
    uintptr_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
    uint32_t ia = lt_stack_intern(a, 3), ib = lt_stack_intern(b, 3);
    size_t n;
    CHECK(ia != 0 && ib != 0 && ia != ib);
    CHECK(lt_stack_intern(a, 3) == ia);
    const uintptr_t *got = lt_stack_get(ia, &n);
    CHECK(got && n == 3 && got[2] == 3);
    CHECK(lt_stack_intern(a, 0) == 0);
    CHECK(lt_stack_get(0, &n) == NULL && n == 0);
}

/* The i-th live entry in acquisition order (a large set leaves holes until it compacts). */
static lt_held *nth_held(lt_thread *t, uint32_t n)
{
    for (uint32_t i = 0; i < t->held_end; i++)
        if (t->held[i].lock && n-- == 0)
            return &t->held[i];
    return NULL;
}

/* Scratch arrays hold what is asked for, however far past double the old size. */
static void check_scratch_fit(void)
{
    void *a = NULL;
    size_t cap = 0;
    CHECK(lt_scratch_fit(&a, &cap, 10, sizeof(int)) && cap >= 10);
    ((int *)a)[9] = 7;
    CHECK(lt_scratch_fit(&a, &cap, 100000, sizeof(int)) && cap >= 100000);
    ((int *)a)[99999] = 1;
    CHECK(((int *)a)[9] == 7);
    lt_platform_unmap(a, cap * sizeof(int));
}

/* An odd key a little random (splitmix64), as a fingerprint is. */
static uint64_t key_nth(uint64_t i)
{
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | 1;
}

/* A key set keeps every key through the copies it grows by (set_fill, eight slots at a time,
 * from sets with removed keys in them, up to large memory), and none it lost. */
static void check_key_set(void)
{
    enum { N = 300000 }; /* a multiple of 3: every third key is removed, N / 3 in all */
    static lt_key_set *_Atomic set;
    for (uint64_t i = 0; i < N; i++) {
        CHECK(lt_set_add(&set, key_nth(i)));
        if (i % 3 == 2)
            lt_set_remove(&set, key_nth(i - 1));
    }
    size_t wrong = 0;
    for (uint64_t i = 0; i < N; i++)
        wrong += lt_set_has(&set, key_nth(i)) != (i % 3 != 1);
    CHECKF(wrong == 0, "%zu keys wrong", wrong);
    lt_key_set *k = atomic_load(&set);
    CHECK(k->live == N - N / 3);
    lt_platform_unmap(k, lt_set_bytes(k->mask + 1));
}

/* A pool hands back the objects put into it, the last put first, before it takes any from
 * its arena; thousands of them (its stack of freed ones grows). */
static void check_pool(void)
{
    enum { N = 3000 };
    static lt_pool pool = LT_POOL(uint64_t, 4096);
    static uint64_t *got[N];
    CHECK(!lt_pool_has_free(&pool));
    for (int i = 0; i < N; i++)
        CHECK((got[i] = lt_pool_get(&pool)) != NULL);
    for (int i = 0; i < N; i++) {
        *got[i] = (uint64_t)i + 1;
        lt_pool_put(&pool, got[i]);
    }
    for (int i = N; i-- > 0;) {
        CHECK(lt_pool_has_free(&pool));
        uint64_t *x = lt_pool_take(&pool);
        CHECKF(x == got[i] && *x == (uint64_t)i + 1, "object %d", i);
    }
    CHECK(!lt_pool_has_free(&pool));
    lt_pool_put(&pool, got[7]);
    CHECK(lt_pool_get(&pool) == got[7] && *got[7] == 0); /* get zeroes a recycled one */
}

static void check_held_set(void)
{
    lt_thread *t = lt_self();
    enum { N = 10000 };
    static char locks[N];
    static lt_lock fake; /* entries need a lock: a hole has none */
    for (int i = 0; i < N; i++)
        CHECK(lt_held_push(t, &locks[i], &fake) != NULL);
    CHECK(t->nheld == N && !t->held_indexed); /* its ends answer: no index yet */
    CHECK(lt_held_find(t, &locks[N - 1]) == &t->held[N - 1] && !t->held_indexed);
    lt_held *h = lt_held_find(t, &locks[5000]); /* the middle: the index is made now */
    CHECK(h && h->addr == &locks[5000] && t->held_indexed);
    lt_held_remove(t, h);
    CHECK(t->nheld == N - 1 && lt_held_find(t, &locks[5000]) == NULL);
    CHECK(nth_held(t, 5000)->addr == &locks[5001]); /* acquisition order kept */
    enum { GONE = N / 2 + 100 };
    for (int i = 0; i < GONE; i++) /* first in, first out: the holes are cut off in front */
        if (i != 5000)
            lt_held_remove(t, lt_held_find(t, &locks[i]));
    CHECK(t->nheld == N - GONE && t->held_end - t->held_start == N - GONE);
    CHECK(t->held[t->held_start].addr == &locks[GONE]);
    CHECK(nth_held(t, 0)->addr == &locks[GONE]);
    for (int i = GONE; i < N; i++)
        CHECK(lt_held_find(t, &locks[i]) && lt_held_find(t, &locks[i])->addr == &locks[i]);
    CHECK(lt_held_find(t, &locks[0]) == NULL && lt_held_find(t, &locks[GONE - 1]) == NULL);
    while (t->nheld)
        lt_held_remove(t, nth_held(t, t->nheld - 1));
    CHECK(t->held_end == 0 && !t->held_indexed);
    for (int i = 0; i < 4; i++) /* small again: a scanned array */
        lt_held_push(t, &locks[i], &fake);
    lt_held_remove(t, lt_held_find(t, &locks[1]));
    CHECK(t->held_end == 3 && t->held[1].addr == &locks[2] && lt_held_find(t, &locks[3]));
    lt_held_find(t, &locks[3])->depth = 7; /* the newest, whole, takes the place of the one */
    lt_held_remove(t, lt_held_find(t, &locks[2])); /* released before it */
    CHECK(t->held_end == 2 && t->nheld == 2 && t->held[1].addr == &locks[3] &&
          t->held[1].depth == 7 && !lt_held_find(t, &locks[2]));
    lt_held_remove(t, lt_held_find(t, &locks[0]));
    CHECK(t->held_end == 1 && t->held[0].addr == &locks[3] && t->held[0].depth == 7);
    while (t->nheld)
        lt_held_remove(t, &t->held[t->nheld - 1]);
}

/* A large set released oldest first or newest first is answered at its ends: it needs no
 * index. An oldest entry that no longer names its lock's identity (stale: a newer entry for
 * the same address may be beside it) is not taken for the answer. */
static void check_held_ends(void)
{
    lt_thread *t = lt_self();
    enum { N = 1000, LEFT = 10 };
    static char locks[N];
    static lt_lock fake[N];
    for (int i = 0; i < N; i++) {
        lt_held *h = lt_held_push(t, &locks[i], &fake[i]);
        CHECK(h != NULL);
        h->gen = atomic_load(&fake[i].gen);
        h->mode = LT_MODE_WRITE;
        atomic_store(&fake[i].writer, t->info.seq + 1);
    }
    int ok = 1;
    for (int i = 0; i < N / 2 && ok; i++) { /* first in, first out */
        lt_held *h = lt_held_find(t, &locks[i]);
        ok = h == &t->held[t->held_start] && h->addr == &locks[i];
        lt_held_remove(t, h);
    }
    for (int i = N; i-- > N / 2 + LEFT && ok;) { /* last in, first out */
        lt_held *h = lt_held_find(t, &locks[i]);
        ok = h == &t->held[t->held_end - 1] && h->addr == &locks[i];
        lt_held_remove(t, h);
    }
    CHECK(ok && t->nheld == LEFT && !t->held_indexed);
    CHECK(t->held[t->held_start].addr == &locks[N / 2]);
    atomic_fetch_add(&fake[N / 2].gen, 1); /* the oldest goes stale; the lock is taken again */
    lt_held *again = lt_held_push(t, &locks[N / 2], &fake[N / 2]);
    again->gen = atomic_load(&fake[N / 2].gen);
    again->mode = LT_MODE_WRITE;
    lt_held_push(t, &locks[0], &fake[0]);
    again = &t->held[t->held_end - 2];
    CHECK(lt_held_find(t, &locks[N / 2]) == again && again->addr == &locks[N / 2]);
    while (t->nheld)
        lt_held_remove(t, nth_held(t, t->nheld - 1));
    CHECK(t->held_end == 0 && t->held_start == 0 && !t->held_indexed);
    /* Read holds released oldest first but the last, which goes as the newest (a pop): the
     * set is empty and begins again at its start (lt_held_pop), though the popped entry is
     * still current: nothing is held. */
    for (int i = 0; i < N; i++) {
        lt_held *h = lt_held_push(t, &locks[i], &fake[i]);
        h->gen = atomic_load(&fake[i].gen);
        h->mode = LT_MODE_READ;
    }
    for (int i = 0; i < N - 1; i++)
        lt_held_remove(t, lt_held_find(t, &locks[i]));
    lt_held_remove(t, lt_held_find(t, &locks[N - 1]));
    CHECK(t->nheld == 0 && t->held_end == 0 && t->held_start == 0);
    CHECK(lt_held_find(t, &locks[N - 1]) == NULL);
    lt_held_push(t, &locks[1], &fake[1]);
    CHECK(lt_held_find(t, &locks[1]) && !lt_held_find(t, &locks[N - 1]));
    lt_held_remove(t, lt_held_find(t, &locks[1]));
}

/* A large set that keeps some locks while it takes and releases others, in random order
 * (removals in the middle of the index's probe chains), finds exactly what it holds. */
static void check_held_churn(void)
{
    lt_thread *t = lt_self();
    enum { KEEP = 100, POOL = 3000, ROUNDS = 200000 };
    static char locks[KEEP + POOL];
    static unsigned char held[KEEP + POOL];
    static lt_lock fake;
    uint32_t x = 88172645u;
    for (int i = 0; i < KEEP; i++) {
        lt_held_push(t, &locks[i], &fake);
        held[i] = 1;
    }
    int ok = 1;
    for (int r = 0; r < ROUNDS && ok; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int k = KEEP + (int)(x % POOL);
        lt_held *h = lt_held_find(t, &locks[k]);
        ok = held[k] ? h && h->addr == &locks[k] : h == NULL;
        if (h)
            lt_held_remove(t, h);
        else
            CHECK(lt_held_push(t, &locks[k], &fake) != NULL);
        held[k] = !h;
    }
    CHECKF(ok, "after %d rounds", ROUNDS);
    for (int i = 0; i < KEEP + POOL && ok; i++) {
        lt_held *h = lt_held_find(t, &locks[i]);
        ok = held[i] ? h && h->addr == &locks[i] : h == NULL;
    }
    CHECK(ok && t->held_indexed);
    while (t->nheld)
        lt_held_remove(t, nth_held(t, 0));
}

/* A lock's memory is released: as lifetime.c forgets it, its entry, then its place in the
 * lock map. */
static void forget(const void *addr)
{
    lt_shadow_forget(&addr, 1);
    lt_lockmap_clear((uintptr_t)addr, (uintptr_t)addr + 1);
}

/* A new thread's set grown past LT_LARGE_FROM (6,000 entries: 336 KB), with the address
 * space capped (arg) 3 MB above what is mapped or not: capped, the aligned 4 MB room for its
 * large pages cannot be made, and it grows as a plain mapping. Either way every entry is
 * kept; uncapped, on Linux, the set lies on whole large pages. */
static void *held_large(void *arg)
{
    enum { N = 6000 };
    static char locks[N];
    static lt_lock fake;
    lt_thread *t = lt_self();
    struct rlimit was = {0, 0};
    long vm = vm_bytes();
    int capped = arg != NULL && vm > 0 && getrlimit(RLIMIT_AS, &was) == 0;
    if (capped) {
        struct rlimit r = {(rlim_t)vm + 3 * 1024 * 1024, was.rlim_max};
        CHECK(setrlimit(RLIMIT_AS, &r) == 0);
    }
    int ok = 1;
    for (int i = 0; i < N && ok; i++)
        ok = lt_held_push(t, &locks[i], &fake) != NULL;
    if (capped)
        CHECK(setrlimit(RLIMIT_AS, &was) == 0);
    CHECKF(ok, "capped %d", capped);
    for (int i = 0; i < N && ok; i += 7)
        ok = lt_held_find(t, &locks[i]) && lt_held_find(t, &locks[i])->addr == &locks[i];
    CHECKF(ok && t->nheld == N, "capped %d", capped);
#ifdef __linux__
    if (!capped)
        CHECKF((uintptr_t)t->held % LT_LARGE_PAGE == 0 &&
                   t->cap == LT_LARGE_PAGE / sizeof(lt_held),
               "held %p cap %u", (void *)t->held, t->cap);
#endif
    while (t->nheld)
        lt_held_remove(t, &t->held[t->nheld - 1]);
    return NULL;
}

static void check_held_large(void)
{
    for (int capped = 0; capped < 2; capped++) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, held_large, capped ? &th : NULL) == 0);
        pthread_join(th, NULL);
    }
}

/* A set that was large and is small again stops using its index and empties it, in time
 * proportional to what it holds; when it grows large again, the index answers for the new
 * entries only. */
static void check_held_regrow(void)
{
    lt_thread *t = lt_self();
    enum { N = 5000, KEEP = 10, AGAIN = 40 };
    static char locks[N];
    static lt_lock fake;
    for (int i = 0; i < N; i++)
        CHECK(lt_held_push(t, &locks[i], &fake) != NULL);
    for (int i = 0; i < N - KEEP; i++)
        lt_held_remove(t, lt_held_find(t, &locks[i]));
    lt_held_compact(t);
    CHECK(t->nheld == KEEP && t->held_end == KEEP && !t->held_indexed);
    CHECK(t->held[0].addr == &locks[N - KEEP] && lt_held_find(t, &locks[N - 1]) == &t->held[KEEP - 1]);
    for (int i = 0; i < AGAIN; i++)
        CHECK(lt_held_push(t, &locks[i], &fake) != NULL);
    CHECK(!t->held_indexed && t->nheld == KEEP + AGAIN);
    CHECK(lt_held_find(t, &locks[N / 2]) == NULL && t->held_indexed);
    for (int i = 0; i < N; i++) {
        lt_held *h = lt_held_find(t, &locks[i]);
        int held = i < AGAIN || i >= N - KEEP;
        CHECKF(held ? h && h->addr == &locks[i] : h == NULL, "lock %d", i);
    }
    for (int i = 0; i < N; i++) /* out of order: every 7th of the held ones, round and round */
        if ((i * 7) % N < AGAIN || (i * 7) % N >= N - KEEP)
            lt_held_remove(t, lt_held_find(t, &locks[(i * 7) % N]));
    CHECK(t->nheld == 0 && t->held_end == 0 && !t->held_indexed);
}

static void check_shadow(void)
{
    static int lock_a, lock_b;
    lt_thread *t = lt_self();
    lt_lock *l = lt_shadow_get(t, &lock_a, 0, 0);
    uint32_t gen = atomic_load(&l->gen);
    CHECK(l && lt_shadow_get(t, &lock_a, 0, 0) == l);
    CHECK(l->first_stack != 0);
    CHECK(lt_shadow_get(t, &lock_b, 0, 0) != l);
    CHECK(lt_shadow_reset(t, &lock_a, 0, 0) == l && atomic_load(&l->gen) == gen + 1);
    forget(&lock_a);
    lt_lock *again = lt_shadow_get(t, &lock_a, 0, 0);
    CHECK(atomic_load(&again->gen) != gen + 1); /* destroyed and seen again: a new identity */
}

/* destroy leaves the entry where it was, with a new gen and no address; the address's next
 * init, or a lock found there without one, takes it back as a new lock; releasing the memory
 * removes it, and the address leaves the lock map. */
static void check_shadow_destroy(void)
{
    static int lock_c, lock_d;
    lt_thread *t = lt_self();
    lt_lock *l = lt_shadow_get(t, &lock_c, 0, 0);
    uint32_t gen = atomic_load(&l->gen);
    lt_shadow_annotate(l, &lock_d, NULL);
    lt_shadow_destroy(&lock_c, l);
    CHECK(lt_shadow_find(&lock_c) == l && lt_lock_addr(l) == NULL);
    CHECK(atomic_load(&l->gen) == gen + 1);
    CHECK(lt_lockmap_any((uintptr_t)&lock_c, (uintptr_t)&lock_c + 1));
    CHECK(lt_shadow_reset(t, &lock_c, 0, 0) == l && lt_lock_addr(l) == &lock_c);
    CHECK(atomic_load(&l->gen) == gen + 1 && lt_lock_object(l) == NULL); /* a new lock */
    lt_shadow_destroy(&lock_c, l);
    CHECK(lt_shadow_get(t, &lock_c, 0, 0) == l && atomic_load(&l->gen) == gen + 2 &&
          l->first_stack != 0); /* first seen again, without init */
    lt_shadow_destroy(&lock_c, l);
    lt_shadow_destroy(&lock_c, l); /* twice: nothing more */
    CHECK(atomic_load(&l->gen) == gen + 3);
    forget(&lock_c); /* its memory is released */
    CHECK(lt_shadow_find(&lock_c) == NULL);
    CHECK(!lt_lockmap_any((uintptr_t)&lock_c, (uintptr_t)&lock_c + 1));
    lt_shadow_destroy(&lock_d, NULL); /* never seen: nothing to keep */
    CHECK(lt_shadow_find(&lock_d) == NULL);
}

/* A side record stays with its entry for good: the entry, forgotten and taken by another lock
 * of the same page (its shard's free list gives back the last entry freed), comes with a
 * cleared one; an annotation on it is the new lock's. */
static void check_shadow_side(void)
{
    static _Alignas(64) int locks[2];
    static int object;
    lt_thread *t = lt_self();
    lt_lock *l = lt_shadow_get(t, &locks[0], 0, 0);
    /* a recycled entry may have one */
    lt_lock_side *had = l ? atomic_load(&lt_lock_cold_of(l)->side) : NULL;
    lt_shadow_annotate(l, NULL, NULL); /* nothing to keep: no side record made for it */
    CHECK(l && atomic_load(&lt_lock_cold_of(l)->side) == had && lt_lock_object(l) == NULL);
    lt_shadow_annotate(l, &object, NULL);
    lt_lock_side *x = atomic_load(&lt_lock_cold_of(l)->side);
    CHECK(x && lt_lock_object(l) == &object && lt_shadow_side(l) == x);
    forget(&locks[0]);
    lt_lock *again = lt_shadow_get(t, &locks[1], 0, 0);
    CHECK(again == l && atomic_load(&lt_lock_cold_of(l)->side) == x &&
          lt_lock_object(l) == NULL && lt_lock_describe(l) == NULL);
    lt_shadow_annotate(l, &locks[0], NULL);
    CHECK(lt_lock_object(l) == &locks[0]);
    forget(&locks[1]);
}

/* Locks of one page looked up in address order find their entries side by side (the guess
 * after the last one found); an entry there that now names another lock, or none, is not
 * taken for the next one: the lookup finds, or makes, the address's own. The locks are 4
 * bytes apart, so that the first of every 8 takes their shared home and the others have
 * entries from the slab. */
static void check_shadow_guess(void)
{
    enum { N = 1000 }; /* more than earlier checks left free in the page's shard */
    static _Alignas(4096) int locks[N + 2]; /* the last: another lock of the page, whose home
                                               the one before takes */
    lt_thread *t = lt_self();
    lt_lock *l[N];
    for (int i = 0; i < N; i++)
        l[i] = lt_shadow_get(t, &locks[i], 0, 0);
    int side_by_side = 0;
    for (int i = 0; i + 1 < N; i++)
        side_by_side += /* a slab entry: its hot record, then its cold one */
            (uintptr_t)l[i + 1] - (uintptr_t)l[i] == sizeof(lt_lock) + sizeof(lt_lock_cold);
    CHECK(side_by_side > N / 2);
    int ok = 1;
    for (int i = 0; i < N && ok; i++) /* past the thread's cache, as a program with thousands */
        ok = lt_shadow_lookup(t, &locks[i], 0, 0) == l[i];
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_reset(t, &locks[i], 0, 0) == l[i] && lt_lock_addr(l[i]) == &locks[i];
    CHECK(ok);
    CHECK(lt_shadow_get(t, &locks[N], 0, 0) == lt_shadow_home(&locks[N]));
    forget(&locks[5]); /* its entry goes to the page's free list, and to the next lock made */
    lt_lock *taken = lt_shadow_get(t, &locks[N + 1], 0, 0);
    lt_shadow_destroy(&locks[7], l[7]);
    CHECK(lt_shadow_lookup(t, &locks[4], 0, 0) == l[4]);
    lt_lock *five = lt_shadow_lookup(t, &locks[5], 0, 0);
    CHECK(taken == l[5] && five && five != l[5] && lt_lock_addr(five) == &locks[5]);
    CHECK(lt_shadow_lookup(t, &locks[6], 0, 0) == l[6]);
    lt_lock *seven = lt_shadow_lookup(t, &locks[7], 0, 0); /* destroyed, seen again: revived */
    CHECK(seven == l[7] && lt_lock_addr(seven) == &locks[7]);
    for (int i = 0; i <= N + 1; i++)
        forget(&locks[i]);
}

/* A lock's entry is its home (lt_shadow_home) unless another lock has it: then one from the
 * slab, found as before. A home stays through destroy and init, is vacant once its lock's
 * memory is released, and the next lock there takes it; a lock that had to do without keeps
 * its entry from the slab. */
static void check_shadow_home(void)
{
    static _Alignas(4096) pthread_mutex_t m[4];
    static _Alignas(32) int pair[2]; /* one home for both */
    lt_thread *t = lt_self();
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= lt_shadow_get(t, &m[i], 0, 0) == lt_shadow_home(&m[i]);
    CHECK(ok && lt_shadow_home(&m[0]) != lt_shadow_home(&m[1]));
    lt_lock *home = lt_shadow_home(&m[0]);
    uint32_t gen = atomic_load(&home->gen);
    lt_shadow_destroy(&m[0], home);
    CHECK(lt_shadow_find(&m[0]) == home && lt_lock_addr(home) == NULL);
    CHECK(lt_shadow_reset(t, &m[0], 0, 0) == home && lt_lock_addr(home) == &m[0] &&
          atomic_load(&home->gen) == gen + 1);
    forget(&m[0]);
    CHECK(lt_lock_addr(home) == NULL && lt_shadow_find(&m[0]) == NULL);
    CHECK(lt_shadow_get(t, &m[0], 0, 0) == home && atomic_load(&home->gen) != gen + 1);
    lt_lock *first = lt_shadow_get(t, &pair[0], 0, 0), *second = lt_shadow_get(t, &pair[1], 0, 0);
    CHECK(first == lt_shadow_home(&pair[0]) && second && second != first &&
          lt_lock_addr(second) == &pair[1] && lt_shadow_find(&pair[1]) == second);
    forget(&pair[0]);
    CHECK(lt_shadow_get(t, &pair[1], 0, 0) == second && lt_lock_addr(first) == NULL);
    for (int i = 0; i < 4; i++)
        forget(&m[i]);
    forget(&pair[1]);
}

/* A thread's shadow cache stays in its lt_thread when the thread ends (thread.c:
 * thread_clear), so the next thread to take that lt_thread finds the dead one's slots. A slot
 * answers while its entry's gen is the one it names, and only then: a lock whose memory was
 * released since is a new lock there, as anywhere. The three locks share one home: the
 * first has it, the others entries from the slab, which the first thread found through its
 * cache. */
static _Alignas(32) int kept_locks[3];
static lt_thread *kept_owner;
static lt_lock *kept_entry[3];
static uint32_t kept_gen;

static void *kept_first(void *arg)
{
    (void)arg;
    lt_thread *t = lt_self();
    kept_owner = t;
    for (int i = 1; i < 3; i++)
        kept_entry[i] = lt_shadow_get(t, &kept_locks[i], 0, 0);
    kept_gen = kept_entry[1] ? atomic_load(&kept_entry[1]->gen) : 0;
    return NULL;
}

static void *kept_next(void *arg)
{
    (void)arg;
    lt_thread *t = lt_self();
    const lt_cache_slot *gone = lt_cache_slot_of(t, &kept_locks[1]),
                        *live = lt_cache_slot_of(t, &kept_locks[2]);
    CHECK(t == kept_owner && gone->addr == &kept_locks[1] && gone->lock == kept_entry[1] &&
          gone->gen == kept_gen && live->addr == &kept_locks[2] && live->lock == kept_entry[2]);
    lt_lock *l = lt_shadow_get(t, &kept_locks[1], 0, 0);
    CHECK(l && lt_lock_addr(l) == &kept_locks[1] &&
          (l != kept_entry[1] || atomic_load(&l->gen) != kept_gen));
    CHECK(lt_shadow_get(t, &kept_locks[2], 0, 0) == kept_entry[2] &&
          lt_lock_addr(kept_entry[2]) == &kept_locks[2]);
    return NULL;
}

static void check_shadow_kept_cache(void)
{
    lt_thread *t = lt_self();
    pthread_t th;
    CHECK(lt_shadow_get(t, &kept_locks[0], 0, 0) == lt_shadow_home(&kept_locks[0]));
    CHECK(pthread_create(&th, NULL, kept_first, NULL) == 0 && pthread_join(th, NULL) == 0);
    CHECK(kept_entry[1] && kept_entry[2] && kept_entry[1] != kept_entry[2] &&
          !lt_lock_is_home(kept_entry[1]) && !lt_lock_is_home(kept_entry[2]));
    forget(&kept_locks[1]); /* the dead thread's slot still names the entry and its old gen */
    CHECK(pthread_create(&th, NULL, kept_next, NULL) == 0 && pthread_join(th, NULL) == 0);
    for (int i = 0; i < 3; i++)
        forget(&kept_locks[i]);
}

/* A destroyed lock whose entry is its home keeps it, whatever purges its shard makes of the
 * destroyed entries in its table (shadow.c: init and destroy change a home with plain stores,
 * which only holds while nothing else does): the next init there finds it, with a new gen,
 * and only the release of its memory makes it vacant. The page's other locks, 4 bytes apart,
 * have entries from the slab of the same shard, made and destroyed until purges have taken
 * some of them. */
static void check_shadow_home_purge(void)
{
    enum { N = 4096 / sizeof(int) };
    static _Alignas(4096) int page[N];
    lt_thread *t = lt_self();
    lt_lock *home = lt_shadow_reset(t, &page[0], 0, 0);
    CHECK(home == lt_shadow_home(&page[0]));
    uint32_t gen = atomic_load(&home->gen);
    lt_shadow_destroy(&page[0], home);
    for (int round = 0; round < 4; round++)
        for (int i = 1; i < N; i++)
            if (i % 8)
                lt_shadow_destroy(&page[i], lt_shadow_reset(t, &page[i], 0, 0));
    int purged = 0;
    for (int i = 1; i < N; i++)
        purged += i % 8 && lt_shadow_find(&page[i]) == NULL;
    CHECK(purged > 0);
    CHECK(lt_shadow_find(&page[0]) == home && lt_lock_addr(home) == NULL &&
          atomic_load(&home->gen) == gen + 1);
    CHECK(lt_shadow_reset(t, &page[0], 0, 0) == home && lt_lock_addr(home) == &page[0] &&
          atomic_load(&home->gen) == gen + 1);
    lt_shadow_destroy(&page[0], home);
    forget(&page[0]);
    CHECK(lt_shadow_find(&page[0]) == NULL && lt_lock_addr(home) == NULL &&
          !lt_lockmap_any((uintptr_t)&page[0], (uintptr_t)&page[1]));
    for (int i = 1; i < N; i++)
        forget(&page[i]);
}

/* Destroyed entries are kept up to a bound: of many locks destroyed, those a full table
 * holds are purged before it grows, and with them their place in the lock map. */
static void check_shadow_destroy_bound(void)
{
    enum { N = 200000 };
    static int space[N];
    lt_thread *t = lt_self();
    long kept = 0;
    int ok = 1;
    for (int i = 0; i < N; i++)
        lt_shadow_destroy(&space[i], lt_shadow_reset(t, &space[i], 0, 0));
    for (int i = 0; i < N && ok; i++) {
        lt_lock *l = lt_shadow_find(&space[i]);
        int mapped = lt_lockmap_any((uintptr_t)&space[i], (uintptr_t)&space[i] + 1);
        ok = l ? lt_lock_addr(l) == NULL && mapped : !mapped;
        kept += l != NULL;
    }
    CHECK(ok && kept > 0 && kept < N / 2);
    for (int i = 0; i < N; i++)
        forget(&space[i]);
    CHECK(!lt_lockmap_any((uintptr_t)space, (uintptr_t)&space[N]));
}

static int ptr_order(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* Entries and tables come from the shadow's heap: plain pages first, then a reservation for
 * large pages, cut by concurrent shards. Enough new locks, one a page (every shard's slab and
 * table grow), that their entries come from both sides of that boundary: each lock has an
 * entry of its own, new (gen 1, no annotation, not orphaned), none overlapping another. Run
 * before other checks make entries, so that none is a recycled one. */
static void check_shadow_heap(void)
{
    enum { N = 24000 };
    static uintptr_t entry[N];
    lt_thread *t = lt_self();
    char *space = lt_platform_reserve((size_t)N * 4096);
    CHECK(space != NULL);
    if (!space)
        return;
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        const void *addr = space + (size_t)i * 4096 + (size_t)(i % 64) * 8;
        lt_lock *l = lt_shadow_get(t, addr, 0, 0);
        ok = l && atomic_load(&l->gen) == 1 && lt_lock_addr(l) == addr && !lt_lock_object(l) &&
             !lt_lock_describe(l) && l->orphan_mode == LT_MODE_NONE &&
             !atomic_load(&l->writer) && !atomic_load(&l->order_node) &&
             (uintptr_t)l % _Alignof(lt_lock) == 0;
        entry[i] = (uintptr_t)l;
    }
    CHECK(ok);
    qsort(entry, N, sizeof entry[0], ptr_order);
    for (int i = 1; i < N && ok; i++)
        ok = entry[i] - entry[i - 1] >= sizeof(lt_lock);
    CHECK(ok);
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_find(space + (size_t)i * 4096 + (size_t)(i % 64) * 8) != NULL;
    CHECK(ok);
    for (int i = 0; i < N; i++)
        forget(space + (size_t)i * 4096 + (size_t)(i % 64) * 8);
    CHECK(!lt_lockmap_any((uintptr_t)space, (uintptr_t)space + (size_t)N * 4096));
    lt_platform_unmap(space, (size_t)N * 4096);
}

/* The open-addressing table: enough locks to make every shard's table grow, at random places
 * (a regular stride would hash without a single collision), removals in the middle of probe
 * chains, entries reused, and the lock map kept in step. */
static void check_shadow_table(void)
{
    enum { N = 50000, SPACE = 8 * N };
    static int space[SPACE];
    static unsigned char taken[SPACE];
    static int *locks[N];
    static lt_lock *entry[N];
    static uintptr_t freed[N / 2];
    lt_thread *t = lt_self();
    uint32_t x = 2463534242u;
    int ok = 1;
    for (int i = 0; i < N; i++) {
        uint32_t k;
        do {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            k = x % SPACE;
        } while (taken[k]);
        taken[k] = 1;
        locks[i] = &space[k];
        entry[i] = lt_shadow_get(t, locks[i], 0, 0);
    }
    for (int i = 0; i < N && ok; i++)
        ok = entry[i] && lt_shadow_find(locks[i]) == entry[i] &&
             lt_lock_addr(entry[i]) == locks[i];
    CHECK(ok);
    for (int i = 0; i < N; i += 2) {
        freed[i / 2] = (uintptr_t)entry[i];
        forget(locks[i]);
    }
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_find(locks[i]) == (i % 2 ? entry[i] : NULL);
    CHECK(ok); /* the others are still found after removals inside their probe chains */
    CHECK(lt_lockmap_any((uintptr_t)locks[1], (uintptr_t)locks[1] + 1) &&
          !lt_lockmap_any((uintptr_t)locks[0], (uintptr_t)locks[0] + 1));
    qsort(freed, N / 2, sizeof freed[0], ptr_order);
    for (int i = 0; i < N && ok; i += 2) { /* seen again: they take forgotten entries */
        uintptr_t e = (uintptr_t)lt_shadow_get(t, locks[i], 0, 0);
        ok = e && bsearch(&e, freed, N / 2, sizeof freed[0], ptr_order) != NULL;
    }
    CHECK(ok);
    for (int i = 0; i < N; i++)
        forget(locks[i]);
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_find(locks[i]) == NULL;
    CHECK(ok && !lt_lockmap_any((uintptr_t)space, (uintptr_t)&space[SPACE]));
}

/* Locks packed in whole pages, as an array of spinlocks packs them: a lock in every 4-byte
 * slot of 32 pages (some shards get several), and locks that start 1-3 bytes into a slot.
 * shadow.c gives a page's locks home slots in address order, so these share homes in small
 * tables and meet other pages' locks in large ones; the last slot of a page has its home
 * near the table's end, its probe chain wraps. Every table size on the way, destroyed entries
 * taken back at the same address, removal of every other lock, then of all. */
static void check_shadow_dense(void)
{
    enum { PAGES = 32, PER = 4096 / 4, N = PAGES * PER, ODD = 3 * 64 };
    static lt_lock *entry[N], *odd[ODD];
    lt_thread *t = lt_self();
    char *space = lt_platform_map(PAGES * 4096);
    CHECK(space != NULL);
    if (!space)
        return;
    int ok = 1;
    for (int i = 0; i < N; i++)
        entry[i] = lt_shadow_get(t, space + 4 * i, 0, 0);
    for (int i = 0; i < ODD; i++) /* 1, 2 and 3 bytes into the first 64 slots of page 0 */
        odd[i] = lt_shadow_get(t, space + 4 * (i / 3) + 1 + i % 3, 0, 0);
    for (int i = 0; i < N && ok; i++)
        ok = entry[i] && lt_shadow_find(space + 4 * i) == entry[i] &&
             lt_lock_addr(entry[i]) == space + 4 * i;
    for (int i = 0; i < ODD && ok; i++)
        ok = odd[i] && odd[i] != entry[i / 3] &&
             lt_shadow_find(lt_lock_addr(odd[i])) == odd[i] &&
             lt_lock_addr(odd[i]) == space + 4 * (i / 3) + 1 + i % 3;
    CHECK(ok);
    for (int i = 0; i < N; i += 3) /* destroyed, then made a lock again at the same place */
        lt_shadow_destroy(space + 4 * i, entry[i]);
    for (int i = 0; i < N && ok; i++) {
        lt_lock *l = lt_shadow_find(space + 4 * i);
        ok = l == entry[i] && lt_lock_addr(l) == (i % 3 ? space + 4 * i : NULL);
    }
    for (int i = 0; i < N && ok; i += 3)
        ok = lt_shadow_reset(t, space + 4 * i, 0, 0) == entry[i] &&
             lt_lock_addr(entry[i]) == space + 4 * i;
    CHECK(ok);
    for (int i = 0; i < N; i += 2)
        forget(space + 4 * i);
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_find(space + 4 * i) == (i % 2 ? entry[i] : NULL);
    for (int i = 0; i < ODD && ok; i++)
        ok = lt_shadow_find(space + 4 * (i / 3) + 1 + i % 3) == odd[i];
    CHECK(ok); /* the others are still found after removals inside their probe chains */
    for (int i = 0; i < ODD; i++)
        forget(lt_lock_addr(odd[i]));
    for (int i = 1; i < N; i += 2)
        forget(space + 4 * i);
    for (int i = 0; i < N && ok; i++)
        ok = lt_shadow_find(space + 4 * i) == NULL;
    CHECK(ok && !lt_lockmap_any((uintptr_t)space, (uintptr_t)space + PAGES * 4096));
    lt_platform_unmap(space, PAGES * 4096);
}

/* The lock-free lookup while the table changes under it. Round by round, this thread makes
 * locks at every byte of a page's first KiB (four locks a 4-byte slot share a home: one long
 * probe chain, where each odd lock lies behind an even one) and lets another thread find the
 * odd ones over and over while it removes the even ones, or destroys and renews them: the odd
 * ones move back along the chain under the reader. Every lookup must name the lock's entry. */
enum { MOVING = 1024, MOVING_ROUNDS = 16 };
typedef struct moving {
    char *pages;
    lt_lock *entry[MOVING_ROUNDS][MOVING];
    _Atomic int round; /* the page the reader reads; MOVING_ROUNDS: stop */
    _Atomic long scans;
    long wrong;
} moving;

static void *moving_reader(void *arg)
{
    moving *m = arg;
    int r;
    while ((r = atomic_load(&m->round)) < MOVING_ROUNDS) {
        for (int i = 1; i < MOVING; i += 2)
            m->wrong += lt_shadow_find(m->pages + 4096 * r + i) != m->entry[r][i];
        atomic_fetch_add(&m->scans, 1);
    }
    return NULL;
}

/* Until the reader has read the whole page at least once from now on. */
static void moving_wait(moving *m)
{
    long from = atomic_load(&m->scans);
    while (atomic_load(&m->scans) < from + 2)
        sched_yield();
}

static void check_shadow_moving(void)
{
    static moving m;
    lt_thread *t = lt_self();
    m.pages = lt_platform_map(4096 * MOVING_ROUNDS);
    CHECK(m.pages != NULL);
    if (!m.pages)
        return;
    pthread_t reader;
    for (int r = 0; r < MOVING_ROUNDS; r++) {
        char *page = m.pages + 4096 * r;
        for (int i = 0; i < MOVING; i++)
            m.entry[r][i] = lt_shadow_get(t, page + i, 0, 0);
        atomic_store(&m.round, r);
        if (r == 0)
            CHECK(pthread_create(&reader, NULL, moving_reader, &m) == 0);
        for (int k = 0; k < MOVING; k += 2) {
            int i = (k * 37) % MOVING; /* even, in an order that is not the chain's */
            if (r % 2)
                lt_shadow_destroy(page + i, lt_shadow_reset(t, page + i, 0, 0));
            else
                forget(page + i);
        }
        moving_wait(&m);
    }
    atomic_store(&m.round, MOVING_ROUNDS);
    pthread_join(reader, NULL);
    CHECKF(m.wrong == 0, "%ld lookups found another entry", m.wrong);
    for (int i = 0; i < MOVING * MOVING_ROUNDS; i++)
        forget(m.pages + 4096 * (i / MOVING) + i % MOVING);
    CHECK(!lt_lockmap_any((uintptr_t)m.pages, (uintptr_t)m.pages + 4096 * MOVING_ROUNDS));
    lt_platform_unmap(m.pages, 4096 * MOVING_ROUNDS);
}

/* Records a call site the way interpose.c and detect.c do, for the caller of this function;
 * its frame (cfa) in record_cfa. */
static uintptr_t record_cfa;
static __attribute__((noinline)) void record(lt_held *h)
{
    h->ra = (uintptr_t)__builtin_return_address(0);
    h->stack = 0;
    record_cfa = (uintptr_t)__builtin_dwarf_cfa();
    h->site = lt_stack_site_lazy(lt_self(), h->ra, record_cfa);
}

/* The current stack, this function's frame first. */
static __attribute__((noinline)) uint32_t here(void)
{
    uintptr_t ips[64];
    size_t n = lt_platform_backtrace(ips, 64);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return lt_stack_intern(ips, n);
}

/* A shared helper: takes h's "lock", or recovers `other` while standing where h is taken. */
static __attribute__((noinline)) uint32_t helper(lt_held *h, const lt_held *other, int *partial)
{
    record(h);
    uint32_t id = other ? lt_stack_lazy(other, here(), partial) : 0;
    __asm__ volatile("" ::: "memory");
    return id;
}

static __attribute__((noinline)) uint32_t caller_a(lt_held *h, const lt_held *o, int *partial)
{
    uint32_t id = helper(h, o, partial);
    __asm__ volatile("" ::: "memory");
    return id;
}

static __attribute__((noinline)) uint32_t caller_b(lt_held *h, const lt_held *o, int *partial)
{
    __asm__ volatile("nop"); /* not identical to caller_a: the compiler may not fold them */
    uint32_t id = helper(h, o, partial);
    __asm__ volatile("" ::: "memory");
    return id;
}

/* Lazy stacks: recorded callers, joined to the current stack only where that is right. */
static void check_recovery(void)
{
    lt_held a, b;
    int partial = -1;
    size_t n, na, nb;
    lt_callsite_thread_init(0);
    caller_a(&a, NULL, &partial);
    const uintptr_t *fa = lt_stack_get(a.site, &na);
    CHECKF(fa && na == 1 + LT_CALLERS && fa[0] == a.ra, "recorded %zu frames", na);
    /* b taken through the same helper from another caller: a's stack keeps a's callers */
    const uintptr_t *ips = lt_stack_get(caller_b(&b, &a, &partial), &n);
    CHECKF(partial == 0 && n > LT_CALLERS + 1, "partial %d n %zu", partial, n);
    CHECK(ips[0] == a.ra && ips[0] == b.ra);
    for (size_t i = 0; i < LT_CALLERS; i++)
        CHECKF(ips[i + 1] == fa[i + 1], "frame %zu", i + 1);
    const uintptr_t *fb = lt_stack_get(b.site, &nb);
    CHECK(fb && nb > 1 && fa[1] != fb[1]); /* into caller_a, into caller_b */
    /* no callers recorded: the call site alone, never the current stack's frames */
    for (int k = 0; k < 2; k++) {
        a.site = k ? lt_stack_intern(&a.ra, 1) : 0; /* interned, or the depot had no room */
        ips = lt_stack_get(caller_a(&b, &a, &partial), &n);
        CHECKF(partial == 1 && n == 1 && ips[0] == a.ra, "partial %d n %zu", partial, n);
    }
    /* outside the thread's stack (another stack): nothing is read */
    lt_thread *t = lt_self();
    uintptr_t callers[LT_CALLERS_MAX];
    CHECK(lt_callsite_callers(t, a.ra, t->stack_hi, callers) == 0);
}

/* A call site's recorded stack, as an init records it (lt_stack_site), from one helper
 * (site_mid) called by two callers: the same call site and frame, other callers. */
static __attribute__((noinline)) uint32_t site_here(void)
{
    int partial;
    uint32_t id = lt_stack_site(lt_self(), (uintptr_t)__builtin_return_address(0),
                                (uintptr_t)__builtin_dwarf_cfa(), &partial);
    __asm__ volatile("" ::: "memory");
    return partial == 1 ? id : 0;
}

static __attribute__((noinline)) uint32_t site_mid(void)
{
    uint32_t id = site_here();
    __asm__ volatile("" ::: "memory");
    return id;
}

static __attribute__((noinline)) uint32_t site_a(void)
{
    uint32_t id = site_mid();
    __asm__ volatile("" ::: "memory");
    return id;
}

static __attribute__((noinline)) uint32_t site_b(void)
{
    __asm__ volatile("nop"); /* not identical to site_a: the compiler may not fold them */
    uint32_t id = site_mid();
    __asm__ volatile("" ::: "memory");
    return id;
}

/* The walk keeps the id it interned: asked again from the same callers, the same stack;
 * from other callers, theirs, and then the first ones' again. */
static volatile int site_calls = 6; /* read each time: clang would unroll a constant count
                                     into six call sites, and the ids would all differ */
static void check_site_stacks(void)
{
    uint32_t id[6];
    for (int i = 0; i < site_calls && i < 6; i++) /* one call site for both: a, a, b, a, b, b */
        id[i] = ((0x34 >> i) & 1 ? site_b : site_a)();
    uint32_t a1 = id[0], b1 = id[2];
    CHECKF(a1 && a1 == id[1] && a1 == id[3] && b1 == id[4] && b1 == id[5] && a1 != b1,
           "%u %u %u %u %u %u", id[0], id[1], id[2], id[3], id[4], id[5]);
    size_t na, nb;
    const uintptr_t *ia = lt_stack_get(a1, &na), *ib = lt_stack_get(b1, &nb);
    CHECK(ia && ib && na > 1 && nb > 1 && ia[0] == ib[0] && ia[1] != ib[1]); /* into site_a, site_b */
}

/* One lock helper (memcached's item_lock) called from more places than a set of remembered
 * walks has ways, all at one stack depth: the same call site and frame, other callers (two
 * levels of them: via_k called from outer_m). */
static volatile int walk_sink;
#define VIA(k)                                                                              \
    static __attribute__((noinline)) void via_##k(lt_held *h)                               \
    {                                                                                       \
        walk_sink = k; /* not identical functions: the compiler may not fold them */        \
        helper(h, NULL, NULL);                                                              \
        __asm__ volatile("" ::: "memory");                                                  \
    }
VIA(0) VIA(1) VIA(2) VIA(3) VIA(4) VIA(5) VIA(6) VIA(7) VIA(8)
static void (*const vias[])(lt_held *) = {via_0, via_1, via_2, via_3, via_4,
                                          via_5, via_6, via_7, via_8};
#define VIAS (sizeof vias / sizeof vias[0])
#define OUTER(m)                                                                            \
    static __attribute__((noinline)) void outer_##m(size_t k, lt_held *h)                   \
    {                                                                                       \
        walk_sink = 100 + m;                                                                \
        vias[k](h);                                                                         \
        __asm__ volatile("" ::: "memory");                                                  \
    }
OUTER(0) OUTER(1) OUTER(2)
static void (*const outers[])(size_t, lt_held *) = {outer_0, outer_1, outer_2};
#define PATHS (VIAS * (sizeof outers / sizeof outers[0]))

/* Whatever the order of the calls, each records its own callers, as the first call along
 * the same path did (remembered walks are reused only where they still hold). */
static void check_walk_ways(void)
{
    lt_held first[PATHS], h;
    const uintptr_t *f[PATHS];
    uintptr_t cfa = 0;
    int seen[PATHS] = {0}, ok = 1;
    size_t n;
    for (size_t round = 0; round < 4 * PATHS && ok; round++)
        for (size_t j = 0; j < PATHS && ok; j++) {
            size_t p = round % 2 ? (j * 5 + round) % PATHS : (round + j / 3) % PATHS;
            outers[p / VIAS](p % VIAS, &h); /* one call site: callers[0..1] tell them apart */
            if (!seen[p]) {
                seen[p] = 1;
                first[p] = h;
                cfa = cfa ? cfa : record_cfa;
                f[p] = lt_stack_get(h.site, &n);
                ok = h.ra == first[0].ra && record_cfa == cfa && n == 1 + LT_CALLERS;
                CHECKF(ok, "path %zu: not the same call site and frame, or no callers", p);
                continue;
            }
            ok = h.site == first[p].site; /* the same frames, interned once */
            CHECKF(ok, "round %zu: the call along path %zu recorded other callers", round, p);
        }
    for (size_t p = 1; p < PATHS && ok; p++)
        CHECKF(f[p][1] != f[p - 1][1] || f[p][2] != f[p - 1][2], "path %zu", p);
}

/* A walk with fewer callers than a near walk checks (a thread's start function, where the
 * stack soon ends): the check reads them all, each at its own slot, and one that differs
 * makes it fail. Runs on a thread of its own, whose stack is short. */
static void *short_walk(void *arg)
{
    (void)arg;
    lt_held h;
    lt_thread *t = lt_self(); /* registered, then prepared as interpose.c's thread start does */
    lt_platform_thread_init();
    lt_callsite_thread_init(1);
    record(&h);
    lt_walk *w = lt_callsite_holding(t, h.ra, record_cfa);
    size_t n = 0;
    const uintptr_t *ips = lt_stack_get(h.site, &n);
    CHECKF(w && w->near && w->n >= 1 && w->n < LT_WALK_NEAR && ips && n == 1u + w->n,
           "walk %p near %d callers %d, recorded %zu", (void *)w, w ? w->near : -1,
           w ? w->n : -1, n);
    if (!w || !ips || n != 1u + w->n)
        return NULL;
    uintptr_t out[LT_CALLERS_MAX];
    CHECK(lt_callsite_holds(t, w, record_cfa, out));
    for (size_t i = 0; i < w->n; i++)
        CHECKF(out[i] == ips[1 + i], "caller %zu", i);
    for (size_t i = 0; i < w->n; i++) {
        lt_walk other = *w;
        other.near_caller[i] ^= 1; /* as if caller i had returned elsewhere */
        CHECKF(!lt_callsite_holds(t, &other, record_cfa, NULL), "caller %zu not checked", i);
    }
    return NULL;
}

static void check_short_walk(void)
{
    pthread_t th;
    CHECK(pthread_create(&th, NULL, short_walk, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);
}

int main(void)
{
    lt_config_load();
    check_fmt();
    check_depot();
    check_held_set();
    check_held_ends();
    check_held_regrow();
    check_held_churn();
    check_held_large();
    check_scratch_fit();
    check_pool();
    check_shadow_heap(); /* first: its entries are new ones */
    check_shadow();
    check_shadow_destroy();
    check_shadow_side();
    check_shadow_guess();
    check_shadow_home();
    check_shadow_kept_cache();
    check_shadow_home_purge();
    check_shadow_destroy_bound();
    check_shadow_table();
    check_shadow_dense();
    check_shadow_moving();
    check_recovery();
    check_site_stacks();
    check_walk_ways();
    check_short_walk();
    check_key_set();
    return check_summary();
}

