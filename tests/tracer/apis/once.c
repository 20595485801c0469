/*
 * once.c - pthread_once and call_once, chosen by name:
 *   once NAME
 * self: an init routine reaches its own pthread_once again through a callee (waits for
 * itself forever without the tracer); call-once-self: the same through C11 call_once;
 * cross: two threads, each inside the init routine of one control, call the other's
 * (each waits for the other forever); legit: many threads racing for one slow control,
 * nested controls, an init routine taking a mutex, a cancelled init routine run again;
 * fork-during-init: a fork while another thread runs an init routine, whose child calls that
 * pthread_once: glibc's once word carries the fork generation, so the child runs the routine
 * itself, as it prints.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static pthread_once_t once_a = PTHREAD_ONCE_INIT, once_b = PTHREAD_ONCE_INIT;
static once_flag flag_a = ONCE_FLAG_INIT;

/* ---- self ---- */
static void init_a_self(void);

NOINLINE void config_get(void)
{
    pthread_once(&once_a, init_a_self);
}

NOINLINE void init_a_self(void)
{
    printf("init a\n");
    fflush(stdout);
    config_get(); /* the init routine reaches its own once-control again */
}

/* ---- call-once-self ---- */
static void c11_init(void);

NOINLINE void c11_get(void)
{
    call_once(&flag_a, c11_init);
}

NOINLINE void c11_init(void)
{
    printf("init a\n");
    fflush(stdout);
    c11_get();
}

/* ---- cross: each init routine waits until the other thread is inside its own ---- */
static atomic_int in_a, in_b;

NOINLINE void init_b_cross(void);

NOINLINE void init_a_cross(void)
{
    in_a = 1;
    while (!in_b)
        sched_yield();
    pthread_once(&once_b, init_b_cross);
}

NOINLINE void init_b_cross(void)
{
    in_b = 1;
    while (!in_a)
        sched_yield();
    pthread_once(&once_a, init_a_cross);
}

static void *second(void *arg)
{
    (void)arg;
    pthread_once(&once_b, init_b_cross);
    return NULL;
}

NOINLINE void cross(void)
{
    pthread_t th;
    pthread_create(&th, NULL, second, NULL);
    pthread_once(&once_a, init_a_cross);
    pthread_join(th, NULL);
}

/* ---- legit ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t slow = PTHREAD_ONCE_INIT, inner = PTHREAD_ONCE_INIT,
                      cancelled = PTHREAD_ONCE_INIT;
static atomic_int slow_runs, inner_runs, cancelled_runs, arrived;

static void init_inner(void)
{
    pthread_mutex_lock(&mu);
    inner_runs++;
    pthread_mutex_unlock(&mu);
}

/* Runs while the other threads arrive and wait in pthread_once for it. */
static void init_slow(void)
{
    while (arrived < 8)
        sched_yield();
    pthread_once(&inner, init_inner);
    slow_runs++;
}

static void *racer(void *arg)
{
    (void)arg;
    arrived++;
    pthread_once(&slow, init_slow);
    pthread_mutex_lock(&mu);
    pthread_once(&inner, init_inner); /* done already: under a mutex is fine */
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* The first run is cancelled inside the init routine (libc resets the control), the next
 * caller runs it again. */
static atomic_int cancel_me_ready;

static void init_cancellable(void)
{
    if (cancelled_runs++ == 0) {
        cancel_me_ready = 1;
        for (;;)
            pause(); /* a cancellation point */
    }
}

static void *cancel_me(void *arg)
{
    (void)arg;
    pthread_once(&cancelled, init_cancellable);
    return NULL;
}

NOINLINE void legit(void)
{
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, racer, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    pthread_t c;
    pthread_create(&c, NULL, cancel_me, NULL);
    while (!cancel_me_ready)
        sched_yield();
    pthread_cancel(c);
    pthread_join(c, NULL);
    pthread_once(&cancelled, init_cancellable);
    call_once(&flag_a, init_inner);
    call_once(&flag_a, init_inner);
    printf("slow %d inner %d cancelled %d\n", slow_runs, inner_runs, cancelled_runs);
}

/* ---- fork-during-init ---- */
static pthread_once_t once_forked = PTHREAD_ONCE_INIT;
static atomic_int forked_in_init, forked_release;
static pid_t parent_pid;

NOINLINE void init_forked(void)
{
    if (getpid() != parent_pid) {
        printf("the child ran the init routine\n");
        return;
    }
    forked_in_init = 1;
    while (!forked_release)
        sched_yield();
}

static void *run_forked_init(void *arg)
{
    (void)arg;
    pthread_once(&once_forked, init_forked);
    return NULL;
}

NOINLINE int fork_during_init(void)
{
    pthread_t th;
    int status = -1;
    parent_pid = getpid();
    if (pthread_create(&th, NULL, run_forked_init, NULL) != 0)
        return 1;
    while (!forked_in_init)
        sched_yield();
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        pthread_once(&once_forked, init_forked);
        fflush(stdout);
        _exit(0);
    }
    if (child > 0)
        waitpid(child, &status, 0);
    forked_release = 1;
    pthread_join(th, NULL);
    printf("child status %d\n", status);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "self") == 0)
        config_get();
    else if (argc == 2 && strcmp(argv[1], "call-once-self") == 0)
        c11_get();
    else if (argc == 2 && strcmp(argv[1], "cross") == 0)
        cross();
    else if (argc == 2 && strcmp(argv[1], "legit") == 0)
        legit();
    else if (argc == 2 && strcmp(argv[1], "fork-during-init") == 0)
        fork_during_init();
    else {
        fprintf(stderr, "usage: once self|call-once-self|cross|legit|fork-during-init\n");
        return 64;
    }
    printf("returned\n");
    return 0;
}
