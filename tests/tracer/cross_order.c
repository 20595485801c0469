/*
 * cross_order.c - lock-order inversions (potential deadlocks) and the orders that are not
 * one, chosen by name:
 *   cross_order NAME
 * The threads of an inversion run one after another (each is joined before the next starts),
 * so nothing ever blocks: only the lock-order graph can see the risk. Every scenario prints
 * one line that does not depend on the tracer; meson.build holds the expected reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAX_LOCKS 128

static pthread_mutex_t mutexes[MAX_LOCKS];
static pthread_rwlock_t rwlocks[MAX_LOCKS];
static int cycle_len;

typedef void *(*thread_fn)(void *);

/* Runs fn(i) for i in [0, n), one thread at a time. */
static void one_after_another(int n, thread_fn fn)
{
    for (long i = 0; i < n; i++) {
        pthread_t th;
        pthread_create(&th, NULL, fn, (void *)i);
        pthread_join(th, NULL);
    }
}

/* Thread i takes mutex i, then mutex i+1 (mod n): together a cycle of length n. */
NOINLINE void *take_pair(void *arg)
{
    long i = (long)arg;
    pthread_mutex_lock(&mutexes[i]);
    pthread_mutex_lock(&mutexes[(i + 1) % cycle_len]);
    pthread_mutex_unlock(&mutexes[(i + 1) % cycle_len]);
    pthread_mutex_unlock(&mutexes[i]);
    return NULL;
}

static void inversion(int n, int rounds)
{
    cycle_len = n;
    for (int r = 0; r < rounds; r++)
        one_after_another(n, take_pair);
    printf("cycle of %d, %d rounds\n", n, rounds);
}

/* The same inversion in a single thread, at different times. */
NOINLINE void ab_then_ba(void)
{
    cycle_len = 2;
    take_pair((void *)0);
    take_pair((void *)1);
    puts("one thread, both orders");
}

/* Thread 0: A then B. Thread 1: B, then a trylock of A that backs off when busy. */
NOINLINE void *try_back_off(void *arg)
{
    long i = (long)arg;
    if (i == 0) {
        take_pair((void *)0);
        return NULL;
    }
    pthread_mutex_lock(&mutexes[1]);
    int rc = pthread_mutex_trylock(&mutexes[0]); /* may not block: no edge into it */
    if (rc == 0)
        pthread_mutex_unlock(&mutexes[0]);
    pthread_mutex_unlock(&mutexes[1]);
    return NULL;
}

/* Thread 0: A, then `between` trylocked mutexes (and read-held rwlocks), then B, all held at
 * once. Thread 1: B then A. The edge A -> B must not be lost behind the ones in between. */
static int between;

NOINLINE void *window_pair(void *arg)
{
    if ((long)arg == 1) {
        take_pair((void *)1);
        return NULL;
    }
    pthread_mutex_lock(&mutexes[0]);
    for (int i = 0; i < between; i++) {
        if (pthread_mutex_trylock(&mutexes[2 + i]) != 0)
            abort();
        pthread_rwlock_rdlock(&rwlocks[i]);
    }
    pthread_mutex_lock(&mutexes[1]);
    pthread_mutex_unlock(&mutexes[1]);
    for (int i = between; i-- > 0;) {
        pthread_rwlock_unlock(&rwlocks[i]);
        pthread_mutex_unlock(&mutexes[2 + i]);
    }
    pthread_mutex_unlock(&mutexes[0]);
    return NULL;
}

/* One thread read-holds n rwlocks of its own at once (default: reader-preferring, so none
 * is an anchor and each leads an edge into the next), then lets them go. */
NOINLINE void read_held(int n)
{
    pthread_rwlock_t *r = calloc((size_t)n, sizeof *r);
    if (!r)
        abort();
    for (int i = 0; i < n; i++)
        pthread_rwlock_rdlock(&r[i]);
    for (int i = n; i-- > 0;)
        pthread_rwlock_unlock(&r[i]);
    for (int i = 0; i < n; i++)
        pthread_rwlock_destroy(&r[i]);
    free(r);
    printf("%d read-held at once\n", n);
}

/* n locks; thread r takes all of them at once, starting at lock r and wrapping around: every
 * two locks are taken in both orders, so the shortest cycles have 2 locks. */
NOINLINE void *take_rotated(void *arg)
{
    long r = (long)arg;
    for (int i = 0; i < cycle_len; i++)
        pthread_mutex_lock(&mutexes[(r + i) % cycle_len]);
    for (int i = cycle_len; i-- > 0;)
        pthread_mutex_unlock(&mutexes[(r + i) % cycle_len]);
    return NULL;
}

/* Rwlocks i and i+1 in the given modes; thread i of a cycle of 2. */
static int first_write, second_write;

NOINLINE void *take_rw_pair(void *arg)
{
    long i = (long)arg;
    pthread_rwlock_t *a = &rwlocks[i], *b = &rwlocks[(i + 1) % 2];
    if (first_write)
        pthread_rwlock_wrlock(a);
    else
        pthread_rwlock_rdlock(a);
    if (second_write)
        pthread_rwlock_wrlock(b);
    else
        pthread_rwlock_rdlock(b);
    pthread_rwlock_unlock(b);
    pthread_rwlock_unlock(a);
    return NULL;
}

static void rw_inversion(int w1, int w2, int writer_pref)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    if (writer_pref)
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (int i = 0; i < 2; i++) {
        pthread_rwlock_destroy(&rwlocks[i]);
        pthread_rwlock_init(&rwlocks[i], &attr);
    }
    first_write = w1;
    second_write = w2;
    one_after_another(2, take_rw_pair);
    printf("rwlocks %s then %s%s\n", w1 ? "write" : "read", w2 ? "write" : "read",
           writer_pref ? ", writer-preferring" : "");
}

/* Mutexes and an rwlock in one cycle: M0 -> R0 (write), R0 (read) -> M1, M1 -> M0. */
NOINLINE void *mixed_pair(void *arg)
{
    switch ((long)arg) {
    case 0:
        pthread_mutex_lock(&mutexes[0]);
        pthread_rwlock_wrlock(&rwlocks[0]);
        pthread_rwlock_unlock(&rwlocks[0]);
        pthread_mutex_unlock(&mutexes[0]);
        break;
    case 1:
        pthread_rwlock_rdlock(&rwlocks[0]);
        pthread_mutex_lock(&mutexes[1]);
        pthread_mutex_unlock(&mutexes[1]);
        pthread_rwlock_unlock(&rwlocks[0]);
        break;
    default:
        pthread_mutex_lock(&mutexes[1]);
        pthread_mutex_lock(&mutexes[0]);
        pthread_mutex_unlock(&mutexes[0]);
        pthread_mutex_unlock(&mutexes[1]);
    }
    return NULL;
}

/* A then B; both destroyed and initialised again at the same addresses; then B then A:
 * different locks, no inversion. Then the same with locks in freed and reused memory. */
NOINLINE void reuse_after_destroy(void)
{
    cycle_len = 2;
    take_pair((void *)0);
    for (int i = 0; i < 2; i++) {
        pthread_mutex_destroy(&mutexes[i]);
        pthread_mutex_init(&mutexes[i], NULL);
    }
    take_pair((void *)1);
    for (int round = 0; round < 2; round++) {
        pthread_mutex_t *m = malloc(2 * sizeof *m);
        pthread_mutex_init(&m[0], NULL);
        pthread_mutex_init(&m[1], NULL);
        pthread_mutex_lock(&m[round]);
        pthread_mutex_lock(&m[1 - round]);
        pthread_mutex_unlock(&m[1 - round]);
        pthread_mutex_unlock(&m[round]);
        pthread_mutex_destroy(&m[0]);
        pthread_mutex_destroy(&m[1]);
        free(m);
    }
    puts("reused");
}

/* ------------------------------------------------------------------------------------------
 * Races: two threads make the two edges of a cycle at the same moment, round after round. A
 * thread takes writer-preferring rwlocks X and Y (a read/read cycle, which cannot deadlock
 * while no writer comes) in its own order: X then Y agrees with the order graph's order (both
 * locks are in the graph already, with nothing between them), Y then X runs against it. Each
 * round's cycle is reported exactly once, whichever edge comes last; then the locks are made
 * again, so the next round starts from a graph without a cycle.
 * ---------------------------------------------------------------------------------------- */
#define RACE_ROUNDS 12

static atomic_int race_ready;

static void read_pair(pthread_rwlock_t *a, pthread_rwlock_t *b)
{
    pthread_rwlock_rdlock(a);
    pthread_rwlock_rdlock(b);
    pthread_rwlock_unlock(b);
    pthread_rwlock_unlock(a);
}

static void rwlock_attr(pthread_rwlockattr_t *attr, int writer_pref)
{
    pthread_rwlockattr_init(attr);
    pthread_rwlockattr_setkind_np(attr, writer_pref ? PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
                                                    : PTHREAD_RWLOCK_PREFER_READER_NP);
}

NOINLINE void *race_pair(void *arg)
{
    long i = (long)arg;
    pthread_rwlock_t *a = &rwlocks[i], *b = &rwlocks[1 - i];
    pthread_mutex_lock(&mutexes[0]); /* its lock into the graph, and the thread a known one */
    pthread_rwlock_rdlock(a);
    pthread_rwlock_unlock(a);
    pthread_mutex_unlock(&mutexes[0]);
    atomic_fetch_add(&race_ready, 2 - i); /* 1 + 2: a multiple of 3 once both are here */
    while (atomic_load(&race_ready) % 3)
        sched_yield();
    read_pair(a, b);
    return NULL;
}

static void race_cycles(void)
{
    pthread_rwlockattr_t attr;
    rwlock_attr(&attr, 1);
    for (int r = 0; r < RACE_ROUNDS; r++) {
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_rwlock_init(&rwlocks[i], &attr);
        for (long i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_pair, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < 2; i++)
            pthread_rwlock_destroy(&rwlocks[i]);
    }
    printf("%d rounds of racing edges\n", RACE_ROUNDS);
}

/*
 * The same race on locks new to the order graph: both threads make the node of the same lock
 * at once, without the graph lock (edges_fast). Each round, RACE_CHAIN rwlocks are made
 * again; step by step, both starting each step together, both threads read-lock k then k + 1
 * (read-held: neither waits for the other), so both look for the node of k + 1 and one of them
 * makes it while the other may be making one too. Then the last lock is taken before lock 0:
 * a cycle through every lock (a lock with two nodes would break it). On writer-preferring
 * rwlocks it is reported once per round; on reader-preferring ones, where readers never wait
 * for readers, it is no deadlock and nothing is reported.
 */
#define RACE_CHAIN 33       /* its first report stays below the 64 KB a report may take */
#define RACE_FRESH_ROUNDS 36
#define RACE_SPIN 100000 /* polls before the waiting thread yields: both start within ns */

