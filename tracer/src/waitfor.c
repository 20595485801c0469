/*
 * waitfor.c - real deadlocks: the wait-for check among blocked threads, and the long-wait
 * watchdog.
 *
 * A thread whose trylock failed publishes its wait slot (lock, mode, stack) and joins the
 * list of waiting threads under wf_lock, then searches for a cycle through itself: it waits
 * for L, which U holds in a conflicting mode (or U is queued for write on L and L prefers
 * writers, so a reader waits behind U), U waits for K, which ... T holds. Only waiting
 * threads are nodes: a thread that runs can still release. A waiting thread does not touch
 * its held set, and leaving the list takes wf_lock, so under wf_lock the held sets of the
 * listed threads are stable. A waiting thread's held set is what it holds (entries join it
 * after libc grants a lock and leave it right after libc releases one, and the thread is in
 * neither step while it waits), so every edge found is real, except "queued behind a
 * writer", which libc may not have registered yet. A found cycle with such an edge (or a
 * condition variable's last signaller, a hint) is therefore searched again after a short
 * grace, and reported only if every thread on it is still in the same wait (same slot seq) -
 * a false deadlock report is worse than none.
 *
 * Each step finds its blockers directly, never by looking at every waiting thread (a pool's
 * thousands of idle workers would make every wait cost that much): the waiting threads are
 * indexed by their seq (a lock's writer field names its exclusive holder by seq, as the held
 * sets' validity does in detect.c; a condition variable's last signaller too), by their
 * pthread_t (joins), by the rwlock they wait to write (readers queued behind them), and by
 * each lock they hold for read (writers wait for its readers). Joining the index costs a
 * wait O(its held set); a step costs O(its blockers).
 *
 * A thread in pthread_join waits for the joined thread (and, when that one is in a condition
 * wait holding nothing, which is not published, finds that wait: "shown" below). A thread in
 * a condition wait that still holds other locks waits for the thread that last signalled
 * that condition variable (the likely signaller; another thread may signal instead, so such
 * a cycle is a warning), and for the holder of the wait's mutex: signalled, timed out or
 * cancelled, the wait returns only once libc has the mutex back, so a cycle through that
 * holder is certain (a waiter holding A with mutex M, the holder of M waiting for A:
 * ThreadSanitizer and Helgrind see M taken under A there).
 *
 * The hint is only a guess: the thread that will signal may be any other, busy with work, in
 * I/O, or blocked on a lock that a running thread will release. A cycle through it is
 * therefore reported only when no thread outside it can run to signal: every other thread
 * of the process sleeps in an untimed futex wait of its own process, the same ones before and
 * after the grace, and no timer is armed, and no child process is alive, to send a signal the
 * program handles, whose handler may end one of those waits (lt_platform_others_stuck; a
 * signal another process sends at will cannot be foreseen). A condition waiter of the cycle must
 * have begun its wait in libc by then, its mutex released: its search runs before that, with
 * the mutex out of its held set but still its own, and a thread asleep on that mutex (the
 * next signaller, often: it signals under the mutex) is held up by the waiter alone and
 * wakes as the wait begins (libgc's collector waits for its free-list builders so, each of
 * which takes the condition variable's mutex to signal). A process-shared condition variable
 * has no hint: a thread of another process may signal it. Seen once, a stall is only a
 * moment: a thread still on its way into its futex, or just woken, reads as running. So a
 * cycle not yet seen stalled is "deferred": the wait that closed it goes on, marked, and the
 * watchdog searches from it again each grace period while it lasts, until the cycle
 * dissolves (the signal came, the wait ended) or the whole process is seen stalled, which it
 * then reports. A correct program whose signaller is slow is never a stall; a real one is
 * reported soon after its last thread falls asleep. Waits that close no such cycle never meet
 * any of this. A certain cycle one of whose threads is not asleep in its wait (on its way,
 * or running a signal handler) is looked at again by the wait that closed it for up to
 * SETTLE_GRACES graces, then deferred the same way.
 *
 * A wait that a cancellation already sent to its thread will end waits for nothing: its
 * thread is marked by pthread_cancel before libc sends it (interpose_cancel.c), and the thread
 * keeps in its wait whether a cancellation ends it (its cancellation enabled, and its type
 * asynchronous or the wait a join or a condition wait; cancel.c). A thread with asynchronous
 * cancellation on that waits for a lock its canceller holds while the canceller joins it is
 * cancelled there (a cancellation that finds it inside the tracer acts as it leaves, before
 * the wait); one with deferred cancellation waits on, since a lock request is no cancellation
 * point, and that is a deadlock still. A cancelled condition wait still retakes its mutex
 * before its cleanup handlers run: only its wait for a signal ends. The mark comes before the
 * cancellation and stays, so a search that sees the canceller in its join sees it too, and a
 * cycle found before it is gone when the confirming search runs.
 *
 * Deadlocks follow LOCKTRACE_ACTION (abort, or the closing call returns EDEADLK; one the
 * watchdog reports goes on instead); a cycle with a timed wait on it is a warning, since that
 * wait will end it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "lt_internal.h"
#include "platform.h"

#define GRACE_NS (50 * 1000 * 1000) /* before a found cycle is searched again */
/* Graces the wait that closes a certain cycle gives a thread of it that is not asleep in its
 * wait yet (on a loaded machine a thread just woken or on its way into its futex can take
 * longer than one grace to get there); after them the wait goes on, deferred (see the top),
 * and the watchdog reports the cycle if its threads ever fall asleep in it. */
#define SETTLE_GRACES 20
#define HOLDERS_SHOWN 16            /* holders named by a long-wait report */
#define WATCH_NS (250 * 1000 * 1000) /* watchdog period; timeouts are whole seconds */
/* A deferred wait is looked at again after 1, 2, 4, ... watchdog rounds, at most 2^this: each
 * look reads every thread's state from /proc, which for a correct program whose cycle through
 * the hint lasts (a long wait) would otherwise cost a file read a thread every 50 ms, for as
 * long as it lasts; a stall is still reported within about 2^this grace periods (~2 s). */
#define LOOK_SPACING_MAX 5
#define SIGNALLERS 4096             /* condition variables whose last signaller is known */
#define INDEX_BITS 14               /* buckets of the index of waiting threads */

typedef struct frame {
    lt_thread *u;
    lt_held *by;     /* the next thread's entry for the lock u waits for; NULL = queued writer */
    uint32_t seq;    /* u's wait */
} frame;

static lt_spin wf_lock = LT_SPIN_INIT(LT_RANK_WAITFOR);
static lt_thread *waiters;
static uint32_t stamp;
static frame *path;
static size_t path_cap;
static _Atomic int watchdog_started LT_START_DATA; /* (read by a fork made alone) */
static _Atomic int watchdog_tid; /* the tracer's own thread: no thread of the program */
static _Atomic uint32_t deferred_waits; /* waits marked deferred (see the top); under wf_lock */
static uint32_t watch_round;            /* the watchdog's rounds so far; under wf_lock */

/* The index of waiting threads (see above), under wf_lock: chained buckets of links, each
 * found by (what, key). A thread's links for its seq, its pthread_t and the lock it waits to
 * write live in its wait slot; those for its read holds come from a pool. */
enum { BY_SEQ, BY_HANDLE, BY_WRITE, BY_READ };

static lt_wait_link *buckets[1u << INDEX_BITS];
static lt_pool read_links = LT_POOL(lt_wait_link, 64 * 1024);

/* The last thread (seq) to signal each condition variable, direct-mapped by address: a
 * colliding condvar overwrites, which only loses a hint. Written on every signal, so it
 * stays lock-free; a torn (cond, seq) pair is only a wrong hint, and a cycle made from it is
 * only reported after the grace re-check. The hint holds only while no thread has started
 * since that signal (threads counts them): a thread that starts a worker and waits for it
 * to say it is ready (rsyslog's queues, most thread pools) waits for the new thread, not for
 * the one that signalled last. Nor does a waiter that a signal since its wait began has
 * marked (cond.c): woken, it waits for its mutex, not for a signal, however long it takes to
 * get it. */
typedef struct signaller {
    _Atomic uintptr_t cond;
    _Atomic int seq;
    _Atomic int threads;
} signaller;

static signaller signallers[SIGNALLERS];

static signaller *signaller_of(uintptr_t cond)
{
    return &signallers[(cond >> 4) % SIGNALLERS];
}

void lt_waitfor_signalled(lt_thread *t, const void *cond)
{
    signaller *s = signaller_of((uintptr_t)cond);
    int threads = lt_thread_count();
    if (atomic_load_explicit(&s->cond, memory_order_relaxed) != (uintptr_t)cond ||
        atomic_load_explicit(&s->seq, memory_order_relaxed) != t->info.seq ||
        atomic_load_explicit(&s->threads, memory_order_relaxed) != threads) {
        atomic_store_explicit(&s->cond, (uintptr_t)cond, memory_order_relaxed);
        atomic_store_explicit(&s->seq, t->info.seq, memory_order_relaxed);
        atomic_store_explicit(&s->threads, threads, memory_order_relaxed);
    }
}

