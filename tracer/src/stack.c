/*
 * stack.c - stack capture, the stack depot, and stack text for reports.
 *
 * The depot interns each distinct stack once and hands out 32-bit ids (0 = no stack), so
 * shadow entries, held sets and findings carry ids, never arrays. Lookup walks an immutable
 * bucket chain without locks; an insert takes one stripe lock and appends to an arena that is
 * never freed. Ids index a two-level table, so reading a stack by id is lock-free as well.
 * Symbols are resolved only when a report is built (report_build.c).
 */
#define _GNU_SOURCE
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define BUCKETS 16384
#define STRIPES 256
#define IDS_PER_CHUNK 4096
#define ID_CHUNKS 4096 /* up to 16 M distinct stacks */
#define ARENA_BYTES (1024 * 1024)
#define MAX_FRAMES LT_STACK_MAX
#define SLACK 32       /* tracer frames above the program's call */

typedef struct node {
    struct node *next;
    uint32_t hash, id;
    uint32_t n;
    uintptr_t ips[];
} node;

static node *_Atomic buckets[BUCKETS];
static lt_spin stripes[STRIPES] = {[0 ... STRIPES - 1] = LT_SPIN_INIT(LT_RANK_STACK)};
static lt_spin arena_lock = LT_SPIN_INIT(LT_RANK_ARENA);
static lt_arena arena = LT_ARENA(ARENA_BYTES);
static node **_Atomic ids[ID_CHUNKS];
static _Atomic uint32_t next_id = 1;

static uint32_t hash_ips(const uintptr_t *ips, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ips[i]) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

static node *find(node *head, uint32_t h, const uintptr_t *ips, size_t n)
{
    for (node *x = head; x; x = x->next)
        if (x->hash == h && x->n == n && memcmp(x->ips, ips, n * sizeof *ips) == 0)
            return x;
    return NULL;
}

static void *arena_alloc(size_t size)
{
    lt_spin_lock(&arena_lock);
    void *p = lt_arena_alloc(&arena, size, 16);
    lt_spin_unlock(&arena_lock);
    return p;
}

/* Gives x an id and makes it readable through ids[]. 0 when the id space is full. */
static uint32_t publish_id(node *x)
{
    uint32_t id = atomic_fetch_add(&next_id, 1);
    size_t chunk = id / IDS_PER_CHUNK;
    if (chunk >= ID_CHUNKS)
        return 0;
    node **c = atomic_load(&ids[chunk]);
    if (!c) {
        node **fresh = arena_alloc(IDS_PER_CHUNK * sizeof(node *));
        if (!fresh)
            return 0;
        if (!atomic_compare_exchange_strong(&ids[chunk], &c, fresh))
            fresh = c; /* another inserter won; its chunk is the one */
        c = fresh;
    }
    c[id % IDS_PER_CHUNK] = x;
    return id;
}

uint32_t lt_stack_intern(const uintptr_t *ips, size_t n)
{
    if (n == 0)
        return 0;
    uint32_t h = hash_ips(ips, n);
    node *_Atomic *b = &buckets[h % BUCKETS];
    node *x = find(atomic_load_explicit(b, memory_order_acquire), h, ips, n);
    if (x)
        return x->id;
    lt_spin *stripe = &stripes[h % STRIPES];
    lt_spin_lock(stripe);
    x = find(atomic_load_explicit(b, memory_order_acquire), h, ips, n);
    if (!x && (x = arena_alloc(sizeof *x + n * sizeof *ips)) != NULL) {
        x->hash = h;
        x->n = (uint32_t)n;
        memcpy(x->ips, ips, n * sizeof *ips);
        x->id = publish_id(x);
        x->next = atomic_load_explicit(b, memory_order_relaxed);
        atomic_store_explicit(b, x, memory_order_release);
    }
    lt_spin_unlock(stripe);
    return x ? x->id : 0;
}

const uintptr_t *lt_stack_get(uint32_t id, size_t *n)
{
    node **c = id ? atomic_load(&ids[id / IDS_PER_CHUNK]) : NULL;
    node *x = c ? c[id % IDS_PER_CHUNK] : NULL;
    *n = x ? x->n : 0;
    return x ? x->ips : NULL;
}

size_t lt_stack_depth(void)
{
    return lt_cfg.stack_depth ? (size_t)lt_cfg.stack_depth : 48;
}

