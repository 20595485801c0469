/*
 * lockmap_unit.c - the lock map (tracer/src/lockmap.c, lifetime.h) against a plain model:
 * random locks around a 1 GiB region boundary, random ranges from a few bytes to 256 KiB at
 * random offsets (word, chunk and region edges included). For every range:
 *   lt_lockmap_any and lt_lockmap_list are exact;
 *   lt_lockmap_maybe never says 0 where a lock is, and is exact for a range inside one
 *   64 KiB chunk over at most two words of bits (the blocks it answers itself);
 *   lt_lockmap_block_clear (the inline check every free() makes) never says 1 where a lock
 *   is, and is exact for a block of up to 1008 bytes inside one region.
 * Then ranges are cleared (released memory, lt_lockmap_clear) between new locks, and the same
 * holds after each.
 * Then one thread adds and removes locks next to a block while another asks about the block:
 * the neighbours never make the block look like it holds a lock, nor hide the one it holds.
 * Then two threads add and remove locks on both sides of a 64 KiB chunk edge (writers of
 * neighbouring chunks take different stripe locks): afterwards every block near the edge is
 * answered exactly again.
 * The map only records addresses; nothing here touches the memory they name.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lifetime.h"

#define SPAN (1u << 20)                    /* the addresses used: 1 MiB ... */
#define BASE ((1ull << 40) - SPAN / 2)    /* ... across the region boundary at 1 TiB */
#define SLOTS (SPAN / 4)

static unsigned char model[SLOTS]; /* 1 = a lock starts in that 4-byte slot */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The model's answer for [lo, hi): slots that overlap it, listed into out (if given). */
static size_t model_list(uintptr_t lo, uintptr_t hi, uintptr_t *out)
{
    size_t n = 0;
    for (uintptr_t s = (lo - BASE) / 4; s < SLOTS && BASE + s * 4 < hi; s++)
        if (model[s] && out)
            out[n++] = BASE + s * 4;
        else if (model[s])
            n++;
    return n;
}

static void add(uintptr_t a)
{
    CHECK(lt_lockmap_add((const void *)a));
    model[(a - BASE) / 4] = 1;
}

static void del(uintptr_t a)
{
    lt_lockmap_remove((const void *)a);
    model[(a - BASE) / 4] = 0;
}

/* Released memory: its locks are forgotten, and the map cleared over it at once. */
static void clear(uintptr_t lo, uintptr_t hi)
{
    lt_lockmap_clear(lo, hi);
    for (uintptr_t s = (lo - BASE) / 4; s < SLOTS && BASE + s * 4 < hi; s++)
        model[s] = 0;
}

/* A range: mostly block-sized (16-byte aligned, 16..600 bytes), some page- and chunk-sized,
 * some starting right before a word, chunk or region edge. */
static void range(uint64_t *s, uintptr_t *lo, uintptr_t *hi)
{
    uint64_t kind = rnd(s) % 8;
    size_t size = kind < 5 ? 16 + rnd(s) % 600 : kind < 7 ? 1 + rnd(s) % (8 << 10)
                                                          : 1 + rnd(s) % (256 << 10);
    uintptr_t at = BASE + rnd(s) % (SPAN - size);
    if (kind == 1) /* just before a 256-byte word of bits */
        at = ((at | 255) + 1) - 16 * (1 + rnd(s) % 4);
    if (kind == 2) /* just before a 64 KiB chunk */
        at = ((at | 0xffff) + 1) - 16 * (1 + rnd(s) % 4);
    if (kind == 3) /* just before the region edge */
        at = (1ull << 40) - 16 * (1 + rnd(s) % 4);
    if (kind < 5)
        at &= ~(uintptr_t)15;
    if (at < BASE || at + size > BASE + SPAN)
        at = BASE;
    *lo = at;
    *hi = at + size;
}

static int one_chunk_two_words(uintptr_t lo, uintptr_t hi)
{
    return lo >> 16 == (hi - 1) >> 16 && ((hi - 1) >> 8) - (lo >> 8) <= 1;
}

/* The block check on [lo, hi) taken as a glibc block: lo and its length on 16 bytes. */
static int check_block(uintptr_t lo, uintptr_t hi)
{
    uintptr_t end = (hi + 15) & ~(uintptr_t)15;
    if (lo & 15)
        return 1;
    size_t n = model_list(lo, end, NULL);
    int clear = lt_lockmap_block_clear(lo, end - lo);
    int exact = end - lo <= LT_LOCKMAP_AHEAD * 16 && lo >> 30 == (end - 1) >> 30;
    return CHECKF(!clear || !n, "block [%#lx, %#lx) clear over %zu locks", (unsigned long)lo,
                  (unsigned long)end, n) &&
           CHECKF(!exact || clear == !n, "block [%#lx, %#lx) = %d, model %zu",
                  (unsigned long)lo, (unsigned long)end, clear, n);
}

