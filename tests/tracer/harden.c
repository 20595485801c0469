/*
 * harden.c - correct programs that the tracer must neither hang, abort nor mislead (the table
 * of the runtime-hardening issue, one scenario per row):
 *   harden NAME
 * Each prints what its lock calls returned, so meson.build compares the traced run with the
 * native one. Nothing here sleeps to let another thread get somewhere: a thread that has to
 * be blocked first is polled until the kernel shows it asleep in a futex wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apis/poll.h"
#include "vm_bytes.h"

#define NOINLINE __attribute__((noinline))

static void result(const char *what, int rc)
{
    const char *name = rc == 0           ? "0"
                       : rc == EDEADLK   ? "EDEADLK"
                       : rc == EBUSY     ? "EBUSY"
                       : rc == EPERM     ? "EPERM"
                       : rc == ETIMEDOUT ? "ETIMEDOUT"
                                         : strerror(rc);
    printf("%s -> %s\n", what, name);
    fflush(stdout);
}

/* ------------------------------------------------------------------------------------------
 * Row 1: a pthread_atfork prepare handler locks a mutex that another thread holds while that
 * thread takes a lock the tracer has never seen.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t atfork_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t never_seen = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int holder_ready, in_prepare;

static void prepare(void)
{
    atomic_store(&in_prepare, 1);
    pthread_mutex_lock(&atfork_mutex);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&atfork_mutex);
}

static void *hold_during_fork(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&atfork_mutex);
    atomic_store(&holder_ready, 1);
    while (!atomic_load(&in_prepare))
        sched_yield();
    pthread_mutex_lock(&never_seen); /* the forking thread is inside fork() now */
    pthread_mutex_unlock(&never_seen);
    pthread_mutex_unlock(&atfork_mutex);
    return NULL;
}

NOINLINE void atfork_prepare_locks(void)
{
    pthread_t th;
    pthread_atfork(prepare, after_fork, after_fork);
    pthread_create(&th, NULL, hold_during_fork, NULL);
    while (!atomic_load(&holder_ready))
        sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        result("child lock", pthread_mutex_lock(&atfork_mutex));
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    pthread_join(th, NULL);
    printf("child exit %d\n", WEXITSTATUS(status));
}

/* ------------------------------------------------------------------------------------------
 * Row 2: threads exit holding locks (exit-held reports) while another thread forks in a
 * loop. Each thread takes its lock from a call site of its own, so every report has a stack
 * the tracer has not seen before.
 * ---------------------------------------------------------------------------------------- */
#define EXITING_THREADS 120
static pthread_mutex_t exit_locks[EXITING_THREADS];
static _Atomic int forking = 1;
static volatile int site_sink;

#define SITE(n)                                                                            \
    case (n):                                                                              \
        pthread_mutex_lock(m);                                                             \
        site_sink = (n);                                                                   \
        break;
#define SITE10(t)                                                                          \
    SITE(t * 10 + 0) SITE(t * 10 + 1) SITE(t * 10 + 2) SITE(t * 10 + 3) SITE(t * 10 + 4)   \
    SITE(t * 10 + 5) SITE(t * 10 + 6) SITE(t * 10 + 7) SITE(t * 10 + 8) SITE(t * 10 + 9)

NOINLINE void lock_from_site(pthread_mutex_t *m, int site)
{
    switch (site) {
        SITE10(0) SITE10(1) SITE10(2) SITE10(3) SITE10(4) SITE10(5)
        SITE10(6) SITE10(7) SITE10(8) SITE10(9) SITE10(10) SITE10(11)
    }
}

static void *exit_holding(void *arg)
{
    pthread_mutex_t *m = arg;
    lock_from_site(m, (int)(m - exit_locks));
    return NULL;
}

static void *fork_loop(void *arg)
{
    long *forks = arg;
    while (atomic_load(&forking)) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        waitpid(pid, NULL, 0);
        ++*forks;
    }
    return NULL;
}

NOINLINE void exit_held_while_forking(void)
{
    pthread_t forker, th;
    long forks = 0;
    pthread_create(&forker, NULL, fork_loop, &forks);
    for (int i = 0; i < EXITING_THREADS; i++) {
        pthread_mutex_init(&exit_locks[i], NULL);
        pthread_create(&th, NULL, exit_holding, &exit_locks[i]);
        pthread_join(th, NULL);
    }
    atomic_store(&forking, 0);
    pthread_join(forker, NULL);
    printf("%d threads exited holding a lock; forked meanwhile: %s\n", EXITING_THREADS,
           forks > 0 ? "yes" : "no");
}

