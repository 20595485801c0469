/*
 * wfprog.c - programs for the workflow tests (tests/workflow/workflow_test.py): one mode per
 * situation a user meets around a report (exit codes, caps, signals, hung tests).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../blocked.h"

#define NOINLINE __attribute__((noinline))

void wf_library_marker(void); /* wfdtor.c: its destructor prints at exit */

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : strerror(rc));
    fflush(stdout);
}

NOINLINE static void noisy_unlock(pthread_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

/* Write then read on one rwlock: glibc returns EDEADLK, the tracer reports a self-deadlock. */
NOINLINE static int known_write_read(pthread_rwlock_t *l)
{
    pthread_rwlock_wrlock(l);
    int rc = pthread_rwlock_rdlock(l);
    pthread_rwlock_unlock(l);
    return rc;
}

/* 120 distinct self-deadlocks (each function relocks an error-checking mutex: its own bug,
 * its own signature), past the cap of 100 printed reports of a kind, then one in
 * known_write_read that a suppression rule names: it must be suppressed, not aborted. */
static volatile int relocked;
#define RELOCK(n) NOINLINE void relock_##n(pthread_mutex_t *m) { relocked = n; pthread_mutex_lock(m); }
#define RELOCK10(d) RELOCK(d##0) RELOCK(d##1) RELOCK(d##2) RELOCK(d##3) RELOCK(d##4) RELOCK(d##5) \
                    RELOCK(d##6) RELOCK(d##7) RELOCK(d##8) RELOCK(d##9)
RELOCK10(1) RELOCK10(2) RELOCK10(3) RELOCK10(4) RELOCK10(5) RELOCK10(6) RELOCK10(7) RELOCK10(8)
RELOCK10(9) RELOCK10(10) RELOCK10(11) RELOCK10(12)
#define NAME(n) relock_##n,
#define NAME10(d) NAME(d##0) NAME(d##1) NAME(d##2) NAME(d##3) NAME(d##4) NAME(d##5) NAME(d##6) \
                  NAME(d##7) NAME(d##8) NAME(d##9)
static void (*const relocks[])(pthread_mutex_t *) = {
    NAME10(1) NAME10(2) NAME10(3) NAME10(4) NAME10(5) NAME10(6) NAME10(7) NAME10(8) NAME10(9)
    NAME10(10) NAME10(11) NAME10(12)};

static void capped_then_suppressed(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m, &a);
    pthread_mutex_lock(&m);
    for (size_t i = 0; i < sizeof relocks / sizeof *relocks; i++)
        relocks[i](&m);
    pthread_mutex_unlock(&m);
    result("rdlock", known_write_read(&l));
}

/* One report, then a normal exit: the library's destructor must still run. */
static void report_then_exit(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    wf_library_marker();
    noisy_unlock(&m);
    printf("main returns"); /* no newline: only exit()'s stdio flush writes it */
}

/* A hung test: every signal a user may send is caught and named on stdout; SIGTERM ends it. */
static volatile sig_atomic_t last, done;

static void on_signal(int sig)
{
    last = sig;
    if (sig == SIGTERM)
        done = 1;
}

static void hang(void)
{
    static const int sigs[] = {SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaction(sigs[i], &sa, NULL);
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaddset(&block, sigs[i]);
    sigprocmask(SIG_BLOCK, &block, &old);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (!done) {
        sigsuspend(&old);
        printf("got %s\n", last ? sigabbrev_np(last) : "none"); /* a dump request: none */
        fflush(stdout);
    }
}

/* Blocks SIGUSR1 in its one thread and takes it with sigwaitinfo, naming each on stdout: no
 * handler ever runs. */
static void sigwait_usr1(void)
{
    sigset_t set;
    siginfo_t info;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        if (sigwaitinfo(&set, &info) == SIGUSR1) {
            printf("took USR1\n");
            fflush(stdout);
        }
}

/* Holds a lock and waits forever in a condition wait: a hang the dump should explain. */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe waiter_probe;

static void *waiter(void *arg)
{
    (void)arg;
    blocked_announce_on(&waiter_probe, &held, sizeof held);
    pthread_mutex_lock(&held); /* blocks: main holds it */
    return NULL;
}

static void hung_on_lock(void)
{
    pthread_t t;
    pthread_mutex_lock(&held);
    pthread_create(&t, NULL, waiter, NULL);
    blocked_until(&waiter_probe); /* "ready" means the dump will find the waiter blocked */
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause(); /* a dump signal's handler returns here */
}

static void *volatile leaked;

/* Starts prog (argv[0] of args) the way `how` names, with the environment given minus the
 * variable `drop` ("-" drops none): the exec functions, posix_spawn, system and popen. */
static int start(const char *how, const char *drop, char **args)
{
    extern char **environ;
    if (strcmp(drop, "-") != 0)
        unsetenv(drop);
    char **env = environ;
    pid_t pid;
    if (!strcmp(how, "execve"))
        execve(args[0], args, env);
    else if (!strcmp(how, "execvp"))
        execvp(args[0], args);
    else if (!strcmp(how, "execl"))
        execl(args[0], args[0], args[1], (char *)NULL);
    else if (!strcmp(how, "execle"))
        execle(args[0], args[0], args[1], (char *)NULL, env);
    else if (!strcmp(how, "posix_spawn")) {
        int rc = posix_spawn(&pid, args[0], NULL, NULL, args, env);
        return rc ? 127 : waitpid(pid, &rc, 0) == pid && WIFEXITED(rc) ? WEXITSTATUS(rc) : 126;
    } else if (!strcmp(how, "system")) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s %s", args[0], args[1]);
        int rc = system(cmd);
        return WIFEXITED(rc) ? WEXITSTATUS(rc) : 126;
    } else if (!strcmp(how, "popen")) {
        char cmd[4096], line[256];
        snprintf(cmd, sizeof cmd, "%s %s", args[0], args[1]);
        FILE *f = popen(cmd, "r");
        while (f && fgets(line, sizeof line, f))
            fputs(line, stdout);
        return f ? WEXITSTATUS(pclose(f)) : 127;
    }
    return 127;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "capped-then-suppressed"))
        capped_then_suppressed();
    else if (!strcmp(mode, "report-then-exit"))
        report_then_exit();
    else if (!strcmp(mode, "hang"))
        hang();
    else if (!strcmp(mode, "hung-on-lock"))
        hung_on_lock();
    else if (!strcmp(mode, "sigwait"))
        sigwait_usr1();
    else if (!strcmp(mode, "self-deadlock")) {
        pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
        result("rdlock", known_write_read(&l));
    } else if (!strcmp(mode, "clean")) {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        result("lock", pthread_mutex_lock(&m));
        pthread_mutex_unlock(&m);
    } else if (!strcmp(mode, "leak")) {
        leaked = malloc(4242); /* dropped below: LeakSanitizer must still see the program's leaks */
        leaked = NULL;
        result("leak", 0);
    } else if (!strcmp(mode, "bad-unlock")) {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        noisy_unlock(&m);
    } else if (!strcmp(mode, "start") && argc == 6) { /* start HOW DROP PROGRAM ARG */
        return start(argv[2], argv[3], argv + 4);
    } else if (!strcmp(mode, "bad-unlock-exec") && argc > 2) { /* then becomes argv[2...] */
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        noisy_unlock(&m);
        execv(argv[2], argv + 2);
        return 127;
    } else {
        fprintf(stderr, "usage: wfprog capped-then-suppressed|report-then-exit|hang|"
                        "hung-on-lock|sigwait|self-deadlock|clean|leak|bad-unlock|"
                        "bad-unlock-exec PROGRAM ARGS...|start HOW DROP PROGRAM ARG\n");
        return 64;
    }
    return 0;
}