/* ---------------------------------------------------------------------------------------- */

static lt_wait_link **bucket(int what, uintptr_t key)
{
    return &buckets[lt_addr_hash((const void *)(key * 4 + (uintptr_t)what), INDEX_BITS)];
}

static void link_in(lt_wait_link *l, lt_thread *t, int what, uintptr_t key, lt_held *held)
{
    lt_wait_link **b = bucket(what, key);
    l->key = key;
    l->t = t;
    l->held = held;
    l->what = (uint8_t)what;
    l->next = *b;
    l->pprev = b;
    if (*b)
        (*b)->pprev = &l->next;
    *b = l;
}

static void link_out(lt_wait_link *l)
{
    if (!l->pprev)
        return;
    *l->pprev = l->next;
    if (l->next)
        l->next->pprev = l->pprev;
    l->pprev = NULL;
}

/* The first link for (what, key) from l on, along its bucket. */
static lt_wait_link *next_for(lt_wait_link *l, int what, uintptr_t key)
{
    while (l && (l->key != key || l->what != what))
        l = l->next;
    return l;
}

#define EACH_LINK(l, what, key)                                                                 \
    for (lt_wait_link *l = next_for(*bucket(what, key), what, key); l;                          \
         l = next_for(l->next, what, key))

static lt_thread *waiting_thread(int what, uintptr_t key)
{
    lt_wait_link *l = next_for(*bucket(what, key), what, key);
    return l ? l->t : NULL;
}

/* The entries t holds for read, counted before wf_lock is taken: most waits have none, and
 * then joining the index does not walk the held set under the lock. */
static uint32_t read_holds(const lt_thread *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->held_end; i++)
        n += t->held[i].lock && t->held[i].mode == LT_MODE_READ;
    return n;
}

/* t's wait, just published, joins the index, with its `reads` read holds. A read hold
 * without a link (no memory) only hides the cycles through it. */
static void index_wait(lt_thread *t, uint32_t reads)
{
    lt_wait_slot *w = &t->waiting;
    link_in(&w->by_seq, t, BY_SEQ, (uintptr_t)t->info.seq, NULL);
    link_in(&w->by_handle, t, BY_HANDLE, w->handle, NULL);
    if (w->waits_for == LT_FOR_LOCK && w->kind == LT_RWLOCK && w->mode == LT_MODE_WRITE)
        link_in(&w->by_write, t, BY_WRITE, (uintptr_t)w->lock, NULL);
    w->reads = NULL;
    for (uint32_t i = 0; reads && i < t->held_end; i++) {
        lt_held *h = &t->held[i];
        if (!h->lock || h->mode != LT_MODE_READ)
            continue;
        reads--;
        lt_wait_link *l = lt_pool_get(&read_links);
        if (!l)
            continue;
        link_in(l, t, BY_READ, (uintptr_t)h->lock, h);
        l->more = w->reads;
        w->reads = l;
    }
}

static void unindex_wait(lt_thread *t)
{
    lt_wait_slot *w = &t->waiting;
    link_out(&w->by_seq);
    link_out(&w->by_handle);
    link_out(&w->by_write);
    while (w->reads) {
        lt_wait_link *l = w->reads;
        w->reads = l->more;
        link_out(l);
        lt_pool_put(&read_links, l);
    }
}

/* ---------------------------------------------------------------------------------------- */

void lt_lock_ref_fill(lt_lock_ref *r, const void *addr, lt_kind kind, const lt_lock *l)
{
    r->addr = addr;
    r->kind = kind;
    r->mutex_type = kind == LT_MUTEX ? lt_lock_mutex_type(addr, l) : 0;
    r->writer_pref = kind == LT_RWLOCK && lt_lock_prefers_writer(addr, l);
    r->api = l ? l->api : LT_API_PTHREAD;
    r->object = l ? lt_lock_object(l) : NULL;
    r->describe = l ? lt_lock_describe(l) : NULL;
    r->generation = 0; /* one lock per address in these reports */
    r->class_name = NULL;
    r->class_site = 0;
    r->ended = LT_ENDED_NOT;
    r->first_stack = 0;
    r->first_partial = 0;
}

/*
 * Where the calling thread took its held lock h, given a stack `under` it has now (of a lock
 * taken or waited for while h is held): lt_stack_lazy joins h's recorded frames to `under`
 * where that is provably right. The result is kept in the entry, so other threads can show
 * it later; otherwise the recorded frames alone (*partial = 1), interned when h was taken
 * (h->site): each new order edge out of h asks again, mostly with no stack to join
 * (thousands of times for a lock held long), and is answered without the depot.
 */
uint32_t lt_held_stack(lt_held *h, uint32_t under, int *partial)
{
    *partial = 0;
    if (h->stack)
        return h->stack;
    uint32_t id = lt_stack_lazy(h, under, partial);
    if (!*partial)
        h->stack = id;
    return id;
}

static long ms_between(const struct timespec *t, const struct timespec *now)
{
    return (now->tv_sec - t->tv_sec) * 1000 + (now->tv_nsec - t->tv_nsec) / 1000000;
}

static long ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return ms_between(t, &now);
}

/* ------------------------------------------------------------------------------------------
 * Condition waits of threads that hold nothing are not published (a thread pool's idle
 * workers wait so all the time); each thread only keeps where its wait is (lt_thread.
 * cond_wait, one store). A join of such a thread still needs that wait: a joiner that holds
 * the wait's mutex (it woke the waiter under it, then joined) waits forever, since the wait
 * returns only with the mutex retaken. So the search, at a join of a thread not in the
 * index, publishes the thread's condition wait for it ("shown": as the wait to retake its
 * mutex, never with the signaller hint, whose record it cannot keep), and the thread takes it
 * down as it leaves the wait (lt_waitfor_shown_end).
 * ---------------------------------------------------------------------------------------- */

/* t's wait slot, filled, joins the list of waiting threads and the index. */
static void link_wait(lt_thread *t, uint32_t reads)
{
    lt_spin_assert_mine(&wf_lock); /* (the list, the index and its links) */
    lt_wait_slot *w = &t->waiting;
    w->long_reported = 0;
    w->deferred = 0;
    w->orphaned = 0;
    w->prev_waiter = NULL;
    w->next_waiter = waiters;
    if (waiters)
        waiters->waiting.prev_waiter = t;
    waiters = t;
    index_wait(t, reads);
    atomic_fetch_add(&w->seq, 1);
}

typedef struct shown_wait {
    lt_thread *t;
    const lt_cond_waiter *seen; /* a copy of its record */
    lt_lock *mutex;
    uint32_t stack;             /* the wait's call site alone: its stack was not recorded */
} shown_wait;

typedef struct by_handle {
    uintptr_t handle;
    lt_thread *t;
    lt_cond_waiter *w;
    int seq;
} by_handle;

static void find_handle(lt_thread *t, void *arg)
{
    by_handle *f = arg;
    if (t->handle == f->handle && !f->t && !t->detached) {
        f->t = t;
        f->w = t->cond_wait;
        f->seq = t->info.seq;
    }
}

/* Under wf_lock and the wait's condition-variable shard lock: the wait is live. */
static int show(void *arg)
{
    const shown_wait *sw = arg;
    lt_wait_slot *w = &sw->t->waiting;
    if (atomic_load_explicit(&w->seq, memory_order_relaxed) & 1)
        return 0; /* a wait of its own is published (a signal handler's) */
    w->waits_for = LT_FOR_SIGNAL;
    w->target = (uintptr_t)sw->seen->cv;
    w->cond_waiter = NULL;
    w->handle = sw->t->handle;
    w->lock = sw->mutex;
    w->gen = 0;
    w->addr = sw->seen->mutex;
    w->kind = LT_MUTEX;
    w->mode = LT_MODE_WRITE;
    w->wait = LT_WAIT_BLOCK;
    w->api = (uint8_t)sw->seen->api;
    w->cancel_ends = 0; /* a wait to retake the mutex, which no cancellation ends */
    w->stack = sw->stack;
    w->cfa = sw->seen->cfa; /* else the thread's last wait's: left_behind compares with it */
    w->who = sw->seen->who;
    clock_gettime(CLOCK_MONOTONIC, &w->since);
    link_wait(sw->t, 0); /* it holds nothing: else its wait would be published */
    return 1;
}

/* The thread whose pthread_t is `handle`, when it is in a condition wait, with that wait
 * shown; NULL otherwise. Under wf_lock. The wait's record is on that thread's stack, which
 * only the calling thread, joining it, releases (a joinable thread's stack is freed by its
 * join): read in place (lt_platform_read), as in a sandbox that forbids process_vm_readv. */
static lt_thread *show_cond_wait(uintptr_t handle)
{
    by_handle f = {handle, NULL, NULL, 0};
    lt_cond_waiter seen;
    lt_thread_each(find_handle, &f);
    if (!f.w || lt_platform_read(&seen, f.w, sizeof seen) != 0)
        return NULL;
    shown_wait sw = {f.t, &seen, lt_shadow_find(seen.mutex), lt_stack_intern(&seen.ra, 1)};
    return sw.mutex && lt_cond_show(&seen, f.w, f.seq, show, &sw) ? f.t : NULL;
}

