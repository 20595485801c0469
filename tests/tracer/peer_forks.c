/*
 * peer_forks.c - children made by the fork system call itself, past libc's fork, as
 * ThreadSanitizer's own fork tests make them (syscall(SYS_fork), and SYS_clone without
 * CLONE_VM and without a stack of its own), and by libc's clone without CLONE_VM: libc's
 * atfork handlers do not run, and libc's record of the thread's kernel id keeps the parent's
 * (the kernel writes the child's id only where libc's fork asks it to). The scenarios make
 * their children each way in turn; churn and orphan also by glibc's _Fork, which skips the
 * atfork handlers too but gives libc the child's id. Chosen by name:
 *   peer_forks NAME
 *   - churn: another thread makes new lock orders without a pause while main makes children
 *     that each nest two mutexes of their own, then exit. Natively each exits at once.
 *   - orphan: another thread holds a mutex while main makes a child that locks it: natively
 *     the child hangs, for no thread of its process will ever unlock it.
 *   - own: the neighbours: the child locks again the recursive mutex its thread held at the
 *     fork and unlocks the normal one: libc's lock words name the id libc still gives the
 *     thread, so the thread holds them in the child, and both calls succeed.
 *   - vfork-waits: clone with CLONE_VFORK and without CLONE_VM, whose child waits for a byte
 *     another thread of the parent writes after a lock call, while the parent waits in clone
 *     for the child.
 * Each scenario prints what its children did and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../blocked.h"

#define NOINLINE __attribute__((noinline))
#define CHILDREN 480
#define CHURN_LOCKS 16
#define WAYS 3     /* the ways whose child keeps the parent's id in libc */
#define ALL_WAYS 4 /* ... and _Fork */

static atomic_int stop, holding;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

/* What a child runs; its result is the child's exit status. */
typedef int (*child_fn)(void);
static child_fn child_work;
static _Alignas(16) char child_stack[1 << 16]; /* each child's copy of it is its own */

static int clone_start(void *arg)
{
    (void)arg;
    return child_work();
}

static const char *const way_names[ALL_WAYS] = {"clone system call", "fork system call", "clone",
                                                "_Fork"};

/* A child running fn, made the way `way` picks: the clone system call as fork makes it, the
 * fork system call, libc's clone on a stack of its own, or _Fork. */
static pid_t make_child(int way, child_fn fn)
{
    pid_t pid;
    switch (way) {
    case 0:
        pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
        break;
    case 1:
        pid = (pid_t)syscall(SYS_fork);
        break;
    case 3:
        pid = _Fork();
        break;
    default:
        child_work = fn;
        return clone(clone_start, child_stack + sizeof child_stack, SIGCHLD, NULL);
    }
    if (pid == 0)
        _exit(fn());
    return pid;
}

/* How a child ended, as "signal N" or "exit N". */
static void child_status(const char *what, pid_t pid)
{
    int status;
    if (pid < 0) {
        printf("%s: fork -> %s\n", what, strerror(errno));
        exit(2);
    }
    waitpid(pid, &status, 0);
    printf("%s: %s %d\n", what, WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    fflush(stdout);
}

/* Fresh mutexes taken in a chain: every pair is a new lock order for the tracer. */
static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_mutex_t *m[CHURN_LOCKS];
        for (int i = 0; i < CHURN_LOCKS; i++) {
            m[i] = malloc(sizeof *m[i]);
            pthread_mutex_init(m[i], NULL);
        }
        for (int i = 0; i < CHURN_LOCKS; i++)
            pthread_mutex_lock(m[i]);
        for (int i = CHURN_LOCKS; i-- > 0;)
            pthread_mutex_unlock(m[i]);
        for (int i = 0; i < CHURN_LOCKS; i++) {
            pthread_mutex_destroy(m[i]);
            free(m[i]);
        }
    }
    return NULL;
}

NOINLINE static int nest_two(void)
{
    pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER, inner = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&outer);
    pthread_mutex_lock(&inner);
    pthread_mutex_unlock(&inner);
    pthread_mutex_unlock(&outer);
    return 0;
}

/* The tracer's state is under its own locks, which the churning thread takes again and
 * again: a child made while it held one must not find it taken for good. */
NOINLINE static void churn_children(void)
{
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL);
    int failed = 0;
    for (int i = 0; i < CHILDREN; i++) {
        fflush(stdout);
        pid_t pid = make_child(i % ALL_WAYS, nest_two);
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
            failed++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("children: %d of %d failed\n", failed, CHILDREN);
}

static void *hold(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    atomic_store(&holding, 1);
    while (!atomic_load(&stop))
        sched_yield();
    pthread_mutex_unlock(&held);
    return NULL;
}

NOINLINE static int child_locks_held(void)
{
    return pthread_mutex_lock(&held);
}

/* The child asks for a mutex that only a thread left behind in the parent could unlock. */
NOINLINE static void orphan(void)
{
    pthread_t t;
    pthread_create(&t, NULL, hold, NULL);
    while (!atomic_load(&holding))
        sched_yield();
    for (int way = 0; way < ALL_WAYS; way++) {
        fflush(stdout);
        child_status(way_names[way], make_child(way, child_locks_held));
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
}

static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER, recursive;

static int relock_and_unlock(void)
{
    int relock = pthread_mutex_lock(&recursive);
    int unlocks = pthread_mutex_unlock(&recursive) | pthread_mutex_unlock(&recursive);
    return relock | unlocks | pthread_mutex_unlock(&normal);
}

/* The child's calls on what its thread held at the fork. */
NOINLINE static void own(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&recursive, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_lock(&normal);
    pthread_mutex_lock(&recursive);
    for (int way = 0; way < WAYS; way++) {
        fflush(stdout);
        child_status(way_names[way], make_child(way, relock_and_unlock));
    }
    pthread_mutex_unlock(&recursive);
    pthread_mutex_unlock(&normal);
}

static int handover[2];
static pid_t main_tid;

static int child_reads(void *arg)
{
    (void)arg;
    char byte;
    return read(handover[0], &byte, 1) == 1 ? 0 : 1;
}

/* Whether main is in the clone system call. */
static int main_in_clone(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)main_tid);
    return blocked_syscall_line(path, buf, sizeof buf) && atol(buf) == SYS_clone;
}

/* Once main waits in clone for its child: a lock call, then the byte the child waits for. */
static void *lock_then_write(void *arg)
{
    (void)arg;
    while (!main_in_clone())
        sched_yield();
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&fresh);
    pthread_mutex_unlock(&fresh);
    pthread_mutex_destroy(&fresh);
    return write(handover[1], "x", 1) == 1 ? NULL : (void *)1;
}

/* The parent's clone returns only once its CLONE_VFORK child has exited, and the child needs
 * the other thread: that thread's lock call must not wait for the clone. */
NOINLINE static void vfork_waits(void)
{
    pthread_t t;
    if (pipe(handover) != 0)
        exit(2);
    main_tid = (pid_t)blocked_tid();
    pthread_create(&t, NULL, lock_then_write, NULL);
    fflush(stdout);
    child_status("vfork clone", clone(child_reads, child_stack + sizeof child_stack,
                                      CLONE_VFORK | SIGCHLD, NULL));
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "churn"))
        churn_children();
    else if (!strcmp(s, "orphan"))
        orphan();
    else if (!strcmp(s, "own"))
        own();
    else if (!strcmp(s, "vfork-waits"))
        vfork_waits();
    else {
        fprintf(stderr, "peer_forks: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
