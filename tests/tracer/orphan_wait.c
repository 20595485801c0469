/*
 * orphan_wait.c - a thread that already waits for a lock when its holder exits holding it,
 * while other threads of the process still run (scenarios.c's exit-held-waited-* rows have
 * none). The holder leaves once main sleeps in its wait; then:
 *   checked-ticking   an error-checking mutex, a thread waking every 100 ms meanwhile: no
 *                     thread but the gone holder could unlock it (glibc refuses another's
 *                     unlock, EPERM), so main waits for good: reported;
 *   recursive-ticking the same with a recursive mutex;
 *   rw-write-busy     an rwlock held for write, a thread computing meanwhile: another
 *                     thread's unlock is a read unlock, which leaves the writer: reported;
 *   cond-plain        main waits on a condition with a normal mutex; the holder takes the
 *                     mutex, signals and exits holding it: the wait returns only with the
 *                     mutex retaken, and nothing runs to unlock it: reported;
 *   cond-checked-ticking  the same with an error-checking mutex, a thread ticking: reported;
 * and silent:
 *   plain-released    a normal mutex, which a third thread unlocks once the holder is gone
 *                     (glibc lets it: a bad-unlock report) and main gets;
 *   checked-destructor-ticking  an error-checking mutex that a key destructor of the holder
 *                     releases as it leaves, a thread ticking: main gets it;
 *   cond-robust       a condition wait with a robust mutex: it returns EOWNERDEAD;
 *   shared-released   a process-shared normal mutex in shared memory, which a child process
 *                     unlocks once the holder is gone: main gets it (the parent's other
 *                     threads are all gone: the watchdog only may run).
 * A condition wait cancelled retakes its mutex before the cleanup handlers run; the mutex was
 * taken last there, by the wait (not by the lock call before it, which the wait released):
 *   cancel-relock     a cleanup handler locks the mutex again: a self-deadlock;
 *   cancel-kept       none unlocks it: the thread exits holding it.
 *   orphan_wait NAME
 * Each scenario prints what main's wait (or join) returned; the reported waits hang until
 * killed.
 */
#define _GNU_SOURCE
#include <errno.h>
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

static const char *how;
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER, checked, recursive, robust;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_key_t release_key;
static blocked_probe waiter;
static _Atomic int holder_tid, holding;

/* Shared with the child of shared-released. */
struct shared {
    pthread_mutex_t m;
    _Atomic int holder_tid, main_tid, holding;
};
static struct shared *sh;

static int has(const char *word)
{
    return strstr(how, word) != NULL;
}

static void result(const char *what, int rc)
{
    printf("%s -> %s\n", what, rc == 0 ? "0" : strerror(rc));
    fflush(stdout);
}

/* cancel-*: the cleanup handler of a cancelled condition wait. */
static void relock_or_keep(void *m)
{
    if (has("relock"))
        pthread_mutex_lock(m);
}

NOINLINE void take_for_wait(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
}

