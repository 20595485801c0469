/*
 * noharm.c - correct programs from real test suites, made small, that the tracer changed
 * (run with and without it: the output must be the same).
 *   noharm fds          lists the descriptors open at the start of main and again after two
 *                       threads took locks at call sites new to the tracer (which unwinds
 *                       there): only 0, 1 and 2, as the runner opened them. CPython's
 *                       test_subprocess checks a child's descriptors this way; libunwind's
 *                       pipe for checking addresses was two more in every traced process
 *   noharm fds-limit    the same in a copy of itself started with a soft RLIMIT_NOFILE of 64
 *                       (the pipe moved below a lowered limit: CPython's
 *                       test_close_fds_when_max_fd_is_lowered)
 *   noharm fds-report   lists the descriptors at the start, makes a report (two threads take
 *                       two mutexes in opposite orders), then starts a copy of itself that
 *                       lists its own (fds-listed: 0, 1 and 2 only); then, as a daemon does,
 *                       closes every descriptor past 2, opens /dev/null (3), loads and unloads
 *                       a library and makes a second report: its descriptor 3 is still its own.
 *                       libdw kept the files a report names open, inherited by every child,
 *                       at the lowest numbers, which a new session after an unload closed
 *   noharm peek-refused a seccomp filter refuses process_vm_readv (EPERM, as container
 *                       profiles do), then two threads take two mutexes in opposite orders:
 *                       the tracer checks the addresses libunwind asks it to check another way,
 *                       and the inversion's stacks reach start_thread (x86-64 only: elsewhere
 *                       it says "no filter here" and takes the locks all the same)
 *   noharm peek-trapped a seccomp filter traps process_vm_readv (SIGSYS, as Chromium's and
 *                       Firefox's sandboxes do; the handler here counts the call and makes it
 *                       fail, where Chromium's crashes the process), then threads take locks
 *                       at new call sites, one exits holding a robust mutex, which main
 *                       takes back, and main, holding a mutex, joins a thread that sleeps in
 *                       a condition wait until a third wakes it: the program itself never
 *                       makes the call, so it prints "trapped: 0" (x86-64 only: elsewhere
 *                       "no filter here" first)
 *   noharm name-trapped a seccomp filter traps prctl(PR_GET_NAME) (Firefox's content sandbox
 *                       does, logging each call), then main and 2 threads after it make 200
 *                       timed condition waits each: the tracer asks for a thread's name, and
 *                       once refused asks no more, so "asked at most once: yes" (x86-64 only:
 *                       elsewhere "no filter here" first)
 *   noharm grow-trapped mremap|populate
 *                       a seccomp filter traps mremap, or madvise(MADV_POPULATE_WRITE)
 *                       (Firefox's content sandbox traps both, logging each call), then main
 *                       holds 3,000 mutexes at once (trylock: no order edges) and lets them go,
 *                       and two threads take two mutexes in opposite orders: the tracer grows
 *                       the held set, asks for the call once at most, and, the call refused,
 *                       tracks on and reports the inversion; "asked at most once: yes"
 *                       (x86-64 only: elsewhere "no filter here" first)
 *   noharm report-trapped
 *                       a seccomp filter traps process_vm_readv (Chromium's sandbox crashes
 *                       the process there), each trapped call written on stderr ("SIGSYS"),
 *                       then: a thread holds 41 mutexes (a held set in mapped memory, not in
 *                       its record) and waits for one main holds; main, holding two, raises
 *                       SIGUSR1 (run with LOCKTRACE_DUMP_SIGNAL=SIGUSR1: a thread dump); two
 *                       threads take two heap mutexes in opposite orders (a report names
 *                       them); main exits holding its mutex, the thread still in its wait
 *                       (with LOCKTRACE_EXIT_HELD=report: an exit-held report). The tracer
 *                       reads no memory with the call: no "SIGSYS" (x86-64 only: elsewhere
 *                       "no filter here" first)
 * Prints "done".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <errno.h>

#include "../blocked.h"
#include "hold_many.h"
#include "refuse_syscall.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;

/* The open descriptors, but the directory's own, in ascending order (the kernel lists them
 * so). */
