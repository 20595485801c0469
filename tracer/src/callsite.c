/*
 * callsite.c - the frames of the program's lock calls, learnt once per call site, so that a
 * lazily captured acquisition records its callers with a few loads instead of an unwind.
 *
 * A lazy held entry knows the call site (return address `ra`) and the calling frame's stack
 * pointer (`cfa`). At a given return address the calling function's frame has one size (for
 * all functions without alloca or variable-length arrays) and keeps its own return address at
 * one offset from its stack pointer. The first time a return address is seen, a full unwind
 * measures both for every frame of the stack (the table below keeps them, keyed by return
 * address). From then on a walk reads the callers' return addresses straight from the stack:
 * ra -> frame -> its return address -> its frame -> ... A site whose frame was measured with
 * two sizes is marked variable and ends the walk there.
 *
 * Reads stay inside the calling thread's stack (bounds taken when the thread starts); a
 * thread whose bounds are unknown, or a lock call on another stack (coroutines, a signal
 * stack), records the call site alone. A stale or wrong site entry can make a walk read a
 * wrong word, never an unmapped one: lt_stack_lazy (stack.c) accepts recorded callers as a
 * whole stack only when they join the current stack at the same call site.
 *
 * Lock wrappers (wrappers.c: std::mutex::lock, g_rw_lock_reader_lock, the program's own
 * helpers named in LOCKTRACE_WRAPPERS) are frames of their own when not inlined. A walk counts
 * its LT_CALLERS callers from the first frame that is not one, so the earlier acquisition of a
 * report reaches the program's function. Whether a site's function is a wrapper is asked once
 * per site, at the first walk that reaches it while still among wrappers, and kept in its flags.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define SITE_BITS 16
#define SITES (1u << SITE_BITS)
#define PROBES 32
#define UNWIND_MAX 256
#define FRAME_MAX (1u << 20) /* a frame larger than this is not measured (signal frames) */
#define DECIDE_ROOM (48u * 1024)

/* SITE_END: no caller could be measured (the outermost frame, a signal frame); SITE_OUTER:
 * the last frame an unwind found, where a stack ends.
 * SITE_DECIDED: whether the site's function is a lock wrapper is known: SITE_WRAPPER. */
enum {
    SITE_READY = 1, SITE_VARIABLE = 2, SITE_NO_SLOT = 4, SITE_END = 8,
    SITE_DECIDED = 16, SITE_WRAPPER = 32, SITE_OUTER = 64
};

/* One call site: the frame holding return address pc is `size` bytes (its stack pointer at
 * the call to its caller's stack pointer) and keeps its own return address at sp + ra_off. */
typedef struct site {
    _Atomic uintptr_t pc; /* 0 = free; claimed once, never changes after */
    uint32_t size, ra_off;
    _Atomic uint32_t flags;
} site;

static void *_Atomic table; /* SITES sites */
static _Atomic int full_said;

/* The table at *at, of size bytes, mapped by the first thread that needs it (a loser of the
 * race unmaps its copy). */
static void *mapped(void *_Atomic *at, size_t size)
{
    void *t = atomic_load_explicit(at, memory_order_acquire), *fresh;
    if (t || !(fresh = lt_platform_map(size)))
        return t;
    if (atomic_compare_exchange_strong(at, &t, fresh))
        return fresh;
    lt_platform_unmap(fresh, size);
    return t;
}

static site *sites(void)
{
    return mapped(&table, SITES * sizeof(site));
}

static size_t site_hash(uintptr_t pc)
{
    return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> (64 - SITE_BITS));
}

/* The ready entry of pc, NULL when unknown. Lock-free: entries are only ever added. */
static site *site_find(uintptr_t pc)
{
    site *t = atomic_load_explicit(&table, memory_order_acquire);
    for (size_t i = 0, h = site_hash(pc); t && i < PROBES; i++) {
        site *s = &t[(h + i) & (SITES - 1)];
        uintptr_t at = atomic_load_explicit(&s->pc, memory_order_acquire);
        if (at == pc)
            return atomic_load_explicit(&s->flags, memory_order_acquire) & SITE_READY ? s : NULL;
        if (at == 0)
            return NULL;
    }
    return NULL;
}

