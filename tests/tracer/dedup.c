/*
 * dedup.c - bugs that repeat, for the de-duplication tests (dedup_test.py):
 *   dedup MODE [N]
 * Each mode hits its bugs N times (default 100) and prints one line per bug at the end. Lines
 * the tests look for carry a marker comment (BUG-...), so a test finds the line number in
 * this file rather than trusting the tracer's. Functions are global and not inlined so
 * that stacks name them (built with -rdynamic).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic int edeadlk; /* calls that returned EDEADLK */

static void count(int rc)
{
    if (rc == EDEADLK)
        edeadlk++;
}

/* A normal mutex locked twice: a self-deadlock (EDEADLK under LOCKTRACE_ACTION=edeadlk). */
NOINLINE void relock(void)
{
    pthread_mutex_lock(&mutex);
    count(pthread_mutex_lock(&mutex)); /* BUG-RELOCK */
    pthread_mutex_unlock(&mutex);
}

/* The same bug on a mutex of the caller's: the lock is no part of the bug. */
NOINLINE void relock_own(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    count(pthread_mutex_lock(m)); /* BUG-RELOCK-OWN */
    pthread_mutex_unlock(m);
}

static void *relock_thread(void *arg)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (long i = 0; i < (long)arg; i++)
        relock_own(&m);
    return NULL;
}

/* A call between the bug and the line that tells the bugs apart, so that line is the last
 * of the calls a signature reads. */
NOINLINE void relock_via(pthread_mutex_t *m)
{
    relock_own(m);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* One helper reached from 16 consecutive lines of one caller: 16 bugs. Their stacks differ
 * only in this caller's line, and the request and held stacks of each only in their first
 * call: what a signature summing near-equal hashes could not tell apart. */
NOINLINE void relock_lines(pthread_mutex_t *m)
{
    relock_via(m); /* BUG-LINES */
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    relock_via(m);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* Read, then write: an upgrade, another bug on another line. */
NOINLINE void upgrade(void)
{
    pthread_rwlock_rdlock(&rwlock);
    count(pthread_rwlock_wrlock(&rwlock)); /* BUG-UPGRADE */
    pthread_rwlock_unlock(&rwlock);
}

/* An unlock of a mutex not held: reported, and the program goes on (any action). */
NOINLINE void stray_unlock(void)
{
    pthread_mutex_unlock(&mutex); /* BUG-UNLOCK */
}

/* The same bug reached through recursion of any depth past 2: the calls that identify it
 * are the same. */
NOINLINE void recurse(int depth)
{
    if (depth == 0)
        relock();
    else
        recurse(depth - 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* Bugs in distinct functions: distinct reports, more than the per-kind cap of 100. */
#define SITE(n) NOINLINE void stray_unlock_##n(void) { pthread_mutex_unlock(&mutex); }
#define TEN(d) SITE(d##0) SITE(d##1) SITE(d##2) SITE(d##3) SITE(d##4) SITE(d##5) SITE(d##6) \
               SITE(d##7) SITE(d##8) SITE(d##9)
TEN(1) TEN(2) TEN(3) TEN(4) TEN(5) TEN(6) TEN(7) TEN(8) TEN(9) TEN(10) TEN(11)
#define NAME(n) stray_unlock_##n,
#define NAMES(d) NAME(d##0) NAME(d##1) NAME(d##2) NAME(d##3) NAME(d##4) NAME(d##5) NAME(d##6) \
                 NAME(d##7) NAME(d##8) NAME(d##9)
static void (*const sites[])(void) = {NAMES(1) NAMES(2) NAMES(3) NAMES(4) NAMES(5) NAMES(6)
                                      NAMES(7) NAMES(8) NAMES(9) NAMES(10) NAMES(11)};

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, ms % 1000 * 1000000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void done(void)
{
    printf("EDEADLK %d times\n", (int)edeadlk);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 100;
    if (!strcmp(mode, "loop")) {
        for (int i = 0; i < n; i++)
            relock();
    } else if (!strcmp(mode, "two-bugs")) {
        for (int i = 0; i < n; i++) {
            relock();
            upgrade();
        }
    } else if (!strcmp(mode, "two-sites")) {
        for (int i = 0; i < n; i++) {
            relock(); /* BUG-SITE-1 */
            relock(); /* BUG-SITE-2 */
        }
    } else if (!strcmp(mode, "lines")) {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        for (int i = 0; i < n; i++)
            relock_lines(&m);
    } else if (!strcmp(mode, "unlocks")) {
        for (int i = 0; i < n; i++)
            stray_unlock();
    } else if (!strcmp(mode, "timed")) { /* tests/bench/run_dedup.py */
        double t0 = now_ns();
        stray_unlock();
        double t1 = now_ns();
        for (int i = 0; i < n; i++)
            stray_unlock();
        printf("first_ns=%.0f repeat_ns=%.1f\n", t1 - t0, (now_ns() - t1) / n);
        return 0;
    } else if (!strcmp(mode, "threads")) { /* 4 threads, n each */
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, relock_thread, (void *)(long)n);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(mode, "fork")) {
        /* The child starts with no reports: its repeats are its own, in files of its own. */
        for (int i = 0; i < 3; i++)
            relock();
        fflush(stdout);
        pid_t child = fork();
        for (int i = 0; i < (child == 0 ? 5 : 2); i++)
            relock();
        if (child == 0) {
            done();
            exit(0);
        }
        waitpid(child, NULL, 0);
    } else if (!strcmp(mode, "vfork")) {
        /* A vfork child shares the parent's memory, counts pending included: its _exit must
         * write nothing (the files are the parent's). */
        for (int i = 0; i < n; i++)
            relock();
        pid_t child = vfork();
        if (child == 0)
            _exit(0);
        waitpid(child, NULL, 0);
        printf("child %d\n", (int)child);
    } else if (!strcmp(mode, "unlock-relock")) {
        for (int i = 0; i < n; i++) {
            stray_unlock();
            relock();
        }
    } else if (!strcmp(mode, "recursion")) {
        for (int i = 0; i < n; i++)
            recurse(2 + i % 5);
    } else if (!strcmp(mode, "then-abort")) {
        for (int i = 0; i < n; i++)
            stray_unlock();
        relock(); /* the default action aborts here */
    } else if (!strcmp(mode, "then-_exit") || !strcmp(mode, "then-_Exit")) {
        for (int i = 0; i < n; i++)
            stray_unlock();
        done();
        if (!strcmp(mode, "then-_exit"))
            _exit(3);
        _Exit(3);
    } else if (!strcmp(mode, "spaced")) {
        /* Repeats further apart than the tracer's rewrite interval, then killed outright:
         * each repeat was written at once, so the file has them all. */
        for (int i = 0; i < n; i++) {
            stray_unlock();
            pause_ms(300);
        }
        done();
        raise(SIGKILL);
    } else if (!strcmp(mode, "many-sites")) {
        for (int r = 0; r < 2; r++)
            for (size_t i = 0; i < sizeof sites / sizeof *sites; i++)
                sites[i]();
    } else {
        fprintf(stderr, "usage: dedup loop|two-bugs|two-sites|unlocks|timed|threads|fork|vfork|unlock-relock|recursion|"
                        "then-abort|then-_exit|then-_Exit|spaced|many-sites [N]\n");
        return 64;
    }
    done();
    return 0;
}
