/*
 * pc.h - where a thread is, for test programs that must act once another thread (or a fork
 * child) runs a given function that never sleeps in the kernel (a spin, a yield loop): a
 * signal handler reads the interrupted program counter, which the test compares with the
 * function's bounds; or a timer's handler holds a thread wherever it is (pc_probe_timer,
 * pc_hold). Include it with _GNU_SOURCE defined (dladdr1).
 */
#ifndef PC_H
#define PC_H

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* The program counter a signal interrupted, from the handler's third argument. */
static inline uintptr_t pc_interrupted(const void *uc)
{
    const mcontext_t *mc = &((const ucontext_t *)uc)->uc_mcontext;
#if defined(__x86_64__)
    return (uintptr_t)mc->gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)mc->pc;
#else
#error "pc.h reads the interrupted pc on x86-64 and AArch64 only"
#endif
}

/* Installs handler (SA_SIGINFO) for sig the way the rt_sigaction system call does, past an
 * interposed sigaction: locktrace runs a handler set by sigaction only once its thread is out
 * of the tracer (sigdefer.c), and a probe must run where the signal finds the thread, inside
 * it too. libc's sigaction installs it first, for libc's signal return (SA_RESTORER); the
 * system call then puts the handler itself in the tracer's wrapper's place. 0 or -1. */
static inline int pc_probe_install(int sig, void (*handler)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa = {.sa_sigaction = handler, .sa_flags = flags | SA_SIGINFO};
    struct { /* the kernel's struct sigaction (x86-64's and AArch64's) */
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0 || syscall(SYS_rt_sigaction, sig, NULL, &k, 8) != 0)
        return -1;
    k.handler = (void *)handler;
    return syscall(SYS_rt_sigaction, sig, &k, NULL, 8) == 0 ? 0 : -1;
}

/* handler (pc_probe_install, SA_RESTART) run by a timer's sig in the calling thread every
 * period_ns: a probe that interrupts the thread wherever it is, inside the tracer too. 1 when
 * it runs, 0 when it could not be set. */
static inline int pc_probe_timer(int sig, void (*handler)(int, siginfo_t *, void *),
                                 long period_ns)
{
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = sig};
    struct itimerspec every = {{0, period_ns}, {0, period_ns}};
    timer_t tm;
    ev._sigev_un._tid = gettid();
    return pc_probe_install(sig, handler, SA_RESTART) == 0 &&
           timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0 &&
           timer_settime(tm, 0, &every, NULL) == 0;
}

/* A handler's hold of its thread where the signal found it, for chain k (k < 0: none): once a
 * chain (*held), it lets the other thread go on k, then waits until that thread has done k,
 * at most ns, since the hold may have come while this thread has what the other one needs. */
static inline void pc_hold(long k, long *held, atomic_long *go, atomic_long *done, long ns)
{
    struct timespec ts;
    if (k < 0 || k == *held)
        return;
    *held = k;
    atomic_store(go, k);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long until = ts.tv_sec * 1000000000L + ts.tv_nsec + ns;
    while (atomic_load(done) < k) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec * 1000000000L + ts.tv_nsec >= until)
            return;
    }
}

/* Where the function at fn lies, [*lo, *hi) (its symbol's size); -1 when unknown. */
static inline int pc_function_at(void *fn, uintptr_t *lo, uintptr_t *hi)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
        return -1;
    *lo = (uintptr_t)info.dli_saddr;
    *hi = *lo + sym->st_size;
    return 0;
}

/* Where libc's own function `name` lies (the tracer's, if it has one of that name, is another
 * function). */
static inline int pc_libc_function(const char *name, uintptr_t *lo, uintptr_t *hi)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    return pc_function_at(libc ? dlsym(libc, name) : NULL, lo, hi);
}

/* The function the program's calls of name reach: a preloaded library's where it defines one
 * (the tracer's syscall), libc's otherwise. */
static inline int pc_called_function(const char *name, uintptr_t *lo, uintptr_t *hi)
{
    return pc_function_at(dlsym(RTLD_DEFAULT, name), lo, hi);
}

#endif