/* The entry of pc, claimed when new (*fresh = 1); NULL when the table is full. */
static site *site_claim(uintptr_t pc, int *fresh)
{
    site *t = sites();
    *fresh = 0;
    for (size_t i = 0, h = site_hash(pc); t && i < PROBES; i++) {
        site *s = &t[(h + i) & (SITES - 1)];
        /* Read before claiming: a compare-exchange writes its line even when it fails,
         * which copies the page in a forked child and takes the line from other threads. */
        uintptr_t at = atomic_load_explicit(&s->pc, memory_order_acquire);
        if (at == pc)
            return s;
        if (at == 0 && atomic_compare_exchange_strong(&s->pc, &at, pc)) {
            *fresh = 1;
            return s;
        }
        if (at == pc)
            return s;
    }
    if (t && !atomic_exchange(&full_said, 1))
        lt_report_degraded("call-site table full: new lock call sites record the call site only");
    return NULL;
}

/* Where in [lo, hi) the word `value` lies, searched from the top; -1 when nowhere. */
static long slot_of(uintptr_t lo, uintptr_t hi, uintptr_t value)
{
    for (uintptr_t a = (hi & ~(uintptr_t)7) - sizeof(uintptr_t); a >= lo; a -= sizeof(uintptr_t))
        if (*(const uintptr_t *)a == value)
            return (long)(a - lo);
    return -1;
}

/* A frame at pc whose caller the unwind could not measure: walks stop there. `outer`: the
 * unwind ended with it. */
static void learn_end(uintptr_t pc, int outer)
{
    int fresh;
    site *s = site_claim(pc, &fresh);
    if (s && fresh)
        atomic_store_explicit(&s->flags, SITE_READY | SITE_END | (outer ? SITE_OUTER : 0),
                              memory_order_release);
}

/* Records what a frame (calling at sp, returning to ret at caller_sp) says about its site. */
static void learn(uintptr_t pc, uintptr_t sp, uintptr_t caller_sp, uintptr_t ret)
{
    int fresh;
    if (caller_sp <= sp || caller_sp - sp >= FRAME_MAX) {
        learn_end(pc, 0);
        return;
    }
    site *s = site_claim(pc, &fresh);
    if (!s)
        return;
    uint32_t size = (uint32_t)(caller_sp - sp);
    if (!fresh) { /* measured before: a different size means a frame of variable size */
        uint32_t f = atomic_load_explicit(&s->flags, memory_order_acquire);
        if ((f & SITE_READY) && !(f & SITE_VARIABLE) && s->size != size)
            atomic_fetch_or(&s->flags, SITE_VARIABLE);
        return;
    }
    long off = slot_of(sp, caller_sp, ret);
    s->size = size;
    s->ra_off = off < 0 ? 0 : (uint32_t)off;
    atomic_store_explicit(&s->flags, SITE_READY | (off < 0 ? SITE_NO_SLOT : 0),
                          memory_order_release);
}

/* A full unwind from here measures every frame from the call site (ra, cfa) outwards. */
static __attribute__((noinline)) void learn_unwound(uintptr_t ra, uintptr_t cfa)
{
    lt_frame f[UNWIND_MAX];
    size_t n = lt_platform_unwind(f, UNWIND_MAX), j = 0;
    while (j < n && !(f[j].ip == ra && f[j].sp == cfa))
        j++;
    for (; j + 1 < n; j++)
        learn(f[j].ip, f[j].sp, f[j + 1].sp, f[j + 1].ip);
    if (j < n && n < UNWIND_MAX)
        learn_end(f[j].ip, 1);
}

/* None where the tracer may not unwind: a later walk learns them. */
static void learn_stack(uintptr_t ra, uintptr_t cfa)
{
    if (lt_callsite_may_unwind(lt_tls.self, ra))
        learn_unwound(ra, cfa);
}

/* Decides whether site s is in a lock wrapper (the first walk that asks); its flags after,
 * without SITE_DECIDED when that is not known yet. Finding the function reads the object's
 * symbol table and /proc/self/maps, about 20 KiB of stack: a thread with less left than
 * DECIDE_ROOM (made with a small stack) leaves the question to a later walk. */
