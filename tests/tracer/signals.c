/*
 * signals.c - the program's signal handlers under the tracer (sigdefer.c), chosen by name:
 *   signals NAME
 *   - stw: a stop-the-world collector as Boehm GC's: its suspend handler (SIGPWR)
 *     acknowledges, then parks its thread in sigsuspend until the resume signal (SIGXCPU).
 *     Two mutators take nested locks and make new ones; the collector, with the world
 *     stopped, takes new nested locks too. A mutator parked inside the tracer (in the order
 *     graph's gate, holding a tracer lock) hung the collector's next lock for ever.
 *   - stw-fork: the same, the mutators forking children too (the fork's window holds every
 *     tracer lock).
 *   - sigaction: actions set and read back (flags, mask, the old action, signal() and libc's
 *     other variants), SA_RESETHAND (the second signal kills), SA_NODEFER (the handler
 *     nests). The output is compared with the program's without the tracer.
 *   - segv: a SIGSEGV handler over a read-only page holding a mutex: libc's lock faults
 *     inside the tracer, the handler makes the page writable, the lock is taken.
 *   - errno: a handler that uses errno (and restores it) at a high rate while the thread
 *     locks: errno is the program's across every lock call, and in the handler.
 *   - rt-queue: 20000 real-time signals sent with values to a thread that locks: each
 *     delivered once, in order.
 *   - jump: a timer's handler siglongjmps out of the thread's lock calls; afterwards the
 *     thread is still traced (an inversion it makes is reported) and another thread's new
 *     edges are still made (the gate is not left occupied).
 *   - nest: two timers' signals at a high rate on a thread that locks: one handler counts,
 *     the other takes a mutex of its own. A signal deferred inside a lock call is blocked
 *     until it is run; run by the other handler's way out of the tracer, in that handler's
 *     context, it stayed blocked in the context the handler returned to, for good. After
 *     each round's unlock neither signal may be blocked.
 * Each scenario prints what it saw and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "random_pair.h"

#define NLOCKS 1024
#define MUTATORS 2

static pthread_mutex_t locks[NLOCKS];
static atomic_int stop;

/* ---------------------------------------------------------------------------------------- */
/* stw, stw-fork */

#define SUSPEND SIGPWR
#define RESUME SIGXCPU
#define ROUNDS 2000

static sem_t acked;
static atomic_int world; /* the collector's resume count */
static int forking;

static void suspend_handler(int sig)
{
    (void)sig;
    int saved = errno, seen = atomic_load(&world);
    sigset_t wait;
    sigfillset(&wait);
    sigdelset(&wait, RESUME);
    sem_post(&acked);
    while (atomic_load(&world) == seen)
        sigsuspend(&wait);
    errno = saved;
}

static void resume_handler(int sig)
{
    (void)sig;
}

static void *mutator(void *arg)
{
    unsigned r = (unsigned)(uintptr_t)arg + 1;
    for (unsigned n = 0; !atomic_load(&stop); n++) {
        unsigned i;
        if (!random_pair(locks, NLOCKS, &r, &i))
            continue;
        if (n % 64 == 0) { /* a new lock: a new shadow entry, a new node's first edge */
            pthread_mutex_t fresh;
            pthread_mutex_init(&fresh, NULL);
            pthread_mutex_lock(&locks[i]);
            pthread_mutex_lock(&fresh);
            pthread_mutex_unlock(&fresh);
            pthread_mutex_unlock(&locks[i]);
            pthread_mutex_destroy(&fresh);
        }
        if (forking && n % 512 == 0) {
            pid_t pid = fork();
            if (pid == 0)
                _exit(0);
            if (pid > 0)
                waitpid(pid, NULL, 0);
        }
    }
    return NULL;
}

static void set_handler(int sig, void (*fn)(int), int block)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (block)
        sigaddset(&sa.sa_mask, block);
    sigaction(sig, &sa, NULL);
}

