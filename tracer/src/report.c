/*
 * report.c - where every finding goes: it becomes plain report data (report_build.c),
 * unless suppressed it is printed as text (report_text.c) in one write(2) and, with
 * LOCKTRACE_REPORT_DIR, written as a JSON file (report_file.c); then the outcome is applied.
 * All of it happens under the report lock, so reports never interleave; no stdio (but the
 * program's own buffers flushed before an abort, platform.h), no allocation here.
 *
 * Reports are de-duplicated by signature (report_identity.c, report_seen.c): the first
 * occurrence prints in full, a repeat prints one line naming the first ("again (3rd time) at
 * deadlock.c:153, see report 1") and updates its file's count. A repeat is recognised from
 * its captured addresses, without symbolizing. Each kind prints at most REPORT_CAP distinct
 * reports and each report at most REPORT_CAP lines, then says once that it goes quiet;
 * everything past that is still counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define REPORT_BYTES (64 * 1024)
#define REPORT_STACK (1024 * 1024) /* libdw alone takes ~150 KiB to read a line table */
#define GUARD_PAGE 4096

static lt_spin report_lock = LT_SPIN_INIT(LT_RANK_REPORT);
static char report_buf[REPORT_BYTES];
/* (Both on the page every fork child writes: its start variables', lt_internal.h.) */
static int reported[LT_FIND_KIND_COUNT] LT_START_DATA; /* distinct reports per kind, printed
                                                          or not */
static unsigned printed LT_START_DATA; /* distinct reports printed in full: their numbers */

/* "locktrace: further <kind> reports are not printed" into report_buf; its length. */
static size_t format_quiet(int kind)
{
    size_t len = lt_fmt_str(report_buf, sizeof report_buf, 0, "locktrace: further ");
    len = lt_fmt_str(report_buf, sizeof report_buf, len, lt_rep_kind_name(kind));
    return lt_fmt_str(report_buf, sizeof report_buf, len, " reports are not printed\n");
}

/* "locktrace: <kind>: again (<n>th time) at <place>, see report <number>" into report_buf. */
static size_t format_repeat(const lt_seen *s)
{
    size_t len = lt_fmt_str(report_buf, sizeof report_buf, 0, "locktrace: ");
    len = lt_fmt_str(report_buf, sizeof report_buf, len, lt_rep_kind_name(s->kind));
    len = lt_fmt_str(report_buf, sizeof report_buf, len, ": again (");
    len = lt_fmt_ordinal(report_buf, sizeof report_buf, len, s->count);
    len = lt_fmt_str(report_buf, sizeof report_buf, len, " time) at ");
    len = lt_fmt_str(report_buf, sizeof report_buf, len, s->place);
    len = lt_fmt_str(report_buf, sizeof report_buf, len, ", see report ");
    len = lt_fmt_dec(report_buf, sizeof report_buf, len, (long)s->number);
    if (s->count == LT_REPORT_CAP + 1)
        len = lt_fmt_str(report_buf, sizeof report_buf, len,
                         "; further repeats are counted, not printed");
    return lt_fmt_str(report_buf, sizeof report_buf, len, "\n");
}

/* The first occurrence of s (its full report r): printed and filed unless its kind reached
 * the cap. */
static void first(const lt_rep *r, lt_seen *s)
{
    size_t len = 0;
    s->count = 1;
    s->last_sec = s->first_sec;
    s->last_nsec = s->first_nsec;
    if (reported[r->kind]++ < LT_REPORT_CAP) {
        s->number = ++printed;
        len = lt_rep_format_text(r, report_buf, sizeof report_buf);
    } else if (reported[r->kind] == LT_REPORT_CAP + 1) {
        len = format_quiet(r->kind);
    }
    if (len)
        lt_platform_write_err(report_buf, len);
    if (s->number) {
        lt_report_file_write(r, s);
        lt_report_channel_new(r->kind);
    }
}

static void repeat(lt_seen *s)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->count++;
    s->last_sec = now.tv_sec;
    s->last_nsec = now.tv_nsec;
    if (s->number && s->count <= LT_REPORT_CAP + 1)
        lt_platform_write_err(report_buf, format_repeat(s));
    lt_report_file_repeat(s);
}

/* What f is: suppressed, expected (a built-in rule), a report seen before (*s), or new (*s,
 * with its full report *r). A finding the tables cannot hold is neither: *s NULL. */
static int classify(const lt_finding *f, lt_seen **s, const lt_rep **r)
{
    uint64_t key = lt_seen_key(lt_report_build_raw(f));
    int what = lt_seen_lookup(key, s);
    *r = NULL;
    if (what != LT_SEEN_UNKNOWN)
        return what;
    *r = lt_report_build(f);
    what = lt_suppressed(*r);
    *s = what == LT_SEEN_REPORT ? lt_seen_of(*r) : NULL;
    lt_seen_remember(key, what, *s);
    return what;
}

/* The report lock's holder: f classified, printed, filed. */
static void report_locked(void *arg)
{
    lt_finding *f = arg;
    lt_seen *s;
    const lt_rep *r;
    int what = classify(f, &s, &r);
    if (what == LT_SEEN_SUPPRESSED || what == LT_SEEN_EXPECTED) {
        if (what == LT_SEEN_SUPPRESSED)
            lt_report_file_suppressed(f->kind);
        f->outcome = LT_OUTCOME_CONTINUE; /* as if the tracer were not there */
    } else {
        lt_report_file_counted(f->kind);
        if (f->outcome == LT_OUTCOME_ABORT)
            lt_platform_flush_stdio(); /* the program's output first, as it came */
        if (s && s->count)
            repeat(s);
        else if (s)
            first(r, s);
    }
    if (f->outcome == LT_OUTCOME_ABORT) {
        lt_report_file_flush(); /* the counts of the other reports, before they are lost */
        lt_report_channel_flush();
        lt_dump_other_threads(); /* still under the lock: it uses report_build.c's pools */
    }
}

