/*
 * lifetime.h - a lock's identity ends with its memory: the lock map (lockmap.c) says where
 * known locks live, lifetime.c forgets the locks of memory that is freed, reallocated,
 * unmapped or popped off an exiting thread's stack, and reports memory freed while a lock in
 * it is held (free-held).
 */
#ifndef LT_LIFETIME_H
#define LT_LIFETIME_H

#include "lt_internal.h"

/* lockmap.c ------------------------------------------------------------------------------ */
#define LT_LOCKMAP_REGION_SHIFT 24 /* 16 MiB regions */
#define LT_LOCKMAP_DIR_SHIFT 30    /* found through a directory per 1 GiB */
#define LT_LOCKMAP_CHUNK_SHIFT 16  /* a count per 64 KiB chunk */
#define LT_LOCKMAP_SLOT_SHIFT 2    /* a bit per 4-byte slot */
#define LT_LOCKMAP_REGIONS (1u << (47 - LT_LOCKMAP_REGION_SHIFT))
#define LT_LOCKMAP_DIRS (1u << (47 - LT_LOCKMAP_DIR_SHIFT))
#define LT_LOCKMAP_REGION_MASK ((1ull << LT_LOCKMAP_REGION_SHIFT) - 1)
#define LT_LOCKMAP_WORD_SHIFT (LT_LOCKMAP_SLOT_SHIFT + 6) /* 256 bytes per word of bits */
#define LT_LOCKMAP_GRANULE_SHIFT 4 /* glibc's blocks start and end on 16 bytes */
#define LT_LOCKMAP_GRANULES (1u << (LT_LOCKMAP_REGION_SHIFT - LT_LOCKMAP_GRANULE_SHIFT))
/* Granules an ahead byte looks at: 1008 bytes, glibc's per-thread cache's blocks (the
 * frees that cost least). Each lock added or removed rewrites up to this many bytes. */
#define LT_LOCKMAP_AHEAD 63u

/* One region: mapped on the first lock it holds, never unmapped; reserved address space
 * (MAP_NORESERVE), so only the words of bits and the ahead bytes near real locks become
 * memory. 1.5 MB of address space: what RLIMIT_AS counts is ~9 % of the 16 MiB stretches
 * that hold locks (1 GiB regions reserved 96 MB each, and a program that fitted its limit
 * natively with less than that to spare had its own allocations refused traced). */
typedef struct lt_lockmap_region {
    _Atomic uint32_t count[1u << (LT_LOCKMAP_REGION_SHIFT - LT_LOCKMAP_CHUNK_SHIFT)];
    /* bit (a >> 2) % 64 of word (a >> 8) is set when a lock starts in that slot; a = the
     * address within the region */
    _Atomic uint64_t bits[1ull << (LT_LOCKMAP_REGION_SHIFT - LT_LOCKMAP_WORD_SHIFT)];
    /* Per 16-byte granule g: AHEAD - d, where d is how many granules on from g the first one
     * where a lock starts is (0: in g itself), or 0 when none is within AHEAD granules. The
     * region's end counts as a lock (what lies beyond is another region's). */
    _Atomic uint8_t ahead[LT_LOCKMAP_GRANULES];
} lt_lockmap_region;

/* The regions of 1 GiB, mapped with its first region. */
typedef struct lt_lockmap_dir {
    lt_lockmap_region *_Atomic region[1u << (LT_LOCKMAP_DIR_SHIFT - LT_LOCKMAP_REGION_SHIFT)];
} lt_lockmap_dir;

extern lt_lockmap_dir *_Atomic lt_lockmap_dirs[LT_LOCKMAP_DIRS];

/* The region of a, NULL when it has no lock yet. The index is masked, not checked: an address
 * beyond 47 bits, where no lock is ever recorded, may read another region. */