static void stop_the_world(int with_fork)
{
    static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, z = PTHREAD_MUTEX_INITIALIZER;
    pthread_t th[MUTATORS];
    forking = with_fork;
    sem_init(&acked, 0, 0);
    set_handler(SUSPEND, suspend_handler, RESUME);
    set_handler(RESUME, resume_handler, 0);
    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    for (int i = 0; i < MUTATORS; i++)
        pthread_create(&th[i], NULL, mutator, (void *)(uintptr_t)i);
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < MUTATORS; i++)
            pthread_kill(th[i], SUSPEND);
        for (int i = 0; i < MUTATORS; i++)
            while (sem_wait(&acked) != 0)
                ;
        /* the world is stopped: new nested locks, whose first edges take the graph lock */
        pthread_mutex_t fresh;
        pthread_mutex_init(&fresh, NULL);
        pthread_mutex_lock(&a);
        pthread_mutex_lock(&fresh);
        pthread_mutex_lock(&z);
        pthread_mutex_unlock(&z);
        pthread_mutex_unlock(&fresh);
        pthread_mutex_unlock(&a);
        pthread_mutex_destroy(&fresh);
        atomic_fetch_add(&world, 1);
        for (int i = 0; i < MUTATORS; i++)
            pthread_kill(th[i], RESUME);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < MUTATORS; i++)
        pthread_join(th[i], NULL);
    printf("%d rounds\n", ROUNDS);
}

/* ---------------------------------------------------------------------------------------- */
/* sigaction */

static void one(int sig) { (void)sig; }
static void two(int sig) { (void)sig; }
static void three(int sig, siginfo_t *info, void *uctx) { (void)sig, (void)info, (void)uctx; }

static const char *name_of(void (*h)(int))
{
    return h == one ? "one" : h == two ? "two" : h == (void (*)(int))(void (*)(void))three ? "three"
           : h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : h == SIG_HOLD ? "SIG_HOLD"
           : h == SIG_ERR ? "SIG_ERR" : "another";
}

static void show(const char *what, const struct sigaction *a)
{
    printf("%s: %s flags %#x mask", what, name_of(a->sa_handler), (unsigned)a->sa_flags);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(&a->sa_mask, s) == 1)
            printf(" %d", s);
    printf("\n");
}

static void query(const char *what, int sig)
{
    struct sigaction a;
    sigaction(sig, NULL, &a);
    show(what, &a);
}

static volatile sig_atomic_t depth, deepest, runs;

static void nests(int sig)
{
    runs++;
    if (++depth > deepest)
        deepest = depth;
    if (runs == 1)
        raise(sig); /* with SA_NODEFER it runs nested, else after this one */
    depth--;
}

static void resets(int sig)
{
    (void)sig;
    runs++;
}

