/*
 * sigaction_calls.c - the tracer's sigaction (sigdefer.c), chosen by name:
 *   sigaction_calls NAME
 *   - nested: a signal handler's sigaction while its thread is in sigaction. A timer every
 *     20 us runs a handler the tracer does not wrap (installed by the system call, pc.h, so it
 *     runs wherever the signal finds the thread, inside the tracer too) that sets an action,
 *     while the thread sets actions in a loop; a second timer (1 ms) runs a handler set by
 *     sigaction, which the tracer wraps. sigaction is async-signal-safe: the tracer's asked
 *     dladdr whether a handler was its own, and a handler's dladdr that interrupted the
 *     thread's own dladdr as it took the loader's lock waited for itself (hung 10 runs of 10).
 *   - masks: 1000 actions set (a handler, then the default, in turn), every old action read
 *     back: how many times the signal mask changed meanwhile (this program's pthread_sigmask,
 *     exported by -rdynamic, is the one the tracer's calls reach). Without the tracer none;
 *     the tracer blocked every signal around each action it set, two mask changes a call.
 *   - vfork: children that run in the parent's memory (vfork's, then clone's with CLONE_VM and
 *     CLONE_VFORK) set, as Python's subprocess does before its exec, one handled signal back
 *     to the default and a handler of their own for another, then exec or exit. Their
 *     actions are their own: the parent's handlers must still run, and sigaction must still
 *     answer them. (The tracer keeps the program's actions in memory such a child shares.)
 *   - getpid: how many getpid calls 1000 sigaction calls make, before and after a vfork
 *     child (this program's getpid, exported too, counts). None without the tracer; the
 *     tracer asked getpid at each call, to tell a vfork child from its parent. Then a vfork
 *     that a seccomp filter refuses: -1 and EAGAIN, and still no getpid.
 * Each scenario prints what it saw and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../pc.h"

static atomic_int mask_changes;

/* Counts, then does what glibc's does (the system call: no lookup from a signal handler). */
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    atomic_fetch_add(&mask_changes, 1);
    return syscall(SYS_rt_sigprocmask, how, set, old, 8) == 0 ? 0 : -1;
}

static atomic_int getpid_calls;

/* Counts too, then makes the system call, as glibc's does. */
pid_t getpid(void)
{
    atomic_fetch_add(&getpid_calls, 1);
    return (pid_t)syscall(SYS_getpid);
}

static void handler(int sig)
{
    (void)sig;
}

static int set_action(int sig, void (*fn)(int), struct sigaction *old)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = fn;
    sigemptyset(&a.sa_mask);
    return sigaction(sig, &a, old);
}

static void masks(void)
{
    struct sigaction old;
    int wrong = 0, before = atomic_load(&mask_changes);
    for (int i = 0; i < 1000; i++) {
        if (set_action(SIGUSR1, i % 2 ? SIG_DFL : handler, &old) != 0 ||
            old.sa_handler != (i % 2 ? handler : SIG_DFL))
            wrong++;
    }
    printf("old actions wrong: %d\n", wrong);
    printf("signal mask changes in 1000 sigaction calls: %d\n",
           atomic_load(&mask_changes) - before);
}

static atomic_int probes, wrapped_runs;

static void probe(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info, (void)uctx;
    set_action(SIGUSR2, atomic_fetch_add(&probes, 1) % 2 ? SIG_DFL : handler, NULL);
}

static void wrapped(int sig)
{
    (void)sig;
    atomic_fetch_add(&wrapped_runs, 1);
}

