/*
 * condvar.c - condition-variable misuse and its legal neighbours, chosen by name:
 *   condvar NAME
 * destroy-waited: pthread_cond_destroy while a thread is blocked on the condition variable
 * (glibc >= 2.25: the destroy waits forever); two-mutexes: one condition variable waited on
 * with two mutexes at once; wait-unheld: a condition wait with a mutex the thread does not
 * hold; legit: broadcast then destroy, destroy after the waiters left, re-init at a reused
 * address with another mutex, one condvar and one mutex from many threads, timed waits;
 * signal-count: a destroy counts exactly the waiters no signal has marked; destroy-timed:
 * a destroy while the only waiter is in a timed wait (glibc's destroy waits until it ends; a
 * third thread ends it by cancelling the waiter once the destroy waits); destroy-timed-slack:
 * the same with a waiter whose deadline is 3 s on, by a thread with 20 ms of timer slack.
 * Blocked threads are found by polling /proc, never by sleeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "poll.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready_flag;
static _Atomic int waiter_tid;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EBUSY ? "EBUSY" : rc == ETIMEDOUT ? "ETIMEDOUT" : strerror(rc));
    fflush(stdout);
}

NOINLINE void *wait_with_m1(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m1);
    waiter_tid = gettid();
    while (!ready_flag)
        pthread_cond_wait(&cv, &m1);
    pthread_mutex_unlock(&m1);
    return NULL;
}

/* Starts a thread that runs fn, blocked in a wait on cv with m1 once this returns. */
static pthread_t start_waiter_in(void *(*fn)(void *))
{
    pthread_t th;
    waiter_tid = 0;
    pthread_create(&th, NULL, fn, NULL);
    while (!waiter_tid)
        sched_yield();
    pthread_mutex_lock(&m1); /* the waiter has released m1: it is inside the wait */
    pthread_mutex_unlock(&m1);
    blocked_wait_tid(waiter_tid);
    return th;
}

/* Starts a thread blocked in pthread_cond_wait(&cv, &m1). */
static pthread_t start_waiter(void)
{
    return start_waiter_in(wait_with_m1);
}

static void release_waiter(pthread_t th)
{
    pthread_mutex_lock(&m1);
    ready_flag = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m1);
    pthread_join(th, NULL);
}

NOINLINE void destroy_waited(void)
{
    pthread_t th = start_waiter();
    int rc = pthread_cond_destroy(&cv);
    result("destroy", rc);
    release_waiter(th);
    printf("waiter joined\n");
}

NOINLINE void wait_with_other_mutex(void)
{
    pthread_t th = start_waiter();
    struct timespec t = ms_from_now(20);
    pthread_mutex_lock(&m2);
    result("timedwait with m2", pthread_cond_timedwait(&cv, &m2, &t));
    pthread_mutex_unlock(&m2);
    release_waiter(th);
}

NOINLINE void wait_unheld(void)
{
    struct timespec t = ms_from_now(0);
    result("timedwait unheld", pthread_cond_timedwait(&cv, &m1, &t));
    pthread_mutex_unlock(&m1); /* the wait returned holding it */
}

static blocked_probe destroying;
static long wait_ms = 600000; /* a timed waiter's deadline */

NOINLINE void *wait_timed(void *arg)
{
    (void)arg;
    struct timespec t = ms_from_now(wait_ms);
    pthread_mutex_lock(&m1);
    waiter_tid = gettid();
    while (!ready_flag && pthread_cond_timedwait(&cv, &m1, &t) == 0)
        ;
    pthread_mutex_unlock(&m1);
    return NULL;
}

static void *cancel_once_destroying(void *arg)
{
    blocked_until(&destroying);
    pthread_cancel(*(pthread_t *)arg);
    return NULL;
}

/* The waiter's cancellation retakes m1 and leaves the wait: the cleanup unlocks m1. */
static void unlock_m1(void *arg)
{
    (void)arg;
    pthread_mutex_unlock(&m1);
}