/* SA_RESETHAND in a child: the first signal runs the handler, the second kills it. */
static void reset_hand(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction a;
        memset(&a, 0, sizeof a);
        a.sa_handler = resets;
        a.sa_flags = SA_RESETHAND;
        sigaction(SIGUSR1, &a, NULL);
        raise(SIGUSR1);
        printf("resethand: runs %d\n", (int)runs);
        query("resethand after", SIGUSR1);
        fflush(stdout);
        raise(SIGUSR1);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("resethand: child %s %d\n", WIFSIGNALED(status) ? "killed by" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void nodefer(int flags)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = nests;
    a.sa_flags = flags;
    sigaction(SIGUSR2, &a, NULL);
    depth = deepest = runs = 0;
    raise(SIGUSR2);
    printf("%s: runs %d, deepest %d\n", flags ? "nodefer" : "defer", (int)runs, (int)deepest);
}

static void sigaction_round_trip(void)
{
    struct sigaction a, old;
    memset(&a, 0, sizeof a);
    a.sa_handler = one;
    a.sa_flags = SA_RESTART | SA_ONSTACK;
    sigemptyset(&a.sa_mask);
    sigaddset(&a.sa_mask, SIGTERM);
    sigaddset(&a.sa_mask, SIGRTMIN + 3);
    sigaction(SIGUSR1, &a, &old);
    show("first old", &old);
    query("set", SIGUSR1);
    memset(&a, 0, sizeof a);
    a.sa_sigaction = three;
    a.sa_flags = SA_SIGINFO | SA_NOCLDSTOP;
    sigaction(SIGUSR1, &a, &old);
    show("old", &old);
    query("siginfo", SIGUSR1);
    a.sa_handler = SIG_IGN;
    a.sa_flags = 0;
    sigaction(SIGUSR1, &a, &old);
    show("old of ignore", &old);
    query("ignored", SIGUSR1);
    a.sa_handler = two;
    sigaction(SIGRTMIN + 1, &a, NULL);
    query("rt", SIGRTMIN + 1);
    sigaction(SIGSEGV, &a, &old);
    show("segv old", &old);
    query("segv", SIGSEGV);
    printf("kill: %d\n", sigaction(SIGKILL, &a, NULL));
    printf("signal: %s", name_of(signal(SIGHUP, one)));
    printf(" %s", name_of(signal(SIGHUP, two)));
    printf(" %s\n", name_of(signal(SIGHUP, SIG_DFL)));
    query("signal", SIGHUP);
    signal(SIGHUP, one);
    query("signal again", SIGHUP);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (what old programs call) */
    siginterrupt(SIGHUP, 1);
#pragma GCC diagnostic pop
    query("siginterrupt", SIGHUP);
    printf("sysv_signal: %s", name_of(sysv_signal(SIGHUP, two)));
    printf(" %s\n", name_of(sysv_signal(SIGHUP, two)));
    query("sysv_signal", SIGHUP);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    printf("sigset: %s", name_of(sigset(SIGURG, one)));
    printf(" %s", name_of(sigset(SIGURG, SIG_HOLD)));
    printf(" %s", name_of(sigset(SIGURG, two)));
    printf(" %s\n", name_of(sigset(SIGURG, SIG_DFL)));
    printf("sigignore: %d\n", sigignore(SIGURG));
#pragma GCC diagnostic pop
    query("sigignore", SIGURG);
    nodefer(0);
    nodefer(SA_NODEFER);
    fflush(stdout);
    reset_hand();
}

/* ---------------------------------------------------------------------------------------- */
/* segv */

static pthread_mutex_t *protected;
static volatile sig_atomic_t faults;

static void unprotect(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)uctx;
    faults++;
    long page = sysconf(_SC_PAGESIZE);
    mprotect((void *)((uintptr_t)info->si_addr & ~(uintptr_t)(page - 1)), (size_t)page,
             PROT_READ | PROT_WRITE);
}

static void segv(void)
{
    long page = sysconf(_SC_PAGESIZE);
    protected = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    pthread_mutex_init(protected, NULL);
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = unprotect;
    a.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &a, NULL);
    mprotect(protected, (size_t)page, PROT_READ);
    int rc = pthread_mutex_lock(protected);
    printf("lock -> %d, faults %d\n", rc, (int)faults);
    pthread_mutex_unlock(protected);
}

/* ---------------------------------------------------------------------------------------- */
/* errno */

#define SENTINEL ERANGE
static atomic_int handled, wrong_in_handler;

static void uses_errno(int sig)
{
    (void)sig;
    int saved = errno;
    if (saved != SENTINEL)
        atomic_fetch_add(&wrong_in_handler, 1);
    if (write(-1, "", 1) < 0 && errno != EBADF) /* sets errno */
        atomic_fetch_add(&wrong_in_handler, 1);
    atomic_fetch_add(&handled, 1);
    errno = saved;
}

static void *signaller(void *arg)
{
    pthread_t target = *(pthread_t *)arg;
    while (!atomic_load(&stop))
        pthread_kill(target, SIGUSR1);
    return NULL;
}

