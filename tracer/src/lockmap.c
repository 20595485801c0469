/*
 * lockmap.c - where known locks live, by address: the summary that free(), realloc() and
 * munmap() consult before any hash lookup, and the index that lists the locks of a range.
 *
 * The user address space (47 bits) is cut into 16 MiB regions, found through a directory per
 * 1 GiB (lt_lockmap_region_at). A region, mapped on the first lock it holds and never unmapped, has one bit per 4-byte slot (a lock starts in that slot),
 * per 64 KiB chunk a count of the bits set there, and per 16-byte granule an ahead byte: how
 * far on the next lock is, up to 63 granules. A filter of 2^16 counts (256 KiB, indexed by
 * the chunk's number modulo 2^16) sums the counts of the chunks that share an entry.
 *
 * free() of a glibc block asks lt_lockmap_block_clear (inline in lifetime.h): the block's
 * first granule's ahead byte against the block's length, one load however close the locks
 * of its neighbours are; none at all in a region without locks. Other ranges ask
 * lt_lockmap_maybe (the chunk's filter entry, then the bits of the range's own slots), and
 * listing the locks of a range scans the bits of its non-empty chunks only. The map is
 * reserved address space (MAP_NORESERVE): only pages around real locks become memory, 4 KiB
 * of bits per 128 KiB and 4 KiB of ahead bytes per 64 KiB of address space that holds locks.
 *
 * Readers take no lock and may run in any thread: counts, bits and ahead bytes are atomic,
 * regions are installed by CAS. Writers (a bit set when the shadow entry of a lock is made,
 * cleared when it is removed: shadow.c) lock the stripe of the chunks near it, since an ahead
 * byte depends on bits that other writers change: counts are exact, and each ahead byte is
 * rewritten from the bits after every change near it. Ahead bytes reach AHEAD granules, so
 * changes further apart than that never meet, and a change takes the stripes of the chunks
 * AHEAD granules either side of it (one stripe, or two of neighbouring chunks): threads that
 * make and destroy locks in their own memory do not wait for each other.
 */
#define _GNU_SOURCE
#include "lifetime.h"

#include <string.h>

#include "platform.h"
#include "spin.h"

#define REGION_SHIFT LT_LOCKMAP_REGION_SHIFT
#define REGION_MASK LT_LOCKMAP_REGION_MASK
#define CHUNK_SHIFT LT_LOCKMAP_CHUNK_SHIFT
#define SLOT_SHIFT LT_LOCKMAP_SLOT_SHIFT
#define WORD_SHIFT LT_LOCKMAP_WORD_SHIFT
#define GRANULE_SHIFT LT_LOCKMAP_GRANULE_SHIFT
#define GRANULES LT_LOCKMAP_GRANULES
#define AHEAD LT_LOCKMAP_AHEAD
#define NONE_NEAR ((size_t)-1)

typedef lt_lockmap_region region;

lt_lockmap_dir *_Atomic lt_lockmap_dirs[LT_LOCKMAP_DIRS];
_Atomic uint32_t lt_lockmap_filter[LT_LOCKMAP_FILTER];

/* Writers' locks, by a hash of the chunk's filter entry (each on a cache line of its own):
 * not the chunk number modulo STRIPES, since glibc's thread arenas start 64 MiB apart, and
 * the locks of every thread's first blocks would share one stripe. */
#define STRIPE_BITS 6
#define STRIPES (1 << STRIPE_BITS)
#define WINDOW ((uintptr_t)AHEAD << GRANULE_SHIFT)
static struct {
    _Alignas(64) lt_spin lock;
} stripes[STRIPES] = {[0 ... STRIPES - 1] = {.lock = LT_SPIN_INIT(LT_RANK_LOCKMAP)}};

static lt_spin *stripe_of(uintptr_t a)
{
    return &stripes[((a >> CHUNK_SHIFT) & (LT_LOCKMAP_FILTER - 1)) * 0x9E3779B97F4A7C15ull >>
                    (64 - STRIPE_BITS)].lock;
}

