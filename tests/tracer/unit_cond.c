/*
 * unit_cond.c - how many threads a destroy finds waiting on a condition variable (cond.c),
 * driven directly: libc may wake a waiter other than the one a signal marked, which no
 * real program can make happen on purpose, so the returns are made up here.
 *   unit_cond CASE
 * Three waiters arrive on one condition variable, CASE says what follows, then a destroy
 * (LOCKTRACE_ACTION=edeadlk: refused, reported); meson checks the count in the report. A
 * destroy is checked against libc's own count of waiters, made up too: glibc's counts them
 * in steps of 8 in __wrefs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lt_internal.h"

#define WAITERS 3

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static lt_cond_waiter w[WAITERS + 1];

static lt_event event(const void *addr)
{
    lt_event ev = {0};
    ev.addr = addr;
    ev.kind = addr == &cv ? LT_COND : LT_MUTEX;
    ev.ra = (uintptr_t)__builtin_return_address(0);
    ev.cfa = (uintptr_t)__builtin_frame_address(0);
    ev.self = lt_self();
    return ev;
}

static void arrive(int i)
{
    lt_event ev = event(&mutex);
    lt_cond_arrive(&ev, &cv, &w[i]);
}

int main(int argc, char **argv)
{
    const char *c = argc == 2 ? argv[1] : "";
    lt_config_load();
    lt_tls.busy = 1;
    for (int i = 0; i < WAITERS; i++)
        arrive(i);
    lt_cond_signalled(&cv, 0); /* marks waiter 0 */
    if (!strcmp(c, "exact")) {
        /* nothing else: waiters 1 and 2 are left */
    } else if (!strcmp(c, "other-woken")) {
        lt_cond_leave(&w[1], 1); /* libc woke 1, not 0: 0 or 2 may be the one left */
    } else if (!strcmp(c, "other-timed-out")) {
        lt_cond_leave(&w[1], 0); /* 1 gave up: 2 is left, 0 was signalled */
    } else if (!strcmp(c, "marked-gone")) {
        lt_cond_leave(&w[1], 1);
        lt_cond_leave(&w[0], 1); /* both returns are the signals: 2 is left */
    } else if (!strcmp(c, "broadcast")) {
        lt_cond_leave(&w[1], 1);
        lt_cond_signalled(&cv, 1); /* every waiter is woken: no doubt left */
        arrive(WAITERS);           /* one new waiter */
    } else {
        fprintf(stderr, "usage: unit_cond exact|other-woken|other-timed-out|marked-gone|broadcast\n");
        return 64;
    }
#ifdef __GLIBC__
    cv.__data.__wrefs = 8; /* libc still counts a waiter */
#endif
    lt_event ev = event(&cv);
    printf("destroy %s\n", lt_cond_destroy(&ev) ? "refused" : "allowed");
    return 0;
}