/* ------------------------------------------------------------------------------------------
 * Row 3: a signal handler takes a contended mutex while its thread is blocked in a traced
 * lock (ThreadSanitizer's signal_in_mutex_lock shape).
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int worker_tid, in_handler;

static void lock_in_handler(int sig)
{
    (void)sig;
    atomic_store(&in_handler, 1);
    pthread_mutex_lock(&contended);
    pthread_mutex_unlock(&contended);
}

static void *block_on_contended(void *arg)
{
    (void)arg;
    atomic_store(&worker_tid, blocked_tid());
    result("worker lock", pthread_mutex_lock(&contended));
    pthread_mutex_unlock(&contended);
    return NULL;
}

NOINLINE void signal_while_blocked(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lock_in_handler;
    sigaction(SIGPROF, &sa, NULL);
    pthread_t th;
    pthread_mutex_lock(&contended);
    pthread_create(&th, NULL, block_on_contended, NULL);
    while (!atomic_load(&worker_tid))
        sched_yield();
    blocked_wait_tid(atomic_load(&worker_tid));
    pthread_kill(th, SIGPROF);
    while (!atomic_load(&in_handler))
        sched_yield();
    blocked_wait_tid(atomic_load(&worker_tid)); /* now in the handler's own wait */
    pthread_mutex_unlock(&contended);
    pthread_join(th, NULL);
    result("main lock", pthread_mutex_lock(&contended));
    pthread_mutex_unlock(&contended);
}

/* ------------------------------------------------------------------------------------------
 * Row 4: pthread_join cancelled while the joiner holds a lock; then another thread blocks.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t joiner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t later_lock = PTHREAD_MUTEX_INITIALIZER;
static int release_pipe[2];

static void *wait_for_pipe(void *arg)
{
    char c;
    (void)arg;
    return read(release_pipe[0], &c, 1) == 1 ? NULL : arg;
}

static void unlock_joiner_lock(void *arg)
{
    (void)arg;
    pthread_mutex_unlock(&joiner_lock);
}

static void *join_holding(void *arg)
{
    pthread_t *target = arg;
    pthread_mutex_lock(&joiner_lock);
    atomic_store(&worker_tid, blocked_tid());
    pthread_cleanup_push(unlock_joiner_lock, NULL);
    pthread_join(*target, NULL);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *lock_later(void *arg)
{
    (void)arg;
    atomic_store(&worker_tid, blocked_tid());
    result("later lock", pthread_mutex_lock(&later_lock));
    pthread_mutex_unlock(&later_lock);
    return NULL;
}

NOINLINE void join_cancelled(void)
{
    pthread_t target, joiner, later;
    void *ret;
    if (pipe(release_pipe) != 0)
        return;
    pthread_create(&target, NULL, wait_for_pipe, NULL);
    pthread_create(&joiner, NULL, join_holding, &target);
    while (!atomic_load(&worker_tid))
        sched_yield();
    blocked_wait_tid(atomic_load(&worker_tid));
    pthread_cancel(joiner);
    pthread_join(joiner, &ret);
    printf("joiner cancelled: %s\n", ret == PTHREAD_CANCELED ? "yes" : "no");
    atomic_store(&worker_tid, 0);
    pthread_mutex_lock(&later_lock);
    pthread_create(&later, NULL, lock_later, NULL);
    while (!atomic_load(&worker_tid))
        sched_yield();
    blocked_wait_tid(atomic_load(&worker_tid));
    pthread_mutex_unlock(&later_lock);
    pthread_join(later, NULL);
    if (write(release_pipe[1], "x", 1) == 1)
        pthread_join(target, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Row 5: writer-preferring rwlock, a timed writer queued, the reader reads again: the writer
 * times out and the read succeeds.
 * ---------------------------------------------------------------------------------------- */
static pthread_rwlock_t wp_rw;

static void *timed_writer(void *arg)
{
    (void)arg;
    struct timespec deadline = ms_from_now(1000);
    atomic_store(&worker_tid, blocked_tid());
    result("timedwrlock", pthread_rwlock_timedwrlock(&wp_rw, &deadline));
    return NULL;
}