/* Index of the frame returning to `from_ra` (the program's call site); without one, of the
 * first frame outside the tracer. */
static size_t program_start(const uintptr_t *ips, size_t n, uintptr_t from_ra)
{
    size_t i;
    for (i = 0; from_ra && i < n && i < SLACK; i++)
        if (ips[i] == from_ra)
            return i;
    for (i = 0; i < n && lt_platform_in_tracer(ips[i]); i++)
        ;
    return i < n ? i : 0;
}

/* The call site alone where the unwinder gives no frames (it may not unwind now:
 * platform_linux.c's unw_enter_as). */
static __attribute__((noinline)) uint32_t stack_unwound(uintptr_t from_ra)
{
    uintptr_t ips[MAX_FRAMES + SLACK];
    size_t n = lt_platform_backtrace(ips, lt_stack_depth() + SLACK);
    if (!n)
        return from_ra ? lt_stack_intern(&from_ra, 1) : 0;
    size_t start = program_start(ips, n, from_ra);
    n -= start;
    return lt_stack_intern(ips + start, n < lt_stack_depth() ? n : lt_stack_depth());
}

/* The current stack from the program's call site outwards; the call site alone where the
 * stack is short of room for the unwind (asked before the frames that hold its arrays). */
uint32_t lt_stack_here(uintptr_t from_ra)
{
    if (!lt_callsite_may_unwind(lt_tls.self, from_ra))
        return from_ra ? lt_stack_intern(&from_ra, 1) : 0;
    return stack_unwound(from_ra);
}

/* The calling thread's whole stack from its call at (ra, cfa), as lt_stack_here finds it,
 * but read through the site table (callsite.c) where that knows every frame: a few loads a
 * frame instead of an unwind. Blocking waits take it (a thread pool's workers wait over and
 * over from the same frames). */
static __attribute__((noinline)) uint32_t stack_walked(lt_thread *t, uintptr_t ra,
                                                       uintptr_t cfa)
{
    uintptr_t ips[MAX_FRAMES];
    size_t n = lt_callsite_stack(t, ra, cfa, ips, lt_stack_depth());
    return n ? lt_stack_intern(ips, n) : stack_unwound(ra);
}

uint32_t lt_stack_whole(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    return lt_callsite_may_unwind(t, ra) ? stack_walked(t, ra, cfa) : lt_stack_here(ra);
}

/* The call site ra and its callers[0 .. nc), interned: from the calling thread's cache of
 * those it interned lately, else from the depot. A program takes its locks from few call
 * sites, and a walk that is new (another frame, another caller) often finds frames the thread
 * met before: the cache spares the depot its hashing, bucket walk and compare, and the frames
 * their copy (ids never change, so a slot never goes stale). */
static uint32_t intern_recorded(lt_thread *t, uintptr_t ra, const uintptr_t *callers, size_t nc)
{
    uint64_t x = (ra ^ (nc ? callers[nc - 1] << 7 : 0) ^ nc) * 0x9E3779B97F4A7C15ull;
    lt_site_slot *s = &t->sites[(x >> 32) % LT_SITE_SLOTS];
    size_t i = 0;
    if (s->id && s->n == nc + 1 && s->ips[0] == ra)
        while (i < nc && s->ips[i + 1] == callers[i])
            i++;
    if (s->id && s->n == nc + 1 && s->ips[0] == ra && i == nc)
        return s->id;
    uintptr_t out[1 + LT_CALLERS_MAX];
    out[0] = ra;
    memcpy(out + 1, callers, nc * sizeof *out);
    uint32_t id = lt_stack_intern(out, nc + 1);
    if (id) {
        s->id = id;
        s->n = (uint32_t)nc + 1;
        memcpy(s->ips, out, (nc + 1) * sizeof *out);
    }
    return id;
}

