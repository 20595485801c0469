/*
 * report.c - the one place that turns an lt_finding into text, writes it, and applies the
 * outcome. The text is built in one static buffer under the report lock and leaves in one
 * write(2), so reports never interleave with each other; no stdio, no allocation here.
 * Each kind prints at most REPORT_CAP times, then says once that it goes quiet.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define REPORT_BYTES (64 * 1024)
#define REPORT_CAP 100

static const char *const lt_kind_names[LT_FIND_KIND_COUNT] = {
    [LT_FIND_SELF_DEADLOCK] = "self-deadlock",
    [LT_FIND_BAD_UNLOCK] = "bad-unlock",
    [LT_FIND_DESTROY_HELD] = "destroy-held",
    [LT_FIND_EXIT_HELD] = "exit-held",
    [LT_FIND_DEADLOCK] = "deadlock",
    [LT_FIND_INVERSION] = "lock-order-inversion",
    [LT_FIND_LONG_WAIT] = "long-wait",
};

/* Why the request can never be granted (or what the misuse is), for the summary line. */
static const char *const lt_reason_text[LT_WHY_COUNT] = {
    [LT_WHY_WRITE_HELD] = "it holds it for write (glibc returns EDEADLK, other libcs hang)",
    [LT_WHY_UPGRADE] = "it holds it for read (a read-to-write upgrade hangs on every platform)",
    [LT_WHY_WRITER_QUEUED] = "it holds it for read and the lock prefers a writer that is "
                             "waiting (hangs)",
    [LT_WHY_MUTEX_RELOCK] = "it holds it already (a normal mutex hangs)",
    [LT_WHY_ERRORCHECK_RELOCK] = "it holds it already (error-checking mutex: the call "
                                 "returns EDEADLK)",
    [LT_WHY_SPIN_RELOCK] = "it holds it already (a spinlock spins forever)",
    [LT_WHY_ORPHANED] = "a thread that is gone (exited, or left behind by fork) holds it "
                        "(it can never be granted)",
    [LT_WHY_NOT_HELD] = "it does not hold it",
    [LT_WHY_DESTROY] = "it is held",
    [LT_WHY_EXIT] = "",
};

_Static_assert(LT_FIND_KIND_COUNT == 7, "name every finding kind in lt_kind_names");
_Static_assert(LT_WHY_COUNT == 10, "explain every reason in lt_reason_text");

static lt_spin report_lock;
static char report_buf[REPORT_BYTES];
static int reported[LT_FIND_KIND_COUNT];

/* ---------------------------------------------------------------------------------------- */

size_t lt_fmt_str(char *buf, size_t size, size_t at, const char *s)
{
    while (s && *s && at + 1 < size)
        buf[at++] = *s++;
    if (at < size)
        buf[at] = 0;
    return at;
}

size_t lt_fmt_hex(char *buf, size_t size, size_t at, uintptr_t v)
{
    char tmp[2 + 2 * sizeof v + 1], *p = tmp + sizeof tmp - 1;
    *p = 0;
    do
        *--p = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    *--p = 'x';
    *--p = '0';
    return lt_fmt_str(buf, size, at, p);
}

size_t lt_fmt_dec(char *buf, size_t size, size_t at, long v)
{
    char tmp[24], *p = tmp + sizeof tmp - 1;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    *p = 0;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    return lt_fmt_str(buf, size, at, p);
}

/* ---------------------------------------------------------------------------------------- */

typedef struct out {
    char *buf;
    size_t size, at;
} out;

static void put(out *o, const char *s) { o->at = lt_fmt_str(o->buf, o->size, o->at, s); }
static void put_hex(out *o, uintptr_t v) { o->at = lt_fmt_hex(o->buf, o->size, o->at, v); }
static void put_dec(out *o, long v) { o->at = lt_fmt_dec(o->buf, o->size, o->at, v); }
static void put_stack(out *o, uint32_t id) { o->at = lt_stack_format(id, o->buf, o->size, o->at); }

static const char *lock_kind_name(lt_kind kind, int mutex_type, int writer_pref)
{
    static const char *const mutex[] = {"mutex (normal)", "mutex (recursive)",
                                        "mutex (error-checking)"};
    switch (kind) {
    case LT_RWLOCK:
        return writer_pref ? "rwlock (writer-preferring)" : "rwlock (reader-preferring)";
    case LT_MUTEX: return mutex[mutex_type];
    default: return "spinlock";
    }
}

