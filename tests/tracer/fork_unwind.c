/*
 * fork_unwind.c - fork() while the tracer unwinds a stack with libunwind, whose own mutexes
 * a fork child must not inherit held:
 *   fork_unwind other-init       a thread is inside the unwind of its first pthread_mutex_init
 *                                at a new call site (callsite.c learns the site) when main
 *                                forks: the fork waits for it, and the child's own unwinds
 *                                finish
 *   fork_unwind other-backtrace  the same inside the backtrace (unw_backtrace) that records
 *                                where a statically initialised mutex was first used
 *   fork_unwind signal-own       main, the only thread, is inside its own unwind when a
 *                                signal arrives whose handler forks: the fork does not wait
 *                                for main's unwind (it would wait forever), the child goes on
 *                                from the handler, and there runs other-init's case: a thread
 *                                of the child is inside an unwind when the child forks, which
 *                                waits for it, and the grandchild's unwinds finish
 *   fork_unwind report-other     a thread is making a report (a lock-order inversion with a
 *                                mutex in its frame, which the report names by an unwind)
 *                                when main forks: the fork waits for the report, which
 *                                unwinds and ends, and the child's unwinds finish
 * Each prints "done". A child that hangs (with signals blocked, in libunwind's mutex) is
 * ended by the test's timeout, which kills the process group.
 *
 * Being inside an unwind is made certain, not likely: the program defines dl_iterate_phdr,
 * which libunwind calls (with signals blocked and its own lock held) to find the unwind
 * information of an address it has not seen, and an armed thread acts there: it parks until
 * released, or raises SIGUSR1, delivered once libunwind unblocks signals, still inside the
 * unwind. Every site below is a function of its own, so its address is new to libunwind.
 * The parked thread is let go once the forking thread is seen waiting for it (a signal's
 * interrupted pc), or once the fork returned without waiting (the bug: the child hangs).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../pc.h"

#define NOINLINE __attribute__((noinline))

enum { IDLE, PARK, RAISE, PARK_REPORT };
/* Atomic: glibc declares its functions leaf ones in C, which lets the compiler assume that a
 * call to pthread_mutex_init leaves this file's variables as they were. */
static _Thread_local _Atomic int armed;
static _Atomic int parked, released, forking, releasing;

typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);

/* Whether the code at ret is in the library named `lib`. */
static int from(void *ret, const char *lib)
{
    Dl_info di;
    return dladdr(ret, &di) && di.dli_fname && strstr(di.dli_fname, lib);
}

int dl_iterate_phdr(phdr_cb cb, void *data)
{
    static int (*_Atomic real)(phdr_cb, void *);
    if (!atomic_load(&real))
        atomic_store(&real, (int (*)(phdr_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr"));
    int what = armed;
    if (what != IDLE && from(__builtin_return_address(0),
                             what == PARK_REPORT ? "liblocktrace" : "libunwind")) {
        armed = IDLE;
        if (what != RAISE) {
            atomic_store(&parked, 1);
            while (!atomic_load(&released))
                sched_yield();
        } else {
            pthread_kill(pthread_self(), SIGUSR1);
        }
    }
    return atomic_load(&real)(cb, data);
}

/* The call sites, each met once. */
static NOINLINE void init_site_a(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }
static NOINLINE void init_site_b(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }
static NOINLINE void init_site_c(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }
static NOINLINE void init_site_d(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }
static NOINLINE void init_site_e(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }
static NOINLINE void init_site_f(pthread_mutex_t *m) { pthread_mutex_init(m, NULL); }

static NOINLINE void lock_site_a(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
}

static NOINLINE void lock_site_b(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
}

static pthread_mutex_t fresh_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fresh_b = PTHREAD_MUTEX_INITIALIZER;

/* A thread that parks inside the tracer at `site`: in its unwind (PARK), or in the report
 * the site makes (PARK_REPORT: the site arms itself). */
typedef struct parker {
    void (*site)(pthread_mutex_t *);
    pthread_mutex_t *m;
    int mode;
} parker;

static void *park_in_tracer(void *arg)
{
    parker *p = arg;
    armed = p->mode;
    p->site(p->m);
    return NULL;
}

/* A mutex in this frame and `global` taken in both orders: a lock-order inversion, reported
 * with the local mutex named by its frame (which the report finds by an unwind). The thread
 * parks once the report has begun (its first look at the loaded objects). */
static NOINLINE void report_site(pthread_mutex_t *global)
{
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&local);
    pthread_mutex_lock(global);
    pthread_mutex_unlock(global);
    pthread_mutex_unlock(&local);
    armed = PARK_REPORT;
    pthread_mutex_lock(global);
    pthread_mutex_lock(&local);
    pthread_mutex_unlock(&local);
    pthread_mutex_unlock(global);
}

/* Where main was at its last SIGUSR2, and how many it has had. */
static _Atomic uintptr_t main_pc;
static _Atomic int samples;

static void note_pc(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)info;
    atomic_store(&main_pc, pc_interrupted(uc));
    atomic_fetch_add(&samples, 1);
}

/* Lets the parked thread go once the thread forking waits for it in fork() (a signal finds it
 * in libc's sched_yield or in syscall, libc's or the tracer's own, where the tracer's waits
 * yield, then nap, and which nothing else calls during its fork), or its fork has returned. */
static void *release_when_fork_waits(void *arg)
{
    pthread_t forker = *(pthread_t *)arg;
    uintptr_t lo = 0, hi = 0, nap_lo = 0, nap_hi = 0, call_lo = 0, call_hi = 0;
    pc_libc_function("sched_yield", &lo, &hi);
    pc_libc_function("syscall", &nap_lo, &nap_hi);
    pc_called_function("syscall", &call_lo, &call_hi);
    atomic_store(&releasing, 1);
    while (atomic_load(&forking) != 2) {
        int before = atomic_load(&samples);
        if (atomic_load(&forking) != 1 || pthread_kill(forker, SIGUSR2) != 0) {
            sched_yield();
            continue;
        }
        while (atomic_load(&samples) == before && atomic_load(&forking) != 2)
            sched_yield();
        uintptr_t pc = atomic_load(&main_pc);
        if (atomic_load(&samples) != before &&
            ((pc >= lo && pc < hi) || (pc >= nap_lo && pc < nap_hi) ||
             (pc >= call_lo && pc < call_hi)))
            break;
    }
    atomic_store(&released, 1);
    return NULL;
}

/* Ends with the child's verdict: 0 when it exited 0 (else a message). */
static int wait_child(pid_t pid, const char *who)
{
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        fprintf(stderr, "fork_unwind: no %s\n", who);
        return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "fork_unwind: the %s ended by signal %d\n", who, WTERMSIG(status));
    else
        fprintf(stderr, "fork_unwind: the %s exited %d\n", who, WEXITSTATUS(status));
    return 1;
}

