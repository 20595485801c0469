/*
 * peers.c - behaviours met by running other lock checkers' test programs (Helgrind's, DRD's,
 * ThreadSanitizer's, lockdep's) under the tracer, each written here as a small program of
 * our own and chosen by name:
 *   peers NAME
 * Small stacks: threads made with PTHREAD_STACK_MIN, as thread pools and the peers' stress
 * tests make them; the tracer must neither overflow them while it learns a call site nor
 * while it symbolizes a report. Every scenario ends by printing "done" so a run that the
 * tracer cut short shows. Refused condition waits: libc can turn a wait down before it
 * unlocks the mutex, and the tracer must then know who holds it just as libc does. Robust
 * and timed requests: lock calls whose result a trylock would not give; a robust mutex held
 * when its thread exits is correct (the next locker gets EOWNERDEAD). Handovers and
 * forks: who holds a lock after another thread unlocked it, or after the holder forked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../blocked.h"

#define NOINLINE __attribute__((noinline))
#define WORKERS 6

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int arrived;

static pthread_t start_small(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        printf("pthread_create -> %s\n", strerror(rc));
        exit(2);
    }
    return t;
}

/* Each of these is a call site the tracer sees for the first time in a small-stack thread. */
NOINLINE static void take_both(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

NOINLINE static void read_table(void)
{
    pthread_rwlock_rdlock(&table);
    pthread_rwlock_unlock(&table);
}

NOINLINE static void check_in(void)
{
    pthread_mutex_lock(&counted);
    arrived++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&counted);
}

/* Correct locking only: heap churn between the locks, as a worker does. */
static void *quiet_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        char *p = malloc(4096 + (size_t)i);
        memset(p, i, 4096);
        free(p);
        take_both(&first, &second);
        read_table();
    }
    check_in();
    return NULL;
}

static void small_stacks_quiet(void)
{
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        t[i] = start_small(quiet_worker, NULL);
    pthread_mutex_lock(&counted);
    while (arrived < WORKERS)
        pthread_cond_wait(&changed, &counted);
    pthread_mutex_unlock(&counted);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
}

/* One thread only, so nothing can really deadlock: an inversion to report, then an
 * error-checking relock of a mutex on its own stack (reported, the mutex named by its frame;
 * the call returns EDEADLK and the thread goes on). */
static void *reporting_worker(void *arg)
{
    pthread_mutexattr_t attr;
    pthread_mutex_t checked;
    (void)arg;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checked, &attr);
    take_both(&first, &second);
    take_both(&second, &first);
    pthread_mutex_lock(&checked);
    int rc = pthread_mutex_lock(&checked);
    pthread_mutex_unlock(&checked);
    printf("relock -> %s\n", rc == EDEADLK ? "EDEADLK" : rc == 0 ? "0" : strerror(rc));
    return NULL;
}

static void small_stack_reports(void)
{
    pthread_join(start_small(reporting_worker, NULL), NULL);
}

static void result(const char *what, int rc)
{
    const char *name = rc == 0 ? "0" : rc == EPERM ? "EPERM" : rc == EINVAL ? "EINVAL"
                       : rc == EOWNERDEAD ? "EOWNERDEAD" : rc == ENOTRECOVERABLE ? "ENOTRECOVERABLE"
                                                                             : strerror(rc);
    printf("%s -> %s\n", what, name);
}

static void mutex_of_type(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, type);
    pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
}

/* A condition wait with a recursive mutex the thread does not hold: libc refuses it (EPERM)
 * and unlocks nothing, so the thread holds nothing after it; a second unlock later is one
 * too many. */
NOINLINE static void wait_unowned_then_unlock_twice(void)
{
    pthread_mutex_t m;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    mutex_of_type(&m, PTHREAD_MUTEX_RECURSIVE);
    result("wait", pthread_cond_wait(&cv, &m));
    result("lock", pthread_mutex_lock(&m));
    result("unlock", pthread_mutex_unlock(&m));
    result("unlock again", pthread_mutex_unlock(&m));
}

/* The neighbour: a timed wait refused for its deadline (EINVAL) before libc unlocks the
 * held mutex, which the thread then still holds and unlocks once. */
NOINLINE static void held_wait_refused(void)
{
    pthread_mutex_t m;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    struct timespec bad = {.tv_sec = 0, .tv_nsec = 1000000000 + 1};
    mutex_of_type(&m, PTHREAD_MUTEX_ERRORCHECK);
    result("lock", pthread_mutex_lock(&m));
    result("timedwait", pthread_cond_timedwait(&cv, &m, &bad));
    result("unlock", pthread_mutex_unlock(&m));
    result("unlock again", pthread_mutex_unlock(&m));
}