static void check_ranges(uint64_t *s, int rounds)
{
    static uintptr_t got[4096], want[4096];
    int bad = 0;
    for (int i = 0; i < rounds && bad < 5; i++) {
        uintptr_t lo, hi;
        range(s, &lo, &hi);
        size_t n = model_list(lo, hi, NULL);
        int any = lt_lockmap_any(lo, hi), maybe = lt_lockmap_maybe(lo, hi);
        if (!CHECKF(any == (n != 0), "any [%#lx, %#lx) = %d, model %zu", (unsigned long)lo,
                    (unsigned long)hi, any, n) ||
            !CHECKF(maybe || !n, "maybe [%#lx, %#lx) = 0 over %zu locks", (unsigned long)lo,
                    (unsigned long)hi, n) ||
            !CHECKF(!one_chunk_two_words(lo, hi) || maybe == (n != 0),
                    "maybe [%#lx, %#lx) = %d, model %zu", (unsigned long)lo, (unsigned long)hi,
                    maybe, n) ||
            !check_block(lo, hi)) {
            bad++;
            continue;
        }
        if (n > 4096)
            continue;
        /* listed in batches, as lifetime.c does */
        size_t m = 0;
        for (uintptr_t from = lo;;) {
            size_t k = lt_lockmap_list(from, hi, got + m, 7);
            m += k;
            if (k < 7 || m + 7 > 4096)
                break;
            from = got[m - 1] + 4;
        }
        model_list(lo, hi, want);
        if (!CHECKF(m == n && !memcmp(got, want, n * sizeof *got),
                    "list [%#lx, %#lx): %zu of %zu", (unsigned long)lo, (unsigned long)hi, m, n))
            bad++;
    }
}

/* Each granule of [from, to) (16-byte aligned, to at least AHEAD granules before the end of
 * the span): its block up to the next lock (the end of its region counts as one) is clear,
 * one granule more is not. The next lock is found from the top down. */
static int granules_exact(uintptr_t from, uintptr_t to)
{
    uintptr_t next = 0; /* none seen yet */
    for (uintptr_t g = to + 16 * LT_LOCKMAP_AHEAD; g >= from; g -= 16) {
        if (model_list(g, g + 16, NULL))
            next = g;
        size_t d = next ? (next - g) / 16 : LT_LOCKMAP_AHEAD;
        d = d < LT_LOCKMAP_AHEAD ? d : LT_LOCKMAP_AHEAD;
        if (g < to &&
            (!CHECKF(!d || lt_lockmap_block_clear(g, 16 * d), "granule %#lx: lock within %zu",
                     (unsigned long)g, d) ||
             !CHECKF(d == LT_LOCKMAP_AHEAD || !lt_lockmap_block_clear(g, 16 * (d + 1)),
                     "granule %#lx misses the lock %zu on", (unsigned long)g, d)))
            return 0;
        if ((g & LT_LOCKMAP_REGION_MASK) == 0)
            next = g;
    }
    return 1;
}

/* Every granule whose ahead byte a clear of [lo, hi) may have rewritten, and one either side. */
static int around_exact(uintptr_t lo, uintptr_t hi)
{
    uintptr_t from = (lo & ~(uintptr_t)15) - 16 * (LT_LOCKMAP_AHEAD + 1),
              to = ((hi + 15) & ~(uintptr_t)15) + 16,
              top = BASE + SPAN - 16 * (LT_LOCKMAP_AHEAD + 1);
    return granules_exact(from > BASE ? from : BASE, to < top ? to : top);
}