static const char *kind_name(const lt_finding *f)
{
    return lock_kind_name(f->lock_kind, f->mutex_type, f->writer_pref);
}

static const char *mode_name(lt_kind kind, lt_mode mode)
{
    if (mode == LT_MODE_NONE)
        return "none";
    if (kind != LT_RWLOCK)
        return "lock";
    return mode == LT_MODE_READ ? "read" : "write";
}

static void put_thread(out *o, const lt_thread_info *t)
{
    put(o, "T");
    put_dec(o, t->seq);
    put(o, " (tid ");
    put_dec(o, t->tid);
    put(o, ")");
    if (t->name[0]) {
        put(o, " \"");
        put(o, t->name);
        put(o, "\"");
    }
}

static void put_summary(out *o, const lt_finding *f)
{
    static const char *const verb[LT_FIND_KIND_COUNT] = {"requests", "unlocks", "destroys", ""};
    put(o, "locktrace: ");
    put(o, lt_kind_names[f->kind]);
    put(o, ": thread ");
    put_thread(o, &f->thread);
    if (f->kind == LT_FIND_EXIT_HELD) {
        put(o, " exits holding ");
        put_dec(o, (long)f->nheld);
        put(o, f->nheld == 1 ? " lock\n" : " locks\n");
        return;
    }
    put(o, " ");
    put(o, verb[f->kind]);
    if (f->kind == LT_FIND_SELF_DEADLOCK) {
        put(o, " ");
        put(o, mode_name(f->lock_kind, f->req_mode));
        put(o, " on");
    }
    put(o, " ");
    put(o, kind_name(f));
    put(o, " ");
    put_hex(o, (uintptr_t)f->lock);
    put(o, f->kind == LT_FIND_DESTROY_HELD ? " while " : " but ");
    put(o, lt_reason_text[f->why]);
    put(o, "\n");
}

static void put_lock(out *o, const lt_finding *f)
{
    static const char *const waits[] = {"try", "blocking", "timed"};
    put(o, "  lock:      ");
    put_hex(o, (uintptr_t)f->lock);
    put(o, " ");
    put(o, kind_name(f));
    if (f->held_mode == LT_MODE_NONE) {
        put(o, ", not held by this thread");
    } else {
        put(o, ", held for ");
        put(o, mode_name(f->lock_kind, f->held_mode));
    }
    if (f->req_mode != LT_MODE_NONE) {
        put(o, ", requested for ");
        put(o, mode_name(f->lock_kind, f->req_mode));
        put(o, " (");
        put(o, waits[f->wait]);
        put(o, ")");
    }
    put(o, "\n");
}

static void put_object(out *o, const char *label, const void *object,
                       locktrace_describe_fn describe)
{
    char desc[256] = {0};
    if (!object && !describe)
        return;
    if (describe) {
        describe(object, desc, sizeof desc);
        desc[sizeof desc - 1] = 0;
    }
    put(o, label);
    put_hex(o, (uintptr_t)object);
    put(o, desc[0] ? " " : "");
    put(o, desc);
    put(o, "\n");
}

static void put_held_stack(out *o, const lt_finding *f)
{
    if (f->other) {
        put(o, "  held by ");
        put_thread(o, f->other);
        put(o, ", which is gone (an exit-held report shows where it took the lock)\n");
        return;
    }
    if (!f->held_stack)
        return;
    put(o, "  earlier acquisition by this thread (held for ");
    put(o, mode_name(f->lock_kind, f->held_mode));
    put(o, "):\n");
    put_stack(o, f->held_stack);
    if (f->held_partial)
        put(o, "    (its caller has returned since: only the call site is known; "
               "LOCKTRACE_STACKS=full records whole stacks)\n");
}