NOINLINE void *wait_until_cancelled(void *arg)
{
    (void)arg;
    take_for_wait(&plain);
    pthread_cleanup_push(relock_or_keep, &plain);
    for (;;) {
        blocked_announce_on(&waiter, &cv, sizeof cv);
        pthread_cond_wait(&cv, &plain);
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancel_waiter(void)
{
    pthread_t th;
    pthread_create(&th, NULL, wait_until_cancelled, NULL);
    blocked_until(&waiter);
    pthread_cancel(th);
    result("join", pthread_join(th, NULL));
}

static pthread_mutex_t *the_mutex(void)
{
    return has("checked")     ? &checked
           : has("recursive") ? &recursive
           : has("robust")    ? &robust
           : has("shared")    ? &sh->m
                              : &plain;
}

static void release(void *m)
{
    pthread_mutex_unlock(m);
}

/* Whether thread `tid` of process `pid` has gone. */
static int task_gone(int pid, int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d", pid, tid);
    return access(path, F_OK) != 0;
}

NOINLINE void *leave_holding(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "holder");
    if (has("cond"))
        blocked_until(&waiter); /* main sleeps in its condition wait */
    if (has("rw-write"))
        pthread_rwlock_wrlock(&rw);
    else
        pthread_mutex_lock(the_mutex());
    if (has("cond"))
        pthread_cond_signal(&cv);
    if (has("destructor"))
        pthread_setspecific(release_key, the_mutex());
    holder_tid = blocked_tid();
    holding = 1;
    if (sh) {
        sh->holder_tid = holder_tid;
        sh->holding = 1;
    }
    if (!has("cond"))
        blocked_until(&waiter);
    return NULL;
}

/* Wakes every 100 ms, for good: a timer thread. */
static void *tick(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return NULL;
}

/* Computes, for good. */
static void *compute(void *arg)
{
    static volatile unsigned long n;
    (void)arg;
    for (;;)
        n++;
    return NULL;
}

/* plain-released: unlocks the mutex once its holder has gone and main sleeps waiting for it. */
static void *release_for_gone(void *arg)
{
    (void)arg;
    while (!holding)
        sched_yield();
    while (!task_gone(getpid(), holder_tid))
        sched_yield();
    blocked_until(&waiter);
    pthread_mutex_unlock(&plain);
    return NULL;
}

/* shared-released, in the child: unlocks the mutex once the parent's holder has gone and its
 * main sleeps in its wait, and a while after (the watchdog's looks), which only makes a report
 * that should not be made likelier. */
static void release_from_child(int parent)
{
    char path[64];
    uintptr_t word = 0;
    while (!sh->holding || !task_gone(parent, sh->holder_tid))
        sched_yield();
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", parent, (int)sh->main_tid);
    while (!blocked_futex_word_at(path, &word) || word < (uintptr_t)&sh->m ||
           word >= (uintptr_t)(&sh->m + 1))
        sched_yield();
    usleep(500 * 1000);
    pthread_mutex_unlock(&sh->m);
    _exit(0);
}

static void init_mutexes(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checked, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&recursive, &a);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &a);
    pthread_key_create(&release_key, release);
}

static pid_t start_shared(void)
{
    pthread_mutexattr_t a;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        exit(1);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->m, &a);
    sh->main_tid = blocked_tid();
    int parent = getpid();
    pid_t child = fork();
    if (child == 0)
        release_from_child(parent);
    return child;
}

NOINLINE void wait_in_condition(pthread_mutex_t *m)
{
    int rc;
    pthread_mutex_lock(m);
    do {
        blocked_announce_on(&waiter, &cv, sizeof cv);
        rc = pthread_cond_wait(&cv, m);
    } while (rc == 0 && !holding);
    result("wait", rc);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(m);
    pthread_mutex_unlock(m);
}

NOINLINE void wait_for_lock(pthread_mutex_t *m)
{
    while (!holding)
        sched_yield();
    if (has("rw-write")) {
        blocked_announce_on(&waiter, &rw, sizeof rw);
        result("rdlock", pthread_rwlock_rdlock(&rw));
        return;
    }
    blocked_announce_on(&waiter, m, sizeof *m);
    int rc = pthread_mutex_lock(m);
    result("lock", rc);
    pthread_mutex_unlock(m);
}

int main(int argc, char **argv)
{
    pthread_t holder, other;
    pid_t child = -1;
    if (argc != 2)
        return 2;
    how = argv[1];
    init_mutexes();
    if (has("cancel")) {
        cancel_waiter();
        return 0;
    }
    if (has("shared"))
        child = start_shared();
    if (has("ticking") || has("busy") || has("released")) {
        void *(*fn)(void *) = has("ticking") ? tick : has("busy") ? compute : release_for_gone;
        if (!has("shared"))
            pthread_create(&other, NULL, fn, NULL);
    }
    pthread_create(&holder, NULL, leave_holding, NULL);
    if (has("cond"))
        wait_in_condition(the_mutex());
    else
        wait_for_lock(the_mutex());
    pthread_join(holder, NULL);
    if (has("released") && !has("shared"))
        pthread_join(other, NULL); /* (its bad-unlock report is written before it returns) */
    if (child > 0)
        waitpid(child, NULL, 0);
    return 0;
}