static __attribute__((noinline)) uint32_t site_decide(const lt_thread *t, site *s)
{
    if (lt_callsite_room(t) < DECIDE_ROOM)
        return atomic_load_explicit(&s->flags, memory_order_relaxed);
    int state; /* reading files: cancellation points inside a lock call (see platform) */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    int w = lt_wrapper_at(atomic_load_explicit(&s->pc, memory_order_relaxed));
    pthread_setcancelstate(state, NULL);
    uint32_t add = w < 0 ? 0 : SITE_DECIDED | (w ? SITE_WRAPPER : 0);
    return atomic_fetch_or(&s->flags, add) | add;
}

/* In the thread's own stack, from its bounds; in its alternate signal stack (a handler's, as
 * small as SIGSTKSZ, 8 KiB, where an unwind at a new lock order overflowed it: lim11), from
 * that stack's base, asked of the kernel only off the thread's own stack; SIZE_MAX in a stack
 * of the program's own (a coroutine's), whose bounds are not known. */
__attribute__((noinline)) size_t lt_callsite_room(const lt_thread *t)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), lo;
    if (t && t->stack_lo && sp >= t->stack_lo && sp < t->stack_hi)
        return sp - t->stack_lo;
    return lt_platform_altstack_base(sp, &lo) ? sp - lo : SIZE_MAX;
}

int lt_callsite_may_unwind(const lt_thread *t, uintptr_t ra)
{
    return lt_callsite_room(t) >= LT_UNWIND_ROOM && !lt_platform_in_unwinder(ra);
}

void lt_callsite_thread_init(int made)
{
    uintptr_t lo, hi;
    lt_thread *t = lt_tls.self;
    if (t && lt_platform_stack_bounds(made, &lo, &hi) == 0) {
        t->stack_lo = lo;
        t->stack_hi = hi;
    }
    if (t)
        lt_thread_walks_settle(t);
}

/* Walk w's own line from its frames f: its check reads no more when the walk has 1 to
 * LT_WALK_NEAR callers, each slot a word within 512 KiB of cfa (lt_walk). The check makes all
 * LT_WALK_NEAR of them (callsite.h: lt_callsite_holds), so those past the callers repeat the
 * first. A walk with no callers has nothing to check (and is not near). */
static void walk_near(lt_walk *w, const lt_walk_frames *f)
{
    int near = w->n >= 1 && w->n <= LT_WALK_NEAR;
    for (uint32_t i = 0; near && i < LT_WALK_NEAR; i++) {
        const lt_walk_frame *at = &f->frame[i < w->n ? i : 0];
        uintptr_t off = at->slot - w->cfa;
        near = off % sizeof(uintptr_t) == 0 && off / sizeof(uintptr_t) <= UINT16_MAX;
        w->near_off[i] = (uint16_t)(off / sizeof(uintptr_t));
        w->near_caller[i] = at->caller;
    }
    w->near = (uint8_t)near;
}

/*
 * Walks shared by the process's threads. A thread keeps its last LT_WALKS walks, too few for a
 * thread that takes its locks from hundreds of places: an OpenSSL handshake takes ~830 locks
 * through CRYPTO_THREAD_read_lock in ~530 distinct walks (a wrapper and 4 callers), and each
 * of stunnel's connection threads made ~620 new walks, ~675 instructions each with the stack
 * interned: half of the tracer's ~1,300 instructions a lock pair there (srv18). Taking a
 * shared walk costs ~410 (stunnel: 1.27x -> 1.20x native instructions). Another thread that
 * ran the same code from the same frames has made that walk, and a walk is the same in any
 * thread whose stack holds the same words at the same places: each frame's size and slot come
 * from the site table, which is the process's, and a walk reads the words above its call's
 * stack pointer only, up to its thread's stack top, where it also stops. So a walk is shared
 * as offsets from the call's stack pointer, found by its call site, its distance from the
 * stack top (the same code run from a thread's start function finds the same distance in every
 * thread with that stack size) and its first caller (the callers of a shared lock helper
 * differ there), and taken where the words at all its slots are its callers, as a thread's own
 * walk is (lt_callsite_holds). An entry is written once and never changes (readers take no
 * lock); a full table shares no more walks.
 */
#define SHARED_BITS 13
#define SHARED (1u << SHARED_BITS)
#define SHARED_PROBES 8
#define SHARED_CALLERS 8 /* a walk with more callers is not shared */