static void put_exit_held(out *o, const lt_finding *f)
{
    for (size_t i = 0; i < f->nheld; i++) {
        const lt_held *h = &f->held[i];
        uint32_t id = h->stack ? h->stack : lt_stack_intern(&h->ra, 1);
        put(o, "  still held: ");
        put_hex(o, (uintptr_t)h->addr);
        put(o, h->kind == LT_RWLOCK  ? " rwlock for "
               : h->kind == LT_MUTEX ? " mutex, "
                                     : " spinlock, ");
        put(o, mode_name((lt_kind)h->kind, (lt_mode)h->mode));
        put(o, "\n");
        if (h->lock && atomic_load(&h->lock->gen) == h->gen)
            put_object(o, "    guards: ", h->lock->object, h->lock->describe);
        put(o, "    taken at:\n");
        put_stack(o, id);
        if (!h->stack)
            put(o, "    (call site only; LOCKTRACE_STACKS=full records whole stacks)\n");
    }
}

static void put_outcome(out *o, const lt_finding *f)
{
    switch (f->outcome) {
    case LT_OUTCOME_ABORT:
        put(o, "  action: abort (LOCKTRACE_ACTION=edeadlk makes the call fail with EDEADLK "
               "instead)\n");
        break;
    case LT_OUTCOME_EDEADLK:
        put(o, "  action: the call returns EDEADLK without locking (LOCKTRACE_ACTION=edeadlk)\n");
        break;
    default:
        break;
    }
}

static size_t format_cross(const lt_finding *f, char *buf, size_t size);

static size_t format(const lt_finding *f, char *buf, size_t size)
{
    out o = {buf, size, 0};
    if (f->kind >= LT_FIND_DEADLOCK)
        return format_cross(f, buf, size);
    put_summary(&o, f);
    put(&o, "  thread:    ");
    put_thread(&o, &f->thread);
    put(&o, "\n");
    if (f->kind == LT_FIND_EXIT_HELD) {
        put_exit_held(&o, f);
    } else {
        put_lock(&o, f);
        put_object(&o, "  guards:    ", f->object, f->describe);
    }
    if (f->request_stack) {
        put(&o, "  request (this call):\n");
        put_stack(&o, f->request_stack);
    }
    put_held_stack(&o, f);
    if (f->first_stack) {
        put(&o, "  lock first seen:\n");
        put_stack(&o, f->first_stack);
    }
    put_outcome(&o, f);
    return o.at;
}

static size_t format_quiet(const lt_finding *f, char *buf, size_t size)
{
    out o = {buf, size, 0};
    put(&o, "locktrace: further ");
    put(&o, lt_kind_names[f->kind]);
    put(&o, " reports are not printed\n");
    return o.at;
}

/* Formats and writes f, then applies its outcome (abort; the others are the caller's). */
void lt_report(lt_finding *f)
{
    lt_spin_lock(&report_lock);
    int n = ++reported[f->kind];
    size_t len = 0;
    if (n <= REPORT_CAP)
        len = format(f, report_buf, sizeof report_buf);
    else if (n == REPORT_CAP + 1)
        len = format_quiet(f, report_buf, sizeof report_buf);
    if (len)
        lt_platform_write(2, report_buf, len);
    lt_spin_unlock(&report_lock);
    if (f->outcome == LT_OUTCOME_ABORT) {
        lt_dump_threads(1);
        abort();
    }
}

/* The tracer had to stop tracking something (memory exhausted): said once, never fatal. */
void lt_report_degraded(const char *what)
{
    static _Atomic int said;
    char buf[256];
    if (atomic_exchange(&said, 1))
        return;
    size_t n = lt_fmt_str(buf, sizeof buf, 0, "locktrace: note: ");
    n = lt_fmt_str(buf, sizeof buf, n, what);
    n = lt_fmt_str(buf, sizeof buf, n, "; from now on some locks may go unchecked\n");
    lt_platform_write(2, buf, n);
}

void lt_report_fork(lt_fork_phase phase)
{
    lt_spin_fork(&report_lock, phase);
}

/* ------------------------------------------------------------------------------------------
 * Cross-thread kinds: deadlock (a wait-for cycle), lock-order-inversion (a cycle in the
 * lock-order graph), long-wait.
 * ---------------------------------------------------------------------------------------- */
static void put_ref(out *o, const lt_lock_ref *r)
{
    put(o, lock_kind_name(r->kind, r->mutex_type, r->writer_pref));
    put(o, " ");
    put_hex(o, (uintptr_t)r->addr);
}

