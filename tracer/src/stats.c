/*
 * stats.c - LOCKTRACE_STATS=1: per-lock contention counters and, at exit, a table of the most
 * contended locks (acquisitions, contended acquisitions, total and longest wait and hold),
 * each with its annotation and the stack where it was first seen.
 *
 * Off, it costs one predictable branch per hook in detect.c. On, a lock's counters are made
 * on its first acquisition (one per lock identity: a re-initialised address starts afresh)
 * and updated with relaxed atomics; they live in mapped memory that is never freed, listed
 * for the exit table. When a lock's memory is released, counters that saw no contention are
 * recycled for the next lock, so churning short-lived locks keeps the table bounded.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "lockname.h"
#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define TOP 10          /* rows in the exit table */
#define ARENA_BYTES (256 * 1024)
#define TABLE_BYTES (64 * 1024)

typedef struct lt_lock_stats {
    lt_lock *lock;
    const void *addr;
    uint32_t gen;                 /* identity of the lock these count */
    lt_kind kind;
    uint32_t first_stack;
    uint8_t first_partial;        /* first_stack is the call site and callers recorded lazily */
    _Atomic uint64_t acquired, contended;
    _Atomic uint64_t wait_ns, wait_max_ns, hold_ns, hold_max_ns;
    struct lt_lock_stats *next;   /* every counter set, for the exit table */
    struct lt_lock_stats *spare_next; /* on the spare list: recycled, at zero */
} lt_lock_stats;