/* The stripes a change at a depends on, in address order (spin.h); [1] = [0] when one. */
static void stripes_lock(uintptr_t a, lt_spin *s[2])
{
    lt_spin *lo = stripe_of(a - WINDOW), *hi = stripe_of(a + WINDOW);
    s[0] = lo < hi ? lo : hi;
    s[1] = lo < hi ? hi : lo;
    lt_spin_lock(s[0]);
    if (s[1] != s[0])
        lt_spin_lock(s[1]);
}

static void stripes_unlock(lt_spin *s[2])
{
    if (s[1] != s[0])
        lt_spin_unlock(s[1]);
    lt_spin_unlock(s[0]);
}

static _Atomic uint32_t *filter_of(uintptr_t a)
{
    return &lt_lockmap_filter[(a >> CHUNK_SHIFT) & (LT_LOCKMAP_FILTER - 1)];
}

/* The region of a; NULL when it has no lock yet or a is beyond the table. */
static region *region_of(uintptr_t a)
{
    return a >> REGION_SHIFT < LT_LOCKMAP_REGIONS ? lt_lockmap_region_at(a) : NULL;
}

/* Where the stretch of no known lock that a, in no region, lies in ends at the latest: its
 * region's end, or its directory's when that has none. 0: the top of the address space. */
static uintptr_t empty_end(uintptr_t a)
{
    int dir = a >> REGION_SHIFT < LT_LOCKMAP_REGIONS &&
              atomic_load_explicit(&lt_lockmap_dirs[a >> LT_LOCKMAP_DIR_SHIFT], memory_order_acquire);
    return (a | (dir ? REGION_MASK : ((uintptr_t)1 << LT_LOCKMAP_DIR_SHIFT) - 1)) + 1;
}

/* The directory of a, mapped if new; NULL when memory is short. */
static lt_lockmap_dir *dir_make(uintptr_t a)
{
    lt_lockmap_dir *_Atomic *slot = &lt_lockmap_dirs[a >> LT_LOCKMAP_DIR_SHIFT];
    lt_lockmap_dir *d = atomic_load_explicit(slot, memory_order_acquire), *fresh;
    if (d || !(fresh = lt_platform_map(sizeof *fresh)))
        return d;
    if (!atomic_compare_exchange_strong(slot, &d, fresh)) {
        lt_platform_unmap(fresh, sizeof *fresh);
        return d;
    }
    return fresh;
}

/* The region of a, mapped if new; NULL when a is beyond the table or memory is short. */
static region *region_make(uintptr_t a)
{
    region *r = region_of(a);
    lt_lockmap_dir *d;
    if (r || a >> REGION_SHIFT >= LT_LOCKMAP_REGIONS || !(d = dir_make(a)))
        return r;
    region *fresh = lt_platform_reserve(sizeof *fresh);
    if (!fresh)
        return NULL;
    for (size_t d = 1; d < AHEAD; d++) /* the region's end, as a lock */
        atomic_store_explicit(&fresh->ahead[GRANULES - d], (uint8_t)(AHEAD - d),
                              memory_order_relaxed);
    if (!atomic_compare_exchange_strong(
            &d->region[(a >> REGION_SHIFT) & (LT_ARRAY_LEN(d->region) - 1)], &r, fresh)) {
        lt_platform_unmap(fresh, sizeof *fresh);
        return r;
    }
    return fresh;
}

static size_t word_of(uintptr_t a) { return (a & REGION_MASK) >> WORD_SHIFT; }
static uint64_t bit_of(uintptr_t a) { return 1ull << ((a >> SLOT_SHIFT) & 63); }
static size_t chunk_of(uintptr_t a) { return (a & REGION_MASK) >> CHUNK_SHIFT; }

/* The bits of the word of r that holds slot: from that slot on, or up to it. */
static uint64_t word_from(const region *r, size_t slot)
{
    return atomic_load_explicit(&r->bits[slot >> 6], memory_order_relaxed) &
           (~0ull << (slot & 63));
}

static uint64_t word_upto(const region *r, size_t slot)
{
    return atomic_load_explicit(&r->bits[slot >> 6], memory_order_relaxed) &
           (~0ull >> (63 - (slot & 63)));
}

