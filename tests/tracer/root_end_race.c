/*
 * root_end_race.c - a root rwlock destroyed and unmapped while another thread's acquisition
 * makes the inline edge out of it real, which must neither crash nor report (order.c,
 * inline_edge_real).
 *
 * Each round the main thread maps a page, makes an rwlock p in it and a mutex c, and takes c
 * under p (p -> c inline, p a root: no edge in, no node). Then the taker takes c under a mutex
 * of its own (c made real under the graph lock, and with it p -> c, which gives p a node)
 * while the main thread destroys p and unmaps its page. p's end lets go of its reference in
 * the gate (lt_order_forget), and only after that does the destroy move p's gen on and clear
 * its address. A taker that found p's identity not ended in between gave p a node anyway,
 * read from the address the destroy had cleared: SIGSEGV in node_init (an rwlock's kind).
 * The windows on both sides are a few instructions wide: this program crashed only with a
 * throw-away build that spun 200 us at each (3 of 3 runs before the fix, 13 of 13 passed
 * after); as it is it runs the shape, and prints one line that does not depend on timing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

#define ROUNDS 2000

static pthread_mutex_t c, mine;
static atomic_long go = -1;   /* the last round whose c the taker may take */
static atomic_long done = -1; /* the last round whose c it took */

static void *taker(void *arg)
{
    (void)arg;
    for (long k = 0; k < ROUNDS; k++) {
        while (atomic_load(&go) < k)
            ;
        pthread_mutex_lock(&mine);
        pthread_mutex_lock(&c);
        pthread_mutex_unlock(&c);
        pthread_mutex_unlock(&mine);
        atomic_store(&done, k);
    }
    return NULL;
}

int main(void)
{
    pthread_t tk;
    pthread_mutex_init(&mine, NULL);
    if (pthread_create(&tk, NULL, taker, NULL) != 0)
        return 1;
    for (long k = 0; k < ROUNDS; k++) {
        pthread_rwlock_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 1;
        pthread_rwlock_init(p, NULL);
        pthread_mutex_init(&c, NULL);
        pthread_rwlock_wrlock(p);
        pthread_mutex_lock(&c);
        pthread_mutex_unlock(&c);
        pthread_rwlock_unlock(p);
        atomic_store(&go, k);
        for (volatile int i = 0; i < (int)(k % 50) * 100; i++) /* (the taker's start varies) */
            ;
        pthread_rwlock_destroy(p);
        munmap(p, 4096);
        while (atomic_load(&done) < k)
            ;
        pthread_mutex_destroy(&c);
    }
    pthread_join(tk, NULL);
    printf("rounds %d\n", ROUNDS);
    return 0;
}