static inline lt_lockmap_region *lt_lockmap_region_at(uintptr_t a)
{
    lt_lockmap_dir *d = atomic_load_explicit(
        &lt_lockmap_dirs[(a >> LT_LOCKMAP_DIR_SHIFT) & (LT_LOCKMAP_DIRS - 1)], memory_order_acquire);
    return d ? atomic_load_explicit(&d->region[(a >> LT_LOCKMAP_REGION_SHIFT) &
                                               ((1u << (LT_LOCKMAP_DIR_SHIFT -
                                                        LT_LOCKMAP_REGION_SHIFT)) - 1)],
                                    memory_order_acquire)
             : NULL;
}

/* The filter every free() reads first: per 64 KiB chunk index modulo 2^16 (chunks 4 GiB
 * apart share an entry), the bits set in all of those chunks. 0 = no lock in the chunk. */
#define LT_LOCKMAP_FILTER (1u << 16)
extern _Atomic uint32_t lt_lockmap_filter[LT_LOCKMAP_FILTER];

int lt_lockmap_add(const void *addr);
void lt_lockmap_remove(const void *addr);
/* No known lock starts in [lo, hi) any more (its shadow entries are gone: lt_shadow_forget). */
void lt_lockmap_clear(uintptr_t lo, uintptr_t hi);
void lt_lockmap_fork(lt_fork_phase phase);
/* Whether a known lock starts in [lo, hi). */
int lt_lockmap_any(uintptr_t lo, uintptr_t hi);
/* Slot addresses (4-byte aligned) in [lo, hi) where known locks start, at most max; a caller
 * that got max asks again from the last one + 4. */
size_t lt_lockmap_list(uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t max);

/* Masks over one word of bits: the slots from lo's on, and the slots up to last's. */
static inline uint64_t lt_lockmap_from(uintptr_t lo)
{
    return ~0ull << ((lo >> LT_LOCKMAP_SLOT_SHIFT) & 63);
}
static inline uint64_t lt_lockmap_upto(uintptr_t last)
{
    return ~0ull >> (63 - ((last >> LT_LOCKMAP_SLOT_SHIFT) & 63));
}

/* 0 when no known lock starts in [lo, hi) (hi > lo), else 1: maybe (lt_lockmap_any says).
 * Inline and without a call: free() asks it about the blocks lt_lockmap_block_clear leaves
 * open (larger ones, other allocators' blocks) before anything costlier. A block inside one 64 KiB chunk (nearly all) is answered: no lock in its chunk
 * (one load, from the filter), or the bits of the block's own slots are read (up to 512
 * bytes: one or two words), so a plain block beside objects with locks stays cheap. Anything
 * else is a maybe. The region's index is masked, not checked: an address beyond 47 bits,
 * where no lock is ever recorded, may read another region and say maybe.
 *
 * Everything is read relaxed and without a lock: a lock the program created before this
 * free (in program order or through its own synchronisation) is seen; one created in a
 * neighbouring block meanwhile only touches bits outside the block's mask; one created in
 * this block meanwhile is the program's own race with its free. */
static inline int lt_lockmap_maybe(uintptr_t lo, uintptr_t hi)
{
    uintptr_t c = lo >> LT_LOCKMAP_CHUNK_SHIFT, last = hi - 1;
    if (lt_unlikely(c != last >> LT_LOCKMAP_CHUNK_SHIFT))
        return 1;
    if (lt_likely(!atomic_load_explicit(&lt_lockmap_filter[c & (LT_LOCKMAP_FILTER - 1)],
                                        memory_order_relaxed)))
        return 0;
    lt_lockmap_region *g = lt_lockmap_region_at(lo);
    if (!g) /* a chunk 4 GiB away has locks */
        return 0;
    size_t w = (lo & LT_LOCKMAP_REGION_MASK) >> LT_LOCKMAP_WORD_SHIFT;
    size_t wl = (last & LT_LOCKMAP_REGION_MASK) >> LT_LOCKMAP_WORD_SHIFT;
    if (lt_unlikely(wl - w > 1))
        return 1;
    /* one word or two, without a branch on which (it would follow the block's size): two
     * is all ones, one is zero */
    uint64_t upto = lt_lockmap_upto(last), two = -(uint64_t)(wl - w);
    uint64_t first = atomic_load_explicit(&g->bits[w], memory_order_relaxed) &
                     lt_lockmap_from(lo) & (upto | two);
    uint64_t second = atomic_load_explicit(&g->bits[wl], memory_order_relaxed) & upto & two;
    return (first | second) != 0;
}

