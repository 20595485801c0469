/*
 * detect.c - the checker behind the event API: the same-thread rules and the misuse checks.
 *
 * interpose.c reports every lock call as events: lt_before_lock (before libc is called; may
 * veto the call), lt_wait_begin/lt_wait_end (around a request that has to block),
 * lt_after_lock (with libc's result), lt_after_unlock, lt_on_init, lt_on_destroy and the
 * condition-wait pair. Everything here works from the calling thread's own held set; shadow
 * state is read only for what the held set cannot know (waiting writers, orphans).
 * Findings are built as lt_finding data and handed to report.c. The cross-thread checkers
 * hang off the same events: waitfor.c from lt_wait_begin/lt_wait_end (may veto the wait),
 * order.c from lt_after_lock (new edges) and lt_on_init/lt_on_destroy (forget the lock).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "lt_internal.h"
#include "platform.h"

/* (libc's answer as it is, through a tail call: the order graph asks this of every lock
 * held for read that its walks pass, once a held entry: lt_held_anchor.) */
int lt_lock_prefers_writer(const void *addr, const lt_lock *l)
{
    if (lt_lock_custom(l))
        return 0;
    return lt_platform_rwlock_prefers_writer(addr);
}

int lt_lock_writer_queued(const void *addr, const lt_lock *l)
{
    return !lt_lock_custom(l) && lt_platform_rwlock_writer_queued(addr);
}

int lt_lock_robust(const void *addr, const lt_lock *l)
{
    return !lt_lock_custom(l) && lt_platform_mutex_robust(addr);
}

int lt_lock_word_held(const void *addr, const lt_lock *l, lt_kind kind, lt_mode mode, int tid)
{
    return lt_lock_custom(l) || lt_platform_lock_held(addr, kind, mode, tid);
}

static void fill_lock(lt_finding *f, const lt_event *ev)
{
    lt_thread_info_now(ev->self, &f->thread);
    f->lock = ev->addr;
    f->lock_kind = ev->kind;
    if (ev->kind == LT_MUTEX)
        f->mutex_type = lt_lock_mutex_type(ev->addr, ev->lock);
    if (ev->kind == LT_RWLOCK)
        f->writer_pref = lt_lock_prefers_writer(ev->addr, ev->lock);
    f->req_mode = ev->mode;
    f->wait = ev->wait;
    f->api = ev->api;
    if (ev->lock) {
        f->object = lt_lock_object(ev->lock);
        f->describe = lt_lock_describe(ev->lock);
        f->first_stack = ev->lock->first_stack;
        f->first_partial = ev->lock->first_partial;
        f->generation = atomic_load_explicit(&ev->lock->gen, memory_order_relaxed);
    }
}

/* The earlier acquisition h, after f->request_stack (the stack it is joined to). */
void lt_fill_held(lt_finding *f, const lt_held *h)
{
    f->held_mode = (lt_mode)h->mode;
    f->held_stack = h->stack ? h->stack : lt_stack_lazy(h, f->request_stack, &f->held_partial);
}

/* The gone thread that holds l for good, and where it took it (orphan_entry). */
static void fill_orphan(lt_finding *f, const lt_lock *l)
{
    const lt_lock_cold *cold = lt_lock_cold_of(l);
    f->held_mode = (lt_mode)l->orphan_mode;
    f->other = f->held_mode != LT_MODE_NONE && cold->orphan_of ? &cold->orphan_of->info : NULL;
    f->other_gone = f->other != NULL;
    f->other_by_fork = f->other && cold->orphan_of->by_fork;
    /* where the gone thread took it: a fork child has no exit-held report that says so */
    f->held_stack = f->other ? cold->orphan_stack : 0;
    f->held_partial = lt_cfg.stacks != LT_STACKS_FULL;
}

/* Reports a request that would never be granted; the result is the call's veto (0 = go on).
 * A timed one goes on: libc gives up at its deadline (ETIMEDOUT), and a program survives
 * that natively, as it does a cycle of threads with a timed wait in it (waitfor.c). So does
 * one of a thread with asynchronous cancellation on (and enabled): a cancellation ends that
 * wait whenever it comes, as natively (a pool's stop cancels its threads in turn; a thread
 * cancelled while it held a lock leaves it taken, which its exit-held report told, and the
 * others that want it wait until they are cancelled too). It was aborted unless a
 * cancellation came within 50 ms, which a canceller descheduled, or stopping other threads
 * first, need not keep. */
static int report_self(lt_event *ev, const lt_held *h, lt_reason why)
{
    lt_finding f = {.kind = LT_FIND_SELF_DEADLOCK, .why = why};
    f.outcome = why == LT_WHY_ERRORCHECK_RELOCK || why == LT_WHY_REREAD_POSSIBLE ||
                        ev->wait == LT_WAIT_TIMED || lt_cancel_would_end(&lt_tls, 0)
                    ? LT_OUTCOME_CONTINUE
                    : lt_report_fatal_outcome();
    fill_lock(&f, ev);
    f.request_stack = lt_stack_here(ev->ra);
    if (h)
        lt_fill_held(&f, h);
    else
        fill_orphan(&f, ev->lock);
    lt_report(&f);
    return f.outcome == LT_OUTCOME_EDEADLK ? EDEADLK : 0;
}