static pthread_rwlock_t race_chain[RACE_CHAIN];
static atomic_int race_steps;

NOINLINE void *race_fresh(void *arg)
{
    long i = (long)arg;
    pthread_mutex_lock(&mutexes[2 + 2 * i]); /* an edge under the graph lock: the thread kept */
    pthread_mutex_lock(&mutexes[3 + 2 * i]);
    pthread_mutex_unlock(&mutexes[3 + 2 * i]);
    pthread_mutex_unlock(&mutexes[2 + 2 * i]);
    for (int k = 0; k + 1 < RACE_CHAIN; k++) {
        int step = atomic_fetch_add(&race_steps, 1) / 2 * 2 + 2; /* both threads: one step */
        for (long spin = 0; atomic_load(&race_steps) < step; spin++)
            if (spin > RACE_SPIN)
                sched_yield(); /* the other thread is not running: let it */
        read_pair(&race_chain[k], &race_chain[k + 1]);
    }
    return NULL;
}

static void race_fresh_cycles(int writer_pref)
{
    pthread_rwlockattr_t attr;
    rwlock_attr(&attr, writer_pref);
    for (int r = 0; r < RACE_FRESH_ROUNDS; r++) {
        pthread_t th[2];
        for (int k = 0; k < RACE_CHAIN; k++)
            pthread_rwlock_init(&race_chain[k], &attr);
        for (int m = 2; m < 6; m++)
            pthread_mutex_init(&mutexes[m], NULL);
        atomic_store(&race_steps, 0);
        for (long i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_fresh, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        read_pair(&race_chain[RACE_CHAIN - 1], &race_chain[0]);
        for (int k = 0; k < RACE_CHAIN; k++)
            pthread_rwlock_destroy(&race_chain[k]);
        for (int m = 2; m < 6; m++)
            pthread_mutex_destroy(&mutexes[m]);
    }
    printf("%d rounds of a chain of %d new %s-preferring rwlocks made by two threads at once\n",
           RACE_FRESH_ROUNDS, RACE_CHAIN, writer_pref ? "writer" : "reader");
}

/* ------------------------------------------------------------------------------------------
 * Stress: many threads, many rwlocks, random subsets always taken in index order, in random
 * modes, with trylocks in any order (which may not block): never an inversion.
 * ---------------------------------------------------------------------------------------- */
#define STRESS_THREADS 8
#define STRESS_ITERS 100000

static long counters[MAX_LOCKS];
static int descending; /* "index order" is from the last lock down (against address order) */

static int nth(int i)
{
    return descending ? MAX_LOCKS - 1 - i : i;
}

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static int stress_iters = STRESS_ITERS;

NOINLINE void *ordered_worker(void *arg)
{
    unsigned seed = (unsigned)(long)arg * 7919u + 1;
    for (int it = 0; it < stress_iters; it++) {
        int taken[4], n = 0, start = (int)(next_rand(&seed) % MAX_LOCKS);
        for (int i = start; i < MAX_LOCKS && n < 4; i += 1 + (int)(next_rand(&seed) % 8)) {
            int w = next_rand(&seed) % 4 == 0;
            (w ? pthread_rwlock_wrlock : pthread_rwlock_rdlock)(&rwlocks[nth(i)]);
            if (w)
                counters[nth(i)]++;
            taken[n++] = nth(i);
        }
        int other = (int)(next_rand(&seed) % MAX_LOCKS);
        if (pthread_rwlock_tryrdlock(&rwlocks[other]) == 0)
            pthread_rwlock_unlock(&rwlocks[other]);
        while (n > 0)
            pthread_rwlock_unlock(&rwlocks[taken[--n]]);
    }
    return NULL;
}

/* Thread 0 takes rwlock 3 then 60 for write, thread 1 the other way round. */
NOINLINE void *write_pair_inverted(void *arg)
{
    pthread_rwlock_t *a = &rwlocks[(long)arg ? 60 : 3], *b = &rwlocks[(long)arg ? 3 : 60];
    pthread_rwlock_wrlock(a);
    pthread_rwlock_wrlock(b);
    pthread_rwlock_unlock(b);
    pthread_rwlock_unlock(a);
    return NULL;
}

/* writer_pref: the locks queue readers behind waiting writers, so the wait-for check sees
 * "queued behind a writer" waits all the time; none of them is part of a cycle. */
static void stress(int writer_pref)
{
    pthread_t th[STRESS_THREADS];
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    if (writer_pref)
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (int i = 0; i < MAX_LOCKS; i++) {
        pthread_rwlock_destroy(&rwlocks[i]);
        pthread_rwlock_init(&rwlocks[i], &attr);
    }
    for (long i = 0; i < STRESS_THREADS; i++)
        pthread_create(&th[i], NULL, ordered_worker, (void *)i);
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);
    puts("stress done");
}

/*
 * A crowd: CROWD threads alive at once, more than the order graph's gate has slots (64: the
 * rest count themselves in together), make their new edges at once, in index order; they
 * exit, and a second crowd, of other seeds, does the same in the slots the first let go of.
 * No inversion; then one, against an edge of the stress, is reported once.
 */
#define CROWD 80
#define CROWD_ITERS 1500

static pthread_barrier_t crowd_start;

NOINLINE void *crowd_worker(void *arg)
{
    pthread_barrier_wait(&crowd_start);
    return ordered_worker(arg);
}

static void crowd(void)
{
    pthread_t th[CROWD];
    stress_iters = CROWD_ITERS;
    for (int i = 0; i < MAX_LOCKS; i++)
        pthread_rwlock_init(&rwlocks[i], NULL);
    pthread_barrier_init(&crowd_start, NULL, CROWD);
    for (long wave = 0; wave < 2; wave++) {
        for (long i = 0; i < CROWD; i++)
            pthread_create(&th[i], NULL, crowd_worker, (void *)(wave * CROWD + i));
        for (int i = 0; i < CROWD; i++)
            pthread_join(th[i], NULL);
    }
    printf("2 crowds of %d threads\n", CROWD);
}

/* ------------------------------------------------------------------------------------------
 * Many new edges made at one call site (past the few per site that are unwound), then an
 * inversion with one of them.
 * ---------------------------------------------------------------------------------------- */
#define MANY 200
static pthread_mutex_t many[MANY];

NOINLINE void many_pair(int a, int b)
{
    pthread_mutex_lock(&many[a]);
    pthread_mutex_lock(&many[b]);
    pthread_mutex_unlock(&many[b]);
    pthread_mutex_unlock(&many[a]);
}

NOINLINE void *many_chain(void *arg)
{
    (void)arg;
    for (int i = 0; i < 150; i++)
        many_pair(i, i + 1);
    many_pair(170, 190);
    return NULL;
}

NOINLINE void *many_inverted(void *arg)
{
    (void)arg;
    many_pair(190, 170);
    return NULL;
}

static void many_then_invert(void)
{
    pthread_t th;
    for (int i = 0; i < MANY; i++)
        pthread_mutex_init(&many[i], NULL);
    pthread_create(&th, NULL, many_chain, NULL);
    pthread_join(th, NULL);
    pthread_create(&th, NULL, many_inverted, NULL);
    pthread_join(th, NULL);
    puts("150 pairs, then inverted");
}

/* ------------------------------------------------------------------------------------------
 * A repeated sequence (rwlocks 0 and 1 read, then 2 for write) is looked up as one chain; lock 0
 * is destroyed and initialised again in between, so its edge into 2 must be made again, and
 * the inversion through it is found.
 * ---------------------------------------------------------------------------------------- */
NOINLINE void take_sequence(void)
{
    pthread_rwlock_rdlock(&rwlocks[0]);
    pthread_rwlock_rdlock(&rwlocks[1]);
    pthread_rwlock_wrlock(&rwlocks[2]);
    pthread_rwlock_unlock(&rwlocks[2]);
    pthread_rwlock_unlock(&rwlocks[1]);
    pthread_rwlock_unlock(&rwlocks[0]);
}

NOINLINE void *sequence_twice_around_reinit(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        take_sequence();
    pthread_rwlock_destroy(&rwlocks[0]);
    pthread_rwlock_init(&rwlocks[0], NULL);
    for (int i = 0; i < 3; i++)
        take_sequence();
    return NULL;
}

NOINLINE void *two_then_zero(void *arg)
{
    (void)arg;
    pthread_rwlock_wrlock(&rwlocks[2]);
    pthread_rwlock_wrlock(&rwlocks[0]);
    pthread_rwlock_unlock(&rwlocks[0]);
    pthread_rwlock_unlock(&rwlocks[2]);
    return NULL;
}

static void chain_reinit(void)
{
    pthread_t th;
    pthread_create(&th, NULL, sequence_twice_around_reinit, NULL);
    pthread_join(th, NULL);
    pthread_create(&th, NULL, two_then_zero, NULL);
    pthread_join(th, NULL);
    puts("sequence, reinit, sequence, inverted");
}

NOINLINE void mutex_pair(int a, int b)
{
    pthread_mutex_lock(&mutexes[a]);
    pthread_mutex_lock(&mutexes[b]);
    pthread_mutex_unlock(&mutexes[b]);
    pthread_mutex_unlock(&mutexes[a]);
}

/* A reordering of nodes placed at their addresses: 1 -> 2 and 4 -> 6 stay inline (a first edge
 * into a lock, no nodes) until 6 -> 2, a second edge into 2 and one out of 6, makes them real:
 * 1, 2, 4 and 6 are placed at their addresses, and 6 -> 2 runs against that order, so 4 and 6
 * take the places of 2's and 4's addresses, 2 that of 6's. */
NOINLINE void reorder_once(void)
{
    mutex_pair(1, 2);
    mutex_pair(4, 6);
    mutex_pair(6, 2);
}

/* ------------------------------------------------------------------------------------------
 * Reorder, then reuse: after reorder_once lock 4 holds the place of lock 2's address. Lock 2
 * is renewed (destroy, init): the new lock at that address must get another place. Sharing
 * 4's, 2 -> 4 and 4 -> 2 would both look ordered and the inversion that follows would go
 * unseen. It is placed by its address when it is the source of an edge whose ends are both
 * new: 2 -> 7, made real by a second edge into 7 (8 -> 7); not beside a lock (ord_near), which
 * a new lock with one placed end would be. `placed`: lock 0 has its place first (0 -> 1, made
 * real with 1 -> 2), and the renewed lock is first reached from it (0 -> 2), the edge by which
 * node_fast places a new lock at its address in the gate while nothing was reordered (here it
 * declines, as it does whenever a lock holds a place not its own: 2 goes beside 0, under the
 * graph lock).
 * ---------------------------------------------------------------------------------------- */
