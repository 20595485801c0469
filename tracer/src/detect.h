/*
 * detect.h - the event API (detect.c) that interpose.c drives.
 */
#ifndef LT_DETECT_H
#define LT_DETECT_H

#include "classes.h"
#include "lt_internal.h"
#include "order.h"
#include "platform.h"
#include "stack.h"
#include "stats.h"

/* interpose.c calls these with the thread inside the tracer (lt_thread.busy set), so hooks may
 * take tracer locks, allocate and unwind freely. ev->addr/kind/mode/wait/ra/cfa and ev->self
 * are filled by interpose.c. New checkers (lock order, wait-for) hook in here:
 *   lt_before_lock   before libc, for every lock request; fills ev->lock (shadow entry) and
 *                    ev->held (this thread's entry for the lock, if any). Returns 0 to go on
 *                    or an errno (EDEADLK) that the call returns without calling libc.
 *   lt_wait_begin    the request found the lock busy and is about to block in libc; returns
 *                    0 to block or an errno (EDEADLK: the wait would close a deadlock);
 *   lt_wait_end      ... and came back (acquired, timed out or failed).
 *   lt_held_prepare  after lt_before_lock, for a request that does not block: the held
 *                    entry a grant makes, so that lt_held_commit adds it with a few stores
 *                    once libc granted the lock; otherwise ...
 *   lt_after_lock    libc's result; on success the lock joins the held set.
 *   lt_after_unlock  after libc's unlock; the lock leaves the held set if libc accepted it.
 *   lt_on_init, lt_on_destroy, lt_on_annotate, lt_cond_release/lt_cond_reacquire (around a
 *   condition wait), lt_on_thread_exit, lt_orphan_locks (exit and fork).
 * A finding is an lt_finding handed to lt_report (report.c). */
int lt_before_lock_slow(lt_event *ev);
int lt_wait_begin(lt_event *ev);
void lt_wait_end(lt_event *ev);
void lt_after_lock_unusual(lt_event *ev, int rc);
void lt_drop_stale(lt_thread *t);

/* An acquisition while other locks are held: the order graph and the class graph. A lock
 * another thread unlocked for this one is no longer held: no edge leads out of it. Inline
 * (in lt_after_lock_edges and lt_held_take): a call of its own cost each of `stressbench
 * groups`' locks 6 instructions. */
static inline void lt_after_lock_nested(lt_event *ev)
{
    if (lt_unlikely(atomic_load_explicit(&lt_foreign_unlocks, memory_order_relaxed)))
        lt_drop_stale(ev->self);
    lt_order_acquired(ev);
    if (lt_unlikely(lt_cfg.classes != LT_CLASSES_OFF))
        lt_classes_acquired(ev);
}
void lt_unlock_unusual(lt_event *ev, int rc);

/* The events every lock call runs are inline, each with its common case first: a known lock,
 * named through the interface it was last locked through, not orphaned, not held by this
 * thread, taken. Anything else goes to the out-of-line part, which does the whole check.
 * lt_lock_common fills ev->lock and ev->held and says whether the request is the common case,
 * which needs no check before libc is asked. */
static inline __attribute__((always_inline)) int lt_lock_common(lt_event *ev)
{
    lt_thread *t = ev->self;
    lt_frame_lock_check(t, ev->addr, ev->ra, ev->cfa);
    lt_lock *l = ev->lock = lt_shadow_get(t, ev->addr, ev->ra, ev->cfa);
    lt_held *h = ev->held = lt_held_find_lock(t, ev->addr, l, ev->kind, ev->api);
    return lt_likely(l != NULL) && lt_likely(!h) && lt_lock_plain(l, ev->api);
}

static inline int lt_before_lock(lt_event *ev)
{
    return lt_lock_common(ev) ? 0 : lt_before_lock_slow(ev);
}

/* The held entry of the acquisition ev makes: its call site and callers, whether edges lead
 * into it (a blocking request). Field by field: `since` is left to lt_stats_acquired. `lazy`:
 * LOCKTRACE_STACKS is lazy (the callers, not a full stack), a constant where the caller
 * knows it. */
