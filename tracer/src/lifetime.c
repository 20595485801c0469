/*
 * lifetime.c - a lock's identity lives and dies with its memory.
 *
 * Most locks are never initialised or destroyed by a call (static initialisers, zeroed
 * memory, std::mutex): their identity ends when the memory that holds them is released.
 * interpose.c hands over every free, realloc (the old block), munmap and mremap whose range
 * the lock map says may hold a known lock, before the memory goes back; thread.c hands over
 * an exiting thread's stack. Each known lock in the range is forgotten the way destroy forgets
 * one: its order-graph node and edges, its statistics, its shadow entry (annotation,
 * first-seen stack, orphan mark; the entry is recycled under a new generation, so cached
 * (entry, gen) pairs, wait slots and other threads' held entries go stale instead of
 * naming a new lock at the same address). The entry a destroyed lock left behind for its
 * address's next init (shadow.c) goes too, and with it the address's place in the lock map.
 *
 * A lock that some thread still holds when its memory is released is a use after free
 * waiting to happen: the holder will unlock freed memory. That is the free-held finding,
 * reported (LOCKTRACE_FREE_HELD) with the release's stack, the holder and where it took the
 * lock, before the lock is forgotten. The holder's entry goes stale, the releasing thread's
 * own as another holder's, and is dropped at its unlock (the unlock the report foretells is
 * no second finding: the releasing thread's own entry used to leave its held set at once,
 * so its unlock of the freed memory was a bad-unlock too, where free had overwritten the
 * owner in the mutex's word) or at its thread's exit (lt_drop_stale).
 *
 * A lock in a thread's stack (a local std::mutex, a PTHREAD_MUTEX_INITIALIZER in a frame)
 * dies when its frame returns, which no call tells. When the thread takes such a lock, the
 * frame that holds it is found among the callers of the lock call (callsite.c's walk) and
 * compared with the frame that held it the last time: another frame (another function, or
 * the same one called from elsewhere) means the old lock is gone and is forgotten, silently,
 * before the request; otherwise its history (order edges) would join the new lock's and
 * make false inversions. The same function called again from the same call site (a loop)
 * has the same top and return address, so its new lock keeps the old one's history: nothing
 * the tracer sees tells the two calls apart (README, "Not followed").
 */
#define _GNU_SOURCE
#include "lifetime.h"

#include <string.h>

#include "callsite.h"
#include "platform.h"

#define BATCH 64 /* lock addresses listed from the lock map at a time */
#define FEW_SLOTS 2 /* locks of a released range that leave the lock map one at a time */
#define UNLOAD_NOTES 64   /* held locks noted before a dlclose; more are reported unnoted */
#define UNLOAD_MODULES 16 /* the objects that hold them */

/* What a lock held as dlclose began says of itself (its memory may be gone after). */
typedef struct unload_note {
    const void *addr;
    int mutex_type, writer_pref;
} unload_note;

struct lt_unloading {
    size_t nnotes, nmodules;
    unload_note notes[UNLOAD_NOTES];
    lt_module_span modules[UNLOAD_MODULES];
    int holds[UNLOAD_MODULES]; /* the module's span is reserved (lt_unload_hold) */
};

typedef struct release {
    lt_thread *t;
    uintptr_t lo, hi;
    lt_release how;
    uintptr_t ra;
    int report;     /* report held locks (not for a thread's own stack at exit) */
    int unloaded;   /* the memory is gone with its library (dlclose) */
    const lt_unloading *notes; /* what its held locks said as the unload began, or NULL */
} release;

/* u's note of the lock at addr, NULL when none. */
static const unload_note *note_of(const lt_unloading *u, const void *addr)
{
    for (size_t i = 0; u && i < u->nnotes; i++)
        if (u->notes[i].addr == addr)
            return &u->notes[i];
    return NULL;
}

static void report_free_held(const release *rel, const void *addr, const lt_lock *l,
                             uint32_t gen, const lt_held *mine, const lt_wait_step *other)
{
    lt_finding f = {.kind = LT_FIND_FREE_HELD, .why = LT_WHY_FREED};
    lt_kind kind = mine ? (lt_kind)mine->kind : LT_MUTEX;
    f.outcome = lt_cfg.free_held == LT_FREE_HELD_ABORT ? LT_OUTCOME_ABORT : LT_OUTCOME_CONTINUE;
    lt_thread_info_now(rel->t, &f.thread);
    f.lock = addr;
    f.generation = gen;
    if (other)
        kind = other->wants.kind;
    f.lock_kind = kind;
    f.object = lt_lock_object(l);
    if (rel->unloaded) {
        /* Its memory is gone, and maybe the describe function with it: what was noted as the
         * unload began; a lock not noted (taken since, by a destructor; or past the notes'
         * room) is named a normal mutex. */
        const unload_note *n = note_of(rel->notes, addr);
        f.mutex_type = n ? n->mutex_type : LT_MUTEX_NORMAL;
        f.writer_pref = n ? n->writer_pref : 0;
    } else {
        if (kind == LT_MUTEX)
            f.mutex_type = lt_platform_mutex_type(addr);
        if (kind == LT_RWLOCK)
            f.writer_pref = lt_platform_rwlock_prefers_writer(addr);
        f.describe = lt_lock_describe(l); /* the memory is still the program's: freed after */
    }
    f.first_stack = l->first_stack;
    f.first_partial = l->first_partial;
    f.request_stack = lt_stack_here(rel->ra);
    if (mine) {
        f.held_mode = (lt_mode)mine->mode;
        f.held_stack = mine->stack ? mine->stack
                                   : lt_stack_lazy(mine, f.request_stack, &f.held_partial);
    } else {
        f.other = &other->thread;
        f.held_mode = other->held_mode;
        f.held_stack = other->held_stack;
        f.held_partial = other->held_partial;
    }
    f.block = rel->lo;
    f.block_size = rel->hi - rel->lo;
    f.block_how = rel->how;
    lt_report(&f);
}

