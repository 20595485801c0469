/*
 * cond.c - condition-variable misuse: a destroy while threads are blocked on the condition
 * variable (glibc >= 2.25 then waits for them forever), and one condition variable waited on
 * with two different mutexes at once (POSIX binds it to one mutex while threads wait).
 *
 * Every condition wait is a waiter record on the waiting thread's stack, in its condition
 * variable's queue (oldest first; the queues of a shard of condition-variable addresses in a
 * list). A signal marks the oldest unmarked waiter of its condition variable as woken, a
 * broadcast all of them: a destroy counts only unmarked waiters, so "broadcast, then destroy"
 * (the woken waiters still have to retake the mutex) stays legal. Marks go oldest first and
 * arrivals join at the end, so the marked waiters are the front of a queue and the queue
 * keeps where the unmarked ones begin: a signal costs the same with thousands of waiters, or
 * of woken waiters not yet gone, as with one.
 * libc need not wake the waiter a signal marked (glibc wakes any waiter of its oldest group):
 * when an unmarked waiter returns woken while marked ones still wait, the count of unmarked
 * waiters has come out one low, or libc woke it spuriously and it is right. Both stay
 * possible, so a destroy reports the count as a range: the unmarked waiters at least (a
 * report is never false), at most one more per such return while marked waiters remain. A
 * broadcast marks everyone truly, so the doubt ends there. Reports are built from copies
 * after the shard lock is released (report.c's lock ranks before ours).
 *
 * Barrier waits (pthread_barrier_wait) are waiter records in the same queues, keyed by the
 * barrier, with no mutex and never marked: a destroy or an init of a barrier while a round is
 * incomplete is reported. Which waiters are still in that round only glibc's barrier word
 * knows (a waiter of a completed round may not have left yet), so the count comes from the
 * word and the records name the newest of that many waiters.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>

#include "lt_internal.h"
#include "platform.h"

#define SHARD_BITS 8
#define SHARDS (1 << SHARD_BITS)
#define NAMED_MAX 64 /* waiters named in one report (all are counted) */
#define GRACE_MS 250 /* how long libc's count of waiters may take to drop, looked at each ms */

/* The waiters of one condition variable, while it has any. */
typedef struct queue {
    struct queue *next; /* the shard's queues */
    const void *cv;
    lt_cond_waiter *head, *tail;
    lt_cond_waiter *unmarked; /* the oldest waiter no signal has marked, NULL = none */
    uint64_t arrivals;        /* tickets handed out */
    size_t unsure;            /* unmarked waiters that returned woken before marked ones */
} queue;

typedef struct shard {
    lt_spin lock;
    _Atomic int count; /* waiters in its queues: a signal with none takes no lock */
    queue *queues;
    lt_pool pool;
} shard;

static shard shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = LT_SPIN_INIT(LT_RANK_COND),
                                                     .pool = LT_POOL(queue, 4096)}};

static shard *shard_of(const void *cv)
{
    return &shards[lt_addr_hash(cv, SHARD_BITS)];
}

/* cv's queue, under the shard's lock; NULL when nobody waits on it. */
static queue *queue_of(shard *s, const void *cv)
{
    queue *q = s->queues;
    while (q && q->cv != cv)
        q = q->next;
    return q;
}

static int is_marked(const queue *q, const lt_cond_waiter *w)
{
    return !q->unmarked || w->ticket < q->unmarked->ticket;
}

