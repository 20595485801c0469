/*
 * alloc.h - the tracer's one allocator: memory from mmap (lt_platform_map), never from
 * malloc. The program's malloc may take a pthread mutex, and a thread holding that mutex may
 * be on its way into a tracer lock, so nothing the tracer does under its own locks may call
 * malloc. None of these functions locks: the caller serialises calls on one arena, pool or
 * array (each lives under one tracer lock).
 */
#ifndef LT_ALLOC_H
#define LT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* size bytes of zeroed, page-aligned memory from mmap; NULL when out of memory, which turns
 * the tracer's checking off (lt_report_out_of_memory): every allocation below comes from
 * here. Given back with lt_platform_unmap. */
void *lt_map(size_t size);

/* The mapping p of old bytes (from lt_map) grown to size bytes, its contents kept (Linux
 * moves its pages: nothing is copied or faulted in again); NULL when out of memory, p then
 * as it was. */
void *lt_remap(void *p, size_t old, size_t size);

/* Writes to each page of [p, p + size), mapped memory the caller owns and has not written yet:
 * its page faults (a large page's 2 MB zeroed at once) come here, outside the caller's locks,
 * and not where the memory is first used. */
void lt_prefault(void *p, size_t size);

/* The pages of [p, p + size) made memory by one call where the system can
 * (lt_platform_populate), from the page p is in; what is in them is left as it is, so that it
 * may be memory in use. */
void lt_populate(const volatile void *p, size_t size);

/* A structure that has grown to LT_LARGE_FROM bytes (a thousand locks or more) is a large
 * one: its memory is in large pages from then on, where a page fault a 4 KB page cost more
 * than the calls that fill it. Before, small pages: a program with a few locks has no 2 MB
 * page zeroed and resident for it. Where a first touch of a small page is a fault and a trap
 * out of the VM (~25 us on this one; ~14 us for a page made memory ahead), making a large
 * page (0.1-0.4 ms: zeroed, faulted in or collapsed) costs what 16 of them do, and a
 * structure that has grown to 64 KB in a program's first round usually grows on
 * (`stressbench groups`: 344 KB of nodes, 800 KB of edges, a 1.4 MB held set, which took 64,
 * 64 and 56 small pages each at 256 KB). */
#define LT_LARGE_FROM ((size_t)64 << 10)
#define LT_LARGE_PAGE ((size_t)2 << 20)

static inline size_t lt_large_round(size_t size)
{
    return (size + LT_LARGE_PAGE - 1) & ~(LT_LARGE_PAGE - 1);
}

/* size bytes of zeroed memory kept as long as the process, in large pages, for the chunks of
 * large structures. Page-aligned; NULL when out of memory. Safe to call from any thread, with
 * or without the caller's locks. */
void *lt_large_alloc(size_t size);

/* lt_remap for a large structure, size a multiple of LT_LARGE_PAGE: the mapping moves to large
 * pages, its small ones copied into them. */
void *lt_remap_large(void *p, size_t old, size_t size);

/* Bump allocation from mapped chunks of `chunk` bytes (a zeroed lt_arena: LT_ARENA_CHUNK), for
 * memory kept as long as the process (shadow entries, interned stacks, counters): it is never
 * given back. */
#define LT_ARENA_CHUNK (64 * 1024)
typedef struct lt_arena {
    size_t chunk;
    char *next;
    size_t left;
} lt_arena;
#define LT_ARENA(chunk_bytes) {(chunk_bytes), NULL, 0}

/* size bytes aligned to align (a power of two), zeroed; NULL when out of memory. A request
 * larger than the chunk gets a mapping of its own. */
void *lt_arena_alloc(lt_arena *a, size_t size, size_t align);

/* Objects of one size from an arena, recycled through a stack of pointers to the freed ones
 * (mapped, 8 bytes an object). Not a list threaded through the objects: taking from that
 * reads each freed object, a cache miss that the next take waits for, and a graph that lost
 * thousands of locks takes thousands of them in a row. */
typedef struct lt_pool {
    lt_arena arena;
    size_t size, align;
    void **stack; /* freed objects, the last freed on top */
    size_t nfree, cap;
} lt_pool;
#define LT_POOL(type, chunk_bytes) {LT_ARENA(chunk_bytes), sizeof(type), _Alignof(type), NULL, 0, 0}

void *lt_pool_get(lt_pool *p); /* zeroed; NULL when out of memory */
void *lt_pool_take(lt_pool *p); /* the same, not zeroed: for callers that write all of it */
void lt_pool_put(lt_pool *p, void *x);

/* The freed objects, the last freed on top: the one at i (0 .. nfree - 1, from the bottom),
 * and that one taken (the top takes its place), for a caller that chooses among them. */
static inline void *lt_pool_free_at(const lt_pool *p, size_t i)
{
    return p->stack[i];
}

static inline void *lt_pool_take_at(lt_pool *p, size_t i)
{
    void *x = p->stack[i];
    p->stack[i] = p->stack[--p->nfree];
    return x;
}

/* Whether a take is served by a freed object rather than from the arena. */
static inline int lt_pool_has_free(const lt_pool *p)
{
    return p->nfree != 0;
}

/* Objects of one size named by 32-bit indices (half a pointer), for structures that link
 * millions of them: chunks of 2^bits objects, mapped when first needed and found through a
 * table; index 0 names none. Freed indices go on a stack, as in lt_pool. The first chunk is
 * small pages, of which a pool hands out LT_LARGE_FROM bytes (lt_ix_next): one that grows past
 * them skips the rest of that chunk, address space never touched, and its later chunks are
 * large memory (lt_large_alloc). */
