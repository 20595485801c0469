/*
 * rt_waiter.c - a real-time thread and a normal one on one CPU, both making new lock orders
 * (nested pairs of their own mutexes, always in address order: no inversion). A thread of
 * real-time priority that waits for a tracer lock held by the other must let it run: where it
 * yielded, the kernel never gave the CPU to the lower priority but in its throttle slack, and
 * the real-time thread's busy waiting took most of the run (traced 6x slower). Each thread's
 * own CPU time is measured: the work is the same, so the real-time thread's must stay near
 * the other's (50 ms of slack for small runs' noise: the busy wait took ~1 s), where the
 * machine's load changes neither. The real-time thread naps now and
 * then, so that it comes back while the other is inside the tracer.
 *   rt_waiter    prints "real-time thread within 3x the other's CPU (+ 50 ms): yes", then
 *                "done";
 *                exits 77 where a SCHED_FIFO thread cannot be made (no privilege)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LOCKS 3000
#define ROUNDS 10

static pthread_mutex_t *locks;
static pthread_barrier_t start;

typedef struct {
    int base;
    int naps;   /* sleeps now and then: each wake-up may come while the other is in the tracer */
    double cpu; /* seconds of this thread's CPU */
} worker;

static double thread_cpu(void)
{
    struct timespec t;
    clockid_t c;
    if (pthread_getcpuclockid(pthread_self(), &c) != 0 || clock_gettime(c, &t) != 0)
        return 0;
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&start);
    double t0 = thread_cpu();
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < LOCKS; i++) {
            if (w->naps && i % (LOCKS / 4) == 0)
                nanosleep(&(struct timespec){0, 200000}, NULL);
            int j = (i * 7 + r + 1) % LOCKS, lo = i < j ? i : j, hi = i < j ? j : i;
            if (lo == hi)
                continue;
            pthread_mutex_lock(&locks[w->base + lo]);
            pthread_mutex_lock(&locks[w->base + hi]);
            pthread_mutex_unlock(&locks[w->base + hi]);
            pthread_mutex_unlock(&locks[w->base + lo]);
        }
    w->cpu = thread_cpu() - t0;
    return NULL;
}

int main(void)
{
    cpu_set_t mine, one;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return perror("sched_getaffinity"), 1;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) {
            CPU_SET(c, &one);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return perror("sched_setaffinity"), 1;
    locks = calloc(2 * LOCKS, sizeof *locks);
    if (!locks)
        return perror("calloc"), 1;
    for (int i = 0; i < 2 * LOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    pthread_barrier_init(&start, NULL, 2);

    pthread_attr_t plain, fifo;
    struct sched_param prio = {.sched_priority = 1};
    pthread_attr_init(&plain);
    pthread_attr_init(&fifo);
    pthread_attr_setinheritsched(&fifo, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&fifo, SCHED_FIFO);
    pthread_attr_setschedparam(&fifo, &prio);
    worker normal = {0, 0, 0}, rt = {LOCKS, 1, 0};
    pthread_t tn, tr;
    if (pthread_create(&tr, &fifo, work, &rt) != 0) {
        printf("a SCHED_FIFO thread cannot be made here: skipped\n");
        return 77;
    }
    if (pthread_create(&tn, &plain, work, &normal) != 0)
        return perror("pthread_create"), 1;
    pthread_join(tr, NULL);
    pthread_join(tn, NULL);
    if (rt.cpu < 3 * normal.cpu + 0.05)
        printf("real-time thread within 3x the other's CPU (+ 50 ms): yes\n");
    else
        printf("real-time thread within 3x the other's CPU (+ 50 ms): no (%.3f s against %.3f s)\n",
               rt.cpu, normal.cpu);
    printf("done\n");
    return 0;
}
