/*
 * dumpsig_nest.c - the program's handler of the dump signal (LOCKTRACE_DUMP_SIGNAL=SIGUSR1:
 * dumpsig.c's handler stays installed and runs the program's through sigdefer.c) never runs
 * inside a lock call, nor out of order, when it comes inside the tracer's wrapper of another
 * signal whose handler that wrapper has just deferred.
 *
 * The lock call is single-stepped (x86-64's trap flag; a SIGTRAP handler, which the tracer
 * never wraps, runs after each instruction). At its instructions in the tracer, SIGUSR2 (a
 * handler that counts, wrapped) is sent with SIGURG (a probe installed by the system call,
 * past the tracer), both held until the trap handler returns: the kernel sets up SIGUSR2's
 * frame, then SIGURG's on top, so the probe runs at the wrapper's first instruction and
 * points the wrapper's return at a trampoline. The trampoline runs after the wrapper, before
 * its signal return: when SIGUSR2's handler did not run (deferred), it sends SIGUSR1 with the
 * value 1, which comes there at once; at the lock call's next instruction the trap handler
 * sends it again, with the value 2. The handler must see 1, then 2, as without the tracer.
 * When the wrapper's deferral blocked only its own signals in the mask it returns to, the
 * deferral of the first SIGUSR1 blocked it in the wrapper's mask alone, which the signal
 * return threw away: the second came unblocked inside the lock call, found the first one's
 * record waiting and ran at once, there (2, then 1). Prints whether the signals were placed
 * (the program must be traced for that) and what the handler saw.
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

#define OTHER SIGUSR2
#define DUMP SIGUSR1
#define PROBE SIGURG

enum { ARMING, IN_WRAPPER, FIRST_SENT, PLACED };

static uintptr_t tracer_lo, tracer_hi, other_wrapper;
__attribute__((used)) static uintptr_t restorer;
static volatile sig_atomic_t state = ARMING, stepping;
static atomic_int other_runs, other_runs_at_send, dump_runs;
static int values[4];

/* sig with a value (a SI_QUEUE signal that is no dump request). */
static void send_value(int sig, int value)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si);
}

/* Blocks a and b in the running handler's mask: sent now, they come where it returns to. */
static void hold(int a, int b)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, a);
    if (b)
        sigaddset(&s, b);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, 8);
}

/* After SIGUSR2's wrapper (or its handler, which the wrapper tail-calls), before the signal
 * return: SIGUSR1, at once, if SIGUSR2's handler was deferred. */
__attribute__((used, noinline)) static void after_other(void)
{
    if (atomic_load(&other_runs) != atomic_load(&other_runs_at_send)) {
        state = ARMING; /* it ran at once: again at the next instruction */
        return;
    }
    state = FIRST_SENT;
    send_value(DUMP, 1);
}

/* The wrapper's return comes here with the stack as the signal return needs it. */
__attribute__((naked)) static void trampoline(void)
{
    __asm__("call after_other\n\t"
            "jmp *restorer(%rip)");
}

/* At SIGUSR2's wrapper's first instruction: its return goes to the trampoline. */
static void probe(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info;
    ucontext_t *uc = uctx;
    if (state != ARMING || pc_interrupted(uc) != other_wrapper)
        return;
    uintptr_t *ret = (uintptr_t *)uc->uc_mcontext.gregs[REG_RSP];
    restorer = *ret;
    *ret = (uintptr_t)trampoline;
    state = IN_WRAPPER;
}

/* After each instruction of the lock call. */
static void step(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info;
    ucontext_t *uc = uctx;
    int in_tracer = pc_interrupted(uc) - tracer_lo < tracer_hi - tracer_lo;
    if (stepping && state == ARMING && in_tracer && !sigismember(&uc->uc_sigmask, OTHER) &&
        !sigismember(&uc->uc_sigmask, PROBE)) {
        atomic_store(&other_runs_at_send, atomic_load(&other_runs));
        hold(OTHER, PROBE);
        trapstep_send(OTHER);
        trapstep_send(PROBE);
    } else if (stepping && state == FIRST_SENT) {
        hold(DUMP, 0);
        send_value(DUMP, 2);
        state = PLACED;
    }
    trapstep_flag(uc, stepping && state != PLACED);
}

static void counts(int sig)
{
    (void)sig;
    atomic_fetch_add(&other_runs, 1);
}

static void notes(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)uctx;
    int n = atomic_fetch_add(&dump_runs, 1);
    if (n < 4)
        values[n] = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
}

int main(void)
{
    struct { /* the kernel's struct sigaction */
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k;
    trapstep_install(SIGTRAP, (struct sigaction){.sa_sigaction = step, .sa_flags = SA_SIGINFO});
    trapstep_install(OTHER, (struct sigaction){.sa_handler = counts, .sa_flags = SA_RESTART});
    trapstep_install(DUMP, (struct sigaction){.sa_sigaction = notes,
                                              .sa_flags = SA_SIGINFO | SA_RESTART});
    if (pc_probe_install(PROBE, probe, SA_RESTART) != 0 ||
        syscall(SYS_rt_sigaction, OTHER, NULL, &k, 8) != 0) {
        puts("probe not installed");
        return 1;
    }
    other_wrapper = (uintptr_t)k.handler;
    trapstep_tracer(&tracer_lo, &tracer_hi);
    trapstep_rounds(&stepping, &state, PLACED, 20);
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    int n = atomic_load(&dump_runs);
    printf("placed: %s\n", state == PLACED ? "yes" : "no");
    printf("SIGUSR1's handler saw:");
    for (int i = 0; i < n && i < 4; i++)
        printf(" %d", values[i]);
    printf("\nblocked at the end: %s\n",
           sigismember(&now, DUMP) || sigismember(&now, OTHER) ? "yes" : "no");
    return 0;
}
