/*
 * dump.c - the thread dump: every live thread's held locks and what it waits for, like a JVM
 * thread dump. Printed on LOCKTRACE_DUMP_SIGNAL and before the tracer aborts.
 *
 * From a signal handler nothing may lock or allocate, and the other threads run on: the
 * registry and each held set are read with lt_platform_peek (a vanished thread or a held set
 * regrown meanwhile reads as an error, never a fault), the text is built in a stack buffer and
 * leaves with write(2), and stacks are printed as raw addresses (symbolizing allocates). At
 * abort the same walk shows the other threads only (the report shows the aborting one),
 * symbolized.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

#define MAX_THREADS 100000 /* ends a walk that a racing list change sent in circles */

#ifndef SIGPWR
#define SIGPWR 0 /* not on every platform: the setting then does nothing */
#endif

/* In the order of LOCKTRACE_DUMP_SIGNAL's accepted values (config.def); 0 = none. */
static const int dump_signals[] = {0, SIGUSR1, SIGUSR2, SIGQUIT, SIGHUP, SIGPWR, SIGWINCH, SIGURG};

typedef struct dump_out {
    char buf[4096];
    size_t at;
    int symbolize; /* at abort: symbolized stacks, lazy ones from their recorded frames */
    int skip_tid;  /* at abort: the reporting thread, which the report has shown */
    int shown;     /* threads printed */
} dump_out;

static void flush(dump_out *o)
{
    lt_platform_write(2, o->buf, o->at);
    o->at = 0;
}

/* Keeps a whole stack frame or line together: flush when little room is left. */
static void put(dump_out *o, const char *s)
{
    if (o->at + strlen(s) + 256 > sizeof o->buf)
        flush(o);
    o->at = lt_fmt_str(o->buf, sizeof o->buf, o->at, s);
}

static void put_hex(dump_out *o, uintptr_t v)
{
    o->at = lt_fmt_hex(o->buf, sizeof o->buf, o->at, v);
}

static void put_dec(dump_out *o, long v)
{
    o->at = lt_fmt_dec(o->buf, sizeof o->buf, o->at, v);
}

static void put_frames(dump_out *o, uint32_t id, uintptr_t site)
{
    size_t n = 0;
    const uintptr_t *ips = id ? lt_stack_get(id, &n) : NULL;
    const lt_rep_stack *s = o->symbolize && id ? lt_report_build_stack(id) : NULL;
    if (s) {
        flush(o);
        char text[8192];
        lt_platform_write(2, text, lt_rep_format_frames(s, text, sizeof text, 0));
        return;
    }
    if (!ips) {
        ips = &site;
        n = 1;
    }
    for (size_t i = 0; i < n; i++) {
        put(o, "      #");
        put_dec(o, (long)i);
        put(o, " ");
        put_hex(o, ips[i]);
        put(o, "\n");
    }
}

static const char *what(int kind, int mode)
{
    if (kind == LT_MUTEX)
        return " mutex";
    if (kind == LT_SPIN)
        return " spinlock";
    if (kind == LT_ONCE)
        return " once-control (running its init routine)";
    return mode == LT_MODE_READ ? " rwlock for read" : " rwlock for write";
}

static void dump_held(dump_out *o, const lt_thread *t)
{
    lt_held chunk[16];
    uint32_t end = t->held_end;
    for (uint32_t i = 0; i < end; i += 16) {
        uint32_t k = end - i < 16 ? end - i : 16;
        if (lt_platform_peek(chunk, t->held + i, k * sizeof *chunk) != 0) {
            put(o, "    (held set changed while read)\n");
            return;
        }
        for (uint32_t j = 0; j < k; j++) {
            if (!chunk[j].lock)
                continue; /* a removed entry of a large set */
            put(o, "    holds ");
            put_hex(o, (uintptr_t)chunk[j].addr);
            put(o, what(chunk[j].kind, chunk[j].mode));
            put(o, ", taken at:\n");
            int partial = 0;
            uint32_t id = chunk[j].stack;
            if (!id && o->symbolize) /* after an abort: the frames recorded when it was taken */
                id = lt_stack_lazy(&chunk[j], 0, &partial);
            put_frames(o, id, chunk[j].ra);
            if (partial)
                put(o, "    (frames recorded when it was taken; LOCKTRACE_STACKS=full records "
                       "whole stacks)\n");
        }
    }
}