/* ---------------------------------------------------------------------------------------- */

static lt_bfs search;

/* items[at] waits for v (by its held entry `by`, or NULL); the goal is self, closing a cycle.
 * 0 when the search is to stop. */
static int offer(lt_bfs *b, size_t at, lt_thread *v, lt_held *by)
{
    lt_thread *self = b->ctx;
    if (!v || v == b->items[at].node || (v != self && v->waiting.mark == stamp))
        return 1;
    v->waiting.mark = stamp;
    return lt_bfs_reach(b, at, v, by, atomic_load(&v->waiting.seq), v == self);
}

/* A lock a wait needs: the lock of a lock wait, the mutex of a condition wait. */
typedef struct want {
    const lt_lock *lock;
    uint32_t gen;
    const void *addr;
    lt_kind kind;
    lt_mode mode;
} want;

/* Whether held entry h of another thread holds up w. */
static int conflicts(const want *w, const lt_held *h)
{
    return h->lock == w->lock && h->gen == w->gen &&
           (w->kind != LT_RWLOCK || h->mode == LT_MODE_WRITE || w->mode == LT_MODE_WRITE);
}

/* A lock wait waits for the lock's writer, for its readers unless it only reads, and a read of
 * a writer-preferring rwlock for the writers queued on it. 0 when the search is to stop. */
static int expand_lock(lt_bfs *b, size_t at, const want *w)
{
    uintptr_t key = (uintptr_t)w->lock;
    int writer = atomic_load_explicit(&w->lock->writer, memory_order_relaxed);
    lt_thread *v = writer ? waiting_thread(BY_SEQ, (uintptr_t)(writer - 1)) : NULL;
    lt_held *h = v ? lt_held_find(v, w->addr) : NULL;
    if (h && conflicts(w, h) && !offer(b, at, v, h))
        return 0;
    if (w->kind != LT_RWLOCK || w->mode == LT_MODE_WRITE) {
        EACH_LINK(l, BY_READ, key)
            if (conflicts(w, l->held) && !offer(b, at, l->t, l->held))
                return 0;
    } else if (lt_lock_prefers_writer(w->addr, w->lock)) {
        EACH_LINK(l, BY_WRITE, key)
            if (l->t->waiting.gen == w->gen && !offer(b, at, l->t, NULL))
                return 0;
    }
    return 1;
}

/* Whether u's wait ends with a cancellation it has been sent (see the top). One the
 * cancellation is unwinding (LT_CANCEL_SPENT since) ends with it too: a wait published after
 * it acted has no cancel_ends (lt_cancel_would_end). */
static int cancel_ends(const lt_thread *u)
{
    return u->waiting.cancel_ends && atomic_load(&u->cancelled);
}

/* The waiting threads that hold up items[at]'s wait. */
static void expand(lt_bfs *b, size_t at)
{
    const lt_thread *u = b->items[at].node;
    const lt_wait_slot *w = &u->waiting;
    int cancelled = cancel_ends(u);
    if (w->waits_for == LT_FOR_LOCK) {
        if (!cancelled)
            expand_lock(b, at,
                        &(want){w->lock, w->gen, w->addr, (lt_kind)w->kind, (lt_mode)w->mode});
    } else if (w->waits_for == LT_FOR_JOIN) {
        if (cancelled)
            return;
        lt_thread *v = waiting_thread(BY_HANDLE, w->target);
        if (!v)
            v = show_cond_wait(w->target);
        if (v && !v->detached) /* glibc refuses the join (EINVAL): it waits for nothing */
            offer(b, at, v, NULL);
    } else {
        /* the mutex first: a step through its holder is certain, the signaller a hint */
        if (w->lock && !expand_lock(b, at, &(want){w->lock,
                                                    atomic_load_explicit(&w->lock->gen,
                                                                         memory_order_relaxed),
                                                    w->addr, LT_MUTEX, LT_MODE_WRITE}))
            return;
        const signaller *s = signaller_of(w->target);
        /* no record: a wait shown for a joiner (its record may be gone), or one on a
         * process-shared condition variable (lt_waitfor_cond_begin); cancelled, the wait
         * retakes its mutex (above) but waits for no signal */
        if (w->cond_waiter && !cancelled &&
            atomic_load_explicit(&s->cond, memory_order_relaxed) == w->target &&
            atomic_load_explicit(&s->threads, memory_order_relaxed) == lt_thread_count() &&
            !lt_cond_woken(w->cond_waiter))
            offer(b, at, waiting_thread(BY_SEQ, (uintptr_t)atomic_load_explicit(
                                                    &s->seq, memory_order_relaxed)), NULL);
    }
}

/* Breadth-first over waiting threads from self back to self (graph.c), so the cycle found
 * is a shortest one; under wf_lock. Returns the cycle's length, its threads in path[0..n-1]
 * (path[i] waits for path[i+1]). */
static size_t find_cycle(lt_thread *self)
{
    search.expand = expand;
    search.ctx = self;
    stamp++;
    self->waiting.mark = stamp;
    size_t len = lt_bfs_run(&search, self, atomic_load(&self->waiting.seq));
    if (len < 2 || !lt_scratch_fit((void **)&path, &path_cap, len - 1, sizeof *path))
        return 0;
    for (size_t i = 0; i + 1 < len; i++)
        path[i] = (frame){search.path[i].node, search.path[i + 1].via, search.path[i].aux};
    return len - 1;
}

/* ---------------------------------------------------------------------------------------- */

/* Joins and condition waits wait for a thread, not a lock: `target` names what they wait on
 * (a condition wait's record is cw). `ends`: a cancellation of the thread ends the wait. */
static void publish(lt_event *ev, lt_wait_for what, uintptr_t target,
                    const lt_cond_waiter *cw, uint32_t reads, int ends)
{
    lt_thread *t = ev->self;
    lt_wait_slot *w = &t->waiting;
    w->waits_for = (uint8_t)what;
    w->target = target;
    w->cond_waiter = cw;
    w->handle = (uintptr_t)pthread_self();
    w->lock = ev->lock;
    w->gen = what == LT_FOR_LOCK ? atomic_load_explicit(&ev->lock->gen, memory_order_relaxed) : 0;
    w->addr = ev->addr;
    w->kind = (uint8_t)ev->kind;
    w->mode = (uint8_t)ev->mode;
    w->wait = (uint8_t)ev->wait;
    w->api = ev->api;
    w->cancel_ends = (uint8_t)ends;
    w->cfa = ev->cfa;
    link_wait(t, reads);
}

/* t's wait is no longer deferred; under wf_lock. */
static void undefer(lt_thread *t)
{
    t->waiting.orphaned = 0;
    if (t->waiting.deferred) {
        t->waiting.deferred = 0;
        atomic_fetch_sub_explicit(&deferred_waits, 1, memory_order_relaxed);
    }
}

static void unpublish(lt_thread *t)
{
    lt_spin_assert_mine(&wf_lock);
    lt_wait_slot *w = &t->waiting;
    if (w->prev_waiter)
        w->prev_waiter->waiting.next_waiter = w->next_waiter;
    else
        waiters = w->next_waiter;
    if (w->next_waiter)
        w->next_waiter->waiting.prev_waiter = w->prev_waiter;
    unindex_wait(t);
    undefer(t);
    atomic_fetch_add(&w->seq, 1);
}

/* A held entry of another thread: its stack; else the frames recorded with it joined to
 * `under`, the stack where that thread waits now (0 = not known to wait), whose frames are
 * still on its stack (lt_stack_lazy), or those frames alone. A waiting thread's entries are
 * completed so when a report shows them, not each time it waits: a thread that waits over
 * and over holding locks would pay for every one of them at every wait. */
static uint32_t entry_stack(const lt_held *h, uint32_t under, int *partial)
{
    *partial = 0;
    return h->stack ? h->stack : lt_stack_lazy(h, under, partial);
}

/* The waiting side of a step, while the wait (and so its lock) surely exists. */
static void fill_wait(lt_wait_step *s, const lt_wait_slot *w)
{
    s->thread = w->who;
    s->waits_for = w->waits_for;
    if (w->waits_for == LT_FOR_LOCK)
        lt_lock_ref_fill(&s->wants, w->addr, (lt_kind)w->kind, w->lock);
    else
        s->wants.addr = (const void *)w->target;
    s->wants.api = w->api;
    s->want_mode = (lt_mode)w->mode;
    s->wait = (lt_wait)w->wait;
    s->wait_stack = w->stack;
    s->waited_ms = ms_since(&w->since);
}

