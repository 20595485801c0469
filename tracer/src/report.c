/*
 * report.c - where every finding goes: it becomes plain report data (report_build.c),
 * unless suppressed it is printed as text (report_text.c) in one write(2) and, with
 * LOCKTRACE_REPORT_DIR, written as a JSON file (report_file.c); then the outcome is applied.
 * All of it happens under the report lock, so reports never interleave; no stdio, no
 * allocation here. Each kind prints at most REPORT_CAP times, then says once that it goes
 * quiet.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define REPORT_BYTES (64 * 1024)

static lt_spin report_lock = LT_SPIN_INIT(LT_RANK_REPORT);
static char report_buf[REPORT_BYTES];
static int reported[LT_FIND_KIND_COUNT];

/* The text for f into report_buf (or the note that its kind goes quiet); its length. */
static size_t format(const lt_finding *f, const lt_rep *r)
{
    size_t len = 0;
    if (r)
        return lt_rep_format_text(r, report_buf, sizeof report_buf);
    if (reported[f->kind] == LT_REPORT_CAP + 1) {
        len = lt_fmt_str(report_buf, sizeof report_buf, 0, "locktrace: further ");
        len = lt_fmt_str(report_buf, sizeof report_buf, len, lt_rep_kind_name(f->kind));
        len = lt_fmt_str(report_buf, sizeof report_buf, len, " reports are not printed\n");
    }
    return len;
}

/* Prints f, writes its file, then applies its outcome (abort; the others are the caller's).
 * A suppressed finding's outcome becomes "continue": the program behaves as it would alone. */
void lt_report(lt_finding *f)
{
    if (atomic_load_explicit(&lt_untracked, memory_order_relaxed)) {
        f->outcome = LT_OUTCOME_CONTINUE;
        return;
    }
    lt_spin_lock(&report_lock);
    /* Past the cap a report is still built when a rule may suppress it: a rule applies
     * whatever the count (its outcome must not apply, it must not count as a report). */
    int capped = reported[f->kind] >= LT_REPORT_CAP;
    const lt_rep *r = !capped || lt_suppress_kind(f->kind) ? lt_report_build(f) : NULL;
    if (r && lt_suppressed(r)) {
        lt_report_file_suppressed(r->kind);
        f->outcome = LT_OUTCOME_CONTINUE; /* as if the tracer were not there */
    } else {
        reported[f->kind]++;
        lt_report_file_counted(f->kind);
        size_t len = format(f, capped ? NULL : r);
        if (len)
            lt_platform_write(2, report_buf, len);
        if (r && !capped)
            lt_report_file_write(r);
    }
    /* Still under the lock: the dump symbolizes with report_build.c's pools. */
    if (f->outcome == LT_OUTCOME_ABORT)
        lt_dump_other_threads();
    lt_spin_unlock(&report_lock);
    if (f->outcome == LT_OUTCOME_ABORT)
        abort();
}

_Atomic int lt_untracked;

/* The tracer lost track of the program's locks (out of memory): from here on it checks and
 * reports nothing, and says so once. After losing track, any report could be false. */
void lt_report_out_of_memory(void)
{
    static const char msg[] = "locktrace: out of memory: lock tracking is off from here\n";
    if (!atomic_exchange(&lt_untracked, 1))
        lt_platform_write(2, msg, sizeof msg - 1);
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

/* A fork child starts with no reports of its own. */
void lt_report_fork(lt_fork_phase phase)
{
    lt_spin_fork(&report_lock, phase);
    if (phase == LT_FORK_CHILD) {
        memset(reported, 0, sizeof reported);
        lt_report_file_fork_child();
    }
}
