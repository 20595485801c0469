/*
 * sigflush_late.c - a signal deferred while its thread's way out of the tracer already runs
 * the handlers deferred before it (lt_sig_flush, after getcontext read the thread's mask)
 * stays blocked until its own handler runs, not only until the first handler's.
 *
 * The signals are placed by single-stepping the thread (x86-64's trap flag; a SIGTRAP handler,
 * which the tracer never wraps, runs after each instruction): SIGUSR1, whose handler counts,
 * is sent at the lock call's instructions in the tracer until one is not run at once
 * (deferred); SIGUSR2, whose handler takes a mutex, at the instruction after the system call
 * in which getcontext reads the mask, in the flush that lock call's way out makes. The flush
 * runs SIGUSR1's handler first (the lower signal), which raises SIGUSR2: blocked, it waits
 * for its record's turn and then for the mask the flush gives back. Left unblocked (the flush
 * set the mask getcontext read), the instance ran at once, took the mutex, and its lock call's
 * way out ran the deferred SIGUSR2 nested inside it: a handler inside its own signal's
 * handler, which the action (no SA_NODEFER) rules out; taking its mutex there after the lock
 * call, it was harm-signal.13's false self-deadlock report. Prints whether the signals were
 * placed (the program must be traced for that) and what the handlers found.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "../pc.h"
#include "trapstep.h"

enum { ARMING, AT_GETCONTEXT, PLACED };

static pthread_mutex_t handlers_own = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t tracer_lo, tracer_hi, getcontext_lo, getcontext_hi, prev_pc;
static volatile sig_atomic_t state = ARMING, stepping;
static atomic_int counted, usr2_inside, usr2_nested, usr2_ran, raised, usr2_blocked_then;
static int counted_at_send = -1;

/* After each instruction: SIGUSR1 where the tracer may defer it, SIGUSR2 after getcontext's
 * system call once SIGUSR1 waits. */
static void step(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info;
    ucontext_t *uc = uctx;
    uintptr_t pc = pc_interrupted(uc);
    if (!stepping || state == PLACED) {
        trapstep_flag(uc, 0);
        return;
    }
    if (state == ARMING &&
        trapstep_deferred(pc, tracer_lo, tracer_hi, SIGUSR1, &counted, &counted_at_send)) {
        state = AT_GETCONTEXT;
    } else if (state == AT_GETCONTEXT && prev_pc - getcontext_lo < getcontext_hi - getcontext_lo &&
               !memcmp((const void *)prev_pc, "\x0f\x05", 2)) {
        /* (the trap after a system call comes an instruction later) */
        trapstep_send(SIGUSR2);
        state = PLACED;
        trapstep_flag(uc, 0);
        return;
    }
    prev_pc = pc;
    trapstep_flag(uc, 1);
}

static void counts(int sig)
{
    (void)sig;
    atomic_fetch_add(&counted, 1);
    if (state == PLACED && !atomic_exchange(&raised, 1)) {
        sigset_t now;
        pthread_sigmask(SIG_BLOCK, NULL, &now);
        atomic_store(&usr2_blocked_then, sigismember(&now, SIGUSR2));
        raise(SIGUSR2);
    }
}

static void locks_own(int sig)
{
    (void)sig;
    if (atomic_fetch_add(&usr2_inside, 1))
        atomic_store(&usr2_nested, 1);
    pthread_mutex_lock(&handlers_own);
    pthread_mutex_unlock(&handlers_own);
    atomic_fetch_sub(&usr2_inside, 1);
    atomic_fetch_add(&usr2_ran, 1);
}

int main(void)
{
    trapstep_install(SIGTRAP, (struct sigaction){.sa_sigaction = step, .sa_flags = SA_SIGINFO});
    trapstep_install(SIGUSR1, (struct sigaction){.sa_handler = counts, .sa_flags = SA_RESTART});
    trapstep_install(SIGUSR2, (struct sigaction){.sa_handler = locks_own, .sa_flags = SA_RESTART});
    trapstep_tracer(&tracer_lo, &tracer_hi);
    if (pc_libc_function("getcontext", &getcontext_lo, &getcontext_hi) != 0) {
        puts("getcontext not found");
        return 1;
    }
    trapstep_rounds(&stepping, &state, PLACED, 1);
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    printf("placed: %s\n", state == PLACED ? "yes" : "no");
    printf("SIGUSR2 blocked in SIGUSR1's handler: %s\n",
           atomic_load(&usr2_blocked_then) ? "yes" : "no");
    printf("SIGUSR2's handler ran %d times, nested: %s\n", atomic_load(&usr2_ran),
           atomic_load(&usr2_nested) ? "yes" : "no");
    printf("blocked at the end: %s\n",
           sigismember(&now, SIGUSR1) || sigismember(&now, SIGUSR2) ? "yes" : "no");
    return 0;
}