static void *take_and_exit(void *m)
{
    pthread_mutex_lock(m);
    return NULL;
}

/* A thread that exits holding a robust mutex and a normal one: only the normal one is a
 * mistake (the robust one is handed to the next locker with EOWNERDEAD). */
static pthread_mutex_t robust_held, plain_held = PTHREAD_MUTEX_INITIALIZER;

NOINLINE static void *take_robust(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&robust_held);
    return NULL;
}

NOINLINE static void *take_robust_and_plain(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&robust_held);
    pthread_mutex_lock(&plain_held);
    return NULL;
}

static void recover(const char *what)
{
    result(what, pthread_mutex_lock(&robust_held));
    result("consistent", pthread_mutex_consistent(&robust_held));
    result("unlock", pthread_mutex_unlock(&robust_held));
}

NOINLINE static void robust_exit(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust_held, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_join(start_small(take_robust, NULL), NULL);
    recover("lock after robust only");
    pthread_join(start_small(take_robust_and_plain, NULL), NULL);
    recover("lock after both");
    result("trylock plain", pthread_mutex_trylock(&plain_held));
}

static void *lock_in_thread(void *m)
{
    result("other thread's lock", pthread_mutex_lock(m));
    return NULL;
}

/* A robust mutex whose owner died, given up without pthread_mutex_consistent: from then on
 * every lock fails with ENOTRECOVERABLE, in any thread, until it is made again. */
NOINLINE static void robust_unrecoverable(void)
{
    pthread_mutexattr_t attr;
    pthread_mutex_t m;
    pthread_t t;
    struct timespec deadline;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &attr);
    pthread_join(start_small(take_and_exit, &m), NULL);
    result("lock", pthread_mutex_lock(&m));
    result("unlock", pthread_mutex_unlock(&m));
    result("lock", pthread_mutex_lock(&m));
    result("lock again", pthread_mutex_lock(&m));
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    result("timedlock", pthread_mutex_timedlock(&m, &deadline));
    pthread_create(&t, NULL, lock_in_thread, &m);
    pthread_join(t, NULL);
    result("unlock", pthread_mutex_unlock(&m));
    result("destroy", pthread_mutex_destroy(&m));
    pthread_mutex_init(&m, &attr);
    result("lock", pthread_mutex_lock(&m));
    result("unlock", pthread_mutex_unlock(&m));
    result("destroy", pthread_mutex_destroy(&m));
    pthread_mutexattr_destroy(&attr);
}

/* Timed requests libc turns down before it looks at the lock (a clock it cannot sleep on; an
 * rwlock's deadline with out-of-range nanoseconds): the lock stays free. */
NOINLINE static void timed_refused(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    struct timespec t, bad = {.tv_sec = 0, .tv_nsec = 1000000000};
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += 5;
    result("clocklock", pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &t));
    result("clockrdlock", pthread_rwlock_clockrdlock(&rw, CLOCK_THREAD_CPUTIME_ID, &t));
    result("clockwrlock", pthread_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &t));
    result("timedrdlock", pthread_rwlock_timedrdlock(&rw, &bad));
    result("timedwrlock", pthread_rwlock_timedwrlock(&rw, &bad));
    result("mutex destroy", pthread_mutex_destroy(&m));
    result("rwlock destroy", pthread_rwlock_destroy(&rw));
}

/* A mutex's deadline with out-of-range nanoseconds, the mutex busy: glibc checks them only
 * once it has to sleep, so each request returns at once and nothing waits: not a relock that
 * hangs, nor a wait for the thread that joins the one asking. A free mutex is taken. */
static void *timed_bad_other(void *m)
{
    struct timespec bad = {.tv_sec = 0, .tv_nsec = -1};
    result("other thread's timedlock", pthread_mutex_timedlock(m, &bad));
    return NULL;
}

NOINLINE static void timed_bad_deadline(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, e;
    struct timespec bad = {.tv_sec = 0, .tv_nsec = 1000000000};
    pthread_t t;
    mutex_of_type(&e, PTHREAD_MUTEX_ERRORCHECK);
    result("lock", pthread_mutex_lock(&m));
    result("timedlock", pthread_mutex_timedlock(&m, &bad));
    result("clocklock", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad));
    pthread_create(&t, NULL, timed_bad_other, &m);
    pthread_join(t, NULL);
    result("unlock", pthread_mutex_unlock(&m));
    result("errorcheck lock", pthread_mutex_lock(&e));
    result("errorcheck timedlock", pthread_mutex_timedlock(&e, &bad));
    result("errorcheck unlock", pthread_mutex_unlock(&e));
    result("free timedlock", pthread_mutex_timedlock(&m, &bad));
    result("unlock", pthread_mutex_unlock(&m));
    result("destroy", pthread_mutex_destroy(&m));
    result("errorcheck destroy", pthread_mutex_destroy(&e));
}