/* A report about condition variable or barrier ev->addr (ev->kind); named are copies. */
static void report(lt_event *ev, lt_reason why, const void *mutex, const void *other,
                   lt_cond_waiter *named, size_t n, size_t waiting, size_t waiting_max,
                   const lt_held *held)
{
    for (size_t i = 0; i < n; i++) /* copies: their names were kept when the waits began */
        lt_thread_info_fresh(&named[i].who);
    int barrier = ev->kind == LT_BARRIER;
    lt_finding f = {.kind = barrier ? LT_FIND_BARRIER_MISUSE : LT_FIND_CONDVAR_MISUSE, .why = why};
    f.outcome = why == LT_WHY_DESTROY_WAITED ? lt_report_fatal_outcome() : LT_OUTCOME_CONTINUE;
    lt_thread_info_now(ev->self, &f.thread);
    f.lock = ev->addr;
    f.lock_kind = barrier ? LT_BARRIER : LT_COND;
    f.api = ev->api;
    f.mutex = mutex;
    f.other_mutex = other;
    f.mutex_type = mutex ? lt_platform_mutex_type(mutex) : 0;
    f.waiters = named;
    f.nwaiters = n;
    f.waiting = waiting;
    f.waiting_max = waiting_max;
    f.request_stack = lt_stack_here(ev->ra);
    if (held)
        lt_fill_held(&f, held);
    lt_report(&f);
}

/* Puts w (filled) at the end of the queue of w->cv; 0 when out of memory (w->cv is then NULL:
 * the wait is not counted). When the oldest waiter waits with another mutex, *other becomes
 * a copy of it (else it is left as it was). */
static int enqueue(lt_cond_waiter *w, lt_cond_waiter *other)
{
    shard *s = shard_of(w->cv);
    lt_spin_lock(&s->lock);
    queue *q = queue_of(s, w->cv);
    if (!q && (q = lt_pool_get(&s->pool)) != NULL) {
        q->cv = w->cv;
        q->arrivals = 0;
        q->unsure = 0;
        q->next = s->queues;
        s->queues = q;
    }
    if (!q) {
        lt_spin_unlock(&s->lock);
        w->cv = NULL;
        return 0;
    }
    /* one binding: every earlier waiter agrees with the oldest one or was reported (a barrier
     * wait, mutex NULL, binds nothing: memory that held a barrier may hold a condvar now) */
    if (q->head && q->head->mutex && w->mutex && q->head->mutex != w->mutex)
        *other = *q->head;
    w->ticket = q->arrivals++;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    if (!q->unmarked)
        q->unmarked = w;
    atomic_fetch_add(&s->count, 1);
    lt_spin_unlock(&s->lock);
    return 1;
}

void lt_cond_arrive(lt_event *ev, const void *cv, lt_cond_waiter *w)
{
    lt_cond_waiter other = {0};
    *w = (lt_cond_waiter){.cv = cv, .mutex = ev->addr, .ra = ev->ra, .cfa = ev->cfa,
                          .api = ev->api, .timed = ev->wait == LT_WAIT_TIMED};
    w->who = *lt_thread_info_kept(ev->self);
    if (!enqueue(w, &other))
        return;
    /* the one store a wait makes for joiners: they find the wait from here (lt_cond_show).
     * A condition wait in a signal handler that interrupted one replaces it and leaves NULL:
     * the outer wait is then not found, which only misses a deadlock (keeping a chain of
     * waits would cost every wait a store more, for a handler doing what POSIX forbids). */
    ev->self->cond_wait = w;
    if (other.cv) {
        lt_event cev = *ev;
        cev.addr = cv;
        cev.kind = LT_COND;
        report(&cev, LT_WHY_TWO_MUTEXES, w->mutex, other.mutex, &other, 1, 0, 0, NULL);
    }
}

void lt_cond_wait_misuse(lt_event *ev, const void *cv, lt_reason why, const lt_held *held)
{
    lt_event cev = *ev;
    cev.addr = cv;
    cev.kind = LT_COND;
    report(&cev, why, ev->addr, NULL, NULL, 0, 0, 0, held);
}

