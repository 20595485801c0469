/*
 * peer_shapes.c - more shapes from the peers' suites (Helgrind's, DRD's, ThreadSanitizer's,
 * lockdep's), written as small programs of our own, chosen by name:
 *   peer_shapes NAME
 *   - memory reused for a lock with no init and no destroy the tracer sees: a thread-local
 *     mutex of a joined thread and of the next thread (glibc hands it the cached stack, so
 *     the mutex has the same address), a mutex in a mapping unmapped and mapped again. Each
 *     is taken in opposite orders with one global mutex: two locks, not one, so no inversion.
 *   - pthread_atfork handlers that lock everything before a fork and unlock it on both
 *     sides (the usual way to fork with locks): the child's unlocks are its own.
 *   - a signal handler that locks a mutex its thread holds (lockdep's "inconsistent usage",
 *     an interrupt taking a lock its context holds): a real self-deadlock; and the legal
 *     neighbour, a handler that tries the lock and goes without.
 *   - hand-over-hand locking (lock coupling) along a list: two threads walking it forward at
 *     once are correct; one walking it backward inverts every pair.
 *   - a condition variable signalled without its mutex held (POSIX allows it).
 *   - priority-inheritance mutexes (glibc locks them through the kernel, FUTEX_LOCK_PI): an
 *     AB-BA between two threads is a deadlock like any other; trylock and an error-checking
 *     relock give what libc gives.
 *   - a timed join (pthread_timedjoin_np) of a thread that waits for a lock the joiner
 *     holds: the join times out, nothing is stuck.
 *   - a signal handler that unlocks the mutex its own thread waits for, which the joiner
 *     holds (glibc lets any thread unlock a normal mutex; ThreadSanitizer's
 *     signal_in_futex_wait, with a futex of its own): a bad unlock, and no deadlock.
 *   - a signal handler that siglongjmps out of its thread's lock call (an alarm as a lock
 *     timeout, in old code; undefined, and harmless with glibc's mutexes): the thread then
 *     holds a lock main waits for, and waits for nothing (or sleeps in condition waits);
 *     or, rounds of it, exits with that wait left, and main joins it.
 *   - a signal handler that runs for a while (300 ms; 2 s) in a thread blocked on a lock,
 *     while main closes an AB-BA cycle with it: the thread is not asleep in its wait when
 *     main's check looks, nor one grace later (nor 20), and is back in it after that: a
 *     deadlock all the same.
 *   - a signal handler that waits for a lock while its thread is blocked on another (lockdep's
 *     irq taking a lock on a CPU that spins on one): the thread waits for the handler's lock
 *     until the handler returns, not for the one it was blocked on. A handler holding one
 *     lock and waiting for a running thread's second, while main, holding what the thread
 *     was blocked on, asks for the first, is no deadlock; a handler waiting for a lock whose
 *     holder asks for one the thread holds is one. And a handler that waits in a thread whose
 *     wait closed a cycle through a condition variable's last signaller, while other threads
 *     still run: once they stall, that cycle is still reported.
 *   - the same two deep: a handler's wait interrupted by a handler of another signal that
 *     waits in turn. The innermost wait is the thread's: a cycle through it is a deadlock,
 *     and one through the wait it interrupted is none while it lasts.
 *   - a thread whose lock wait was left by an alarm's siglongjmp, or whose handler runs in
 *     it, sleeping where no lock of the cycle is (a semaphore, a raw futex, a pipe's read)
 *     holding what main asks for, until a thread outside the cycle wakes it: no deadlock;
 *     the same through a condition variable's last signaller, woken by a child process.
 * Each scenario prints what its calls returned and ends with "done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apis/poll.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER, first = PTHREAD_MUTEX_INITIALIZER,
                       second = PTHREAD_MUTEX_INITIALIZER;

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what,
           rc == 0 ? "0" : rc == EBUSY ? "EBUSY" : rc == EDEADLK ? "EDEADLK" : strerror(rc));
    fflush(stdout);
}

/* Takes `outer`, then `inner`, and lets both go. */
NOINLINE static void nest(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

/* ---- address reuse without init or destroy ---- */

static __thread pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;

static void *own_then_global(void *where)
{
    *(void **)where = &mine;
    nest(&mine, &global);
    return NULL;
}

static void *global_then_own(void *where)
{
    *(void **)where = &mine;
    nest(&global, &mine);
    return NULL;
}

NOINLINE static void thread_local_reuse(void)
{
    void *a, *b;
    pthread_t t;
    pthread_create(&t, NULL, own_then_global, &a);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, global_then_own, &b);
    pthread_join(t, NULL);
    printf("same address: %s\n", a == b ? "yes" : "no");
}