static void list_fds(const char *when)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        perror("opendir /proc/self/fd");
        exit(2);
    }
    printf("descriptors %s:", when);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
}

static __attribute__((noinline)) void nested(pthread_mutex_t *inner)
{
    pthread_mutex_lock(&outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(&outer);
}

static void *new_sites(void *arg)
{
    pthread_mutex_t inner;
    pthread_mutex_init(&inner, NULL);
    nested(&inner);
    pthread_mutex_destroy(&inner);
    return arg;
}

static int fds(void)
{
    pthread_t th[2];
    list_fds("at start");
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, new_sites, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    list_fds("after the locks");
    return 0;
}

/* The program again, with a soft limit of 64 descriptors from its start (the tracer is
 * loaded, and sets up its stacks, before main). */
static int fds_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    r.rlim_cur = r.rlim_max < 64 ? r.rlim_max : 64;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    fflush(stdout);
    execl("/proc/self/exe", "noharm", "fds", (char *)NULL);
    perror("execl");
    return 1;
}

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void take(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

static pthread_mutex_t *one = &first, *two = &second; /* the pair taken both ways */

static void *first_then_second(void *arg)
{
    take(one, two);
    return arg;
}

static void *second_then_first(void *arg)
{
    take(two, one);
    return arg;
}

/* A thread takes one then two, another after it two then one: an inversion. */
static int take_both_ways(void)
{
    pthread_t a, b;
    if (pthread_create(&a, NULL, first_then_second, NULL) != 0)
        return 1;
    pthread_join(a, NULL);
    if (pthread_create(&b, NULL, second_then_first, NULL) != 0)
        return 1;
    pthread_join(b, NULL);
    return 0;
}

static pthread_mutex_t third = PTHREAD_MUTEX_INITIALIZER, fourth = PTHREAD_MUTEX_INITIALIZER;

static int fds_report(void)
{
    pid_t child;
    int status;
    list_fds("at start");
    if (take_both_ways() != 0)
        return 1;
    fflush(stdout);
    if ((child = fork()) == 0) {
        execl("/proc/self/exe", "noharm", "fds-listed", (char *)NULL);
        _exit(127);
    }
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
        return 1;
    closefrom(3);
    int own = open("/dev/null", O_RDONLY);
    void *lib = dlopen("libutil.so.1", RTLD_NOW);
    if (own != 3 || !lib || dlclose(lib) != 0)
        return 1;
    pthread_mutex_lock(&third); /* call sites of their own: a new report */
    pthread_mutex_lock(&fourth);
    pthread_mutex_unlock(&fourth);
    pthread_mutex_unlock(&third);
    pthread_mutex_lock(&fourth);
    pthread_mutex_lock(&third);
    pthread_mutex_unlock(&third);
    pthread_mutex_unlock(&fourth);
    struct stat mine, null;
    int same = fstat(own, &mine) == 0 && stat("/dev/null", &null) == 0 &&
               mine.st_dev == null.st_dev && mine.st_ino == null.st_ino;
    printf("descriptor 3 still the program's /dev/null: %s\n", same ? "yes" : "no");
    return 0;
}

/* process_vm_readv answers EPERM from here on, for this process; 1 when the filter is in
 * place. */
static int refuse_process_vm_readv(void)
{
#ifdef __x86_64__
    long word = 0, copy;
    struct iovec local = {&copy, sizeof copy}, remote = {&word, sizeof word};
    return refuse_syscall(SYS_process_vm_readv) &&
           process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 && errno == EPERM;
#else
    return 0;
#endif
}

static int peek_refused(void)
{
    if (!refuse_process_vm_readv())
        printf("no filter here\n");
    return take_both_ways();
}

static atomic_int trapped;

#ifdef __x86_64__
/* A trapped call: counted, and made to fail with ENOSYS as the program goes on. */
static void on_sigsys(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    ((ucontext_t *)context)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
    atomic_fetch_add(&trapped, 1);
}
#endif

/* process_vm_readv raises SIGSYS from here on, for this process; 1 when the filter is in
 * place (shown by a call of its own, which is not counted). */
static int trap_process_vm_readv(void)
{
#ifdef __x86_64__
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    long word = 0, copy;
    struct iovec local = {&copy, sizeof copy}, remote = {&word, sizeof word};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0 || !trap_syscall(SYS_process_vm_readv))
        return 0;
    int refused = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 && errno == ENOSYS &&
                  atomic_load(&trapped) == 1;
    atomic_store(&trapped, 0);
    return refused;
#else
    return 0;
#endif
}