static void fill_step(lt_wait_step *s, const frame *f, const frame *next)
{
    const lt_wait_slot *w = &f->u->waiting;
    fill_wait(s, w);
    if (w->waits_for == LT_FOR_SIGNAL && f->by) {
        /* held up by its mutex's holder: the wait is to retake the mutex, which no deadline
         * ends */
        s->waits_for = LT_FOR_LOCK;
        s->cond = (const void *)w->target;
        lt_lock_ref_fill(&s->wants, w->addr, LT_MUTEX, w->lock);
        s->want_mode = LT_MODE_WRITE;
        s->wait = LT_WAIT_BLOCK;
    }
    s->blocker = next->u->waiting.who;
    s->held_mode = f->by ? (lt_mode)f->by->mode : LT_MODE_NONE;
    s->held_stack = f->by ? entry_stack(f->by, next->u->waiting.stack, &s->held_partial) : 0;
}

/* Whether the cycle now in path[0..n-1] is made of the same waits as `before`. */
static int same_waits(const frame *before, size_t nbefore, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nbefore && (before[j].u != path[i].u || before[j].seq != path[i].seq))
            j++;
        if (j == nbefore)
            return 0;
    }
    return 1;
}

/* Whether a cycle needs the grace: an edge to a writer queued on an rwlock (libc may not have
 * registered it yet) or to a condition variable's last signaller (a hint) may be gone a
 * moment later. An edge to a lock's holder or to a joined thread lasts while both wait, so a
 * cycle of those alone is certain when found; making its thread sleep first only delays it
 * (a timed wait in it, the program's own way out, by 25 times a 2 ms timeout). */
static int uncertain(const frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!f[i].by && f[i].u->waiting.waits_for != LT_FOR_JOIN)
            return 1;
    return 0;
}

/* Whether libc's lock words say that each thread of the cycle path[0..n-1] holds the lock
 * the one before it waits for; under wf_lock. A signal handler's unlock while its thread is
 * inside the tracer passes through untracked (a handler that releases what its own thread
 * waits for: ThreadSanitizer's signal_in_futex_wait), leaving an entry the word contradicts.
 * A pthread_once or a C++ guard has no word that names a holder. */
static int words_agree(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const lt_held *h = path[i].by;
        if (h && h->kind != LT_ONCE &&
            !lt_lock_word_held(h->addr, h->lock, (lt_kind)h->kind, (lt_mode)h->mode,
                               path[(i + 1) % n].u->info.tid))
            return 0;
    }
    return 1;
}

/* Whether a thread of the cycle is about to run a signal handler, which may end its wait:
 * release what another waits for, leave by longjmp, act on a cancellation. */
static int signal_coming(const frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (lt_platform_signal_coming(f[i].u->info.tid))
            return 1;
    return 0;
}

/* A join sleeps on a word of the joined thread's descriptor, where its pthread_t points
 * (glibc's tid word, 720 bytes into a descriptor of about 2.3 KiB). */
#define DESCRIPTOR_BYTES 4096

/* Whether `word` is a futex word that the thread of step s sleeps on in that step's wait: one
 * inside the lock it asks for (glibc's mutex, robust, priority-inheriting or not, has one
 * word there, its rwlock three; a process-shared one is at the same address here), its
 * once-control, its condition variable (a condition wait, until woken, on its way to retake
 * the mutex), or the descriptor of the thread it joins. A C++ guard is waited for on the
 * guard (libstdc++) or on one condition variable for every guard (libc++abi): any word. */
static int sleeps_on(const lt_wait_step *s, uintptr_t word)
{
    if (s->waits_for == LT_FOR_LOCK && s->wants.api == LT_API_CXX)
        return 1;
    size_t size = s->waits_for == LT_FOR_JOIN    ? DESCRIPTOR_BYTES
                  : s->wants.kind == LT_RWLOCK   ? sizeof(pthread_rwlock_t)
                  : s->wants.kind == LT_ONCE     ? sizeof(pthread_once_t)
                                                 : sizeof(pthread_mutex_t);
    return word - (uintptr_t)s->wants.addr < size ||
           (s->cond && word - (uintptr_t)s->cond < sizeof(pthread_cond_t));
}

/* Whether the threads of a cycle that would end the program from `from` on sleep in the
 * kernel where their waits block (a futex of the object waited for; not a spinlock's or an
 * annotated lock's wait): all but the first (the caller's, whose wait closed it) or, for the
 * watchdog's look, all. One that runs, or sleeps elsewhere, has either not reached its wait
 * yet or left it without the tracer seeing it go: a signal handler that jumped out of its
 * lock call (siglongjmp from an alarm, in old code) leaves the wait published for good; or it
 * is not in that wait yet: a wait a handler's wait interrupted is put back as the handler's
 * wait ends, while the handler still runs and holds its locks. Elsewhere includes another
 * futex: the thread that jumped out may then sleep on a semaphore or a raw futex until a
 * thread the cycle does not hold up posts it, and a handler may sleep so inside its thread's
 * wait; until 2026-12-06 any futex wait counted, and such a program was a false deadlock
 * (peer-signal.11, .12), and a cycle through a condition variable's last signaller asked
 * none of its threads, and was a false warning (peer-signal.13). A wait for a signal is not
 * asked: stall_print and mutex_kept are its tests. A cycle with a timed wait in it is a
 * warning, and is not asked (two threads backing off with 1 ms timed locks would each wait out
 * the grace, harm-timed.1). */
static int others_asleep(const lt_wait_step *s, size_t n, size_t from)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].wait == LT_WAIT_TIMED)
            return 1;
    for (size_t i = from; i < n; i++) {
        if (s[i].waits_for == LT_FOR_SIGNAL)
            continue;
        int spins = s[i].waits_for == LT_FOR_LOCK &&
                    (s[i].wants.kind == LT_SPIN || s[i].wants.api == LT_API_CUSTOM);
        uintptr_t word = 0;
        int in = spins ? -1 : lt_platform_futex_word(s[i].thread.tid, &word);
        if (!in || (in > 0 && !sleeps_on(&s[i], word)))
            return 0;
    }
    return 1;
}

/* Whether a thread of the cycle in path[0..n-1] that waits for the signaller hint still
 * holds its condition wait's mutex by libc's word, though its held set no longer has it: it
 * has not begun its wait in libc yet (see the top). A recursive mutex locked more than once
 * stays in the held set, and locked, through the whole wait (detect.c). Under wf_lock, which
 * keeps the wait, its held set and so its mutex in place. */
static int mutex_kept(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        lt_thread *u = path[i].u;
        const lt_wait_slot *w = &u->waiting;
        if (w->waits_for == LT_FOR_SIGNAL && !path[i].by &&
            lt_platform_lock_owned_by(w->addr, LT_MUTEX, u->info.tid) &&
            !lt_held_find(u, w->addr))
            return 1;
    }
    return 0;
}

/* The cycle now in path[0..n-1], filled into steps (mapped: nothing under wf_lock may call
 * malloc, which in some programs takes a pthread mutex whose holder may be about to wait)
 * if it is made of the same waits as `first`; *kept as mutex_kept. Under wf_lock. */
static lt_wait_step *steps_of(lt_thread *self, const frame *first, size_t nfirst, size_t *n,
                              int *kept)
{
    lt_wait_step *steps = NULL;
    *kept = 0;
    /* The watchdog looks at another thread's wait with wf_lock let go in between: that wait
     * may have ended since, and its thread exited, its record cleared (a slot of zeros reads
     * as a wait for a lock at NULL): no search from a wait that is not the one first found
     * (a thread timing out of a deferred timed cycle and exiting just then: SIGSEGV). */
    if (atomic_load_explicit(&self->waiting.seq, memory_order_relaxed) != first[0].seq) {
        *n = 0;
        return NULL;
    }
    *n = find_cycle(self);
    if (*n && same_waits(first, nfirst, *n) &&
        (steps = lt_map(*n * sizeof *steps)) != NULL)
        for (size_t i = 0; i < *n; i++)
            fill_step(&steps[i], &path[i], &path[(i + 1) % *n]);
    *kept = steps && mutex_kept(*n);
    return steps;
}

/* Whether a timed wait is in the cycle in steps: it ends when that times out. */
static int timed(const lt_wait_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].wait == LT_WAIT_TIMED)
            return 1;
    return 0;
}

/* Whether the cycle in steps rests on a condition variable's last-signaller hint. */
static int hinted(const lt_wait_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].waits_for == LT_FOR_SIGNAL)
            return 1;
    return 0;
}

/* For a cycle through the signaller hint: the fingerprint of the other threads' waits when
 * all of them sleep where only a thread of the process can wake them and every condition
 * waiter of the cycle has released its mutex (`kept`: one has not, see the top); 0 when one
 * may still run and signal. The steps' threads are the cycle's own. */
static uint64_t stall_print(const lt_wait_step *s, size_t n, int kept)
{
    if (kept)
        return 0;
    int *skip = lt_map((n + 1) * sizeof *skip);
    if (!skip)
        return 0;
    for (size_t i = 0; i < n; i++)
        skip[i] = s[i].thread.tid;
    skip[n] = atomic_load_explicit(&watchdog_tid, memory_order_relaxed);
    uint64_t print = lt_platform_others_stuck(skip, n + 1);
    lt_platform_unmap(skip, (n + 1) * sizeof *skip);
    return print;
}

