/*
 * barrier.c - pthread barrier misuse and its legal neighbours, chosen by name:
 *   barrier NAME
 * destroy-waited: pthread_barrier_destroy while a thread waits in a round not complete
 * (glibc's destroy then waits forever); crowd: the same with 100 waiters; init-waited: an
 * init while a thread waits (its round is forgotten; it leaves with the next round);
 * legit: many rounds, PTHREAD_BARRIER_SERIAL_THREAD once a round, a destroy right after the
 * last round (its waiters still leaving), heap barriers at reused addresses, init with count
 * 0, fork with a thread waiting, a process-shared barrier across fork, an asynchronously
 * cancelled waiter.
 * Blocked threads are found by polling /proc (blocked.h), never by sleeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "poll.h"

#define NOINLINE __attribute__((noinline))

static pthread_barrier_t b;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EBUSY ? "EBUSY" : rc == EINVAL ? "EINVAL"
                                         : rc == PTHREAD_BARRIER_SERIAL_THREAD ? "SERIAL"
                                                                               : strerror(rc));
    fflush(stdout);
}

typedef struct waiter {
    pthread_t th;
    blocked_probe probe;
    pthread_barrier_t *at;
} waiter;

NOINLINE void *wait_at_barrier(void *arg)
{
    waiter *w = arg;
    blocked_announce_on(&w->probe, w->at, sizeof *w->at);
    pthread_barrier_wait(w->at);
    return NULL;
}

/* n threads blocked in pthread_barrier_wait(at). */
static waiter *start_waiters(pthread_barrier_t *at, int n)
{
    waiter *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) {
        w[i].at = at;
        pthread_create(&w[i].th, NULL, wait_at_barrier, &w[i]);
    }
    for (int i = 0; i < n; i++)
        blocked_until(&w[i].probe);
    return w;
}

static void join_waiters(waiter *w, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(w[i].th, NULL);
    free(w);
}

/* One thread waits, count 2; under LOCKTRACE_ACTION=edeadlk the refused destroy leaves the
 * barrier as it was: this thread completes the round, then the destroy goes through. */
NOINLINE void destroy_waited(int waiters)
{
    pthread_barrier_init(&b, NULL, (unsigned)waiters + 1);
    waiter *w = start_waiters(&b, waiters);
    int rc = pthread_barrier_destroy(&b);
    result("destroy", rc);
    if (rc == EBUSY) {
        pthread_barrier_wait(&b);
        join_waiters(w, waiters);
        result("destroy", pthread_barrier_destroy(&b));
    }
}

/* The waiter's round is forgotten by the init; the new count's first round lets it go too. */
NOINLINE void init_waited(void)
{
    pthread_barrier_init(&b, NULL, 2);
    waiter *w = start_waiters(&b, 1);
    result("init", pthread_barrier_init(&b, NULL, 2));
    waiter *late = calloc(1, sizeof *late);
    late->at = &b;
    pthread_create(&late->th, NULL, wait_at_barrier, late);
    pthread_barrier_wait(&b);
    join_waiters(w, 1);
    join_waiters(late, 1);
    result("destroy", pthread_barrier_destroy(&b));
}

/* ---- legit ---- */
#define ROUNDS 1000
#define PARTIES 4
static pthread_barrier_t rb;
static _Atomic int serials;

static void *rounds(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++)
        if (pthread_barrier_wait(&rb) == PTHREAD_BARRIER_SERIAL_THREAD)
            serials++;
    return NULL;
}

static void many_rounds(void)
{
    pthread_t th[PARTIES];
    pthread_barrier_init(&rb, NULL, PARTIES);
    for (int i = 0; i < PARTIES; i++)
        pthread_create(&th[i], NULL, rounds, NULL);
    for (int i = 0; i < PARTIES; i++)
        pthread_join(th[i], NULL);
    result("destroy after the rounds", pthread_barrier_destroy(&rb));
    printf("serial threads %d of %d rounds\n", serials, ROUNDS);
}

static void *pass(void *arg)
{
    pthread_barrier_wait(arg);
    return NULL;
}