NOINLINE void *wait_timed_cancellable(void *arg)
{
    pthread_cleanup_push(unlock_m1, NULL);
    wait_timed(arg);
    pthread_cleanup_pop(0);
    return NULL;
}

NOINLINE void destroy_timed(void)
{
    pthread_t waiter, canceller;
    void *ret;
    pthread_create(&waiter, NULL, wait_timed_cancellable, NULL);
    while (!waiter_tid)
        sched_yield();
    pthread_mutex_lock(&m1); /* the waiter has released m1: it is inside the wait */
    pthread_mutex_unlock(&m1);
    blocked_wait_tid(waiter_tid);
    pthread_create(&canceller, NULL, cancel_once_destroying, &waiter);
    blocked_announce_on(&destroying, &cv, sizeof cv);
    result("destroy", pthread_cond_destroy(&cv));
    pthread_join(waiter, &ret);
    pthread_join(canceller, NULL);
    printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
}

/* A waiter whose wait ends by itself 3 s on, destroyed at once by a thread whose naps last
 * 20 ms or more (timer slack): the tracer's 250 ms grace must be of the clock, not of naps,
 * to find the waiter still there. glibc's destroy waits for the deadline. */
NOINLINE void destroy_timed_slack(void)
{
    wait_ms = 3000;
    pthread_t waiter = start_waiter_in(wait_timed);
    prctl(PR_SET_TIMERSLACK, 20000000UL);
    result("destroy", pthread_cond_destroy(&cv));
    pthread_join(waiter, NULL);
}

NOINLINE void *wait_cancellable(void *arg)
{
    pthread_cleanup_push(unlock_m1, NULL);
    wait_with_m1(arg);
    pthread_cleanup_pop(0);
    return NULL;
}

/* A shutdown: the waiter cancelled, the condition variable destroyed at once, holding the
 * mutex the cancelled waiter must retake (glibc's destroy waits only until the waiter acts on
 * its cancellation), then the join. Legal on glibc, silent. */
NOINLINE void cancel_then_destroy(void)
{
    pthread_t th;
    void *ret;
    pthread_create(&th, NULL, wait_cancellable, NULL);
    while (!waiter_tid)
        sched_yield();
    pthread_mutex_lock(&m1);
    blocked_wait_tid(waiter_tid);
    pthread_cancel(th);
    result("destroy", pthread_cond_destroy(&cv));
    pthread_mutex_unlock(&m1);
    pthread_join(th, &ret);
    printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
}

/* ---- legit ---- */
static pthread_mutex_t lm = PTHREAD_MUTEX_INITIALIZER;
static int turn, done_count;

static void *many(void *arg)
{
    pthread_cond_t *c = arg;
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&lm);
        turn++;
        pthread_cond_broadcast(c);
        struct timespec t = ms_from_now(1);
        pthread_cond_timedwait(c, &lm, &t); /* often times out: legal */
        pthread_mutex_unlock(&lm);
    }
    pthread_mutex_lock(&lm);
    done_count++;
    pthread_mutex_unlock(&lm);
    return NULL;
}

static pthread_cond_t *bcv;
static int go;

static void *wait_go(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lm);
    done_count++;
    while (!go)
        pthread_cond_wait(bcv, &lm);
    pthread_mutex_unlock(&lm);
    return NULL;
}

