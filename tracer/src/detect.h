/*
 * detect.h - the event API (detect.c) that interpose.c drives.
 */
#ifndef LT_DETECT_H
#define LT_DETECT_H

#include "lt_internal.h"
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
 *   lt_after_lock    libc's result; on success the lock joins the held set.
 *   lt_before_unlock, lt_after_unlock around libc's unlock; the lock leaves the held set
 *                    once libc accepted the unlock.
 *   lt_on_init, lt_on_destroy, lt_on_annotate, lt_cond_release/lt_cond_reacquire (around a
 *   condition wait), lt_on_thread_exit, lt_orphan_locks (exit and fork).
 * A finding is an lt_finding handed to lt_report (report.c). */
int lt_before_lock_slow(lt_event *ev);
int lt_wait_begin(lt_event *ev);
void lt_wait_end(lt_event *ev);
void lt_after_lock_unusual(lt_event *ev, int rc);
void lt_after_lock_nested(lt_event *ev);
void lt_unlock_unusual(lt_event *ev, int rc);

/* The events every lock call runs are inline, each with its common case first: a known lock,
 * named through the interface it was last locked through, not orphaned, not held by this
 * thread, taken. Anything else goes to the out-of-line part, which does the whole check. */
static inline int lt_before_lock(lt_event *ev)
{
    lt_thread *t = ev->self;
    lt_frame_lock_check(t, ev->addr, ev->ra, ev->cfa);
    lt_lock *l = ev->lock = lt_shadow_get(t, ev->addr, ev->ra);
    lt_held *h = ev->held = t->nheld ? lt_held_find(t, ev->addr) : NULL;
    if (lt_likely(l && !h && l->api == ev->api && !l->orphan_of))
        return 0;
    return lt_before_lock_slow(ev);
}

/* The acquisition joins the held set: its call site and callers, whether edges lead into it
 * (a blocking request), its writer. Field by field: a compound literal would also clear
 * callers[] (a rep stos, a third of the tracer's cost per lock in lockbench); the walk writes
 * what it finds. */
static inline void lt_held_take(lt_event *ev)
{
    lt_thread *t = ev->self;
    if (t->nheld)
        lt_after_lock_nested(ev);
    lt_held *h = lt_held_push(t, ev->addr, ev->lock);
    if (lt_unlikely(!h))
        return;
    h->gen = atomic_load_explicit(&ev->lock->gen, memory_order_relaxed);
    h->kind = (uint8_t)ev->kind;
    h->mode = (uint8_t)ev->mode;
    h->anchor = ev->wait != LT_WAIT_TRY; /* order.c: edges lead into it */
    h->depth = 1;
    h->ra = ev->ra;
    h->cfa = ev->cfa; /* h->since is lt_stats_acquired's */
    if (lt_likely(lt_cfg.stacks == LT_STACKS_LAZY)) {
        h->stack = 0;
        h->ncallers = (uint32_t)lt_callsite_callers(t, ev->ra, ev->cfa, h->callers);
    } else {
        h->stack = lt_stack_here(ev->ra);
        h->ncallers = 0;
    }
    if (ev->mode == LT_MODE_WRITE)
        atomic_store_explicit(&ev->lock->writer, t->info.seq + 1, memory_order_relaxed);
    if (lt_unlikely(lt_cfg.stats))
        lt_stats_acquired(ev, h);
}

/* rc is libc's result. */
static inline void lt_after_lock(lt_event *ev, int rc)
{
    if (lt_likely(rc == 0 && ev->lock && !ev->held))
        lt_held_take(ev);
    else
        lt_after_lock_unusual(ev, rc);
}

/* Whether h is the last hold of its lock in write mode and the lock still is the one h was
 * taken as (a recycled shadow entry belongs to another address now): its unlock ends the
 * lock's writer. */
static inline int lt_held_last_writer(const lt_held *h)
{
    return h->depth == 1 && h->mode == LT_MODE_WRITE &&
           atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen;
}

/* Before libc's unlock: this thread's entry for the lock at addr (NULL: not held), whose
 * writer is cleared now, while no other thread can take the lock and become its writer;
 * lt_after_unlock puts it back if libc refuses. Inline, with lt_unlock_done: every unlock
 * runs them (interpose.c without an lt_event, which only the unusual cases need). */
static inline lt_held *lt_unlock_begin(lt_thread *t, const void *addr)
{
    lt_held *h = lt_held_find(t, addr);
    if (h && lt_held_last_writer(h))
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
    return h;
}

/* libc's verdict on the unlock of h: only an accepted one changes the held set. 0 when the
 * unlock is an unusual one (not held, refused), for lt_unlock_unusual. */
static inline int lt_unlock_done(lt_thread *t, lt_held *h, int rc)
{
    if (lt_unlikely(!h || rc != 0))
        return 0;
    if (--h->depth == 0) {
        if (lt_unlikely(lt_cfg.stats))
            lt_stats_released(h);
        lt_held_remove(t, h);
    }
    return 1;
}

static inline void lt_before_unlock(lt_event *ev)
{
    ev->held = lt_unlock_begin(ev->self, ev->addr);
}

static inline void lt_after_unlock(lt_event *ev, int rc)
{
    if (!lt_unlock_done(ev->self, ev->held, rc))
        lt_unlock_unusual(ev, rc);
}
void lt_on_init(lt_event *ev);
void lt_on_destroy(lt_event *ev);
int lt_cond_release(lt_event *ev, const void *cv, lt_held *saved);
void lt_cond_reacquire(lt_event *ev, const lt_held *saved);
void lt_on_annotate(lt_event *ev, const void *object, locktrace_describe_fn describe);
void lt_on_thread_exit(lt_thread *t);
void lt_orphan_locks(lt_thread *t, const lt_thread_info *owner);

#endif