NOINLINE static void mapping_reuse(void)
{
    void *at[2];
    for (int round = 0; round < 2; round++) {
        pthread_mutex_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        at[round] = m; /* zero bytes: a mutex as PTHREAD_MUTEX_INITIALIZER makes it */
        if (round == 0)
            nest(m, &global);
        else
            nest(&global, m);
        munmap(m, 4096);
    }
    printf("same address: %s\n", at[0] == at[1] ? "yes" : "no");
}

/* ---- fork with every lock taken by atfork handlers ---- */

static void lock_both(void)
{
    pthread_mutex_lock(&first);
    pthread_mutex_lock(&second);
}

static void unlock_both(void)
{
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
}

NOINLINE static void atfork_handlers(void)
{
    pthread_atfork(lock_both, unlock_both, unlock_both);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        nest(&first, &second);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    nest(&first, &second);
}

/* ---- signal handlers and the locks their thread holds ---- */

static int handler_tries;

static void take_first(int sig)
{
    (void)sig;
    if (handler_tries) {
        int rc = pthread_mutex_trylock(&first);
        result("handler's trylock", rc);
        if (rc == 0)
            pthread_mutex_unlock(&first);
        return;
    }
    int rc = pthread_mutex_lock(&first);
    result("handler's lock", rc);
    if (rc == 0)
        pthread_mutex_unlock(&first);
}

NOINLINE static void signal_while_held(int tries)
{
    struct sigaction sa = {.sa_handler = take_first};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    handler_tries = tries;
    pthread_mutex_lock(&first);
    raise(SIGUSR1);
    pthread_mutex_unlock(&first);
}

/* ---- hand-over-hand locking ---- */

#define NODES 8
#define WALKS 100
static pthread_mutex_t node[NODES];

/* From node `from` one step at a time (dir +1 or -1), holding the next before letting go of
 * the last. */
static void walk(int from, int dir)
{
    int i = from;
    pthread_mutex_lock(&node[i]);
    for (int k = 1; k < NODES; k++) {
        pthread_mutex_lock(&node[i + dir]);
        pthread_mutex_unlock(&node[i]);
        i += dir;
    }
    pthread_mutex_unlock(&node[i]);
}

NOINLINE static void walk_forward(void)
{
    walk(0, 1);
}

NOINLINE static void walk_backward(void)
{
    walk(NODES - 1, -1);
}

static void *forward_walker(void *arg)
{
    (void)arg;
    for (int i = 0; i < WALKS; i++)
        walk_forward();
    return NULL;
}