static void dump_wait(dump_out *o, const lt_wait_slot *w)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (w->waits_for == LT_FOR_JOIN) {
        put(o, "    waits in pthread_join for ");
    } else if (w->waits_for == LT_FOR_SIGNAL) {
        put(o, "    waits on condition variable ");
        put_hex(o, w->target);
        put(o, " for ");
    } else {
        put(o, "    waits for ");
        put_hex(o, (uintptr_t)w->addr);
        put(o, what(w->kind, w->mode));
        put(o, w->wait == LT_WAIT_TIMED ? " (timed) for " : " for ");
    }
    put_dec(o, (now.tv_sec - w->since.tv_sec) * 1000 + (now.tv_nsec - w->since.tv_nsec) / 1000000);
    put(o, " ms, at:\n");
    put_frames(o, w->stack, 0);
}

static void dump_thread(dump_out *o, const lt_thread *t)
{
    int waiting = atomic_load(&t->waiting.seq) & 1;
    const lt_thread_info *i = waiting ? &t->waiting.who : &t->info;
    put(o, "  T");
    put_dec(o, i->seq);
    put(o, " (tid ");
    put_dec(o, i->tid);
    put(o, i->name[0] ? ") \"" : ")");
    put(o, i->name);
    put(o, i->name[0] ? "\": holds " : ": holds ");
    put_dec(o, (long)t->nheld);
    put(o, t->nheld == 1 ? " lock" : " locks");
    put(o, waiting ? ", waiting\n" : "\n");
    dump_held(o, t);
    if (waiting)
        dump_wait(o, &t->waiting);
}

/* Every live thread (held_only: every thread holding a lock), then out. */
static void walk(dump_out *o, int held_only)
{
    lt_thread copy;
    const lt_thread *t = lt_thread_first();
    for (int n = 0; t && n < MAX_THREADS; n++, t = copy.next) {
        if (lt_platform_peek(&copy, t, sizeof copy) != 0) {
            put(o, "  (a thread left while the list was read; the dump stops here)\n");
            break;
        }
        if ((!held_only || copy.nheld) && copy.info.tid != o->skip_tid) {
            dump_thread(o, &copy);
            o->shown++;
        }
    }
    flush(o);
}

void lt_dump_threads(int symbolize)
{
    dump_out o = {.at = 0, .symbolize = symbolize};
    put(&o, "locktrace: thread-dump: every thread's held locks and waits\n");
    walk(&o, 0);
}

/* After a report that aborts: the other threads, symbolized (the report has shown this one). */
void lt_dump_other_threads(void)
{
    dump_out o = {.at = 0, .symbolize = 1, .skip_tid = lt_platform_tid()};
    put(&o, "locktrace: thread-dump: the other threads' held locks and waits\n");
    walk(&o, 0);
    if (!o.shown) {
        put(&o, "  (no other thread)\n");
        flush(&o);
    }
}

/* LOCKTRACE_EXIT_HELD=report at a fatal signal (exitheld.c): from its handler. */
void lt_dump_held_at_signal(int sig, const char *name)
{
    dump_out o = {.at = 0, .symbolize = 0};
    put(&o, "locktrace: exit-held: the process dies of signal ");
    put_dec(&o, sig);
    put(&o, " (");
    put(&o, name);
    put(&o, ") while these threads hold locks (LOCKTRACE_EXIT_HELD=report; addr2line -e "
            "<binary> names the addresses):\n");
    walk(&o, 1);
}

static void on_dump_signal(int sig)
{
    int saved = errno;
    (void)sig;
    lt_dump_threads(0);
    errno = saved;
}

void lt_dump_install(void)
{
    size_t i = (size_t)lt_cfg.dump_signal;
    if (i >= LT_ARRAY_LEN(dump_signals) || dump_signals[i] == 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(dump_signals[i], &sa, NULL);
}
