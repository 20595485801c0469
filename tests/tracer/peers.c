/*
 * peers.c - behaviours met by running other lock checkers' test programs (Helgrind's, DRD's,
 * ThreadSanitizer's, lockdep's) under the tracer, each written here as a small program of
 * our own and chosen by name:
 *   peers NAME
 * Small stacks: threads made with PTHREAD_STACK_MIN, as thread pools and the peers' stress
 * tests make them; the tracer must neither overflow them while it learns a call site nor
 * while it symbolizes a report. Every scenario ends by printing "done" so a run that the
 * tracer cut short shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define WORKERS 6

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int arrived;

static pthread_t start_small(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        printf("pthread_create -> %s\n", strerror(rc));
        exit(2);
    }
    return t;
}

/* Each of these is a call site the tracer sees for the first time in a small-stack thread. */
NOINLINE static void take_both(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

NOINLINE static void read_table(void)
{
    pthread_rwlock_rdlock(&table);
    pthread_rwlock_unlock(&table);
}

NOINLINE static void check_in(void)
{
    pthread_mutex_lock(&counted);
    arrived++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&counted);
}

/* Correct locking only: heap churn between the locks, as a worker does. */
static void *quiet_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        char *p = malloc(4096 + (size_t)i);
        memset(p, i, 4096);
        free(p);
        take_both(&first, &second);
        read_table();
    }
    check_in();
    return NULL;
}

static void small_stacks_quiet(void)
{
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        t[i] = start_small(quiet_worker, NULL);
    pthread_mutex_lock(&counted);
    while (arrived < WORKERS)
        pthread_cond_wait(&changed, &counted);
    pthread_mutex_unlock(&counted);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
}

/* One thread only, so nothing can really deadlock: an inversion to report, then an
 * error-checking relock of a mutex on its own stack (reported, the mutex named by its frame;
 * the call returns EDEADLK and the thread goes on). */
static void *reporting_worker(void *arg)
{
    pthread_mutexattr_t attr;
    pthread_mutex_t checked;
    (void)arg;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checked, &attr);
    take_both(&first, &second);
    take_both(&second, &first);
    pthread_mutex_lock(&checked);
    int rc = pthread_mutex_lock(&checked);
    pthread_mutex_unlock(&checked);
    printf("relock -> %s\n", rc == EDEADLK ? "EDEADLK" : rc == 0 ? "0" : strerror(rc));
    return NULL;
}

static void small_stack_reports(void)
{
    pthread_join(start_small(reporting_worker, NULL), NULL);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "small-stacks-quiet"))
        small_stacks_quiet();
    else if (!strcmp(s, "small-stack-reports"))
        small_stack_reports();
    else {
        fprintf(stderr, "peers: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
