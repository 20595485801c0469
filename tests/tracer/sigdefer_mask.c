/*
 * sigdefer_mask.c - a handler deferred to its thread's way out of the tracer runs with the
 * mask the kernel would have given it: the interrupted mask, the action's sa_mask, and its
 * own signal unless SA_NODEFER. SA_NODEFER only leaves the signal out of what the kernel
 * adds; a signal the action's sa_mask names stays blocked all the same. SBCL installs its
 * handlers so (SA_NODEFER, sa_mask every signal it defers, its stop-for-GC SIGUSR2 among
 * them) and checks in its SIGUSR2 handler that SIGUSR2 is blocked: run by the tracer's flush
 * with SIGUSR2 taken out of the mask, it stopped with "fatal error ... blockables unblocked"
 * in 1 run of 3 of a program whose threads allocate and lock.
 *
 * SIGUSR1 is placed in the tracer by single-stepping a lock call (trapstep.h) until one
 * instance is not run at once (deferred), twice: with SIGUSR1 and SIGUSR2 in the action's
 * sa_mask, and with an empty sa_mask. Prints what the deferred handler found blocked; the
 * program must be traced to place the signals.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <ucontext.h>

#include "../pc.h"
#include "trapstep.h"

enum { ARMING, PLACED };

static uintptr_t tracer_lo, tracer_hi;
static volatile sig_atomic_t state, stepping;
static atomic_int counted, seen_usr1, seen_usr2;
static int counted_at_send;

/* After each instruction: SIGUSR1 where the tracer may defer it, until one was not run. */
static void step(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info;
    ucontext_t *uc = uctx;
    uintptr_t pc = pc_interrupted(uc);
    if (!stepping || state == PLACED) {
        trapstep_flag(uc, 0);
        return;
    }
    if (trapstep_deferred(pc, tracer_lo, tracer_hi, SIGUSR1, &counted, &counted_at_send)) {
        state = PLACED;
        trapstep_flag(uc, 0);
        return;
    }
    trapstep_flag(uc, 1);
}

/* What is blocked while the handler runs; the deferred run's is the one kept. */
static void looks(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info, (void)uctx;
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    atomic_store(&seen_usr1, sigismember(&now, SIGUSR1));
    atomic_store(&seen_usr2, sigismember(&now, SIGUSR2));
    atomic_fetch_add(&counted, 1);
}

static const char *yn(int v)
{
    return v ? "yes" : "no";
}

/* One placement with SIGUSR1's action SA_NODEFER and the given sa_mask. */
static void round_with(const char *what, const sigset_t *mask)
{
    struct sigaction sa = {.sa_sigaction = looks, .sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER};
    sa.sa_mask = *mask;
    sigaction(SIGUSR1, &sa, NULL);
    state = ARMING;
    counted_at_send = -1;
    atomic_store(&seen_usr1, -1);
    trapstep_rounds(&stepping, &state, PLACED, 1);
    printf("%s: placed: %s, SIGUSR1 blocked: %s, SIGUSR2 blocked: %s\n", what,
           yn(state == PLACED), yn(atomic_load(&seen_usr1) == 1), yn(atomic_load(&seen_usr2)));
}

int main(void)
{
    trapstep_install(SIGTRAP, (struct sigaction){.sa_sigaction = step, .sa_flags = SA_SIGINFO});
    trapstep_tracer(&tracer_lo, &tracer_hi);
    sigset_t both, none;
    sigemptyset(&both);
    sigaddset(&both, SIGUSR1);
    sigaddset(&both, SIGUSR2);
    sigemptyset(&none);
    round_with("SA_NODEFER, sa_mask SIGUSR1 SIGUSR2", &both);
    round_with("SA_NODEFER, empty sa_mask", &none);
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    printf("blocked at the end: %s\n", yn(sigismember(&now, SIGUSR1) || sigismember(&now, SIGUSR2)));
    return 0;
}