static lt_spin stats_lock = LT_SPIN_INIT(LT_RANK_STATS); /* the arena and the list */
static lt_arena arena = LT_ARENA(ARENA_BYTES);
static lt_lock_stats *all;
static lt_lock_stats *spare;
static size_t nall;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void add_max(_Atomic uint64_t *max, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(max, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(max, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

static lt_lock_stats *fresh(lt_lock *l, const void *addr, lt_kind kind, uint32_t gen)
{
    lt_spin_lock(&stats_lock);
    lt_lock_stats *s = spare, *next = s ? s->next : all;
    if (s)
        spare = s->spare_next;
    else if ((s = lt_arena_alloc(&arena, sizeof *s, _Alignof(lt_lock_stats))) != NULL)
        all = s;
    if (s) {
        *s = (lt_lock_stats){.lock = l, .addr = addr, .gen = gen, .kind = kind,
                             .first_stack = l->first_stack,
                             .first_partial = l->first_partial, .next = next};
        nall++;
    }
    lt_spin_unlock(&stats_lock);
    return s;
}

/* The counters of l's current identity, made on first use; NULL without memory. */
static lt_lock_stats *stats_of(lt_lock *l, const void *addr, lt_kind kind)
{
    uint32_t gen = atomic_load_explicit(&l->gen, memory_order_relaxed);
    lt_lock_side *x = lt_shadow_side(l);
    if (lt_unlikely(!x))
        return NULL;
    lt_lock_stats *s = atomic_load_explicit(&x->stats, memory_order_acquire);
    if (lt_likely(s && s->gen == gen))
        return s;
    lt_lock_stats *mine = fresh(l, addr, kind, gen);
    while (mine && !atomic_compare_exchange_weak(&x->stats, &s, mine))
        if (s && s->gen == gen)
            return s; /* another thread made them first; ours stay in the list at zero */
    return mine;
}

/* l's memory is released (lifetime.c): its counters go back for another lock unless they saw
 * contention, which the exit table may want to show. */
void lt_stats_forget(lt_lock *l, uint32_t gen)
{
    lt_lock_side *x = atomic_load_explicit(&lt_lock_cold_of(l)->side, memory_order_acquire);
    lt_lock_stats *s = x ? atomic_load_explicit(&x->stats, memory_order_acquire) : NULL;
    if (lt_likely(!s) || s->gen != gen || atomic_load(&s->contended) != 0 ||
        !atomic_compare_exchange_strong(&x->stats, &s, NULL))
        return;
    lt_spin_lock(&stats_lock);
    atomic_store(&s->acquired, 0);
    atomic_store(&s->hold_ns, 0);
    atomic_store(&s->hold_max_ns, 0);
    s->spare_next = spare;
    spare = s;
    lt_spin_unlock(&stats_lock);
}

/* ------------------------------------------------------------------------------------------
 * Hooks (detect.c).
 * ---------------------------------------------------------------------------------------- */
void lt_stats_wait_begin(lt_event *ev)
{
    ev->self->wait_start = now_ns();
}

void lt_stats_wait_end(lt_event *ev)
{
    lt_lock_stats *s = ev->lock ? stats_of(ev->lock, ev->addr, ev->kind) : NULL;
    if (!s)
        return;
    uint64_t waited = now_ns() - ev->self->wait_start;
    atomic_fetch_add_explicit(&s->contended, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->wait_ns, waited, memory_order_relaxed);
    add_max(&s->wait_max_ns, waited);
}

/* h is the new held entry, NULL for a recursive acquisition (its hold goes on). */
void lt_stats_acquired(lt_event *ev, lt_held *h)
{
    lt_lock *l = h ? h->lock : ev->lock;
    lt_lock_stats *s = l ? stats_of(l, ev->addr, ev->kind) : NULL;
    if (s)
        atomic_fetch_add_explicit(&s->acquired, 1, memory_order_relaxed);
    if (h)
        h->since = now_ns();
}

void lt_stats_released(lt_held *h)
{
    if (!h->since || atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen)
        return;
    lt_lock_stats *s = stats_of(h->lock, h->addr, (lt_kind)h->kind);
    if (!s)
        return;
    uint64_t held = now_ns() - h->since;
    atomic_fetch_add_explicit(&s->hold_ns, held, memory_order_relaxed);
    add_max(&s->hold_max_ns, held);
}

/* ------------------------------------------------------------------------------------------
 * The exit table, written like a report: own formatting, one buffer, write(2).
 * ---------------------------------------------------------------------------------------- */
typedef struct tab {
    char buf[TABLE_BYTES];
    size_t at;
} tab;

static void put(tab *t, const char *s) { t->at = lt_fmt_str(t->buf, sizeof t->buf, t->at, s); }

/* v right-aligned in width columns. */
static void put_num(tab *t, uint64_t v, int width)
{
    char tmp[24];
    size_t n = lt_fmt_dec(tmp, sizeof tmp, 0, (long)v);
    for (int i = (int)n; i < width; i++)
        put(t, " ");
    put(t, tmp);
}

/* Nanoseconds as milliseconds with three decimals, right-aligned in width columns. */
static void put_ms(tab *t, uint64_t ns, int width)
{
    char tmp[32];
    uint64_t us = ns / 1000;
    size_t n = lt_fmt_dec(tmp, sizeof tmp, 0, (long)(us / 1000));
    tmp[n++] = '.';
    tmp[n++] = (char)('0' + us / 100 % 10);
    tmp[n++] = (char)('0' + us / 10 % 10);
    tmp[n++] = (char)('0' + us % 10);
    tmp[n] = 0;
    for (int i = (int)n + 3; i < width; i++)
        put(t, " ");
    put(t, tmp);
    put(t, " ms");
}

/* Most contended first, then longest total wait, then most acquired. */
static int before(const lt_lock_stats *a, const lt_lock_stats *b)
{
    if (a->contended != b->contended)
        return a->contended > b->contended;
    if (a->wait_ns != b->wait_ns)
        return a->wait_ns > b->wait_ns;
    return a->acquired > b->acquired;
}

/* The rank-th row: the best of those not yet shown (shown marks them). */
static lt_lock_stats *next_row(const lt_lock_stats **shown, size_t nshown)
{
    lt_lock_stats *best = NULL;
    for (lt_lock_stats *s = all; s; s = s->next) {
        int taken = !s->acquired;
        for (size_t i = 0; i < nshown && !taken; i++)
            taken = shown[i] == s;
        if (!taken && (!best || before(s, best)))
            best = s;
    }
    return best;
}

static void put_row(tab *t, const lt_lock_stats *s)
{
    static const char *const kinds[] = {"rwlock", "mutex", "spinlock", "once", "condvar"};
    put_num(t, s->acquired, 11);
    put_num(t, s->contended, 11);
    put_ms(t, s->wait_ns, 14);
    put_ms(t, s->wait_max_ns, 14);
    put_ms(t, s->hold_ns, 14);
    put_ms(t, s->hold_max_ns, 14);
    put(t, "  ");
    t->at = lt_fmt_hex(t->buf, sizeof t->buf, t->at, (uintptr_t)s->addr);
    put(t, " ");
    put(t, kinds[s->kind]);
    const lt_lock *l = s->lock;
    /* where it lives, as a report names it: the address alone told the reader nothing of
     * the program's (a lock destroyed before the exit is named by where it lived) */
    char name[512];
    if (lt_lockname((uintptr_t)s->addr, name, sizeof name)) {
        put(t, " \"");
        put(t, name);
        put(t, "\"");
    }
    put(t, "\n");
    const void *object = lt_lock_object(l);
    locktrace_describe_fn describe = lt_lock_describe(l);
    if (atomic_load(&l->gen) == s->gen && (object || describe)) {
        char desc[256] = {0};
        if (describe)
            describe(object, desc, sizeof desc);
        desc[sizeof desc - 1] = 0;
        put(t, "      guards: ");
        t->at = lt_fmt_hex(t->buf, sizeof t->buf, t->at, (uintptr_t)object);
        put(t, desc[0] ? " " : "");
        put(t, desc);
        put(t, "\n");
    }
    const lt_rep_stack *first = lt_report_build_stack(s->first_stack, s->first_partial);
    if (first) {
        put(t, "      first seen:\n");
        t->at = lt_rep_format_frames(first, t->buf, sizeof t->buf, t->at);
    }
}

static void print_table(void)
{
    static tab t;
    const lt_lock_stats *shown[TOP];
    size_t n = 0;
    t.at = 0;
    lt_lockname_begin();
    put(&t, "locktrace: statistics (LOCKTRACE_STATS): the most contended of ");
    put_num(&t, nall, 0);
    put(&t, nall == 1 ? " lock\n" : " locks\n");
    put(&t, "   acquired  contended    wait total      wait max    hold total      hold max"
            "  lock\n");
    for (lt_lock_stats *s; n < TOP && (s = next_row(shown, n)) != NULL; shown[n++] = s)
        put_row(&t, s);
    lt_platform_write_err(t.buf, t.at);
}

/* A fork child counts its own acquisitions from zero (its parent's table is the parent's). */
LT_FORK_PATH void lt_stats_fork(lt_fork_phase phase)
{
    lt_spin_fork(&stats_lock, phase);
    if (phase != LT_FORK_CHILD || !lt_cfg.stats) /* (off: none, and no look at their page) */
        return;
    for (lt_lock_stats *s = all; s; s = s->next) {
        atomic_store(&s->acquired, 0);
        atomic_store(&s->contended, 0);
        atomic_store(&s->wait_ns, 0);
        atomic_store(&s->wait_max_ns, 0);
        atomic_store(&s->hold_ns, 0);
        atomic_store(&s->hold_max_ns, 0);
    }
}

/* Under the report lock: the table's stacks are built in the report's static storage and
 * symbolized with libdw, both of which a thread's report (an exit-held one as it leaves,
 * racing the exit) uses too; without it the exit crashed now and then (harm-stats.1). */
static void print_table_exclusive(void)
{
    int busy = lt_tls.busy;
    lt_busy_set(&lt_tls, LT_BUSY_IN); /* (before the report lock, which it would hold outside) */
    lt_report_exclusive(print_table);
    lt_busy_restore(&lt_tls, busy);
}

void lt_stats_setup(void)
{
    lt_platform_symbolize_init(); /* the table names stacks at exit */
    atexit(print_table_exclusive);
}