NOINLINE static void hand_over_hand(int backward)
{
    pthread_t t[2];
    for (int i = 0; i < NODES; i++)
        pthread_mutex_init(&node[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, forward_walker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    if (backward)
        walk_backward();
}

/* ---- a condition variable signalled without its mutex ---- */

static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int ready;
static blocked_probe waiter;

static void *signal_unheld(void *arg)
{
    (void)arg;
    blocked_until(&waiter);
    pthread_mutex_lock(&first);
    ready = 1;
    pthread_mutex_unlock(&first);
    result("signal", pthread_cond_signal(&changed));
    return NULL;
}

NOINLINE static void cond_signal_unheld(void)
{
    pthread_t t;
    pthread_create(&t, NULL, signal_unheld, NULL);
    pthread_mutex_lock(&second);
    pthread_mutex_lock(&first);
    blocked_announce_on(&waiter, &changed, sizeof changed);
    while (!ready)
        pthread_cond_wait(&changed, &first);
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
    pthread_join(t, NULL);
}

/* ---- priority-inheritance mutexes ---- */

static pthread_mutex_t pi_a, pi_b;
static pthread_barrier_t both_hold;
static blocked_probe other_waits;

static void pi_init(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    pthread_mutexattr_settype(&attr, type);
    pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
}

NOINLINE static void pi_legal(void)
{
    pi_init(&pi_a, PTHREAD_MUTEX_NORMAL);
    pi_init(&pi_b, PTHREAD_MUTEX_ERRORCHECK);
    result("lock a", pthread_mutex_lock(&pi_a));
    result("lock b", pthread_mutex_lock(&pi_b));
    result("trylock a", pthread_mutex_trylock(&pi_a));
    result("trylock b", pthread_mutex_trylock(&pi_b));
    result("unlock b", pthread_mutex_unlock(&pi_b));
    result("unlock a", pthread_mutex_unlock(&pi_a));
    nest(&pi_a, &pi_b);
    result("destroy a", pthread_mutex_destroy(&pi_a));
    result("destroy b", pthread_mutex_destroy(&pi_b));
}

NOINLINE static void *pi_b_then_a(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pi_b);
    pthread_barrier_wait(&both_hold);
    blocked_announce_on(&other_waits, &pi_a, sizeof pi_a);
    int rc = pthread_mutex_lock(&pi_a);
    result("other's lock of a", rc);
    if (rc == 0)
        pthread_mutex_unlock(&pi_a);
    pthread_mutex_unlock(&pi_b);
    return NULL;
}

/* Main holds a and asks for b once the other thread, holding b, sleeps asking for a. */
NOINLINE static void pi_abba(void)
{
    pthread_t t;
    pi_init(&pi_a, PTHREAD_MUTEX_NORMAL);
    pi_init(&pi_b, PTHREAD_MUTEX_NORMAL);
    pthread_barrier_init(&both_hold, NULL, 2);
    pthread_create(&t, NULL, pi_b_then_a, NULL);
    pthread_mutex_lock(&pi_a);
    pthread_barrier_wait(&both_hold);
    blocked_until(&other_waits);
    int rc = pthread_mutex_lock(&pi_b);
    result("main's lock of b", rc);
    if (rc == 0)
        pthread_mutex_unlock(&pi_b);
    pthread_mutex_unlock(&pi_a);
    pthread_join(t, NULL);
}

/* ---- a timed join of a thread that waits for the joiner's lock ---- */

static void *take_first_once(void *arg)
{
    (void)arg;
    blocked_announce_on(&other_waits, &first, sizeof first);
    pthread_mutex_lock(&first);
    pthread_mutex_unlock(&first);
    return NULL;
}

NOINLINE static void timed_join_holding(void)
{
    pthread_t t;
    pthread_mutex_lock(&first);
    pthread_create(&t, NULL, take_first_once, NULL);
    blocked_until(&other_waits);
    struct timespec deadline = ms_from_now(20);
    result("timedjoin", pthread_timedjoin_np(t, NULL, &deadline));
    result("tryjoin", pthread_tryjoin_np(t, NULL));
    pthread_mutex_unlock(&first);
    result("join", pthread_join(t, NULL));
}

/* ---- a signal handler releases the mutex its own thread waits for ---- */

static void release_first(int sig)
{
    (void)sig;
    pthread_mutex_unlock(&first);
}

/* Each round the waiter is signalled while it sleeps in its lock and main joins it at once:
 * the join's check finds main holding what the waiter waits for, with the handler that
 * releases it on its way. */
NOINLINE static void signal_releases_wait(void)
{
    struct sigaction sa = {.sa_handler = release_first};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    for (int round = 0; round < 5; round++) {
        pthread_t t;
        atomic_store(&other_waits.tid, 0);
        pthread_mutex_lock(&first);
        pthread_create(&t, NULL, take_first_once, NULL);
        blocked_until(&other_waits);
        pthread_kill(t, SIGUSR2);
        result("join", pthread_join(t, NULL));
    }
}

/* ---- a signal handler that jumps out of its thread's lock call ---- */

static sigjmp_buf jump_back;
static blocked_probe main_waits;
static _Atomic int second_taken;
static int sleep_holding; /* the thread then sleeps in timed condition waits until main waits */
static pthread_mutex_t sleep_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cv = PTHREAD_COND_INITIALIZER;

static int main_waits_for_second(void)
{
    char path[64];
    uintptr_t word;
    int tid = atomic_load(&main_waits.tid);
    if (!tid)
        return 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return blocked_futex_word_at(path, &word) && word - (uintptr_t)&second < sizeof second;
}

static void jump_out(int sig)
{
    (void)sig;
    siglongjmp(jump_back, 1);
}

/* Out of its wait for `first` by the jump, the thread takes `second` and keeps it until main
 * waits for it. */
static void *lock_until_signalled(void *arg)
{
    (void)arg;
    if (sigsetjmp(jump_back, 1) == 0) {
        blocked_announce_on(&other_waits, &first, sizeof first);
        pthread_mutex_lock(&first);
        puts("first taken");
    }
    pthread_mutex_lock(&second);
    atomic_store(&second_taken, 1);
    if (sleep_holding) {
        pthread_mutex_lock(&sleep_mutex);
        while (!main_waits_for_second()) {
            struct timespec d = ms_from_now(10);
            pthread_cond_timedwait(&sleep_cv, &sleep_mutex, &d);
        }
        pthread_mutex_unlock(&sleep_mutex);
    } else {
        blocked_until(&main_waits);
    }
    pthread_mutex_unlock(&second);
    return NULL;
}

NOINLINE static void signal_jumps_out(int sleeps)
{
    sleep_holding = sleeps;
    struct sigaction sa = {.sa_handler = jump_out};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    pthread_t t;
    atomic_store(&other_waits.tid, 0);
    pthread_mutex_lock(&first);
    pthread_create(&t, NULL, lock_until_signalled, NULL);
    blocked_until(&other_waits);
    pthread_kill(t, SIGALRM);
    while (!atomic_load(&second_taken))
        sched_yield();
    blocked_announce_on(&main_waits, &second, sizeof second);
    result("lock of second", pthread_mutex_lock(&second));
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
    result("join", pthread_join(t, NULL));
}

/* ---- a thread whose wait is stale or interrupted sleeps on a futex the tracer does not see ----
 * unseen-after-jump-*: the thread holds `first` and waits for `second` (main keeps it); an
 * alarm's handler jumps out of that lock call, and the thread then sleeps where the tracer
 * does not look (a semaphore, a raw futex, a pipe's read) until a poster wakes it once main
 * asks for `first`; awake, it lets `first` go. unseen-in-handler-*: the handler sleeps so
 * itself, then jumps. Main's wait is no deadlock: the thread's published wait for `second`
 * is stale, or interrupted, and it sleeps on none of that lock's words. */
enum unseen { UNSEEN_SEM, UNSEEN_FUTEX, UNSEEN_PIPE };
static enum unseen unseen_how;
static int unseen_in_handler;
static sem_t unseen_sem;
static _Atomic int unseen_word;
static int unseen_pipe[2];
static blocked_probe unseen_sleeps, first_asked;

/* Whether thread tid sleeps in the system call nr now. */
static int in_syscall(int tid, long nr)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return blocked_syscall_line(path, buf, sizeof buf) && strtol(buf, NULL, 10) == nr;
}

