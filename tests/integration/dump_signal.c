/*
 * dump_signal.c - a program with a handler of its own for the dump signal (SIGUSR1 here, run
 * with LOCKTRACE_DUMP_SIGNAL=SIGUSR1), as servers have: what it sees of its action, which
 * signals run its handler and which dump. One thread, so a signal it sends itself is taken
 * before the sending call returns. Prints each step on stdout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpsig.h"

static volatile sig_atomic_t ran;

static void own_handler(int sig)
{
    (void)sig;
    ran++;
}

static const char *what(void (*h)(int))
{
    return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignored" : h == own_handler ? "own" : "other";
}

static void request_dump(void)
{
    sigqueue(getpid(), SIGUSR1, (union sigval){.sival_int = LT_DUMP_SIGVAL});
}

int main(void)
{
    struct sigaction sa, old, now;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    sigaction(SIGUSR1, NULL, &now);
    printf("before: %s, now: %s\n", what(old.sa_handler), what(now.sa_handler));
    raise(SIGUSR1);
    printf("raise: handler ran %d\n", (int)ran);
    request_dump();
    printf("dump request: handler ran %d\n", (int)ran);
    printf("signal(SIG_IGN) replaced: %s\n", what(signal(SIGUSR1, SIG_IGN)));
    raise(SIGUSR1);
    printf("raise while ignored: handler ran %d\n", (int)ran);
    request_dump();
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGUSR1, &sa, &old);
    printf("SA_RESETHAND replaced: %s\n", what(old.sa_handler));
    raise(SIGUSR1);
    sigaction(SIGUSR1, NULL, &now);
    printf("raise: handler ran %d, now: %s\n", (int)ran, what(now.sa_handler));
    fflush(stdout);
    return 0;
}
