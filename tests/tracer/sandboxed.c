/*
 * sandboxed.c - a program that installs a seccomp filter shaped like Chromium's baseline
 * policy for the calls the tracer might make on its own: prctl is allowed only for
 * PR_GET_NAME, PR_SET_NAME, PR_GET_DUMPABLE and PR_SET_DUMPABLE, membarrier and
 * process_vm_readv not at all; each of those raises SIGSYS, whose handler here writes the call
 * and its first argument on stderr ("SIGSYS: call 157, argument 21") and exits with status 86,
 * as Chromium's crashes the process. `chromium` also answers EPERM to open and openat (its
 * renderers' file system calls), `prctl` lets them through. Where the filter goes in:
 *   sandboxed gate chromium|prctl
 *                  after the main thread made a lock order (the first thread to do so: the
 *                  tracer readied its gate's barrier), then a second thread makes a new one
 *                  (it takes the tracer's graph lock, which ends the first thread's own way
 *                  into the gate)
 *   sandboxed fork chromium|prctl
 *                  after a thread came and went (the process is no longer one that never
 *                  had threads), then main forks; the child exits 0 at once
 *   sandboxed ready chromium|prctl
 *                  before any lock order, then main makes its first
 * Then main takes two mutexes one way and the other (an inversion for the tracer to report:
 * it tracks on) and prints "done" (x86-64 only: elsewhere "no filter here" first, no filter).
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

/* The filter, in this thread and those it starts from now on; 1 when it went in. */
static int sandbox(int open_action)
{
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    struct sock_filter code[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        /* 2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 7, 0),            /* -> 12 */
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 5, 0),       /* -> 11 */
        /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 4, 0), /* -> 11 */
        /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),           /* -> 10 */
        /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),             /* -> 10 */
        /* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 10 */ BPF_STMT(BPF_RET | BPF_K, (unsigned)open_action),
        /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        /* 12 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args)),
        /* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_GET_DUMPABLE, 4, 0), /* -> 18 */
        /* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_DUMPABLE, 3, 0),
        /* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_NAME, 2, 0),
        /* 16 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_GET_NAME, 1, 0),
        /* 17 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        /* 18 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof code / sizeof code[0], code};
    return sigaction(SIGSYS, &sa, NULL) == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}
#endif

static int sandbox_as(const char *shape)
{
#ifdef __x86_64__
    return sandbox(strcmp(shape, "chromium") == 0 ? (int)(SECCOMP_RET_ERRNO | EPERM)
                                                   : (int)SECCOMP_RET_ALLOW);
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

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "", *shape = argc > 2 ? argv[2] : "";
    int rc;
    if (strcmp(shape, "chromium") != 0 && strcmp(shape, "prctl") != 0)
        rc = 2;
    else if (strcmp(mode, "gate") == 0)
        rc = gate(shape);
    else if (strcmp(mode, "fork") == 0)
        rc = fork_after_threads(shape);
    else if (strcmp(mode, "ready") == 0)
        rc = ready(shape);
    else
        rc = 2;
    if (rc == 2) {
        fprintf(stderr, "usage: sandboxed gate|fork|ready chromium|prctl\n");
        return 2;
    }
    if (rc != 0)
        return rc;
    nest(&d, &c); /* c -> d was made above: an inversion */
    printf("done\n");
    return 0;
}
