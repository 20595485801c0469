/*
 * platform_heapblock.c - lt_platform_heap_block for Linux/glibc: the malloc block that holds
 * an address, found at report time by walking glibc's chunk headers. glibc has no call from
 * an inner address to its block (malloc_usable_size wants the start), and keeping a table of
 * blocks would cost every malloc and free; a report can afford a walk, the program's hot
 * paths pay nothing.
 *
 * glibc's layout (64-bit, glibc 2.26 and later): a block is preceded by its chunk's two-word
 * header, the size of the previous chunk (meaningful only while that one is free) and this
 * chunk's size, a multiple of 16 whose low bits are flags (PREV_INUSE, IS_MMAPPED,
 * NON_MAIN_ARENA). A block in use owns its chunk and the next chunk's first word, so
 * malloc_usable_size is the chunk's size minus one word. Chunks come in three places:
 *   - the main arena: chunks follow each other from the start of the brk heap ("[heap]") to
 *     its end, where the top chunk (unused memory) stops;
 *   - a thread arena: heaps mapped at 64 MiB-aligned addresses, each starting with a
 *     heap_info (arena, previous heap, size, ...) and, in an arena's first heap, the arena
 *     itself, whose size differs between glibc versions. The first chunk is the one from which
 *     the chain reaches the heap's end exactly (the top chunk), or the two-chunk fence glibc
 *     leaves at the end of a heap it moved on from;
 *   - a large block (mmapped chunk, IS_MMAPPED) has a mapping of its own; its first word is
 *     the chunk's offset in the mapping (not 0 after memalign, which leaves the original
 *     header at the mapping's start). Adjacent mappings merge in /proc/self/maps, so the
 *     mapping is found from the address down, page by page. glibc 2.43 changed how its size
 *     is counted (mapped_chunk reads both).
 * Every header is checked (alignment, sizes inside the heap, the chain's end, the next
 * chunk's PREV_INUSE bit for the block found, its arena bit); anything that does not hold,
 * as when other threads allocate while the walk reads, gives no block. Memory is only read
 * through lt_platform_peek, so a heap shrinking meanwhile cannot fault the walk, and each
 * step moves forward by at least one chunk inside known bounds, so the walk ends.
 * malloc_usable_size is not called to confirm: it would read the block's headers unchecked,
 * and the block may be freed and its memory unmapped by then.
 *
 * Another allocator (one linked into the program, or preloaded) is recognised by where
 * malloc resolves: only glibc's blocks are looked for.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <string.h>
#include <unistd.h>

#include "platform.h"

#if UINTPTR_MAX > 0xffffffffu

enum {
    WORD = sizeof(size_t),
    HEADER = 2 * WORD,   /* a chunk's header; the block starts after it */
    MIN_CHUNK = 4 * WORD,
    ALIGN = 16,          /* MALLOC_ALIGNMENT */
    PREV_INUSE = 1,
    IS_MMAPPED = 2,
    NON_MAIN_ARENA = 4,
    FLAGS = 7,
    FIRST_CHUNK_SCAN = 4096, /* past heap_info: where an arena's first chunk may start */
    TRIES = 4,
};
#define HEAP_MAX ((uintptr_t)64 << 20)  /* a thread arena's heaps: size limit and alignment */
#define MMAP_SCAN ((uintptr_t)64 << 20) /* how far below the address a large block may start */

/* A window of the program's memory, copied by one peek, so a walk costs a read per 64 KiB
 * instead of one per chunk. Report time only: one caller at a time. */
static struct {
    uintptr_t lo, hi;
    size_t words[8192];
} win;

/* The word at a (aligned), read inside [a, end): 0 when that memory is not readable. */
static int word_at(uintptr_t a, uintptr_t end, size_t *out)
{
    if (a < win.lo || a + WORD > win.hi) {
        uintptr_t n = end - a < sizeof win.words ? end - a : sizeof win.words;
        n &= ~(uintptr_t)(WORD - 1);
        win.lo = win.hi = 0;
        if (a >= end || !n || lt_platform_peek(win.words, (const void *)a, n) != 0)
            return 0;
        win.lo = a;
        win.hi = a + n;
    }
    *out = win.words[(a - win.lo) / WORD];
    return 1;
}

/* The chunks from first to end, one arena's heap (arena: 0 for the main arena, else
 * NON_MAIN_ARENA): the block in use that holds addr, when the whole chain validates. */
static int walk(uintptr_t first, uintptr_t end, uintptr_t addr, size_t arena, uintptr_t *start,
                size_t *size)
{
    uintptr_t c = first, hit = 0, hit_end = 0;
    size_t head;
    while (c != end) {
        if (end - c < HEADER || !word_at(c + WORD, end, &head))
            return 0;
        size_t n = head & ~(size_t)FLAGS;
        if ((c == first || c == hit_end) && !(head & PREV_INUSE))
            return 0; /* the first chunk always says its predecessor is in use; so must the hit's next */
        if (arena && n == HEADER && c + 2 * HEADER == end) {
            /* the fence at the end of an arena's earlier heap: a 16-byte chunk, then a header
             * of size 0 */
            if (!word_at(c + HEADER + WORD, end, &head) || head != PREV_INUSE)
                return 0;
            break;
        }
        if ((head & IS_MMAPPED) || n < MIN_CHUNK || n % ALIGN || n > end - c)
            return 0;
        if (!hit && addr >= c + HEADER && addr < c + n + WORD) {
            if ((head & NON_MAIN_ARENA) != arena)
                return 0;
            hit = c;
            hit_end = c + n;
        }
        c += n;
    }
    if (!hit || hit_end >= c) /* no block there, or the top chunk (free memory) holds addr */
        return 0;
    *start = hit + HEADER;
    *size = hit_end - hit - WORD;
    return 1;
}