/* The rules table: can a blocking request for a lock this thread holds (entry h) return? */
static int never_returns(const lt_event *ev, const lt_held *h, lt_reason *why)
{
    switch (ev->kind) {
    case LT_RWLOCK:
        *why = h->mode == LT_MODE_WRITE  ? LT_WHY_WRITE_HELD
               : ev->mode == LT_MODE_WRITE ? LT_WHY_UPGRADE
                                           : LT_WHY_WRITER_QUEUED;
        return *why != LT_WHY_WRITER_QUEUED ||
               (lt_lock_prefers_writer(ev->addr, ev->lock) &&
                atomic_load(&lt_lock_cold_of(ev->lock)->waiting_writers) > 0 &&
                lt_lock_writer_queued(ev->addr, ev->lock));
    case LT_MUTEX:
        switch (lt_lock_mutex_type(ev->addr, ev->lock)) {
        case LT_MUTEX_RECURSIVE: return 0;
        case LT_MUTEX_ERRORCHECK: *why = LT_WHY_ERRORCHECK_RELOCK; return 1;
        default: *why = LT_WHY_MUTEX_RELOCK; return 1;
        }
    case LT_ONCE:
        *why = LT_WHY_ONCE_RECURSION;
        return 1;
    default:
        *why = LT_WHY_SPIN_RELOCK;
        return 1;
    }
}

/* A read again of a writer-preferring rwlock this thread reads, no writer queued on it: glibc's
 * writer-preferring rwlocks are not recursive, so a writer that queues between the two reads
 * blocks both for good (lockdep's recursive read of a rwsem). The call goes on; reported as
 * the potential self-deadlock it is. */
static int reread_possible(const lt_event *ev, const lt_held *h)
{
    return ev->kind == LT_RWLOCK && ev->mode == LT_MODE_READ && h->mode == LT_MODE_READ &&
           lt_lock_prefers_writer(ev->addr, ev->lock) &&
           !lt_lock_writer_queued(ev->addr, ev->lock);
}

/* Like a lock-order inversion, a potential self-deadlock is reported once, here per call site:
 * a loop would otherwise pay a stack capture and print a repeat line at every iteration. Past
 * the table's size, the report module's own repeat count takes over. */
static _Atomic uintptr_t reread_sites[64];

static int reread_site_new(uintptr_t ra)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(reread_sites); i++) {
        uintptr_t seen = atomic_load_explicit(&reread_sites[i], memory_order_relaxed);
        if (seen == ra)
            return 0;
        if (!seen && atomic_compare_exchange_strong(&reread_sites[i], &seen, ra))
            return 1;
        if (seen == ra)
            return 0;
    }
    return 1;
}

/* A held entry goes stale when its lock got a new identity, or when another thread released
 * what this one held exclusively (reported then as a bad unlock). */
static int held_valid(const lt_thread *t, const lt_held *h)
{
    if (atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen)
        return 0;
    return h->mode != LT_MODE_WRITE ||
           atomic_load_explicit(&h->lock->writer, memory_order_relaxed) == t->info.seq + 1;
}

static lt_held *find_valid(lt_thread *t, const void *addr)
{
    lt_held *h = lt_held_find(t, addr);
    if (h && lt_unlikely(!held_valid(t, h))) {
        lt_held_remove(t, h);
        h = NULL;
    }
    return h;
}

/* A lock held by a gone thread blocks a conflicting request for good; robust mutexes are the
 * exception (they hand the next locker EOWNERDEAD) when their holder exited, not when it was
 * left behind by fork: the kernel marks a robust mutex at its holder's exit, and that holder
 * lives on in the parent (the child's lock hung silently). */
static int orphan_blocks_request(const lt_lock *l, const void *addr, lt_kind kind, lt_mode mode,
                                 lt_wait wait)
{
    if (wait == LT_WAIT_TRY || (l->orphan_mode != LT_MODE_WRITE && mode != LT_MODE_WRITE))
        return 0;
    if (kind != LT_MUTEX || !lt_lock_robust(addr, l))
        return 1;
    const lt_gone *gone = lt_lock_cold_of(l)->orphan_of; /* NULL: see orphan_confirmed */
    return gone && gone->by_fork;
}

static int orphan_blocks(const lt_event *ev)
{
    return orphan_blocks_request(ev->lock, ev->addr, ev->kind, ev->mode, ev->wait);
}

static void release(lt_thread *t, lt_held *h);
static void report_bad_unlock(lt_event *ev, int unlocked);
static int shared_with_parent(const lt_held *h);
static void orphan_entry(const lt_held *h, const lt_gone *owner);

/* In a fork child, the thread that forked (by seq) and its kernel id in the parent: the words
 * of the mutexes and rwlocks it held for write at the fork still name that id, so libc's
 * owner checks (error-checking, recursive, an rwlock's EDEADLK) fail for it here. */
static int forked_seq LT_START_DATA = -1, forked_tid LT_START_DATA; /* (written by every
                                                                       fork child) */

/* An rwlock the thread that forked held for write, in private memory: in the child nothing
 * can release it. glibc's unlock tells a writer by its kernel id, which the fork changed, so
 * the child's unlock (an atfork child handler's) is taken for a read unlock and the lock stays
 * written by the parent's id. Besides its held entry (a relock is a fork-relock while it
 * lasts) it becomes an orphan of the parent's thread, so that a request after that unlock -
 * which hung silently - is reported as one for a lock a gone thread holds. */
static int written_for_good(const lt_held *h, int tid_in_parent)
{
    pthread_rwlock_t word;
    return h->kind == LT_RWLOCK && h->mode == LT_MODE_WRITE && !lt_lock_custom(h->lock) &&
           lt_platform_read(&word, h->addr, sizeof word) == 0 &&
           lt_platform_lock_held(&word, LT_RWLOCK, LT_MODE_WRITE, tid_in_parent);
}