static pthread_mutex_t robust;

static __attribute__((noinline)) void *exit_holding_robust(void *arg)
{
    pthread_mutex_lock(&robust);
    return arg;
}

static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER, joiner_holds = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;
static blocked_probe in_cond_wait, in_join;

static void *cond_waiter(void *arg)
{
    pthread_mutex_lock(&cv_mutex);
    blocked_announce_on(&in_cond_wait, &cv, sizeof cv);
    while (!go)
        pthread_cond_wait(&cv, &cv_mutex);
    pthread_mutex_unlock(&cv_mutex);
    return arg;
}

/* Wakes the condition waiter once main sleeps in its join: the tracer has looked at the
 * waiter's condition wait by then. */
static void *waker(void *arg)
{
    blocked_until(&in_join);
    pthread_mutex_lock(&cv_mutex);
    go = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cv_mutex);
    return arg;
}

/* Joins a thread in a condition wait while holding a mutex (the tracer searches the join's
 * wait for a cycle, through that condition wait). */
static int join_cond_waiter(void)
{
    pthread_t w, k;
    if (pthread_create(&w, NULL, cond_waiter, NULL) != 0)
        return 1;
    blocked_until(&in_cond_wait);
    if (pthread_create(&k, NULL, waker, NULL) != 0)
        return 1;
    pthread_mutex_lock(&joiner_holds);
    blocked_announce_on(&in_join, (const void *)w, 4096);
    pthread_join(w, NULL);
    pthread_mutex_unlock(&joiner_holds);
    pthread_join(k, NULL);
    return 0;
}

static int peek_trapped(void)
{
    pthread_t a, b, c;
    pthread_mutexattr_t attr;
    if (!trap_process_vm_readv())
        printf("no filter here\n");
    if (pthread_create(&a, NULL, new_sites, NULL) != 0 || pthread_create(&b, NULL, new_sites, NULL) != 0)
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &attr);
    if (pthread_create(&c, NULL, exit_holding_robust, NULL) != 0)
        return 1;
    pthread_join(c, NULL);
    if (pthread_mutex_lock(&robust) != EOWNERDEAD || pthread_mutex_consistent(&robust) != 0)
        return 1;
    pthread_mutex_unlock(&robust);
    if (join_cond_waiter() != 0)
        return 1;
    printf("trapped: %d\n", atomic_load(&trapped));
    return 0;
}

static pthread_mutex_t nap_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nap_cond = PTHREAD_COND_INITIALIZER;

/* 200 condition waits that time out (the tracer records the waiter, by name, at each). */
static void *napper(void *arg)
{
    pthread_mutex_lock(&nap_mutex);
    for (int i = 0; i < 200; i++) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += 100000;
        if (at.tv_nsec >= 1000000000) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&nap_cond, &nap_mutex, &at);
    }
    pthread_mutex_unlock(&nap_mutex);
    return arg;
}

static int name_trapped(void)
{
    pthread_t t[2];
    char name[16];
#ifdef __x86_64__
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0 ||
        !filter_syscall_if(SYS_prctl, 0, PR_GET_NAME, SECCOMP_RET_TRAP) ||
        prctl(PR_GET_NAME, name, 0, 0, 0) == 0 || errno != ENOSYS || atomic_load(&trapped) != 1)
        printf("no filter here\n");
#else
    printf("no filter here\n");
    (void)name;
#endif
    atomic_store(&trapped, 0);
    napper(NULL);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, napper, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("asked at most once: %s\n", atomic_load(&trapped) <= 1 ? "yes" : "no");
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; the filter traps it whatever the kernel knows */
#endif
/* The call raises SIGSYS from here on (a call of the program's own shows it, not counted); 1
 * when the filter is in place. */
