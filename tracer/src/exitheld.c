/*
 * exitheld.c - LOCKTRACE_EXIT_HELD=report: at exit (exit(), return from main) one exit-held
 * report (reason process-exit) lists the locks every live thread still holds, each with its
 * owner and where it was taken; at a fatal signal the same list is written the way the
 * thread dump is (no locks, no allocation: raw addresses), then the signal takes its course.
 * Off by default: many programs exit holding locks on purpose.
 *
 * Other threads run on while exit() runs, so their held sets are read with lt_held_copy, as
 * the thread dump reads them: an entry changing meanwhile may be missed, never a fault.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define MAX_HELD 256     /* locks listed; the report says how many it shows */
#define MAX_THREADS 100000 /* ends a walk that a racing list change sent in circles */

static lt_held held[MAX_HELD];
static lt_thread_info owners[MAX_HELD];

/* Copies what the live threads hold into held[]/owners[]; returns how many. */
static size_t collect(void)
{
    static lt_thread copy;
    size_t n = 0;
    const lt_thread *t = lt_thread_first();
    for (int k = 0; t && k < MAX_THREADS && n < MAX_HELD; k++, t = copy.next) {
        if (lt_platform_read(&copy, t, sizeof copy) != 0) /* pooled: never unmapped */
            break;
        uint32_t m = copy.held_end < MAX_HELD - n ? copy.held_end : (uint32_t)(MAX_HELD - n);
        if (m == 0 || lt_held_copy(t, copy.held, copy.held_moves, 0, m, &held[n]) != 0)
            continue;
        size_t base = n;
        /* Not a removed entry of a large set, nor one whose lock has ended since it was
         * taken: its memory freed while held (the free-held report said so; listing it
         * again named a heap block that was no longer there), as a leaving thread drops
         * them too (lt_drop_stale). Lock records stay readable for good. */
        for (uint32_t i = 0; i < m; i++) {
            const lt_held *h = &held[base + i];
            if (h->lock && atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen) {
                held[n] = *h;
                owners[n++] = copy.info;
            }
        }
    }
    return n;
}

static void at_exit(void)
{
    int busy = lt_tls.busy;
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    size_t n = collect();
    lt_thread *self = lt_tls.self;
    if (n > 0) {
        lt_finding f = {.kind = LT_FIND_EXIT_HELD, .why = LT_WHY_PROCESS_EXIT,
                        .outcome = LT_OUTCOME_CONTINUE, .held = held, .nheld = n,
                        .owners = owners};
        if (self)
            lt_thread_info_now(self, &f.thread);
        else
            f.thread = owners[0];
        lt_report(&f);
    }
    lt_busy_restore(&lt_tls, busy);
}

/* The fatal signals whose default action ends the process; a handler is installed only where
 * the program has none (it keeps its own, installed before or after). */
static const struct {
    int sig;
    const char *name;
} fatal[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"},
             {SIGABRT, "SIGABRT"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}};

static void on_fatal(int sig)
{
    const char *name = "?";
    for (size_t i = 0; i < LT_ARRAY_LEN(fatal); i++)
        if (fatal[i].sig == sig)
            name = fatal[i].name;
    lt_dump_held_at_signal(sig, name);
    raise(sig); /* the handler was reset (SA_RESETHAND): the default action follows */
}

void lt_exit_held_setup(void)
{
    atexit(at_exit);
    for (size_t i = 0; i < LT_ARRAY_LEN(fatal); i++) {
        struct sigaction old, sa;
        if (sigaction(fatal[i].sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal[i].sig, &sa, NULL);
    }
}