static void watchdog_start(int always);

/* The watchdog's first look at t's wait comes with its next round; under wf_lock. */
static void defer_locked(lt_thread *t)
{
    lt_wait_slot *w = &t->waiting;
    if (w->deferred)
        return;
    w->deferred = 1;
    w->looks = 0;
    w->next_look = watch_round + 1;
    atomic_fetch_add_explicit(&deferred_waits, 1, memory_order_relaxed);
}

/* t's wait `seq` closed a cycle through the signaller hint that is not seen stalled yet: the
 * watchdog looks at it again while it lasts (see the top). */
static void defer(lt_thread *t, uint32_t seq)
{
    lt_spin_lock(&wf_lock);
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) == seq)
        defer_locked(t);
    lt_spin_unlock(&wf_lock);
    watchdog_start(1);
}

/*
 * A blocking wait for a lock whose holder exited holding it, published before the exit, is no
 * wait that a later check meets: no cycle (a gone thread waits for nothing), no request after
 * the exit (detect.c's orphan check). Nor is a condition wait whose mutex it is: woken or not,
 * timed or not, the wait returns only with its mutex retaken (cancelled too). Such a wait
 * waits for good when only the gone thread could have released the lock (an error-checking
 * mutex, an rwlock held for write), and then is reported at once, whatever the other threads
 * do; else another thread may still unlock it (glibc lets any thread unlock a normal mutex),
 * and it waits for good only once no other thread of the process runs to end it so or some
 * other way (a cancellation, a handler that jumps out of it, the process's exit). So it is
 * deferred as a cycle through the signaller hint is, and the watchdog looks at it
 * (orphan_look); the report lets it wait on (detect.c: lt_report_orphan_wait). A timed lock
 * wait ends at its deadline.
 */
typedef struct orphan_cond {
    const lt_gone *gone;
    int any;
} orphan_cond;

/* t's lock, or its condition wait's mutex, is held for good by `gone`. */
static int held_by_gone(const lt_lock *l, const lt_gone *gone)
{
    return l && l->orphan_mode != LT_MODE_NONE && lt_lock_cold_of(l)->orphan_of == gone;
}

/* A thread in a condition wait not published (it holds nothing else: waits of such threads
 * are not, see above) whose mutex `gone` left locked: shown as for a joiner's search, and
 * deferred orphaned. Under wf_lock. */
static void show_orphan_cond(lt_thread *t, void *arg)
{
    orphan_cond *oc = arg;
    lt_cond_waiter *cw = t->cond_wait, seen;
    if (!cw || lt_platform_read(&seen, cw, sizeof seen) != 0)
        return;
    lt_lock *m = lt_shadow_find(seen.mutex);
    if (!held_by_gone(m, oc->gone))
        return;
    shown_wait sw = {t, &seen, m, lt_stack_intern(&seen.ra, 1)};
    if (lt_cond_show(&seen, cw, t->info.seq, show, &sw)) {
        t->waiting.orphaned = 1;
        defer_locked(t);
        oc->any = 1;
    }
}

void lt_waitfor_orphaned(const lt_gone *gone)
{
    orphan_cond oc = {gone, 0};
    lt_spin_lock(&wf_lock);
    for (lt_thread *u = waiters; u; u = u->waiting.next_waiter) {
        lt_wait_slot *w = &u->waiting;
        int lock = w->waits_for == LT_FOR_LOCK && w->wait == LT_WAIT_BLOCK &&
                   held_by_gone(w->lock, gone) &&
                   atomic_load_explicit(&w->lock->gen, memory_order_relaxed) == w->gen;
        if (!lock && (w->waits_for != LT_FOR_SIGNAL || !held_by_gone(w->lock, gone)))
            continue;
        w->orphaned = 1;
        defer_locked(u);
        oc.any = 1;
    }
    lt_thread_each(show_orphan_cond, &oc);
    lt_spin_unlock(&wf_lock);
    if (oc.any)
        watchdog_start(1);
}

/* The watchdog's look at t's wait `seq`, marked orphaned (copied as w): reported at once when
 * nothing can release its lock, or when another thread could but every other thread sleeps
 * for good, the same before and after a grace; forgotten when it is no longer hopeless (the
 * lock word no longer names the gone thread, or a cancellation sent to the thread ends the
 * lock wait: cancel_ends; a cancelled condition wait retakes its mutex all the same). */
static void orphan_look(lt_thread *t, uint32_t seq, const lt_orphan_wait *w)
{
    int skip[2] = {w->who.tid, atomic_load_explicit(&watchdog_tid, memory_order_relaxed)};
    int hopeless = lt_orphan_wait_hopeless(w);
    uint64_t stall = hopeless == LT_HOPELESS_UNLESS_RELEASED ? lt_platform_others_stuck(skip, 2)
                                                              : hopeless == LT_HOPELESS;
    if (stall && hopeless == LT_HOPELESS_UNLESS_RELEASED) {
        lt_platform_nap(GRACE_NS / 1000);
        stall = lt_platform_others_stuck(skip, 2) == stall &&
                lt_orphan_wait_hopeless(w) == LT_HOPELESS_UNLESS_RELEASED;
    }
    lt_spin_lock(&wf_lock);
    int same = atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) == seq;
    if (same && t->waiting.waits_for == LT_FOR_LOCK && cancel_ends(t))
        hopeless = stall = 0;
    if (same && (!hopeless || stall))
        undefer(t);
    lt_spin_unlock(&wf_lock);
    if (same && stall)
        lt_report_orphan_wait(w);
}

/* The cycle found when the wait began (first[0] is self's), confirmed: at once when it is
 * certain, else after the grace (where it is uncertain, where the lock words or a signal on
 * its way say it may not last, or where another of its threads is not asleep in its wait),
 * and then only if its threads are still in the same waits and asleep in them; one through
 * the signaller hint only while the rest of the process is stalled and its condition waiters
 * have released their mutexes, before the grace and after it, and else deferred. NULL when
 * it dissolved or is deferred. A grace is a nap of the system call itself: nanosleep is a
 * cancellation point, and the wait's call (a lock request) may be none, so a cancellation
 * sent to a thread with it deferred meanwhile unwound the thread out of the tracer, its wait
 * left published for good (harm-cancel.11). graces_max: SETTLE_GRACES from the closing wait,
 * 1 from the watchdog's look, where the deferred wait's own thread must sleep in it too. */
static lt_wait_step *confirm(lt_thread *self, const frame *first, size_t nfirst, int agree,
                             int graces_max, size_t *n)
{
    size_t from = graces_max > 1; /* the closing wait's own thread runs (others_asleep) */
    int settle = !agree || uncertain(first, nfirst) || signal_coming(first, nfirst);
    int kept;
    lt_spin_lock(&wf_lock);
    lt_wait_step *steps = steps_of(self, first, nfirst, n, &kept);
    lt_spin_unlock(&wf_lock);
    /* A cycle through a timed wait ends when that times out: a warning once it has lasted a
     * grace, the same waits in it, and none before. Two threads that take their second locks
     * with a short deadline each and back off on ETIMEDOUT (correct code, silent as an
     * inversion since 2026-12-06) met in such a cycle in most rounds, each one a warning (one
     * program: 300 lines of `again`). The wait that closes it goes on at once (a grace before
     * it was 55 s where 1,000 rounds of 1 ms timeouts take 2, harm-timed.1); the watchdog
     * looks again. */
    if (steps && timed(steps, *n)) {
        if (graces_max > 1) {
            lt_platform_unmap(steps, *n * sizeof *steps);
            defer(self, first[0].seq);
            return NULL;
        }
        settle = 1;
    }
    if (steps && !settle && others_asleep(steps, *n, from))
        return steps;
    uint64_t stall = steps && hinted(steps, *n) ? stall_print(steps, *n, kept) : 1;
    if (steps)
        lt_platform_unmap(steps, *n * sizeof *steps);
    if (!stall) {
        /* a thread outside the cycle may still signal: the wait goes on at once */
        defer(self, first[0].seq);
        return NULL;
    }
    lt_platform_nap(GRACE_NS / 1000);
    lt_spin_lock(&wf_lock);
    steps = steps_of(self, first, nfirst, n, &kept);
    lt_spin_unlock(&wf_lock);
    if (!steps)
        return NULL;
    if (hinted(steps, *n)) {
        uint64_t now = stall_print(steps, *n, kept);
        if (!now || now != stall) {
            lt_platform_unmap(steps, *n * sizeof *steps);
            defer(self, first[0].seq);
            return NULL;
        }
    }
    /* A cycle (a hinted one stalled) whose threads are in the same waits but not all asleep
     * in them yet: looked at again, a grace at a time, while it lasts, then deferred. Given up
     * after one grace, a real deadlock of a thread that took longer went unreported for good,
     * as no later wait looks at it (1 run in ~70 at load 30-50). A stale wait (a handler
     * jumped out of its lock call) is never asleep in it. */
    for (int graces = 1; steps && !others_asleep(steps, *n, from); graces++) {
        lt_platform_unmap(steps, *n * sizeof *steps);
        steps = NULL;
        if (graces == graces_max) {
            defer(self, first[0].seq);
            break;
        }
        lt_platform_nap(GRACE_NS / 1000);
        lt_spin_lock(&wf_lock);
        steps = steps_of(self, first, nfirst, n, &kept);
        lt_spin_unlock(&wf_lock);
    }
    return steps;
}

