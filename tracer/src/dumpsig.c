/*
 * dumpsig.c - the dump signal (LOCKTRACE_DUMP_SIGNAL) shared with a program that handles it
 * too. Servers install handlers of their own for SIGUSR1 and the like (MariaDB, Apache,
 * nginx), which replaced the tracer's: `locktrace dump` then printed nothing and set off the
 * server's own action (Apache restarted gracefully). So the tracer's handler stays installed,
 * and the program's calls that set that signal's action (sigaction(), signal() and libc's
 * other variants: interpose_signal.c) record its action instead, answered as if made (the old
 * action, a query). The handler tells requests apart by their
 * value: `locktrace dump` sends the signal with sigqueue and LT_DUMP_SIGVAL, which dumps (at
 * once: the dump takes no lock); any other signal runs the program's action, with its mask
 * and flags (a handler without SA_RESTART still interrupts a blocking call), outside the
 * tracer as sigdefer.c runs every other handler of the program's. While the program has no handler of its own
 * (default action), every one dumps, as the variable asks; one it ignores dumps only when asked.
 *
 * Not covered: a thread that blocks the signal never takes it, so a process that blocks it in
 * every thread (Apache's workers) or takes it with sigwait or signalfd never dumps; neither
 * does a program that sets its handler by the system call itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "dumpsig.h"
#include "lt_internal.h"
#include "platform.h"
#include "sigdefer.h"
#include "vmchild.h"

#define SLOTS 8 /* the program's last actions: a handler reads one that is not rewritten */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;
static _Atomic int dump_sig; /* 0 until installed */
static void (*dump_fn)(void);
static struct sigaction actions[SLOTS]; /* the program's action for dump_sig, as it set it */
static _Atomic unsigned current;
static int handles(const struct sigaction *a)
{
    return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

static int dump_request(const siginfo_t *info)
{
    return info && info->si_code == SI_QUEUE && info->si_value.sival_int == LT_DUMP_SIGVAL;
}

static void publish(int sig, const struct sigaction *a);

/* Sets the program's action (act, or none), its previous into *old (or none), under a flag
 * that one thread at a time holds, with every signal blocked: a handler of the thread holding
 * it that set the action too would wait for itself. */
static void set_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    static atomic_flag writing = ATOMIC_FLAG_INIT;
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &mask);
    while (atomic_flag_test_and_set(&writing))
        ;
    if (old)
        *old = actions[atomic_load(&current)];
    if (act)
        publish(sig, act);
    atomic_flag_clear(&writing);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    struct sigaction a = actions[atomic_load(&current)];
    if (dump_request(info) || a.sa_handler == SIG_DFL) {
        dump_fn();
    } else if (a.sa_handler != SIG_IGN) {
        if (a.sa_flags & SA_RESETHAND) { /* once, as the kernel would have done */
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            set_action(sig, &dfl, NULL);
        }
        errno = saved;
        lt_sig_dispatch(sig, info, uctx, &a); /* outside the tracer, as any other handler */
        return;
    }
    errno = saved;
}

/* a becomes the program's action, and the kernel's is the tracer's handler with a's mask and
 * flags but SA_RESETHAND (the tracer's must stay; on_signal resets the program's). */
static void publish(int sig, const struct sigaction *a)
{
    unsigned next = (atomic_load(&current) + 1) % SLOTS;
    actions[next] = *a;
    atomic_store(&current, next);
    struct sigaction real = *a;
    real.sa_sigaction = on_signal;
    real.sa_flags = (a->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    if (!handles(a)) {
        sigemptyset(&real.sa_mask);
        real.sa_flags = SA_SIGINFO | SA_RESTART;
    }
    real_sigaction(sig, &real, NULL);
}

void lt_dumpsig_install(int sig, void (*dump)(void))
{
    struct sigaction before;
    real_sigaction = (sigaction_fn)lt_platform_real("sigaction", NULL);
    if (!real_sigaction || real_sigaction(sig, NULL, &before) != 0)
        return;
    /* A handler of the tracer's own (LOCKTRACE_EXIT_HELD's for SIGQUIT) is no program's. */
    if (handles(&before) && lt_platform_in_tracer((uintptr_t)before.sa_handler)) {
        memset(&before, 0, sizeof before);
        before.sa_handler = SIG_DFL;
    }
    dump_fn = dump;
    lt_vm_init();
    set_action(sig, &before, NULL);
    lt_sig_dispatches(sig);
    atomic_store(&dump_sig, sig);
}

int lt_dumpsig_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    /* A vfork child's calls (Python's subprocess sets every handled signal back to the
     * default before the exec) are its own: they go to libc, whose actions it does not
     * share, not to these, which it does. */
    if (sig == 0 || sig != atomic_load(&dump_sig) || lt_vm_child())
        return 0;
    set_action(sig, act, old);
    return 1;
}
