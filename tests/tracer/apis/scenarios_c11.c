/*
 * scenarios_c11.c - the same-thread rules table and the misuse list through C11 <threads.h>
 * (mtx_*, cnd_*, thrd_*), chosen by name:
 *   scenarios_c11 NAME
 * glibc's mtx_lock calls its internal mutex code, not pthread_mutex_lock: these show the
 * tracer sees the C11 calls themselves. Each scenario prints what its last call returned
 * ("mtx_lock -> thrd_busy"). C11 has no rwlocks, spinlocks or error-checking mutexes, so
 * those rows of the table have no C11 form. meson.build holds the expected outcomes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "poll.h"

#define NOINLINE __attribute__((noinline))

static void result(const char *what, int rc)
{
    static const char *const names[] = {
        [thrd_success] = "thrd_success", [thrd_busy] = "thrd_busy", [thrd_error] = "thrd_error",
        [thrd_nomem] = "thrd_nomem",     [thrd_timedout] = "thrd_timedout"};
    printf("%s -> %s\n", what, rc >= 0 && rc <= thrd_timedout ? names[rc] : "?");
    fflush(stdout);
}

static struct timespec soon(void)
{
    return ms_from_now(5000);
}

/* ------------------------------------------------------------------------------------------
 * The rules table through mtx_t.
 * ---------------------------------------------------------------------------------------- */
static mtx_t m, m2;

NOINLINE void c11_relock(void)
{
    mtx_init(&m, mtx_plain);
    mtx_lock(&m);
    result("mtx_lock", mtx_lock(&m));
}

NOINLINE void c11_timed_relock(void)
{
    struct timespec t = ms_from_now(300);
    mtx_init(&m, mtx_timed);
    mtx_lock(&m);
    result("mtx_timedlock", mtx_timedlock(&m, &t));
}

NOINLINE void c11_recursive(void)
{
    mtx_init(&m, mtx_plain | mtx_recursive);
    mtx_lock(&m);
    result("mtx_lock", mtx_lock(&m));
    struct timespec t = soon();
    result("mtx_timedlock", mtx_timedlock(&m, &t));
    mtx_unlock(&m);
    mtx_unlock(&m);
    mtx_unlock(&m);
    mtx_destroy(&m);
}

NOINLINE void c11_trylock(void)
{
    mtx_init(&m, mtx_plain);
    mtx_lock(&m);
    result("mtx_trylock", mtx_trylock(&m));
    mtx_unlock(&m);
    result("mtx_trylock", mtx_trylock(&m));
    mtx_unlock(&m);
    mtx_destroy(&m);
}

/* init gives the address a new identity: what was held under the old one does not count. */
NOINLINE void c11_reinit(void)
{
    mtx_init(&m, mtx_plain);
    mtx_lock(&m);
    mtx_init(&m, mtx_plain);
    result("mtx_lock", mtx_lock(&m));
    mtx_unlock(&m);
    mtx_destroy(&m);
}

NOINLINE void c11_unlock_not_held(void)
{
    mtx_init(&m, mtx_plain);
    result("mtx_unlock", mtx_unlock(&m));
}

NOINLINE void c11_destroy_held(void)
{
    mtx_init(&m, mtx_plain);
    mtx_lock(&m);
    mtx_destroy(&m);
    result("mtx_destroy", thrd_success);
}

NOINLINE int c11_exit_holding(void *arg)
{
    (void)arg;
    mtx_lock(&m);
    return 7;
}

/* A thread ends holding the mutex; then main asks for it: orphaned, hangs natively. */
NOINLINE void c11_orphan(void)
{
    thrd_t th;
    int res = 0;
    mtx_init(&m, mtx_plain);
    thrd_create(&th, c11_exit_holding, NULL);
    thrd_join(th, &res);
    printf("thread result %d\n", res);
    fflush(stdout);
    result("mtx_lock", mtx_lock(&m));
}

/* ------------------------------------------------------------------------------------------
 * Condition variables and joins.
 * ---------------------------------------------------------------------------------------- */
static cnd_t cv;
static int turn, rounds_done;

static int ponger(void *arg)
{
    int me = (int)(long)arg;
    for (int i = 0; i < 2000; i++) {
        mtx_lock(&m);
        while (turn != me)
            cnd_wait(&cv, &m);
        turn = !me;
        rounds_done++;
        cnd_broadcast(&cv);
        mtx_unlock(&m);
    }
    return 0;
}