/* The first granule of r in [from, to) where a lock starts; NONE_NEAR when none does.
 * first_lock, last_lock and next_lock are inline: every new lock's add (change) calls them,
 * and their calls were ~15 of the ~1,780 instructions a lock of `stressbench groups`' first
 * loop, where each of its 25,000 mutexes is new. */
static inline size_t first_lock(const region *r, size_t from, size_t to)
{
    size_t slot = from << (GRANULE_SHIFT - SLOT_SHIFT), end = to << (GRANULE_SHIFT - SLOT_SHIFT);
    for (uint64_t bits = word_from(r, slot); slot < end;) {
        if (bits) {
            size_t g = ((slot & ~(size_t)63) + (size_t)__builtin_ctzll(bits)) >>
                       (GRANULE_SHIFT - SLOT_SHIFT);
            return g < to ? g : NONE_NEAR;
        }
        slot = (slot | 63) + 1;
        bits = slot < end ? word_from(r, slot) : 0;
    }
    return NONE_NEAR;
}

/* The last granule of r in [from, to) where a lock starts; NONE_NEAR when none does. */
static inline size_t last_lock(const region *r, size_t from, size_t to)
{
    if (to <= from)
        return NONE_NEAR;
    size_t slot = (to << (GRANULE_SHIFT - SLOT_SHIFT)) - 1,
           start = from << (GRANULE_SHIFT - SLOT_SHIFT);
    for (uint64_t bits = word_upto(r, slot);;) {
        if (bits) {
            size_t g = ((slot & ~(size_t)63) + 63 - (size_t)__builtin_clzll(bits)) >>
                       (GRANULE_SHIFT - SLOT_SHIFT);
            return g >= from ? g : NONE_NEAR;
        }
        if ((slot & ~(size_t)63) <= start)
            return NONE_NEAR;
        slot = (slot & ~(size_t)63) - 1;
        bits = word_upto(r, slot);
    }
}

/* The ahead bytes of a run of granules that ends at a lock or at none: ramp[AHEAD - 1 + v - d]
 * is the byte of the granule d before one whose byte is v (v - d, at least 0). */
#define RAMP_LEN (2 * AHEAD)
static const uint8_t ramp[RAMP_LEN] = {
/* (Neither arm is negative: clang's -Wconstant-conversion checks the one not taken too.) */
#define R(k) ((k) + 1 - ((k) >= AHEAD ? AHEAD : (k) + 1))
#define R8(k) R(k), R(k + 1), R(k + 2), R(k + 3), R(k + 4), R(k + 5), R(k + 6), R(k + 7)
    R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56),
    R8(64), R8(72), R8(80), R8(88), R8(96), R8(104), R8(112), R(120), R(121), R(122), R(123),
    R(124), R(125),
#undef R8
#undef R
};
_Static_assert(RAMP_LEN == 126, "ramp's initialiser lists 2 * AHEAD bytes");
/* The bytes are copied, not stored one by one (a lock removed far from its neighbours
 * rewrites 63 of them): each byte is written once, from its old value to its new one, and
 * readers load single bytes, so a byte-sized lock-free atomic is a plain byte. */
_Static_assert(sizeof(_Atomic uint8_t) == 1 && ATOMIC_CHAR_LOCK_FREE == 2,
               "ahead bytes are plain bytes");

/* The first granule at or after g where a lock starts, if within AHEAD of it (the region's end
 * counts as one); else NONE_NEAR. */
static inline size_t next_lock(const region *r, size_t g)
{
    size_t next = first_lock(r, g, g + AHEAD < GRANULES ? g + AHEAD : GRANULES);
    return next == NONE_NEAR && g + AHEAD >= GRANULES ? GRANULES : next;
}

/* The ahead byte of granule g when the first lock at or after it starts in granule next. */
static uint8_t ahead_of(size_t g, size_t next)
{
    return (uint8_t)(next != NONE_NEAR && next - g < AHEAD ? AHEAD - (next - g) : 0);
}

/* Writes the ahead bytes of granules [from, to], where no lock starts before to: v is the
 * byte of to, and each granule before it is one further from that lock. One copy from the
 * ramp, whose AHEAD leading zeros cover a run up to AHEAD + v long; a longer one (a
 * large block released) starts with a fill of zeros. */
