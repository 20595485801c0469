/*
 * dump_sigset.c - a program that sets its handler for the dump signal (SIGUSR1 here, run with
 * LOCKTRACE_DUMP_SIGNAL=SIGUSR1) through libc's other calls than sigaction() and signal():
 * System V's sigset (SIG_HOLD included), sigignore and sysv_signal, bsd_signal and ssignal,
 * siginterrupt, and signal() in a file built for strict ISO C, where glibc makes it
 * __sysv_signal (dump_sigset_strict.c). Each must keep the program's handler working as
 * natively, and `locktrace dump`'s requests (sigqueue with LT_DUMP_SIGVAL) must still dump.
 * Its output is the same without the tracer (which sends no dump requests). One thread, so a
 * signal it sends itself is taken before the sending call returns.
 *   dump_sigset NAME
 * Prints each step on stdout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpsig.h"
#include "locktrace.h"

typedef void (*handler_fn)(int);

handler_fn bsd_signal(int sig, handler_fn handler);
handler_fn strict_signal(int sig, handler_fn handler); /* dump_sigset_strict.c */

static volatile sig_atomic_t ran;

static void own_handler(int sig)
{
    (void)sig;
    ran++;
}

static const char *what(handler_fn h)
{
    return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignored" : h == SIG_HOLD ? "held"
         : h == SIG_ERR ? "error" : h == own_handler ? "own" : "other";
}

static handler_fn now(void)
{
    struct sigaction a;
    sigaction(SIGUSR1, NULL, &a);
    return a.sa_handler;
}

/* Traced only: without the tracer the request is a plain SIGUSR1 for the program's action,
 * and the program's output is the same either way. */
static void request_dump(void)
{
    if (locktrace_active())
        sigqueue(getpid(), SIGUSR1, (union sigval){.sival_int = LT_DUMP_SIGVAL});
}

/* Two raises, then a dump request: how often the handler ran, and what the action is now. */
static void raise_twice_then_dump(const char *how)
{
    raise(SIGUSR1);
    raise(SIGUSR1);
    printf("%s: raised twice, handler ran %d, now %s\n", how, (int)ran, what(now()));
    request_dump();
    printf("dump request: handler ran %d\n", (int)ran);
}

/* BSD semantics: the handler stays. */
static void bsd_like(handler_fn (*set)(int, handler_fn), const char *how)
{
    printf("%s replaced: %s\n", how, what(set(SIGUSR1, own_handler)));
    raise_twice_then_dump(how);
}

/* System V semantics: the action goes back to the default as the handler starts, so the
 * second raise would end a program without the tracer: the handler is set again. */
static void sysv_like(handler_fn (*set)(int, handler_fn), const char *how)
{
    printf("%s replaced: %s\n", how, what(set(SIGUSR1, own_handler)));
    raise(SIGUSR1);
    printf("%s: handler ran %d, now %s\n", how, (int)ran, what(now()));
    request_dump();
    printf("dump request while default: handler ran %d\n", (int)ran);
    printf("%s again replaced: %s\n", how, what(set(SIGUSR1, own_handler)));
    request_dump();
    printf("dump request: handler ran %d, now %s\n", (int)ran, what(now()));
}

static void with_sigset(void)
{
    printf("sigset replaced: %s\n", what(sigset(SIGUSR1, own_handler)));
    raise_twice_then_dump("sigset");
    printf("sigset(SIG_HOLD) replaced: %s\n", what(sigset(SIGUSR1, SIG_HOLD)));
    raise(SIGUSR1); /* pending while held */
    printf("raise while held: handler ran %d\n", (int)ran);
    printf("sigset again replaced: %s\n", what(sigset(SIGUSR1, own_handler)));
    printf("released: handler ran %d\n", (int)ran);
    int rc = sigignore(SIGUSR1);
    printf("sigignore -> %d, now %s\n", rc, what(now()));
    raise(SIGUSR1);
    printf("raise while ignored: handler ran %d\n", (int)ran);
    request_dump();
}

static void with_siginterrupt(void)
{
    struct sigaction a;
    signal(SIGUSR1, own_handler);
    printf("siginterrupt -> %d\n", siginterrupt(SIGUSR1, 1));
    sigaction(SIGUSR1, NULL, &a);
    printf("restarts: %s, handler %s\n", a.sa_flags & SA_RESTART ? "yes" : "no", what(a.sa_handler));
    siginterrupt(SIGUSR1, 0);
    sigaction(SIGUSR1, NULL, &a);
    printf("restarts: %s\n", a.sa_flags & SA_RESTART ? "yes" : "no");
    raise_twice_then_dump("signal");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "sigset"))
        with_sigset();
    else if (!strcmp(s, "bsd_signal"))
        bsd_like(bsd_signal, "bsd_signal");
    else if (!strcmp(s, "ssignal"))
        bsd_like(ssignal, "ssignal");
    else if (!strcmp(s, "sysv_signal"))
        sysv_like(sysv_signal, "sysv_signal");
    else if (!strcmp(s, "strict-signal"))
        sysv_like(strict_signal, "strict signal");
    else if (!strcmp(s, "siginterrupt"))
        with_siginterrupt();
    else {
        fprintf(stderr, "dump_sigset: unknown scenario '%s'\n", s);
        return 64;
    }
    fflush(stdout);
    return 0;
}