static void unseen_sleep(void)
{
    char byte;
    switch (unseen_how) {
    case UNSEEN_SEM:
        blocked_announce_on(&unseen_sleeps, &unseen_sem, sizeof unseen_sem);
        while (sem_wait(&unseen_sem) != 0)
            ;
        break;
    case UNSEEN_FUTEX:
        blocked_announce_on(&unseen_sleeps, &unseen_word, sizeof unseen_word);
        while (!atomic_load(&unseen_word))
            syscall(SYS_futex, &unseen_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        break;
    case UNSEEN_PIPE:
        blocked_announce(&unseen_sleeps);
        while (read(unseen_pipe[0], &byte, 1) != 1)
            ;
        break;
    }
}

static void unseen_wake(void)
{
    switch (unseen_how) {
    case UNSEEN_SEM:
        sem_post(&unseen_sem);
        break;
    case UNSEEN_FUTEX:
        atomic_store(&unseen_word, 1);
        syscall(SYS_futex, &unseen_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        break;
    case UNSEEN_PIPE:
        if (write(unseen_pipe[1], "x", 1) != 1)
            perror("write");
        break;
    }
}

/* Returns once the thread sleeps where unseen_sleep put it. */
static void unseen_until_asleep(void)
{
    if (unseen_how != UNSEEN_PIPE) {
        blocked_until(&unseen_sleeps);
        return;
    }
    int tid;
    while ((tid = atomic_load(&unseen_sleeps.tid)) == 0 || !in_syscall(tid, SYS_read))
        sched_yield();
}

static void unseen_handler(int sig)
{
    (void)sig;
    if (unseen_in_handler)
        unseen_sleep();
    siglongjmp(jump_back, 1);
}

static void *first_then_second_jumped(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&first);
    if (sigsetjmp(jump_back, 1) == 0) {
        blocked_announce_on(&other_waits, &second, sizeof second);
        pthread_mutex_lock(&second);
        puts("second taken");
    } else if (!unseen_in_handler) {
        unseen_sleep();
    }
    pthread_mutex_unlock(&first);
    return NULL;
}

static void *wake_once_asked(void *arg)
{
    (void)arg;
    blocked_until(&first_asked);
    unseen_wake();
    return NULL;
}

NOINLINE static void unseen_sleep_holding(enum unseen how, int in_handler)
{
    unseen_how = how;
    unseen_in_handler = in_handler;
    sem_init(&unseen_sem, 0, 0);
    if (pipe(unseen_pipe) != 0)
        perror("pipe");
    struct sigaction sa = {.sa_handler = unseen_handler};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    pthread_t t, poster;
    pthread_mutex_lock(&second);
    pthread_create(&t, NULL, first_then_second_jumped, NULL);
    blocked_until(&other_waits);
    pthread_kill(t, SIGALRM);
    unseen_until_asleep();
    pthread_create(&poster, NULL, wake_once_asked, NULL);
    blocked_announce_on(&first_asked, &first, sizeof first);
    result("lock of first", pthread_mutex_lock(&first));
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
    pthread_join(t, NULL);
    pthread_join(poster, NULL);
}

/* unseen-hinted-pipe: B holds `second` and waits on hint_cv, which A signalled last; A's lock
 * of `second` is left by the alarm's jump, and A then reads a pipe that a child process
 * writes to, and signals hint_cv. Main joins A: every thread of the process sleeps, and only
 * the child can wake A, which the stall test (other threads than the cycle's) does not see.
 * The child writes 600 ms after the fork, which main follows with its join at once: the
 * watchdog has looked at the cycle by then; a shorter wait only makes a false report less
 * likely, the verdict does not depend on it. */
static pthread_mutex_t hint_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hint_cv = PTHREAD_COND_INITIALIZER;
static int hint_flag;
static _Atomic int hint_step; /* 1: B holds `second`; 2: A has signalled */
static blocked_probe b_waits;

static void *hold_second_and_wait(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&second);
    atomic_store(&hint_step, 1);
    while (atomic_load(&hint_step) != 2)
        sched_yield();
    pthread_mutex_lock(&hint_mutex);
    blocked_announce_on(&b_waits, &hint_cv, sizeof hint_cv);
    while (!hint_flag)
        pthread_cond_wait(&hint_cv, &hint_mutex);
    pthread_mutex_unlock(&hint_mutex);
    pthread_mutex_unlock(&second);
    return NULL;
}

