/*
 * lockname.c - where a lock lives, named at report time for locks the program did not
 * annotate (see lockname.h):
 *   - on a thread's stack: "stack of T2", and ", frame of worker" when the frame is proven:
 *     only for the reporting thread, whose stack is unwound now (the frame whose stack
 *     pointers enclose the address holds it). Another thread runs on, or is blocked
 *     somewhere the tracer cannot unwind from, so its frames are not named;
 *   - in a loaded object's data: its ELF symbol, local ones included ("config_mu",
 *     "registry+0x8", a C++ "ns::f()::mu");
 *   - in a malloc block: "heap block 0x... (N bytes), offset K", the block found by walking
 *     the allocator's records (lt_platform_heap_block). When it cannot be found (another
 *     allocator, records that do not validate, a seccomp filter: lt_platform_filtered),
 *     the mapping: "heap (block start unknown)" in
 *     the brk heap, "anonymous mapping 0x... (N bytes), offset K" elsewhere (a thread arena, a
 *     large block, the program's own mmap). free-held reports know the block being released
 *     and name it themselves (report_build.c), in the same words;
 *   - elsewhere: the mapping ("shared anonymous mapping 0x... (N bytes), offset K" for
 *     mmap's MAP_SHARED | MAP_ANONYMOUS).
 * Nothing here runs on the lock paths; all of it under the report lock.
 */
#define _GNU_SOURCE
#include "lockname.h"

#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define FRAMES 256

/* The reporting thread's frames, unwound at the first stack lock of a report. */
static lt_frame frames[FRAMES];
static size_t nframes;
static int unwound;

void lt_lockname_begin(void)
{
    unwound = 0;
    lt_platform_filtered(); /* (then no peek where a filter is in force) */
}

size_t lt_lockname_stack(char *buf, size_t size, int seq, const char *function)
{
    size_t n = lt_fmt_str(buf, size, 0, "stack of T");
    n = lt_fmt_dec(buf, size, n, seq);
    if (function) {
        n = lt_fmt_str(buf, size, n, ", frame of ");
        n = lt_fmt_str(buf, size, n, function);
    }
    return n;
}

/* The function at code address ip (a return address when ret), after the calls inlined
 * there: the one whose frame it is. NULL when unknown. */
static const char *function_at(uintptr_t ip, int ret)
{
    static char name[512];
    lt_symbol s[32];
    size_t n = lt_platform_symbolize(ret ? ip - 1 : ip, s, LT_ARRAY_LEN(s));
    if (!n || !s[n - 1].function)
        return NULL;
    lt_fmt_str(name, sizeof name, 0, s[n - 1].function);
    return name;
}

/* The function whose frame on this thread's stack holds addr: frame i spans from its own
 * stack pointer up to its caller's. NULL when no live frame does (its frame has returned). */
static const char *frame_of(uintptr_t addr)
{
    if (!unwound) {
        nframes = lt_platform_unwind(frames, FRAMES);
        unwound = 1;
    }
    for (size_t i = 0; i + 1 < nframes; i++)
        if (addr >= frames[i].sp && addr < frames[i + 1].sp)
            return function_at(frames[i].ip, i > 0); /* callers' ips are return addresses */
    return NULL;
}

/* The thread whose stack holds the address, and for another thread a copy of its last
 * caller walks (callsite.c): each knows the frames of a lock call, bounds and all. */
typedef struct owner_query {
    uintptr_t addr, lo, hi;
    int seq, self, found;
    lt_walk walks[LT_WALKS];
    lt_walk_frames frames[LT_WALKS];
} owner_query;

static void owner_of(lt_thread *t, void *arg)
{
    owner_query *q = arg;
    if (q->found || q->addr < t->stack_lo || q->addr >= t->stack_hi)
        return;
    q->found = 1;
    q->lo = t->stack_lo;
    q->hi = t->stack_hi;
    q->seq = t->info.seq;
    q->self = t == lt_tls.self;
    if (!q->self && (lt_platform_read(q->walks, t->walks, sizeof q->walks) != 0 ||
                     lt_platform_read(q->frames, t->walk_frames, sizeof q->frames) != 0))
        memset(q->walks, 0, sizeof q->walks);
}

/* Another thread's frame that holds addr, from its walks: frame 0 of a walk (the function
 * that made the lock call at w->ra) spans [cfa, sp[0]), frame i [sp[i-1], sp[i]). A frame
 * counts only while the return address it keeps (at frame[i].slot) is still the one the walk read:
 * then the same call chain is still on the stack there. The thread runs on meanwhile, so
 * every read is a peek (none under a seccomp filter: the lock is then "stack of T2" only). */
static const char *walked_frame_of(const lt_walk *walks, const lt_walk_frames *frames,
                                   uintptr_t addr)
{
    for (size_t k = 0; k < LT_WALKS; k++) {
        const lt_walk *w = &walks[k];
        if (w->frames == 0 || w->frames > LT_WALKS) /* none, or a copy taken mid-change */
            continue;
        const lt_walk_frames *f = &frames[w->frames - 1];
        uintptr_t lo = w->cfa, pc = w->ra;
        for (uint32_t i = 0; i < w->n && i < LT_CALLERS; i++) {
            uintptr_t word;
            if (lt_platform_peek(&word, (const void *)f->frame[i].slot, sizeof word) != 0 ||
                word != f->frame[i].caller || f->sp[i] <= lo)
                break;
            if (addr >= lo && addr < f->sp[i])
                return function_at(pc, 1);
            lo = f->sp[i];
            pc = f->frame[i].caller;
        }
    }
    return NULL;
}