/* What t holds in memory shared with the parent is the parent's thread's to release, not
 * this copy's: it leaves t's held set, or the child locking it again (waiting for the parent,
 * as it does natively) is taken for a relock or an upgrade. A mutex or rwlock held for write
 * would leave by its word naming the parent's id (lt_drop_stale); a spinlock's word names no
 * owner and a read-held rwlock's names no reader. */
LT_FORK_PATH void lt_on_forked(lt_thread *t, int tid_in_parent)
{
    lt_gone *parent_self = NULL;
    forked_seq = t->info.seq;
    forked_tid = tid_in_parent;
    if (!t->held_end)
        return; /* (held nothing: and lt_held_compact's code is another page to map) */
    lt_held_compact(t); /* entries below i then stay where they are while ones above go */
    for (uint32_t i = t->held_end; i-- > 0;) {
        lt_held *h = &t->held[i];
        if (!h->lock || !held_valid(t, h))
            continue;
        if (shared_with_parent(h)) {
            release(t, h);
        } else if (written_for_good(h, tid_in_parent) &&
                   (parent_self || (parent_self = lt_gone_forked(&t->info)) != NULL)) {
            parent_self->info.tid = tid_in_parent;
            orphan_entry(h, parent_self);
        }
    }
}

/* Whether this thread held h's lock for write when the process forked (it hangs, whatever
 * its type, when locked again): the lock word names the thread's id in the parent. Not a
 * lock shared with the parent, whose thread of that id may have taken it again since. */
static int held_in_parent(const lt_event *ev, const lt_held *h)
{
    if (lt_likely(ev->self->info.seq != forked_seq) || h->mode != LT_MODE_WRITE ||
        (h->kind != LT_MUTEX && h->kind != LT_RWLOCK) || lt_lock_custom(h->lock))
        return 0;
    return lt_platform_lock_held(h->addr, h->kind, LT_MODE_WRITE, forked_tid) &&
           !shared_with_parent(h);
}

/* The lock word contradicts what the tracer knew of addr: the memory became another lock
 * without init (freed and reused, a stack frame reused). It gets a new identity, as on init,
 * silently. */
static void renew(lt_event *ev)
{
    lt_order_forget(ev->lock, LT_ENDED_REUSE);
    ev->lock = lt_shadow_reset(ev->self, ev->addr, ev->ra, ev->cfa);
}

/* Before a verdict ends the program: does the lock word agree that this thread holds it? An
 * entry it contradicts is stale and leaves the held set. */
static int confirmed(lt_event *ev, lt_held *h)
{
    if (lt_lock_word_held(ev->addr, ev->lock, ev->kind, (lt_mode)h->mode, ev->self->info.tid))
        return 1;
    release(ev->self, h);
    ev->held = NULL;
    renew(ev);
    return 0;
}

/* Does the lock word agree that the gone thread still holds l? */
static int orphan_holds(const lt_lock *l, const void *addr, lt_kind kind)
{
    const lt_gone *gone = lt_lock_cold_of(l)->orphan_of; /* NULL: the mode was seen before it
                                                   (lt_orphan_locks' fence) */
    return gone && lt_lock_word_held(addr, l, kind, (lt_mode)l->orphan_mode, gone->info.tid);
}

/* ... and that the gone thread still holds it. */
static int orphan_confirmed(lt_event *ev)
{
    if (orphan_holds(ev->lock, ev->addr, ev->kind))
        return 1;
    renew(ev);
    return 0;
}

/* lt_before_lock (detect.h) for the rest: no shadow entry (no memory), another interface,
 * a lock this thread holds (its entry may be stale), an orphan. */
int lt_before_lock_slow(lt_event *ev)
{
    lt_thread *t = ev->self;
    if (lt_unlikely(!ev->lock)) {
        ev->held = NULL;
        return 0;
    }
    if (ev->lock->api != ev->api)
        ev->lock->api = ev->api;
    if (ev->held && lt_unlikely(!held_valid(t, ev->held))) {
        lt_held_remove(t, ev->held);
        ev->held = NULL;
    }
    if (ev->held) {
        lt_reason why;
        if (ev->wait == LT_WAIT_TRY)
            return 0;
        if (lt_unlikely(held_in_parent(ev, ev->held)))
            return report_self(ev, ev->held, LT_WHY_FORK_RELOCK);
        if (!never_returns(ev, ev->held, &why)) {
            if (lt_unlikely(reread_possible(ev, ev->held)) && reread_site_new(ev->ra) &&
                confirmed(ev, ev->held))
                report_self(ev, ev->held, LT_WHY_REREAD_POSSIBLE);
            return 0;
        }
        if (confirmed(ev, ev->held))
            return report_self(ev, ev->held, why);
        if (!ev->lock)
            return 0;
    }
    if (lt_unlikely(ev->lock->orphan_mode != LT_MODE_NONE) && orphan_blocks(ev) &&
        orphan_confirmed(ev))
        return report_self(ev, NULL, LT_WHY_ORPHANED);
    return 0;
}

static int untimed_writer(const lt_event *ev)
{
    return ev->lock && ev->kind == LT_RWLOCK && ev->mode == LT_MODE_WRITE &&
           ev->wait == LT_WAIT_BLOCK;
}

/* A writer about to block is what makes a recursive read hang on a writer-preferring lock;
 * a timed writer gives up, and the read then goes on. The wait-for check (waitfor.c) may veto
 * the wait: the result is the call's (0 = block). */
/* A normal mutex that this thread does not hold at ev->addr, whose word says the thread holds
 * it all the same: the memory is mapped at another address too (a ring buffer mapped twice
 * back to back, a segment a library maps again), and the thread took it there; or it took
 * it around the tracer. The wait hangs. Read only when the request blocks. */