/* The last arrival lets the others go; this thread destroys at once, while they may still be
 * inside pthread_barrier_wait (glibc's destroy waits for them to leave: legal). The memory
 * is then freed and malloc hands the address to the next barrier. */
static void destroy_after_round(void)
{
    int refused = 0;
    for (int i = 0; i < 200; i++) {
        pthread_barrier_t *hb = malloc(sizeof *hb);
        pthread_t th[2];
        pthread_barrier_init(hb, NULL, 3);
        for (int k = 0; k < 2; k++)
            pthread_create(&th[k], NULL, pass, hb);
        pthread_barrier_wait(hb);
        refused += pthread_barrier_destroy(hb) != 0;
        for (int k = 0; k < 2; k++)
            pthread_join(th[k], NULL);
        free(hb);
    }
    printf("destroys right after the round refused %d\n", refused);
}

static void init_cases(void)
{
    pthread_barrier_t zb;
    result("init count 0", pthread_barrier_init(&zb, NULL, 0));
    /* an init again on a barrier whose rounds are all complete (no destroy between) */
    pthread_barrier_init(&zb, NULL, 1);
    result("wait count 1", pthread_barrier_wait(&zb));
    result("init again", pthread_barrier_init(&zb, NULL, 2));
    result("destroy", pthread_barrier_destroy(&zb));
    result("init after destroy", pthread_barrier_init(&zb, NULL, 1));
    result("destroy", pthread_barrier_destroy(&zb));
}

/* A thread waits at b when the process forks: the child has no such thread, and its own
 * init of b is no init of a waited-on barrier (glibc's word still counts the parent's). */
static void fork_with_waiter(void)
{
    pthread_barrier_init(&b, NULL, 2);
    waiter *w = start_waiters(&b, 1);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = pthread_barrier_init(&b, NULL, 1) == 0 &&
                 pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD &&
                 pthread_barrier_destroy(&b) == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("fork child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
    pthread_barrier_wait(&b);
    join_waiters(w, 1);
    result("destroy", pthread_barrier_destroy(&b));
}

/* Parent and child meet at a process-shared barrier; the parent destroys it after the
 * child is gone. */
static void shared_across_fork(void)
{
    pthread_barrier_t *sb = mmap(NULL, sizeof *sb, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(sb, &attr, 2);
    pthread_barrierattr_destroy(&attr);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_barrier_wait(sb);
        _exit(0);
    }
    pthread_barrier_wait(sb);
    int status = 0;
    waitpid(pid, &status, 0);
    result("process-shared destroy", pthread_barrier_destroy(sb));
    munmap(sb, sizeof *sb);
}

NOINLINE void *wait_async_cancellable(void *arg)
{
    waiter *w = arg;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    blocked_announce_on(&w->probe, w->at, sizeof *w->at);
    pthread_barrier_wait(w->at);
    return NULL;
}

/* glibc keeps counting a cancelled waiter's arrival, but nobody waits any more: an init then
 * forgets no one's round. */
static void cancelled_waiter(void)
{
    pthread_barrier_t cb;
    waiter w = {.at = &cb};
    void *ret;
    pthread_barrier_init(&cb, NULL, 2);
    pthread_create(&w.th, NULL, wait_async_cancellable, &w);
    blocked_until(&w.probe);
    pthread_cancel(w.th);
    pthread_join(w.th, &ret);
    printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
    result("init after the cancel", pthread_barrier_init(&cb, NULL, 1));
    result("wait", pthread_barrier_wait(&cb));
}

NOINLINE void legit(void)
{
    many_rounds();
    destroy_after_round();
    init_cases();
    fork_with_waiter();
    shared_across_fork();
    cancelled_waiter();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "destroy-waited") == 0)
        destroy_waited(1);
    else if (argc == 2 && strcmp(argv[1], "crowd") == 0)
        destroy_waited(100);
    else if (argc == 2 && strcmp(argv[1], "init-waited") == 0)
        init_waited();
    else if (argc == 2 && strcmp(argv[1], "legit") == 0)
        legit();
    else {
        fprintf(stderr, "usage: barrier destroy-waited|crowd|init-waited|legit\n");
        return 64;
    }
    return 0;
}