static void put_tref(out *o, const lt_thread_info *t)
{
    put(o, "T");
    put_dec(o, t->seq);
}

static void put_partial(out *o, int partial)
{
    if (partial)
        put(o, "    (call site only; LOCKTRACE_STACKS=full records whole stacks)\n");
}

/* What thread s->thread waits for, and who holds it up. */
static void put_cycle_wait(out *o, const lt_wait_step *s)
{
    static const char *const waits[] = {"try", "blocking", "timed"};
    if (s->waits_for != LT_FOR_LOCK) {
        if (s->waits_for == LT_FOR_JOIN) {
            put(o, "\n    waits in pthread_join for ");
            put_tref(o, &s->blocker);
            put(o, " to exit\n");
        } else {
            put(o, "\n    waits on condition variable ");
            put_hex(o, (uintptr_t)s->wants.addr);
            put(o, " for a signal; the last one came from ");
            put_tref(o, &s->blocker);
            put(o, "\n");
        }
        put(o, "    waiting at:\n");
        put_stack(o, s->wait_stack);
        return;
    }
    put(o, "\n    waits for ");
    put(o, mode_name(s->wants.kind, s->want_mode));
    put(o, " on ");
    put_ref(o, &s->wants);
    put(o, " (");
    put(o, waits[s->wait]);
    put(o, s->held_mode == LT_MODE_NONE ? "), queued behind " : "), held for ");
    if (s->held_mode != LT_MODE_NONE) {
        put(o, mode_name(s->wants.kind, s->held_mode));
        put(o, " by ");
    }
    put_tref(o, &s->blocker);
    put(o, s->held_mode == LT_MODE_NONE ? "'s write request (the lock prefers writers)\n" : "\n");
    put_object(o, "    guards:    ", s->wants.object, s->wants.describe);
    put(o, "    waiting at:\n");
    put_stack(o, s->wait_stack);
}

/* Thread i of a cycle: what it waits for (step i) and what it holds (step i-1). */
static void put_cycle_thread(out *o, const lt_finding *f, size_t i)
{
    const lt_wait_step *s = &f->steps[i], *prev = &f->steps[(i + f->nsteps - 1) % f->nsteps];
    put(o, "  thread ");
    put_thread(o, &s->thread);
    put_cycle_wait(o, s);
    if (prev->held_mode == LT_MODE_NONE)
        return;
    put(o, "    holds ");
    put_ref(o, &prev->wants);
    put(o, " for ");
    put(o, mode_name(prev->wants.kind, prev->held_mode));
    put(o, ", wanted by ");
    put_tref(o, &prev->thread);
    put(o, "\n");
    put_object(o, "    guards:    ", prev->wants.object, prev->wants.describe);
    put(o, "    taken at:\n");
    put_stack(o, prev->held_stack);
    put_partial(o, prev->held_partial);
}

static void format_deadlock(out *o, const lt_finding *f)
{
    put(o, "locktrace: deadlock: ");
    put_dec(o, (long)f->nsteps);
    put(o, " threads wait for each other (");
    for (size_t i = 0; i < f->nsteps; i++) {
        put_tref(o, &f->steps[i].thread);
        put(o, " -> ");
    }
    put_tref(o, &f->steps[0].thread);
    put(o, f->warning == 2 ? "); warning: a condition wait is in the cycle, only a signal from "
                             "another thread ends it\n"
           : f->warning  ? "); warning: a timed wait is in the cycle, it ends when that times out\n"
                         : "); none of them can go on\n");
    for (size_t i = 0; i < f->nsteps; i++)
        put_cycle_thread(o, f, i);
    if (f->warning)
        put(o, f->warning == 2 ? "  action: none (another thread may still signal)\n"
                               : "  action: none (the timed wait will fail with ETIMEDOUT)\n");
}

/* "lock A (mode)" as the inversion's table says it. */
static void put_end(out *o, const lt_lock_ref *r, lt_mode m)
{
    put_ref(o, r);
    put(o, " (");
    put(o, mode_name(r->kind, m));
    put(o, ")");
}