typedef struct shared_walk {
    lt_walk walk;            /* the walk as its thread kept it: all but cfa and frames hold
                                for any thread (near_off counts from cfa) */
    _Atomic uintptr_t ra;    /* 0 = free; claimed once */
    _Atomic uint32_t ready;  /* the rest is written */
    uintptr_t top;           /* the thread's stack top - cfa */
    uint32_t slot[SHARED_CALLERS], sp[SHARED_CALLERS]; /* frame i's, bytes above cfa */
    uintptr_t caller[SHARED_CALLERS];
} shared_walk;

static void *_Atomic shared_table; /* SHARED shared walks, mapped by the first to share one */

static size_t shared_hash(uintptr_t ra, uintptr_t top, uintptr_t first)
{
    uint64_t x = (ra ^ (top << 24) ^ (first * 0x9E3779B97F4A7C15ull)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> (64 - SHARED_BITS));
}

/* The first caller a walk from (ra, cfa) in t reads, 0 when it reads none (a site not learnt,
 * or one that ends walks): the walks that find none cost no more than this look. */
static uintptr_t first_caller(const lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    site *s = site_find(ra);
    if (!s || (atomic_load_explicit(&s->flags, memory_order_relaxed) &
               (SITE_VARIABLE | SITE_NO_SLOT | SITE_END)))
        return 0;
    uintptr_t slot = cfa + s->ra_off;
    if (slot + sizeof(uintptr_t) > t->stack_hi || cfa + s->size > t->stack_hi)
        return 0;
    return *(const uintptr_t *)slot;
}

/* The shared walk from (ra, cfa) whose words hold in t, NULL when none does. */
static const shared_walk *shared_find(const lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    shared_walk *walks = atomic_load_explicit(&shared_table, memory_order_acquire);
    uintptr_t first, top = t->stack_hi - cfa;
    if (!walks || cfa < t->stack_lo || cfa >= t->stack_hi ||
        !(first = first_caller(t, ra, cfa)))
        return NULL;
    for (size_t i = 0, h = shared_hash(ra, top, first); i < SHARED_PROBES; i++) {
        const shared_walk *e = &walks[(h + i) & (SHARED - 1)];
        uintptr_t at = atomic_load_explicit(&e->ra, memory_order_acquire);
        if (at == 0)
            return NULL;
        if (at != ra || !atomic_load_explicit(&e->ready, memory_order_acquire) ||
            e->top != top || e->caller[0] != first)
            continue;
        uint32_t k = 1;
        while (k < e->walk.n && *(const uintptr_t *)(cfa + e->slot[k]) == e->caller[k])
            k++;
        if (k == e->walk.n)
            return e;
    }
    return NULL;
}

/* t's walk w takes the shared walk e from cfa: its frames, callers (into out too) and
 * interned stack. */
static size_t shared_take(lt_thread *t, lt_walk *w, const shared_walk *e, uintptr_t cfa,
                          uintptr_t *out)
{
    uint8_t frames = w->frames;
    *w = e->walk;
    w->cfa = cfa;
    w->frames = frames;
    lt_walk_frames *f = lt_callsite_frames(t, w);
    for (uint32_t i = 0; i < w->n; i++) {
        f->frame[i].slot = cfa + e->slot[i];
        f->frame[i].caller = out[i] = e->caller[i];
        f->sp[i] = cfa + e->sp[i];
    }
    return w->n;
}

void lt_callsite_share(lt_thread *t, const lt_walk *w)
{
    uintptr_t ra = w->ra, cfa = w->cfa;
    if (w->n == 0 || w->n > SHARED_CALLERS || !w->stack || cfa < t->stack_lo ||
        cfa >= t->stack_hi)
        return;
    const lt_walk_frames *f = lt_callsite_frames(t, w);
    shared_walk *walks = mapped(&shared_table, SHARED * sizeof(shared_walk));
    uintptr_t top = t->stack_hi - cfa, first = f->frame[0].caller;
    for (size_t i = 0, h = shared_hash(ra, top, first); walks && i < SHARED_PROBES; i++) {
        shared_walk *e = &walks[(h + i) & (SHARED - 1)];
        /* Read before claiming (as site_claim does): a failed compare-exchange writes. */
        uintptr_t at = atomic_load_explicit(&e->ra, memory_order_relaxed);
        if (at != 0 || !atomic_compare_exchange_strong(&e->ra, &at, ra))
            continue;
        e->walk = *w;
        e->top = top;
        for (uint32_t k = 0; k < w->n; k++) {
            e->slot[k] = (uint32_t)(f->frame[k].slot - cfa);
            e->sp[k] = (uint32_t)(f->sp[k] - cfa);
            e->caller[k] = f->frame[k].caller;
        }
        atomic_store_explicit(&e->ready, 1, memory_order_release);
        return;
    }
}

