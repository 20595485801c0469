/*
 * stressbench.c - the two scale shapes of the performance table, natively or under the tracer.
 *   stressbench groups GROUPS SIZE LOOPS
 *       one thread: init GROUPS x SIZE mutexes, lock them all (group after group, each group in
 *       index order: SIZE nested locks), unlock them in the order taken, destroy them; LOOPS
 *       times. Thousands of locks are held at once.
 *   stressbench lazy THREADS LOCKS ITERS
 *       LOCKS rwlocks set up by PTHREAD_RWLOCK_INITIALIZER (never init'ed: first seen on first
 *       use); each of THREADS threads does ITERS rounds of: pick 1-10 distinct locks, take them
 *       in increasing index order (one in five for write), release them newest first.
 *   stressbench threads AT_ONCE ROUNDS LOCKS
 *       ROUNDS times: start AT_ONCE threads, each takes and releases LOCKS times one mutex they
 *       share, and join them. Threads that live for a few locks: their start and exit cost.
 *   stressbench tasks THREADS LOCKS ROUNDS
 *       THREADS threads one after another (each started once the last has been joined),
 *       each taking LOCKS (at most 8) mutexes all threads share, nested, ROUNDS times, each at
 *       a call site of its own a few frames deep, then ending: a server that starts a thread
 *       per connection, whose every new thread makes the same lock calls from the same code.
 *   stressbench churn THREADS MUTEXES ITERS
 *       each of THREADS threads has MUTEXES mutexes of its own (one heap array per thread) and
 *       does ITERS rounds of: for each of them, init, lock, unlock, destroy. Locks made and
 *       unmade by many threads at once.
 *   stressbench condwait THREADS ROUNDS HELD
 *   stressbench mutexwait THREADS ROUNDS HELD
 *       THREADS threads, each holding HELD mutexes of its own, block at once: on one condition
 *       variable (condwait; the main thread broadcasts once all have arrived, and they then
 *       queue on its mutex) or on one mutex the main thread holds (mutexwait; it lets go once
 *       all have arrived); ROUNDS times. A thread pool's idle workers, a herd on one lock.
 *   stressbench crowd THREADS LOCKS ROUNDS
 *       THREADS threads alive at once, each with LOCKS mutexes of its own: they start, meet at
 *       a barrier, then each takes its mutexes nested and releases them, ROUNDS times, at
 *       the same moment as all the others, and meet again before they end. Thousands of
 *       threads making their first lock orders at once (a pool's workers at start).
 *   stressbench replace LOCKS OPS 1
 *       one thread, LOCKS slots of heap mutexes kept in index order: OPS times, take a slot's
 *       mutex and, under it, one of the next 8 slots' (index order: no cycle), let go; one
 *       time in 16 the first is then destroyed and freed, and made anew (malloc, init) the
 *       next time its slot is picked. A chain of ordered locks whose members are replaced
 *       all the time, at addresses unrelated to their order (lock coupling along a list
 *       whose nodes come and go).
 *   stressbench spawn SCRIPTS COMMANDS 1
 *       SCRIPTS times, one after the other: a shell script (/bin/sh) that runs /bin/true
 *       COMMANDS times. A test run made of scripts, make and configure: many short processes,
 *       each of them traced (the environment, LD_PRELOAD with it, is inherited).
 *   stressbench exec PROCESSES LOCKS 1
 *       PROCESSES times, one after the other: start a process and wait for it. With LOCKS 0
 *       it is /bin/true, a process that takes no lock (as sed, grep or sh); else this program
 *       again (`stressbench locks LOCKS 1 1`), which takes LOCKS mutexes, nested, once.
 *   stressbench fork PROCESSES 1 1
 *       PROCESSES times: fork a child that calls _exit(0) at once, and wait for it.
 *   stressbench sigthreads PARENTS CHILDREN MICROSECONDS
 *       a SIGALRM every MICROSECONDS (ITIMER_REAL) to a handler that counts it, while PARENTS
 *       threads each start CHILDREN threads that return at once, then join them: threads
 *       started and ended in a storm of signals, each interrupting whatever runs (the
 *       tracer's thread table too).
 * Prints "seconds=<wall time of the timed part>"; condwait and mutexwait also print
 * "cpu_seconds=<CPU time of the process in it>", since most of their wall time is waiting,
 * spawn and exec "cpu_seconds=<CPU time of its child processes>", where the cost is, fork
 * "cpu_seconds=<CPU time of the process and its children>", sigthreads the process's CPU time
 * and "signals=<handled>", crowd the process's CPU time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_of(int who)
{
    struct rusage r;
    getrusage(who, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

static double cpu(void)
{
    return cpu_of(RUSAGE_SELF);
}

static unsigned step(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* ---------------------------------------------------------------------------------------- */