/* Row i of "how it deadlocks": thread i holds the edge's source and wants its target. */
static void put_inversion_row(out *o, size_t i, const lt_edge_info *e)
{
    put(o, "    thread ");
    put_dec(o, (long)i);
    put(o, " holds ");
    put_end(o, &e->from, e->from_mode);
    put(o, " and wants ");
    put_end(o, &e->to, e->to_mode);
    put(o, "\n");
}

/* Edge i with its first occurrence: thread and both stacks. */
static void put_inversion_edge(out *o, size_t i, const lt_edge_info *e)
{
    put(o, "  edge ");
    put_dec(o, (long)i);
    put(o, ": ");
    put_hex(o, (uintptr_t)e->to.addr);
    put(o, " taken while holding ");
    put_hex(o, (uintptr_t)e->from.addr);
    put(o, ", first by thread ");
    put_thread(o, &e->thread);
    put(o, "\n");
    put_object(o, "    guards:    ", e->from.object, e->from.describe);
    put(o, "    ");
    put_hex(o, (uintptr_t)e->from.addr);
    put(o, " taken at:\n");
    put_stack(o, e->from_stack);
    put_partial(o, e->from_partial);
    put(o, "    ");
    put_hex(o, (uintptr_t)e->to.addr);
    put(o, " taken at:\n");
    put_stack(o, e->to_stack);
}

static void format_inversion(out *o, const lt_finding *f)
{
    put(o, "locktrace: lock-order-inversion: ");
    put_dec(o, (long)f->nedges);
    put(o, " locks are taken in a cycle (");
    for (size_t i = 0; i < f->nedges; i++) {
        put_hex(o, (uintptr_t)f->edges[i]->from.addr);
        put(o, " -> ");
    }
    put_hex(o, (uintptr_t)f->edges[0]->from.addr);
    put(o, "): a potential deadlock\n");
    if (f->one_thread) {
        put(o, "  seen in one thread only: ");
        put_thread(o, &f->thread);
        put(o, " took these locks in both orders; two threads doing so deadlock\n");
    }
    put(o, "  how it deadlocks:\n");
    for (size_t i = 0; i < f->nedges; i++)
        put_inversion_row(o, i + 1, f->edges[i]);
    for (size_t i = 0; i < f->nedges; i++)
        put_inversion_edge(o, i + 1, f->edges[i]);
    put(o, f->outcome == LT_OUTCOME_ABORT
               ? "  action: abort (LOCKTRACE_INVERSION=report reports and goes on)\n"
               : "  action: none, reported once (LOCKTRACE_INVERSION=abort aborts)\n");
}

static void format_long_wait(out *o, const lt_finding *f)
{
    const lt_wait_step *w = &f->steps[0];
    put(o, "locktrace: long-wait: thread ");
    put_thread(o, &w->thread);
    put(o, " has waited ");
    put_dec(o, w->waited_ms);
    put(o, " ms for ");
    put(o, mode_name(w->wants.kind, w->want_mode));
    put(o, " on ");
    put_ref(o, &w->wants);
    put(o, " (LOCKTRACE_WAIT_TIMEOUT=");
    put_dec(o, lt_cfg.wait_timeout);
    put(o, ")\n");
    put_object(o, "  guards:    ", w->wants.object, w->wants.describe);
    put(o, "  waiting at:\n");
    put_stack(o, w->wait_stack);
    if (f->nsteps == 1)
        put(o, "  no holder is on record (the lock may have been taken before the tracer "
               "loaded, or released just now)\n");
    for (size_t i = 1; i < f->nsteps; i++) {
        put(o, "  held for ");
        put(o, mode_name(w->wants.kind, f->steps[i].held_mode));
        put(o, " by ");
        put_thread(o, &f->steps[i].thread);
        put(o, ", taken at:\n");
        put_stack(o, f->steps[i].held_stack);
        put_partial(o, f->steps[i].held_partial);
    }
}

static size_t format_cross(const lt_finding *f, char *buf, size_t size)
{
    out o = {buf, size, 0};
    if (f->kind == LT_FIND_DEADLOCK)
        format_deadlock(&o, f);
    else if (f->kind == LT_FIND_INVERSION)
        format_inversion(&o, f);
    else
        format_long_wait(&o, f);
    put_outcome(&o, f);
    return o.at;
}