NOINLINE void reorder_then_reuse(int placed)
{
    if (placed)
        mutex_pair(0, 1);
    reorder_once();
    pthread_mutex_destroy(&mutexes[2]);
    pthread_mutex_init(&mutexes[2], NULL);
    if (placed)
        mutex_pair(0, 2);
    else {
        mutex_pair(2, 7);
        mutex_pair(8, 7);
    }
    mutex_pair(2, 4);
    mutex_pair(4, 2);
    puts(placed ? "placed, reordered, renewed, inverted" : "reordered, renewed, inverted");
}

/* ------------------------------------------------------------------------------------------
 * Beside, then inverted: 6 -> 2 runs against the places that 1 -> 2 and 4 -> 6 gave by
 * address, and the graph is reordered; from then on a new lock goes right beside the lock its
 * first edge names: 9 and 10, each first taken before 6, just below 6 - at two places, not
 * one, or 9 -> 10 and 10 -> 9 would both look ordered and the inversion would go unseen (as
 * it did with a build that gave both the same place).
 * ---------------------------------------------------------------------------------------- */
NOINLINE void beside_then_invert(void)
{
    reorder_once();
    mutex_pair(9, 6);
    mutex_pair(10, 6);
    mutex_pair(9, 10);
    mutex_pair(10, 9);
    puts("reordered, two placed below one, inverted");
}

/* ------------------------------------------------------------------------------------------
 * A thread remembers the last edge into a lock it found known (its cache slot's memo): a
 * nested pair repeated, then the same pair with the outer lock renewed, the inner one renewed,
 * and (rwlocks) the outer one taken in another mode must each make an edge of its own, and
 * the inversion through the last one is found. `modes`: rwlock 0 read then write under 1's
 * memo, inverted by a read of 0 (read/read alone is no cycle on reader-preferring rwlocks).
 * ---------------------------------------------------------------------------------------- */
NOINLINE void repeat_pair(int a, int b)
{
    for (int i = 0; i < 3; i++)
        mutex_pair(a, b);
}

NOINLINE void rw_pair(int outer_write)
{
    for (int i = 0; i < 3; i++) {
        if (outer_write)
            pthread_rwlock_wrlock(&rwlocks[0]);
        else
            pthread_rwlock_rdlock(&rwlocks[0]);
        pthread_rwlock_wrlock(&rwlocks[1]);
        pthread_rwlock_unlock(&rwlocks[1]);
        pthread_rwlock_unlock(&rwlocks[0]);
    }
}

NOINLINE void *memo_pairs(void *arg)
{
    if (arg) {
        rw_pair(0);
        rw_pair(1);
        return NULL;
    }
    repeat_pair(0, 1);
    pthread_mutex_destroy(&mutexes[0]);
    pthread_mutex_init(&mutexes[0], NULL);
    repeat_pair(0, 1);
    pthread_mutex_destroy(&mutexes[1]);
    pthread_mutex_init(&mutexes[1], NULL);
    repeat_pair(0, 1);
    return NULL;
}

NOINLINE void *memo_inverted(void *arg)
{
    if (arg) {
        pthread_rwlock_wrlock(&rwlocks[1]);
        pthread_rwlock_rdlock(&rwlocks[0]);
        pthread_rwlock_unlock(&rwlocks[0]);
        pthread_rwlock_unlock(&rwlocks[1]);
    } else {
        mutex_pair(1, 0);
    }
    return NULL;
}

static void memo_renew(int modes)
{
    pthread_t th;
    void *arg = modes ? (void *)1 : NULL;
    pthread_create(&th, NULL, memo_pairs, arg);
    pthread_join(th, NULL);
    pthread_create(&th, NULL, memo_inverted, arg);
    pthread_join(th, NULL);
    puts(modes ? "read pairs, write pairs, inverted" : "pairs, renewed outer, renewed inner, inverted");
}

/* A block of 100 mutexes taken in index order, all held at once, then destroyed and
 * initialised again at the same addresses (their identities end while others go on), three
 * times. In the second round two of them are first taken the other way round and renewed
 * again: no inversion, their identities end before the block's. After the third, the same
 * two the other way round: one report, of the last identities. */
#define RENEWED 100

NOINLINE void take_block(pthread_mutex_t *m)
{
    for (int i = 0; i < RENEWED; i++)
        pthread_mutex_lock(&m[i]);
    for (int i = RENEWED; i-- > 0;)
        pthread_mutex_unlock(&m[i]);
}

NOINLINE void take_two(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

/* X then A, and B then X; X destroyed and initialised again; then A then B: the cycle
 * B -> X -> A -> B passes through an identity that ended before its last edge was made, so
 * no thread could ever hold its locks that way: nothing to report. */
NOINLINE void ended_in_between(void)
{
    pthread_mutex_t *x = &mutexes[10], *a = &mutexes[11], *b = &mutexes[12];
    take_two(x, a);
    take_two(b, x);
    pthread_mutex_destroy(x);
    pthread_mutex_init(x, NULL);
    take_two(a, b);
    puts("ended in between");
}

NOINLINE void renew_then_invert(void)
{
    static pthread_mutex_t m[RENEWED];
    pthread_mutex_t *a = &m[RENEWED / 2], *b = &m[RENEWED / 2 + 1];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < RENEWED; i++)
            pthread_mutex_init(&m[i], NULL);
        if (round == 1) {
            take_two(b, a);
            pthread_mutex_destroy(a);
            pthread_mutex_destroy(b);
            pthread_mutex_init(a, NULL);
            pthread_mutex_init(b, NULL);
        }
        take_block(m);
        for (int i = 0; round < 2 && i < RENEWED; i++)
            pthread_mutex_destroy(&m[i]);
    }
    take_two(b, a);
    puts("renewed 3 times, inverted");
}

/* Thousands of short-lived locks nested under one that lives on (each destroyed after, so the
 * live lock's list holds dead edges until a sweep), every other one also taken the other way
 * round under a new identity at the same address: nothing to report; then the live lock and
 * another one in both orders, reported once. */
NOINLINE void churn_then_invert(void)
{
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_t *m = malloc(sizeof *m);
        if (!m)
            abort();
        pthread_mutex_init(m, NULL);
        pthread_mutex_lock(&mutexes[0]);
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        pthread_mutex_unlock(&mutexes[0]);
        if (i % 2) {
            pthread_mutex_destroy(m);
            pthread_mutex_init(m, NULL);
            pthread_mutex_lock(m);
            pthread_mutex_lock(&mutexes[0]);
            pthread_mutex_unlock(&mutexes[0]);
            pthread_mutex_unlock(m);
        }
        pthread_mutex_destroy(m);
        free(m);
    }
    mutex_pair(1, 0);
    mutex_pair(0, 1);
    puts("churned, inverted");
}

/* ------------------------------------------------------------------------------------------
 * Past LOCKTRACE_GRAPH_MAX: mutexes 0 before 1, then 244,650 distinct orders of 700 more
 * locks, made by 4 threads at once (each pair i < j taken nested in index order, so they agree
 * with each other): more than a graph of 8 MB holds. Then 1 before 0, the inversion of an
 * order recorded before the bound (with a bound too small for any edge: not recorded, silent).
 * ---------------------------------------------------------------------------------------- */
#define MANY_LOCKS 700
#define MANY_THREADS 4

static pthread_mutex_t many_locks[MANY_LOCKS];

NOINLINE void *take_many_orders(void *arg)
{
    for (long i = (long)arg; i < MANY_LOCKS; i += MANY_THREADS) {
        for (long j = i + 1; j < MANY_LOCKS; j++) {
            pthread_mutex_lock(&many_locks[i]);
            pthread_mutex_lock(&many_locks[j]);
            pthread_mutex_unlock(&many_locks[j]);
            pthread_mutex_unlock(&many_locks[i]);
        }
    }
    return NULL;
}

/* `inline_first`: an inline edge A -> X recorded first (inline_chain, below), inverted past
 * the bound too. */
static void inline_first_recorded(void);
static void inline_then_inverted(void);

NOINLINE void past_graph_max(int inline_first)
{
    pthread_t th[MANY_THREADS];
    mutex_pair(0, 1);
    if (inline_first)
        inline_first_recorded();
    for (int i = 0; i < MANY_LOCKS; i++)
        pthread_mutex_init(&many_locks[i], NULL);
    for (long i = 0; i < MANY_THREADS; i++)
        pthread_create(&th[i], NULL, take_many_orders, (void *)i);
    for (int i = 0; i < MANY_THREADS; i++)
        pthread_join(th[i], NULL);
    mutex_pair(1, 0);
    if (inline_first)
        inline_then_inverted();
    puts(inline_first ? "inline edge, many orders, both inverted" : "many orders, inverted");
}

/* ------------------------------------------------------------------------------------------
 * The same inline edge past the bound, deterministically, by one thread: A then X (inline: A
 * a root), FULL_INLINE more orders kept inline, then the orders of FULL_CAP locks, more than a
 * 1 MB graph holds. Each inline order is then made real by an order out of its lock (not
 * recorded: capped), two nodes each, more than a capped graph's pool holds (its chunks are
 * 64 KB and 320 KB of nodes): its pool is full and may not grow when X then A comes. Made
 * real within the bound, A -> X stayed inline where the search does not look, and X, A went
 * unreported (cfg-3.53's failure, there one run in seven, when another thread had taken the
 * pool's last room).
 * ---------------------------------------------------------------------------------------- */
#define FULL_INLINE 5000
#define FULL_CAP 300

static pthread_mutex_t full_a, full_x, full_z;
static pthread_mutex_t full_p[FULL_INLINE], full_q[FULL_INLINE], full_many[FULL_CAP];

NOINLINE void full_recorded(void)
{
    take_two(&full_a, &full_x);
}

NOINLINE void full_pools_inverted(void)
{
    full_recorded();
    for (int i = 0; i < FULL_INLINE; i++)
        take_two(&full_p[i], &full_q[i]);
    for (int i = 0; i < FULL_CAP; i++)
        for (int j = i + 1; j < FULL_CAP; j++)
            take_two(&full_many[i], &full_many[j]);
    for (int i = 0; i < FULL_INLINE; i++)
        take_two(&full_q[i], &full_z);
    take_two(&full_x, &full_a);
    puts("inline edge, graph capped, its pools used up, inverted");
}

/* ------------------------------------------------------------------------------------------
 * Orders that stay known while the set of known edges is made again: the main thread takes
 * REFILL_PAIRS pairs once (first_pairs); then each round two threads make thousands of locks,
 * take each under two long-lived ones (so both edges are looked up and known) and destroy
 * them, so the known set fills with edges of ended locks and is rebuilt from the graph's
 * edges, many times; and they take the pairs again. A rebuild that forgot a pair's edge would
 * let a thread add it again, and the inversion of the first pair would then show the copy's
 * thread and stack (refill_rounds) instead of the first occurrence's (first_pairs).
 * ---------------------------------------------------------------------------------------- */