/*
 * The walk. Frame i of the walk returns to pc[i] (pc[0] = ra) and calls from sp[i]
 * (sp[0] = cfa); its return address lies at slot[i] = sp[i] + ra_off(pc[i]) and its caller
 * calls from sp[i + 1] = sp[i] + size(pc[i]). A thread repeats the same walks (a loop takes
 * locks at the same sites from the same frames), so each thread keeps its last walks, and
 * lt_callsite_callers (callsite.h) reuses one while the words at its slots still hold
 * the same return addresses: the frames are then the same and the walk would end where it
 * ended. This goes on from caller `from` (the first that differs, or 0 for a new walk).
 * Frames 0 .. k-1 of a walk are wrappers (k <= LT_WRAPPER_FRAMES), frame k is not: the walk
 * ends at caller k + LT_CALLERS. A walk that met a site not decided yet is not kept.
 */
size_t lt_callsite_walk(lt_thread *t, lt_walk *w, size_t from, uintptr_t ra, uintptr_t cfa,
                        uintptr_t *out)
{
    size_t n = from, k = w->wrappers < from ? w->wrappers : from, limit = k + LT_CALLERS;
    int learned = 0, open = k == from, undecided = 0;
    lt_walk_frames *f = lt_callsite_frames(t, w);
    uintptr_t pc = n ? out[n - 1] : ra, sp = n ? f->sp[n - 1] : cfa;
    if (n)
        f->frame[n - 1].caller = pc; /* read by the caller: frame n - 1 returns elsewhere now */
    w->ra = ra;
    w->cfa = cfa;
    w->stack = 0;
    while (cfa >= t->stack_lo && cfa < t->stack_hi) {
        site *s = site_find(pc);
        if (!s && !learned) { /* a site not seen yet: measure the whole stack once */
            learn_stack(ra, cfa);
            learned = 1;
            if (!(s = site_find(pc)) && pc == ra)
                learn_end(ra, 0); /* not found by the unwind: do not try at every call */
        }
        if (!s)
            break;
        uint32_t flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
        if (open) { /* frames 0 .. n-1 are wrappers: is frame n one too? */
            if (lt_unlikely(!(flags & SITE_DECIDED)))
                undecided |= !((flags = site_decide(t, s)) & SITE_DECIDED);
            if ((flags & SITE_WRAPPER) && n < LT_WRAPPER_FRAMES)
                limit = (k = n + 1) + LT_CALLERS;
            else
                open = 0;
        }
        if (n >= limit || (flags & (SITE_VARIABLE | SITE_NO_SLOT | SITE_END)))
            break;
        uintptr_t slot = sp + s->ra_off;
        if (slot + sizeof(uintptr_t) > t->stack_hi || sp + s->size > t->stack_hi)
            break;
        f->frame[n].slot = slot;
        pc = f->frame[n].caller = out[n] = *(const uintptr_t *)slot;
        sp = f->sp[n] = sp + s->size;
        n++;
    }
    w->n = (uint8_t)n;
    w->wrappers = (uint8_t)k;
    walk_near(w, f);
    if (undecided)
        w->ra = 0; /* ask again at the next call */
    return n;
}

int lt_callsite_outermost(uintptr_t pc)
{
    const site *s = site_find(pc);
    return s && (atomic_load_explicit(&s->flags, memory_order_relaxed) & SITE_OUTER);
}

/* The walk of lt_callsite_stack, once; *unknown = 1 when it stopped at a site not learnt. */
static size_t stack_walk(const lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out,
                         size_t max, int *unknown)
{
    uintptr_t pc = ra, sp = cfa;
    *unknown = 0;
    for (size_t n = 0; n < max;) {
        site *s = sp >= t->stack_lo && sp < t->stack_hi ? site_find(pc) : NULL;
        if (!s) {
            *unknown = sp >= t->stack_lo && sp < t->stack_hi;
            return 0;
        }
        uint32_t flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
        out[n++] = pc;
        if (flags & SITE_OUTER)
            return n;
        if (flags & (SITE_VARIABLE | SITE_NO_SLOT | SITE_END))
            return 0;
        uintptr_t slot = sp + s->ra_off;
        if (slot + sizeof(uintptr_t) > t->stack_hi || sp + s->size > t->stack_hi)
            return 0;
        pc = *(const uintptr_t *)slot;
        sp += s->size;
    }
    return max;
}

