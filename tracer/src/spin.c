/*
 * spin.c - the tracer's own spinlock, and the check of the rank order spin.h writes down.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "lt_internal.h"
#include "platform.h"
#include "spin.h"

#if LT_CHECKS
/* Default TLS model on purpose: used only outside a registered thread's life, and it keeps
 * the library's static TLS small (lt_internal.h: lt_tls_block). */
static __thread lt_spin_ranks unregistered;

static lt_spin_ranks *ranks_of(lt_thread *self)
{
    return self ? &self->ranks : &unregistered;
}

static void rank_violation(const lt_spin *s, int holding)
{
    char buf[160];
    size_t n = lt_fmt_str(buf, sizeof buf, 0, "locktrace: internal error: tracer lock of rank ");
    n = lt_fmt_dec(buf, sizeof buf, n, s->rank);
    n = lt_fmt_str(buf, sizeof buf, n, " taken while holding one of rank ");
    n = lt_fmt_dec(buf, sizeof buf, n, holding);
    n = lt_fmt_str(buf, sizeof buf, n, " (spin.h's table)\n");
    lt_platform_write_err(buf, n);
    abort();
}

static void rank_taken(lt_thread *self, const lt_spin *s)
{
    lt_spin_ranks *my = ranks_of(self);
    int r = s->rank;
    if (r <= LT_RANK_NONE || r >= LT_RANK_COUNT)
        rank_violation(s, 0);
    unsigned held = lt_tls.crit & LT_CRIT_RANKS;
    if (held >> (r + 1))
        rank_violation(s, 31 - __builtin_clz(held));
    if (my->n[r] && (uintptr_t)s <= (uintptr_t)my->last[r])
        rank_violation(s, r);
    my->n[r]++;
    lt_tls.crit = (uint16_t)(lt_tls.crit | 1u << r);
    my->last[r] = s;
}

static void rank_released(lt_thread *self, const lt_spin *s)
{
    lt_spin_ranks *my = ranks_of(self);
    if (--my->n[s->rank] == 0) {
        my->last[s->rank] = NULL;
        lt_tls.crit = (uint16_t)(lt_tls.crit & ~(1u << s->rank));
    }
}
#else
static void rank_taken(lt_thread *self, const lt_spin *s) { (void)self, (void)s; }
static void rank_released(lt_thread *self, const lt_spin *s) { (void)self, (void)s; }
#endif

/* lt_internal.h's lt_leave. crit is not 0 only with LT_CHECKS, or with LT_CRIT_ASYNC. */
void lt_leave_slow(lt_tls_block *b)
{
    if (b->crit & ~LT_CRIT_ASYNC) {
        static const char msg[] = "locktrace: internal error: the thread leaves the tracer "
                                  "holding a tracer lock or in the order graph's gate\n";
        lt_platform_write_err(msg, sizeof msg - 1);
        abort();
    }
    if (b->sigpend)
        lt_sig_flush();
    if (b->crit & LT_CRIT_ASYNC)
        lt_cancel_async_again(b);
}

/* Pauses before the first yield, a few microseconds: what a holder running on another CPU
 * needs for most of the tracer's work under a lock. Each yield is a system call and, where
 * the waiter's CPU has another thread to run, two switches of it (`lazy`, 4 threads on 2
 * CPUs: ~11,000 yields and ~7,000 context switches a run before, ~2,000 of each with these
 * pauses and the gate's wait, order.c). Loads sequentially consistent: the gate's handshake
 * waits here. */
#define SPINS 256

/* SPINS, or none where the process runs on one CPU (a machine with one, or pinned there by
 * taskset): a holder waiting for that CPU cannot go on while the waiter spins on it (`lazy`
 * pinned to one CPU: 4 % less CPU without the pauses). Asked once; an affinity changed later
 * is not followed. */
static int spins(void)
{
    static _Atomic int n = -1;
    int v = atomic_load_explicit(&n, memory_order_relaxed);
    if (v < 0) {
        cpu_set_t cpus;
        v = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) == 1 ? 0 : SPINS;
        atomic_store_explicit(&n, v, memory_order_relaxed);
    }
    return v;
}

/* After the pauses, yields: a holder that lost its CPU to the waiter gets it back at once.
 * Then naps, from NAP_FIRST microseconds, doubling to NAP_MOST. A waiter of real-time priority
 * (SCHED_FIFO, SCHED_RR) never yields its CPU to a holder of a lower one: on a CPU they share
 * (a pinned process, more busy real-time threads than CPUs) the holder ran only in the
 * kernel's throttle slack, 5 % of the time, so a pinned program with one real-time thread was
 * 6x slower traced (two threads making new lock orders: 0.17 s, 1.03 s with one of them
 * SCHED_FIFO; `harm-rt.1`). A long wait (a report being written, ~30 ms) no longer keeps a
 * CPU busy either. A nap ends late by up to NAP_MOST: the holder does not wake the waiter. */
#define YIELDS 64
#define NAP_FIRST 16
#define NAP_MOST 1024