static inline __attribute__((always_inline)) void lt_held_fill_call(const lt_event *ev,
                                                                  lt_held *h)
{
    h->addr = ev->addr;
    h->lock = ev->lock;
    h->gen = atomic_load_explicit(&ev->lock->gen, memory_order_relaxed);
    h->kind = (uint8_t)ev->kind;
    h->mode = (uint8_t)ev->mode;
    h->anchor = lt_anchor_of(ev->kind, ev->mode, lt_wait_orders(ev->wait));
    h->depth = 1;
    h->ra = ev->ra;
}

/* lt_held_fill of a lazy entry whose site the caller has (ev->site). */
static inline __attribute__((always_inline)) void lt_held_fill_site(const lt_event *ev,
                                                                  lt_held *h)
{
    lt_held_fill_call(ev, h);
    h->stack = 0;
    h->site = ev->site;
}

static inline __attribute__((always_inline)) void lt_held_fill(const lt_event *ev,
                                                             lt_held *h, int lazy)
{
    lt_held_fill_call(ev, h);
    if (lt_likely(lazy)) {
        h->stack = 0;
        h->site = lt_stack_site_lazy(ev->self, ev->ra, ev->cfa);
    } else {
        h->stack = lt_stack_here(ev->ra);
        h->site = 0;
    }
}

/* The granted lock is now in the held set as h: it names the lock's writer. `stats`:
 * LOCKTRACE_STATS is on, a constant where the caller knows it. */
static inline void lt_held_granted(lt_event *ev, lt_held *h, int stats)
{
    if (ev->mode == LT_MODE_WRITE)
        atomic_store_explicit(&ev->lock->writer, ev->self->info.seq + 1, memory_order_relaxed);
    if (lt_unlikely(stats))
        lt_stats_acquired(ev, h);
}

/* The acquisition joins the held set, after its edges are in the order graph. */
static inline void lt_held_take(lt_event *ev)
{
    lt_thread *t = ev->self;
    if (t->nheld)
        lt_after_lock_nested(ev);
    lt_held *h = lt_held_push(t, ev->addr, ev->lock);
    if (lt_unlikely(!h))
        return;
    lt_held_fill(ev, h, lt_cfg.stacks == LT_STACKS_LAZY);
    lt_held_granted(ev, h, lt_cfg.stats);
}

/* Before libc is asked for a lock, in the common case (lt_lock_common, with a small held set
 * with room): the held entry a grant makes, filled in the set's spare slot. Once libc grants
 * the lock, lt_held_commit adds it with a few stores, so the program's critical section -
 * which other threads wait for, and which a preempted thread stretches - holds little of the
 * tracer's work. *edges: the acquisition may make a new order edge (or classes are on), for
 * lt_after_lock_edges to record before the entry joins the set (where a new edge sent the
 * request through lt_after_lock instead, `stressbench groups` filled its entry twice: ~120
 * instructions an acquisition). NULL: lt_after_lock does it all after the grant. Only for a
 * request that does not let go of the thread in between (a wait lets signal handlers lock,
 * and so use the spare slot). held_room lets no entry be prepared with LOCKTRACE_STATS or
 * LOCKTRACE_STACKS=full, so the entry is a lazy one without statistics. A nested one asks
 * the graph with the lock's memo of a known edge into it, in its cache slot (lt_cache_slot),
 * which only a nested acquisition reads: a lock's home (lt_shadow_get) needs no slot. The
 * graph is asked with the event's fields; *copy, ev as it is in memory with the call site's
 * stack, is made only for an acquisition whose edges are recorded after the grant
 * (lt_after_lock_edges): made before the question, it cost every nested acquisition ~26
 * instructions. */
static inline __attribute__((always_inline)) lt_held *lt_held_prepare(lt_event *ev,
                                                                     int *edges,
                                                                     lt_event *copy)
{
    lt_thread *t = ev->self;
    uint32_t pos = t->held_end;
    if (lt_unlikely(pos >= t->held_room))
        return NULL;
    *edges = 0;
    if (pos)
        *edges = lt_cfg.classes != LT_CLASSES_OFF ||
                 !lt_order_known(t, ev->lock, ev->mode, ev->wait,
                                 &lt_cache_slot_of(t, ev->addr)->known);
    lt_held *h = &t->held[pos];
    lt_held_fill(ev, h, 1);
    if (*edges) {
        *copy = *ev; /* ev itself stays in the caller's registers */
        copy->site = h->site; /* the new edge's description names it too (order.c) */
    }
    return h;
}

