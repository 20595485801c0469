/*
 * cancel_early.c - a thread cancelled before it has run a line of its own: pthread_create
 * has returned its handle, and main cancels it at once (a pool's stop may). The thread, with
 * its cancellation disabled until then, takes a lock, pushes a cleanup handler that releases
 * it, starts a second thread that blocks on that lock, enables cancellation and joins the
 * second thread: the join, a cancellation point, ends there, and the handler lets the second
 * thread go on. No deadlock; traced, it was reported and aborted when the cancellation came
 * before the thread's first call into the tracer (its start), which the tracer's walk of its
 * threads then did not find.
 *
 * To send the cancellation at that moment in every run, the program's free holds any thread
 * but main while `hold` is set: the tracer's start of a new thread frees its start record
 * before the thread registers (interpose.c: lt_interpose_started). Without the tracer the
 * thread waits at its first line instead; either way main cancels it there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../blocked.h"

void __libc_free(void *p);

static _Atomic int hold, arrived;
static pid_t main_tid;

/* Holds a thread other than main until main has cancelled it. Spins: no cancellation point. */
static void held(void)
{
    if (atomic_load(&hold) && gettid() != main_tid) {
        atomic_store(&arrived, 1);
        while (atomic_load(&hold))
            sched_yield();
    }
}

void free(void *p)
{
    held();
    __libc_free(p);
}

static pthread_mutex_t taken = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe blocks;

static void *blocked_on_taken(void *arg)
{
    blocked_announce_on(&blocks, &taken, sizeof taken);
    pthread_mutex_lock(&taken);
    pthread_mutex_unlock(&taken);
    return arg;
}

static void unlock_taken(void *arg)
{
    (void)arg;
    pthread_mutex_unlock(&taken);
}

static void *early(void *arg)
{
    pthread_t other;
    held();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL); /* until the other thread blocks */
    pthread_mutex_lock(&taken);
    pthread_cleanup_push(unlock_taken, NULL);
    if (pthread_create(&other, NULL, blocked_on_taken, NULL) != 0)
        _exit(2);
    *(pthread_t *)arg = other;
    blocked_until(&blocks);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL); /* (no cancellation point) */
    pthread_join(other, NULL); /* the cancellation acts here */
    pthread_cleanup_pop(1);
    return NULL;
}

int main(void)
{
    pthread_t th, other;
    void *ret = NULL;
    main_tid = gettid();
    atomic_store(&hold, 1);
    if (pthread_create(&th, NULL, early, &other) != 0)
        return 1;
    while (!atomic_load(&arrived))
        sched_yield();
    pthread_cancel(th);
    atomic_store(&hold, 0);
    pthread_join(th, &ret);
    pthread_join(other, NULL);
    printf("thread %s\ndone\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}
