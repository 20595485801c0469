/*
 * detect.h - the event API (detect.c) that interpose.c drives.
 */
#ifndef LT_DETECT_H
#define LT_DETECT_H

#include "lt_internal.h"
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
int lt_before_lock(lt_event *ev);
int lt_wait_begin(lt_event *ev);
void lt_wait_end(lt_event *ev);
void lt_after_lock(lt_event *ev, int rc);
void lt_unlock_unusual(lt_event *ev, int rc);

/* Whether h is the last hold of its lock in write mode and the lock still is the one h was
 * taken as (a recycled shadow entry belongs to another address now): its unlock ends the
 * lock's writer. */
static inline int lt_held_last_writer(const lt_held *h)
{
    return h->depth == 1 && h->mode == LT_MODE_WRITE &&
           atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen;
}

/* Before libc's unlock: the lock's writer is cleared now, while no other thread can take the
 * lock and become its writer; lt_after_unlock puts it back if libc refuses. Inline, with
 * lt_after_unlock: every unlock runs them. */
static inline void lt_before_unlock(lt_event *ev)
{
    lt_held *h = ev->held = lt_held_find(ev->self, ev->addr);
    if (h && lt_held_last_writer(h))
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
}

/* libc's verdict on the unlock: only an accepted one changes the held set. */
static inline void lt_after_unlock(lt_event *ev, int rc)
{
    lt_held *h = ev->held;
    if (lt_unlikely(!h || rc != 0)) {
        lt_unlock_unusual(ev, rc);
        return;
    }
    if (--h->depth == 0) {
        if (lt_unlikely(lt_cfg.stats))
            lt_stats_released(h);
        lt_held_remove(ev->self, h);
    }
}
void lt_on_init(lt_event *ev);
void lt_on_destroy(lt_event *ev);
int lt_cond_release(lt_event *ev, const void *cv, lt_held *saved);
void lt_cond_reacquire(lt_event *ev, const lt_held *saved);
void lt_on_annotate(lt_event *ev, const void *object, locktrace_describe_fn describe);
void lt_on_thread_exit(lt_thread *t);
void lt_orphan_locks(lt_thread *t, const lt_thread_info *owner);

#endif