/*
 * Reports run on a stack of their own, one for all since they run one at a time: the
 * reporting thread's may be small (PTHREAD_STACK_MIN, a 64 KiB pool thread) and symbolizing
 * needs more than that. Its lowest page stays unmapped, so an overflow faults. Where it
 * cannot be had, the report runs where it is.
 */
static void report_on_own_stack(lt_finding *f)
{
    static char *stack;
    if (!stack) {
        stack = lt_platform_map(REPORT_STACK + GUARD_PAGE);
        if (stack && mprotect(stack, GUARD_PAGE, PROT_NONE) != 0) {
            lt_platform_unmap(stack, REPORT_STACK + GUARD_PAGE);
            stack = NULL;
        }
    }
    if (!stack || lt_platform_on_stack(report_locked, f, stack + GUARD_PAGE, REPORT_STACK) != 0)
        report_locked(f);
}

/* Prints f, writes its file, then applies its outcome (abort; the others are the caller's).
 * A suppressed finding's outcome becomes "continue": the program behaves as it would alone. */
void lt_report(lt_finding *f)
{
    if (atomic_load_explicit(&lt_untracked, memory_order_relaxed)) {
        f->outcome = LT_OUTCOME_CONTINUE;
        return;
    }
    /* Writing and symbolizing open, read and write files, which are cancellation points: a
     * thread cancelled there would leave the report lock taken and the program's lock call
     * half done. */
    int state, saved = errno; /* the program's lock call leaves errno alone, as libc's does */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    lt_spin_lock(&report_lock);
    report_on_own_stack(f);
    lt_spin_unlock(&report_lock);
    pthread_setcancelstate(state, NULL);
    errno = saved;
    if (f->outcome == LT_OUTCOME_ABORT)
        lt_platform_abort();
}

/* From the exit paths: fn under the report lock, so no report is half done meanwhile. A
 * thread interrupted inside the report path (a signal handler that exits) skips fn rather
 * than run it on half-updated tables. */
void lt_report_exclusive(void (*fn)(void))
{
    if (atomic_load_explicit(&report_lock.owner, memory_order_relaxed) == lt_platform_tid())
        return;
    lt_spin_lock(&report_lock);
    fn();
    lt_spin_unlock(&report_lock);
}

_Atomic int lt_untracked LT_START_DATA;

/* The tracer lost track of the program's locks (out of memory): from here on it checks and
 * reports nothing, and says so once. After losing track, any report could be false. */
void lt_report_out_of_memory(void)
{
    static const char msg[] = "locktrace: out of memory: lock tracking is off from here\n";
    if (!atomic_exchange(&lt_untracked, 1))
        lt_platform_write_err(msg, sizeof msg - 1);
}

/* The reasons said so far, by their text's address (each caller's own literal). One flag for
 * all of them hid every reason but the first: a process without libdw said that at its first
 * report and nothing after, a call-site table that filled later among it. */
#define DEGRADED_REASONS 16
static const char *_Atomic degraded_said[DEGRADED_REASONS];

/* The tracer had to stop tracking something (memory exhausted, a table full, a library
 * missing): said once for each reason, never fatal. */
void lt_report_degraded(const char *what)
{
    char buf[256];
    for (size_t i = 0; i < DEGRADED_REASONS; i++) {
        const char *at = NULL;
        if (atomic_compare_exchange_strong(&degraded_said[i], &at, what))
            break;
        if (at == what)
            return;
    }
    size_t n = lt_fmt_str(buf, sizeof buf, 0, "locktrace: note: ");
    n = lt_fmt_str(buf, sizeof buf, n, what); /* what is lost, in the caller's words */
    n = lt_fmt_str(buf, sizeof buf, n, "\n");
    lt_platform_write_err(buf, n);
}

int64_t lt_order_partial_sec;

/* The lock-order graph reached LOCKTRACE_GRAPH_MAX bytes (order.c): lock orders first seen
 * from here on are not recorded. Said once; the summary says since when. */
void lt_report_order_partial(size_t max)
{
    static _Atomic int said;
    char buf[256];
    struct timespec now;
    if (atomic_exchange(&said, 1))
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    lt_order_partial_sec = now.tv_sec;
    size_t n = lt_fmt_str(buf, sizeof buf, 0, "locktrace: note: the lock-order graph reached "
                                              "LOCKTRACE_GRAPH_MAX (");
    n = lt_fmt_dec(buf, sizeof buf, n, (long)(max >> 20));
    n = lt_fmt_str(buf, sizeof buf, n, " MB): from now on new lock orders are not recorded, "
                                       "only checked against those recorded\n");
    lt_platform_write_err(buf, n);
}

/* A fork child starts with no reports of its own. */
LT_FORK_PATH void lt_report_fork(lt_fork_phase phase)
{
    lt_spin_fork(&report_lock, phase);
    if (phase == LT_FORK_CHILD) {
        memset(reported, 0, sizeof reported);
        printed = 0;
        lt_seen_fork_child();
        lt_report_file_fork_child();
        lt_report_channel_fork_child();
    }
}