/* libc granted the lock lt_held_prepare prepared entry h for. Its writer is named through
 * h->lock (ev->lock, read back from the entry just written): ev's fields in registers were
 * kept through libc's try for this store, spilled and loaded again. */
static inline void lt_held_commit(lt_event *ev, lt_held *h)
{
    lt_held_append(ev->self);
    if (ev->mode == LT_MODE_WRITE)
        atomic_store_explicit(&h->lock->writer, ev->self->info.seq + 1, memory_order_relaxed);
}

void lt_after_lock_moved(lt_event *ev, lt_held *spare);

/* libc granted thread t the lock lt_held_prepare filled `spare` for, in mode, and the
 * acquisition (ev) may make order edges: they are recorded as lt_held_take records them, then
 * the entry joins the set. The hooks leave the slot beyond the set alone, but may shrink the
 * set (lt_drop_stale) or index it: the entry then goes where a push puts it (lt_after_lock_moved).
 * Inline, with t and mode apart from ev: the pthread entry points have them in a register and
 * as a constant, where a call of this part cost each of `stressbench groups`' locks 8
 * instructions (its frame, and ev's fields loaded again after the hooks). */
static inline __attribute__((always_inline)) void lt_after_lock_edges(lt_thread *t,
                                                                     lt_mode mode,
                                                                     lt_event *ev,
                                                                     lt_held *spare)
{
    if (t->nheld)
        lt_after_lock_nested(ev);
    if (lt_likely(lt_held_spare(t) == spare))
        lt_held_commit(&(lt_event){.self = t, .mode = mode}, spare);
    else
        lt_after_lock_moved(ev, spare);
}

/* rc is libc's result. */
static inline void lt_after_lock(lt_event *ev, int rc)
{
    if (lt_likely(rc == 0 && ev->lock && !ev->held))
        lt_held_take(ev);
    else
        lt_after_lock_unusual(ev, rc);
}

/* h's lock left write mode: it has no writer now - unless another thread took it since libc
 * let go (a compare-and-swap, so that thread stays its writer), or the shadow entry has moved
 * on to another identity (a recycled entry belongs to another address now). */
static inline void lt_writer_released(const lt_thread *t, const lt_held *h)
{
    int me = t->info.seq + 1;
    if (atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen)
        atomic_compare_exchange_strong_explicit(&h->lock->writer, &me, 0, memory_order_relaxed,
                                                memory_order_relaxed);
}

int lt_unlock_done_slow(lt_thread *t, const void *addr, int rc);

/* After libc's unlock of the lock at addr, with its result rc: only an accepted unlock changes
 * the held set. All of it comes after libc's unlock, so the program's critical section holds
 * none of it; meanwhile the held set claims the lock a little longer, which is safe: the
 * wait-for check reads only the held sets of waiting threads, and the thread's own signal
 * handlers pass through (it is inside the tracer). 0 when the unlock is an unusual one (not
 * held, refused), for lt_unlock_unusual. Inline: every unlock runs it (interpose.c without an
 * lt_event, which only the unusual cases need), with its common case first: an accepted
 * unlock of the newest lock of a small set, held once (held_room: not with LOCKTRACE_STATS).
 * Others (out-of-order, recursive, a large set) go to lt_unlock_done_slow. */
static inline int lt_unlock_done(lt_thread *t, const void *addr, int rc)
{
    lt_held *h = lt_held_top(t, addr);
    if (lt_unlikely(rc != 0 || !h || h->depth > 1))
        return lt_unlock_done_slow(t, addr, rc);
    if (h->mode == LT_MODE_WRITE)
        lt_writer_released(t, h);
    lt_held_pop(t);
    return 1;
}

/* Whether h, the newest entry, names its lock's writer and goes with this unlock: held for
 * write once, as the lock it still is (a recycled shadow entry belongs to another address). */
static inline int lt_unlock_clears_writer(const lt_held *h)
{
    return h->mode == LT_MODE_WRITE && h->depth == 1 &&
           atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen;
}