/* A thread arena's heap holding addr, in the anonymous mapping that starts at lo. Its size
 * comes from its heap_info, read now: the mapping may have grown since. */
static int thread_heap(uintptr_t addr, uintptr_t lo, uintptr_t *start, size_t *size)
{
    uintptr_t h = addr & ~(HEAP_MAX - 1);
    struct {
        uintptr_t arena, prev;
        size_t size, mprotect_size;
    } info;
    if (h < lo || lt_platform_peek(&info, (const void *)h, sizeof info) != 0)
        return 0;
    uintptr_t end = h + info.size;
    if (!info.arena || info.arena % WORD || info.prev % HEAP_MAX || info.size > info.mprotect_size ||
        info.mprotect_size > HEAP_MAX || addr >= end)
        return 0;
    for (uintptr_t c = h + sizeof info; c < h + FIRST_CHUNK_SCAN && c < end; c += ALIGN)
        if (walk(c, end, addr, NON_MAIN_ARENA, start, size))
            return 1;
    return 0;
}

/* Whether the chunk at c is the large block mapped at p that holds addr, the mapping inside
 * [p, hi) and whole pages long. Its first word is its offset in the mapping (bit 0: huge
 * pages). Two layouts: up to glibc 2.42 the chunk's size reaches the mapping's end and the
 * block is the chunk less its header; later the size stops a header short of the end and the
 * block is the chunk less one word, as in an arena. */
static int mapped_chunk(uintptr_t p, uintptr_t c, uintptr_t hi, uintptr_t addr, size_t page,
                        uintptr_t *start, size_t *size)
{
    size_t h[2];
    if (c + HEADER > addr || lt_platform_peek(h, (const void *)c, sizeof h) != 0)
        return 0;
    size_t n = h[1] & ~(size_t)FLAGS;
    if ((h[0] & ~(size_t)1) != c - p || (h[1] & FLAGS) != IS_MMAPPED || n < MIN_CHUNK ||
        n % ALIGN || n > hi - c)
        return 0;
    size_t usable;
    if ((c - p + n) % page == 0)
        usable = n - HEADER;
    else if ((c - p + n + HEADER) % page == 0 && HEADER <= hi - c - n)
        usable = n - WORD;
    else
        return 0;
    if (addr >= c + HEADER + usable)
        return 0;
    *start = c + HEADER;
    *size = usable;
    return 1;
}

/* A large block holding addr, mapped inside the anonymous mapping [lo, hi): from addr's page
 * down, the first page where one starts. Its chunk is there, or further on after memalign,
 * which moved it to the first spot where the block is aligned (a power of two) and at least
 * MIN_CHUNK away. */
static int mapped_block(uintptr_t addr, uintptr_t lo, uintptr_t hi, uintptr_t *start, size_t *size)
{
    size_t page = (size_t)getpagesize();
    for (uintptr_t p = addr & ~(uintptr_t)(page - 1); p >= lo && addr - p < MMAP_SCAN; p -= page) {
        size_t h[2];
        if (lt_platform_peek(h, (const void *)p, sizeof h) != 0)
            return 0;
        if ((h[0] & ~(size_t)1) != 0 || (h[1] & FLAGS) != IS_MMAPPED)
            continue;
        uintptr_t best = 0;
        for (uintptr_t align = 2 * ALIGN; align && align <= addr - p; align <<= 1) {
            uintptr_t c = ((p + HEADER + align - 1) & ~(align - 1)) - HEADER;
            if (c - p < MIN_CHUNK)
                c += align;
            if (c != best && mapped_chunk(p, c, hi, addr, page, start, size))
                best = c;
        }
        if (best || mapped_chunk(p, p, hi, addr, page, start, size))
            return 1;
        if (p == lo)
            break;
    }
    return 0;
}

/* Whether the program's malloc is glibc's (not its own, not a preloaded allocator's). */
static int glibc_malloc(void)
{
    static int known, glibc;
    if (!known) {
        Dl_info m, libc;
        void *f = dlsym(RTLD_DEFAULT, "malloc");
        glibc = f && dladdr(f, &m) && dladdr((void *)gnu_get_libc_version, &libc) &&
                m.dli_fbase == libc.dli_fbase;
        known = 1;
    }
    return glibc;
}

/* The block in the main arena (brk: the brk heap) or a thread arena's heap, read afresh up
 * to TRIES times: other threads allocating while a walk reads break the chain it sees, seldom
 * twice in a row. The brk heap ends at the break as it is now, which may have moved since
 * /proc/self/maps was read. */
static int arena_block(uintptr_t addr, const lt_mapping *m, int brk, uintptr_t *start,
                       size_t *size)
{
    for (int i = 0; i < TRIES; i++) {
        win.lo = win.hi = 0;
        if (brk ? walk(m->start, (uintptr_t)sbrk(0), addr, 0, start, size)
                : thread_heap(addr, m->start, start, size))
            return 1;
    }
    return 0;
}

int lt_platform_heap_block(uintptr_t addr, const lt_mapping *m, uintptr_t *start, size_t *size)
{
    if (!glibc_malloc())
        return 0;
    if (strcmp(m->path, "[heap]") == 0)
        return arena_block(addr, m, 1, start, size);
    return !m->path[0] && (arena_block(addr, m, 0, start, size) ||
                           mapped_block(addr, m->start, m->end, start, size));
}

#else /* 32-bit glibc: other alignments and heap sizes, not walked */

int lt_platform_heap_block(uintptr_t addr, const lt_mapping *m, uintptr_t *start, size_t *size)
{
    (void)addr;
    (void)m;
    (void)start;
    (void)size;
    return 0;
}

#endif