NOINLINE void read_again_timed_writer_queued(void)
{
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&wp_rw, &a);
    pthread_rwlock_rdlock(&wp_rw);
    pthread_t th;
    pthread_create(&th, NULL, timed_writer, NULL);
    while (!atomic_load(&worker_tid))
        sched_yield();
    blocked_wait_tid(atomic_load(&worker_tid));
    int rc = pthread_rwlock_rdlock(&wp_rw);
    pthread_join(th, NULL);
    result("rdlock", rc);
    pthread_rwlock_unlock(&wp_rw);
    pthread_rwlock_unlock(&wp_rw);
}

/* ------------------------------------------------------------------------------------------
 * Row 6: a lock freed or abandoned while held; its address becomes a new lock without init.
 * ---------------------------------------------------------------------------------------- */
NOINLINE void heap_mutex_reused(void)
{
    pthread_mutex_t *m = malloc(sizeof *m);
    *m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(m);
    free(m); /* still locked: a bug of its own, but not a deadlock */
    pthread_mutex_t *again = malloc(sizeof *again);
    *again = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    result("heap lock", pthread_mutex_lock(again));
    pthread_mutex_unlock(again);
    free(again);
}

NOINLINE int abandon_on_stack(int round)
{
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int rc = pthread_mutex_lock(&m) | pthread_rwlock_wrlock(&rw);
    __asm__ volatile("" : : "r"(&m), "r"(&rw) : "memory");
    return rc + round * 0; /* returns holding both */
}

NOINLINE void stack_locks_reused(void)
{
    result("stack locks, first frame", abandon_on_stack(0));
    result("stack locks, same frame again", abandon_on_stack(1));
}

/* ------------------------------------------------------------------------------------------
 * Row 7: a non-owner unlock of a recursive or error-checking mutex, refused by libc.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t typed;

static void *unlock_others(void *arg)
{
    (void)arg;
    result("other thread unlocks", pthread_mutex_unlock(&typed));
    return NULL;
}

NOINLINE void refused_unlock(int type)
{
    pthread_mutexattr_t a;
    pthread_t th;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    pthread_mutex_init(&typed, &a);
    pthread_mutex_lock(&typed);
    pthread_create(&th, NULL, unlock_others, NULL);
    pthread_join(th, NULL);
    if (type == PTHREAD_MUTEX_ERRORCHECK)
        result("owner relocks", pthread_mutex_lock(&typed));
    result("owner unlocks", pthread_mutex_unlock(&typed));
}

/* ------------------------------------------------------------------------------------------
 * Row 8: the tracer's memory runs out. The address space is capped just above what the
 * program uses, then it takes and releases many locks, which need no memory of its own.
 * ---------------------------------------------------------------------------------------- */
#define MANY 40000
static pthread_mutex_t many[MANY];

NOINLINE void out_of_memory(void)
{
    printf("capping the address space\n");
    fflush(stdout);
    long vm = vm_bytes();
    struct rlimit r = {(rlim_t)vm + 256 * 1024, (rlim_t)vm + 256 * 1024};
    if (vm < 0 || setrlimit(RLIMIT_AS, &r) != 0)
        return;
    int bad = 0;
    for (int i = 0; i < MANY; i++)
        bad |= pthread_mutex_lock(&many[i]);
    for (int i = MANY; i-- > 0;)
        bad |= pthread_mutex_unlock(&many[i]);
    for (int i = 0; i < MANY; i++) {
        bad |= pthread_mutex_lock(&many[i]);
        bad |= pthread_mutex_unlock(&many[i]);
    }
    char line[] = "locked and unlocked every mutex twice: ok\n";
    if (bad)
        memcpy(line + sizeof line - 4, "bad", 3);
    if (write(1, line, sizeof line - 1) < 0)
        _exit(1);
}

/* ------------------------------------------------------------------------------------------
 * Limits (lim11): correct programs past the tracer's own bounds.
 * Threads made one after another, a few alive at a time, each taking a lock in its own stack
 * between two global ones: every thread makes two new lock orders, which end with its stack.
 * Each thread also reserved room in the known set of lock orders when it made them, and that
 * room was never given back: 10,000 such threads grew the set past an 8 MB graph bound (and
 * 100,000 to 32 MB, RSS 119 MB against 15 MB now) for 6 live orders.
 * ---------------------------------------------------------------------------------------- */