#define LT_IX_CHUNKS 16384
#define LT_IX_GIVEN 4 /* ranges of memory given and not used yet (lt_ix_give) */
typedef struct lt_ixpool {
    size_t size;
    unsigned bits;
    uint32_t next;   /* indices from here on were never handed out */
    uint32_t *stack; /* freed indices, the last freed on top */
    size_t nfree, cap;
    size_t mapped;   /* bytes of its chunks that it hands out (lt_ix_bytes) */
    int guard; /* the rank (spin.h) of the tracer lock every use of the pool is under, one
                  lock of its rank (lt_spin_assert_rank) */
    char *given[LT_IX_GIVEN]; /* memory given for its next chunks (lt_ix_give), */
    uint32_t ngiven[LT_IX_GIVEN]; /* in so many chunks each; 0: none */
    char *chunk[LT_IX_CHUNKS];
} lt_ixpool;
#define LT_IXPOOL(type, chunk_bits, rank) \
    {sizeof(type), (chunk_bits), 1, NULL, 0, 0, 0, (rank), {NULL}, {0}, {NULL}}

/* With LT_CHECKS a pool taken from or given to without its guard held is an internal error
 * (lt_spin_assert_rank): one such put, outside the graph lock, beside a fill on another
 * thread, had an index handed out twice, which showed only much later, one run in hundreds. */
#if LT_CHECKS
void lt_ix_guarded(const lt_ixpool *p);
#else
static inline void lt_ix_guarded(const lt_ixpool *p) { (void)p; }
#endif

/* The object at index i (not 0), which the pool handed out; bits and size are the pool's,
 * passed as constants by a caller that knows them (this runs on every link followed). */
static inline void *lt_ix_at(const lt_ixpool *p, uint32_t i, unsigned bits, size_t size)
{
    return p->chunk[i >> bits] + (size_t)(i & ((1u << bits) - 1)) * size;
}

uint32_t lt_ix_fresh(lt_ixpool *p);
void lt_ix_keep(lt_ixpool *p, uint32_t i);

/* An index, not zeroed; 0 when out of memory. */
static inline uint32_t lt_ix_take(lt_ixpool *p)
{
    lt_ix_guarded(p);
    return p->nfree ? p->stack[--p->nfree] : lt_ix_fresh(p);
}

static inline void lt_ix_put(lt_ixpool *p, uint32_t i)
{
    lt_ix_guarded(p);
    if (p->nfree < p->cap)
        p->stack[p->nfree++] = i;
    else
        lt_ix_keep(p, i);
}

/* Up to `want` indices never handed out, in a row from *first (in one chunk): how many, 0
 * when out of memory. */
uint32_t lt_ix_block(lt_ixpool *p, uint32_t want, uint32_t *first);

/* Under p's guard: [mem, mem + size), memory made before and no longer used, for p's next
 * chunks, where it saves making fresh memory. Of any content: only for a pool whose objects
 * are written whole before they are read (order.c's edges; not its nodes, whose cold parts
 * keep search stamps). 0 when p takes none of it (less than a chunk, or LT_IX_GIVEN ranges
 * given and not used yet): the caller keeps it. */
int lt_ix_give(lt_ixpool *p, void *mem, size_t size);

static inline int lt_ix_has_free(const lt_ixpool *p)
{
    return p->nfree != 0;
}

/* The indices of p's first chunk that it hands out: those of the chunk's first LT_LARGE_FROM
 * bytes, small pages; a pool that grows past them skips the rest of the chunk (lt_ix_over).
 * Large pages were had before by collapsing those small pages into one (MADV_COLLAPSE) and
 * filling the rest: the kernel waits there for every CPU to drain its page lists (0.2 ms of
 * CPU, and up to 4 ms of wall time in `groups` on this VM while the other CPU was busy), where
 * the first touch of large memory makes a large page at once (0.06 ms). */
static inline uint32_t lt_ix_small(const lt_ixpool *p)
{
    size_t n = (LT_LARGE_FROM + p->size - 1) / p->size, per = (size_t)1 << p->bits;
    return (uint32_t)(n < per ? n : per);
}

/* i, or the second chunk's first index when the first chunk skips i: a walk over the indices
 * handed out goes on there. */
static inline uint32_t lt_ix_over(const lt_ixpool *p, uint32_t i)
{
    return i >= lt_ix_small(p) && i < 1u << p->bits ? 1u << p->bits : i;
}

/* The index p's next block (or take without a freed index) begins at. */
static inline uint32_t lt_ix_next(const lt_ixpool *p)
{
    return lt_ix_over(p, p->next);
}

/* How many indices p has handed out (freed ones too; index 0 counted as one). */
static inline uint32_t lt_ix_handed(const lt_ixpool *p)
{
    uint32_t per = 1u << p->bits;
    return p->next > per ? p->next - (per - lt_ix_small(p)) : p->next;
}

/* The bytes of chunk c that p hands out: the first one's small part, or a whole chunk. What
 * the graph's bound counts (lt_ix_maps, mapped): the rest of the first chunk is never touched. */
static inline size_t lt_ix_bytes(const lt_ixpool *p, uint32_t c)
{
    return c ? p->size << p->bits : (size_t)lt_ix_small(p) * p->size;
}

/* The bytes the next block (or take without a freed index) maps: a chunk, or none. */
static inline size_t lt_ix_maps(const lt_ixpool *p)
{
    uint32_t c = lt_ix_next(p) >> p->bits;
    return c < LT_IX_CHUNKS && !p->chunk[c] ? lt_ix_bytes(p, c) : 0;
}

/* Makes the mapped array *a of *cap elements of `size` bytes hold at least n, keeping its
 * contents; for scratch space that lives under one lock. 0 when out of memory. */
int lt_scratch_fit(void **a, size_t *cap, size_t n, size_t size);

#endif
