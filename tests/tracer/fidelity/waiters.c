/*
 * waiters.c - threads blocked in waits, each from a call chain of its own, while a report is
 * made: the report must say where each one waits, frame by frame. The comments marked with @
 * name lines fidelity_test.py checks; keep them on the lines they mark. The volatile `after`
 * behind each marked call keeps the call from becoming a tail call at -O2.
 *
 *   waiters cycle   three threads each hold one mutex and request the next one's, each at
 *                   another depth: a deadlock (the tracer reports it and aborts)
 *   waiters dump    three threads wait (for a mutex main holds, in a condition wait holding a
 *                   mutex, in pthread_join holding one); once all sleep, main renames the
 *                   condition waiter "cond-renamed" and raises SIGUSR1
 *                   (LOCKTRACE_DUMP_SIGNAL=SIGUSR1: a thread dump), then lets them go
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "blocked.h"

static pthread_mutex_t m[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                               PTHREAD_MUTEX_INITIALIZER};
static pthread_barrier_t all_hold;
static volatile int after;

/* ---- cycle: thread i holds m[i] and requests m[(i + 1) % 3] ---------------------------- */

void Wait_shallow(void)
{
    pthread_mutex_lock(&m[0]); /* @shallow:hold */
    pthread_barrier_wait(&all_hold);
    pthread_mutex_lock(&m[1]); /* @shallow:wait */
    after++;
}

/* Frames of their own, more than the few callers recorded with a call site. */
__attribute__((noinline)) void Inner(void)
{
    pthread_mutex_lock(&m[2]); /* @inner:wait */
    after++;
}

__attribute__((noinline)) void Middle(void)
{
    Inner(); /* @middle */
    after++;
}

__attribute__((noinline)) void Outer(void)
{
    Middle(); /* @outer */
    after++;
}

__attribute__((noinline)) void Around(void)
{
    Outer(); /* @around */
    after++;
}

__attribute__((noinline)) void Wait_deep(void)
{
    pthread_mutex_lock(&m[1]); /* @deep:hold */
    pthread_barrier_wait(&all_hold);
    Around(); /* @deep:wait */
    after++;
}

void Take(pthread_mutex_t *x)
{
    pthread_mutex_lock(x); /* @take */
    after++;
}

void Wait_helper(void)
{
    Take(&m[2]); /* @helper:hold */
    after++;
    pthread_barrier_wait(&all_hold);
    Take(&m[0]); /* @helper:wait */
    after++;
}

void *Cycle_worker(void *arg)
{
    switch ((int)(intptr_t)arg) {
    case 0:
        Wait_shallow(); /* @cycle:0 */
        break;
    case 1:
        Wait_deep(); /* @cycle:1 */
        break;
    default:
        Wait_helper(); /* @cycle:2 */
        break;
    }
    after++;
    return NULL;
}

/* ---- dump ---------------------------------------------------------------------------- */

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER, cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static blocked_probe probes[3];
static pthread_t gate_thread;

void Gate_wait(void)
{
    blocked_announce_on(&probes[0], &gate, sizeof gate);
    pthread_mutex_lock(&gate); /* @gate:wait */
    after++;
    pthread_mutex_unlock(&gate);
}

void Cond_wait_holding(void)
{
    pthread_mutex_lock(&m[0]); /* @cond:hold */
    pthread_mutex_lock(&cond_mutex);
    blocked_announce_on(&probes[1], &cond, sizeof cond);
    while (!go)
        pthread_cond_wait(&cond, &cond_mutex); /* @cond:wait */
    after++;
    pthread_mutex_unlock(&cond_mutex);
    pthread_mutex_unlock(&m[0]);
}

void Join_holding(void)
{
    pthread_mutex_lock(&m[1]); /* @join:hold */
    blocked_announce_on(&probes[2], (const void *)gate_thread, 4096);
    pthread_join(gate_thread, NULL); /* @join:wait */
    after++;
    pthread_mutex_unlock(&m[1]);
}

void *Dump_worker(void *arg)
{
    static const char *names[] = {"gate-waiter", "cond-waiter", "join-waiter"};
    pthread_setname_np(pthread_self(), names[(intptr_t)arg]);
    switch ((int)(intptr_t)arg) {
    case 0:
        Gate_wait(); /* @dump:0 */
        break;
    case 1:
        Cond_wait_holding(); /* @dump:1 */
        break;
    default:
        Join_holding(); /* @dump:2 */
        break;
    }
    after++;
    return NULL;
}

static int cycle(void)
{
    pthread_t th[3];
    pthread_barrier_init(&all_hold, NULL, 3);
    for (intptr_t i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, Cycle_worker, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    printf("no deadlock\n");
    return 1;
}

static int dump(void)
{
    pthread_t th[2];
    pthread_mutex_lock(&gate);
    pthread_create(&gate_thread, NULL, Dump_worker, (void *)0);
    for (intptr_t i = 1; i < 3; i++)
        pthread_create(&th[i - 1], NULL, Dump_worker, (void *)i);
    for (int i = 0; i < 3; i++)
        blocked_until(&probes[i]);
    pthread_setname_np(th[0], "cond-renamed");
    raise(SIGUSR1);
    pthread_mutex_unlock(&gate);
    pthread_mutex_lock(&cond_mutex);
    go = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&cond_mutex);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("dumped\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "cycle") == 0)
        return cycle();
    if (argc == 2 && strcmp(argv[1], "dump") == 0)
        return dump();
    fprintf(stderr, "usage: waiters cycle|dump\n");
    return 2;
}