/* A thread parks inside the tracer at p's site; this one forks meanwhile, once it is there.
 * The child unwinds at child_site (a new site) and exits. */
static int fork_while_parked(parker *p, void (*child_site)(pthread_mutex_t *), const char *who)
{
    pthread_t parked_th, releaser, me = pthread_self();
    if (pc_probe_install(SIGUSR2, note_pc, SA_RESTART) != 0)
        return 1;
    atomic_store(&parked, 0);
    atomic_store(&released, 0);
    atomic_store(&forking, 0);
    atomic_store(&releasing, 0);
    if (pthread_create(&parked_th, NULL, park_in_tracer, p) != 0)
        return 1;
    while (!atomic_load(&parked))
        sched_yield();
    if (pthread_create(&releaser, NULL, release_when_fork_waits, &me) != 0)
        return 1;
    while (!atomic_load(&releasing)) /* running: the fork holds back threads that start */
        sched_yield();
    atomic_store(&forking, 1);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_t m;
        child_site(&m);
        _exit(0);
    }
    atomic_store(&forking, 2);
    pthread_join(releaser, NULL);
    pthread_join(parked_th, NULL);
    return wait_child(pid, who);
}

static int other_init(void)
{
    pthread_mutex_t m;
    parker p = {init_site_a, &m, PARK};
    return fork_while_parked(&p, init_site_b, "fork child");
}

static int other_backtrace(void)
{
    parker p = {lock_site_a, &fresh_a, PARK};
    return fork_while_parked(&p, init_site_b, "fork child");
}

static int report_other(void)
{
    static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
    parker p = {report_site, &global, IDLE};
    return fork_while_parked(&p, init_site_b, "fork child");
}

static _Atomic pid_t handler_child = -1;
static volatile sig_atomic_t in_child;

/* The handler of a signal delivered inside main's unwind: forks; the child returns from
 * here into that unwind and goes on as main's code says. */
static void fork_in_handler(int sig, siginfo_t *info, void *uc)
{
    (void)sig, (void)info, (void)uc;
    pid_t pid = fork();
    if (pid == 0)
        in_child = 1;
    atomic_store(&handler_child, pid);
}

static int signal_own(void)
{
    pthread_mutex_t m;
    if (pc_probe_install(SIGUSR1, fork_in_handler, 0) != 0) /* (it runs inside the unwind) */
        return 1;
    lock_site_b(&fresh_b); /* the tracer's first unwinds: libunwind is loaded */
    armed = RAISE;
    init_site_c(&m);
    if (armed != IDLE || atomic_load(&handler_child) < 0) {
        fprintf(stderr, "fork_unwind: no signal inside the unwind\n");
        return 1;
    }
    if (in_child) { /* the child: its thread unwinds while it forks, as in other-init */
        pthread_mutex_t n;
        parker p = {init_site_d, &n, PARK};
        init_site_e(&n);
        _exit(fork_while_parked(&p, init_site_f, "grandchild"));
    }
    return wait_child(atomic_load(&handler_child), "fork child");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(s, "other-init"))
        rc = other_init();
    else if (!strcmp(s, "other-backtrace"))
        rc = other_backtrace();
    else if (!strcmp(s, "signal-own"))
        rc = signal_own();
    else if (!strcmp(s, "report-other"))
        rc = report_other();
    else {
        fprintf(stderr, "usage: fork_unwind other-init|other-backtrace|signal-own|report-other\n");
        return 2;
    }
    if (rc == 0)
        puts("done");
    return rc;
}