static void ramp_fill(region *r, size_t from, size_t to, uint8_t v)
{
    size_t n = to - from + 1, z = n > AHEAD + v ? n - (AHEAD + v) : 0;
    if (z)
        memset((uint8_t *)&r->ahead[from], 0, z);
    memcpy((uint8_t *)&r->ahead[from + z], &ramp[AHEAD + v - (n - z)], n - z);
}

/* Under the stripes of g, after a bit of granule g changed: rewrites the ahead bytes that depend on
 * it, those of g and of the granules before it back to the previous one where a lock starts
 * (further back, the first lock on is that one or nearer). */
static void ahead_update(region *r, size_t g)
{
    size_t back = g >= AHEAD - 1 ? g - (AHEAD - 1) : 0;
    size_t prev = last_lock(r, back, g);
    ramp_fill(r, prev == NONE_NEAR ? back : prev + 1, g, ahead_of(g, next_lock(r, g)));
}

/* Under the stripes of a: records that a lock starts at a (add) or no longer does, if that
 * changes anything. Every writer of a word of bits, a chunk's count or a filter entry holds
 * the stripe of that chunk (a filter entry's chunks share its stripe), so they are read and
 * written plainly, not with read-modify-write atomics: those are atomic for the lock-free
 * readers only. */
static void change(region *r, uintptr_t a, int add)
{
    _Atomic uint64_t *word = &r->bits[word_of(a)];
    uint64_t bits = atomic_load_explicit(word, memory_order_relaxed);
    if (((bits & bit_of(a)) != 0) == add) /* already so */
        return;
    uint32_t d = add ? 1u : (uint32_t)-1;
    _Atomic uint32_t *count = &r->count[chunk_of(a)], *filter = filter_of(a);
    atomic_store_explicit(word, bits ^ bit_of(a), memory_order_relaxed);
    atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) + d,
                          memory_order_relaxed);
    atomic_store_explicit(filter, atomic_load_explicit(filter, memory_order_relaxed) + d,
                          memory_order_relaxed);
    ahead_update(r, (a & REGION_MASK) >> GRANULE_SHIFT);
}

/* Chunks whose pages of bits and ahead bytes a run of locks has made memory ahead. */
#define CHUNKS_AHEAD 16
#define CHUNKS (1u << (REGION_SHIFT - CHUNK_SHIFT))

/* Before the first lock of a chunk that follows one with locks: a program making locks through
 * its memory in order (`stressbench groups`, 1 MB of mutexes in its first round). The pages of
 * bits and ahead bytes of the chunks from this one to the end of the next CHUNKS_AHEAD-aligned
 * group are made memory by one call each, at the run's second chunk and then at each group's
 * first, where each page's first write under the stripes was a fault: 26 of the ~70 the tracer
 * took in groups' first round (a fault ~12 us on this VM, a page made memory ahead ~5). A page
 * that is memory already is left as it is. Not under the stripes: other threads would wait
 * for the call. */
static void pages_ahead(region *r, uintptr_t a)
{
    size_t c = chunk_of(a);
    if (!c || atomic_load_explicit(&r->count[c], memory_order_relaxed) ||
        !atomic_load_explicit(&r->count[c - 1], memory_order_relaxed) ||
        (c % CHUNKS_AHEAD && c >= 2 && atomic_load_explicit(&r->count[c - 2], memory_order_relaxed)))
        return;
    size_t end = (c & ~(size_t)(CHUNKS_AHEAD - 1)) + 2 * CHUNKS_AHEAD;
    size_t n = (end < CHUNKS ? end : CHUNKS) - c;
    lt_populate(&r->bits[c << (CHUNK_SHIFT - WORD_SHIFT)],
                (n << (CHUNK_SHIFT - WORD_SHIFT)) * sizeof r->bits[0]);
    lt_populate(&r->ahead[c << (CHUNK_SHIFT - GRANULE_SHIFT)], n << (CHUNK_SHIFT - GRANULE_SHIFT));
}