/*
 * The stack of an earlier acquisition taken lazily (held entry h: its call site and the
 * callers callsite.c recorded, interned as h->site), given a stack `under` this thread has
 * now. The recorded frames are right as far as they go. Beyond them the current stack is
 * used only where it returns to the outermost recorded call site exactly once and, inside
 * that frame, has moved on from the recorded frames (another call site at some depth): the
 * frame that made the outermost call is then still at it, so its callers are the ones it had.
 * Where the current frames are the recorded ones, call site for call site, the lock call is
 * being made again from the same place: by the same frames (a loop) or by new ones that other
 * callers made (a lock leaked by a call that has returned, then taken again through the same
 * helpers), which return addresses cannot tell apart; the stack is whole only if the recorded
 * frames reach the bottom of the current one. A call site alone (no caller recorded) is never
 * joined to the current stack: a shared helper that took this lock and now takes another one
 * sits at the same call site with other callers. Otherwise the recorded frames alone,
 * *partial = 1.
 */
uint32_t lt_stack_lazy(const lt_held *h, uint32_t under, int *partial)
{
    uintptr_t out[LT_STACK_MAX];
    size_t k = h->site && under ? lt_stack_join(h, under, out, partial) : 0;
    if (!k)
        *partial = 1;
    if (*partial)
        return h->site ? h->site : lt_stack_intern(&h->ra, 1);
    return lt_stack_intern(out, k);
}

/* lt_stack_lazy's frames into out (LT_STACK_MAX of room), without the depot's locks: a thread
 * dump made in a signal handler joins a waiting thread's held entries to its wait stack. The
 * recorded frames alone when *partial. */
size_t lt_stack_join(const lt_held *h, uint32_t under, uintptr_t *out, int *partial)
{
    size_t nr = 0, n = 0, at = 0, matches = 0, k = 0;
    const uintptr_t *rec = h->site ? lt_stack_get(h->site, &nr) : NULL;
    const uintptr_t *ips = nr > 1 && under ? lt_stack_get(under, &n) : NULL;
    for (size_t j = 0; ips && j < n; j++)
        if (ips[j] == rec[nr - 1] && matches++ == 0)
            at = j;
    size_t same = 0;
    while (matches == 1 && same + 1 < nr && same < at && rec[nr - 2 - same] == ips[at - 1 - same])
        same++;
    *partial = matches != 1 || (same + 1 == nr && (at + 1 < n || n >= lt_stack_depth()));
    if (!rec)
        out[k++] = h->ra;
    for (size_t i = 0; i < nr; i++)
        out[k++] = rec[i];
    for (size_t j = at + 1; !*partial && j < n && k < lt_stack_depth(); j++)
        out[k++] = ips[j];
    return k;
}

/* The call site ra and the callers[0 .. n) walk w found (w NULL: a walk not kept), interned,
 * and the id kept with the walk (a new one too: the next acquisition there then finds it),
 * which the other threads may then take (callsite.c: shared walks). */
static uint32_t site_of_walk(lt_thread *t, uintptr_t ra, lt_walk *w, const uintptr_t *callers,
                             size_t n)
{
    if (w && w->stack)
        return w->stack; /* another thread's walk (callsite.c: shared walks) */
    uint32_t id = intern_recorded(t, ra, callers, n);
    if (w && id) {
        w->stack = id;
        lt_callsite_share(t, w);
    }
    return id;
}

/* lt_stack_site_lazy (stack.h) when no walk of the thread's from (ra, cfa) holds with an id:
 * the callers found by a walk that holds, or a new one (kept if it can be). */
uint32_t lt_stack_site_new(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    uintptr_t callers[LT_CALLERS_MAX];
    size_t n;
    lt_walk *w = lt_callsite_held_walk(t, ra, cfa, callers, &n);
    return site_of_walk(t, ra, w, callers, n);
}

uint32_t lt_stack_site_unheld(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    uintptr_t callers[LT_CALLERS_MAX];
    size_t n;
    lt_walk *w = lt_callsite_new_walk(t, ra, cfa, callers, &n);
    return site_of_walk(t, ra, w, callers, n);
}

LT_FORK_PATH void lt_stack_fork(lt_fork_phase phase)
{
    if (lt_fork_alone())
        return; /* (lt_spin_fork: none taken; not a call for each stripe) */
    if (phase != LT_FORK_PREPARE)
        lt_spin_fork(&arena_lock, phase);
    for (int i = 0; i < STRIPES; i++)
        lt_spin_fork(&stripes[phase == LT_FORK_PREPARE ? i : STRIPES - 1 - i], phase);
    if (phase == LT_FORK_PREPARE)
        lt_spin_fork(&arena_lock, phase);
}