static void *signal_then_second_jumped(void *arg)
{
    (void)arg;
    while (atomic_load(&hint_step) != 1)
        sched_yield();
    pthread_mutex_lock(&hint_mutex);
    pthread_cond_signal(&hint_cv); /* nobody waits yet: only the hint is left */
    pthread_mutex_unlock(&hint_mutex);
    atomic_store(&hint_step, 2);
    blocked_until(&b_waits);
    if (sigsetjmp(jump_back, 1) == 0) {
        blocked_announce_on(&other_waits, &second, sizeof second);
        pthread_mutex_lock(&second);
        puts("second taken");
    }
    unseen_sleep();
    pthread_mutex_lock(&hint_mutex);
    hint_flag = 1;
    pthread_cond_signal(&hint_cv);
    pthread_mutex_unlock(&hint_mutex);
    return NULL;
}

NOINLINE static void unseen_hinted(void)
{
    unseen_how = UNSEEN_PIPE;
    if (pipe(unseen_pipe) != 0)
        perror("pipe");
    struct sigaction sa = {.sa_handler = unseen_handler};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    pthread_t a, b;
    pthread_create(&b, NULL, hold_second_and_wait, NULL);
    pthread_create(&a, NULL, signal_then_second_jumped, NULL);
    blocked_until(&other_waits);
    pthread_kill(a, SIGALRM);
    unseen_until_asleep();
    pid_t child = fork();
    if (child == 0) {
        nanosleep(&(struct timespec){0, 600 * 1000000L}, NULL);
        unseen_wake();
        _exit(0);
    }
    result("join", pthread_join(a, NULL));
    pthread_join(b, NULL);
    waitpid(child, NULL, 0);
}

/* signal-jumps-out-exits: rounds of a thread that holds `rw` for read and waits for `second`
 * (main keeps it), which an alarm's handler jumps out of; the thread then exits, its wait
 * left published, and main joins it (a cycle through the left wait, looked at again a grace
 * later, the thread gone), then holds `global` while a helper waits for it. */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static blocked_probe helper_waits;

static void *read_then_second_jumped(void *arg)
{
    (void)arg;
    pthread_rwlock_rdlock(&rw);
    if (sigsetjmp(jump_back, 1) == 0) {
        blocked_announce_on(&other_waits, &second, sizeof second);
        pthread_mutex_lock(&second);
        puts("second taken");
    }
    pthread_rwlock_unlock(&rw);
    return NULL;
}

static void *take_global_once(void *arg)
{
    (void)arg;
    blocked_announce_on(&helper_waits, &global, sizeof global);
    pthread_mutex_lock(&global);
    pthread_mutex_unlock(&global);
    return NULL;
}

NOINLINE static void signal_jumps_out_exits(int rounds)
{
    struct sigaction sa = {.sa_handler = jump_out};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    for (int round = 0; round < rounds; round++) {
        pthread_t t, helper;
        atomic_store(&other_waits.tid, 0);
        atomic_store(&helper_waits.tid, 0);
        pthread_mutex_lock(&second);
        pthread_create(&t, NULL, read_then_second_jumped, NULL);
        blocked_until(&other_waits);
        pthread_kill(t, SIGALRM);
        pthread_join(t, NULL);
        pthread_mutex_lock(&global);
        pthread_create(&helper, NULL, take_global_once, NULL);
        blocked_until(&helper_waits);
        pthread_mutex_unlock(&global);
        pthread_join(helper, NULL);
        pthread_mutex_unlock(&second);
    }
    printf("%d rounds\n", rounds);
}