/* Legal: two threads hand a turn back and forth; a timed wait that times out. */
NOINLINE void c11_cond(void)
{
    thrd_t a, b;
    mtx_init(&m, mtx_plain);
    cnd_init(&cv);
    thrd_create(&a, ponger, (void *)0L);
    thrd_create(&b, ponger, (void *)1L);
    thrd_join(a, NULL);
    thrd_join(b, NULL);
    struct timespec t = ms_from_now(1);
    mtx_lock(&m);
    result("cnd_timedwait", cnd_timedwait(&cv, &m, &t));
    mtx_unlock(&m);
    printf("rounds %d\n", rounds_done);
    cnd_destroy(&cv);
    mtx_destroy(&m);
}

NOINLINE void c11_cond_wait_unheld(void)
{
    struct timespec t;
    mtx_init(&m, mtx_plain);
    cnd_init(&cv);
    timespec_get(&t, TIME_UTC);
    result("cnd_timedwait", cnd_timedwait(&cv, &m, &t));
    result("mtx_unlock", mtx_unlock(&m)); /* the wait returned holding it */
}

static _Atomic int cnd_waiter_tid;
static int released;

static int cnd_waiter(void *arg)
{
    (void)arg;
    mtx_lock(&m);
    cnd_waiter_tid = gettid();
    while (!released)
        cnd_wait(&cv, &m);
    mtx_unlock(&m);
    return 0;
}

/* cnd_destroy while a thread is blocked in cnd_wait on it. */
NOINLINE void c11_cnd_destroy_waited(void)
{
    thrd_t th;
    mtx_init(&m, mtx_plain);
    cnd_init(&cv);
    thrd_create(&th, cnd_waiter, NULL);
    while (!cnd_waiter_tid)
        thrd_yield();
    mtx_lock(&m); /* the waiter has released m: it is inside cnd_wait */
    mtx_unlock(&m);
    blocked_wait_tid(cnd_waiter_tid);
    cnd_destroy(&cv);
    result("cnd_destroy", thrd_success);
}

static _Atomic int joiner_tid;

static int take_m(void *arg)
{
    (void)arg;
    joiner_tid = gettid();
    mtx_lock(&m);
    mtx_unlock(&m);
    return 0;
}

/* main holds m and joins a thread that waits for m: a deadlock through thrd_join. */
NOINLINE void c11_join_deadlock(void)
{
    thrd_t th;
    mtx_init(&m, mtx_plain);
    mtx_lock(&m);
    thrd_create(&th, take_m, NULL);
    while (!joiner_tid)
        thrd_yield();
    blocked_wait_tid(joiner_tid);
    result("thrd_join", thrd_join(th, NULL));
}

/* Two threads take two mtx_t in opposite orders, each holding its first while the other
 * takes its own: a deadlock for certain (the second thread starts once the first blocks). */
static _Atomic int first_tid;

static int ab(void *arg)
{
    (void)arg;
    mtx_lock(&m);
    first_tid = gettid();
    mtx_lock(&m2);
    mtx_unlock(&m2);
    mtx_unlock(&m);
    return 0;
}

NOINLINE void c11_abba(void)
{
    thrd_t th;
    mtx_init(&m, mtx_plain);
    mtx_init(&m2, mtx_plain);
    mtx_lock(&m2);
    thrd_create(&th, ab, NULL);
    while (!first_tid)
        thrd_yield();
    blocked_wait_tid(first_tid);
    result("mtx_lock", mtx_lock(&m));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } scenarios[] = {
        {"relock", c11_relock},
        {"timed-relock", c11_timed_relock},
        {"recursive", c11_recursive},
        {"trylock", c11_trylock},
        {"reinit", c11_reinit},
        {"unlock-not-held", c11_unlock_not_held},
        {"destroy-held", c11_destroy_held},
        {"orphan", c11_orphan},
        {"cond", c11_cond},
        {"cond-wait-unheld", c11_cond_wait_unheld},
        {"cnd-destroy-waited", c11_cnd_destroy_waited},
        {"join-deadlock", c11_join_deadlock},
        {"abba", c11_abba},
    };
    for (size_t i = 0; argc == 2 && i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].fn();
            return 0;
        }
    }
    fprintf(stderr, "usage: scenarios_c11 NAME (see meson.build)\n");
    return 64;
}
