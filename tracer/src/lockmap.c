/*
 * lockmap.c - where known locks live, by address: the summary that free(), realloc() and
 * munmap() consult before any hash lookup, and the index that lists the locks of a range.
 *
 * The user address space (47 bits) is cut into 1 GiB regions. A region, mapped on the first
 * lock it holds and never unmapped, has one bit per 4-byte slot (a lock starts in that slot)
 * and, per 64 KiB chunk, a count of the bits set there. Asking whether [lo, hi) holds a lock
 * reads one count per chunk: a free() of a block with no lock near it costs two loads.
 * Listing the locks of a range scans the bits of its non-empty chunks only. The bits are
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
#define REGION_MASK ((1ull << REGION_SHIFT) - 1)
#define CHUNK_SHIFT 16
#define SLOT_SHIFT 2
#define CHUNKS (1u << (REGION_SHIFT - CHUNK_SHIFT))
#define WORDS ((1ull << (REGION_SHIFT - SLOT_SHIFT)) / 64)

typedef struct region {
    _Atomic uint32_t count[CHUNKS]; /* bits set per 64 KiB chunk */
    _Atomic uint64_t bits[WORDS];   /* bit (a >> 2) % 64 of word (a >> 8): a lock starts there;
                                       a = the address within the region */
} region;

region *_Atomic lt_lockmap_regions[LT_LOCKMAP_REGIONS];

static region *region_of(uintptr_t a)
{
    return atomic_load_explicit(&lt_lockmap_regions[a >> REGION_SHIFT], memory_order_acquire);
}

/* The region of a, mapped if new; NULL when a is beyond the table or memory is short. */
static region *region_make(uintptr_t a)
{
    region *r = a >> REGION_SHIFT < LT_LOCKMAP_REGIONS ? region_of(a) : NULL;
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

static size_t word_of(uintptr_t a) { return (a & REGION_MASK) >> (SLOT_SHIFT + 6); }
static uint64_t bit_of(uintptr_t a) { return 1ull << ((a >> SLOT_SHIFT) & 63); }
static size_t chunk_of(uintptr_t a) { return (a & REGION_MASK) >> CHUNK_SHIFT; }

/* 0 when the map cannot record the lock (no address space, or beyond 47 bits): then its
 * memory could not be followed, and the caller must not track it either. */
int lt_lockmap_add(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = region_make(a);
    if (r && !(atomic_fetch_or(&r->bits[word_of(a)], bit_of(a)) & bit_of(a)))
        atomic_fetch_add(&r->count[chunk_of(a)], 1);
    return r != NULL;
}

void lt_lockmap_remove(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = a >> REGION_SHIFT < LT_LOCKMAP_REGIONS ? region_of(a) : NULL;
    if (r && (atomic_fetch_and(&r->bits[word_of(a)], ~bit_of(a)) & bit_of(a)))
        atomic_fetch_sub(&r->count[chunk_of(a)], 1);
}


/* Set bits of word w of r within [lo, hi), as slot addresses into out. */
static size_t word_slots(region *r, uintptr_t base, size_t w, uintptr_t lo, uintptr_t hi,
                         uintptr_t *out, size_t n, size_t max)
{
    uint64_t bits = atomic_load_explicit(&r->bits[w], memory_order_relaxed);
    while (bits && n < max) {
        uintptr_t a = base + ((uintptr_t)w << (SLOT_SHIFT + 6)) +
                      ((uintptr_t)__builtin_ctzll(bits) << SLOT_SHIFT);
        bits &= bits - 1;
        if (a + (1u << SLOT_SHIFT) > lo && a < hi)
            out[n++] = a;
    }
    return n;
}

size_t lt_lockmap_list(uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t max)
{
    size_t n = 0;
    for (uintptr_t c = lo >> CHUNK_SHIFT; hi > lo && c <= (hi - 1) >> CHUNK_SHIFT && n < max;
         c++) {
        uintptr_t a = c << CHUNK_SHIFT, base = a & ~(uintptr_t)REGION_MASK;
        region *r = a >> REGION_SHIFT < LT_LOCKMAP_REGIONS ? region_of(a) : NULL;
        if (!r || !atomic_load_explicit(&r->count[chunk_of(a)], memory_order_relaxed))
            continue;
        uintptr_t end = a + (1u << CHUNK_SHIFT);
        uintptr_t from = a > lo ? a : lo, to = end < hi ? end : hi;
        for (size_t w = word_of(from); w <= word_of(to - 1) && n < max; w++)
            n = word_slots(r, base, w, from, to, out, n, max);
    }
    return n;
}

/* A lock in the block's own slots, not merely in its 64 KiB: a free() next to a lock stays
 * cheap too. */
int lt_lockmap_any_slow(uintptr_t lo, uintptr_t hi)
{
    uintptr_t first;
    return lt_lockmap_list(lo, hi, &first, 1) != 0;
}