static void *unlock_for_owner(void *m)
{
    result("other thread's unlock", pthread_mutex_unlock(m));
    return NULL;
}

static void *spin_unlock_for_owner(void *s)
{
    result("other thread's spin unlock", pthread_spin_unlock(s));
    return NULL;
}

/* Locks handed over: taken by this thread, unlocked by another (libc lets it do so for a
 * normal mutex and a spinlock; the peers report it, and so does the tracer). This thread
 * holds them no more: taken again under another lock, they make no order with it. */
NOINLINE static void unlocked_by_other(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_spinlock_t s;
    pthread_t t;
    pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
    result("lock", pthread_mutex_lock(&m));
    pthread_create(&t, NULL, unlock_for_owner, &m);
    pthread_join(t, NULL);
    take_both(&second, &m);
    result("spin lock", pthread_spin_lock(&s));
    pthread_create(&t, NULL, spin_unlock_for_owner, (void *)&s);
    pthread_join(t, NULL);
    pthread_mutex_lock(&second);
    pthread_spin_lock(&s);
    pthread_spin_unlock(&s);
    pthread_mutex_unlock(&second);
    result("destroy", pthread_mutex_destroy(&m));
    result("spin destroy", pthread_spin_destroy(&s));
}

static void *rw_unlock_for_writer(void *rw)
{
    result("other thread's unlock of the written lock", pthread_rwlock_unlock(rw));
    return NULL;
}

static void *rw_unlock_for_reader(void *rw)
{
    result("other thread's unlock of the read lock", pthread_rwlock_unlock(rw));
    return NULL;
}

/* rwlocks unlocked by a thread that does not hold them (reported). glibc tells a writer's
 * unlock by the lock's writer id: another thread's unlock is a read unlock, so the writer
 * still holds the lock (its wrlock again returns EDEADLK) and its own unlock is a correct
 * one. A read hold has no owner: another thread's unlock takes one reader off, and the
 * reader's own unlock after it is accepted too. Each lock is left with a reader count below
 * zero by then, and is not used again. */
NOINLINE static void rwlock_unlocked_by_other(void)
{
    static pthread_rwlock_t written = PTHREAD_RWLOCK_INITIALIZER, read = PTHREAD_RWLOCK_INITIALIZER;
    pthread_t t;
    result("wrlock", pthread_rwlock_wrlock(&written));
    pthread_create(&t, NULL, rw_unlock_for_writer, &written);
    pthread_join(t, NULL);
    result("wrlock again", pthread_rwlock_wrlock(&written));
    result("unlock", pthread_rwlock_unlock(&written));
    result("rdlock", pthread_rwlock_rdlock(&read));
    pthread_create(&t, NULL, rw_unlock_for_reader, &read);
    pthread_join(t, NULL);
    result("unlock", pthread_rwlock_unlock(&read));
}

/* How a fork child ended, as "what: signal N" or "what: exit N". */
static void child_status(const char *what, pid_t pid)
{
    int status;
    waitpid(pid, &status, 0);
    printf("%s: %s %d\n", what, WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    fflush(stdout);
}

NOINLINE static void child_relocks(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
}

/* The child of a fork locks again a mutex its thread held at the fork: libc's lock word names
 * the parent's thread, so even an error-checking or a recursive mutex hangs. */
NOINLINE static void fork_relock(void)
{
    static const struct {
        const char *name;
        int type;
    } types[] = {{"normal", PTHREAD_MUTEX_NORMAL},
                 {"error-checking", PTHREAD_MUTEX_ERRORCHECK},
                 {"recursive", PTHREAD_MUTEX_RECURSIVE}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        pthread_mutex_t m;
        mutex_of_type(&m, types[i].type);
        pthread_mutex_lock(&m);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            child_relocks(&m);
            _exit(0);
        }
        child_status(types[i].name, pid);
        pthread_mutex_unlock(&m);
        pthread_mutex_destroy(&m);
    }
}

/* The child's request of what its thread held at the fork in shared memory: a mutex or
 * rwlock waits in a futex, a spinlock spins (polled through a flag it sets first). */