#define REFILL_PAIRS 100
#define REFILL_FRESH 2000
#define REFILL_ROUNDS 30
#define REFILL_THREADS 2

static pthread_mutex_t refill_p[REFILL_PAIRS], refill_q[REFILL_PAIRS];
static pthread_mutex_t refill_a, refill_b;
static pthread_mutex_t refill_x[REFILL_THREADS][REFILL_FRESH];

static void take_under(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

NOINLINE void first_pairs(void)
{
    for (int i = 0; i < REFILL_PAIRS; i++)
        take_under(&refill_p[i], &refill_q[i]);
}

NOINLINE void *refill_rounds(void *arg)
{
    pthread_mutex_t *x = refill_x[(long)arg];
    for (int r = 0; r < REFILL_ROUNDS; r++) {
        for (int j = 0; j < REFILL_FRESH; j++)
            pthread_mutex_init(&x[j], NULL);
        for (int j = 0; j < REFILL_FRESH; j++) {
            take_under(&refill_a, &x[j]);
            take_under(&refill_b, &x[j]);
        }
        for (int j = 0; j < REFILL_FRESH; j++)
            pthread_mutex_destroy(&x[j]);
        for (int i = 0; i < REFILL_PAIRS; i++)
            take_under(&refill_p[i], &refill_q[i]);
    }
    return NULL;
}

NOINLINE void refill_then_invert(void)
{
    pthread_t th[REFILL_THREADS];
    pthread_mutex_init(&refill_a, NULL);
    pthread_mutex_init(&refill_b, NULL);
    for (int i = 0; i < REFILL_PAIRS; i++) {
        pthread_mutex_init(&refill_p[i], NULL);
        pthread_mutex_init(&refill_q[i], NULL);
    }
    first_pairs();
    for (long i = 0; i < REFILL_THREADS; i++)
        pthread_create(&th[i], NULL, refill_rounds, (void *)i);
    for (int i = 0; i < REFILL_THREADS; i++)
        pthread_join(th[i], NULL);
    take_under(&refill_q[0], &refill_p[0]);
    puts("known set rebuilt, inverted");
}

/* ------------------------------------------------------------------------------------------
 * A lock that ends in between: A, X and B taken nested, so the graph has A -> X -> B and no
 * A -> B (X is an anchor: the edges into B come from it alone); then X ends - destroyed,
 * freed, initialised again - and the order A before B stays: B then A later is an inversion,
 * reported through X with every stack. Orders that agree with it, a new lock at X's address
 * taken the other way, a trylock the other way: silent. The threads run one after another.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t *end_a = &mutexes[20], *end_x = &mutexes[21], *end_y = &mutexes[22],
                       *end_b = &mutexes[23];
static pthread_rwlock_t *rw_a = &rwlocks[20], *rw_x = &rwlocks[21], *rw_b = &rwlocks[22];

NOINLINE void take_nested(pthread_mutex_t *a, pthread_mutex_t *x, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(x);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(x);
    pthread_mutex_unlock(a);
}

/* A, X, Y and B nested: X and Y both stand between A and B. */
NOINLINE void take_nested_4(void)
{
    pthread_mutex_lock(end_a);
    pthread_mutex_lock(end_x);
    pthread_mutex_lock(end_y);
    pthread_mutex_lock(end_b);
    pthread_mutex_unlock(end_b);
    pthread_mutex_unlock(end_y);
    pthread_mutex_unlock(end_x);
    pthread_mutex_unlock(end_a);
}

NOINLINE void *nested_then_inverted(void *arg)
{
    if ((long)arg == 0)
        take_nested(end_a, end_x, end_b);
    else
        take_two(end_b, end_a);
    return NULL;
}

NOINLINE void *rw_nested_then_inverted(void *arg)
{
    pthread_rwlock_t *order[3] = {rw_a, rw_x, rw_b}, *inverted[2] = {rw_b, rw_a};
    pthread_rwlock_t **l = (long)arg == 0 ? order : inverted;
    int n = (long)arg == 0 ? 3 : 2;
    for (int i = 0; i < n; i++)
        pthread_rwlock_wrlock(l[i]);
    for (int i = n; i-- > 0;)
        pthread_rwlock_unlock(l[i]);
    return NULL;
}

/* X destroyed (or, `reinit`, initialised again without a destroy) between the nested A, X, B
 * and the inverted B, A; `threads`: each in a thread of its own. */
NOINLINE void ended_destroyed(int threads, int reinit)
{
    if (threads)
        one_after_another(1, nested_then_inverted);
    else
        take_nested(end_a, end_x, end_b);
    if (!reinit)
        pthread_mutex_destroy(end_x);
    pthread_mutex_init(end_x, NULL);
    if (threads) {
        pthread_t th;
        pthread_create(&th, NULL, nested_then_inverted, (void *)1);
        pthread_join(th, NULL);
    } else {
        take_two(end_b, end_a);
    }
    puts(reinit ? "nested, reinitialised, inverted" : "nested, destroyed, inverted");
}

NOINLINE void ended_rwlock(void)
{
    pthread_t th;
    pthread_create(&th, NULL, rw_nested_then_inverted, (void *)0);
    pthread_join(th, NULL);
    pthread_rwlock_destroy(rw_x);
    pthread_create(&th, NULL, rw_nested_then_inverted, (void *)1);
    pthread_join(th, NULL);
    puts("rwlocks nested, destroyed, inverted");
}

/* X, a lock of one type (`x_type`: a mutex type, or -1: a writer-preferring rwlock), taken
 * nested between A and B (its edges inline; `real`: A given a node first, by two edges in, so
 * that X's node is made with its first edge in, from its lock), then
 * initialised again as a lock of another type (`again`: a mutex type, or -1: a
 * reader-preferring rwlock),
 * which ends it; then B, A: the report names X as the lock it was, not as its successor. */
static union {
    pthread_mutex_t m;
    pthread_rwlock_t rw;
} retyped;

static void retyped_mutex(int type)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, type);
    pthread_mutex_init(&retyped.m, &attr);
    pthread_mutexattr_destroy(&attr);
}

NOINLINE void ended_retyped(int x_type, int again, int real)
{
    pthread_mutex_t *a = &mutexes[24], *b = &mutexes[25];
    if (x_type >= 0) {
        retyped_mutex(x_type);
        if (real) {
            take_two(&mutexes[26], a);
            take_two(&mutexes[27], a);
        }
        take_nested(a, &retyped.m, b);
    } else {
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&retyped.rw, &attr);
        pthread_rwlockattr_destroy(&attr);
        pthread_mutex_lock(a);
        pthread_rwlock_wrlock(&retyped.rw);
        pthread_mutex_lock(b);
        pthread_mutex_unlock(b);
        pthread_rwlock_unlock(&retyped.rw);
        pthread_mutex_unlock(a);
    }
    if (again >= 0)
        retyped_mutex(again);
    else
        pthread_rwlock_init(&retyped.rw, NULL);
    take_two(b, a);
    puts("nested, initialised again as another type, inverted");
}

/* X lives in a heap block, freed without a destroy; the block's memory (malloc hands the same
 * size back) becomes another mutex, taken alone. */
NOINLINE void ended_freed(void)
{
    pthread_mutex_t *x = malloc(sizeof *x);
    if (!x)
        abort();
    pthread_mutex_init(x, NULL);
    take_nested(end_a, x, end_b);
    free(x);
    pthread_mutex_t *other = malloc(sizeof *other);
    if (!other)
        abort();
    pthread_mutex_init(other, NULL);
    pthread_mutex_lock(other);
    pthread_mutex_unlock(other);
    take_two(end_b, end_a);
    pthread_mutex_destroy(other);
    free(other);
    puts("nested, freed, reused, inverted");
}

/* A, X, Y, B nested; X and Y destroyed (in that order, or `y_first`); then B, A. */
NOINLINE void ended_chain(int y_first)
{
    take_nested_4();
    pthread_mutex_destroy(y_first ? end_y : end_x);
    pthread_mutex_destroy(y_first ? end_x : end_y);
    take_two(end_b, end_a);
    puts("nested 4, two destroyed, inverted");
}

/* Silent: after X's end, only orders that agree with A before B, the new lock at X's address
 * among them. */
NOINLINE void ended_consistent(void)
{
    take_nested(end_a, end_x, end_b);
    pthread_mutex_destroy(end_x);
    pthread_mutex_init(end_x, NULL);
    take_two(end_a, end_b);
    take_nested(end_a, end_x, end_b);
    pthread_mutex_destroy(end_x);
    pthread_mutex_init(end_x, NULL);
    take_nested(end_a, end_b, end_x);
    puts("nested, destroyed, the same order");
}

/* Silent: the new locks at X's address are taken against X's order (before A, after B): they
 * are other locks, and A -> B is not against them. */
NOINLINE void ended_reused_other_order(int reinit)
{
    take_nested(end_a, end_x, end_b);
    if (!reinit)
        pthread_mutex_destroy(end_x);
    pthread_mutex_init(end_x, NULL);
    take_two(end_x, end_a);
    pthread_mutex_destroy(end_x);
    pthread_mutex_init(end_x, NULL);
    take_two(end_b, end_x);
    puts(reinit ? "nested, reinitialised, new lock the other way" : "nested, destroyed, new lock the other way");
}

/* Silent: B, then a trylock of A, which cannot block. */
NOINLINE void ended_trylock(void)
{
    take_nested(end_a, end_x, end_b);
    pthread_mutex_destroy(end_x);
    pthread_mutex_lock(end_b);
    if (pthread_mutex_trylock(end_a) == 0)
        pthread_mutex_unlock(end_a);
    pthread_mutex_unlock(end_b);
    puts("nested, destroyed, trylock the other way");
}

/* ------------------------------------------------------------------------------------------
 * Cycles reported before (found by the randomized differential test, order_oracle): a search
 * from a new lock that first meets a cycle reported already goes on to one that is not, and a
 * cycle is one report however a search goes round its locks.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t rab_1 = PTHREAD_MUTEX_INITIALIZER, rab_2 = PTHREAD_MUTEX_INITIALIZER,
                       rab_3 = PTHREAD_MUTEX_INITIALIZER;

/* Each thread at call sites of its own: a report at a call site already reported is only
 * counted there. */