static int held_elsewhere(const lt_event *ev)
{
    return ev->kind == LT_MUTEX && !ev->held && ev->lock && !lt_lock_custom(ev->lock) &&
           lt_lock_mutex_type(ev->addr, ev->lock) == LT_MUTEX_NORMAL &&
           !lt_lock_robust(ev->addr, ev->lock) &&
           lt_lock_word_held(ev->addr, ev->lock, LT_MUTEX, LT_MODE_WRITE, ev->self->info.tid);
}

/* A blocking request whose lock's holder left (lt_on_thread_exit) after the check before the
 * request (lt_before_lock_slow) and before its wait was published, which the leaving thread's
 * look at the published waits (orphan_waiters) then did not find: the wait is published under
 * waitfor.c's lock before this looks, the orphan marked before that look takes it, so one of
 * the two sees the other. (A timed request ends at its deadline, and was told already when it
 * was an orphan before.) */
static int orphaned_meanwhile(const lt_event *ev)
{
    return ev->wait == LT_WAIT_BLOCK && lt_unlikely(ev->lock->orphan_mode != LT_MODE_NONE) &&
           orphan_blocks(ev) && orphan_holds(ev->lock, ev->addr, ev->kind);
}

int lt_wait_begin(lt_event *ev)
{
    if (untimed_writer(ev))
        atomic_fetch_add(&lt_lock_cold_of(ev->lock)->waiting_writers, 1);
    if (lt_unlikely(lt_cfg.stats))
        lt_stats_wait_begin(ev);
    if (lt_unlikely(held_elsewhere(ev))) /* lt_wait_end follows, as after a veto */
        return report_self(ev, NULL, LT_WHY_HELD_ELSEWHERE);
    if (!ev->lock)
        return 0;
    int veto = lt_waitfor_begin(ev);
    if (!veto && orphaned_meanwhile(ev))
        return report_self(ev, NULL, LT_WHY_ORPHANED);
    return veto;
}

void lt_wait_end(lt_event *ev)
{
    if (ev->held) /* a signal handler may have moved the held set meanwhile */
        ev->held = lt_held_find(ev->self, ev->addr);
    if (ev->lock)
        lt_waitfor_end(ev);
    if (untimed_writer(ev))
        atomic_fetch_sub(&lt_lock_cold_of(ev->lock)->waiting_writers, 1);
    if (lt_unlikely(lt_cfg.stats))
        lt_stats_wait_end(ev);
}

/* A lock or unlock libc refused (EINVAL) of a mutex that pthread_mutex_destroy destroyed:
 * its lock word says so, whatever the tracer knew of it (ThreadSanitizer reports the
 * refused lock and unlock, Helgrind every refused call). A trylock is a question the program
 * asks and checks the answer of: silent, as ThreadSanitizer has it. A destroyed rwlock or
 * spinlock is not told: glibc's destroy leaves them as they were, and a memset or an
 * initialiser assigned makes them locks again unseen. */
static int destroyed_use(const lt_event *ev, int rc)
{
    return rc == EINVAL && ev->kind == LT_MUTEX && ev->api != LT_API_CUSTOM &&
           lt_platform_mutex_destroyed(ev->addr);
}

/* The report names the call; the entry the call's lookup made for the address is its own
 * (its first sighting would be this call). A word marked invalid that no destroy left so
 * (0xff bytes, say) is said to be no mutex. */
static void report_destroyed_use(const lt_event *ev)
{
    lt_reason why = lt_platform_mutex_destroyed(ev->addr) == 1 ? LT_WHY_DESTROYED : LT_WHY_NO_MUTEX;
    lt_finding f = {.kind = LT_FIND_DESTROYED_USE, .why = why};
    fill_lock(&f, ev);
    f.first_stack = 0;
    f.request_stack = lt_stack_here(ev->ra);
    lt_report(&f);
}

/* lt_after_lock (detect.h) for the rest: a failed request, no shadow entry, a robust
 * mutex whose owner died (EOWNERDEAD: taken all the same), a lock this thread already held. */
void lt_after_lock_unusual(lt_event *ev, int rc)
{
    if (lt_unlikely(ev->wait != LT_WAIT_TRY && destroyed_use(ev, rc)))
        report_destroyed_use(ev);
    if ((rc != 0 && rc != EOWNERDEAD) || !ev->lock)
        return;
    if (rc == EOWNERDEAD)
        ev->lock->orphan_mode = LT_MODE_NONE;
    if (ev->held && ev->held->mode == ev->mode) {
        ev->held->depth++; /* recursive mutex, recursive read */
        if (lt_unlikely(lt_cfg.stats))
            lt_stats_acquired(ev, NULL);
        return;
    }
    lt_held_take(ev);
}

/* Unlocks libc accepted of locks their thread did not hold (report_bad_unlock): until there
 * is one, no held entry outlives its lock's release (lt_internal.h). */
_Atomic unsigned lt_foreign_unlocks;


/* The set changed under lt_after_lock_edges' hooks (detect.h): the entry goes where a push
 * puts it. */
void lt_after_lock_moved(lt_event *ev, lt_held *spare)
{
    lt_held moved = *spare;
    lt_held *h = lt_held_push(ev->self, moved.addr, moved.lock);
    if (h) {
        *h = moved;
        lt_held_granted(ev, h, 0);
    }
}


/* libc released l for whichever thread held it, on another thread's call: the holder's entry
 * is stale from here (held_valid, lt_drop_stale). */
static void released_for_holder(lt_lock *l)
{
    atomic_store(&l->writer, 0);
    l->orphan_mode = LT_MODE_NONE;
    atomic_fetch_add_explicit(&lt_foreign_unlocks, 1, memory_order_relaxed);
}

