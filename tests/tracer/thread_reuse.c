/*
 * thread_reuse.c - a thread's tracer state comes from a dead thread's (thread.c keeps dead
 * threads' states for the next ones and gives the rest back to the system): what a report
 * says of the new thread must be its own, nothing of the thread before.
 *   thread_reuse N
 N "first" threads run at once: each names itself, takes 40 locks of its own nested (walks
 * and their frames, recorded stacks, a held set grown out of its inline room and indexed, new
 * lock orders, their labels and nodes) and lets go of them out of order, then takes PAIRS
 * pairs of new locks of its own nested (new orders at one place: past its unwinds, the
 * thread keeps the last label); they end one after the other, in the order they were made.
 * Then one "second" thread names itself, takes X then Y through the same calls as those pairs
 * (the same stacks: a label or name kept from the state before would be taken for its own),
 * and ends holding L (an exit-held report); then main takes Y then X, an inversion whose other
 * order is the second thread's. The second thread gets the last one's state: with N = 1
 * zeroed; with N = 100, past the states kept, given back to the system.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define HELD 40
#define PAIRS 80 /* past a call site's unwinds (order.c: UNWOUND_PER_SITE) */
#define OWN (HELD + 2 * PAIRS)

typedef struct role {
    const char *name;
    pthread_mutex_t *a, *b; /* pairs taken nested: a[i] then b[i] */
    int pairs;
    pthread_mutex_t *nested; /* HELD locks, or NULL */
    pthread_mutex_t *keep; /* held at the end, or NULL */
    sem_t *leave; /* posted when it may end, or NULL */
} role;

static pthread_mutex_t x = PTHREAD_MUTEX_INITIALIZER, y = PTHREAD_MUTEX_INITIALIZER,
                       l = PTHREAD_MUTEX_INITIALIZER;

NOINLINE static void take_nested(pthread_mutex_t *m)
{
    for (int i = 0; i < HELD; i++)
        pthread_mutex_lock(&m[i]);
    for (int i = 1; i < HELD; i += 2) /* out of order: the set is indexed */
        pthread_mutex_unlock(&m[i]);
    for (int i = 0; i < HELD; i += 2)
        pthread_mutex_unlock(&m[i]);
}

NOINLINE static void take_pair(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

NOINLINE static void keep_lock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
}

NOINLINE static void *worker(void *arg)
{
    const role *r = arg;
    pthread_setname_np(pthread_self(), r->name);
    if (r->nested)
        take_nested(r->nested);
    for (int i = 0; i < r->pairs; i++)
        take_pair(&r->a[i], &r->b[i]);
    if (r->keep)
        keep_lock(r->keep);
    while (r->leave && sem_wait(r->leave) != 0)
        ;
    return NULL;
}

NOINLINE static void main_inverts(void)
{
    pthread_mutex_lock(&y);
    pthread_mutex_lock(&x);
    pthread_mutex_unlock(&x);
    pthread_mutex_unlock(&y);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t *th = calloc((size_t)n + 1, sizeof *th);
    role *roles = calloc((size_t)n + 1, sizeof *roles);
    sem_t *leave = calloc((size_t)n, sizeof *leave);
    pthread_mutex_t *m = calloc((size_t)n * OWN, sizeof *m);
    if (!th || !roles || !leave || !m)
        return 1;
    for (int i = 0; i < n; i++) {
        pthread_mutex_t *own = &m[(size_t)i * OWN];
        for (int k = 0; k < OWN; k++)
            pthread_mutex_init(&own[k], NULL);
        sem_init(&leave[i], 0, 0);
        roles[i] = (role){"first", own + HELD, own + HELD + PAIRS, PAIRS, own, NULL, &leave[i]};
        if (pthread_create(&th[i], NULL, worker, &roles[i]) != 0)
            return 1;
    }
    for (int i = 0; i < n; i++) { /* the last made ends last */
        sem_post(&leave[i]);
        pthread_join(th[i], NULL);
    }
    roles[n] = (role){"second", &x, &y, 1, NULL, &l, NULL};
    if (pthread_create(&th[n], NULL, worker, &roles[n]) != 0)
        return 1;
    pthread_join(th[n], NULL);
    main_inverts();
    printf("%d first threads, then the second: done\n", n);
    return 0;
}