static int groups(long ngroups, long size, long loops)
{
    size_t n = (size_t)(ngroups * size);
    pthread_mutex_t *m = malloc(n * sizeof *m);
    if (!m)
        return 1;
    for (long k = 0; k < loops; k++) {
        for (size_t i = 0; i < n; i++)
            pthread_mutex_init(&m[i], NULL);
        for (size_t i = 0; i < n; i++) /* group g is m[g*size .. g*size+size-1], in order */
            pthread_mutex_lock(&m[i]);
        for (size_t i = 0; i < n; i++)
            pthread_mutex_unlock(&m[i]);
        for (size_t i = 0; i < n; i++)
            pthread_mutex_destroy(&m[i]);
    }
    free(m);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static pthread_rwlock_t *lazy_locks;
static long lazy_n, lazy_iters;
static pthread_barrier_t lazy_start;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void *lazy_worker(void *arg)
{
    unsigned seed = 2463534242u + (unsigned)(size_t)arg * 7919u;
    int pick[10], write[10];
    long sink = 0;
    pthread_barrier_wait(&lazy_start);
    for (long it = 0; it < lazy_iters; it++) {
        int k = 1 + (int)(step(&seed) % 10), n = 0;
        while (n < k) {
            int x = (int)(step(&seed) % (unsigned)lazy_n), dup = 0;
            for (int j = 0; j < n; j++)
                dup |= pick[j] == x;
            if (!dup)
                pick[n++] = x;
        }
        qsort(pick, (size_t)n, sizeof pick[0], cmp_int);
        for (int j = 0; j < n; j++) {
            write[j] = step(&seed) % 5 == 0;
            if (write[j])
                pthread_rwlock_wrlock(&lazy_locks[pick[j]]);
            else
                pthread_rwlock_rdlock(&lazy_locks[pick[j]]);
            sink += pick[j];
        }
        for (int j = n; j-- > 0;)
            pthread_rwlock_unlock(&lazy_locks[pick[j]]);
    }
    return (void *)sink;
}

static int lazy(long threads, long nlocks, long iters)
{
    pthread_rwlock_t init = PTHREAD_RWLOCK_INITIALIZER;
    pthread_t th[64];
    lazy_locks = malloc((size_t)nlocks * sizeof *lazy_locks);
    if (!lazy_locks || threads > 64)
        return 1;
    for (long i = 0; i < nlocks; i++)
        lazy_locks[i] = init;
    lazy_n = nlocks;
    lazy_iters = iters;
    pthread_barrier_init(&lazy_start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, lazy_worker, (void *)(size_t)i);
    for (long i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&lazy_start);
    free(lazy_locks);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static long churn_n, churn_iters;
static pthread_barrier_t churn_start;

static void *churn_worker(void *arg)
{
    pthread_mutex_t *m = malloc((size_t)churn_n * sizeof *m);
    (void)arg;
    pthread_barrier_wait(&churn_start);
    for (long it = 0; m && it < churn_iters; it++)
        for (long i = 0; i < churn_n; i++) {
            pthread_mutex_init(&m[i], NULL);
            pthread_mutex_lock(&m[i]);
            pthread_mutex_unlock(&m[i]);
            pthread_mutex_destroy(&m[i]);
        }
    free(m);
    return m ? NULL : (void *)1;
}

static int churn(long threads, long nmutexes, long iters)
{
    pthread_t th[64];
    void *failed = NULL;
    if (threads > 64)
        return 1;
    churn_n = nmutexes;
    churn_iters = iters;
    pthread_barrier_init(&churn_start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, churn_worker, NULL);
    for (long i = 0; i < threads; i++) {
        void *r;
        pthread_join(th[i], &r);
        failed = failed ? failed : r;
    }
    pthread_barrier_destroy(&churn_start);
    return failed != NULL;
}

/* ---------------------------------------------------------------------------------------- */

static pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static long short_locks;

static void *short_worker(void *arg)
{
    for (long i = 0; i < short_locks; i++) {
        pthread_mutex_lock(&short_lock);
        pthread_mutex_unlock(&short_lock);
    }
    return arg;
}

static int short_lived(long at_once, long rounds, long locks)
{
    pthread_t th[64];
    if (at_once > 64)
        return 1;
    short_locks = locks;
    for (long r = 0; r < rounds; r++) {
        long started = 0;
        while (started < at_once && !pthread_create(&th[started], NULL, short_worker, NULL))
            started++;
        for (long i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        if (started < at_once)
            return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

#define TASK_LOCKS 8
static pthread_mutex_t task_lock[TASK_LOCKS];
static long task_locks, task_rounds;

/* Each lock is taken at a call site of its own, a few frames below the thread's function (a
 * server's handler calls a library, which takes its locks in a helper), each frame one the
 * compiler keeps. A distinct assembler comment after each call: the compiler merges no two
 * of them. */
#define TASK_TAKE(i)                                                                         \
    do {                                                                                     \
        pthread_mutex_lock(&task_lock[i]);                                                   \
        __asm__ volatile("# task site %0" ::"i"(i) : "memory");                              \
    } while (0)

static __attribute__((noinline)) void task_take(long i)
{
    switch (i) {
    case 0: TASK_TAKE(0); break;
    case 1: TASK_TAKE(1); break;
    case 2: TASK_TAKE(2); break;
    case 3: TASK_TAKE(3); break;
    case 4: TASK_TAKE(4); break;
    case 5: TASK_TAKE(5); break;
    case 6: TASK_TAKE(6); break;
    default: TASK_TAKE(7); break;
    }
}

static __attribute__((noinline)) void task_step(long depth)
{
    if (depth > 0) {
        task_step(depth - 1);
        __asm__ volatile("" ::: "memory");
        return;
    }
    for (long i = 0; i < task_locks; i++)
        task_take(i);
    for (long i = task_locks; i-- > 0;)
        pthread_mutex_unlock(&task_lock[i]);
}

static void *task_worker(void *arg)
{
    for (long r = 0; r < task_rounds; r++)
        task_step(3);
    return arg;
}

static int tasks(long threads, long locks, long rounds)
{
    if (locks > TASK_LOCKS)
        return 1;
    task_locks = locks;
    task_rounds = rounds;
    for (long i = 0; i < locks; i++)
        pthread_mutex_init(&task_lock[i], NULL);
    for (long i = 0; i < threads; i++) {
        pthread_t th;
        if (pthread_create(&th, NULL, task_worker, NULL))
            return 1;
        pthread_join(th, NULL);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static pthread_mutex_t herd_lock = PTHREAD_MUTEX_INITIALIZER; /* condwait's mutex; the rounds */
static pthread_cond_t herd_wake = PTHREAD_COND_INITIALIZER;   /* what the workers wait on */
static pthread_mutex_t herd_gate = PTHREAD_MUTEX_INITIALIZER; /* mutexwait's one mutex */
static sem_t herd_arrived, herd_done; /* a semaphore: the main thread may hold herd_gate */
static long herd_held, herd_round, herd_released;
static int herd_on_cond, herd_stop;

static void *herd_worker(void *arg)
{
    pthread_mutex_t *own = arg;
    for (long round = 1;; round++) {
        pthread_mutex_lock(&herd_lock);
        while (herd_round < round && !herd_stop) /* idle, holding nothing */
            pthread_cond_wait(&herd_wake, &herd_lock);
        pthread_mutex_unlock(&herd_lock);
        if (herd_stop)
            return NULL;
        for (long i = 0; i < herd_held; i++)
            pthread_mutex_lock(&own[i]);
        if (herd_on_cond) {
            pthread_mutex_lock(&herd_lock);
            sem_post(&herd_arrived);
            while (herd_released < round) /* blocked, holding its own mutexes */
                pthread_cond_wait(&herd_wake, &herd_lock);
            pthread_mutex_unlock(&herd_lock);
        } else {
            sem_post(&herd_arrived);
            pthread_mutex_lock(&herd_gate); /* blocked behind the main thread */
            pthread_mutex_unlock(&herd_gate);
        }
        for (long i = herd_held; i-- > 0;)
            pthread_mutex_unlock(&own[i]);
        sem_post(&herd_done);
    }
}

static void herd_open(long *what, long value)
{
    pthread_mutex_lock(&herd_lock);
    *what = value;
    pthread_cond_broadcast(&herd_wake);
    pthread_mutex_unlock(&herd_lock);
}

/* Starts up to n threads on small stacks (thousands of them), thread i running fn with
 * &own[i * per]: how many started. */
static long start_many(pthread_t *th, long n, void *(*fn)(void *), pthread_mutex_t *own,
                       long per)
{
    pthread_attr_t attr;
    long started = 0;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    while (started < n && !pthread_create(&th[started], &attr, fn, &own[started * per]))
        started++;
    pthread_attr_destroy(&attr);
    return started;
}

/* Each round: the workers take their mutexes and arrive, block (on herd_wake, or on herd_gate
 * which this thread holds meanwhile), are let go, and are done. */
static int herd(long threads, long rounds, long held, int on_cond)
{
    pthread_t *th = malloc((size_t)threads * sizeof *th);
    pthread_mutex_t *own = malloc((size_t)(threads * held) * sizeof *own);
    long n;
    if (!th || !own)
        return 1;
    herd_held = held;
    herd_on_cond = on_cond;
    sem_init(&herd_arrived, 0, 0);
    sem_init(&herd_done, 0, 0);
    for (long i = 0; i < threads * held; i++)
        pthread_mutex_init(&own[i], NULL);
    n = start_many(th, threads, herd_worker, own, held);
    for (long r = 1; r <= rounds; r++) {
        if (!on_cond)
            pthread_mutex_lock(&herd_gate);
        herd_open(&herd_round, r);
        for (long i = 0; i < n; i++)
            sem_wait(&herd_arrived);
        if (on_cond)
            herd_open(&herd_released, r);
        else
            pthread_mutex_unlock(&herd_gate);
        for (long i = 0; i < n; i++)
            sem_wait(&herd_done);
    }
    pthread_mutex_lock(&herd_lock);
    herd_stop = 1;
    pthread_cond_broadcast(&herd_wake);
    pthread_mutex_unlock(&herd_lock);
    for (long i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (long i = 0; i < threads * held; i++)
        pthread_mutex_destroy(&own[i]);
    free(th);
    free(own);
    return n < threads;
}

static int replace(long nlocks, long ops)
{
    pthread_mutex_t **slot = calloc((size_t)nlocks, sizeof *slot);
    unsigned seed = 2463534242u;
    if (!slot)
        return 1;
    for (long k = 0; k < ops; k++) {
        long i = (long)(step(&seed) % (unsigned)nlocks);
        long j = i + 1 + (long)(step(&seed) % 8);
        if (!slot[i]) {
            if ((slot[i] = malloc(sizeof *slot[i])) == NULL)
                return 1;
            pthread_mutex_init(slot[i], NULL);
        }
        pthread_mutex_lock(slot[i]);
        if (j < nlocks && slot[j]) {
            pthread_mutex_lock(slot[j]);
            pthread_mutex_unlock(slot[j]);
        }
        pthread_mutex_unlock(slot[i]);
        if (step(&seed) % 16 == 0) {
            pthread_mutex_destroy(slot[i]);
            free(slot[i]);
            slot[i] = NULL;
        }
    }
    for (long i = 0; i < nlocks; i++)
        if (slot[i]) {
            pthread_mutex_destroy(slot[i]);
            free(slot[i]);
        }
    free(slot);
    return 0;
}

static long crowd_locks, crowd_rounds;
static pthread_barrier_t crowd_meet;

static void *crowd_worker(void *arg)
{
    pthread_mutex_t *m = arg;
    for (long i = 0; i < crowd_locks; i++)
        pthread_mutex_init(&m[i], NULL);
    pthread_barrier_wait(&crowd_meet);
    for (long r = 0; r < crowd_rounds; r++) {
        for (long i = 0; i < crowd_locks; i++)
            pthread_mutex_lock(&m[i]);
        for (long i = crowd_locks; i-- > 0;)
            pthread_mutex_unlock(&m[i]);
    }
    pthread_barrier_wait(&crowd_meet);
    for (long i = 0; i < crowd_locks; i++)
        pthread_mutex_destroy(&m[i]);
    return NULL;
}

static int crowd(long threads, long locks, long rounds)
{
    pthread_t *th = malloc((size_t)threads * sizeof *th);
    pthread_mutex_t *m = malloc((size_t)(threads * locks) * sizeof *m);
    if (!th || !m)
        return 1;
    crowd_locks = locks;
    crowd_rounds = rounds;
    pthread_barrier_init(&crowd_meet, NULL, (unsigned)threads);
    if (start_many(th, threads, crowd_worker, m, locks) < threads)
        exit(1); /* the barrier would wait for threads that never came */
    for (long i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&crowd_meet);
    free(th);
    free(m);
    return 0;
}

/* The scripts of spawn, one after the other; 1 when one could not be run or failed. */
static int spawn(long scripts, long commands)
{
    char script[128];
    snprintf(script, sizeof script,
             "i=0; while [ $i -lt %ld ]; do /bin/true || exit 1; i=$((i+1)); done", commands);
    char *argv[] = {"sh", "-c", script, NULL};
    for (long i = 0; i < scripts; i++) {
        pid_t pid;
        int status;
        if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}

/* The processes of exec, one after the other; 1 when one could not be run or failed. */
static int exec_each(const char *self, long processes, long locks)
{
    char n[32];
    snprintf(n, sizeof n, "%ld", locks);
    char *own[] = {(char *)self, "locks", n, "1", "1", NULL}, *lockless[] = {"true", NULL};
    const char *path = locks ? self : "/bin/true";
    for (long i = 0; i < processes; i++) {
        pid_t pid;
        int status;
        if (posix_spawn(&pid, path, NULL, NULL, locks ? own : lockless, environ) != 0 ||
            waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}

/* exec's child: locks mutexes taken nested and released, once. */
static int take_locks(long locks)
{
    pthread_mutex_t *m = calloc((size_t)locks, sizeof *m);
    if (!m)
        return 1;
    for (long i = 0; i < locks; i++)
        pthread_mutex_init(&m[i], NULL);
    for (long i = 0; i < locks; i++)
        pthread_mutex_lock(&m[i]);
    for (long i = locks; i-- > 0;)
        pthread_mutex_unlock(&m[i]);
    free(m);
    return 0;
}

static int fork_each(long processes)
{
    for (long i = 0; i < processes; i++) {
        int status;
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
            return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static volatile sig_atomic_t storm_signals;
static long storm_children;

static void storm_tick(int sig)
{
    (void)sig;
    storm_signals++;
}

static void *storm_child(void *arg)
{
    return arg;
}

static void *storm_parent(void *arg)
{
    pthread_t *th = malloc((size_t)storm_children * sizeof *th);
    long started = 0;
    while (th && started < storm_children &&
           !pthread_create(&th[started], NULL, storm_child, NULL))
        started++;
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    return th && started == storm_children ? arg : (void *)1;
}

static int storm(long parents, long children, long interval_us)
{
    pthread_t *th = malloc((size_t)parents * sizeof *th);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = storm_tick;
    sa.sa_flags = SA_RESTART;
    struct itimerval every = {{0, interval_us}, {0, interval_us}}, off = {{0, 0}, {0, 0}};
    if (!th || sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &every, NULL) != 0)
        return 1;
    storm_children = children;
    long started = 0;
    void *failed = NULL;
    while (started < parents && !pthread_create(&th[started], NULL, storm_parent, NULL))
        started++;
    for (long i = 0; i < started; i++) {
        void *r;
        pthread_join(th[i], &r);
        failed = failed ? failed : r;
    }
    setitimer(ITIMER_REAL, &off, NULL);
    free(th);
    return started < parents || failed;
}

int main(int argc, char **argv)
{
    static const char *shapes[] = {"groups",   "lazy",      "churn", "threads", "condwait",
                                   "mutexwait", "spawn", "exec", "locks", "fork",
                                   "sigthreads", "crowd", "replace", "tasks"};
    enum { SHAPES = sizeof shapes / sizeof shapes[0], SPAWN = 6, EXEC, LOCKS, FORK, STORM, CROWD,
           REPLACE, TASKS };
    int shape = 0;
    while (argc == 5 && shape < SHAPES && strcmp(argv[1], shapes[shape]))
        shape++;
    if (argc != 5 || shape == SHAPES) {
        fprintf(stderr, "usage: stressbench groups GROUPS SIZE LOOPS | lazy THREADS LOCKS ITERS"
                        " | churn THREADS MUTEXES ITERS | threads AT_ONCE ROUNDS LOCKS"
                        " | condwait|mutexwait THREADS ROUNDS HELD | spawn SCRIPTS COMMANDS 1"
                        " | exec PROCESSES LOCKS 1 | fork PROCESSES 1 1"
                        " | sigthreads PARENTS CHILDREN MICROSECONDS"
                        " | crowd THREADS LOCKS ROUNDS | replace LOCKS OPS 1"
                        " | tasks THREADS LOCKS ROUNDS\n");
        return 2;
    }
    long a = atol(argv[2]), b = atol(argv[3]), c = atol(argv[4]);
    if (a < 1 || b < (shape == EXEC ? 0 : 1) || c < 1)
        return 2;
    if (shape == LOCKS)
        return take_locks(a);
    double t0 = now(), c0 = cpu(), children0 = cpu_of(RUSAGE_CHILDREN);
    int rc = shape == 0       ? groups(a, b, c)
             : shape == 1     ? lazy(a, b < 10 ? 10 : b, c)
             : shape == 2     ? churn(a, b, c)
             : shape == 3     ? short_lived(a, b, c)
             : shape == SPAWN ? spawn(a, b)
             : shape == EXEC  ? exec_each(argv[0], a, b)
             : shape == FORK  ? fork_each(a)
             : shape == STORM ? storm(a, b, c)
             : shape == CROWD ? crowd(a, b, c)
             : shape == REPLACE ? replace(a, b)
             : shape == TASKS ? tasks(a, b, c)
                              : herd(a, b, c, shape == 4);
    if (shape == SPAWN || shape == EXEC)
        printf("cpu_seconds=%.6f ", cpu_of(RUSAGE_CHILDREN) - children0);
    else if (shape == FORK)
        printf("cpu_seconds=%.6f ", cpu() - c0 + cpu_of(RUSAGE_CHILDREN) - children0);
    else if (shape == STORM)
        printf("cpu_seconds=%.6f signals=%ld ", cpu() - c0, (long)storm_signals);
    else if (shape >= 4 && shape != REPLACE && shape != TASKS) /* condwait, mutexwait, crowd */
        printf("cpu_seconds=%.6f ", cpu() - c0);
    printf("seconds=%.6f\n", now() - t0);
    return rc;
}