/* Whether a writer still holds rwlock ev->addr after another thread's unlock that libc
 * accepted: glibc's unlock by a thread that is not the writer is a read unlock, which leaves
 * the writer holding the lock (its next wrlock returns EDEADLK, its own unlock releases it).
 * The lock was just unlocked here: read in place (lt_platform_read), in any sandbox. */
static int writer_kept(const lt_event *ev)
{
    pthread_rwlock_t word;
    return ev->kind == LT_RWLOCK && lt_platform_read(&word, ev->addr, sizeof word) == 0 &&
           lt_platform_rwlock_writer_kept(&word);
}

/* Who holds l, for a bad unlock's report: a gone thread (fill_orphan), or another thread
 * whose entry the tracer's record confirms (*other, then f->other), or nobody (held_mode
 * none). Read before libc's unlock is forgotten: the holder's entry is stale after it. */
static void fill_bad_unlock_holder(lt_finding *f, const lt_lock *l, lt_wait_step *other)
{
    if (l->orphan_mode != LT_MODE_NONE && lt_lock_cold_of(l)->orphan_of) {
        fill_orphan(f, l);
    } else if (lt_holders_find(l, atomic_load_explicit(&l->gen, memory_order_relaxed),
                               LT_CONFIRM_RECORD, other, 1)) {
        lt_thread_info_fresh(&other->thread);
        f->other = &other->thread;
        f->held_mode = other->held_mode;
        f->held_stack = other->held_stack;
        f->held_partial = other->held_partial;
    }
}

/* Unlock of a lock this thread does not hold: the report names who does hold it and where it
 * took it (the thread the program meant to unlock for, or the one whose lock it breaks), or
 * says that nobody does. If libc unlocked it all the same, what others held is forgotten
 * before the report (which takes a while: a thread waiting for the lock, which a signal
 * handler in it unlocked, must not be seen waiting for its old holder meanwhile). */
static void report_bad_unlock(lt_event *ev, int unlocked)
{
    lt_lock *l = ev->lock = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
    lt_finding f = {.kind = LT_FIND_BAD_UNLOCK, .why = LT_WHY_NOT_HELD};
    lt_wait_step other;
    memset(&other, 0, sizeof other);
    fill_lock(&f, ev);
    if (l)
        fill_bad_unlock_holder(&f, l, &other);
    if (l && unlocked && !writer_kept(ev))
        released_for_holder(l);
    f.req_mode = LT_MODE_NONE;
    f.request_stack = lt_stack_here(ev->ra);
    lt_report(&f);
}

/* The entry leaves the held set. */
static void drop(lt_thread *t, lt_held *h)
{
    if (lt_unlikely(lt_cfg.stats))
        lt_stats_released(h);
    lt_held_remove(t, h);
}

/* Whether h holds its lock exclusively and the lock still is the one h was taken as (a
 * recycled shadow entry belongs to another address now): then h names the lock's writer. */
static int writer_hold(const lt_held *h)
{
    return h->mode == LT_MODE_WRITE &&
           atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen;
}

static void release(lt_thread *t, lt_held *h)
{
    if (writer_hold(h))
        atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
    drop(t, h);
}

/* lt_unlock_done (detect.h) for the rest: the lock is found wherever it is in the held set. */
int lt_unlock_done_slow(lt_thread *t, const void *addr, int rc)
{
    lt_held *h = rc == 0 ? lt_held_find(t, addr) : NULL;
    if (!h)
        return 0;
    if (h->depth > 1) {
        h->depth--;
        return 1;
    }
    if (h->mode == LT_MODE_WRITE)
        lt_writer_released(t, h);
    drop(t, h);
    return 1;
}

/* lt_after_unlock (detect.h) for an unlock of a lock this thread does not hold, or one libc
 * refused (which changed nothing). */
void lt_unlock_unusual(lt_event *ev, int rc)
{
    if (destroyed_use(ev, rc))
        report_destroyed_use(ev);
    else if (!lt_held_find(ev->self, ev->addr))
        report_bad_unlock(ev, rc == 0);
}

void lt_init_held(lt_thread *t, const void *addr)
{
    lt_held *h = lt_held_find(t, addr);
    if (h)
        lt_held_remove(t, h);
}

void lt_on_init(lt_event *ev)
{
    lt_init_lock(ev->self, ev->addr, (lt_api)ev->api, ev->ra, ev->cfa);
}

/* destroy: the lock word must agree that the lock is held, by this thread (h) or by another.
 * A held mutex whose destroy glibc refuses (EBUSY) stays the lock it was, held as before: its
 * held entry, its identity and its order edges stay for its unlock and what follows (dropped,
 * the program's correct unlock after the refusal read as a bad unlock). destroy_held: the
 * destroy of a lock held (h, this thread's entry), with a writer, or with readers (`readers`:
 * the word shows some, lt_destroy_read_held); h, or NULL when the word says this thread does
 * not hold it. */
static __attribute__((noinline)) lt_held *destroy_held(lt_event *ev, lt_held *h, int readers)
{
    lt_thread *t = ev->self;
    if (h && !lt_lock_word_held(ev->addr, ev->lock, ev->kind, (lt_mode)h->mode, t->info.tid)) {
        release(t, h);
        h = NULL;
    }
    int other = ev->lock && atomic_load(&ev->lock->writer) != 0 &&
                lt_lock_word_held(ev->addr, ev->lock, ev->kind, LT_MODE_WRITE, 0);
    if (h || other || readers) {
        lt_finding f = {.kind = LT_FIND_DESTROY_HELD, .why = LT_WHY_DESTROY};
        fill_lock(&f, ev);
        f.req_mode = LT_MODE_NONE;
        f.request_stack = lt_stack_here(ev->ra);
        if (h)
            lt_fill_held(&f, h);
        else
            f.held_mode = other ? LT_MODE_WRITE : LT_MODE_READ;
        f.held_partial = !h;
        lt_report(&f);
    }
    return h;
}