static int trap_call(const char *call)
{
#ifdef __x86_64__
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    int in;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0)
        return 0;
    if (strcmp(call, "mremap") == 0) {
        char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        in = p != MAP_FAILED && trap_syscall(SYS_mremap) &&
             mremap(p, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED && errno == ENOSYS;
    } else {
        static char page[4096] __attribute__((aligned(4096)));
        in = filter_syscall_if(SYS_madvise, 2, MADV_POPULATE_WRITE, SECCOMP_RET_TRAP) &&
             madvise(page, sizeof page, MADV_POPULATE_WRITE) != 0 && errno == ENOSYS;
    }
    in = in && atomic_load(&trapped) == 1;
    atomic_store(&trapped, 0);
    return in;
#else
    (void)call;
    return 0;
#endif
}

static int grow_trapped(const char *call)
{
    if (!trap_call(call))
        printf("no filter here\n");
    if (hold_many() != 0 || take_both_ways() != 0)
        return 1;
    printf("asked at most once: %s\n", atomic_load(&trapped) <= 1 ? "yes" : "no");
    return 0;
}

#ifdef __x86_64__
/* A trapped call, said on stderr (the tracer may make it at exit, after main's last word). */
static void say_sigsys(int sig, siginfo_t *info, void *context)
{
    static const char line[] = "SIGSYS: process_vm_readv\n";
    (void)sig;
    (void)info;
    ((ucontext_t *)context)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
    write(2, line, sizeof line - 1);
}
#endif

static pthread_mutex_t other_holds = PTHREAD_MUTEX_INITIALIZER, main_holds = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t never_given = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other_holds_too[40];
static blocked_probe holder_waits;

/* Holds 41 mutexes and waits for one main never lets go of (main exits meanwhile). */
static void *hold_and_wait(void *arg)
{
    for (int i = 0; i < 40; i++)
        if (pthread_mutex_init(&other_holds_too[i], NULL) != 0 ||
            pthread_mutex_trylock(&other_holds_too[i]) != 0)
            return arg;
    pthread_mutex_lock(&other_holds);
    blocked_announce_on(&holder_waits, &never_given, sizeof never_given);
    pthread_mutex_lock(&never_given);
    return arg;
}

static int report_trapped(void)
{
    pthread_t h;
#ifdef __x86_64__
    struct sigaction sa = {.sa_sigaction = say_sigsys, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0 || !trap_syscall(SYS_process_vm_readv))
        printf("no filter here\n");
#else
    printf("no filter here\n");
#endif
    pthread_mutex_lock(&never_given);
    if (pthread_create(&h, NULL, hold_and_wait, NULL) != 0)
        return 1;
    blocked_until(&holder_waits);
    pthread_mutex_lock(&main_holds);
    raise(SIGUSR1);
    one = malloc(sizeof *one);
    two = malloc(sizeof *two);
    if (!one || !two || pthread_mutex_init(one, NULL) != 0 || pthread_mutex_init(two, NULL) != 0 ||
        take_both_ways() != 0)
        return 1;
    printf("done\n");
    fflush(stdout);
    exit(0); /* holding main_holds, the thread holding other_holds */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc;
    if (strcmp(mode, "fds") == 0)
        rc = fds();
    else if (strcmp(mode, "fds-limit") == 0)
        rc = fds_limit();
    else if (strcmp(mode, "fds-report") == 0)
        rc = fds_report();
    else if (strcmp(mode, "fds-listed") == 0) {
        list_fds("in a child started after it");
        return 0;
    } else if (strcmp(mode, "peek-refused") == 0)
        rc = peek_refused();
    else if (strcmp(mode, "peek-trapped") == 0)
        rc = peek_trapped();
    else if (strcmp(mode, "name-trapped") == 0)
        rc = name_trapped();
    else if (strcmp(mode, "grow-trapped") == 0 && argc > 2)
        rc = grow_trapped(argv[2]);
    else if (strcmp(mode, "report-trapped") == 0)
        rc = report_trapped();
    else {
        fprintf(stderr, "usage: noharm fds|fds-limit|fds-report|peek-refused|peek-trapped|"
                        "name-trapped|grow-trapped mremap|populate|report-trapped\n");
        return 2;
    }
    if (rc == 0)
        printf("done\n");
    return rc;
}