void lt_cond_leave(lt_cond_waiter *w, int woken)
{
    if (!w->cv)
        return;
    if (w->mutex) /* a barrier wait was never the thread's condition wait */
        lt_tls.self->cond_wait = NULL;
    shard *s = shard_of(w->cv);
    lt_spin_lock(&s->lock);
    queue *q = queue_of(s, w->cv);
    if (woken && !is_marked(q, w) && q->head != q->unmarked) /* the head is marked */
        q->unsure++;
    if (q->unmarked == w)
        q->unmarked = w->next; /* unmarked too: it came later */
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    if (!q->head) {
        queue **p = &s->queues;
        while (*p != q)
            p = &(*p)->next;
        *p = q->next;
        lt_pool_put(&s->pool, q);
    }
    atomic_fetch_sub(&s->count, 1);
    lt_spin_unlock(&s->lock);
    /* read after the lock: a search sets it only while w is in the queue, under that lock */
    if (lt_unlikely(w->shown))
        lt_waitfor_shown_end();
}

/* Under the shard's lock a waiter in its queue cannot leave the wait (lt_cond_leave takes
 * that lock), so its record is live and stays so until show has published it. */
int lt_cond_show(const lt_cond_waiter *seen, lt_cond_waiter *w, int seq,
                 int (*show)(void *arg), void *arg)
{
    if (!seen->cv || seen->who.seq != seq)
        return 0;
    shard *s = shard_of(seen->cv);
    int shown = 0;
    lt_spin_lock(&s->lock);
    const queue *q = queue_of(s, seen->cv);
    const lt_cond_waiter *x = q ? q->head : NULL;
    while (x && x != w)
        x = x->next;
    if (x && w->who.seq == seq && w->mutex == seen->mutex && !w->shown &&
        (shown = show(arg)) != 0)
        w->shown = 1;
    lt_spin_unlock(&s->lock);
    return shown;
}

void lt_cond_signalled(const void *cv, int all)
{
    shard *s = shard_of(cv);
    if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return;
    lt_spin_lock(&s->lock);
    queue *q = queue_of(s, cv);
    if (q && q->unmarked) /* marked: every waiter before q->unmarked */
        q->unmarked = all ? NULL : q->unmarked->next;
    if (q && all)
        q->unsure = 0;
    lt_spin_unlock(&s->lock);
}

/* The marked waiters are the front of the queue: those older than its oldest unmarked one.
 * No queue: w has left the wait, the last to (a wait shown for a joiner is unpublished only
 * after lt_cond_leave, so a search may still find it then): it waits for no signal. Read as
 * unmarked, that was a NULL queue read, and harm-signal.10 died of it once in a suite run. */
int lt_cond_woken(const lt_cond_waiter *w)
{
    if (!w->cv)
        return 0;
    shard *s = shard_of(w->cv);
    lt_spin_lock(&s->lock);
    const queue *q = queue_of(s, w->cv);
    int woken = !q || is_marked(q, w);
    lt_spin_unlock(&s->lock);
    return woken;
}

/* Whether libc still counts a waiter on cv after a grace. A waiter that pthread_cancel has
 * just been called for leaves libc's count as soon as it acts on the cancellation, before it
 * retakes the mutex (which the destroying thread may hold): glibc's destroy then waits only
 * that long, and a destroy right after cancelling the waiters is no hang. Only a destroy
 * about to be reported waits here. The grace is read from the clock: it was 250 naps of 1 ms,
 * and a nap lasts longer on a busy machine or under a thread's timer slack (at load 28 the
 * 250 took 1.4-3.8 s), past the deadline of a timed waiter, whose destroy went unreported
 * (scen18; condvar-3.7s). A nap is the system call itself: nanosleep is a cancellation point,
 * a destroy none, and a destroying thread that had been sent a cancellation was unwound out of
 * the tracer there, unreported (harm-cancel.12). */
static int still_waited(const void *cv)
{
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_nsec += GRACE_MS * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        if (!lt_platform_cond_waited(cv))
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
            return 1;
        lt_platform_nap(1000);
    }
}

