/*
 * alloc.c - arenas, pools and scratch arrays in mapped memory (alloc.h).
 */
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloc.h"
#include "lt_internal.h"
#include "platform.h"

/* From this size on a mapping asks for large pages: the tracer's large ones are tables probed
 * at random (the known set of the order graph) and arena chunks filled by the thousand, where a
 * page fault and a TLB miss per 4 KB page otherwise dominate; small ones stay small. */
#define MAP_HUGE_MIN ((size_t)4 << 20)

void *lt_map(size_t size)
{
    void *p = lt_platform_map(size);
    if (!p)
        lt_report_out_of_memory();
    else if (size >= MAP_HUGE_MIN)
        lt_platform_map_huge(p, size);
    return p;
}

void *lt_remap(void *p, size_t old, size_t size)
{
    void *q = lt_platform_remap(p, old, size);
    if (!q)
        lt_report_out_of_memory();
    else if (size >= MAP_HUGE_MIN)
        lt_platform_map_huge(q, size);
    return q;
}

/* The smallest page size: a stride that touches every page wherever the range starts. */
#define PAGE_MIN 4096

/* The pages are made memory by one call first where the system can (lt_platform_populate):
 * a page fault each was a trap out of the VM in `lazy` (pvm_irq_enable, 9 % of its time), and
 * a known set copied by lt_known_grow under small pages took 512 of them for 2 MB - slow
 * enough that the set filled up meanwhile and was copied again under the graph lock. The
 * writes below then find every page there; they stay for systems without the call. */
void lt_populate(const volatile void *p, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)p & ~(uintptr_t)(page - 1);
    if (size)
        lt_platform_populate((void *)first, (uintptr_t)p + size - first);
}

void lt_prefault(void *p, size_t size)
{
    volatile char *c = p;
    lt_populate(p, size);
    for (size_t at = 0; at < size; at += PAGE_MIN)
        c[at] = 0;
    if (size)
        c[size - 1] = 0;
}

/* Large memory is cut by an atomic add from one reservation of address space (pages become
 * memory where first written, as a large page each: one fault per 2 MB, not 512), aligned to
 * a large page so that its first one is whole; beyond the reservation, or where address space
 * is capped (RLIMIT_AS), from plain mappings. Under a cap the reservation is not even tried:
 * made, its 1 GiB counted against the program's own allocations, which a program that fits
 * its cap natively with less than that to spare then had refused. The cap is read once, at
 * the first large allocation: one the program sets after that finds the reservation made. */
#define LARGE_RESERVE ((size_t)1 << 30)
#define LARGE_NONE ((char *)1) /* no reservation could be made */

static _Atomic size_t large_used;
static char *_Atomic large_base; /* the reservation, LT_LARGE_PAGE-aligned; NULL = not yet */