/* handler-runs-in-wait: `busy_a` holder waits for busy_b while its handler runs; main holds
 * busy_b and asks for busy_a once the handler has begun. */
static pthread_mutex_t busy_a = PTHREAD_MUTEX_INITIALIZER, busy_b = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe busy_waits;
static atomic_int busy_handling;
static long busy_ns;

static void busy_handler(int sig)
{
    (void)sig;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    atomic_store(&busy_handling, 1);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec < busy_ns);
}

static void *busy_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&busy_a);
    blocked_announce_on(&busy_waits, &busy_b, sizeof busy_b);
    pthread_mutex_lock(&busy_b);
    return NULL;
}

NOINLINE static void handler_runs_in_wait(long ms)
{
    busy_ns = ms * 1000000L;
    struct sigaction sa = {.sa_handler = busy_handler};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    pthread_mutex_lock(&busy_b);
    pthread_t t;
    pthread_create(&t, NULL, busy_waiter, NULL);
    blocked_until(&busy_waits);
    pthread_kill(t, SIGUSR2);
    while (!atomic_load(&busy_handling))
        sched_yield();
    result("lock of busy_a", pthread_mutex_lock(&busy_a));
}

/* ---- a signal handler waits for a lock while its thread waits for another ---- */

static pthread_mutex_t held_up = PTHREAD_MUTEX_INITIALIZER; /* the wait the handler interrupts */
static blocked_probe in_handler, asker;

/* The handlers: `inner` on SIGUSR2, or, `deep`, `outer` on SIGUSR2 and `inner` on SIGUSR1,
 * which may interrupt it (two deep: a handler's wait interrupted by a handler of another
 * signal that waits in turn; the innermost wait is the thread's). */
static blocked_probe in_outer; /* the outer handler waits */

static void set_handlers(void (*outer)(int), void (*inner)(int), int deep)
{
    struct sigaction sa = {.sa_handler = deep ? outer : inner};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = inner;
    if (deep)
        sigaction(SIGUSR1, &sa, NULL);
}

/* Sends the thread, blocked in its wait, the signal of the handler that waits, or, `deep`, of
 * the outer one, then once that waits, of the inner one. */
static void interrupt(pthread_t t, int deep)
{
    pthread_kill(t, SIGUSR2);
    if (deep) {
        blocked_until(&in_outer);
        pthread_kill(t, SIGUSR1);
    }
}

/* An outer handler's wait for m, announced on p. */
static void handler_takes(blocked_probe *p, pthread_mutex_t *m, const char *what)
{
    blocked_announce_on(p, m, sizeof *m);
    result(what, pthread_mutex_lock(m));
    pthread_mutex_unlock(m);
}

/* handler-waits-in-wait: the handler takes `global`, then waits for `second`, which a
 * running thread lets go once main waits for `global`. handler-lingers-after-wait: the same,
 * the handler then running on for 500 ms holding `global` (as if preempted), back in the
 * wait for held_up only once it returns. handler-two-deep-waits: that handler nested in an
 * outer one that waits for `third` (main keeps it): main waits for the innermost wait, not
 * for the outer handler's. */
static pthread_mutex_t third = PTHREAD_MUTEX_INITIALIZER;
static long linger_ms;

static void global_then_second(int sig)
{
    (void)sig;
    pthread_mutex_lock(&global);
    blocked_announce_on(&in_handler, &second, sizeof second);
    result("handler's lock of second", pthread_mutex_lock(&second));
    pthread_mutex_unlock(&second);
    nanosleep(&(struct timespec){linger_ms / 1000, linger_ms % 1000 * 1000000L}, NULL);
    pthread_mutex_unlock(&global);
}

static void take_third(int sig)
{
    (void)sig;
    handler_takes(&in_outer, &third, "handler's lock of third");
}

static void *wait_for_held_up(void *arg)
{
    (void)arg;
    blocked_announce_on(&other_waits, &held_up, sizeof held_up);
    result("lock of held_up", pthread_mutex_lock(&held_up));
    pthread_mutex_unlock(&held_up);
    return NULL;
}

static void *keep_second_until_asked(void *arg)
{
    pthread_barrier_t *taken = arg;
    pthread_mutex_lock(&second);
    pthread_barrier_wait(taken);
    blocked_until(&asker);
    pthread_mutex_unlock(&second);
    return NULL;
}

