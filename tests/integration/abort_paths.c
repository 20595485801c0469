/*
 * abort_paths.c - a program the tracer aborts (a self-deadlock), in the situations a real
 * program is in when that happens: output still in its stdio buffer, stdout locked by a thread
 * that never lets go, a signal handler that interrupted it. Run under expect.py with stdout a
 * pipe, so stdout is fully buffered.
 *
 *   abort_paths buffered      prints a line, then locks a normal mutex twice
 *   abort_paths stdout-held   prints a line; another thread locks stdout (flockfile) and
 *                             waits for good; then the relock
 *   abort_paths in-handler    prints a line and holds stdout's lock itself (as printf does
 *                             while it runs) when a signal's handler relocks the mutex
 *   abort_paths trap          a SIGILL handler relocks the mutex; the illegal instruction is
 *                             the first of its function, so the frame the signal interrupted
 *                             is named right only when its address is looked up as is (it is
 *                             no return address)
 *
 * Each ends by SIGABRT under the tracer and hangs without it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int ready[2];

/* No tail calls: each frame stays on the stack the report shows. */
static void __attribute__((noinline)) relock(void)
{
    pthread_mutex_lock(&m);
    __asm__ volatile("" ::: "memory");
}

static void on_signal(int sig)
{
    (void)sig;
    relock();
    __asm__ volatile("" ::: "memory");
}

/* Holds stdout's lock for good. */
static void *hold_stdout(void *arg)
{
    (void)arg;
    flockfile(stdout);
    (void)!write(ready[1], "", 1);
    for (;;)
        pause();
    return NULL;
}

#if defined(__x86_64__) || defined(__aarch64__)
/* An illegal instruction first: the signal's saved address is this function's own start. */
__attribute__((naked, noinline)) static void trap_first(void)
{
#if defined(__x86_64__)
    __asm__("ud2");
#else
    __asm__("udf #0");
#endif
}
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    printf("printed before the deadlock\n");
    pthread_mutex_lock(&m);
    if (strcmp(mode, "buffered") == 0) {
        relock();
    } else if (strcmp(mode, "stdout-held") == 0) {
        pthread_t th;
        char c;
        if (pipe(ready) != 0 || pthread_create(&th, NULL, hold_stdout, NULL) != 0)
            return 3;
        if (read(ready[0], &c, 1) != 1) /* stdout is locked from here on */
            return 3;
        relock();
    } else if (strcmp(mode, "in-handler") == 0) {
        signal(SIGUSR1, on_signal);
        flockfile(stdout);
        raise(SIGUSR1);
    } else if (strcmp(mode, "trap") == 0) {
#if defined(__x86_64__) || defined(__aarch64__)
        signal(SIGILL, on_signal);
        trap_first();
#endif
        return 4;
    } else {
        fprintf(stderr, "usage: abort_paths buffered|stdout-held|in-handler|trap\n");
        return 2;
    }
    return 0;
}
