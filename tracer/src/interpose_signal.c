/*
 * interpose_signal.c - sigaction() and signal(): the program's calls for the dump signal are
 * recorded, not made, so the tracer's handler stays (dumpsig.c); every other goes to libc.
 * glibc's signal() sets the action inside libc, past an interposed sigaction, so it has its
 * own entry.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "dumpsig.h"
#include "lt_internal.h"
#include "platform.h"

typedef void (*handler_fn)(int);

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static handler_fn (*real_signal)(int, handler_fn);

__attribute__((constructor)) static void resolve(void)
{
    real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))lt_platform_real(
        "sigaction", NULL);
    real_signal = (handler_fn(*)(int, handler_fn))lt_platform_real("signal", NULL);
}

LT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (lt_dumpsig_sigaction(sig, act, old))
        return 0;
    if (!real_sigaction) /* a library's constructor before ours */
        resolve();
    return real_sigaction(sig, act, old);
}

/* BSD semantics, as glibc's: the handler stays, calls restart, the signal is blocked while
 * it runs. */
LT_EXPORT handler_fn signal(int sig, handler_fn handler)
{
    struct sigaction a, old;
    memset(&a, 0, sizeof a);
    a.sa_handler = handler;
    sigemptyset(&a.sa_mask);
    sigaddset(&a.sa_mask, sig);
    a.sa_flags = SA_RESTART;
    if (sig > 0 && lt_dumpsig_sigaction(sig, &a, &old))
        return old.sa_handler;
    if (!real_signal)
        resolve();
    return real_signal(sig, handler);
}