/* lt_unlock_done in two halves around libc's unlock, for interpose.c's: before it, the newest
 * entry when it is for addr (lt_held_top), and when that entry is its lock's writer, the
 * writer cleared already. While this thread still holds the lock no other can become its
 * writer, so a plain store does it, on the line the grant wrote, where after libc's unlock it
 * takes a compare-and-swap, which waits for that line (a lock taken thousands of locks ago is
 * out of the cache: a third of the unlock's time then). Any other entry: lt_unlock_begin_any
 * and lt_unlock_end_any, the same way (interpose.c calls them out of line). */
static inline lt_held *lt_unlock_begin(lt_thread *t, const void *addr)
{
    lt_held *h = lt_held_top(t, addr);
    if (h && lt_unlock_clears_writer(h))
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
    return h;
}

/* An unlock libc refused changed nothing: h's writer goes back (unless another thread named
 * itself since, which the refusal says may be: the held set was wrong). */
static inline void lt_unlock_refused(const lt_thread *t, const lt_held *h)
{
    int none = 0;
    if (h && lt_unlock_clears_writer(h))
        atomic_compare_exchange_strong_explicit(&h->lock->writer, &none, t->info.seq + 1,
                                                memory_order_relaxed, memory_order_relaxed);
}

/* After libc's unlock with result rc, top from lt_unlock_begin: as lt_unlock_done. */
static inline int lt_unlock_end(lt_thread *t, const lt_held *top, const void *addr, int rc)
{
    if (lt_likely(top && rc == 0 && top->depth == 1)) {
        lt_held_pop(t);
        return 1;
    }
    if (rc != 0)
        lt_unlock_refused(t, top);
    return lt_unlock_done_slow(t, addr, rc);
}

/* lt_unlock_begin for a lock that is not the newest of a small set: its entry wherever it
 * is, whose release then needs no more than lt_held_remove. NULL with LOCKTRACE_STATS, whose
 * accounting of the release is lt_unlock_done_slow's. */
static inline lt_held *lt_unlock_begin_any(lt_thread *t, const void *addr)
{
    lt_held *h = lt_unlikely(lt_cfg.stats) ? NULL : lt_held_find(t, addr);
    if (h && lt_unlock_clears_writer(h))
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
    return h;
}

/* lt_unlock_end for h from lt_unlock_begin_any. */
static inline int lt_unlock_end_any(lt_thread *t, lt_held *h, const void *addr, int rc)
{
    if (lt_likely(h && rc == 0 && h->depth == 1)) {
        lt_held_remove(t, h);
        return 1;
    }
    if (rc != 0)
        lt_unlock_refused(t, h);
    return lt_unlock_done_slow(t, addr, rc);
}

/* lt_unlock_begin for the oldest entry of a large set not indexed (held_room), when it is
 * addr's, held once and current: a set of thousands released in the order it was taken
 * (`stressbench groups`) loses that one at each unlock, found with a few loads where
 * lt_unlock_begin_any looked at the newest entry again and asked the set's state twice
 * (~90 of the 140 instructions of such an unlock). NULL otherwise. The caller knows the set
 * holds a lock: its oldest entry, at held_start, is then a held one. */
static inline lt_held *lt_unlock_begin_oldest(lt_thread *t, const void *addr)
{
    uint32_t end = t->held_end;
    lt_held *h = &t->held[t->held_start];
    if (end < LT_HELD_INDEX_MIN || end - 1 >= t->held_room || h->addr != addr ||
        h->depth != 1 || atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen)
        return NULL;
    if (h->mode == LT_MODE_WRITE) { /* current (lt_held_current) when the lock names this
                                       thread its writer, which it no longer does */
        if (atomic_load_explicit(&h->lock->writer, memory_order_relaxed) != t->info.seq + 1)
            return NULL;
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
    }
    return h;
}

/* lt_unlock_end for h from lt_unlock_begin_oldest. */
static inline int lt_unlock_end_oldest(lt_thread *t, lt_held *h, const void *addr, int rc)
{
    if (lt_likely(rc == 0)) {
        lt_held_remove_oldest(t, h);
        return 1;
    }
    lt_unlock_refused(t, h);
    return lt_unlock_done_slow(t, addr, rc);
}

static inline void lt_after_unlock(lt_event *ev, int rc)
{
    if (!lt_unlock_done(ev->self, ev->addr, rc))
        lt_unlock_unusual(ev, rc);
}
void lt_init_held(lt_thread *t, const void *addr);