/* The threads of a deadlock or long-wait report named as they are now: their names were kept
 * when the waits began. */
static void name_threads(lt_wait_step *steps, size_t n, int blockers)
{
    for (size_t i = 0; i < n; i++) {
        lt_thread_info_fresh(&steps[i].thread);
        if (blockers)
            lt_thread_info_fresh(&steps[i].blocker);
    }
}

/* veto: the caller is the wait that closed the cycle, whose call can still fail (EDEADLK);
 * the watchdog's report of a deferred one cannot make a call fail, and aborts or goes on. */
static int report_deadlock(lt_wait_step *steps, size_t n, int veto)
{
    lt_finding f = {.kind = LT_FIND_DEADLOCK, .why = LT_WHY_WAIT_CYCLE};
    name_threads(steps, n, 1);
    f.thread = steps[0].thread;
    f.steps = steps;
    f.nsteps = n;
    for (size_t i = 0; i < n; i++) {
        int w = steps[i].waits_for == LT_FOR_SIGNAL ? 2 : steps[i].wait == LT_WAIT_TIMED;
        f.warning = w > f.warning ? w : f.warning;
    }
    f.outcome = f.warning                            ? LT_OUTCOME_CONTINUE
                : lt_cfg.action != LT_ACTION_EDEADLK ? LT_OUTCOME_ABORT
                : veto                               ? LT_OUTCOME_EDEADLK
                                                     : LT_OUTCOME_CONTINUE;
    f.request_stack = steps[0].wait_stack;
    lt_report(&f);
    lt_platform_unmap(steps, n * sizeof *steps);
    return f.outcome == LT_OUTCOME_EDEADLK ? EDEADLK : 0;
}

/* Whether t's published wait was left without its end being seen: a call made at or above
 * that wait's frame on the same stack (a signal handler that siglongjmp'd out of it); a
 * handler's call nested in the wait is below it, or on another stack (sigaltstack). A
 * condition wait a joiner's search showed has the frame of its call (show), so that call's
 * own wait, when the show came before it looked, is one made at that frame too: it replaces
 * the shown one, which lacks the signaller hint and the thread's read holds. */
static int left_behind(const lt_thread *t, uintptr_t cfa)
{
    uintptr_t lo = t->stack_lo, size = t->stack_hi - t->stack_lo, old = t->waiting.cfa;
    return size && cfa - lo < size && old - lo < size && cfa >= old;
}

/* t's published wait, interrupted by a signal handler's wait, is kept, innermost, to be put
 * back when that one ends; under wf_lock, before t's slot is taken down. */
static void keep_interrupted(lt_thread *t)
{
    lt_wait_kept *k = &t->interrupted[t->nkept++];
    memcpy(k->what, (char *)&t->waiting + offsetof(lt_wait_slot, lock), sizeof k->what);
}

/* The handler's wait has ended: the thread is back in the wait it interrupted, published
 * again as it was (a new seq: a search that saw it before sees another wait), and deferred,
 * orphaned too if it was, for the watchdog to look at from its next round. Its marks went
 * with its slot, and a stall through it was never reported; and a cycle another thread's
 * search found through it, confirmed after a grace, found another wait there and was dropped
 * (a cancelled condition wait, whose joiner holds its mutex, makes such a handler's wait in
 * the unwinder as the cancellation unwinds it, then retakes the mutex: a real deadlock that
 * hung silently). The watchdog's look counts a cycle through it only once its thread sleeps
 * in it again (others_asleep): the handler still runs at the put-back, holding its locks,
 * and a cycle through them was a false deadlock. Under wf_lock, t's slot not published. */
static void put_back_interrupted(lt_thread *t)
{
    lt_wait_slot *w = &t->waiting;
    lt_wait_kept *k = &t->interrupted[--t->nkept];
    memcpy((char *)w + offsetof(lt_wait_slot, lock), k->what, sizeof k->what);
    uint8_t long_reported = w->long_reported, orphaned = w->orphaned;
    link_wait(t, read_holds(t));
    w->long_reported = long_reported;
    w->orphaned = orphaned;
    defer_locked(t);
}

/* Publishes the wait and looks for a cycle through it; the result is the call's veto. A
 * wait that begins while the thread's own wait is published (a signal handler that locks
 * while its thread is blocked) is the thread's wait until it ends: the thread cannot go on in
 * the wait it interrupted before the handler returns. So it replaces that one, which is kept
 * and put back at its end (published 2 and up): a cycle through the handler's wait is found, and
 * none is made up through the interrupted one while the handler waits elsewhere (a handler
 * holding a lock and waiting for a running thread's was a false deadlock with a thread that
 * asked for that lock and held the interrupted wait's lock). So with a handler's wait that a
 * handler of another signal interrupts in turn: the innermost wait is the thread's, and each
 * is put back as the one nested in it ends, up to LT_WAIT_NESTED kept; deeper, a wait is
 * neither published nor checked. A wait left behind is taken down first, and so is this
 * call's own condition wait shown for a joiner before this look (left_behind); the kept ones
 * are forgotten with it, since the jump may have left them too. */
static int begin(lt_event *ev, lt_wait_for what, uintptr_t target, const lt_cond_waiter *cw)
{
    lt_thread *t = ev->self;
    /* (acquire: a shown wait's frame was written by the joiner) */
    if (lt_unlikely(atomic_load_explicit(&t->waiting.seq, memory_order_acquire) & 1) &&
        left_behind(t, ev->cfa)) {
        lt_spin_lock(&wf_lock);
        unpublish(t);
        t->nkept = 0; /* left with it (siglongjmp out of a handler) */
        lt_spin_unlock(&wf_lock);
    }
    /* A timed request for a lock this thread holds was reported by detect.c as the
     * self-deadlock it is, and goes on to time out: its cycle is that report again. */
    int told = what == LT_FOR_LOCK && ev->held && ev->wait == LT_WAIT_TIMED;
    int nested = 0;
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1) {
        if (t->nkept == LT_WAIT_NESTED)
            return 0;
        nested = 1;
    }
    uint32_t stack = lt_stack_whole(t, ev->ra, ev->cfa);
    lt_thread_info who = *lt_thread_info_kept(t);
    struct timespec since;
    clock_gettime(CLOCK_MONOTONIC, &since);
    watchdog_start(0);
    uint32_t reads = read_holds(t);
    int ends = lt_cancel_would_end(&lt_tls, what != LT_FOR_LOCK); /* (publish) */
    lt_spin_lock(&wf_lock);
    /* A joiner's search may have shown this thread's condition wait since the look above
     * (show_cond_wait: between lt_cond_arrive and here): its own wait replaces that one. Linked
     * a second time, the list of waiters became a loop, and the next walk of it (the watchdog's,
     * under wf_lock) never ended: every thread then hung on wf_lock (wait-2.1a, 1 run in ~200).
     * Where the wait is, and since when, go in the slot here too: written before the lock, the
     * show overwrote them, and a deadlock report gave the wait its call site alone
     * (peer-join.16). */
    int level = 0;
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1) {
        if (nested) {
            keep_interrupted(t);
            level = t->nkept;
        }
        unpublish(t);
    }
    t->waiting.stack = stack;
    t->waiting.who = who;
    t->waiting.since = since;
    publish(ev, what, target, cw, reads, ends);
    ev->published = 1 + level;
    size_t n = told ? 0 : find_cycle(t);
    frame *first = n ? lt_map(n * sizeof *first) : NULL;
    int agree = first && words_agree(n);
    if (first)
        memcpy(first, path, n * sizeof *first);
    lt_spin_unlock(&wf_lock);
    if (!first)
        return 0;
    size_t m;
    lt_wait_step *steps = confirm(t, first, n, agree, SETTLE_GRACES, &m);
    lt_platform_unmap(first, n * sizeof *first);
    return steps ? report_deadlock(steps, m, 1) : 0;
}

/* The calling thread is about to block on ev->lock. Returns nonzero (EDEADLK) when the call
 * is to fail instead; lt_waitfor_end follows either way. */
int lt_waitfor_begin(lt_event *ev)
{
    return begin(ev, LT_FOR_LOCK, 0, NULL);
}

/* A thread that joins itself waits for its own exit: glibc and macOS return EDEADLK, musl
 * waits forever (as an rwlock held for write and requested again). A cycle of one thread,
 * reported as a deadlock (Helgrind reports the join too). */