/* Returns 1 when the destroy is to be refused (LOCKTRACE_ACTION=edeadlk). */
int lt_cond_destroy(lt_event *ev)
{
    lt_cond_waiter found[NAMED_MAX];
    size_t n = 0, total = 0, marked = 0, untimed = 0;
    shard *s = shard_of(ev->addr);
    if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return 0;
    lt_spin_lock(&s->lock);
    queue *q = queue_of(s, ev->addr);
    for (const lt_cond_waiter *x = q ? q->head : NULL; x; x = x->next) {
        if (is_marked(q, x)) {
            marked++;
            continue;
        }
        if (n < NAMED_MAX)
            found[n++] = *x;
        total++;
        untimed += !x->timed;
    }
    size_t unsure = q && q->unsure < marked ? q->unsure : marked;
    lt_spin_unlock(&s->lock);
    /* a waiter that timed out or was cancelled is still in the queue while it retakes its
     * mutex, which the destroying thread may hold: libc no longer counts it, nor waits for it */
    if (!total || !still_waited(ev->addr))
        return 0;
    /* timed waits only: the destroy waits until they end (misuse, but no hang) */
    lt_reason why = untimed ? LT_WHY_DESTROY_WAITED : LT_WHY_DESTROY_TIMED;
    report(ev, why, found[0].mutex, NULL, found, n, total, total + unsure, NULL);
    return why == LT_WHY_DESTROY_WAITED && lt_cfg.action == LT_ACTION_EDEADLK;
}

void lt_barrier_arrive(lt_event *ev, lt_cond_waiter *w)
{
    lt_cond_waiter other;
    *w = (lt_cond_waiter){.cv = ev->addr, .ra = ev->ra, .api = ev->api};
    w->who = *lt_thread_info_kept(ev->self);
    enqueue(w, &other);
}

int lt_barrier_recorded(const void *b)
{
    shard *s = shard_of(b);
    if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return 0;
    lt_spin_lock(&s->lock);
    int found = queue_of(s, b) != NULL;
    lt_spin_unlock(&s->lock);
    return found;
}

/* The newest `blocked` records name the round's waiters: a record is made before glibc counts
 * its arrival, so it is newer than those of every round completed before that arrival (only
 * arrivals racing across a round's end may be named out of order, the count stays glibc's).
 * A barrier with no record here (waited on in another process only) is not reported: nobody
 * to name. */
int lt_barrier_waited(lt_event *ev, lt_reason why, unsigned blocked)
{
    lt_cond_waiter found[NAMED_MAX];
    size_t n = 0;
    shard *s = shard_of(ev->addr);
    if (!blocked || atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return 0;
    lt_spin_lock(&s->lock);
    const queue *q = queue_of(s, ev->addr);
    for (const lt_cond_waiter *x = q ? q->tail : NULL; x && n < blocked && n < NAMED_MAX;
         x = x->prev)
        if (!x->mutex)
            found[n++] = *x;
    lt_spin_unlock(&s->lock);
    if (!n)
        return 0;
    for (size_t i = 0; i < n / 2; i++) { /* oldest first, as a condition variable's */
        lt_cond_waiter t = found[i];
        found[i] = found[n - 1 - i];
        found[n - 1 - i] = t;
    }
    report(ev, why, NULL, NULL, found, n, blocked, blocked, NULL);
    return why == LT_WHY_DESTROY_WAITED && lt_cfg.action == LT_ACTION_EDEADLK;
}

/* In a fork child only the forking thread is left, and it is in no condition wait. */
LT_FORK_PATH void lt_cond_fork(lt_fork_phase phase)
{
    if (phase != LT_FORK_CHILD && lt_fork_alone())
        return; /* (lt_spin_fork: none taken; not a call for each shard) */
    for (int k = 0; k < SHARDS; k++) {
        int i = phase == LT_FORK_PREPARE ? k : SHARDS - 1 - k;
        lt_spin_fork(&shards[i].lock, phase);
        if (phase == LT_FORK_CHILD) {
            while (shards[i].queues) {
                queue *q = shards[i].queues;
                shards[i].queues = q->next;
                lt_pool_put(&shards[i].pool, q);
            }
            if (atomic_load(&shards[i].count) != 0) /* a write copies the page */
                atomic_store(&shards[i].count, 0);
        }
    }
}