static void check_model(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    /* sparse locks, some right at edges */
    for (int i = 0; i < 300; i++)
        add(BASE + (rnd(&s) % SPAN & ~(uintptr_t)3));
    add(1ull << 40);
    add((1ull << 40) - 4);
    add(BASE + 0x10000 - 4);
    add(BASE + 0x20000);
    add(BASE + 0x300 - 4);
    add(BASE + 0x400 + 2); /* a lock may start anywhere in its slot */
    check_ranges(&s, 40000);
    /* half of them gone, then dense locks in one chunk (objects with mutexes side by side) */
    for (size_t i = 0; i < SLOTS; i += 2)
        if (model[i])
            del(BASE + i * 4);
    for (uintptr_t a = BASE + 0x40000; a < BASE + 0x40000 + 8192; a += 48)
        add(a + 8);
    check_ranges(&s, 40000);
    /* ranges released, locks made again between them; edges: a lock left right after a
     * cleared range in its granule, and right before it in the granule it starts in */
    add(BASE + 0x50000 + 12);
    clear(BASE + 0x50000, BASE + 0x50000 + 12);
    add(BASE + 0x60000);
    add(BASE + 0x60000 + 4);
    clear(BASE + 0x60000 + 4, BASE + 0x60000 + 600);
    for (int i = 0; i < 3000; i++) {
        uintptr_t lo, hi;
        range(&s, &lo, &hi);
        if (i % 3 == 0) {
            clear(lo, hi);
            if (!around_exact(lo, hi))
                break;
        } else if (!model[(lo - BASE) / 4])
            add(lo & ~(uintptr_t)3);
        if (i % 500 == 0)
            check_ranges(&s, 2000);
    }
    for (uintptr_t a = BASE + 0x40000; a < BASE + 0x40000 + 8192; a += 48)
        if (!model[(a + 8 - BASE) / 4])
            add(a + 8);
    clear(BASE + 0x40000 + 1000, BASE + 0x40000 + 5000);
    check_ranges(&s, 40000);
    clear(BASE, BASE + SPAN);
    check_ranges(&s, 2000);
    CHECK(!lt_lockmap_any(BASE, BASE + SPAN));
    CHECK(!lt_lockmap_maybe(0x10, 0x20)); /* a region never used */
    CHECK(lt_lockmap_block_clear(0x10, 0x20));
    CHECK(!lt_lockmap_block_clear((1ull << 40) - 0x20, 0x40)); /* into the next region */
}

/* Two threads: the block [BLOCK, BLOCK + 48) holds a lock at offset 8 or none; the other
 * thread keeps adding and removing locks right before and after it, in the same words. */
#define BLOCK (BASE + 0x80000 + 0x80)
static atomic_int stop;

static void *neighbours(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        for (uintptr_t a = BLOCK - 64; a < BLOCK + 112; a += 4)
            if (a < BLOCK || a >= BLOCK + 48) {
                lt_lockmap_add((const void *)a);
                lt_lockmap_remove((const void *)a);
            }
    return NULL;
}

static void check_neighbours(void)
{
    pthread_t th;
    long wrong = 0;
    pthread_create(&th, NULL, neighbours, NULL);
    for (int i = 0; i < 400000; i++) {
        int holds = i & 1;
        if (holds)
            lt_lockmap_add((const void *)(BLOCK + 8));
        wrong += lt_lockmap_maybe(BLOCK, BLOCK + 48) != holds;
        wrong += lt_lockmap_any(BLOCK, BLOCK + 48) != holds;
        wrong += lt_lockmap_block_clear(BLOCK, 48) == holds;
        if (holds)
            lt_lockmap_remove((const void *)(BLOCK + 8));
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    CHECKF(wrong == 0, "%ld wrong answers about the block", wrong);
}

/* Writer w adds and removes locks on its side of a 64 KiB chunk edge, within a few granules
 * of it, in rounds; between rounds, every granule whose ahead byte can see the edge must be
 * exact. Writers of neighbouring chunks take different stripe locks unless each takes both. */
#define EDGE (BASE + 0xa0000)
#define EDGE_ROUNDS 300
static pthread_barrier_t edge_round;

static void *edge_writer(void *arg)
{
    uintptr_t w = (uintptr_t)arg;
    uint64_t s = 0x2545f4914f6cdd1dull + w;
    for (int r = 0; r < EDGE_ROUNDS; r++) {
        pthread_barrier_wait(&edge_round);
        for (int i = 0; i < 64; i++) {
            uintptr_t a = EDGE - 32 + w * 32 + (rnd(&s) % 8) * 4;
            unsigned char *m = &model[(a - BASE) / 4];
            if (*m)
                lt_lockmap_remove((const void *)a);
            else
                lt_lockmap_add((const void *)a);
            *m = !*m;
        }
        pthread_barrier_wait(&edge_round);
        pthread_barrier_wait(&edge_round); /* the main thread checks */
    }
    return NULL;
}

static int edge_exact(void)
{
    return granules_exact(EDGE - 32 - 16 * LT_LOCKMAP_AHEAD, EDGE + 32);
}

static void check_edge(void)
{
    pthread_t th[2];
    pthread_barrier_init(&edge_round, NULL, 3);
    for (uintptr_t w = 0; w < 2; w++)
        pthread_create(&th[w], NULL, edge_writer, (void *)w);
    int ok = 1;
    for (int r = 0; r < EDGE_ROUNDS; r++) {
        pthread_barrier_wait(&edge_round);
        pthread_barrier_wait(&edge_round);
        ok = ok && edge_exact();
        pthread_barrier_wait(&edge_round);
    }
    for (int w = 0; w < 2; w++)
        pthread_join(th[w], NULL);
    pthread_barrier_destroy(&edge_round);
}

int main(void)
{
    check_model();
    check_neighbours();
    check_edge();
    return check_summary();
}