NOINLINE static void handler_waits_in_wait(long linger, int deep)
{
    linger_ms = linger;
    set_handlers(take_third, global_then_second, deep);
    pthread_barrier_t taken;
    pthread_barrier_init(&taken, NULL, 2);
    pthread_t keeper, waiter;
    pthread_create(&keeper, NULL, keep_second_until_asked, &taken);
    pthread_barrier_wait(&taken);
    pthread_mutex_lock(&held_up);
    if (deep)
        pthread_mutex_lock(&third);
    pthread_create(&waiter, NULL, wait_for_held_up, NULL);
    blocked_until(&other_waits);
    interrupt(waiter, deep);
    blocked_until(&in_handler);
    blocked_announce_on(&asker, &global, sizeof global);
    result("lock of global", pthread_mutex_lock(&global));
    pthread_mutex_unlock(&global);
    if (deep)
        pthread_mutex_unlock(&third);
    pthread_mutex_unlock(&held_up);
    pthread_join(keeper, NULL);
    pthread_join(waiter, NULL);
    pthread_barrier_destroy(&taken);
}

/* handler-wait-cycle: the thread holds `first` and waits for held_up (main keeps it, running);
 * its handler waits for `global`, whose holder then asks for `first`. handler-two-deep-cycle:
 * that handler nested in an outer one that waits for `second` (main keeps it too). */
static void take_global(int sig)
{
    (void)sig;
    blocked_announce_on(&in_handler, &global, sizeof global);
    result("handler's lock of global", pthread_mutex_lock(&global));
    pthread_mutex_unlock(&global);
}

static void take_second(int sig)
{
    (void)sig;
    handler_takes(&in_outer, &second, "handler's lock of second");
}

static void *first_then_held_up(void *arg)
{
    pthread_barrier_t *taken = arg;
    pthread_mutex_lock(&first);
    pthread_barrier_wait(taken);
    blocked_announce_on(&other_waits, &held_up, sizeof held_up);
    result("lock of held_up", pthread_mutex_lock(&held_up));
    pthread_mutex_unlock(&held_up);
    pthread_mutex_unlock(&first);
    return NULL;
}

static atomic_int asked;

static void *global_then_first(void *arg)
{
    pthread_barrier_t *taken = arg;
    pthread_mutex_lock(&global);
    pthread_barrier_wait(taken);
    blocked_until(&in_handler);
    blocked_announce_on(&asker, &first, sizeof first);
    int rc = pthread_mutex_lock(&first);
    result("lock of first", rc);
    if (rc == 0)
        pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&global);
    atomic_store(&asked, 1);
    return NULL;
}

NOINLINE static void handler_wait_cycle(int deep)
{
    set_handlers(take_second, take_global, deep);
    pthread_barrier_t taken;
    pthread_barrier_init(&taken, NULL, 3);
    pthread_t waiter, asking;
    pthread_mutex_lock(&held_up);
    if (deep)
        pthread_mutex_lock(&second);
    pthread_create(&waiter, NULL, first_then_held_up, &taken);
    pthread_create(&asking, NULL, global_then_first, &taken);
    pthread_barrier_wait(&taken);
    blocked_until(&other_waits);
    interrupt(waiter, deep);
    /* polled, not joined: main's join would be a wait too, and through the waiter's
     * interrupted wait for held_up it would close a cycle of its own */
    while (!atomic_load(&asked)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (deep)
        pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&held_up);
    pthread_join(asking, NULL);
    pthread_join(waiter, NULL);
    pthread_barrier_destroy(&taken);
}

/* handler-in-deferred-wait: T1 holds `first` and waits on `changed`, which T2 signalled
 * last; T2 then asks for `first` while main runs (a cycle through the signaller hint, not yet
 * stalled); T2's handler waits for `held_up`, which main lets go; main then joins T1, and
 * nothing can run to signal. handler-in-closing-wait: the same, but T1's second condition
 * wait, after T2 has asked for `first`, closes the cycle, and T2's handler waits while the
 * watchdog looks at T1's wait again (and finds no cycle through T2's handler). */
static atomic_int cond_waits;
static blocked_probe t1_waits, t2_waits;
static int t1_closes;

static void take_held_up(int sig)
{
    (void)sig;
    blocked_announce_on(&in_handler, &held_up, sizeof held_up);
    pthread_mutex_lock(&held_up);
    pthread_mutex_unlock(&held_up);
}

static void *hold_first_and_wait(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&first);
    pthread_mutex_lock(&global);
    for (;;) {
        if (t1_closes && atomic_load(&cond_waits) == 1)
            blocked_until(&t2_waits);
        blocked_announce_on(&t1_waits, &changed, sizeof changed);
        atomic_fetch_add(&cond_waits, 1);
        pthread_cond_wait(&changed, &global); /* never signalled again */
    }
    return NULL;
}