#define SHORT_THREADS 20000
#define SHORT_ALIVE 4
static pthread_mutex_t outer[SHORT_ALIVE], inner[SHORT_ALIVE];

static void *short_thread(void *arg)
{
    long i = (long)arg;
    pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
    int bad = pthread_mutex_lock(&outer[i]) | pthread_mutex_lock(&own) |
              pthread_mutex_lock(&inner[i]);
    bad |= pthread_mutex_unlock(&inner[i]) | pthread_mutex_unlock(&own) |
           pthread_mutex_unlock(&outer[i]);
    return (void *)(long)bad;
}

/* `total` threads of fn, `alive` (up to SHORT_ALIVE) at a time, fn's argument its index
 * among them: their results ORed; -1 when one could not be made (said on stdout). */
static long threads_in_turns(int total, int alive, void *(*fn)(void *))
{
    pthread_t th[SHORT_ALIVE];
    long bad = 0;
    for (int made = 0; made < total; made += alive) {
        for (long i = 0; i < alive; i++)
            if (pthread_create(&th[i], NULL, fn, (void *)i) != 0) {
                printf("pthread_create failed after %d threads\n", made);
                return -1;
            }
        for (int i = 0; i < alive; i++) {
            void *r;
            pthread_join(th[i], &r);
            bad |= (long)r;
        }
    }
    return bad;
}

NOINLINE static void short_threads(void)
{
    for (int i = 0; i < SHORT_ALIVE; i++) {
        pthread_mutex_init(&outer[i], NULL);
        pthread_mutex_init(&inner[i], NULL);
    }
    long bad = threads_in_turns(SHORT_THREADS, SHORT_ALIVE, short_thread);
    if (bad >= 0)
        printf("made %d threads, each took 3 locks: %s\n", SHORT_THREADS, bad ? "bad" : "ok");
}

/* ------------------------------------------------------------------------------------------
 * A thread per connection: CHURN_THREADS short threads, SHORT_ALIVE at a time, each taking a
 * lock of its own between two that live on, and two more of its own nested, all made and
 * destroyed in the thread: each makes new lock orders whose first occurrences name it. Once
 * its locks are gone nothing needs what the tracer kept of those (labels, the thread's record),
 * which it kept for good: 100,000 such threads took a graph bounded at 1 MB past its bound,
 * and a new inversion after them went unreported. Orders made before the churn, one by the
 * main thread (kept in its lock's entry, an inline edge) and one by a named thread that
 * exited (an edge of the graph), are inverted after it, then a new pair: each report names
 * the first occurrence's thread and lines.
 * ---------------------------------------------------------------------------------------- */
#define CHURN_THREADS 100000
static pthread_mutex_t churn_outer[SHORT_ALIVE], churn_inner[SHORT_ALIVE];
static pthread_mutex_t kept_a = PTHREAD_MUTEX_INITIALIZER, kept_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t named_p = PTHREAD_MUTEX_INITIALIZER, named_q = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t named_x = PTHREAD_MUTEX_INITIALIZER, named_y = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t late_a = PTHREAD_MUTEX_INITIALIZER, late_b = PTHREAD_MUTEX_INITIALIZER;

static int take_nested(pthread_mutex_t *a, pthread_mutex_t *b)
{
    int bad = pthread_mutex_lock(a) | pthread_mutex_lock(b);
    return bad | pthread_mutex_unlock(b) | pthread_mutex_unlock(a);
}

NOINLINE static int kept_order(void)
{
    return take_nested(&kept_a, &kept_b);
}

NOINLINE static int named_order(void)
{
    return take_nested(&named_x, &named_y);
}

NOINLINE static int late_order(void)
{
    return take_nested(&late_a, &late_b);
}

NOINLINE static int inverted(pthread_mutex_t *a, pthread_mutex_t *b)
{
    return take_nested(a, b);
}

/* Two orders into named_x give it a node, so that named_x -> named_y is an edge of the graph. */
static void *named_thread(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "named");
    int bad = take_nested(&named_p, &named_x) | take_nested(&named_q, &named_x) | named_order();
    return (void *)(long)bad;
}

