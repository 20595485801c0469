/*
 * interpose_signal.c - sigaction() and libc's other ways to set a signal's action: the
 * program's calls for the dump signal are recorded, not made, so the tracer's handler stays
 * (dumpsig.c); those for the other asynchronous signals install the tracer's wrapper for a
 * handler, which runs it outside the tracer (sigdefer.c); the rest go to libc. glibc's
 * signal() variants (signal, bsd_signal and ssignal; sysv_signal and __sysv_signal, which is
 * what signal() is in a program built for strict ISO C or X/Open; System V's sigset,
 * sigignore and siginterrupt) set the action inside libc, past an interposed sigaction, so
 * each has its own entry that sets, through ours, the action sigaction() would have been
 * given. (siginterrupt changes only the flags of the kernel's action, the wrapper's: libc's
 * does that right.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "dumpsig.h"
#include "lt_internal.h"
#include "platform.h"
#include "sigdefer.h"

typedef void (*handler_fn)(int);

/* Not declared by glibc's headers in this feature mode (they are the same function as
 * signal() there, as ssignal is). */
LT_EXPORT handler_fn bsd_signal(int sig, handler_fn handler);
LT_EXPORT handler_fn __sysv_signal(int sig, handler_fn handler);

static struct {
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    handler_fn (*signal)(int, handler_fn);
    handler_fn (*sysv_signal)(int, handler_fn);
    handler_fn (*sigset)(int, handler_fn);
    int (*sigignore)(int);
    int (*siginterrupt)(int, int);
} real;

__attribute__((constructor)) static void resolve(void)
{
    real.sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))lt_platform_real(
        "sigaction", NULL);
    real.signal = (handler_fn(*)(int, handler_fn))lt_platform_real("signal", NULL);
    real.sysv_signal = (handler_fn(*)(int, handler_fn))lt_platform_real("__sysv_signal", NULL);
    real.sigset = (handler_fn(*)(int, handler_fn))lt_platform_real("sigset", NULL);
    real.sigignore = (int (*)(int))lt_platform_real("sigignore", NULL);
    real.siginterrupt = (int (*)(int, int))lt_platform_real("siginterrupt", NULL);
    lt_sig_init();
}

/* The real function, resolved now if a library's constructor calls before ours ran. */
#define REAL(name) (real.name ? real.name : (resolve(), real.name))

LT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (lt_dumpsig_sigaction(sig, act, old))
        return 0;
    if (lt_sig_ours(sig))
        return lt_sig_sigaction(sig, act, old, REAL(sigaction));
    return REAL(sigaction)(sig, act, old);
}

/* The program's action for sig (act, NULL: a query), when the tracer answers for it: 1, the
 * previous action in *old (0 or -1 with errno in *rc); else 0, libc's to answer. */
static int answered(int sig, const struct sigaction *act, struct sigaction *old, int *rc)
{
    *rc = 0;
    if (lt_dumpsig_sigaction(sig, act, old))
        return 1;
    if (!lt_sig_ours(sig))
        return 0;
    *rc = lt_sig_sigaction(sig, act, old, REAL(sigaction));
    return 1;
}

/* A handler set the way one of libc's signal() variants sets it (flags; mask_self: the signal
 * is blocked while its handler runs by the action's mask, not only by the kernel's default):
 * when the tracer answers for sig, 1, the previous handler in *prev (SIG_ERR on failure),
 * else 0 and left to libc, which also refuses SIG_ERR. */
static int recorded(int sig, handler_fn handler, int flags, int mask_self, handler_fn *prev)
{
    struct sigaction a, old;
    int rc;
    memset(&a, 0, sizeof a);
    a.sa_handler = handler;
    sigemptyset(&a.sa_mask);
    if (mask_self)
        sigaddset(&a.sa_mask, sig);
    a.sa_flags = flags;
    if (handler == SIG_ERR || !answered(sig, &a, &old, &rc))
        return 0;
    *prev = rc == 0 ? old.sa_handler : SIG_ERR;
    return 1;
}

/* BSD semantics, as glibc's: the handler stays, calls restart, the signal is blocked while
 * it runs. */
LT_EXPORT handler_fn signal(int sig, handler_fn handler)
{
    handler_fn prev;
    if (recorded(sig, handler, SA_RESTART, 1, &prev))
        return prev;
    return REAL(signal)(sig, handler);
}

LT_EXPORT handler_fn bsd_signal(int sig, handler_fn handler)
{
    return signal(sig, handler);
}

LT_EXPORT handler_fn ssignal(int sig, handler_fn handler)
{
    return signal(sig, handler);
}

/* System V semantics: the action is reset to the default as the handler starts, the signal is
 * not blocked while it runs, calls are interrupted. */
LT_EXPORT handler_fn __sysv_signal(int sig, handler_fn handler)
{
    handler_fn prev;
    if (recorded(sig, handler, SA_RESETHAND | SA_NODEFER, 0, &prev))
        return prev;
    return REAL(sysv_signal)(sig, handler);
}

LT_EXPORT handler_fn sysv_signal(int sig, handler_fn handler)
{
    return __sysv_signal(sig, handler);
}

/* Whether sig was blocked in this thread before `how` changed it. */
static int was_blocked(int how, int sig)
{
    sigset_t one, before;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigemptyset(&before);
    pthread_sigmask(how, &one, &before);
    return sigismember(&before, sig) == 1;
}

/* System V's sigset: SIG_HOLD blocks the signal and leaves its action; any other disposition
 * becomes the action (no flags) and unblocks it. The answer is SIG_HOLD when the signal was
 * blocked, else the previous action's handler. */
LT_EXPORT handler_fn sigset(int sig, handler_fn disp)
{
    struct sigaction old;
    handler_fn prev;
    int rc;
    if (disp == SIG_HOLD && answered(sig, NULL, &old, &rc))
        return rc != 0 ? SIG_ERR : was_blocked(SIG_BLOCK, sig) ? SIG_HOLD : old.sa_handler;
    if (disp != SIG_HOLD && recorded(sig, disp, 0, 0, &prev))
        return prev == SIG_ERR ? SIG_ERR : was_blocked(SIG_UNBLOCK, sig) ? SIG_HOLD : prev;
    return REAL(sigset)(sig, disp);
}

LT_EXPORT int sigignore(int sig)
{
    handler_fn prev;
    if (recorded(sig, SIG_IGN, 0, 0, &prev))
        return prev == SIG_ERR ? -1 : 0;
    return REAL(sigignore)(sig);
}

/* siginterrupt changes only whether the handler's signal restarts interrupted calls. */
LT_EXPORT int siginterrupt(int sig, int interrupt)
{
    struct sigaction a;
    if (!lt_dumpsig_sigaction(sig, NULL, &a))
        return REAL(siginterrupt)(sig, interrupt);
    a.sa_flags = interrupt ? a.sa_flags & ~SA_RESTART : a.sa_flags | SA_RESTART;
    lt_dumpsig_sigaction(sig, &a, NULL);
    return 0;
}