/* The destroy ends the identity of the lock at addr (entry l), and this thread's entry h for
 * it (NULL: none) goes too, unless libc refuses it. */
static inline void destroy_end(lt_thread *t, const void *addr, lt_kind kind, lt_api api,
                               lt_lock *l, lt_held *h)
{
    if (lt_destroy_refused(addr, kind, api))
        return;
    if (h)
        lt_held_remove(t, h);
    lt_order_forget(l, LT_ENDED_DESTROY);
    lt_shadow_destroy(addr, l);
}

/* lt_destroy_lock (detect.h) but for its common case. The check of a held lock
 * (destroy_held) needs an event, for its finding. */
void lt_destroy_any(lt_thread *t, const void *addr, lt_kind kind, lt_api api, uintptr_t ra,
                    uintptr_t cfa)
{
    lt_held *h = find_valid(t, addr);
    lt_lock *l = lt_shadow_get(t, addr, ra, cfa);
    int readers = lt_destroy_read_held(addr, kind, api);
    if (h || (l && atomic_load(&l->writer) != 0) || readers) {
        lt_event ev = {addr, kind, LT_MODE_NONE, LT_WAIT_TRY, ra, cfa, t, l, NULL, 0,
                       (uint8_t)api, 0};
        h = destroy_held(&ev, h, readers);
    }
    destroy_end(t, addr, kind, api, l, h);
}

void lt_on_destroy(lt_event *ev)
{
    lt_destroy_lock(ev->self, ev->addr, ev->kind, (lt_api)ev->api, ev->ra, ev->cfa);
}

/* pthread_cond_*wait releases the mutex inside libc: it leaves the held set for the wait and
 * comes back with its original acquisition site (saved), or, held more than once (a
 * recursive mutex), stays held a level less (saved->depth 0). Returns 0 when the wait is
 * not one: libc refuses it (a mutex that checks its owner, not held), or no memory. */
int lt_cond_release(lt_event *ev, const void *cv, lt_held *saved)
{
    lt_held *h = lt_held_find(ev->self, ev->addr);
    if (!h) {
        int mine = lt_platform_lock_held(ev->addr, LT_MUTEX, LT_MODE_WRITE, ev->self->info.tid);
        if (!mine) {
            lt_cond_wait_misuse(ev, cv, LT_WHY_WAIT_UNHELD, NULL);
            /* a mutex that checks its owner (error-checking, recursive, robust) makes libc
             * refuse the wait with EPERM, unlocking nothing: the thread still holds nothing
             * and waits for nothing */
            if (lt_lock_mutex_type(ev->addr, NULL) != LT_MUTEX_NORMAL ||
                lt_lock_robust(ev->addr, NULL))
                return 0;
        }
        /* libc retakes the mutex when the wait ends: from then on this thread holds it, as
         * if taken by this call */
        ev->lock = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
        if (!ev->lock)
            return 0;
        /* a normal mutex another thread held is unlocked by the wait all the same: that
         * thread holds it no more, and the waiter does not wait for it */
        if (!mine && (atomic_load(&ev->lock->writer) || ev->lock->orphan_mode != LT_MODE_NONE))
            released_for_holder(ev->lock);
        *saved = (lt_held){.addr = ev->addr, .lock = ev->lock, .gen = atomic_load(&ev->lock->gen),
                           .kind = LT_MUTEX, .mode = LT_MODE_WRITE, .depth = 1, .ra = ev->ra};
        return 1;
    }
    *saved = *h;
    if (h->depth > 1) {
        /* libc unlocks a recursive mutex once, and waits with it still locked */
        lt_cond_wait_misuse(ev, cv, LT_WHY_RECURSIVE_WAIT, h);
        h->depth--;
        saved->depth = 0; /* the wait gives back a level, not the lock */
        return 1;
    }
    release(ev->self, h);
    return 1;
}

/* A cancelled condition wait retakes the mutex before the cleanup handlers run (POSIX): from
 * there the mutex is held by that retaking, and a handler that locks it again, or a thread
 * that exits holding it, is told where the wait is, the one call that took it last (the
 * report named the lock call before the wait, which the wait had released: the reader looked
 * for a missing unlock there). A wait that returned keeps the mutex's original acquisition:
 * the program's own lock and unlock bracket it. */
void lt_cond_reacquire(lt_event *ev, const lt_held *saved, int cancelled)
{
    if (saved->depth == 0) {
        lt_held *kept = lt_held_find(ev->self, saved->addr);
        if (kept)
            kept->depth++;
        return;
    }
    /* libc retook the mutex with a blocking lock under the locks the thread holds: edges
     * lead from them into it, as into a lock call's (M, then A, then a wait on M's condition
     * is A -> M against M -> A), unless the mutex is another lock by now; a timed wait's too:
     * its deadline ends the wait, not the retaking */
    int same = atomic_load(&saved->lock->gen) == saved->gen;
    if (same && ev->self->nheld) {
        ev->lock = saved->lock;
        lt_event retake = *ev;
        retake.wait = LT_WAIT_BLOCK;
        lt_after_lock_nested(&retake);
    }
    lt_held *h = lt_held_push(ev->self, saved->addr, saved->lock);
    if (!h)
        return;
    *h = *saved;
    if (cancelled) { /* the wait's call, as lt_held_fill records a lock call */
        h->ra = ev->ra;
        h->stack = lt_cfg.stacks == LT_STACKS_LAZY ? 0 : lt_stack_here(ev->ra);
        h->site = h->stack ? 0 : lt_stack_site_lazy(ev->self, ev->ra, ev->cfa);
    }
    /* edges lead into it, as into a blocking request's */
    h->anchor = lt_anchor_of((lt_kind)h->kind, (lt_mode)h->mode, same);
    if (h->mode == LT_MODE_WRITE && same)
        atomic_store(&h->lock->writer, ev->self->info.seq + 1);
    if (lt_unlikely(lt_cfg.stats))
        lt_stats_acquired(ev, h); /* the condition wait's re-acquisition starts a new hold */
}