/* 1 when no known lock starts in [p, p + span), p on 16 bytes and span a multiple of 16,
 * else 0: maybe (lt_lockmap_maybe, lt_lockmap_any say). Bits 0-3 of span are ignored: it
 * may be a glibc chunk's size word as it is, flags and all (a maybe at most, by 7 bytes). Every free() asks this first, and it must stay within a few percent of free() itself: inline: one ahead byte answers any block of up to 1008
 * bytes in a region with locks, however close its neighbours' locks are, and a region
 * without locks needs no load. A lock in another block is never in p's granules: a glibc
 * block's last 8 bytes share a granule only with the next chunk's size word.
 * Read relaxed and without a lock, as lt_lockmap_maybe is (see there). */
static inline int lt_lockmap_block_clear(uintptr_t p, size_t span)
{
    lt_lockmap_region *g = lt_lockmap_region_at(p);
    if (!g) /* none in p's region: the block is clear unless it reaches into the next */
        return !((p ^ (p + span - 1)) >> LT_LOCKMAP_REGION_SHIFT);
    uint8_t v = atomic_load_explicit(
        &g->ahead[(p & LT_LOCKMAP_REGION_MASK) >> LT_LOCKMAP_GRANULE_SHIFT], memory_order_relaxed);
    /* v + span / 16 <= AHEAD, as one lea and a compare */
    return span + ((size_t)v << LT_LOCKMAP_GRANULE_SHIFT) <
           (LT_LOCKMAP_AHEAD + 1) << LT_LOCKMAP_GRANULE_SHIFT;
}

/* lifetime.c ----------------------------------------------------------------------------- */
typedef enum {
    LT_RELEASE_FREE,
    LT_RELEASE_REALLOC,
    LT_RELEASE_MUNMAP,
    LT_RELEASE_RECYCLED,
    LT_RELEASE_DLCLOSE /* a library's writable segments, about to be unmapped by dlclose */
} lt_release;

/* [lo, hi) stops holding locks (the caller is about to free or unmap it): every known lock
 * in it is forgotten, and one that some thread holds is reported first (free-held). ra is
 * the program's call site. The thread is inside the tracer. */
void lt_memory_released(lt_thread *t, uintptr_t lo, uintptr_t hi, lt_release how, uintptr_t ra);

/* dlclose (interpose.c). Which objects it unloads is known only after it (dependencies go
 * too, or none while another handle holds them), and then their memory is gone: ld.so
 * unmaps it with its own munmap, unseen, after every destructor of theirs, which may still
 * release their locks (a destructor, an atexit function, one with a priority that runs
 * after __cxa_finalize). So before it, lt_unload_begin notes each lock some thread holds in
 * the objects' writable spans (what its word says of it) and each object that holds one (its
 * file, for the stacks in it); NULL when none is held. After it, each object gone is handed
 * to lt_memory_unloaded: its locks are forgotten, and one that some thread still holds is
 * reported (free-held: its holder would unlock unmapped memory), from the notes, without
 * reading the memory. */
struct lt_object_data;
typedef struct lt_unloading lt_unloading;
lt_unloading *lt_unload_begin(const struct lt_object_data *objects, size_t n);
/* Between the two, the spans of the objects noted are reserved where nothing is mapped any
 * more (those unloaded), so that the tracer's own memory for the reports does not fill the
 * hole an object left: loaded again, it lands where it was, as without the tracer. */
void lt_unload_hold(lt_unloading *u);
void lt_memory_unloaded(lt_thread *t, uintptr_t lo, uintptr_t hi, uintptr_t ra,
                        const lt_unloading *u);
void lt_unload_end(lt_unloading *u);

/* The exiting thread's stack is going away: its locks are forgotten (no report: its frames
 * have all returned). */
void lt_stack_released(lt_thread *t);

#endif