NOINLINE void *reported_abba_thread(void *arg)
{
    switch ((long)arg) {
    case 0:
        pthread_mutex_lock(&rab_1);
        pthread_mutex_lock(&rab_2);
        pthread_mutex_unlock(&rab_2);
        pthread_mutex_unlock(&rab_1);
        break;
    case 1:
        pthread_mutex_lock(&rab_2);
        pthread_mutex_lock(&rab_3);
        pthread_mutex_lock(&rab_1);
        pthread_mutex_unlock(&rab_1);
        pthread_mutex_unlock(&rab_3);
        pthread_mutex_unlock(&rab_2);
        break;
    default:
        pthread_mutex_lock(&rab_1);
        pthread_mutex_lock(&rab_3);
        pthread_mutex_lock(&rab_2);
        pthread_mutex_unlock(&rab_2);
        pthread_mutex_unlock(&rab_3);
        pthread_mutex_unlock(&rab_1);
        break;
    }
    return NULL;
}

/* 1 then 2; 2, 3, 1 (1 <-> 2 reported); 1, 3, 2 (1 <-> 3 reported, then 3 <-> 2: the search
 * from 2 meets 1, held, first, through the reported 2 -> 1). */
NOINLINE void reported_then_abba(void)
{
    one_after_another(3, reported_abba_thread);
    puts("three threads, three pairs inverted");
}

static pthread_mutex_t rset_m0 = PTHREAD_MUTEX_INITIALIZER, rset_m2 = PTHREAD_MUTEX_INITIALIZER,
                       rset_m9 = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rset_r1 = PTHREAD_RWLOCK_INITIALIZER;

NOINLINE void *reported_set_thread(void *arg)
{
    switch ((long)arg) {
    case 0: /* m0, r1 read */
        pthread_mutex_lock(&rset_m0);
        pthread_rwlock_rdlock(&rset_r1);
        pthread_rwlock_unlock(&rset_r1);
        pthread_mutex_unlock(&rset_m0);
        break;
    case 1: /* r1 write, m2 */
        pthread_rwlock_wrlock(&rset_r1);
        pthread_mutex_lock(&rset_m2);
        pthread_mutex_unlock(&rset_m2);
        pthread_rwlock_unlock(&rset_r1);
        break;
    case 2: /* m2, r1 write: m2 <-> r1 reported */
        pthread_mutex_lock(&rset_m2);
        pthread_rwlock_wrlock(&rset_r1);
        pthread_rwlock_unlock(&rset_r1);
        pthread_mutex_unlock(&rset_m2);
        break;
    case 3: /* r1 read, m9 */
        pthread_rwlock_rdlock(&rset_r1);
        pthread_mutex_lock(&rset_m9);
        pthread_mutex_unlock(&rset_m9);
        pthread_rwlock_unlock(&rset_r1);
        break;
    case 4: /* m9, m0: m0 -> r1 (read) -> m9 -> m0, found through r1 twice */
        pthread_mutex_lock(&rset_m9);
        pthread_mutex_lock(&rset_m0);
        pthread_mutex_unlock(&rset_m0);
        pthread_mutex_unlock(&rset_m9);
        break;
    default: /* m2, m9: the same four locks again */
        pthread_mutex_lock(&rset_m2);
        pthread_mutex_lock(&rset_m9);
        pthread_mutex_unlock(&rset_m9);
        pthread_mutex_unlock(&rset_m2);
        break;
    }
    return NULL;
}

NOINLINE void reported_set(void)
{
    one_after_another(6, reported_set_thread);
    puts("six threads, the same locks closed twice");
}

/* ------------------------------------------------------------------------------------------
 * Inline edges (order.c): past its unwound edges, a call site's first edges into new locks
 * taken under locks without a node are kept inline, in the new lock's entry, once the same
 * stacks made one before (its label is known). Each scenario makes its inline edges so
 * (inline_chain) and then checks that the graph still has what it would have had with nodes:
 * the edges made real when a second edge goes in, when an edge goes out to a lock with a
 * node, when the lock ends while the one under it lives, and the orders of ended identities
 * gone at a reused address, in a fork child too.
 * ---------------------------------------------------------------------------------------- */
#define INLINE_WARM 80

static pthread_mutex_t inline_warm[INLINE_WARM];
static pthread_mutex_t inline_dummy[4];
static pthread_mutex_t inline_locks[8]; /* a, b, c, d, q, x, p1, p2 */

/* m[0] .. m[n-1] taken nested, each at one call site, released newest first. */
NOINLINE void take_chain(pthread_mutex_t *const *m, int n)
{
    for (int i = 0; i < n; i++)
        pthread_mutex_lock(m[i]);
    for (int i = n; i-- > 0;)
        pthread_mutex_unlock(m[i]);
}

/* The n new locks m taken nested, their edges kept inline: the call site's unwound edges
 * used up, then the same stacks' label made by as many other new locks. */
NOINLINE void inline_chain(pthread_mutex_t *const *m, int n)
{
    pthread_mutex_t *warm[INLINE_WARM], *dummy[4];
    for (int i = 0; i < INLINE_WARM; i++)
        warm[i] = &inline_warm[i];
    for (int i = 0; i < n; i++)
        dummy[i] = &inline_dummy[i];
    take_chain(warm, INLINE_WARM);
    for (volatile int round = 0; round < 2; round++) /* (one call: the same stacks) */
        take_chain(round ? m : dummy, n);
    for (int i = 0; i < n; i++) { /* new locks for the next call */
        pthread_mutex_destroy(dummy[i]);
        pthread_mutex_init(dummy[i], NULL);
    }
}

/* B, then a new lock X taken under it, at another call site: the general way. */
NOINLINE void chain2(pthread_mutex_t *b, pthread_mutex_t *x)
{
    pthread_mutex_t *m[2] = {b, x};
    take_chain(m, 2);
}

/* A, B, C, D nested (inline edges A -> B -> C -> D); Q, D: D's second edge in makes the chain
 * real; then D, A: the cycle of four. */
NOINLINE void inline_second_in(void)
{
    pthread_mutex_t *a = &inline_locks[0], *b = &inline_locks[1], *c = &inline_locks[2],
                    *d = &inline_locks[3], *q = &inline_locks[4];
    pthread_mutex_t *abcd[4] = {a, b, c, d};
    inline_chain(abcd, 4);
    chain2(q, d);
    take_two(d, a);
    puts("inline chain, a second edge in, inverted");
}

/* A, X nested (inline); B made real (two edges in); X, B: an edge out of X to a lock with a
 * node makes A -> X real; then B, A: the cycle A -> X -> B -> A. */
NOINLINE void inline_out_edge(void)
{
    pthread_mutex_t *a = &inline_locks[0], *b = &inline_locks[1], *x = &inline_locks[5],
                    *p1 = &inline_locks[6], *p2 = &inline_locks[7];
    pthread_mutex_t *ax[2] = {a, x};
    inline_chain(ax, 2);
    chain2(p1, b);
    chain2(p2, b);
    take_two(x, b);
    take_two(b, a);
    puts("inline edge, an edge out to a lock with a node, inverted");
}

/* A, X nested (inline), then X, A: the report shows A -> X as first taken, in take_chain. */
NOINLINE void inline_report(void)
{
    pthread_mutex_t *a = &inline_locks[0], *x = &inline_locks[5];
    pthread_mutex_t *ax[2] = {a, x};
    inline_chain(ax, 2);
    take_two(x, a);
    puts("inline edge, inverted");
}

/* A, X, B nested (inline, B linked to X), X destroyed while A lives (`how` 0; 1: after X was
 * made real by a second edge in, which makes B real too; 2: initialised again instead, its
 * gen moved on before its end), then B, A: the order X implied. */
NOINLINE void inline_ended(int how)
{
    pthread_mutex_t *a = &inline_locks[0], *b = &inline_locks[1], *x = &inline_locks[5],
                    *q = &inline_locks[4];
    pthread_mutex_t *axb[3] = {a, x, b};
    inline_chain(axb, 3);
    if (how == 1)
        chain2(q, x);
    if (how != 2)
        pthread_mutex_destroy(x);
    pthread_mutex_init(x, NULL);
    take_two(b, a);
    puts(how == 1   ? "inline chain made real, middle destroyed, inverted"
         : how == 2 ? "inline chain, middle initialised again, inverted"
                    : "inline chain, middle destroyed, inverted");
}

/* A, X nested (inline); A destroyed and initialised again (`what` 0) or X (1, 2), then X, A:
 * other identities, silent. With 2, B, X nested before (inline: X's entry kept the room of
 * its ended identity's edge for this one), and X, B after: reported. */
NOINLINE void inline_identity(int what)
{
    pthread_mutex_t *a = &inline_locks[0], *b = &inline_locks[1], *x = &inline_locks[5];
    pthread_mutex_t *ended = what ? x : a, *ax[2] = {a, x}, *bx[2] = {b, x};
    inline_chain(ax, 2);
    pthread_mutex_destroy(ended);
    pthread_mutex_init(ended, NULL);
    if (what == 2)
        inline_chain(bx, 2);
    take_two(x, a);
    if (what == 2)
        take_two(x, b);
    puts(what == 2 ? "inline edge, its lock renewed, silent; a new one, inverted"
                   : "inline edge, a lock renewed, inverted silently");
}

/* B, X nested (inline: B a root), then X, B (B's first edge in would be inline too, but for
 * its edge out): reported. */
NOINLINE void inline_root_inverted(void)
{
    pthread_mutex_t *b = &inline_locks[1], *x = &inline_locks[5];
    pthread_mutex_t *bx[2] = {b, x}, *xb[2] = {x, b};
    inline_chain(bx, 2);
    inline_chain(xb, 2);
    puts("inline edge, inverted at the same call sites");
}

/* A, X nested (inline); a fork child takes X, A: reported there; the parent waits. */
NOINLINE void inline_fork(void)
{
    pthread_mutex_t *a = &inline_locks[0], *x = &inline_locks[5];
    pthread_mutex_t *ax[2] = {a, x};
    inline_chain(ax, 2);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        take_two(x, a);
        puts("child: inline edge, inverted");
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    puts(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "parent: child done" : "parent: child failed");
}

static void inline_first_recorded(void)
{
    pthread_mutex_t *ax[2] = {&inline_locks[0], &inline_locks[5]};
    inline_chain(ax, 2);
}

static void inline_then_inverted(void)
{
    take_two(&inline_locks[5], &inline_locks[0]);
}

/* ------------------------------------------------------------------------------------------
 * Ended after a lock's first edge came with its node: once a call site has unwound the stacks
 * of its first edges, a lock's first edge H -> X is made with X's node (order.c edge_first),
 * and X's end then tells from H alone (in_from) that nothing is implied when H has ended -
 * but only while that edge is the one into X. All locks lie in one array, in the order they
 * are first taken, so each new one is placed at its address.
 * ---------------------------------------------------------------------------------------- */
#define FIRST_WARM 70 /* edges at take_one_site's inner site: past its unwound ones */

static pthread_mutex_t first_warm[2 * FIRST_WARM];
static pthread_mutex_t first_locks[6]; /* a, w, p, x, s: in address order */