static void wait_for_child(pid_t pid, const atomic_int *spinning)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)pid);
    while (spinning ? !atomic_load(spinning) : !blocked_in_futex_at(path))
        sched_yield();
}

/* The neighbours: locks in shared memory held by the forking thread, a process-shared
 * mutex, a process-shared rwlock held for read (the child asks for write) and a spinlock (a
 * spinlock's word names no owner, nor a read-held rwlock's a reader: these were taken for
 * the child's own and it aborted, as relocking and upgrading). The child's request waits for
 * the parent's unlock, as it should. */
NOINLINE static void fork_relock_shared(void)
{
    struct shared {
        pthread_mutex_t m;
        pthread_rwlock_t rw;
        pthread_spinlock_t spin;
        atomic_int spinning;
    } *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t attr;
    pthread_rwlockattr_t rwattr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->m, &attr);
    pthread_rwlockattr_init(&rwattr);
    pthread_rwlockattr_setpshared(&rwattr, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&sh->rw, &rwattr);
    pthread_spin_init(&sh->spin, PTHREAD_PROCESS_SHARED);
    atomic_init(&sh->spinning, 0);

    pthread_mutex_lock(&sh->m);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        child_relocks(&sh->m);
        _exit(pthread_mutex_unlock(&sh->m));
    }
    wait_for_child(pid, NULL);
    pthread_mutex_unlock(&sh->m);
    child_status("process-shared", pid);

    pthread_rwlock_rdlock(&sh->rw);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        pthread_rwlock_wrlock(&sh->rw);
        _exit(pthread_rwlock_unlock(&sh->rw));
    }
    wait_for_child(pid, NULL);
    pthread_rwlock_unlock(&sh->rw);
    child_status("process-shared rwlock read-held", pid);

    pthread_spin_lock(&sh->spin);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        atomic_store(&sh->spinning, 1);
        pthread_spin_lock(&sh->spin);
        _exit(pthread_spin_unlock(&sh->spin));
    }
    wait_for_child(pid, &sh->spinning);
    pthread_spin_unlock(&sh->spin);
    child_status("spinlock in shared memory", pid);

    pthread_mutex_destroy(&sh->m);
    pthread_rwlock_destroy(&sh->rw);
    pthread_spin_destroy(&sh->spin);
    munmap(sh, sizeof *sh);
}

/* A condition wait with a recursive mutex locked twice: libc unlocks it once and waits with
 * it still locked; the timed wait ends, and the two unlocks after it balance the locks. */
NOINLINE static void recursive_wait(void)
{
    pthread_mutex_t m;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    struct timespec deadline;
    mutex_of_type(&m, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_lock(&m);
    pthread_mutex_lock(&m);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 10 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    result("timedwait", pthread_cond_timedwait(&cv, &m, &deadline));
    result("unlock", pthread_mutex_unlock(&m));
    result("unlock", pthread_mutex_unlock(&m));
    result("destroy", pthread_mutex_destroy(&m));
}

static pthread_mutex_t twice = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t twice_changed = PTHREAD_COND_INITIALIZER;
static atomic_int twice_signalled;
static int twice_ready;
static blocked_probe twice_waiter;

/* The signaller signalled once already; it needs the mutex to signal again, which the waiter
 * keeps locked in its wait. */
static void *twice_signaller(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&twice);
    pthread_cond_signal(&twice_changed);
    pthread_mutex_unlock(&twice);
    atomic_store(&twice_signalled, 1);
    blocked_until(&twice_waiter);
    pthread_mutex_lock(&twice);
    twice_ready = 1;
    pthread_cond_signal(&twice_changed);
    pthread_mutex_unlock(&twice);
    return NULL;
}

/* ... so it waits for the waiter, which waits for its signal: a deadlock. */
NOINLINE static void recursive_wait_deadlock(void)
{
    pthread_t t;
    pthread_create(&t, NULL, twice_signaller, NULL);
    while (!atomic_load(&twice_signalled))
        sched_yield();
    pthread_mutex_lock(&twice);
    pthread_mutex_lock(&twice);
    blocked_announce_on(&twice_waiter, &twice_changed, sizeof twice_changed);
    while (!twice_ready)
        pthread_cond_wait(&twice_changed, &twice);
    pthread_mutex_unlock(&twice);
    pthread_mutex_unlock(&twice);
    pthread_join(t, NULL);
}

/* errno is 0 when main starts (C11 7.5) and a lock call that succeeds leaves it alone, as
 * libc's do. Inside the program's calls the tracer starts libunwind (whose address checks
 * read a pipe until EAGAIN), writes reports (files, symbols) and starts threads: none of
 * their errors may stay behind. ThreadSanitizer's ignore_lib1 exits with the length of a
 * message that prints errno. */