/* Who holds (l, gen): the releasing thread (*mine), or another thread (*other) whose hold the
 * lock confirms (an entry outlives libc's unlock a moment); 0 = nobody. The word of a lock
 * whose library is gone cannot be read: the tracer's own record confirms it then (the writer
 * leaves it before libc's unlock). */
static int held_by(const release *rel, const void *addr, const lt_lock *l, uint32_t gen,
                   lt_held **mine, lt_wait_step *other)
{
    lt_held *h = lt_held_find(rel->t, addr);
    *mine = h && h->lock == l && h->gen == gen ? h : NULL;
    if (*mine)
        return 1;
    return lt_holders_find(l, gen, rel->unloaded ? LT_CONFIRM_RECORD : LT_CONFIRM_WORD, other,
                           1) != 0;
}

/* Forgets the lock at addr (a slot address: a lock may start up to 3 bytes into it), or the
 * entry a destroyed one left there (shadow.c), but for its shadow entry: the address it
 * leaves is the caller's to forget (lt_shadow_forget), NULL when none. */
static const void *forget_slot(const release *rel, uintptr_t slot)
{
    for (uintptr_t a = slot; a < slot + 4; a++) {
        const void *addr = (const void *)a;
        lt_lock *l = lt_shadow_find(addr);
        if (!l)
            continue;
        if (lt_lock_addr(l) != addr)
            return addr;
        uint32_t gen = atomic_load(&l->gen);
        lt_held *mine = NULL;
        lt_wait_step other;
        memset(&other, 0, sizeof other);
        if (rel->report && held_by(rel, addr, l, gen, &mine, &other) &&
            lt_cfg.free_held != LT_FREE_HELD_OFF)
            report_free_held(rel, addr, l, gen, mine, mine ? NULL : &other);
        lt_order_forget(l, LT_ENDED_FREE);
        if (lt_unlikely(lt_cfg.stats)) /* else none has counters: their pointer is in the */
            lt_stats_forget(l, gen);    /* cold record, a page fault a page of freed locks */
        return addr;
    }
    return NULL;
}

/* The shadow entries go a batch at a time: a batch's locks mostly share a page, and so a
 * shard, whose lock is then taken once for all of them (a free of 25,000 locks took it
 * 25,000 times). */
static void forget_range(const release *rel)
{
    uintptr_t slots[BATCH];
    const void *gone[BATCH];
    uintptr_t from = rel->lo;
    size_t n;
    for (;;) {
        size_t k = 0;
        n = lt_lockmap_list(from, rel->hi, slots, BATCH);
        for (size_t i = 0; i < n; i++)
            if ((gone[k] = forget_slot(rel, slots[i])) != NULL)
                k++;
        lt_shadow_forget(gone, k);
        if (n < BATCH)
            break;
        from = slots[n - 1] + 4;
    }
    /* The listing named every lock of the range. A few leave one at a time: the ahead bytes
     * before each, back to the lock before it, where the range's clear looks at every word
     * of bits and every stripe of the range first (rsyslog frees a block of ~600 bytes with
     * one mutex in it per message: 573 instructions a free cleared it, 341 remove it). */
    if (from == rel->lo && n <= FEW_SLOTS)
        for (size_t i = 0; i < n; i++)
            lt_lockmap_remove((const void *)slots[i]);
    else
        lt_lockmap_clear(rel->lo, rel->hi);
}

void lt_memory_released(lt_thread *t, uintptr_t lo, uintptr_t hi, lt_release how, uintptr_t ra)
{
    release rel = {t, lo, hi, how, ra, 1, 0, NULL};
    forget_range(&rel);
}

/* [lo, hi) no longer holds the locks it held: they are forgotten, unreported. */
static void memory_gone(lt_thread *t, uintptr_t lo, uintptr_t hi)
{
    release rel = {t, lo, hi, LT_RELEASE_MUNMAP, 0, 0, 0, NULL};
    if (hi > lo)
        forget_range(&rel);
}