/* The calling thread's whole stack from the call site (ra, cfa) outwards into out (out[0] =
 * ra), at most max frames, read through the site table: a few loads a frame where an unwind
 * costs microseconds. The frames are the unwind's only where the table knows every one of
 * them to the frame an unwind ended with (SITE_OUTER): else 0, after one unwind that teaches
 * it the sites it did not know. */
size_t lt_callsite_stack(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out, size_t max)
{
    int unknown;
    size_t n = stack_walk(t, ra, cfa, out, max, &unknown);
    if (n || !unknown)
        return n;
    learn_stack(ra, cfa);
    return stack_walk(t, ra, cfa, out, max, &unknown);
}

/* How many of t's walk w's callers still hold (each read into out), up to the first that
 * differs. */
static size_t still_holds(lt_thread *t, const lt_walk *w, uintptr_t *out)
{
    const lt_walk_frame *f = lt_callsite_frames(t, w)->frame;
    size_t n = 0;
    while (n < w->n && (out[n] = *(const uintptr_t *)f[n].slot) == f[n].caller)
        n++;
    return n;
}

/* None of the thread's walks from (ra, cfa) holds. The set's next way in turn takes the new
 * walk (its other walks stay: they are the other callers of a shared lock helper), which
 * goes on from the walk from (ra, cfa) that holds longest: the frames up to where it differs
 * are the same. Each walk checked read its words into out up to where it differs, and all
 * read the same slots up to there, so out holds what the longest one read. Returns the new
 * walk (its *n callers in out), or NULL when it is not kept (lt_callsite_walk). */
lt_walk *lt_callsite_new_walk(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out,
                              size_t *n)
{
    lt_walk *set = lt_callsite_set(t, ra, cfa), *best = NULL;
    size_t from = 0, k = (size_t)(set - t->walks) / LT_WALK_WAYS;
    const shared_walk *e = shared_find(t, ra, cfa);
    if (e) {
        lt_walk *w = &set[t->walk_next[k]++ % LT_WALK_WAYS];
        if (!w->frames)
            w->frames = ++t->walk_frames_used;
        *n = shared_take(t, w, e, cfa, out);
        return w;
    }
    for (lt_walk *w = set; w < set + LT_WALK_WAYS; w++) {
        size_t held;
        if (w->ra == ra && w->cfa == cfa && (held = still_holds(t, w, out)) >= from &&
            held < w->n) {
            best = w;
            from = held + 1;
        }
    }
    lt_walk *w = &set[t->walk_next[k]++ % LT_WALK_WAYS];
    if (!w->frames) /* a way's first walk: frames next to the last ones given (a thread of
                       a few call sites writes a page of them, not one a walk) */
        w->frames = ++t->walk_frames_used;
    if (best && w != best) {
        lt_walk_frames *to = lt_callsite_frames(t, w), *old = lt_callsite_frames(t, best);
        memcpy(to->frame, old->frame, from * sizeof to->frame[0]);
        memcpy(to->sp, old->sp, from * sizeof to->sp[0]);
        w->wrappers = best->wrappers;
    }
    *n = lt_callsite_walk(t, w, from, ra, cfa, out);
    return w->ra == ra ? w : NULL;
}

/* Do frames f have the callers out[0 .. n)? */
static int walk_found(const lt_walk_frames *f, const uintptr_t *out, size_t n)
{
    size_t k = 0;
    while (k < n && f->frame[k].caller == out[k])
        k++;
    return k == n;
}

const lt_walk_frames *lt_callsite_walk_of(lt_thread *t, uintptr_t ra, uintptr_t cfa,
                                          const uintptr_t *out, size_t n)
{
    const lt_walk *w = lt_callsite_set(t, ra, cfa);
    for (size_t i = 0; i < LT_WALK_WAYS; i++, w++)
        if (w->ra == ra && w->cfa == cfa && w->n == n &&
            walk_found(lt_callsite_frames(t, w), out, n))
            return lt_callsite_frames(t, w);
    return NULL;
}