/* 0 when the map cannot record the lock (no address space, or beyond 47 bits): then its
 * memory could not be followed, and the caller must not track it either. */
int lt_lockmap_add(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = region_make(a);
    if (!r)
        return 0;
    pages_ahead(r, a);
    lt_spin *s[2];
    stripes_lock(a, s);
    change(r, a, 1);
    stripes_unlock(s);
    return 1;
}

void lt_lockmap_remove(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    region *r = region_of(a);
    if (!r)
        return;
    lt_spin *s[2];
    stripes_lock(a, s);
    change(r, a, 0);
    stripes_unlock(s);
}

/* Under the stripes of [lo, hi), a part of one chunk: clears the bits of its slots, and
 * rewrites the ahead bytes that depend on them, from the last granule of the part back to
 * the lock before it (or AHEAD granules before the part): each byte once, where a lock
 * removed at a time rewrote up to AHEAD of them and took its stripes; a run between two
 * locks at a time (a word of bits finds a lock among 16 granules), since a byte at a time
 * was 2,700 instructions of every free() of one of rsyslog's messages (a lock in ~600 bytes). */
static void clear_part(region *r, uintptr_t lo, uintptr_t hi)
{
    uint32_t gone = 0;
    for (size_t w = word_of(lo), last = word_of(hi - 1); w <= last; w++) {
        uint64_t mask = ~0ull, bits = atomic_load_explicit(&r->bits[w], memory_order_relaxed);
        if (w == word_of(lo))
            mask &= lt_lockmap_from(lo);
        if (w == last)
            mask &= lt_lockmap_upto(hi - 1);
        if (bits & mask) {
            gone += (uint32_t)__builtin_popcountll(bits & mask);
            atomic_store_explicit(&r->bits[w], bits & ~mask, memory_order_relaxed);
        }
    }
    if (!gone)
        return;
    _Atomic uint32_t *count = &r->count[chunk_of(lo)], *filter = filter_of(lo);
    atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) - gone,
                          memory_order_relaxed);
    atomic_store_explicit(filter, atomic_load_explicit(filter, memory_order_relaxed) - gone,
                          memory_order_relaxed);
    size_t g_lo = (lo & REGION_MASK) >> GRANULE_SHIFT;
    size_t g = ((hi - 1) & REGION_MASK) >> GRANULE_SHIFT;
    size_t next = next_lock(r, g), stop = g_lo >= AHEAD - 1 ? g_lo - (AHEAD - 1) : 0;
    for (;;) {
        size_t lock = last_lock(r, stop, g + 1);
        if (lock == NONE_NEAR) {
            ramp_fill(r, stop, g, ahead_of(g, next));
            return;
        }
        if (lock < g)
            ramp_fill(r, lock + 1, g, ahead_of(g, next));
        atomic_store_explicit(&r->ahead[lock], ahead_of(lock, lock), memory_order_relaxed);
        if (lock < g_lo || lock == stop) /* the bytes before that lock depend on it */
            return;
        next = lock;
        g = lock - 1;
    }
}

/* The stripes of the chunks a change in [lo, hi) (inside one chunk) depends on, in address
 * order and each once: those AHEAD granules either side, and the chunk's own. */
static size_t part_stripes(uintptr_t lo, uintptr_t hi, lt_spin *s[3])
{
    lt_spin *c[3] = {stripe_of(lo - WINDOW), stripe_of(lo), stripe_of(hi - 1 + WINDOW)};
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        size_t at = n;
        while (at > 0 && s[at - 1] > c[k])
            at--;
        if (at > 0 && s[at - 1] == c[k])
            continue;
        for (size_t m = n; m > at; m--)
            s[m] = s[m - 1];
        s[at] = c[k];
        n++;
    }
    return n;
}

/* After the locks of [lo, hi) (released memory) have been forgotten: none starts there now.
 * A chunk at a time, under its stripes; a chunk without locks costs a load, a region without
 * any one. */
