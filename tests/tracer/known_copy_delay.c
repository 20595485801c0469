/*
 * known_copy_delay.c - threads making new lock-order edges while the one copying the known
 * set is held in the middle of its copy, which must neither hang nor report. The known set
 * is copied outside the graph lock by the thread that found it filling, while the others go
 * on adding (and logging what they add); a copier delayed long enough found the set grown
 * twice meanwhile and its copy filled by the log: it spun for ever with the program's locks
 * held (known.c, known_catch_up_early). Only a descheduled copier shows it, so the main
 * thread plays the scheduler: a worker that used STUCK_CPU_NS of CPU time without finishing
 * one pair of locks is inside a long step of the tracer - nearly always the copy of a large
 * set - and a signal whose handler sleeps a few ms holds it there while the others add.
 * Each run is a fresh process (the known set only grows, and only its copies up to about
 * 128 K slots can be outgrown by a log), RUNS of them in turn. Prints one line that does not
 * depend on timing. With the library of before the fix it hung in 8 of 10 runs (twice).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../pc.h"

#define WORKERS 4
#define LOCKS 4096
#define ROUNDS 60000
#define RUNS 5
#define POLL_NS 100000L       /* how often the main thread looks at the workers */
#define STUCK_CPU_NS 100000LL /* CPU time in one pair of locks that is a long tracer step */
#define HOLD_MIN_NS 2000000L  /* a held worker sleeps 2 to 30 ms: long enough for the others */
#define HOLD_SPAN_NS 28000000L /* to add more than the copy holds, short of the log's end */

static pthread_t worker_id[WORKERS];
static atomic_ulong rounds_done[WORKERS];
static atomic_int finished;
static atomic_int holding; /* a worker is held (or signalled): one at a time */
static atomic_uint hold_seed = 1;

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void hold(int sig, siginfo_t *info, void *uc)
{
    (void)sig, (void)info, (void)uc;
    int saved = errno;
    unsigned s = atomic_fetch_add(&hold_seed, 0x9e3779b9u);
    long ns = HOLD_MIN_NS + (long)(next_rand(&s) % (unsigned)HOLD_SPAN_NS);
    struct timespec left = {0, ns};
    while (nanosleep(&left, &left) != 0)
        ;
    atomic_store(&holding, 0);
    errno = saved;
}

/* Nests pairs of its own mutexes in index order: a new edge nearly every time, no inversion,
 * and no thread ever waits for another's lock. */
static void *work(void *arg)
{
    size_t me = (size_t)arg;
    pthread_mutex_t *m = calloc(LOCKS, sizeof *m);
    unsigned seed = (unsigned)me * 7919u + 1;
    if (!m)
        abort();
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&m[i], NULL);
    for (unsigned long r = 1; r <= ROUNDS; r++) {
        unsigned a = next_rand(&seed) % LOCKS, b = next_rand(&seed) % LOCKS;
        if (a > b) {
            unsigned t = a;
            a = b;
            b = t;
        }
        pthread_mutex_lock(&m[a]);
        if (b != a)
            pthread_mutex_lock(&m[b]);
        if (b != a)
            pthread_mutex_unlock(&m[b]);
        pthread_mutex_unlock(&m[a]);
        atomic_store_explicit(&rounds_done[me], r, memory_order_relaxed);
    }
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_destroy(&m[i]);
    free(m);
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static long long cpu_ns(pthread_t t)
{
    clockid_t c;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &c) != 0 || clock_gettime(c, &ts) != 0)
        return -1;
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One run: the workers, and the main thread holding whichever is stuck in the tracer. */
static int run(void)
{
    /* installed past the tracer, which would otherwise run it only once the worker left */
    if (pc_probe_install(SIGUSR1, hold, 0) != 0)
        return 1;
    for (size_t i = 0; i < WORKERS; i++)
        if (pthread_create(&worker_id[i], NULL, work, (void *)i) != 0)
            return 1;
    unsigned long seen[WORKERS] = {0};
    long long cpu[WORKERS] = {0};
    while (atomic_load(&finished) < WORKERS) {
        struct timespec pause = {0, POLL_NS};
        nanosleep(&pause, NULL);
        for (int i = 0; i < WORKERS; i++) {
            unsigned long r = atomic_load_explicit(&rounds_done[i], memory_order_relaxed);
            long long c = cpu_ns(worker_id[i]);
            /* Not after its last round: a finished worker would never clear `holding`. */
            int stuck = r == seen[i] && r > 0 && r < ROUNDS && c - cpu[i] >= STUCK_CPU_NS;
            seen[i] = r;
            cpu[i] = c;
            int none = 0;
            if (stuck && atomic_compare_exchange_strong(&holding, &none, 1))
                pthread_kill(worker_id[i], SIGUSR1);
        }
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(worker_id[i], NULL);
    return 0;
}

int main(void)
{
    for (int i = 0; i < RUNS; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            _exit(run());
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("run %d failed\n", i);
            return 1;
        }
    }
    printf("%d runs of %d threads nesting %d pairs of their own mutexes each\n", RUNS, WORKERS,
           ROUNDS);
    return 0;
}