static void *signal_then_ask_first(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&global);
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&global);
    while (!t1_closes && atomic_load(&cond_waits) < 2)
        sched_yield();
    if (!t1_closes)
        blocked_until(&t1_waits);
    blocked_announce_on(&t2_waits, &first, sizeof first);
    pthread_mutex_lock(&first);
    return NULL;
}

NOINLINE static void handler_in_deferred_wait(int closes)
{
    struct sigaction sa = {.sa_handler = take_held_up};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    t1_closes = closes;
    pthread_t t1, t2;
    pthread_create(&t1, NULL, hold_first_and_wait, NULL);
    blocked_until(&t1_waits);
    pthread_create(&t2, NULL, signal_then_ask_first, NULL);
    blocked_until(&t2_waits);
    while (closes && atomic_load(&cond_waits) < 2)
        sched_yield();
    blocked_until(&t1_waits);
    pthread_mutex_lock(&held_up);
    pthread_kill(t2, SIGUSR2);
    blocked_until(&in_handler);
    /* The watchdog looks at a deferred wait 1, 2, 4, ... of its 50 ms rounds after the
     * deferral: held this long, the handler is still waiting at one of those looks. A longer
     * hold only makes that surer; the verdict does not depend on it. */
    if (closes)
        nanosleep(&(struct timespec){0, 400 * 1000000L}, NULL);
    pthread_mutex_unlock(&held_up);
    puts("main joins");
    fflush(stdout);
    pthread_join(t1, NULL);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "thread-local-reuse"))
        thread_local_reuse();
    else if (!strcmp(s, "mapping-reuse"))
        mapping_reuse();
    else if (!strcmp(s, "atfork"))
        atfork_handlers();
    else if (!strcmp(s, "signal-relock"))
        signal_while_held(0);
    else if (!strcmp(s, "signal-trylock"))
        signal_while_held(1);
    else if (!strcmp(s, "hand-over-hand"))
        hand_over_hand(0);
    else if (!strcmp(s, "hand-over-hand-backward"))
        hand_over_hand(1);
    else if (!strcmp(s, "cond-signal-unheld"))
        cond_signal_unheld();
    else if (!strcmp(s, "pi-legal"))
        pi_legal();
    else if (!strcmp(s, "pi-abba"))
        pi_abba();
    else if (!strcmp(s, "timed-join-holding"))
        timed_join_holding();
    else if (!strcmp(s, "signal-releases-wait"))
        signal_releases_wait();
    else if (!strcmp(s, "signal-jumps-out"))
        signal_jumps_out(0);
    else if (!strcmp(s, "signal-jumps-out-sleeps"))
        signal_jumps_out(1);
    else if (!strcmp(s, "unseen-after-jump-sem"))
        unseen_sleep_holding(UNSEEN_SEM, 0);
    else if (!strcmp(s, "unseen-after-jump-futex"))
        unseen_sleep_holding(UNSEEN_FUTEX, 0);
    else if (!strcmp(s, "unseen-after-jump-pipe"))
        unseen_sleep_holding(UNSEEN_PIPE, 0);
    else if (!strcmp(s, "unseen-in-handler-sem"))
        unseen_sleep_holding(UNSEEN_SEM, 1);
    else if (!strcmp(s, "unseen-in-handler-futex"))
        unseen_sleep_holding(UNSEEN_FUTEX, 1);
    else if (!strcmp(s, "unseen-in-handler-pipe"))
        unseen_sleep_holding(UNSEEN_PIPE, 1);
    else if (!strcmp(s, "unseen-hinted-pipe"))
        unseen_hinted();
    else if (!strcmp(s, "signal-jumps-out-exits"))
        signal_jumps_out_exits(150);
    else if (!strcmp(s, "handler-runs-in-wait"))
        handler_runs_in_wait(300);
    else if (!strcmp(s, "handler-runs-in-wait-long"))
        handler_runs_in_wait(2000);
    else if (!strcmp(s, "handler-waits-in-wait"))
        handler_waits_in_wait(0, 0);
    else if (!strcmp(s, "handler-lingers-after-wait"))
        handler_waits_in_wait(500, 0);
    else if (!strcmp(s, "handler-wait-cycle"))
        handler_wait_cycle(0);
    else if (!strcmp(s, "handler-two-deep-cycle"))
        handler_wait_cycle(1);
    else if (!strcmp(s, "handler-two-deep-waits"))
        handler_waits_in_wait(0, 1);
    else if (!strcmp(s, "handler-in-deferred-wait"))
        handler_in_deferred_wait(0);
    else if (!strcmp(s, "handler-in-closing-wait"))
        handler_in_deferred_wait(1);
    else {
        fprintf(stderr, "peer_shapes: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
