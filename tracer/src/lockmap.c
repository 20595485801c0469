/*
 * lockmap.c - where known locks live, by address: the summary that free(), realloc() and
 * munmap() consult before any hash lookup, and the index that lists the locks of a range.
 *
 * The user address space (47 bits) is cut into 1 GiB regions. A region, mapped on the first
 * lock it holds and never unmapped, has one bit per 4-byte slot (a lock starts in that slot)
 * and, per 64 KiB chunk, a count of the bits set there. A filter of 2^16 counts (256 KiB,
 * indexed by the chunk's number modulo 2^16) sums the counts of the chunks that share an
 * entry. Asking whether [lo, hi) holds a lock (lt_lockmap_maybe, inline in lifetime.h) reads
 * the chunk's filter entry, then only when it is not 0 the region pointer and the bits of the
 * block's own slots: a free() costs one to four loads and no call. Listing the locks of a range scans the bits of its non-empty
 * chunks only. The bits are
 * reserved address space (MAP_NORESERVE): only pages around real locks become memory, 4 KiB
 * of bits per 128 KiB of address space that holds locks.
 *
 * Everything is lock-free (atomic bit and count updates, regions installed by CAS), so it
 * needs nothing at fork and is safe in any thread. A bit is set when the shadow entry of a
 * lock is made and cleared when it is removed (shadow.c), so counts are exact.
 */
#define _GNU_SOURCE
#include "lifetime.h"

#include "platform.h"

#define REGION_SHIFT LT_LOCKMAP_REGION_SHIFT
#define REGION_MASK LT_LOCKMAP_REGION_MASK
#define CHUNK_SHIFT LT_LOCKMAP_CHUNK_SHIFT
#define SLOT_SHIFT LT_LOCKMAP_SLOT_SHIFT
#define WORD_SHIFT LT_LOCKMAP_WORD_SHIFT

typedef lt_lockmap_region region;

region *_Atomic lt_lockmap_regions[LT_LOCKMAP_REGIONS];
_Atomic uint32_t lt_lockmap_filter[LT_LOCKMAP_FILTER];

static _Atomic uint32_t *filter_of(uintptr_t a)
{
    return &lt_lockmap_filter[(a >> CHUNK_SHIFT) & (LT_LOCKMAP_FILTER - 1)];
}

/* The region of a; NULL when it has no lock yet or a is beyond the table. */
static region *region_of(uintptr_t a)
{
    if (a >> REGION_SHIFT >= LT_LOCKMAP_REGIONS)
        return NULL;
    return atomic_load_explicit(&lt_lockmap_regions[a >> REGION_SHIFT], memory_order_acquire);
}

/* The region of a, mapped if new; NULL when a is beyond the table or memory is short. */
static region *region_make(uintptr_t a)
{
    region *r = region_of(a);
    if (r || a >> REGION_SHIFT >= LT_LOCKMAP_REGIONS)
        return r;
    region *fresh = lt_platform_reserve(sizeof *fresh);
    if (!fresh)
        return NULL;
    if (!atomic_compare_exchange_strong(&lt_lockmap_regions[a >> REGION_SHIFT], &r, fresh)) {
        lt_platform_unmap(fresh, sizeof *fresh);
        return r;
    }
    return fresh;
}

static size_t word_of(uintptr_t a) { return (a & REGION_MASK) >> WORD_SHIFT; }
static uint64_t bit_of(uintptr_t a) { return 1ull << ((a >> SLOT_SHIFT) & 63); }
static size_t chunk_of(uintptr_t a) { return (a & REGION_MASK) >> CHUNK_SHIFT; }

/* 0 when the map cannot record the lock (no address space, or beyond 47 bits): then its
 * memory could not be followed, and the caller must not track it either. */
int lt_lockmap_add(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = region_make(a);
    if (r && !(atomic_fetch_or(&r->bits[word_of(a)], bit_of(a)) & bit_of(a))) {
        atomic_fetch_add(&r->count[chunk_of(a)], 1);
        atomic_fetch_add(filter_of(a), 1);
    }
    return r != NULL;
}

void lt_lockmap_remove(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = region_of(a);
    if (r && (atomic_fetch_and(&r->bits[word_of(a)], ~bit_of(a)) & bit_of(a))) {
        atomic_fetch_sub(&r->count[chunk_of(a)], 1);
        atomic_fetch_sub(filter_of(a), 1);
    }
}

/* Calls each(r, base, w, from, to) for every word of bits over [lo, hi) in a chunk that holds
 * locks (from, to: the part of [lo, hi) in that word's chunk), while each returns 0; returns
 * what stopped it, else 0. */
typedef int (*word_fn)(region *r, uintptr_t base, size_t w, uintptr_t from, uintptr_t to,
                       void *arg);

static int each_word(uintptr_t lo, uintptr_t hi, word_fn each, void *arg)
{
    for (uintptr_t c = lo >> CHUNK_SHIFT; hi > lo && c <= (hi - 1) >> CHUNK_SHIFT; c++) {
        uintptr_t a = c << CHUNK_SHIFT;
        if (a >> REGION_SHIFT >= LT_LOCKMAP_REGIONS) /* no lock is known up there */
            return 0;
        region *r = region_of(a);
        if (!r) { /* skip the rest of an empty region */
            c = ((a | REGION_MASK) >> CHUNK_SHIFT);
            continue;
        }
        if (!atomic_load_explicit(&r->count[chunk_of(a)], memory_order_relaxed))
            continue;
        uintptr_t end = a + (1u << CHUNK_SHIFT);
        uintptr_t from = a > lo ? a : lo, to = end < hi ? end : hi;
        for (size_t w = word_of(from); w <= word_of(to - 1); w++) {
            int stop = each(r, a & ~(uintptr_t)REGION_MASK, w, from, to, arg);
            if (stop)
                return stop;
        }
    }
    return 0;
}

/* The bits of word w of r for slots in [from, to). */
static uint64_t word_bits(region *r, uintptr_t base, size_t w, uintptr_t from, uintptr_t to)
{
    uintptr_t wlo = base + ((uintptr_t)w << WORD_SHIFT), whi = wlo + (1u << WORD_SHIFT);
    uint64_t bits = atomic_load_explicit(&r->bits[w], memory_order_relaxed);
    if (from > wlo)
        bits &= lt_lockmap_from(from);
    if (to < whi)
        bits &= lt_lockmap_upto(to - 1);
    return bits;
}

static int word_any(region *r, uintptr_t base, size_t w, uintptr_t from, uintptr_t to,
                    void *arg)
{
    (void)arg;
    return word_bits(r, base, w, from, to) != 0;
}

/* The caller's output: slot addresses, n of max filled. */
typedef struct listing {
    uintptr_t *out;
    size_t n, max;
} listing;

static int word_list(region *r, uintptr_t base, size_t w, uintptr_t from, uintptr_t to,
                     void *arg)
{
    listing *l = arg;
    uint64_t bits = word_bits(r, base, w, from, to);
    for (; bits && l->n < l->max; bits &= bits - 1)
        l->out[l->n++] = base + ((uintptr_t)w << WORD_SHIFT) +
                         ((uintptr_t)__builtin_ctzll(bits) << SLOT_SHIFT);
    return l->n == l->max;
}

size_t lt_lockmap_list(uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t max)
{
    listing l = {out, 0, max};
    if (max)
        each_word(lo, hi, word_list, &l);
    return l.n;
}

int lt_lockmap_any(uintptr_t lo, uintptr_t hi)
{
    return each_word(lo, hi, word_any, NULL);
}