static void nested(void)
{
    struct sigaction w;
    memset(&w, 0, sizeof w);
    w.sa_handler = wrapped;
    sigemptyset(&w.sa_mask);
    w.sa_flags = SA_RESTART;
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
    struct itimerspec every = {{0, 1000000}, {0, 1000000}};
    timer_t tm;
    ev._sigev_un._tid = gettid();
    if (sigaction(SIGALRM, &w, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0 ||
        timer_settime(tm, 0, &every, NULL) != 0 || !pc_probe_timer(SIGPROF, probe, 20000)) {
        printf("timers: not set\n");
        return;
    }
    for (int i = 0; i < 20000 || atomic_load(&probes) < 200 || atomic_load(&wrapped_runs) < 20;
         i++)
        set_action(SIGURG, i % 2 ? SIG_DFL : handler, NULL);
    printf("probes and wrapped handlers ran: yes\n");
}

static atomic_int parents_runs, childs_runs;

static void parents(int sig)
{
    (void)sig;
    atomic_fetch_add(&parents_runs, 1);
}

static void childs(int sig)
{
    (void)sig;
    atomic_fetch_add(&childs_runs, 1);
}

/* A child in its parent's memory, before its exec (exec != NULL) or exit. */
static int child_sets(void *exec)
{
    set_action(SIGUSR1, SIG_DFL, NULL);
    set_action(SIGUSR2, childs, NULL);
    if (exec)
        execl("/bin/true", "true", (char *)NULL);
    _exit(0);
}

/* Whether the parent's handlers run and are answered as before. */
static int parents_kept(void)
{
    struct sigaction usr1, usr2;
    int before = atomic_load(&parents_runs);
    raise(SIGUSR1);
    raise(SIGUSR2);
    return atomic_load(&parents_runs) == before + 2 && sigaction(SIGUSR1, NULL, &usr1) == 0 &&
           sigaction(SIGUSR2, NULL, &usr2) == 0 && usr1.sa_handler == parents &&
           usr2.sa_handler == parents;
}

/* One child of each round, vfork's or clone's; 1 when the parent's handlers stayed. */
static int round_kept(int i, int by_clone)
{
    static char stack[64 * 1024] __attribute__((aligned(16)));
    void *exec = i % 2 ? "exec" : NULL;
    int status;
    pid_t child;
    if (by_clone) {
        child = clone(child_sets, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, exec);
    } else {
        child = vfork();
        if (child == 0)
            child_sets(exec);
    }
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0 && parents_kept();
}

static void vforks(void)
{
    set_action(SIGUSR1, parents, NULL);
    set_action(SIGUSR2, parents, NULL);
    for (int by_clone = 0; by_clone < 2; by_clone++) {
        int kept = 0;
        for (int i = 0; i < 10; i++)
            kept += round_kept(i, by_clone);
        printf("%s children: the parent's handlers kept in %d of 10\n",
               by_clone ? "clone(CLONE_VM)" : "vfork", kept);
    }
    printf("the children's handler ran in the parent: %s\n",
           atomic_load(&childs_runs) ? "yes" : "no");
}

/* getpid calls in 1000 sigaction calls. */
static int getpids_in_actions(void)
{
    int before = atomic_load(&getpid_calls);
    for (int i = 0; i < 1000; i++)
        set_action(SIGUSR1, i % 2 ? SIG_DFL : handler, NULL);
    return atomic_load(&getpid_calls) - before;
}

static void getpids(void)
{
    int first = getpids_in_actions(), status;
    pid_t child = vfork();
    if (child == 0)
        _exit(0);
    if (child < 0 || waitpid(child, &status, 0) != child) {
        printf("no vfork child\n");
        return;
    }
    printf("getpid calls in 1000 sigaction calls: %d, after a vfork child: %d\n", first,
           getpids_in_actions());
    /* vfork refused (EAGAIN, by a seccomp filter): its failure as libc's, no child counted */
    struct sock_filter refuse[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vfork, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof refuse / sizeof refuse[0], refuse};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        printf("no seccomp filter\n");
        return;
    }
    errno = 0;
    child = vfork();
    int err = errno;
    printf("a refused vfork: %d, %s; getpid calls in 1000 sigaction calls: %d\n", (int)child,
           err == EAGAIN ? "EAGAIN" : "another errno", getpids_in_actions());
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(s, "nested"))
        nested();
    else if (!strcmp(s, "masks"))
        masks();
    else if (!strcmp(s, "vfork"))
        vforks();
    else if (!strcmp(s, "getpid"))
        getpids();
    else
        return fprintf(stderr, "usage: sigaction_calls nested|masks|vfork|getpid\n"), 2;
    printf("done\n");
    return 0;
}