static int stack_name(uintptr_t addr, char *buf, size_t size)
{
    static owner_query q;
    memset(&q, 0, sizeof q);
    q.addr = addr;
    lt_thread_each(owner_of, &q);
    if (!q.found || addr < lt_platform_stack_low(q.lo, q.hi)) /* (read outside the registry's lock) */
        return 0;
    lt_lockname_stack(buf, size, q.seq, q.self ? frame_of(addr) : walked_frame_of(q.walks, q.frames, addr));
    return 1;
}

size_t lt_lockname_region(char *buf, size_t size, const char *what, uintptr_t start, size_t len,
                          uintptr_t addr)
{
    size_t n = lt_fmt_str(buf, size, 0, what);
    n = lt_fmt_hex(buf, size, n, start);
    n = lt_fmt_str(buf, size, n, " (");
    n = lt_fmt_dec(buf, size, n, (long)len);
    n = lt_fmt_str(buf, size, n, " bytes), offset ");
    return lt_fmt_dec(buf, size, n, (long)(addr - start));
}

static int mapping_name(uintptr_t addr, char *buf, size_t size)
{
    static lt_mapping m;
    char what[128]; /* "mapping [anon:<name>] ": a mapping name has at most 80 bytes */
    uintptr_t block;
    size_t len;
    if (!lt_platform_mapping(addr, &m))
        return 0;
    if (lt_platform_heap_block(addr, &m, &block, &len)) {
        lt_lockname_region(buf, size, "heap block ", block, len, addr);
        return 1;
    }
    if (strcmp(m.path, "[heap]") == 0) {
        lt_fmt_str(buf, size, 0, "heap (block start unknown)");
        return 1;
    }
    /* mmap(MAP_SHARED | MAP_ANONYMOUS), where a process-shared lock most often lives: the
     * kernel shows it as a deleted /dev/zero, which no program opened. */
    if (strcmp(m.path, "/dev/zero (deleted)") == 0) {
        lt_lockname_region(buf, size, "shared anonymous mapping ", m.start, m.end - m.start, addr);
        return 1;
    }
    if (m.path[0] == '/') {
        size_t n = lt_fmt_str(buf, size, 0, "mapping of ");
        n = lt_fmt_str(buf, size, n, m.path);
        n = lt_fmt_str(buf, size, n, ", file offset ");
        lt_fmt_hex(buf, size, n, m.offset + (addr - m.start));
        return 1;
    }
    size_t n = lt_fmt_str(what, sizeof what, 0, m.path[0] ? "mapping " : "anonymous mapping ");
    if (m.path[0]) {
        n = lt_fmt_str(what, sizeof what, n, m.path);
        lt_fmt_str(what, sizeof what, n, " ");
    }
    lt_lockname_region(buf, size, what, m.start, m.end - m.start, addr);
    return 1;
}

/* A thread-local variable of some thread: "tls_mu (thread-local of T1)". Looked for before a
 * thread's stack, where glibc puts a thread's static TLS (it said "stack of T1"; in the main
 * thread, "anonymous mapping ..."): just below the thread's TCB (its pthread_t) on x86-64,
 * so only the threads whose TCB lies a little above addr are asked, and the reporting thread,
 * whose blocks of a dlopen'ed library's TLS are heap blocks (malloc'd at its first use of
 * them; another thread's are not looked for: any heap block may be one). They are listed
 * first and asked after: the asking takes the loader's lock (dl_iterate_phdr), never under
 * the registry's, which a thread starting inside a dl_iterate_phdr callback would want. */
#define TLS_SPAN ((uintptr_t)1 << 20) /* static TLS blocks and TCB: far less */
#define TLS_ASKED 8

typedef struct tls_owner {
    uintptr_t addr;
    size_t n;
    uintptr_t handle[TLS_ASKED];
    int seq[TLS_ASKED];
} tls_owner;

static void tls_near(lt_thread *t, void *arg)
{
    tls_owner *q = arg;
    if (q->n < TLS_ASKED && t != lt_tls.self && t->handle > q->addr &&
        t->handle - q->addr <= TLS_SPAN) {
        q->handle[q->n] = t->handle;
        q->seq[q->n++] = t->info.seq;
    }
}

static int tls_name(uintptr_t addr, char *buf, size_t size)
{
    tls_owner q = {.addr = addr};
    if (lt_tls.self) {
        q.handle[q.n] = lt_tls.self->handle;
        q.seq[q.n++] = lt_tls.self->info.seq;
    }
    lt_thread_each(tls_near, &q);
    for (size_t i = 0; i < q.n; i++) {
        if (!lt_platform_tls_symbol(addr, q.handle[i], buf, size))
            continue;
        size_t n = strlen(buf);
        n = lt_fmt_str(buf, size, n, " (thread-local of T");
        n = lt_fmt_dec(buf, size, n, q.seq[i]);
        lt_fmt_str(buf, size, n, ")");
        return 1;
    }
    return 0;
}

int lt_lockname(uintptr_t addr, char *buf, size_t size)
{
    if (!addr || !size)
        return 0;
    return tls_name(addr, buf, size) || stack_name(addr, buf, size) ||
           lt_platform_data_symbol(addr, buf, size) || mapping_name(addr, buf, size);
}