static int join_self(lt_event *ev)
{
    lt_thread *t = ev->self;
    lt_wait_step *step = lt_map(sizeof *step);
    if (!step)
        return 0;
    *step = (lt_wait_step){.thread = *lt_thread_info_kept(t), .waits_for = LT_FOR_JOIN,
                           .wait = LT_WAIT_BLOCK, .want_mode = LT_MODE_NONE,
                           .held_mode = LT_MODE_NONE,
                           .wait_stack = lt_stack_whole(t, ev->ra, ev->cfa)};
    step->wants.addr = (const void *)(uintptr_t)pthread_self();
    step->wants.api = ev->api;
    step->blocker = step->thread;
    return report_deadlock(step, 1, 1);
}

/* The calling thread is about to wait in pthread_join for `target`. Every join is published,
 * also one that holds no lock: another thread may join the joiner (two threads joining each
 * other), and a join is rare enough that its wait record costs nothing that shows. */
int lt_waitfor_join_begin(lt_event *ev, uintptr_t target)
{
    if (lt_unlikely(target == (uintptr_t)pthread_self()))
        return join_self(ev);
    return begin(ev, LT_FOR_JOIN, target, NULL);
}

/* The calling thread is about to wait on `cond`, its mutex already out of the held set. As
 * for joins, only a thread that still holds locks can close a cycle. Never vetoed: such a
 * cycle is a warning. A process-shared condition variable may be signalled by a thread of
 * another process, which neither its last signaller here nor a stall of this process says
 * anything about: its wait goes without the hint (as a wait shown for a joiner does), and
 * waits only to retake its mutex. */
void lt_waitfor_cond_begin(lt_event *ev, const void *cond, const lt_cond_waiter *w)
{
    if (!ev->self->nheld)
        return;
    /* the mutex the wait retakes (the held set no longer has it) */
    if (!ev->lock)
        ev->lock = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
    (void)begin(ev, LT_FOR_SIGNAL, (uintptr_t)cond, lt_platform_cond_shared(cond) ? NULL : w);
}

/* The calling thread leaves a condition wait that a joiner's search showed. */
void lt_waitfor_shown_end(void)
{
    lt_thread *t = lt_tls.self;
    lt_spin_lock(&wf_lock);
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1)
        unpublish(t);
    lt_spin_unlock(&wf_lock);
}

/* A wait ends. A handler's wait puts back the one it interrupted; the interrupted wait's own
 * end finds its slot published only if that was done (a handler that jumped out of its wait
 * left it published instead, and the interrupted one is forgotten). Waits kept deeper than
 * the one put back were kept by handlers that jumped out of their waits: forgotten too. */
void lt_waitfor_end(lt_event *ev)
{
    if (!ev->published)
        return;
    lt_thread *t = ev->self;
    int level = ev->published - 1, back = 0;
    ev->published = 0;
    lt_spin_lock(&wf_lock);
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1)
        unpublish(t);
    if (level && t->nkept >= level) {
        t->nkept = (uint8_t)level;
        put_back_interrupted(t);
        back = 1;
    } else if (!level) {
        t->nkept = 0;
    }
    lt_spin_unlock(&wf_lock);
    if (back)
        watchdog_start(1);
}

/* The calling thread t leaves for good (thread.c): a wait it left published (a signal
 * handler jumped out of it, and no wait of the thread's since took it down: left_behind) goes
 * with it, and so do the waits kept under it. Left there, the list of waiting threads and the
 * index kept the thread's slot, which the registry then clears and gives back to its pool or
 * unmaps: the next search or look through them read freed memory (SIGSEGV, peer-signal.11p
 * and .12f, about 1 run in 40 beside two busy loops). */
void lt_waitfor_thread_exit(lt_thread *t)
{
    if (!(atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1))
        return;
    lt_spin_lock(&wf_lock);
    if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) & 1)
        unpublish(t);
    t->nkept = 0;
    lt_spin_unlock(&wf_lock);
}

/* ------------------------------------------------------------------------------------------
 * Detached threads. A join of a detached thread fails at once (glibc: EINVAL; POSIX leaves it
 * undefined), so it waits for nothing (expand reads lt_thread.detached). Threads created
 * detached are marked as they start (interpose.c); pthread_detach (interpose_detach.c) marks
 * the thread here. The usual detach comes right after pthread_create, often before the new
 * thread has registered: the detach then stays pending, by handle, and the thread takes it
 * as it registers (lt_waitfor_detach_claim). The detach leaves its handle pending before it
 * walks the registry, and a thread's handle is set under the registry's lock: either the walk
 * finds the thread, or the thread registers after it and finds the handle. A detach of a
 * thread that had already exited does not come here (interpose_detach.c): its handle would
 * stay pending until the next thread with that cached descriptor claimed it. One that exits
 * between that check and this walk leaves its handle pending all the same, which then only
 * hides a later thread's joins; with every slot taken, a detach is not recorded, as none was
 * before.
 * ---------------------------------------------------------------------------------------- */
#define PENDING 64

static _Atomic uintptr_t pending[PENDING];
static _Atomic int npending LT_START_DATA; /* read by every registration */

typedef struct marking {
    uintptr_t handle;
    int found;
} marking;

static void mark(lt_thread *t, void *arg)
{
    marking *m = arg;
    if (t->handle == m->handle) {
        t->detached = 1;
        m->found = 1;
    }
}

/* Takes `handle` out of the pending set; 1 when it was there. */
static int unpend(uintptr_t handle)
{
    for (int i = 0; i < PENDING; i++) {
        uintptr_t h = handle;
        if (atomic_load(&pending[i]) == handle &&
            atomic_compare_exchange_strong(&pending[i], &h, 0)) {
            atomic_fetch_sub(&npending, 1);
            return 1;
        }
    }
    return 0;
}

void lt_waitfor_detach_claim(lt_thread *t)
{
    if (atomic_load(&npending) && unpend(t->handle))
        t->detached = 1;
}

/* `handle` was detached (pthread_detach returned 0): the thread with it is marked, or, when
 * it has not registered yet, the handle is left pending for it. */
void lt_waitfor_detached(uintptr_t handle)
{
    marking m = {handle, 0};
    for (int i = 0; i < PENDING; i++) {
        uintptr_t none = 0;
        if (atomic_compare_exchange_strong(&pending[i], &none, handle)) {
            atomic_fetch_add(&npending, 1);
            break;
        }
    }
    lt_thread_each(mark, &m);
    if (m.found)
        unpend(handle);
}

/* ------------------------------------------------------------------------------------------
 * The watchdog: a thread of ours, started with the first wait when LOCKTRACE_WAIT_TIMEOUT is
 * set, that looks at the waiting list a few times per timeout, or else with the first
 * deferred wait (see the top), which it looks at each grace period while there are some.
 * ---------------------------------------------------------------------------------------- */
typedef struct holders {
    const lt_lock *lock;      /* the waited-for identity */
    uint32_t gen;
    lt_wait_step steps[1 + HOLDERS_SHOWN]; /* [0] the waiter, then the holders */
    size_t n;
} holders;

typedef struct holder_query {
    const lt_thread *t; /* the thread whose held set is being walked */
    const lt_lock *lock;
    uint32_t gen;
    int confirm;
    lt_wait_step *out;
    size_t n, max;
} holder_query;

/* Whether t's entry h (a copy) still stands for a hold of its lock, for a query that confirms
 * it: an unlock leaves the held set after libc's unlock, so for a moment the entry outlives
 * the hold, and the next owner may take the lock, release it and free its memory meanwhile
 * (a thread pool whose last worker signals its destructor under the pool's mutex). The
 * writer goes before libc's unlock (lt_unlock_begin), and the lock word says whether
 * anybody still reads it; the memory is the program's still (the caller's release). */
static int holder_confirmed(const lt_thread *t, const lt_held *h, int confirm)
{
    return lt_held_current(t, h) &&
           (confirm == LT_CONFIRM_RECORD ||
            lt_lock_word_held(h->addr, h->lock, (lt_kind)h->kind, (lt_mode)h->mode, t->info.tid));
}

/* Adds h as q->t's step when it is an entry for the lock; 1 (ends the walk) then. */
static int holder_step(const lt_held *h, void *arg)
{
    holder_query *q = arg;
    const lt_thread *t = q->t;
    if (h->lock != q->lock || h->gen != q->gen ||
        (q->confirm && !holder_confirmed(t, h, q->confirm)))
        return 0;
    lt_wait_step *s = &q->out[q->n++];
    s->thread = atomic_load(&t->waiting.seq) & 1 ? t->waiting.who : t->info;
    s->wants.addr = h->addr;
    s->wants.kind = (lt_kind)h->kind;
    s->held_mode = (lt_mode)h->mode;
    s->held_stack = entry_stack(h, 0, &s->held_partial);
    return 1;
}

/* Adds t's entry for the lock, read with lt_held_walk since t runs on. */
static void find_holder(lt_thread *t, void *arg)
{
    holder_query *q = arg;
    if (q->n >= q->max)
        return;
    q->t = t;
    lt_held_walk_live(t, holder_step, q);
}