static void errno_kept(void)
{
    pthread_t self = pthread_self(), th;
    set_handler(SIGUSR1, uses_errno, 0);
    for (int i = 0; i < 4; i++)
        pthread_mutex_init(&locks[i], NULL);
    errno = SENTINEL;
    pthread_create(&th, NULL, signaller, &self);
    int wrong = 0;
    errno = SENTINEL;
    for (int n = 0; n < 200000 || atomic_load(&handled) < 1000; n++) {
        pthread_mutex_lock(&locks[n % 3]);
        wrong += errno != SENTINEL;
        pthread_mutex_lock(&locks[3]);
        wrong += errno != SENTINEL;
        pthread_mutex_unlock(&locks[3]);
        wrong += errno != SENTINEL;
        pthread_mutex_unlock(&locks[n % 3]);
        wrong += errno != SENTINEL;
        errno = SENTINEL;
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    printf("errno changed by a lock call: %d, wrong in the handler: %d\n", wrong,
           atomic_load(&wrong_in_handler));
}

/* ---------------------------------------------------------------------------------------- */
/* rt-queue */

#define QUEUED 20000
static atomic_int received, out_of_order;

static void takes_value(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)uctx;
    if (info->si_value.sival_int != atomic_load(&received))
        atomic_fetch_add(&out_of_order, 1);
    atomic_fetch_add(&received, 1);
}

static void *locker(void *arg)
{
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN);
    pthread_sigmask(SIG_UNBLOCK, &rt, NULL);
    (void)arg;
    for (unsigned n = 0; atomic_load(&received) < QUEUED; n++) {
        pthread_mutex_lock(&locks[n % 8]);
        pthread_mutex_lock(&locks[8]);
        pthread_mutex_unlock(&locks[8]);
        pthread_mutex_unlock(&locks[n % 8]);
    }
    return NULL;
}

static void rt_queue(void)
{
    pthread_t th;
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN);
    pthread_sigmask(SIG_BLOCK, &rt, NULL); /* main's own: only the locker takes them */
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = takes_value;
    a.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &a, NULL);
    for (int i = 0; i < 9; i++)
        pthread_mutex_init(&locks[i], NULL);
    pthread_create(&th, NULL, locker, NULL);
    for (int i = 0; i < QUEUED; i++) {
        while (pthread_sigqueue(th, SIGRTMIN, (union sigval){.sival_int = i}) == EAGAIN)
            sched_yield(); /* the queue is full: the locker takes them meanwhile */
    }
    pthread_join(th, NULL);
    printf("received %d, out of order %d\n", atomic_load(&received),
           atomic_load(&out_of_order));
}

/* ---------------------------------------------------------------------------------------- */
/* jump */

#define JUMPS 2000
static sigjmp_buf top;
static volatile sig_atomic_t jumps;
static pthread_mutex_t ja = PTHREAD_MUTEX_INITIALIZER, jb = PTHREAD_MUTEX_INITIALIZER;

static void jump_to_top(int sig)
{
    (void)sig;
    jumps++;
    siglongjmp(top, 1);
}

/* Lets go of a or b where the jump left it held (a trylock of a normal mutex this thread
 * holds answers EBUSY). */
static void let_go(pthread_mutex_t *m)
{
    int rc = pthread_mutex_trylock(m);
    if (rc == 0 || rc == EBUSY)
        pthread_mutex_unlock(m);
}

static void *new_edges(void *arg)
{
    (void)arg;
    static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
    while (!atomic_load(&stop)) {
        pthread_mutex_t fresh;
        pthread_mutex_init(&fresh, NULL);
        pthread_mutex_lock(&outer);
        pthread_mutex_lock(&fresh);
        pthread_mutex_unlock(&fresh);
        pthread_mutex_unlock(&outer);
        pthread_mutex_destroy(&fresh);
    }
    return NULL;
}