NOINLINE void legit(void)
{
    /* one condvar, one mutex, many threads, timed waits */
    pthread_cond_t c1;
    pthread_t th[6];
    pthread_cond_init(&c1, NULL);
    for (int i = 0; i < 6; i++)
        pthread_create(&th[i], NULL, many, &c1);
    for (int i = 0; i < 6; i++)
        pthread_join(th[i], NULL);
    pthread_cond_destroy(&c1); /* after every waiter left */
    /* broadcast, then destroy at once: the woken waiters have not returned yet */
    for (int round = 0; round < 20; round++) {
        bcv = malloc(sizeof *bcv);
        pthread_cond_init(bcv, NULL);
        go = 0;
        done_count = 0;
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, wait_go, NULL);
        for (;;) {
            pthread_mutex_lock(&lm);
            int n = done_count;
            pthread_mutex_unlock(&lm);
            if (n == 4)
                break;
            sched_yield();
        }
        pthread_mutex_lock(&lm);
        go = 1;
        pthread_cond_broadcast(bcv);
        pthread_mutex_unlock(&lm);
        pthread_cond_destroy(bcv);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        free(bcv);
    }
    /* re-initialised at the same address, used with another mutex */
    pthread_cond_t c2 = PTHREAD_COND_INITIALIZER;
    struct timespec t = ms_from_now(1);
    pthread_mutex_lock(&m1);
    result("timedwait m1", pthread_cond_timedwait(&c2, &m1, &t));
    pthread_mutex_unlock(&m1);
    pthread_cond_destroy(&c2);
    pthread_cond_init(&c2, NULL);
    t = ms_from_now(1);
    pthread_mutex_lock(&m2);
    result("timedwait m2", pthread_cond_timedwait(&c2, &m2, &t));
    pthread_mutex_unlock(&m2);
    pthread_cond_destroy(&c2);
    printf("turns %d\n", turn);
}

/* 200 waiters on one condition variable; `signals` signals, one ticket each, so each signal
 * lets one waiter go for good (none waits again); a destroy then finds 200 - signals waiting,
 * and after a broadcast and the joins, none. */
#define CROWD 200
static pthread_cond_t tcv = PTHREAD_COND_INITIALIZER;
static int tickets;
static _Atomic int ticket_tids[CROWD];

static void *take_ticket(void *arg)
{
    pthread_mutex_lock(&m1);
    ticket_tids[(long)arg] = gettid();
    while (tickets == 0)
        pthread_cond_wait(&tcv, &m1);
    tickets--;
    pthread_mutex_unlock(&m1);
    return NULL;
}

static void give_tickets(int n, int all)
{
    pthread_mutex_lock(&m1);
    tickets += n;
    if (all)
        pthread_cond_broadcast(&tcv);
    else
        pthread_cond_signal(&tcv);
    pthread_mutex_unlock(&m1);
}

NOINLINE void signal_count(int signals)
{
    pthread_t th[CROWD];
    for (long i = 0; i < CROWD; i++)
        pthread_create(&th[i], NULL, take_ticket, (void *)i);
    for (int i = 0; i < CROWD; i++) {
        while (!ticket_tids[i])
            sched_yield();
        blocked_wait_tid(ticket_tids[i]); /* m1 is free once it waits: no other futex wait */
    }
    for (int i = 0; i < signals; i++)
        give_tickets(1, 0);
    result("destroy", pthread_cond_destroy(&tcv));
    give_tickets(CROWD - signals, 1);
    for (int i = 0; i < CROWD; i++)
        pthread_join(th[i], NULL);
    result("destroy", pthread_cond_destroy(&tcv));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "destroy-waited") == 0)
        destroy_waited();
    else if (argc == 2 && strcmp(argv[1], "two-mutexes") == 0)
        wait_with_other_mutex();
    else if (argc == 2 && strcmp(argv[1], "wait-unheld") == 0)
        wait_unheld();
    else if (argc == 2 && strcmp(argv[1], "legit") == 0)
        legit();
    else if (argc == 2 && strcmp(argv[1], "signal-count") == 0)
        signal_count(150);
    else if (argc == 2 && strcmp(argv[1], "crowd-count") == 0)
        signal_count(0);
    else if (argc == 2 && strcmp(argv[1], "destroy-timed") == 0)
        destroy_timed();
    else if (argc == 2 && strcmp(argv[1], "cancel-then-destroy") == 0)
        cancel_then_destroy();
    else if (argc == 2 && strcmp(argv[1], "destroy-timed-slack") == 0)
        destroy_timed_slack();
    else {
        fprintf(stderr, "usage: condvar destroy-waited|two-mutexes|wait-unheld|legit|signal-count|crowd-count|destroy-timed|cancel-then-destroy|destroy-timed-slack\n");
        return 64;
    }
    return 0;
}
