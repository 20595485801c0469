/*
 * sigaction_calls.c - the tracer's sigaction (sigdefer.c), chosen by name:
 *   sigaction_calls NAME
 *   - nested: a signal handler's sigaction while its thread is in sigaction. A timer every
 *     20 us runs a handler the tracer does not wrap (installed by the system call, pc.h, so it
 *     runs wherever the signal finds the thread, inside the tracer too) that sets an action,
 *     while the thread sets actions in a loop; a second timer (1 ms) runs a handler set by
 *     sigaction, which the tracer wraps. sigaction is async-signal-safe: the tracer's asked
 *     dladdr whether a handler was its own, and a handler's dladdr that interrupted the
 *     thread's own dladdr as it took the loader's lock waited for itself (hung 10 runs of 10).
 *   - masks: 1000 actions set (a handler, then the default, in turn), every old action read
 *     back: how many times the signal mask changed meanwhile (this program's pthread_sigmask,
 *     exported by -rdynamic, is the one the tracer's calls reach). Without the tracer none;
 *     the tracer blocked every signal around each action it set, two mask changes a call.
 * Each scenario prints what it saw and ends with "done".
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../pc.h"

static atomic_int mask_changes;

/* Counts, then does what glibc's does (the system call: no lookup from a signal handler). */
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    atomic_fetch_add(&mask_changes, 1);
    return syscall(SYS_rt_sigprocmask, how, set, old, 8) == 0 ? 0 : -1;
}

static void handler(int sig)
{
    (void)sig;
}

static int set_action(int sig, void (*fn)(int), struct sigaction *old)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = fn;
    sigemptyset(&a.sa_mask);
    return sigaction(sig, &a, old);
}

static void masks(void)
{
    struct sigaction old;
    int wrong = 0, before = atomic_load(&mask_changes);
    for (int i = 0; i < 1000; i++) {
        if (set_action(SIGUSR1, i % 2 ? SIG_DFL : handler, &old) != 0 ||
            old.sa_handler != (i % 2 ? handler : SIG_DFL))
            wrong++;
    }
    printf("old actions wrong: %d\n", wrong);
    printf("signal mask changes in 1000 sigaction calls: %d\n",
           atomic_load(&mask_changes) - before);
}

static atomic_int probes, wrapped_runs;

static void probe(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info, (void)uctx;
    set_action(SIGUSR2, atomic_fetch_add(&probes, 1) % 2 ? SIG_DFL : handler, NULL);
}

static void wrapped(int sig)
{
    (void)sig;
    atomic_fetch_add(&wrapped_runs, 1);
}

static void nested(void)
{
    struct sigaction w;
    memset(&w, 0, sizeof w);
    w.sa_handler = wrapped;
    sigemptyset(&w.sa_mask);
    w.sa_flags = SA_RESTART;
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
    struct itimerspec every = {{0, 1000000}, {0, 1000000}};
    timer_t tm;
    ev._sigev_un._tid = gettid();
    if (sigaction(SIGALRM, &w, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0 ||
        timer_settime(tm, 0, &every, NULL) != 0 || !pc_probe_timer(SIGPROF, probe, 20000)) {
        printf("timers: not set\n");
        return;
    }
    for (int i = 0; i < 20000 || atomic_load(&probes) < 200 || atomic_load(&wrapped_runs) < 20;
         i++)
        set_action(SIGURG, i % 2 ? SIG_DFL : handler, NULL);
    printf("probes and wrapped handlers ran: yes\n");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(s, "nested"))
        nested();
    else if (!strcmp(s, "masks"))
        masks();
    else
        return fprintf(stderr, "usage: sigaction_calls nested|masks\n"), 2;
    printf("done\n");
    return 0;
}