#ifndef __APPLE__ /* dlclose is followed on Linux only (interpose.c) */
/* The held locks found in the objects' spans, gathered under the registry lock: what they
 * say of themselves and where their objects are is asked after it. Small: dlclose may be
 * called from a thread with a small stack. */
typedef struct unload_found {
    const void *addr;
    const lt_lock *lock;
    uint8_t kind;
} unload_found;

typedef struct unload_query {
    const lt_object_data *objects;
    size_t nobjects;
    unload_found found[UNLOAD_NOTES];
    size_t n;
} unload_query;

/* Whether a lies in an object that may go: not the executable's (a program that holds a
 * lock of its own while it unloads a plugin, a common case, costs no notes). */
static int in_objects(const unload_query *q, uintptr_t a)
{
    for (size_t i = 0; i < q->nobjects; i++)
        if (!q->objects[i].program && a - q->objects[i].lo < q->objects[i].hi - q->objects[i].lo)
            return 1;
    return 0;
}

/* Notes h if it holds a lock in the objects; 1 (ends the walk) once the notes are full. */
static int note_held(const lt_held *h, void *arg)
{
    unload_query *q = arg;
    if (atomic_load(&h->lock->gen) == h->gen && in_objects(q, (uintptr_t)h->addr))
        q->found[q->n++] = (unload_found){h->addr, h->lock, h->kind};
    return q->n == UNLOAD_NOTES;
}

static void note_thread(lt_thread *t, void *arg)
{
    unload_query *q = arg;
    if (q->n < UNLOAD_NOTES)
        lt_held_walk_live(t, note_held, q);
}

lt_unloading *lt_unload_begin(const lt_object_data *objects, size_t n)
{
    unload_query q = {objects, n, {{0}}, 0};
    lt_thread_each(note_thread, &q);
    if (!q.n)
        return NULL;
    lt_unloading *u = lt_map(sizeof *u);
    if (!u)
        return NULL;
    for (size_t i = 0; i < q.n; i++) {
        const unload_found *h = &q.found[i];
        uintptr_t a = (uintptr_t)h->addr;
        if (note_of(u, h->addr))
            continue; /* read by two threads */
        unload_note *note = &u->notes[u->nnotes++];
        *note = (unload_note){h->addr, LT_MUTEX_NORMAL, 0};
        if (h->kind == LT_MUTEX)
            note->mutex_type = lt_lock_mutex_type(h->addr, h->lock);
        if (h->kind == LT_RWLOCK)
            note->writer_pref = lt_lock_prefers_writer(h->addr, h->lock);
        size_t m = 0;
        while (m < u->nmodules && a - u->modules[m].lo >= u->modules[m].hi - u->modules[m].lo)
            m++;
        if (m == u->nmodules && m < UNLOAD_MODULES &&
            lt_platform_module_span(a, &u->modules[m]))
            u->nmodules++;
    }
    return u;
}

void lt_unload_hold(lt_unloading *u)
{
    for (size_t i = 0; u && i < u->nmodules; i++)
        u->holds[i] = lt_platform_hold_hole(u->modules[i].lo, u->modules[i].hi) == 0;
}

void lt_unload_end(lt_unloading *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nmodules; i++)
        if (u->holds[i])
            lt_platform_release_hole(u->modules[i].lo, u->modules[i].hi);
    lt_platform_unmap(u, sizeof *u);
}

void lt_memory_unloaded(lt_thread *t, uintptr_t lo, uintptr_t hi, uintptr_t ra,
                        const lt_unloading *u)
{
    release rel = {t, lo, hi, LT_RELEASE_DLCLOSE, ra, 1, 1, u};
    if (u)
        lt_platform_modules_unloaded(u->modules, u->nmodules);
    forget_range(&rel);
    lt_platform_modules_unloaded(NULL, 0);
}

#endif

void lt_stack_released(lt_thread *t)
{
    memory_gone(t, lt_platform_stack_low(t->stack_lo, t->stack_hi), t->stack_hi);
}

void lt_frame_lock_seen(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa)
{
    uintptr_t a = (uintptr_t)addr, ret[LT_CALLERS_MAX];
    if (a < cfa)
        return; /* below the caller's stack pointer: in no frame */
    size_t n = lt_callsite_callers(t, ra, cfa, ret), i = 0;
    const lt_walk_frames *w = lt_callsite_walk_of(t, ra, cfa, ret, n);
    if (!w)
        return;
    while (i < n && a >= w->sp[i]) /* frame i spans [sp[i-1] (cfa for 0), sp[i]) */
        i++;
    if (i == n)
        return; /* held by a frame beyond the measured ones */
    lt_frame_lock *s = &t->frame_locks[lt_addr_hash(addr, LT_FRAME_LOCK_BITS)];
    if (s->addr == addr && (s->top != w->sp[i] || s->ret != ret[i])) {
        release rel = {t, a, a + 1, LT_RELEASE_MUNMAP, ra, 0, 0, NULL};
        forget_range(&rel);
    }
    *s = (lt_frame_lock){addr, w->sp[i], ret[i]};
}