/* The threads that hold (lock, gen) now, at most max, as steps: thread, held_mode, the lock's
 * address and kind (wants) and where it took the lock (the call site, unless a whole stack is
 * known). confirm (LT_CONFIRM_*): only holds that the tracer's record of the lock, and its
 * word too with LT_CONFIRM_WORD, confirm (holder_confirmed). */
size_t lt_holders_find(const lt_lock *lock, uint32_t gen, int confirm, lt_wait_step *out,
                       size_t max)
{
    holder_query q = {NULL, lock, gen, confirm, out, 0, max};
    lt_thread_each(find_holder, &q);
    return q.n;
}

/* Fills hs->steps[0] with one wait that has gone on too long and is not reported yet, while
 * the lock it waits for surely exists; 0 when there is none. */
static int next_long_wait(holders *hs)
{
    int found = 0;
    struct timespec now;
    memset(hs, 0, sizeof *hs);
    clock_gettime(CLOCK_MONOTONIC, &now);
    lt_spin_lock(&wf_lock);
    for (lt_thread *t = waiters; t && !found; t = t->waiting.next_waiter) {
        lt_wait_slot *w = &t->waiting;
        if (w->waits_for != LT_FOR_LOCK || w->long_reported ||
            ms_between(&w->since, &now) < (long)lt_cfg.wait_timeout * 1000)
            continue;
        w->long_reported = found = 1;
        hs->lock = w->lock;
        hs->gen = w->gen;
        hs->n = 1;
        fill_wait(&hs->steps[0], w);
    }
    lt_spin_unlock(&wf_lock);
    return found;
}

/* What each holder does now when it waits itself, as the thread dump shows it: a holder in a
 * condition wait, in a join or waiting for another lock is the story of most long waits
 * (cv_deadlock: the consumer waits on a condition holding the lock the producer needs). Under
 * wf_lock a published wait and its lock surely exist (fill_wait). The holder was seen by its
 * held set just before: matched by its thread's number, it may have stopped waiting since. */
static void holders_wait(holders *hs)
{
    lt_spin_lock(&wf_lock);
    for (lt_thread *t = waiters; t; t = t->waiting.next_waiter)
        for (size_t i = 1; i < hs->n; i++) {
            lt_wait_step *s = &hs->steps[i];
            if (t->waiting.who.seq != s->thread.seq || s->now_waits)
                continue;
            fill_wait(s, &t->waiting);
            s->now_waits = 1;
        }
    lt_spin_unlock(&wf_lock);
    /* One that waits for nothing the tracer sees: the system call it sleeps in (read on a
     * pipe, a sleep, a semaphore's futex) or running tells a slow holder from a stuck one. */
    for (size_t i = 1; i < hs->n; i++)
        if (!hs->steps[i].now_waits)
            lt_platform_thread_doing(hs->steps[i].thread.tid, hs->steps[i].now_in,
                                     sizeof hs->steps[i].now_in);
    for (size_t i = 1; i < hs->n; i++) {
        lt_wait_step *s = &hs->steps[i];
        by_handle f = {(uintptr_t)s->wants.addr, NULL, NULL, 0};
        if (!s->now_waits || s->waits_for != LT_FOR_JOIN)
            continue;
        lt_thread_each(find_handle, &f);
        s->blocker = f.t ? f.t->info : (lt_thread_info){.seq = -1};
    }
}

static void report_long_wait(holders *hs)
{
    hs->n += lt_holders_find(hs->lock, hs->gen, LT_CONFIRM_NONE, hs->steps + 1, HOLDERS_SHOWN);
    holders_wait(hs);
    name_threads(hs->steps, hs->n, 0);
    lt_finding f = {.kind = LT_FIND_LONG_WAIT, .why = LT_WHY_WAIT_TIMEOUT,
                    .outcome = LT_OUTCOME_CONTINUE};
    f.thread = hs->steps[0].thread;
    f.steps = hs->steps;
    f.nsteps = hs->n;
    f.request_stack = hs->steps[0].wait_stack;
    lt_report(&f);
}

/* One look at each deferred wait (see the top): the cycle through it is searched again and
 * confirmed as when the wait began; reported once the rest of the process is seen stalled
 * (a certain cycle: once its threads sleep in their waits), forgotten once it is gone. A
 * certain one comes here only when its threads were not all asleep within the closing wait's
 * graces; its call has gone into libc by now, so LOCKTRACE_ACTION=edeadlk cannot make it fail
 * from here (the report goes on instead). */
static void look_again(void)
{
    if (!atomic_load_explicit(&deferred_waits, memory_order_relaxed))
        return;
    lt_spin_lock(&wf_lock);
    uint32_t round = ++watch_round;
    lt_spin_unlock(&wf_lock);
    for (;;) {
        lt_spin_lock(&wf_lock);
        lt_thread *t = atomic_load_explicit(&deferred_waits, memory_order_relaxed) ? waiters : NULL;
        while (t && (!t->waiting.deferred || (int32_t)(t->waiting.next_look - round) > 0))
            t = t->waiting.next_waiter;
        if (!t) {
            lt_spin_unlock(&wf_lock);
            return;
        }
        lt_wait_slot *w = &t->waiting;
        w->next_look = round + (1u << (w->looks < LOOK_SPACING_MAX ? w->looks : LOOK_SPACING_MAX));
        w->looks += w->looks < LOOK_SPACING_MAX;
        uint32_t seq = atomic_load_explicit(&t->waiting.seq, memory_order_relaxed);
        if (w->orphaned) {
            /* (a timed condition wait retakes its mutex with no deadline) */
            uint8_t wait = w->waits_for == LT_FOR_SIGNAL ? LT_WAIT_BLOCK : w->wait;
            lt_orphan_wait copy = {.lock = w->lock, .addr = w->addr, .stack = w->stack,
                                   .kind = w->kind, .mode = w->mode, .wait = wait,
                                   .api = w->api, .who = w->who};
            lt_spin_unlock(&wf_lock);
            orphan_look(t, seq, &copy);
            continue;
        }
        size_t n = find_cycle(t);
        frame *first = n ? lt_map(n * sizeof *first) : NULL;
        int agree = first && words_agree(n);
        if (first)
            memcpy(first, path, n * sizeof *first);
        else
            undefer(t);
        lt_spin_unlock(&wf_lock);
        if (!first)
            continue;
        size_t m;
        lt_wait_step *steps = confirm(t, first, n, agree, 1, &m);
        lt_platform_unmap(first, n * sizeof *first);
        if (!steps)
            continue;
        lt_spin_lock(&wf_lock);
        if (atomic_load_explicit(&t->waiting.seq, memory_order_relaxed) == seq)
            undefer(t);
        lt_spin_unlock(&wf_lock);
        report_deadlock(steps, m, 0);
    }
}

/* Long waits are looked for only under LOCKTRACE_WAIT_TIMEOUT; deferred waits, each grace
 * period while there are some. */
static void *watchdog(void *arg)
{
    (void)arg;
    lt_busy_set(&lt_tls, LT_BUSY_IN); /* our thread: its own calls are not the program's (and
                                          it takes no signal) */
    atomic_store(&watchdog_tid, lt_platform_tid());
    for (;;) {
        holders hs;
        while (lt_cfg.wait_timeout && next_long_wait(&hs))
            report_long_wait(&hs);
        look_again();
        struct timespec period = {0, atomic_load_explicit(&deferred_waits, memory_order_relaxed)
                                         ? GRACE_NS
                                         : WATCH_NS};
        nanosleep(&period, NULL);
    }
    return NULL;
}

/* The watchdog starts with every signal blocked: it would inherit the mask of the program's
 * thread that waited first, often one that blocks nothing yet, and a signal the program
 * means for its own sigwait thread (it blocks them in all the others) could then be taken
 * by ours: mariadbd under LOCKTRACE_WAIT_TIMEOUT never stopped on SIGTERM. */
static void watchdog_start(int always)
{
    pthread_t th;
    sigset_t all, mask;
    if ((!always && lt_cfg.wait_timeout == 0) ||
        atomic_load_explicit(&watchdog_started, memory_order_relaxed) ||
        atomic_exchange(&watchdog_started, 1))
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &mask);
    if (pthread_create(&th, NULL, watchdog, NULL) == 0)
        pthread_detach(th);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

/* The watchdog does not survive fork(): the child starts its own with its first wait (or
 * deferred one). A fork made alone has no other thread, so none waits and no watchdog runs
 * (it never ends): only a start that failed is forgotten, as where other threads were. */
LT_FORK_PATH void lt_waitfor_fork(lt_fork_phase phase)
{
    lt_spin_fork(&wf_lock, phase);
    if (phase == LT_FORK_CHILD && lt_fork_alone()) {
        if (atomic_load_explicit(&watchdog_started, memory_order_relaxed))
            atomic_store(&watchdog_started, 0);
    } else if (phase == LT_FORK_CHILD) {
        for (lt_thread *t = waiters; t; t = t->waiting.next_waiter)
            unindex_wait(t);
        waiters = NULL;
        atomic_store(&deferred_waits, 0);
        atomic_store(&watchdog_tid, 0);
        atomic_store(&watchdog_started, 0);
    }
}