/* init of the lock at addr by thread t, at the call (ra, cfa), through api: a new identity
 * (lt_shadow_reset), the old one's node gone from the graph, and an entry the set still had
 * for the address (the program re-made a lock it held: stale) gone. Inline in the entry
 * points, with the call's fields in registers: an event in memory is for lt_on_init's
 * callers. An empty set holds no entry: its lookup is skipped. */
static inline void lt_init_lock(lt_thread *t, const void *addr, lt_api api, uintptr_t ra,
                                uintptr_t cfa)
{
    if (lt_unlikely(t->nheld))
        lt_init_held(t, addr);
    lt_lock *l = lt_shadow_reset(t, addr, ra, cfa);
    lt_order_forget(l, LT_ENDED_INIT);
    if (api != LT_API_PTHREAD && l) /* (the new identity's api is LT_API_PTHREAD) */
        l->api = (uint8_t)api;
}

/* Whether libc will refuse this destroy and leave the lock as it is. */
static inline int lt_destroy_refused(const void *addr, lt_kind kind, lt_api api)
{
    return kind == LT_MUTEX && api != LT_API_CUSTOM && lt_platform_mutex_destroy_refused(addr);
}

void lt_destroy_any(lt_thread *t, const void *addr, lt_kind kind, lt_api api, uintptr_t ra,
                    uintptr_t cfa);

/* Whether libc's word shows readers holding the rwlock at addr: its readers are in held sets of
 * their own, which a destroy does not search, and glibc destroys a read-held rwlock without a
 * word (until 2026-12-06 only a writer of another thread was seen; peer-misuse.7). A custom
 * lock's memory is not libc's: never read. */
static inline int lt_destroy_read_held(const void *addr, lt_kind kind, lt_api api)
{
    return kind == LT_RWLOCK && api != LT_API_CUSTOM && lt_platform_rwlock_read_held(addr);
}

/* destroy of the lock at addr by thread t, at the call (ra, cfa), through api, before libc's.
 * The common case inline: the thread holds no lock, the lock's entry is its home, live, and
 * names no writer, and no reader holds it - no held entry, no check (destroy_held), and the
 * home's identity ends with two stores (only calls on the home's own address change it:
 * shadow.c). The rest is lt_destroy_any's, whose lookups, event and check kept registers and
 * a frame in every destroy out of line. The entry points pass the call's fields in
 * registers: an event of theirs, stored and loaded again, was ~20 instructions of each
 * destroy, the call of this part ~12 more; so was a call of it, which the compiler made once
 * the check of an rwlock's readers was added (a mutex's destroy: 25 instructions). */
static inline __attribute__((always_inline)) void lt_destroy_lock(lt_thread *t, const void *addr,
                                                                  lt_kind kind, lt_api api,
                                                                  uintptr_t ra, uintptr_t cfa)
{
    lt_lock *l = lt_shadow_home(addr);
    if (lt_unlikely(t->nheld ||
                    atomic_load_explicit(&l->addr, memory_order_acquire) != lt_addr_named(addr) ||
                    atomic_load_explicit(&l->writer, memory_order_relaxed) != 0 ||
                    lt_destroy_read_held(addr, kind, api))) {
        lt_destroy_any(t, addr, kind, api, ra, cfa);
        return;
    }
    if (lt_destroy_refused(addr, kind, api))
        return;
    lt_order_forget(l, LT_ENDED_DESTROY);
    lt_shadow_end_identity(l, addr);
}
void lt_on_init(lt_event *ev);
void lt_on_destroy(lt_event *ev);
int lt_cond_release(lt_event *ev, const void *cv, lt_held *saved);
void lt_cond_reacquire(lt_event *ev, const lt_held *saved, int cancelled);
void lt_on_annotate(lt_event *ev, const void *object, locktrace_describe_fn describe);
void lt_on_thread_exit(lt_thread *t);
void lt_orphan_locks(lt_thread *t, const lt_gone *owner);
/* In a fork child: t is the thread that forked, tid_in_parent its kernel id there. */
void lt_on_forked(lt_thread *t, int tid_in_parent);

/* f->held_mode and f->held_stack of the earlier acquisition h, after f->request_stack (report.h
 * comes after this header). */
struct lt_finding;
void lt_fill_held(struct lt_finding *f, const lt_held *h);

#endif