/* Inner taken under outer, the inner always at one call site. */
NOINLINE void take_one_site(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
    pthread_mutex_lock(outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(outer);
}

/* A (with a node, no edge in) -> X, X's first edge; then P, X, S nested (so X -> S with P
 * held under X), and with `grown` P -> X goes into X first. A destroyed (`grown`) or not, X
 * destroyed, then S, P (`grown`) or S, A: the inversion through X, whose end implies P -> S
 * (A -> S). */
NOINLINE void ended_first_edge(int grown)
{
    pthread_mutex_t *a = &first_locks[0], *w = &first_locks[1], *p = &first_locks[2],
                    *x = &first_locks[3], *s = &first_locks[4];
    /* The last two: A's node, placed at its address; X's first edge, made with its node
     * (at one call site and stack: an edge with the same first occurrence as the one before
     * needs no graph lock). */
    pthread_mutex_t *outer[FIRST_WARM + 2], *inner[FIRST_WARM + 2];
    for (int i = 0; i < FIRST_WARM; i++) {
        outer[i] = &first_warm[2 * i];
        inner[i] = &first_warm[2 * i + 1];
    }
    outer[FIRST_WARM] = outer[FIRST_WARM + 1] = a;
    inner[FIRST_WARM] = w;
    inner[FIRST_WARM + 1] = x;
    for (int i = 0; i < FIRST_WARM + 2; i++)
        take_one_site(outer[i], inner[i]);
    pthread_mutex_t *under = grown ? p : a;
    pthread_mutex_lock(under);
    pthread_mutex_lock(x);
    pthread_mutex_lock(s);
    pthread_mutex_unlock(s);
    pthread_mutex_unlock(x);
    pthread_mutex_unlock(under);
    if (grown)
        pthread_mutex_destroy(a);
    pthread_mutex_destroy(x);
    take_two(s, under);
    puts(grown ? "first edge, another in, its source destroyed, X destroyed, inverted"
               : "first edge, X destroyed, inverted");
}

/* B read-held with P under it when X (writer-preferring) is written; another time B written,
 * X read under it and S locked under X. X and B destroyed: X's end implies B:w -> S, the
 * occurrence S was taken at, and nothing through B:r -> X:w, whose below (P) is another
 * occurrence's; so B's end implies no P -> S, P never held while S was taken: S, P after
 * the ends is silent. `inverted` takes S, P before the ends (a cycle with P -> X:w and
 * X:r -> S, reported) and P, S after them: that inversion of two live mutexes is reported
 * too (a P -> S implied meanwhile made P, S look known). */
NOINLINE void ended_modes(int inverted)
{
    static pthread_mutex_t p = PTHREAD_MUTEX_INITIALIZER, s = PTHREAD_MUTEX_INITIALIZER;
    static pthread_rwlock_t b, x;
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&x, &a);
    pthread_rwlockattr_destroy(&a);
    pthread_rwlock_init(&b, NULL);
    pthread_mutex_trylock(&p);
    pthread_rwlock_rdlock(&b);
    pthread_rwlock_wrlock(&x);
    pthread_rwlock_unlock(&x);
    pthread_rwlock_unlock(&b);
    pthread_mutex_unlock(&p);
    pthread_rwlock_wrlock(&b);
    pthread_rwlock_rdlock(&x);
    pthread_mutex_lock(&s);
    pthread_mutex_unlock(&s);
    pthread_rwlock_unlock(&x);
    pthread_rwlock_unlock(&b);
    if (inverted)
        take_two(&s, &p);
    pthread_rwlock_destroy(&x);
    pthread_rwlock_destroy(&b);
    if (inverted)
        take_two(&p, &s);
    else
        take_two(&s, &p);
    puts(inverted ? "two occurrences through ended locks, then an inversion"
                  : "two occurrences through ended locks, then S, P");
}

/* ------------------------------------------------------------------------------------------
 * Ended under locks that are no anchors: A, R (read-held, reader-preferring: no anchor), B, C
 * nested makes R -> B and A -> B, and B -> C only (B an anchor); when B ends, C was taken
 * while R and A were held, so B's end implies both R -> C and A -> C, and C, A after it is a
 * live inversion of A and C (reported through B). The variants stack a trylocked lock on R,
 * and the neighbours are silent: A not held when C was taken under B (released before B, or
 * between B and C; or held only at another acquisition of B), or the way back into R a read,
 * which does not block a read.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t run_a = PTHREAD_MUTEX_INITIALIZER, run_c = PTHREAD_MUTEX_INITIALIZER,
                       run_t = PTHREAD_MUTEX_INITIALIZER, run_q = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t run_b;
static pthread_rwlock_t run_r = PTHREAD_RWLOCK_INITIALIZER;

typedef enum { RUN_PLAIN, RUN_TRY, RUN_AFTER, RUN_BEFORE, RUN_OTHER } run_shape;

/* B, C taken under A, R (read), in `shape`, and all let go; then B destroyed. */
static NOINLINE void run_made(run_shape shape)
{
    pthread_mutex_init(&run_b, NULL);
    if (shape == RUN_OTHER) { /* A, R, B first; then Q, R, B, C: A never held with C */
        pthread_mutex_lock(&run_a);
        pthread_rwlock_rdlock(&run_r);
        pthread_mutex_lock(&run_b);
        pthread_mutex_unlock(&run_b);
        pthread_rwlock_unlock(&run_r);
        pthread_mutex_unlock(&run_a);
    }
    pthread_mutex_t *under = shape == RUN_OTHER ? &run_q : &run_a;
    pthread_mutex_lock(under);
    pthread_rwlock_rdlock(&run_r);
    if (shape == RUN_BEFORE)
        pthread_mutex_unlock(under);
    if (shape == RUN_TRY && pthread_mutex_trylock(&run_t))
        abort();
    pthread_mutex_lock(&run_b);
    if (shape == RUN_AFTER)
        pthread_mutex_unlock(under);
    pthread_mutex_lock(&run_c);
    pthread_mutex_unlock(&run_c);
    pthread_mutex_unlock(&run_b);
    if (shape == RUN_TRY)
        pthread_mutex_unlock(&run_t);
    pthread_rwlock_unlock(&run_r);
    if (shape != RUN_BEFORE && shape != RUN_AFTER)
        pthread_mutex_unlock(under);
    pthread_mutex_destroy(&run_b);
    fprintf(stderr, "run: A %p R %p T %p C %p\n", (void *)&run_a, (void *)&run_r, (void *)&run_t,
            (void *)&run_c);
}

/* After run_made(shape): C held, then `then` ("a": A, "t": T, "r": R read, "w": R write). */
NOINLINE void ended_run(run_shape shape, const char *then)
{
    run_made(shape);
    pthread_mutex_lock(&run_c);
    if (!strcmp(then, "a") || !strcmp(then, "t")) {
        pthread_mutex_t *m = *then == 'a' ? &run_a : &run_t;
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
    } else {
        if (*then == 'r')
            pthread_rwlock_rdlock(&run_r);
        else
            pthread_rwlock_wrlock(&run_r);
        pthread_rwlock_unlock(&run_r);
    }
    pthread_mutex_unlock(&run_c);
    printf("B ended under a read-held rwlock, then C, %s\n", then);
}

/* ------------------------------------------------------------------------------------------
 * Ended one under another: what an implied edge keeps as its lock below is only what is known
 * to have been held under its from when its head was taken. Y, A, B nested makes A -> B with Y
 * under A; Z, A, B, C nested later makes B -> C with A under B; when B ends, A -> C is implied,
 * but what was under A then (Z) nothing records - A -> B's Y is of another acquisition - so
 * when A ends next, C, Y is no inversion: silent. So when A ends first and B next: Y -> B,
 * implied through A (A -> B was first made under Y), is no Y -> C through B -> C under A
 * (that A was under Z). But when P -> X is implied through L (P, L, X nested, L destroyed) and
 * S is taken under X with P held under it (P, R read, X, S), X's end implies P -> S through
 * L and X: S, P reported, both ended locks named. With R read-held between A and B the run of
 * B -> C says A was under R when C was taken, so B's end implies R -> C and A -> C, and R's end
 * before or after B's keeps A -> C: C, A reported.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t two_y = PTHREAD_MUTEX_INITIALIZER, two_z = PTHREAD_MUTEX_INITIALIZER,
                       two_c = PTHREAD_MUTEX_INITIALIZER, two_a, two_b;
static pthread_rwlock_t two_r;

static NOINLINE void lock_all(pthread_mutex_t **m, int n)
{
    for (int i = 0; i < n; i++)
        pthread_mutex_lock(m[i]);
    for (int i = n; i-- > 0;)
        pthread_mutex_unlock(m[i]);
}

/* Y, A, B; then Z, A, B, C; B then A destroyed (A first when `a_first`); then C, Y. */
NOINLINE void ended_other_under(int a_first)
{
    pthread_mutex_init(&two_a, NULL);
    pthread_mutex_init(&two_b, NULL);
    lock_all((pthread_mutex_t *[]){&two_y, &two_a, &two_b}, 3);
    lock_all((pthread_mutex_t *[]){&two_z, &two_a, &two_b, &two_c}, 4);
    pthread_mutex_destroy(a_first ? &two_a : &two_b);
    pthread_mutex_destroy(a_first ? &two_b : &two_a);
    lock_all((pthread_mutex_t *[]){&two_c, &two_y}, 2);
    puts("A -> B under Y, B -> C under A under Z, B and A destroyed, then C, Y");
}

/* P (two_y), L, X nested; L destroyed; P, R (read), X, S nested; X destroyed; then S, P. */
NOINLINE void ended_two_under(void)
{
    pthread_mutex_init(&two_a, NULL);
    pthread_mutex_init(&two_b, NULL);
    pthread_rwlock_init(&two_r, NULL);
    lock_all((pthread_mutex_t *[]){&two_y, &two_a, &two_b}, 3);
    pthread_mutex_destroy(&two_a);
    pthread_mutex_lock(&two_y);
    pthread_rwlock_rdlock(&two_r);
    lock_all((pthread_mutex_t *[]){&two_b, &two_c}, 2);
    pthread_rwlock_unlock(&two_r);
    pthread_mutex_unlock(&two_y);
    pthread_mutex_destroy(&two_b);
    fprintf(stderr, "two: P %p S %p\n", (void *)&two_y, (void *)&two_c);
    lock_all((pthread_mutex_t *[]){&two_c, &two_y}, 2);
    puts("P, L, X nested, L destroyed, P, R read, X, S nested, X destroyed, then S, P");
}

