/*
 * lifecycle_race.c - legitimate lock lifecycles racing on shared memory, which must produce no
 * report: threads take turns with the mutexes of one array (a thread owns a slot while it
 * inits, locks, unlocks and destroys its mutex, so every address is made a lock again by
 * many threads, and its neighbours' at the same moment), nest two owned slots in index order,
 * free heap blocks whose mutex was never destroyed, and the main thread forks meanwhile: each
 * child makes a lock of every slot nobody owned at the fork, and exits. Prints one line that
 * does not depend on timing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define SLOTS 256
#define ROUNDS 60000
#define FORKS 8

static pthread_mutex_t slot[SLOTS];
static atomic_int owner[SLOTS]; /* 0 = free, else the owning thread's number + 1 */
static long uses[SLOTS];
static atomic_int running;

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static int take(int i, int me)
{
    int none = 0;
    return atomic_compare_exchange_strong(&owner[i], &none, me);
}

static void give(int i)
{
    atomic_store(&owner[i], 0);
}

/* Slot i, owned: a lock from its init to its destroy. */
static void lifecycle(int i)
{
    pthread_mutex_init(&slot[i], NULL);
    pthread_mutex_lock(&slot[i]);
    uses[i]++;
    pthread_mutex_unlock(&slot[i]);
    pthread_mutex_destroy(&slot[i]);
}

/* Slots i < j, owned: both made, nested in index order, destroyed. */
static void nested(int i, int j)
{
    pthread_mutex_init(&slot[i], NULL);
    pthread_mutex_init(&slot[j], NULL);
    pthread_mutex_lock(&slot[i]);
    pthread_mutex_lock(&slot[j]);
    uses[i]++;
    uses[j]++;
    pthread_mutex_unlock(&slot[j]);
    pthread_mutex_unlock(&slot[i]);
    pthread_mutex_destroy(&slot[j]);
    pthread_mutex_destroy(&slot[i]);
}

/* A heap object's mutex, used and freed without a destroy: its memory ends it. */
static void freed_object(void)
{
    pthread_mutex_t *m = malloc(sizeof *m);
    if (!m)
        return;
    pthread_mutex_init(m, NULL);
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    free(m);
}

static void *worker(void *arg)
{
    int me = (int)(size_t)arg + 1;
    unsigned seed = (unsigned)me * 7919u;
    for (int n = 0; n < ROUNDS; n++) {
        unsigned r = next_rand(&seed);
        int i = (int)(r % SLOTS), j = (int)((r >> 8) % SLOTS);
        if ((r >> 16) % 8 == 0) {
            freed_object();
        } else if ((r >> 16) % 8 == 1 && i != j) {
            int lo = i < j ? i : j, hi = i < j ? j : i;
            if (take(lo, me)) {
                if (take(hi, me)) {
                    nested(lo, hi);
                    give(hi);
                }
                give(lo);
            }
        } else if (take(i, me)) {
            lifecycle(i);
            give(i);
        }
    }
    atomic_fetch_sub(&running, 1);
    return NULL;
}

/* In a child of a fork made while the workers run: every slot nobody owned is unlocked and
 * destroyed (or never made), and the child's only thread makes a lock of each. */
static void child(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (atomic_load(&owner[i]) == 0)
            lifecycle(i);
    _exit(0);
}

int main(void)
{
    pthread_t th[THREADS];
    atomic_store(&running, THREADS);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(size_t)i);
    int forks = 0, failed = 0;
    while (forks < FORKS && atomic_load(&running) > 0) {
        pid_t pid = fork();
        if (pid == 0)
            child();
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed++;
        forks++;
        usleep(2000);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    long total = 0;
    for (int i = 0; i < SLOTS; i++)
        total += uses[i];
    printf("lifecycles done%s%s\n", total > 0 ? "" : " (none)", failed ? " (a child failed)" : "");
    return 0;
}