static void *churn_thread(void *arg)
{
    long i = (long)arg;
    pthread_mutex_t own, mine_a, mine_b;
    int bad = pthread_mutex_init(&own, NULL) | pthread_mutex_init(&mine_a, NULL) |
              pthread_mutex_init(&mine_b, NULL);
    bad |= pthread_mutex_lock(&churn_outer[i]) | pthread_mutex_lock(&own) |
           pthread_mutex_lock(&churn_inner[i]);
    bad |= pthread_mutex_unlock(&churn_inner[i]) | pthread_mutex_unlock(&own) |
           pthread_mutex_unlock(&churn_outer[i]);
    bad |= take_nested(&mine_a, &mine_b);
    bad |= pthread_mutex_destroy(&own) | pthread_mutex_destroy(&mine_a) |
           pthread_mutex_destroy(&mine_b);
    return (void *)(long)bad;
}

NOINLINE static void churn_threads(void)
{
    long bad = kept_order(), churned;
    for (int i = 0; i < SHORT_ALIVE; i++)
        bad |= pthread_mutex_init(&churn_outer[i], NULL) |
               pthread_mutex_init(&churn_inner[i], NULL);
    if (threads_in_turns(1, 1, named_thread) != 0 ||
        (churned = threads_in_turns(CHURN_THREADS, SHORT_ALIVE, churn_thread)) < 0) {
        printf("threads failed\n");
        return;
    }
    bad |= churned;
    printf("made %d threads, each made 3 orders: %s\n", CHURN_THREADS, bad ? "bad" : "ok");
    fflush(stdout);
    bad |= inverted(&kept_b, &kept_a) | inverted(&named_y, &named_x) | late_order() |
           inverted(&late_b, &late_a);
    printf("three orders inverted: %s\n", bad ? "bad" : "ok");
}

/* ------------------------------------------------------------------------------------------
 * A handler on an alternate signal stack of SIGSTKSZ's classic 8 KiB (about 6 KiB used
 * natively here) takes two locks nested: a new lock order, whose first occurrence the tracer
 * unwinds. The unwind (libunwind's cursor, the tracer's arrays of frames: ~7 KiB) overflowed
 * the stack, and the program died of SIGSEGV. A machine whose signal frame is larger (AMX)
 * gets a stack that much larger.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t handler_outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t handler_inner = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled, handler_bad;

static void locking_handler(int sig)
{
    (void)sig;
    handler_bad |= pthread_mutex_lock(&handler_outer) | pthread_mutex_lock(&handler_inner);
    handler_bad |= pthread_mutex_unlock(&handler_inner) | pthread_mutex_unlock(&handler_outer);
    handled++;
}

NOINLINE static void altstack_lock(void)
{
    long min = sysconf(_SC_MINSIGSTKSZ);
    size_t size = min > 4096 ? 2 * (size_t)min + 4096 : 8192;
    stack_t ss = {.ss_sp = malloc(size), .ss_size = size};
    struct sigaction sa = {.sa_handler = locking_handler, .sa_flags = SA_ONSTACK};
    if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0) {
        printf("set-up failed\n");
        return;
    }
    for (int i = 0; i < 100; i++)
        raise(SIGUSR1);
    printf("handler on an alternate stack ran %d times: %s\n", (int)handled,
           handler_bad ? "bad" : "ok");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "atfork-prepare-locks"))
        atfork_prepare_locks();
    else if (!strcmp(s, "exit-held-while-forking"))
        exit_held_while_forking();
    else if (!strcmp(s, "signal-while-blocked"))
        signal_while_blocked();
    else if (!strcmp(s, "join-cancelled"))
        join_cancelled();
    else if (!strcmp(s, "timed-writer-queued"))
        read_again_timed_writer_queued();
    else if (!strcmp(s, "heap-reuse"))
        heap_mutex_reused();
    else if (!strcmp(s, "stack-reuse"))
        stack_locks_reused();
    else if (!strcmp(s, "refused-unlock-errorcheck"))
        refused_unlock(PTHREAD_MUTEX_ERRORCHECK);
    else if (!strcmp(s, "refused-unlock-recursive"))
        refused_unlock(PTHREAD_MUTEX_RECURSIVE);
    else if (!strcmp(s, "out-of-memory"))
        out_of_memory();
    else if (!strcmp(s, "short-threads"))
        short_threads();
    else if (!strcmp(s, "altstack-lock"))
        altstack_lock();
    else if (!strcmp(s, "churn-threads"))
        churn_threads();
    else {
        fprintf(stderr, "unknown scenario '%s'\n", s);
        return 64;
    }
    return 0;
}