/* A (two_y), R (read), B, C nested; B and R destroyed (R first when `r_first`); then C, A. */
NOINLINE void ended_run_two(int r_first)
{
    pthread_mutex_init(&two_b, NULL);
    pthread_rwlock_init(&two_r, NULL);
    pthread_mutex_lock(&two_y);
    pthread_rwlock_rdlock(&two_r);
    lock_all((pthread_mutex_t *[]){&two_b, &two_c}, 2);
    pthread_rwlock_unlock(&two_r);
    pthread_mutex_unlock(&two_y);
    if (r_first)
        pthread_rwlock_destroy(&two_r);
    pthread_mutex_destroy(&two_b);
    if (!r_first)
        pthread_rwlock_destroy(&two_r);
    fprintf(stderr, "run: A %p C %p\n", (void *)&two_y, (void *)&two_c);
    lock_all((pthread_mutex_t *[]){&two_c, &two_y}, 2);
    puts("A, R read, B, C nested, B and R destroyed, then C, A");
}

/* ------------------------------------------------------------------------------------------
 * A root's inline child as the search's goal (order.c held_inline_realise): each round on new
 * heap locks, P, then H, A, B nested; A released; C under B; P released; D under C; B
 * released; E under D; D released; B destroyed; another thread takes Y, then P (P gets a
 * node, its inline edge P -> H stays); then H, C, E held, P: H -> P against P -> H. Every lock
 * call goes through one call site, taken past its unwinds first, and a back edge (X1, X2 both
 * ways) makes new edges searched; rounds 2 and 3 (call sites known: inline edges) were silent.
 */
struct root_set {
    pthread_mutex_t p, h, a, b, c, d, e, y;
};
static struct root_set *root;

NOINLINE static void root_lock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    __asm__ volatile("");
}

static void *root_other(void *arg)
{
    (void)arg;
    root_lock(&root->y);
    root_lock(&root->p);
    pthread_mutex_unlock(&root->p);
    pthread_mutex_unlock(&root->y);
    return NULL;
}

NOINLINE void root_child_goal(void)
{
    static pthread_mutex_t warm[80], x1 = PTHREAD_MUTEX_INITIALIZER, x2 = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 80; i++) {
        pthread_mutex_init(&warm[i], NULL);
        root_lock(&warm[i]);
    }
    for (int i = 79; i >= 0; i--)
        pthread_mutex_unlock(&warm[i]);
    root_lock(&x1), root_lock(&x2), pthread_mutex_unlock(&x2), pthread_mutex_unlock(&x1);
    root_lock(&x2), root_lock(&x1), pthread_mutex_unlock(&x1), pthread_mutex_unlock(&x2);
    for (int k = 0; k < 3; k++) {
        root = calloc(1, sizeof *root); /* (never freed: new addresses each round) */
        root_lock(&root->p);
        root_lock(&root->h);
        root_lock(&root->a);
        root_lock(&root->b);
        pthread_mutex_unlock(&root->a);
        root_lock(&root->c);
        pthread_mutex_unlock(&root->p);
        root_lock(&root->d);
        pthread_mutex_unlock(&root->b);
        root_lock(&root->e);
        pthread_mutex_unlock(&root->d);
        pthread_mutex_destroy(&root->b);
        one_after_another(1, root_other);
        root_lock(&root->p);
        pthread_mutex_unlock(&root->p);
        pthread_mutex_unlock(&root->e);
        pthread_mutex_unlock(&root->c);
        pthread_mutex_unlock(&root->h);
    }
    puts("P, H, A, B nested, A, P, B released, B destroyed, P taken elsewhere, then P, 3 rounds");
}

/* ------------------------------------------------------------------------------------------
 * Ended in a mass free: a heap block of MASS mutexes, all held at once in index order (each
 * taken under the one before, as in the `groups` stress row) but for a few in the middle
 * (which would otherwise be ordered already), with X (and Y) of those taken between A and B: A, X, B nested, or A, X, Y, B with Y right after or right before X
 * in the block. Then the whole block is freed at once, without a destroy, so its locks end in
 * address order and what X's (and Y's) end implies is drawn only when the graph next needs
 * it (order.c "Ended locks"): here after a new block of the same size (malloc hands the
 * memory back) has had its locks initialised, so X's and Y's entries may name new locks by
 * then. B then A: the inversion through X (and Y), reported. Silent: X
 * taken under C, another lock of the block, when B was taken, and later under A alone: no
 * lock held under X leads from A to B.
 * ---------------------------------------------------------------------------------------- */
#define MASS 4096
#define MASS_GAP 4 /* locks each side of the middle left out of the order */

static int mass_ordered(int i)
{
    return i < MASS / 2 - MASS_GAP || i > MASS / 2 + MASS_GAP;
}

NOINLINE pthread_mutex_t *mass_block(void)
{
    pthread_mutex_t *m = malloc(MASS * sizeof *m);
    if (!m)
        abort();
    for (int i = 0; i < MASS; i++)
        pthread_mutex_init(&m[i], NULL);
    for (int i = 0; i < MASS; i++)
        if (mass_ordered(i))
            pthread_mutex_lock(&m[i]);
    for (int i = MASS; i-- > 0;)
        if (mass_ordered(i))
            pthread_mutex_unlock(&m[i]);
    return m;
}

/* chain: 0 for A, X, B; 1 for A, X, Y, B with Y after X in the block, -1 with Y before it. */
NOINLINE void ended_mass_freed(int chain)
{
    pthread_mutex_t *m = mass_block();
    pthread_mutex_t *x = &m[MASS / 2], *y = &m[MASS / 2 + chain];
    pthread_mutex_lock(end_a);
    pthread_mutex_lock(x);
    if (chain)
        pthread_mutex_lock(y);
    pthread_mutex_lock(end_b);
    pthread_mutex_unlock(end_b);
    if (chain)
        pthread_mutex_unlock(y);
    pthread_mutex_unlock(x);
    pthread_mutex_unlock(end_a);
    free(m);
    m = mass_block();
    take_two(end_b, end_a);
    for (int i = 0; i < MASS; i++)
        pthread_mutex_destroy(&m[i]);
    free(m);
    puts(chain ? "block, nested 4, block freed, inverted" : "block, nested, block freed, inverted");
}

NOINLINE void ended_mass_unrelated(void)
{
    pthread_mutex_t *m = mass_block();
    take_nested(&m[1], &m[MASS / 2], end_b);
    take_two(end_a, &m[MASS / 2]);
    free(m);
    take_two(end_b, end_a);
    puts("block, X under C then under A, block freed, the other way");
}

/* ------------------------------------------------------------------------------------------
 * Many reused: 1,000 mutexes with 20,000 edges between them (each taken with the next 20 under
 * it: 40 list entries a lock, too many to remove at once) all end at once, by destroy or by
 * free; the graph reaps them later, a few at a time, as new edges come. New locks at the same
 * addresses (the same array, or a block of the same size from malloc, which is the freed one
 * here) are then taken in the opposite order: different locks, nothing to report, however
 * many old edges still wait to be reaped. Then two of the new ones in both orders: one
 * report. With "cycle", an inversion is reported first, so the graph has a cycle while the old
 * locks wait.
 * ---------------------------------------------------------------------------------------- */
#define REUSED 1000
#define UNDER 20

NOINLINE void take_runs(pthread_mutex_t *m, int down)
{
    for (int k = 0; k + UNDER < REUSED; k++) {
        int i = down ? REUSED - 1 - k : k;
        pthread_mutex_lock(&m[i]);
        for (int j = 1; j <= UNDER; j++) {
            pthread_mutex_lock(&m[down ? i - j : i + j]);
            pthread_mutex_unlock(&m[down ? i - j : i + j]);
        }
        pthread_mutex_unlock(&m[i]);
    }
}

NOINLINE void invert_reused(pthread_mutex_t *m)
{
    pthread_mutex_lock(&m[REUSED / 2]);
    pthread_mutex_lock(&m[REUSED / 2 + 1]);
    pthread_mutex_unlock(&m[REUSED / 2 + 1]);
    pthread_mutex_unlock(&m[REUSED / 2]);
    pthread_mutex_lock(&m[REUSED / 2 + 1]);
    pthread_mutex_lock(&m[REUSED / 2]);
    pthread_mutex_unlock(&m[REUSED / 2]);
    pthread_mutex_unlock(&m[REUSED / 2 + 1]);
}

static void init_all(pthread_mutex_t *m)
{
    for (int i = 0; i < REUSED; i++)
        pthread_mutex_init(&m[i], NULL);
}

NOINLINE void many_reused(int by_free, int cycle)
{
    pthread_mutex_t *m = malloc(REUSED * sizeof *m);
    if (!m)
        abort();
    init_all(m);
    if (cycle) {
        mutex_pair(0, 1);
        mutex_pair(1, 0);
    }
    for (int round = 0; round < 2; round++)
        take_runs(m, 0);
    if (by_free) {
        free(m);
        m = malloc(REUSED * sizeof *m);
        if (!m)
            abort();
    } else {
        for (int i = 0; i < REUSED; i++)
            pthread_mutex_destroy(&m[i]);
    }
    init_all(m);
    for (int round = 0; round < 2; round++)
        take_runs(m, 1);
    invert_reused(m);
    for (int i = 0; i < REUSED; i++)
        pthread_mutex_destroy(&m[i]);
    free(m);
    puts("many reused, inverted");
}

/* ------------------------------------------------------------------------------------------
 * A replaced chain: CHAIN heap mutexes taken in index order (one, then one of the next 8 under
 * it), and a lock let go of is at times destroyed, freed and made anew - at once (the same
 * memory, a new lock) or the next time its slot is taken (memory another slot let go of): lock
 * coupling along a list whose nodes come and go, at addresses unrelated to their order. Two
 * threads, a chain each, at once; silent. `invert`: then three slots of thread 0's chain are
 * made anew against address order (the allocator hands back freed memory last first), taken
 * in order with their neighbours, and two of them the other way round.
 * ---------------------------------------------------------------------------------------- */
#define CHAIN 96

typedef struct chain {
    pthread_mutex_t *slot[CHAIN];
    unsigned seed;
} chain;

static chain chains[2];

static pthread_mutex_t *chain_slot(chain *c, int i)
{
    if (!c->slot[i]) {
        c->slot[i] = malloc(sizeof *c->slot[i]);
        if (!c->slot[i])
            abort();
        pthread_mutex_init(c->slot[i], NULL);
    }
    return c->slot[i];
}

static void chain_drop(chain *c, int i)
{
    pthread_mutex_destroy(c->slot[i]);
    free(c->slot[i]);
    c->slot[i] = NULL;
}

NOINLINE void chain_pair(chain *c, int i, int j)
{
    pthread_mutex_lock(chain_slot(c, i));
    pthread_mutex_lock(chain_slot(c, j));
    pthread_mutex_unlock(c->slot[j]);
    pthread_mutex_unlock(c->slot[i]);
}