void lt_on_annotate(lt_event *ev, const void *object, locktrace_describe_fn describe)
{
    lt_lock *l = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
    if (l)
        lt_shadow_annotate(l, object, describe);
}

/* A lock the fork child shares with its parent: the parent's thread that holds it lives on
 * there and will release it. Checked before it is read (lt_platform_read): the child must
 * not fault on memory the parent unmapped while a thread held a lock in it, and the child has
 * no other thread to unmap it meanwhile. A spinlock's word has no process-shared mark
 * and needs none (no futex: its waiters spin on the word), so shared memory is enough; a
 * mutex or rwlock must be process-shared too, or a waiter sleeps on a futex of its own
 * process that the parent's unlock never wakes. The mark alone is not enough: a
 * process-shared lock in private memory (a global, the heap) is the child's own copy, which
 * the parent's unlock never reaches either (the child hung silently). The mapping is looked
 * up last, for a process-shared lock held at the fork only. */
static int shared_with_parent(const lt_held *h)
{
    union {
        pthread_mutex_t m;
        pthread_rwlock_t rw;
    } word;
    size_t size = h->kind == LT_MUTEX ? sizeof word.m : sizeof word.rw;
    if (lt_lock_custom(h->lock))
        return 0;
    if (h->kind == LT_SPIN)
        return lt_platform_shared_memory(h->addr);
    return (h->kind == LT_MUTEX || h->kind == LT_RWLOCK) &&
           lt_platform_read(&word, h->addr, size) == 0 &&
           lt_platform_lock_pshared(&word, h->kind) && lt_platform_shared_memory(h->addr);
}

/* Marks what t holds as held for good by `owner`, which can no longer release it: it exited,
 * or (by_fork) it is a thread of the parent of this fork child, where only the
 * process-shared locks can still be released. In a fork child t may have stopped half-way
 * through filling an entry: those have no lock yet. Nor does a once-control whose init
 * routine a thread of the parent was running stay taken in the child: glibc keeps the fork
 * generation in its word, and a child's pthread_once runs the routine afresh (it was an
 * abort, a correct program's child killed). */
void lt_orphan_locks(lt_thread *t, const lt_gone *owner)
{
    for (uint32_t i = 0; i < t->held_end; i++) {
        lt_held *h = &t->held[i];
        if (!h->lock || !held_valid(t, h) ||
            (owner->by_fork && (h->kind == LT_ONCE || shared_with_parent(h))))
            continue;
        orphan_entry(h, owner);
    }
}

/* h's lock is held for good by `owner`. (Out of line: inlined into its two callers, its fence
 * failed the ThreadSanitizer build of the core, -Werror=tsan.) */
static __attribute__((noinline)) void orphan_entry(const lt_held *h, const lt_gone *owner)
{
    lt_lock_cold *cold = lt_lock_cold_of(h->lock);
    cold->orphan_of = owner;
    cold->orphan_stack = h->stack ? h->stack : h->site; /* interned already: no allocation on
                                                            the fork and exit paths */
    atomic_thread_fence(memory_order_release); /* before the mode, which says it is one */
    h->lock->orphan_mode = h->mode;
}

/* Entries whose lock word says t does not hold them (the memory became another lock, or is
 * gone: checked before it is read, lt_platform_read) leave t's held set. t is the calling
 * thread, leaving: what it holds does not go away meanwhile in a correct program. */
void lt_drop_stale(lt_thread *t)
{
    union {
        pthread_mutex_t m;
        pthread_rwlock_t rw;
        pthread_spinlock_t s;
    } word;
    static const size_t size[] = {[LT_RWLOCK] = sizeof word.rw, [LT_MUTEX] = sizeof word.m,
                                  [LT_SPIN] = sizeof word.s, [LT_ONCE] = sizeof(pthread_once_t)};
    lt_held_compact(t); /* entries below i then stay where they are while ones above go */
    for (uint32_t i = t->held_end; i-- > 0;) {
        lt_held *h = &t->held[i];
        if (!h->lock)
            continue;
        if (h->kind >= LT_ARRAY_LEN(size) || lt_lock_custom(h->lock))
            continue; /* no word to read: a custom lock's memory is never read */
        if (atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen || /* freed */
            lt_platform_read(&word, h->addr, size[h->kind]) != 0 ||
            !lt_platform_lock_held(&word, h->kind, h->mode, t->info.tid))
            release(t, h);
    }
}

/* A robust mutex held at thread exit is what robust mutexes are for: libc hands the next
 * locker EOWNERDEAD (ThreadSanitizer calls it correct too). The word is read as
 * lt_drop_stale reads it. */
static int robust_mutex(const lt_held *h)
{
    pthread_mutex_t word;
    return h->kind == LT_MUTEX && !lt_lock_custom(h->lock) &&
           lt_platform_read(&word, h->addr, sizeof word) == 0 && lt_platform_mutex_robust(&word);
}

/* The exit-held report of a leaving thread: its locks, robust mutexes left out unless
 * LOCKTRACE_EXIT_HELD=report asks for every lock held at exit. */