void lt_lockmap_clear(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = lo; a < hi;) {
        region *r = region_of(a);
        uintptr_t end = r ? (a | (((uintptr_t)1 << CHUNK_SHIFT) - 1)) + 1 : empty_end(a);
        uintptr_t to = end < hi ? end : hi;
        if (r && atomic_load_explicit(&r->count[chunk_of(a)], memory_order_relaxed)) {
            lt_spin *s[3];
            size_t n = part_stripes(a, to, s);
            for (size_t k = 0; k < n; k++)
                lt_spin_lock(s[k]);
            clear_part(r, a, to);
            for (size_t k = n; k-- > 0;)
                lt_spin_unlock(s[k]);
        }
        if (end == 0) /* the top of the address space */
            return;
        a = end;
    }
}

LT_FORK_PATH void lt_lockmap_fork(lt_fork_phase phase)
{
    if (lt_fork_alone())
        return; /* (lt_spin_fork: none taken; not a call for each stripe) */
    for (int i = 0; i < STRIPES; i++)
        lt_spin_fork(&stripes[phase == LT_FORK_PREPARE ? i : STRIPES - 1 - i].lock, phase);
}

/* Calls each(r, from, to) for the part [from, to) of [lo, hi) in every chunk that holds locks
 * (r: its region), while each returns 0; returns what stopped it, else 0. (Once a word of
 * bits until 2026-12-06: a free() of a large block in a chunk with locks made a call for each
 * 256 bytes of it, 64 for one of OpenSSL's 16 KiB record buffers.) */
typedef int (*part_fn)(region *r, uintptr_t from, uintptr_t to, void *arg);

static int each_part(uintptr_t lo, uintptr_t hi, part_fn each, void *arg)
{
    for (uintptr_t c = lo >> CHUNK_SHIFT; hi > lo && c <= (hi - 1) >> CHUNK_SHIFT; c++) {
        uintptr_t a = c << CHUNK_SHIFT;
        if (a >> REGION_SHIFT >= LT_LOCKMAP_REGIONS) /* no lock is known up there */
            return 0;
        region *r = region_of(a);
        if (!r) { /* skip the rest of an empty region, or directory */
            c = (empty_end(a) >> CHUNK_SHIFT) - 1;
            continue;
        }
        if (!atomic_load_explicit(&r->count[chunk_of(a)], memory_order_relaxed))
            continue;
        uintptr_t end = a + (1u << CHUNK_SHIFT);
        int stop = each(r, a > lo ? a : lo, end < hi ? end : hi, arg);
        if (stop)
            return stop;
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

/* Whether a lock starts in [from, to), a part of one chunk of r: its words ORed, the first and
 * the last masked. */
static int part_any(region *r, uintptr_t from, uintptr_t to, void *arg)
{
    (void)arg;
    size_t w = word_of(from), last = word_of(to - 1);
    uint64_t upto = lt_lockmap_upto(to - 1),
             any = atomic_load_explicit(&r->bits[w], memory_order_relaxed) &
                   lt_lockmap_from(from);
    if (w == last)
        return (any & upto) != 0;
    while (++w < last)
        any |= atomic_load_explicit(&r->bits[w], memory_order_relaxed);
    return (any | (atomic_load_explicit(&r->bits[last], memory_order_relaxed) & upto)) != 0;
}

/* The caller's output: slot addresses, n of max filled. */
typedef struct listing {
    uintptr_t *out;
    size_t n, max;
} listing;

static int part_list(region *r, uintptr_t from, uintptr_t to, void *arg)
{
    listing *l = arg;
    uintptr_t base = from & ~(uintptr_t)REGION_MASK;
    for (size_t w = word_of(from); w <= word_of(to - 1) && l->n < l->max; w++)
        for (uint64_t bits = word_bits(r, base, w, from, to); bits && l->n < l->max;
             bits &= bits - 1)
            l->out[l->n++] = base + ((uintptr_t)w << WORD_SHIFT) +
                             ((uintptr_t)__builtin_ctzll(bits) << SLOT_SHIFT);
    return l->n == l->max;
}

size_t lt_lockmap_list(uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t max)
{
    listing l = {out, 0, max};
    if (max)
        each_part(lo, hi, part_list, &l);
    return l.n;
}

int lt_lockmap_any(uintptr_t lo, uintptr_t hi)
{
    return each_part(lo, hi, part_any, NULL);
}