static char *large_reservation(void)
{
    char *base = atomic_load_explicit(&large_base, memory_order_acquire);
    if (base)
        return base;
    struct rlimit as;
    int capped = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    char *fresh = capped ? NULL : lt_platform_reserve(LARGE_RESERVE + LT_LARGE_PAGE),
         *aligned = LARGE_NONE;
    if (fresh) { /* the slack either side of the aligned part stays reserved, unused */
        aligned = (char *)(((uintptr_t)fresh + LT_LARGE_PAGE - 1) & ~(LT_LARGE_PAGE - 1));
        lt_platform_map_huge(aligned, LARGE_RESERVE);
    }
    if (!atomic_compare_exchange_strong_explicit(&large_base, &base, aligned,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        if (fresh)
            lt_platform_unmap(fresh, LARGE_RESERVE + LT_LARGE_PAGE);
        return base;
    }
    return aligned;
}

void *lt_large_alloc(size_t size)
{
    size = (size + PAGE_MIN - 1) & ~(size_t)(PAGE_MIN - 1);
    size_t at = atomic_fetch_add_explicit(&large_used, size, memory_order_relaxed);
    if (at + size <= LARGE_RESERVE) {
        char *base = large_reservation();
        if (base != LARGE_NONE)
            return base + at;
    }
    return lt_map(size);
}

/* From small pages (old not whole large pages), a copy: the copy's first write makes each
 * large page, where their collapse (MADV_COLLAPSE) zeroed them too, copied the small pages
 * and first waited for every CPU to drain its page lists: 0.3 ms on this VM while idle, up to
 * 14 ms while its other CPU was busy. From large pages, a move, which takes them whole. Without
 * an aligned mapping, the plain one: only its speed differs. */
void *lt_remap_large(void *p, size_t old, size_t size)
{
    char *q = old % LT_LARGE_PAGE ? lt_platform_map_aligned(size, LT_LARGE_PAGE)
                                  : lt_platform_remap_aligned(p, old, size, LT_LARGE_PAGE);
    if (!q)
        return lt_remap(p, old, size);
    lt_platform_map_huge(q, size);
    if (old % LT_LARGE_PAGE) {
        memcpy(q, p, old);
        lt_platform_unmap(p, old);
    }
    return q;
}

void *lt_arena_alloc(lt_arena *a, size_t size, size_t align)
{
    size_t pad = (size_t)(-(uintptr_t)a->next & (align - 1));
    if (!a->next || a->left < pad + size) {
        size_t chunk = a->chunk ? a->chunk : LT_ARENA_CHUNK;
        size_t bytes = size > chunk ? size : chunk;
        char *fresh = lt_map(bytes); /* page-aligned */
        if (!fresh)
            return NULL;
        a->next = fresh;
        a->left = bytes;
        pad = 0;
    }
    void *p = a->next + pad;
    a->next += pad + size;
    a->left -= pad + size;
    return p;
}

void *lt_pool_take(lt_pool *p)
{
    if (!p->nfree)
        return lt_arena_alloc(&p->arena, p->size, p->align);
    return p->stack[--p->nfree];
}

void *lt_pool_get(lt_pool *p)
{
    int recycled = lt_pool_has_free(p);
    void *x = lt_pool_take(p);
    if (recycled)
        memset(x, 0, p->size);
    return x;
}

/* The stack starts at a page. Without memory for a larger one the object is lost, as
 * checking stops then anyway (lt_map). */
#define POOL_STACK_MIN (4096 / sizeof(void *))

static __attribute__((noinline)) int pool_grow(lt_pool *p)
{
    return lt_scratch_fit((void **)&p->stack, &p->cap, p->cap ? p->cap + 1 : POOL_STACK_MIN,
                          sizeof *p->stack);
}

void lt_pool_put(lt_pool *p, void *x)
{
    if (lt_unlikely(p->nfree == p->cap) && !pool_grow(p))
        return;
    p->stack[p->nfree++] = x;
}

#if LT_CHECKS
void lt_ix_guarded(const lt_ixpool *p)
{
    lt_spin_assert_rank(p->guard);
}
#endif

int lt_ix_give(lt_ixpool *p, void *mem, size_t size)
{
    lt_ix_guarded(p);
    size_t bytes = p->size << p->bits;
    for (unsigned g = 0; g < LT_IX_GIVEN && size >= bytes; g++) {
        if (p->ngiven[g])
            continue;
        p->given[g] = mem;
        p->ngiven[g] = (uint32_t)(size / bytes);
        return 1;
    }
    return 0;
}

/* A chunk of `bytes` from the memory given to p (lt_ix_give), NULL: none left. */
static char *ix_given(lt_ixpool *p, size_t bytes)
{
    for (unsigned g = 0; g < LT_IX_GIVEN; g++) {
        if (!p->ngiven[g])
            continue;
        char *m = p->given[g];
        p->given[g] = m + bytes;
        p->ngiven[g]--;
        return m;
    }
    return NULL;
}

/* Chunk c's memory: the first small pages, the others given (lt_ix_give) or large memory. */
static char *chunk_memory(lt_ixpool *p, uint32_t c, size_t bytes)
{
    char *m;
    if (!c)
        return lt_map(bytes);
    return (m = ix_given(p, bytes)) != NULL ? m : lt_large_alloc(bytes);
}

uint32_t lt_ix_block(lt_ixpool *p, uint32_t want, uint32_t *first)
{
    lt_ix_guarded(p);
    uint32_t next = lt_ix_next(p), per = 1u << p->bits, c = next >> p->bits,
             room = per - (next & (per - 1));
    if (c >= LT_IX_CHUNKS)
        return 0;
    if (!p->chunk[c]) {
        size_t bytes = p->size << p->bits;
        char *m = chunk_memory(p, c, bytes);
        if (!m)
            return 0;
        p->chunk[c] = m;
        p->mapped += lt_ix_bytes(p, c);
    }
    if (c == 0)
        room = lt_ix_small(p) - next;
    uint32_t n = want < room ? want : room;
    *first = next;
    p->next = next + n;
    return n;
}

/* lt_ix_take without a freed index. */
uint32_t lt_ix_fresh(lt_ixpool *p)
{
    uint32_t i;
    return lt_ix_block(p, 1, &i) ? i : 0;
}

/* lt_ix_put with a full stack. Without memory for a larger one the index is lost, as
 * checking stops then anyway (lt_map). */
void lt_ix_keep(lt_ixpool *p, uint32_t i)
{
    if (lt_scratch_fit((void **)&p->stack, &p->cap, p->cap ? p->cap + 1 : 1024, sizeof *p->stack))
        p->stack[p->nfree++] = i;
}

int lt_scratch_fit(void **a, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 1;
    size_t grown = *cap ? *cap * 2 : 64;
    while (grown < n)
        grown *= 2;
    void *p = *a ? lt_remap(*a, *cap * size, grown * size) : lt_map(grown * size);
    if (!p)
        return 0;
    *a = p;
    *cap = grown;
    return 1;
}