static int errno_at_start;

static void *errno_in_thread(void *arg)
{
    *(int *)arg = errno;
    return NULL;
}

NOINLINE static void errno_kept(void)
{
    int after_report, in_thread = -1;
    pthread_t t;
    printf("main start: errno %d\n", errno_at_start);
    errno = 0;
    pthread_mutex_lock(&first);
    pthread_mutex_lock(&second);
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
    pthread_mutex_lock(&second);
    pthread_mutex_lock(&first); /* the inversion's report */
    after_report = errno;
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
    printf("after a report: errno %d\n", after_report);
    pthread_create(&t, NULL, errno_in_thread, &in_thread);
    pthread_join(t, NULL);
    printf("new thread: errno %d\n", in_thread);
}

/* lockdep's user-space tests, their lock patterns only, in one thread: each pair is taken
 * through a function of its own, so a report names exactly the edges of its cycle. */
NOINLINE static void pair_ab(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }
NOINLINE static void pair_bc(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }
NOINLINE static void pair_cd(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }
NOINLINE static void pair_bd(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }
NOINLINE static void pair_da(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }
NOINLINE static void pair_ba(pthread_mutex_t *x, pthread_mutex_t *y) { take_both(x, y); }

static int init_default(pthread_mutex_t *m)
{
    return pthread_mutex_init(m, NULL);
}

static void each(pthread_mutex_t *m, int n, int (*fn)(pthread_mutex_t *))
{
    for (int i = 0; i < n; i++)
        fn(&m[i]);
}

/* ABCDBDDA: a->b, c->d, b->d, d->a: the cycle a->b->d->a; c->d is off it. */
NOINLINE static void lockdep_off_cycle(void)
{
    pthread_mutex_t m[4];
    each(m, 4, init_default);
    pair_ab(&m[0], &m[1]);
    pair_cd(&m[2], &m[3]);
    pair_bd(&m[1], &m[3]);
    pair_da(&m[3], &m[0]);
    each(m, 4, pthread_mutex_destroy);
}

/* ABBCCDDA's cycle a->b->c->d->a, then ABBA on the same addresses after destroy and init:
 * two inversions, each of its own round. */
NOINLINE static void lockdep_rounds(void)
{
    pthread_mutex_t m[4];
    each(m, 4, init_default);
    pair_ab(&m[0], &m[1]);
    pair_bc(&m[1], &m[2]);
    pair_cd(&m[2], &m[3]);
    pair_da(&m[3], &m[0]);
    each(m, 4, pthread_mutex_destroy);
    each(m, 2, init_default);
    pair_bd(&m[0], &m[1]);
    pair_ba(&m[1], &m[0]);
    each(m, 2, pthread_mutex_destroy);
}

int main(int argc, char **argv)
{
    errno_at_start = errno;
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "small-stacks-quiet"))
        small_stacks_quiet();
    else if (!strcmp(s, "small-stack-reports"))
        small_stack_reports();
    else if (!strcmp(s, "cond-wait-unowned"))
        wait_unowned_then_unlock_twice();
    else if (!strcmp(s, "cond-wait-refused-held"))
        held_wait_refused();
    else if (!strcmp(s, "robust-unrecoverable"))
        robust_unrecoverable();
    else if (!strcmp(s, "robust-exit"))
        robust_exit();
    else if (!strcmp(s, "timed-refused"))
        timed_refused();
    else if (!strcmp(s, "timed-bad-deadline"))
        timed_bad_deadline();
    else if (!strcmp(s, "unlocked-by-other"))
        unlocked_by_other();
    else if (!strcmp(s, "rwlock-unlocked-by-other"))
        rwlock_unlocked_by_other();
    else if (!strcmp(s, "fork-relock"))
        fork_relock();
    else if (!strcmp(s, "fork-relock-shared"))
        fork_relock_shared();
    else if (!strcmp(s, "recursive-wait"))
        recursive_wait();
    else if (!strcmp(s, "recursive-wait-deadlock"))
        recursive_wait_deadlock();
    else if (!strcmp(s, "lockdep-off-cycle"))
        lockdep_off_cycle();
    else if (!strcmp(s, "lockdep-rounds"))
        lockdep_rounds();
    else if (!strcmp(s, "errno-kept"))
        errno_kept();
    else {
        fprintf(stderr, "peers: unknown scenario '%s'\n", s);
        return 64;
    }
    puts("done");
    return 0;
}
