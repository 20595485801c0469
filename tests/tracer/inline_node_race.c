/*
 * inline_node_race.c - a lock destroyed while another thread's acquisition is giving it a node,
 * which must neither crash nor report (order.c, inline_realise, lt_order_forget_node).
 *
 * Each round the ender makes CHAINS chains g -> l -> c (three fresh mutexes taken nested and
 * let go, so l and c each keep their first edge inline, g has none). The taker takes each c
 * under a mutex of its own: that second edge into c makes c real under the graph lock, and up
 * from it l and g - inline_realise publishes l's node first, with no edge yet, then makes
 * l -> c and g -> l. The ender destroys each l while that happens. A destroy that took l's node
 * from its entry then (its lists looked empty, so its end seemed to imply nothing, and it
 * needed neither the gate nor the graph lock) left inline_realise reading back NULL for l's
 * node: SIGSEGV in inline_edge_real. Only a destroy run inside that step shows it, so a timer
 * plays the scheduler: it interrupts the taker every PERIOD_NS, and a handler that finds it
 * inside its acquisition of c (once a chain) lets the ender destroy that chain's l and waits
 * for it (polled, at most HOLD_NS); otherwise the ender destroys it once the taker took c.
 * Prints one line that does not depend on timing.
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
#define ROUNDS 600
#define PERIOD_NS 20000L /* the timer's interval */
#define HOLD_NS 50000L   /* most a handler waits for the ender */

static pthread_mutex_t g[CHAINS], l[CHAINS], c[CHAINS], mine;
static atomic_long made = -1;   /* the last round whose chains are made */
static atomic_long taking = -1; /* the chain (round * CHAINS + j) whose c the taker takes, -1 */
static atomic_long go = -1;     /* the last chain a handler let the ender end */
static atomic_long taken = -1;  /* the last chain whose c the taker took */
static atomic_long ended = -1;  /* the last chain whose l's destroy returned */
static long held = -1;          /* (the taker's) the last chain a handler held it in */
static atomic_int timer_ok;     /* the taker's timer runs: 1, failed: -1 */

/* The timer's signal, in the taker: inside its acquisition of a chain's c, once a chain, the
 * ender destroys that chain's l now, and the taker waits for it. Bounded: the handler may
 * have come while the taker holds a tracer lock that the destroy waits for. */
static void hold(int sig, siginfo_t *info, void *uc)
{
    (void)sig, (void)info, (void)uc;
    pc_hold(atomic_load(&taking), &held, &go, &ended, HOLD_NS);
}

static void *taker(void *arg)
{
    (void)arg;
    atomic_store(&timer_ok, pc_probe_timer(SIGALRM, hold, PERIOD_NS) ? 1 : -1);
    for (long k = 0; k < (long)ROUNDS * CHAINS; k++) {
        while (atomic_load(&made) < k / CHAINS)
            ;
        pthread_mutex_lock(&mine);
        atomic_store(&taking, k);
        pthread_mutex_lock(&c[k % CHAINS]);
        atomic_store(&taking, -1);
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
    if (pthread_create(&tk, NULL, taker, NULL) != 0)
        return 1;
    while (atomic_load(&timer_ok) == 0)
        sched_yield();
    if (atomic_load(&timer_ok) < 0)
        return 1;
    for (long round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < CHAINS; j++) {
            pthread_mutex_init(&g[j], NULL);
            pthread_mutex_init(&l[j], NULL);
            pthread_mutex_init(&c[j], NULL);
            nest3(j);
        }
        atomic_store(&made, round);
        for (int j = 0; j < CHAINS; j++) {
            long k = round * CHAINS + j;
            while (atomic_load(&go) < k && atomic_load(&taken) < k)
                ;
            pthread_mutex_destroy(&l[j]);
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