static void jump(void)
{
    pthread_t th;
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL); /* the other thread's for good */
    pthread_create(&th, NULL, new_edges, NULL);
    pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
    set_handler(SIGALRM, jump_to_top, 0);
    struct itimerval every = {{0, 50}, {0, 50}}, off = {{0, 0}, {0, 0}};
    if (sigsetjmp(top, 1) == 0)
        setitimer(ITIMER_REAL, &every, NULL);
    let_go(&jb);
    let_go(&ja);
    while (jumps < JUMPS) {
        pthread_mutex_lock(&ja);
        pthread_mutex_lock(&jb);
        pthread_mutex_unlock(&jb);
        pthread_mutex_unlock(&ja);
    }
    setitimer(ITIMER_REAL, &off, NULL);
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    printf("jumps: %d\n", JUMPS);
    pthread_mutex_lock(&jb); /* the other way: an inversion, reported */
    pthread_mutex_lock(&ja);
    pthread_mutex_unlock(&ja);
    pthread_mutex_unlock(&jb);
}

#define NEST_ROUNDS 200000
static pthread_mutex_t nest_locks[64], handlers_own = PTHREAD_MUTEX_INITIALIZER;
static atomic_long counted, locked;

static void counts(int sig)
{
    (void)sig;
    atomic_fetch_add(&counted, 1);
}

static void locks_own(int sig)
{
    (void)sig;
    pthread_mutex_lock(&handlers_own);
    pthread_mutex_unlock(&handlers_own);
    atomic_fetch_add(&locked, 1);
}

/* sig to this thread every ns, by a timer of its own; 0 when it cannot be made. */
static int thread_timer(int sig, long ns, timer_t *tm)
{
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = sig};
    struct itimerspec every = {{0, ns}, {0, ns}};
    ev._sigev_un._tid = gettid();
    return timer_create(CLOCK_MONOTONIC, &ev, tm) == 0 && timer_settime(*tm, 0, &every, NULL) == 0;
}

static void nest(void)
{
    timer_t alrm, usr1;
    long blocked_at = -1;
    for (int i = 0; i < 64; i++)
        pthread_mutex_init(&nest_locks[i], NULL);
    set_handler(SIGALRM, counts, 0);
    set_handler(SIGUSR1, locks_own, 0);
    if (!thread_timer(SIGALRM, 31000, &alrm) || !thread_timer(SIGUSR1, 37000, &usr1)) {
        puts("no timers");
        return;
    }
    for (long i = 0; i < NEST_ROUNDS && blocked_at < 0; i++) {
        sigset_t now;
        pthread_mutex_lock(&nest_locks[0]);
        pthread_mutex_lock(&nest_locks[1 + i % 63]);
        pthread_mutex_unlock(&nest_locks[1 + i % 63]);
        pthread_mutex_unlock(&nest_locks[0]);
        pthread_sigmask(SIG_BLOCK, NULL, &now);
        if (sigismember(&now, SIGALRM) || sigismember(&now, SIGUSR1))
            blocked_at = i;
    }
    timer_delete(alrm);
    timer_delete(usr1);
    if (blocked_at >= 0)
        printf("blocked after round %ld\n", blocked_at);
    else
        puts("never blocked");
    printf("handlers ran: %s\n", atomic_load(&counted) && atomic_load(&locked) ? "both" : "not both");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "stw"))
        stop_the_world(0);
    else if (!strcmp(s, "stw-fork"))
        stop_the_world(1);
    else if (!strcmp(s, "sigaction"))
        sigaction_round_trip();
    else if (!strcmp(s, "segv"))
        segv();
    else if (!strcmp(s, "errno"))
        errno_kept();
    else if (!strcmp(s, "rt-queue"))
        rt_queue();
    else if (!strcmp(s, "jump"))
        jump();
    else if (!strcmp(s, "nest"))
        nest();
    else
        return 2;
    puts("done");
    return 0;
}