static void report_exit_held(lt_thread *t, const lt_thread_info *info)
{
    size_t n = t->nheld, robust = 0;
    if (!lt_cfg.exit_held)
        for (size_t i = 0; i < n; i++)
            robust += robust_mutex(&t->held[i]) != 0;
    if (robust == n)
        return;
    lt_finding f = {.kind = LT_FIND_EXIT_HELD, .why = LT_WHY_EXIT, .thread = *info,
                    .held = t->held, .nheld = n}; /* every lock, if the copy finds no memory */
    lt_held *shown = robust ? malloc((n - robust) * sizeof *shown) : NULL;
    if (shown) {
        size_t k = 0;
        for (size_t i = 0; i < n && k < n - robust; i++)
            if (!robust_mutex(&t->held[i]))
                shown[k++] = t->held[i];
        f.held = shown;
        f.nheld = k;
    }
    lt_report(&f);
    free(shown);
}

/* Whether a thread other than its gone holder may still release orphaned lock l: glibc's
 * unlock of a normal mutex checks no owner (a program that unlocks a mutex another thread
 * locked, as one used as a binary semaphore is, works: a bad-unlock report, not a hang), nor
 * does a spinlock's, and an rwlock's read hold is anybody's to give back (its word names no
 * reader); a custom lock's rules are its own. An error-checking or recursive mutex refuses
 * another thread's unlock (EPERM), and glibc takes another thread's unlock of an rwlock held
 * for write for a read unlock (writer_kept): only the gone thread could have released those. */
static int others_may_release(const lt_lock *l, const void *addr, lt_kind kind)
{
    if (lt_lock_custom(l))
        return 1;
    if (kind == LT_RWLOCK)
        return l->orphan_mode != LT_MODE_WRITE;
    return kind != LT_MUTEX || lt_lock_mutex_type(addr, l) == LT_MUTEX_NORMAL;
}

/* A wait published before its lock's holder exited holding the lock (waitfor.c's
 * lt_waitfor_orphaned): does it still wait for good, as a request after the exit would
 * (orphan_blocks), and can another thread still release the lock (others_may_release)? A
 * process-shared lock that others may release, in memory shared with other processes, may be
 * released by a thread of another process, which this one cannot see: its wait may end. */
int lt_orphan_wait_hopeless(const lt_orphan_wait *w)
{
    if (!orphan_blocks_request(w->lock, w->addr, (lt_kind)w->kind, (lt_mode)w->mode,
                               (lt_wait)w->wait) ||
        !orphan_holds(w->lock, w->addr, (lt_kind)w->kind))
        return 0;
    if (!others_may_release(w->lock, w->addr, (lt_kind)w->kind))
        return LT_HOPELESS;
    int shared = !lt_lock_custom(w->lock) &&
                 (w->kind == LT_SPIN ? lt_platform_shared_memory(w->addr)
                                     : lt_platform_lock_pshared(w->addr, w->kind) &&
                                           lt_platform_shared_memory(w->addr));
    return shared ? 0 : LT_HOPELESS_UNLESS_RELEASED;
}

/* Such a wait, reported by the watchdog once the rest of the process stalled, as the request
 * it is, from its thread's wait record. It goes on: it cannot be made to fail now, and a
 * process so stalled may still be ended from outside as it means to be (uWSGI's graceful
 * reload cancels the worker thread that holds its accept mutex while the main thread waits
 * for it, and the master kills the stalled worker a second later: an abort there turned a
 * reload into a crash). */
void lt_report_orphan_wait(const lt_orphan_wait *w)
{
    lt_finding f = {.kind = LT_FIND_SELF_DEADLOCK, .why = LT_WHY_ORPHANED_WAITING};
    f.outcome = LT_OUTCOME_CONTINUE;
    f.thread = w->who;
    lt_thread_info_fresh(&f.thread);
    f.lock = w->addr;
    f.lock_kind = (lt_kind)w->kind;
    if (w->kind == LT_MUTEX)
        f.mutex_type = lt_lock_mutex_type(w->addr, w->lock);
    if (w->kind == LT_RWLOCK)
        f.writer_pref = lt_lock_prefers_writer(w->addr, w->lock);
    f.req_mode = (lt_mode)w->mode;
    f.wait = (lt_wait)w->wait;
    f.api = w->api;
    f.object = lt_lock_object(w->lock);
    f.describe = lt_lock_describe(w->lock);
    f.first_stack = w->lock->first_stack;
    f.first_partial = w->lock->first_partial;
    f.generation = atomic_load_explicit(&w->lock->gen, memory_order_relaxed);
    f.request_stack = w->stack;
    fill_orphan(&f, w->lock);
    lt_report(&f);
}

/* The thread is leaving with locks held: orphan the locks so a later request for one is known
 * to be hopeless (a robust mutex's is not: orphan_blocks), then report once. The orphaning
 * comes first: the program's key destructors have run, so nothing will release them, and a
 * first report takes 0.3-1 s to symbolize, during which another thread's request used to find
 * a live holder, wait for it, and hang silently once it was gone (scen18: a detached thread's
 * read lock; misuse-5.3w). The exited thread's record is kept for those reports. */
void lt_on_thread_exit(lt_thread *t)
{
    lt_drop_stale(t);
    if (t->nheld == 0)
        return;
    lt_held_compact(t);
    lt_thread_info info;
    lt_thread_info_now(t, &info);
    lt_gone *gone = malloc(sizeof *gone);
    if (gone) {
        *gone = (lt_gone){info, 0};
        lt_orphan_locks(t, gone);
    }
    report_exit_held(t, &info);
    if (gone)
        lt_waitfor_orphaned(gone);
}
