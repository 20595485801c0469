/*
 * cond.c - condition-variable misuse: a destroy while threads are blocked on the condition
 * variable (glibc >= 2.25 then waits for them forever), and one condition variable waited on
 * with two different mutexes at once (POSIX binds it to one mutex while threads wait).
 *
 * Every condition wait is a waiter record on the waiting thread's stack, in a list per shard
 * of condition-variable addresses. A signal marks the oldest unmarked waiter of its condition
 * variable as woken, a broadcast all of them: a destroy counts only unmarked waiters, so
 * "broadcast, then destroy" (the woken waiters still have to retake the mutex) stays legal.
 * The count can only come out low (a signal marks a waiter other than the one libc wakes),
 * never high: a report is never false. Reports are built from copies after the shard lock
 * is released (report.c's lock ranks before ours).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define SHARDS 64
#define NAMED_MAX 64 /* waiters named in one report (the count stops there too) */

typedef struct shard {
    lt_spin lock;
    _Atomic int count; /* waiters in the list: a signal with none takes no lock */
    lt_cond_waiter *head, *tail;
} shard;

static shard shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = LT_SPIN_INIT(LT_RANK_COND)}};

static shard *shard_of(const void *cv)
{
    return &shards[lt_addr_hash(cv, 6)];
}

static lt_outcome fatal_outcome(void)
{
    return lt_cfg.action == LT_ACTION_EDEADLK ? LT_OUTCOME_EDEADLK : LT_OUTCOME_ABORT;
}

static void report(lt_event *ev, lt_reason why, const void *mutex, const void *other,
                   const lt_cond_waiter *named, size_t n)
{
    lt_finding f = {.kind = LT_FIND_CONDVAR_MISUSE, .why = why};
    f.outcome = why == LT_WHY_DESTROY_WAITED ? fatal_outcome() : LT_OUTCOME_CONTINUE;
    lt_thread_info_now(ev->self, &f.thread);
    f.lock = ev->addr;
    f.lock_kind = LT_COND;
    f.api = ev->api;
    f.mutex = mutex;
    f.other_mutex = other;
    f.mutex_type = mutex ? lt_platform_mutex_type(mutex) : 0;
    f.waiters = named;
    f.nwaiters = n;
    f.request_stack = lt_stack_here(ev->ra);
    lt_report(&f);
}

void lt_cond_arrive(lt_event *ev, const void *cv, lt_cond_waiter *w)
{
    shard *s = shard_of(cv);
    lt_cond_waiter other = {0};
    *w = (lt_cond_waiter){.cv = cv, .mutex = ev->addr, .ra = ev->ra, .api = ev->api};
    lt_thread_info_now(ev->self, &w->who);
    lt_spin_lock(&s->lock);
    for (const lt_cond_waiter *x = s->head; x; x = x->next) {
        if (x->cv == cv) {
            if (x->mutex != w->mutex)
                other = *x;
            break; /* one binding: every earlier waiter agrees with this one or was reported */
        }
    }
    w->prev = s->tail;
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    atomic_fetch_add(&s->count, 1);
    lt_spin_unlock(&s->lock);
    if (other.cv) {
        lt_event cev = *ev;
        cev.addr = cv;
        report(&cev, LT_WHY_TWO_MUTEXES, w->mutex, other.mutex, &other, 1);
    }
}

void lt_cond_unheld(lt_event *ev, const void *cv)
{
    lt_event cev = *ev;
    cev.addr = cv;
    report(&cev, LT_WHY_WAIT_UNHELD, ev->addr, NULL, NULL, 0);
}

void lt_cond_leave(lt_cond_waiter *w)
{
    shard *s = shard_of(w->cv);
    lt_spin_lock(&s->lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        s->tail = w->prev;
    atomic_fetch_sub(&s->count, 1);
    lt_spin_unlock(&s->lock);
}

void lt_cond_signalled(const void *cv, int all)
{
    shard *s = shard_of(cv);
    if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return;
    lt_spin_lock(&s->lock);
    for (lt_cond_waiter *x = s->head; x; x = x->next) {
        if (x->cv != cv || x->woken)
            continue;
        x->woken = 1;
        if (!all)
            break;
    }
    lt_spin_unlock(&s->lock);
}

/* Returns 1 when the destroy is to be refused (LOCKTRACE_ACTION=edeadlk). */
int lt_cond_destroy(lt_event *ev)
{
    lt_cond_waiter found[NAMED_MAX];
    size_t n = 0, total = 0;
    shard *s = shard_of(ev->addr);
    if (atomic_load_explicit(&s->count, memory_order_relaxed) == 0)
        return 0;
    lt_spin_lock(&s->lock);
    for (const lt_cond_waiter *x = s->head; x; x = x->next) {
        if (x->cv != ev->addr || x->woken)
            continue;
        if (n < NAMED_MAX)
            found[n++] = *x;
        total++;
    }
    lt_spin_unlock(&s->lock);
    if (!total)
        return 0;
    report(ev, LT_WHY_DESTROY_WAITED, found[0].mutex, NULL, found, n);
    return lt_cfg.action == LT_ACTION_EDEADLK;
}

/* In a fork child only the forking thread is left, and it is in no condition wait. */
void lt_cond_fork(lt_fork_phase phase)
{
    for (int k = 0; k < SHARDS; k++) {
        int i = phase == LT_FORK_PREPARE ? k : SHARDS - 1 - k;
        lt_spin_fork(&shards[i].lock, phase);
        if (phase == LT_FORK_CHILD) {
            shards[i].head = shards[i].tail = NULL;
            atomic_store(&shards[i].count, 0);
        }
    }
}
