/*
 * sandboxed.c - a program that installs a seccomp filter shaped like Chromium's policies for
 * the calls the tracer might make on its own: prctl is allowed only for PR_GET_NAME,
 * PR_SET_NAME, PR_GET_DUMPABLE and PR_SET_DUMPABLE; membarrier, process_vm_readv, getitimer
 * and timer_gettime not at all (its baseline policy, in every sandboxed process); each of those
 * raises SIGSYS, whose handler here writes the call and its first argument on stderr
 * ("SIGSYS: call 157, argument 21") and exits with status 86, as Chromium's crashes the
 * process. Shapes: `chromium` also answers EPERM to open and openat (its renderers' file
 * system calls), `prctl` lets them through, `gpu` lets them through and traps mremap too
 * (the baseline policy's answer, which its GPU process keeps). Where the filter goes in:
 *   sandboxed gate SHAPE
 *                  after the main thread made a lock order (the first thread to do so: the
 *                  tracer readied its gate's barrier), then a second thread makes a new one
 *                  (it takes the tracer's graph lock, which ends the first thread's own way
 *                  into the gate)
 *   sandboxed fork SHAPE
 *                  after a thread came and went (the process is no longer one that never
 *                  had threads), then main forks; the child exits 0 at once
 *   sandboxed ready SHAPE
 *                  before any lock order, then main makes its first
 *   sandboxed grow SHAPE
 *                  before main holds 3,000 mutexes at once (trylock: the tracer grows its
 *                  held set) and lets them go
 * Then main takes two mutexes one way and the other (an inversion for the tracer to report:
 * it tracks on) and prints "done" (x86-64 only: elsewhere "no filter here" first, no filter).
 *   sandboxed exec SHAPE PROGRAM ARG...
 *                  before it executes PROGRAM (the filter stays, its handler does not: a
 *                  trapped call then kills the process with SIGSYS)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hold_many.h"
#include "refuse_syscall.h"

#define CRASHED 86

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER,
                       c = PTHREAD_MUTEX_INITIALIZER, d = PTHREAD_MUTEX_INITIALIZER;

static void nest(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

#ifdef __x86_64__
/* n in decimal at the end of buf (of 24 bytes), returned: for the handler, without stdio. */
static char *decimal(char *end, long n)
{
    unsigned long u = n < 0 ? 0UL - (unsigned long)n : (unsigned long)n;
    *--end = 0;
    do
        *--end = (char)('0' + u % 10);
    while (u /= 10);
    if (n < 0)
        *--end = '-';
    return end;
}

static void say(const char *s)
{
    if (write(2, s, strlen(s)) < 0)
        _exit(CRASHED + 1);
}

static void on_sigsys(int sig, siginfo_t *info, void *context)
{
    char nr[24], arg[24];
    (void)sig;
    say("SIGSYS: call ");
    say(decimal(nr + sizeof nr, info->si_syscall));
    say(", argument ");
    say(decimal(arg + sizeof arg, (long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RDI]));
    say("\n");
    _exit(CRASHED);
}

/* The filter, in this thread and those it starts from now on (and across exec); 1 when it
 * went in. open and openat get open_action; prctl but the four options and each of the
 * `ntrapped` calls in trapped raise SIGSYS. */
static int sandbox(unsigned open_action, const long *trapped, unsigned ntrapped)
{
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    struct sock_filter code[32];
    unsigned n = 0, i;
    sigemptyset(&sa.sa_mask);
    /* past the calls' tests (at n + 1 + ntrapped): ALLOW, OPEN, TRAP, then prctl's tests */
    unsigned allow = 7 + ntrapped, open = allow + 1, trap = open + 1, prctl_at = trap + 1;
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, arch));
    code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
    code[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl,
                                           (unsigned char)(prctl_at - n - 1), 0);
    n++;
    code[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat,
                                           (unsigned char)(open - n - 1), 0);
    n++;
    code[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open,
                                           (unsigned char)(open - n - 1), 0);
    n++;
    for (i = 0; i < ntrapped; i++, n++)
        code[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)trapped[i],
                                               (unsigned char)(trap - n - 1), 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, open_action);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, args));
    static const unsigned allowed[] = {PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_SET_NAME, PR_GET_NAME};
    for (i = 0; i < 4; i++, n++)
        code[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i],
                                               (unsigned char)(4 - i), 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {(unsigned short)n, code};
    return n == prctl_at + 7 && n <= sizeof code / sizeof code[0] &&
           sigaction(SIGSYS, &sa, NULL) == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}
#endif

static int sandbox_as(const char *shape)
{
#ifdef __x86_64__
    static const long trapped[] = {SYS_membarrier, SYS_process_vm_readv, SYS_getitimer,
                                   SYS_timer_gettime, SYS_mremap};
    unsigned all = sizeof trapped / sizeof trapped[0];
    if (strcmp(shape, "chromium") == 0)
        return sandbox(SECCOMP_RET_ERRNO | EPERM, trapped, all - 1);
    return sandbox(SECCOMP_RET_ALLOW, trapped, strcmp(shape, "gpu") == 0 ? all : all - 1);
#else
    (void)shape;
    printf("no filter here\n");
    return 1;
#endif
}

static void *make_order(void *arg)
{
    nest(&c, &d);
    return arg;
}

static int gate(const char *shape)
{
    pthread_t th;
    nest(&a, &b);
    return !sandbox_as(shape) || pthread_create(&th, NULL, make_order, NULL) != 0 ||
           pthread_join(th, NULL) != 0;
}

static int fork_after_threads(const char *shape)
{
    pthread_t th;
    int status;
    if (pthread_create(&th, NULL, make_order, NULL) != 0 || pthread_join(th, NULL) != 0 ||
        !sandbox_as(shape))
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
           WEXITSTATUS(status) != 0;
}

static int ready(const char *shape)
{
    if (!sandbox_as(shape))
        return 1;
    nest(&c, &d);
    return 0;
}

static int grow(const char *shape)
{
    if (!sandbox_as(shape) || hold_many() != 0)
        return 1;
    nest(&c, &d);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "", *shape = argc > 2 ? argv[2] : "";
    int rc;
    if (strcmp(shape, "chromium") != 0 && strcmp(shape, "prctl") != 0 &&
        strcmp(shape, "gpu") != 0)
        rc = 2;
    else if (strcmp(mode, "exec") == 0 && argc > 3)
        return sandbox_as(shape) ? (execv(argv[3], argv + 3), 127) : 1;
    else if (strcmp(mode, "gate") == 0)
        rc = gate(shape);
    else if (strcmp(mode, "fork") == 0)
        rc = fork_after_threads(shape);
    else if (strcmp(mode, "ready") == 0)
        rc = ready(shape);
    else if (strcmp(mode, "grow") == 0)
        rc = grow(shape);
    else
        rc = 2;
    if (rc == 2) {
        fprintf(stderr, "usage: sandboxed gate|fork|ready|grow chromium|prctl|gpu\n"
                        "       sandboxed exec chromium|prctl|gpu PROGRAM ARG...\n");
        return 2;
    }
    if (rc != 0)
        return rc;
    nest(&d, &c); /* c -> d was made above: an inversion */
    printf("done\n");
    return 0;
}
