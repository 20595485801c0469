/*
 * peer_waits.c - real deadlocks through a condition wait's mutex, as the peers see them
 * (ThreadSanitizer and Helgrind count the mutex a condition wait retakes as taken under the
 * locks its thread still holds): a thread holds A and waits on a condition variable with
 * mutex M; another takes M, signals, and asks for A. The waiter cannot return before it has
 * M back, the other cannot let M go before it has A: both wait forever, whatever woke the
 * waiter (a signal, a timeout) or none. And the legal neighbour: the other lets M go before asking
 * for A. Also a thread that joins itself (glibc returns EDEADLK, musl waits forever; Helgrind
 * reports it).
 *   peer_waits NAME
 * Each scenario prints what its calls returned and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>
#include <time.h>

#include "apis/poll.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER, inner = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int ready;
static blocked_probe waiter;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : strerror(rc));
    fflush(stdout);
}

/* The other thread: once the waiter sleeps in its condition wait, it takes the wait's mutex,
 * signals (unless `silent`: the waiter then sleeps on the condition variable, not on the
 * mutex), and asks for the waiter's outer lock - with the mutex still held (holding), or
 * after letting it go. */
static int silent;

NOINLINE static void signal_then_take_outer(int holding)
{
    blocked_until(&waiter);
    pthread_mutex_lock(&inner);
    ready = 1;
    if (!silent)
        pthread_cond_signal(&changed);
    if (!holding)
        pthread_mutex_unlock(&inner);
    int rc = pthread_mutex_lock(&outer);
    result("outer", rc);
    if (rc == 0)
        pthread_mutex_unlock(&outer);
    if (holding)
        pthread_mutex_unlock(&inner);
}

static void *holding_other(void *arg)
{
    (void)arg;
    signal_then_take_outer(1);
    return NULL;
}

static void *releasing_other(void *arg)
{
    (void)arg;
    signal_then_take_outer(0);
    return NULL;
}

/* The waiter: takes M, then A, and waits with M (blocking, or timed with a deadline far
 * enough away that only the signal ends it), still holding A. */
NOINLINE static void wait_holding_outer(int timed)
{
    pthread_mutex_lock(&inner);
    pthread_mutex_lock(&outer);
    blocked_announce_on(&waiter, &changed, sizeof changed);
    while (!ready) {
        struct timespec deadline = ms_from_now(60 * 1000);
        if (timed)
            pthread_cond_timedwait(&changed, &inner, &deadline);
        else
            pthread_cond_wait(&changed, &inner);
    }
    pthread_mutex_unlock(&outer);
    pthread_mutex_unlock(&inner);
}

static void run(void *(*other)(void *), int timed)
{
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    wait_holding_outer(timed);
    pthread_join(t, NULL);
}

NOINLINE static void join_self(void)
{
    result("join", pthread_join(pthread_self(), NULL));
}

NOINLINE static void thrd_join_self(void)
{
    int rc = thrd_join(thrd_current(), NULL);
    printf("thrd_join -> %s\n", rc == thrd_success ? "thrd_success" : rc == thrd_error ? "thrd_error" : "?");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "cond-mutex-cycle"))
        run(holding_other, 0);
    else if (!strcmp(s, "cond-mutex-cycle-unsignalled")) {
        silent = 1;
        run(holding_other, 0);
    } else if (!strcmp(s, "cond-mutex-cycle-timed"))
        run(holding_other, 1);
    else if (!strcmp(s, "cond-mutex-released"))
        run(releasing_other, 0);
    else if (!strcmp(s, "join-self"))
        join_self();
    else if (!strcmp(s, "thrd-join-self"))
        thrd_join_self();
    else {
        fprintf(stderr, "peer_waits: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
