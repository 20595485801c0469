/*
 * inline_end_race.c - a lock destroyed while another thread's acquisition makes its inline
 * edge real, which must neither crash nor report (order.c, lt_order_forget_inline).
 *
 * Each round the ender makes CHAINS chains g -> l -> c (three fresh mutexes taken nested and
 * let go, so l and c each keep their first edge inline, g has none), then destroys each l
 * while the taker takes the c of that chain under a mutex of its own: that second edge into
 * c makes c real under the graph lock, and with it the inline edges up from it, l's (g -> l)
 * among them, unless l's identity has ended first. Then all are destroyed and made again at
 * the same addresses, round after round. A destroy that read l's reference before the taker
 * made it real went on with the inline one it had read: it read the real edge as an inline
 * one (a crash), or gave l's entry a room the graph or the pool still had. Only a destroy held
 * between those two steps shows it, so a timer plays the scheduler: it interrupts the ender
 * every PERIOD_NS, and a handler that finds it inside a destroy of l (once a chain) lets the
 * taker take that chain's c and waits for it (polled, at most HOLD_NS); otherwise the taker
 * takes it once that destroy returned. With the library of before the fix it crashed in
 * 20 of 20 runs (in inline_implied, reading the real edge), 0.3 to 18 s in. Prints one line
 * that does not depend on timing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../pc.h"

#define CHAINS 64
#define ROUNDS 3000
#define PERIOD_NS 20000L /* the timer's interval */
#define HOLD_NS 50000L   /* most a handler waits for the taker */

static pthread_mutex_t g[CHAINS], l[CHAINS], c[CHAINS], mine;
static atomic_long ending = -1; /* the chain (round * CHAINS + j) whose l is ending, -1: none */
static atomic_long ended = -1;  /* the last chain whose l's destroy returned */
static atomic_long go = -1;     /* the last chain a handler let the taker take */
static atomic_long taken = -1;  /* the last chain whose c the taker took */
static long held = -1;          /* (the ender's) the last chain a handler held it in */

/* The timer's signal, in the ender: inside a destroy of l, once a chain, the taker takes its
 * c now, and the ender waits for it. Once only, so the ender always gets on: the handler may
 * have come while it holds a tracer lock that the taker then waits for. */
static void hold(int sig, siginfo_t *info, void *uc)
{
    (void)sig, (void)info, (void)uc;
    pc_hold(atomic_load(&ending), &held, &go, &taken, HOLD_NS);
}

static void *taker(void *arg)
{
    (void)arg;
    for (long k = 0; k < (long)ROUNDS * CHAINS; k++) {
        while (atomic_load(&go) < k && atomic_load(&ended) < k)
            ;
        pthread_mutex_lock(&mine);
        pthread_mutex_lock(&c[k % CHAINS]);
        pthread_mutex_unlock(&c[k % CHAINS]);
        pthread_mutex_unlock(&mine);
        atomic_store(&taken, k);
    }
    return NULL;
}

static void nest3(int j)
{
    pthread_mutex_lock(&g[j]);
    pthread_mutex_lock(&l[j]);
    pthread_mutex_lock(&c[j]);
    pthread_mutex_unlock(&c[j]);
    pthread_mutex_unlock(&l[j]);
    pthread_mutex_unlock(&g[j]);
}

int main(void)
{
    pthread_t tk;
    pthread_mutex_init(&mine, NULL);
    if (pthread_create(&tk, NULL, taker, NULL) != 0 || !pc_probe_timer(SIGALRM, hold, PERIOD_NS))
        return 1;
    for (long round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < CHAINS; j++) {
            pthread_mutex_init(&g[j], NULL);
            pthread_mutex_init(&l[j], NULL);
            pthread_mutex_init(&c[j], NULL);
            nest3(j);
        }
        for (int j = 0; j < CHAINS; j++) {
            long k = round * CHAINS + j;
            atomic_store(&ending, k);
            pthread_mutex_destroy(&l[j]);
            atomic_store(&ending, -1);
            atomic_store(&ended, k);
        }
        while (atomic_load(&taken) < round * CHAINS + CHAINS - 1)
            sched_yield();
        for (int j = 0; j < CHAINS; j++) {
            pthread_mutex_destroy(&c[j]);
            pthread_mutex_destroy(&g[j]);
        }
    }
    pthread_join(tk, NULL);
    printf("rounds %d, chains %d\n", ROUNDS, CHAINS);
    return 0;
}