static unsigned chain_step(chain *c)
{
    c->seed = c->seed * 1103515245u + 12345u;
    return c->seed >> 8;
}

NOINLINE void *chain_walk(void *arg)
{
    chain *c = arg;
    for (int k = 0; k < 20000; k++) {
        int i = (int)(chain_step(c) % (CHAIN - 8)), j = i + 1 + (int)(chain_step(c) % 8);
        chain_pair(c, i, j);
        unsigned r = chain_step(c) % 16;
        if (r == 0)
            chain_drop(c, i); /* made anew the next time it is taken */
        else if (r == 1) {
            chain_drop(c, i);
            chain_slot(c, i); /* made anew at once, most likely in the same memory */
        }
    }
    return NULL;
}

NOINLINE void chain_inverted(chain *c, int i, int j)
{
    pthread_mutex_lock(c->slot[j]);
    pthread_mutex_lock(c->slot[i]);
    pthread_mutex_unlock(c->slot[i]);
    pthread_mutex_unlock(c->slot[j]);
}

static void replaced_chain(int invert)
{
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        chains[t].seed = 12345u + (unsigned)t;
        pthread_create(&th[t], NULL, chain_walk, &chains[t]);
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    if (invert) {
        chain *c = &chains[0];
        int a = CHAIN / 2;
        for (int i = a; i < a + 3; i++)
            if (c->slot[i])
                chain_drop(c, i);
        for (int i = a + 2; i >= a; i--)
            chain_slot(c, i);
        for (int i = a - 8; i < a + 3; i++)
            for (int j = i + 1; j <= i + 8 && j < CHAIN; j++)
                chain_pair(c, i, j);
        chain_inverted(c, a, a + 2);
    }
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < CHAIN; i++)
            if (chains[t].slot[i])
                chain_drop(&chains[t], i);
    puts(invert ? "replaced chains, inverted" : "replaced chains");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    for (int i = 0; i < MAX_LOCKS; i++) {
        pthread_mutex_init(&mutexes[i], NULL);
        pthread_rwlock_init(&rwlocks[i], NULL);
    }
    if (!strncmp(s, "cycle-", 6))
        inversion(atoi(s + 6), 1);
    else if (!strcmp(s, "repeated"))
        inversion(2, 50);
    else if (!strcmp(s, "one-thread"))
        ab_then_ba();
    else if (!strcmp(s, "trylock")) {
        cycle_len = 2;
        one_after_another(2, try_back_off);
        puts("trylock back-off");
    }
    else if (!strncmp(s, "window-", 7)) {
        cycle_len = 2;
        between = atoi(s + 7);
        one_after_another(2, window_pair);
        printf("%d trylocked and read-held between\n", between);
    } else if (!strncmp(s, "read-held-", 10)) {
        read_held(atoi(s + 10));
    } else if (!strncmp(s, "rotate-", 7)) {
        cycle_len = atoi(s + 7);
        one_after_another(cycle_len, take_rotated);
        printf("%d locks rotated\n", cycle_len);
    } else if (!strcmp(s, "read-read"))
        rw_inversion(0, 0, 0);
    else if (!strcmp(s, "read-read-wp"))
        rw_inversion(0, 0, 1);
    else if (!strcmp(s, "write-read"))
        rw_inversion(1, 0, 0);
    else if (!strcmp(s, "mixed")) {
        one_after_another(3, mixed_pair);
        puts("mutexes and an rwlock");
    } else if (!strcmp(s, "reuse"))
        reuse_after_destroy();
    else if (!strcmp(s, "race-cycles"))
        race_cycles();
    else if (!strcmp(s, "race-fresh-cycles"))
        race_fresh_cycles(1);
    else if (!strcmp(s, "race-fresh-read"))
        race_fresh_cycles(0);
    else if (!strcmp(s, "stress"))
        stress(0);
    else if (!strcmp(s, "stress-wp"))
        stress(1);
    else if (!strcmp(s, "stress-then-invert")) {
        /* Index order is address order here, which alone never reorders: a reordering first,
         * then the stress's new locks go beside their neighbours (node_place), and the graph
         * is reordered on the way. */
        reorder_once();
        stress(0);
        one_after_another(2, write_pair_inverted);
        puts("inverted after the stress");
    } else if (!strcmp(s, "stress-down-then-invert")) {
        descending = 1;
        stress(0); /* against address order: the graph is reordered many times */
        one_after_another(2, write_pair_inverted);
        puts("inverted after the stress");
    } else if (!strcmp(s, "crowd-then-invert")) {
        crowd();
        one_after_another(2, write_pair_inverted);
        puts("inverted after the crowds");
    } else if (!strcmp(s, "many-then-invert"))
        many_then_invert();
    else if (!strcmp(s, "chain-reinit"))
        chain_reinit();
    else if (!strcmp(s, "memo-renew"))
        memo_renew(0);
    else if (!strcmp(s, "memo-modes"))
        memo_renew(1);
    else if (!strcmp(s, "reorder-reuse"))
        reorder_then_reuse(0);
    else if (!strcmp(s, "reorder-reuse-placed"))
        reorder_then_reuse(1);
    else if (!strcmp(s, "renew-then-invert"))
        renew_then_invert();
    else if (!strcmp(s, "ended-in-between"))
        ended_in_between();
    else if (!strcmp(s, "churn-then-invert"))
        churn_then_invert();
    else if (!strcmp(s, "past-graph-max"))
        past_graph_max(0);
    else if (!strcmp(s, "inline-past-graph-max"))
        past_graph_max(1);
    else if (!strcmp(s, "inline-past-full-pools"))
        full_pools_inverted();
    else if (!strcmp(s, "refill"))
        refill_then_invert();
    else if (!strcmp(s, "many-destroyed"))
        many_reused(0, 0);
    else if (!strcmp(s, "many-freed"))
        many_reused(1, 0);
    else if (!strcmp(s, "many-freed-cycle"))
        many_reused(1, 1);
    else if (!strcmp(s, "ended-destroyed"))
        ended_destroyed(0, 0);
    else if (!strcmp(s, "ended-destroyed-threads"))
        ended_destroyed(1, 0);
    else if (!strcmp(s, "ended-reinit"))
        ended_destroyed(0, 1);
    else if (!strcmp(s, "ended-retyped-recursive-rwlock"))
        ended_retyped(PTHREAD_MUTEX_RECURSIVE, -1, 0);
    else if (!strcmp(s, "ended-retyped-errorcheck-normal-node"))
        ended_retyped(PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_NORMAL, 1);
    else if (!strcmp(s, "ended-retyped-recursive-normal-node"))
        ended_retyped(PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_NORMAL, 1);
    else if (!strcmp(s, "ended-retyped-rwlock-rwlock"))
        ended_retyped(-1, -1, 0);
    else if (!strcmp(s, "ended-rwlock"))
        ended_rwlock();
    else if (!strcmp(s, "ended-freed"))
        ended_freed();
    else if (!strcmp(s, "ended-chain"))
        ended_chain(0);
    else if (!strcmp(s, "ended-chain-y-first"))
        ended_chain(1);
    else if (!strcmp(s, "ended-consistent"))
        ended_consistent();
    else if (!strcmp(s, "ended-reused-other-order"))
        ended_reused_other_order(0);
    else if (!strcmp(s, "ended-reinit-other-order"))
        ended_reused_other_order(1);
    else if (!strcmp(s, "ended-trylock"))
        ended_trylock();
    else if (!strcmp(s, "ended-mass-freed"))
        ended_mass_freed(0);
    else if (!strcmp(s, "ended-mass-freed-chain"))
        ended_mass_freed(1);
    else if (!strcmp(s, "ended-mass-freed-chain-y-first"))
        ended_mass_freed(-1);
    else if (!strcmp(s, "ended-mass-unrelated"))
        ended_mass_unrelated();
    else if (!strcmp(s, "reported-then-abba"))
        reported_then_abba();
    else if (!strcmp(s, "reported-set"))
        reported_set();
    else if (!strcmp(s, "inline-second-in"))
        inline_second_in();
    else if (!strcmp(s, "inline-out-edge"))
        inline_out_edge();
    else if (!strcmp(s, "inline-report"))
        inline_report();
    else if (!strcmp(s, "inline-ended"))
        inline_ended(0);
    else if (!strcmp(s, "inline-ended-real"))
        inline_ended(1);
    else if (!strcmp(s, "inline-ended-reinit"))
        inline_ended(2);
    else if (!strcmp(s, "inline-source-renewed"))
        inline_identity(0);
    else if (!strcmp(s, "inline-lock-renewed"))
        inline_identity(1);
    else if (!strcmp(s, "inline-renewed"))
        inline_identity(2);
    else if (!strcmp(s, "inline-root-inverted"))
        inline_root_inverted();
    else if (!strcmp(s, "inline-fork"))
        inline_fork();
    else if (!strcmp(s, "ended-first-edge"))
        ended_first_edge(0);
    else if (!strcmp(s, "ended-first-edge-grown"))
        ended_first_edge(1);
    else if (!strcmp(s, "ended-modes"))
        ended_modes(0);
    else if (!strcmp(s, "ended-modes-inverted"))
        ended_modes(1);
    else if (!strcmp(s, "ended-run"))
        ended_run(RUN_PLAIN, "a");
    else if (!strcmp(s, "ended-run-try"))
        ended_run(RUN_TRY, "a");
    else if (!strcmp(s, "ended-run-try-t"))
        ended_run(RUN_TRY, "t");
    else if (!strcmp(s, "ended-run-read"))
        ended_run(RUN_PLAIN, "r");
    else if (!strcmp(s, "ended-run-write"))
        ended_run(RUN_PLAIN, "w");
    else if (!strcmp(s, "ended-run-after"))
        ended_run(RUN_AFTER, "a");
    else if (!strcmp(s, "ended-run-before"))
        ended_run(RUN_BEFORE, "a");
    else if (!strcmp(s, "ended-run-other"))
        ended_run(RUN_OTHER, "a");
    else if (!strcmp(s, "ended-other-under"))
        ended_other_under(0);
    else if (!strcmp(s, "ended-other-under-a-first"))
        ended_other_under(1);
    else if (!strcmp(s, "ended-two-under"))
        ended_two_under();
    else if (!strcmp(s, "ended-run-two"))
        ended_run_two(0);
    else if (!strcmp(s, "ended-run-two-r-first"))
        ended_run_two(1);
    else if (!strcmp(s, "root-child-goal"))
        root_child_goal();
    else if (!strcmp(s, "beside-then-invert"))
        beside_then_invert();
    else if (!strcmp(s, "replaced-chain"))
        replaced_chain(0);
    else if (!strcmp(s, "replaced-chain-invert"))
        replaced_chain(1);
    else {
        fprintf(stderr, "unknown scenario '%s'\n", s);
        return 64;
    }
    return 0;
}