void lt_spin_backoff(unsigned *round)
{
    unsigned r = (*round)++, n = (unsigned)spins();
    if (r < n) {
        lt_platform_pause();
    } else if (r < n + YIELDS) {
        sched_yield();
    } else {
        unsigned doublings = r - n - YIELDS;
        lt_platform_nap(doublings < 6 ? NAP_FIRST << doublings : NAP_MOST);
    }
}

void lt_spin_wait(const _Atomic int *busy)
{
    for (unsigned round = 0; atomic_load(busy);)
        lt_spin_backoff(&round);
}

void lt_spin_lock(lt_spin *s)
{
    lt_thread *self = lt_tls.self;
    lt_spin_lock_as(s, self ? self->info.tid : lt_platform_tid());
}

/* A waiter for a tracer lock that is past the pauses and yields sleeps on the lock's word until
 * the holder's unlock wakes it, where it napped before: with 2,000 threads making their first
 * lock orders at once (each takes the graph lock), the naps, ended every millisecond at most
 * for a look, were 200,000 wake-ups a second that left no CPU to the holder, and a run that
 * takes 0.4 s natively went on for minutes. The unlock wakes one sleeper; the wait has a
 * deadline all the same (SLEEP_MOST), so that a wake-up that crossed the sleeper's going to
 * sleep costs at most that. */
#define SLEEP_MOST 50000

/* Waits for s to be free, the round of lt_spin_backoff going on across the waits of one
 * taking (a waiter that lost the lock to another goes back to sleep, not through the yields
 * again). */
static void lock_wait(lt_spin *s, unsigned *round)
{
    int holder;
    while ((holder = atomic_load(&s->owner)) != 0) {
        if (*round < (unsigned)spins() + YIELDS) {
            lt_spin_backoff(round);
            continue;
        }
        atomic_fetch_add(&s->sleepers, 1);
        lt_platform_sleep_on(&s->owner, holder, SLEEP_MOST);
        atomic_fetch_sub_explicit(&s->sleepers, 1, memory_order_relaxed);
    }
}

void lt_spin_lock_as(lt_spin *s, int me)
{
    int free_ = 0;
    unsigned round = 0;
    if (atomic_load_explicit(&s->owner, memory_order_relaxed) == me) {
        s->depth++;
        return;
    }
    rank_taken(lt_tls.self, s);
    while (!atomic_compare_exchange_weak_explicit(&s->owner, &free_, me, memory_order_acquire,
                                                  memory_order_relaxed)) {
        free_ = 0;
        lock_wait(s, &round);
    }
    s->depth = 1;
}

#if LT_CHECKS
static void unguarded(void)
{
    static const char m[] =
        "locktrace: internal error: tracer state used without the tracer lock that guards it\n";
    lt_platform_write_err(m, sizeof m - 1);
    abort();
}

void lt_spin_assert_mine(const lt_spin *s)
{
    lt_thread *self = lt_tls.self;
    int me = self ? self->info.tid : lt_platform_tid();
    if (atomic_load_explicit(&s->owner, memory_order_relaxed) != me)
        unguarded();
}

void lt_spin_assert_rank(int rank)
{
    if (!(lt_tls.crit & LT_CRIT_RANKS & 1u << rank))
        unguarded();
}
#endif

void lt_spin_unlock(lt_spin *s)
{
    if (--s->depth == 0) {
        rank_released(lt_tls.self, s);
        /* An exchange, not a store: the look at sleepers after it is not made before it (a
         * sleeper counts itself, then sleeps only while owner still names the holder). */
        atomic_exchange(&s->owner, 0);
        if (lt_unlikely(atomic_load(&s->sleepers) != 0))
            lt_platform_wake_one(&s->owner);
    }
}

/* Taking each lock before a fork and letting go of it after, in the parent and in the child,
 * wrote each lock's page twice after the fork, once in each process: a page copied in both,
 * 24 of a fork's page faults. A fork made alone takes none (and the thread, outside the
 * tracer, holds none). The child has only the forking thread, which holds every lock it took
 * before the fork: it lets go of them all, writing only those held. */
LT_FORK_PATH void lt_spin_fork(lt_spin *s, lt_fork_phase phase)
{
    if (lt_fork_alone())
        return; /* (not even a look: a page the parent never read is a page fault each child) */
    if (phase == LT_FORK_PREPARE) {
        lt_spin_lock(s);
    } else if (phase == LT_FORK_PARENT) {
        lt_spin_unlock(s);
    } else if (atomic_load_explicit(&s->owner, memory_order_relaxed) != 0 || s->depth != 0) {
        if (atomic_load_explicit(&s->owner, memory_order_relaxed) != 0)
            rank_released(lt_tls.self, s); /* by the forking thread, the child's only one */
        s->depth = 0;
        atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
    }
    if (phase == LT_FORK_CHILD && atomic_load_explicit(&s->sleepers, memory_order_relaxed))
        atomic_store_explicit(&s->sleepers, 0, memory_order_relaxed); /* (the parent's) */
}
