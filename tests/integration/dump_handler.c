/*
 * dump_handler.c - a thread dump taken while a thread waits for a mutex inside a signal
 * handler: the dump names the signal's frame "<signal handler called>", as reports do, and
 * `locktrace report` then names the function the signal interrupted. Run with
 * LOCKTRACE_DUMP_SIGNAL=SIGUSR1 (no handler of the program's: every SIGUSR1 dumps).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../blocked.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe in_handler;
static atomic_int spinning, stop;

static void lock_in_handler(int sig)
{
    (void)sig;
    blocked_announce_on(&in_handler, &mutex, sizeof mutex);
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
    atomic_store(&stop, 1);
}

/* Where SIGUSR2 finds the thread: in its own loop, not in libc. */
__attribute__((noinline)) static void spin_until_stopped(void)
{
    atomic_store(&spinning, 1);
    while (!atomic_load(&stop))
        ;
}

static void *spinner(void *arg)
{
    (void)arg;
    spin_until_stopped();
    return NULL;
}

int main(void)
{
    pthread_t t;
    struct sigaction sa = {.sa_handler = lock_in_handler};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    pthread_mutex_lock(&mutex);
    pthread_create(&t, NULL, spinner, NULL);
    while (!atomic_load(&spinning))
        sched_yield();
    pthread_kill(t, SIGUSR2);
    blocked_until(&in_handler);
    raise(SIGUSR1); /* the dump, taken by this thread before raise returns */
    pthread_mutex_unlock(&mutex);
    pthread_join(t, NULL);
    puts("done");
    return 0;
}
