/*
 * fresh_thread.c - threads started one after another, each taking two locks through the same
 * helpers from the same depth of its stack: the first two in one order from one line of
 * Route, the third in the other order from another line. Each new thread's lock calls find
 * the walks of the threads before it (its stack is theirs, or one of the same size), which
 * hold up to the frame that called Pair: the third thread's report must name its own line
 * there, not theirs. The comments marked with @ name lines fidelity_test.py checks; keep
 * them on the lines they mark. The volatile `after` behind each marked call keeps the call
 * from becoming a tail call at -O2.
 *
 *   fresh_thread same   the threads run on one stack (pthread_attr_setstack), one at a time
 *   fresh_thread own    each on a stack of its own, all of one size
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_SIZE (256 * 1024)

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static volatile int after;

__attribute__((noinline)) void acquire(pthread_mutex_t *m)
{
    pthread_mutex_lock(m); /* @acquire */
    after++;
}

__attribute__((noinline)) void Take(pthread_mutex_t *m)
{
    acquire(m); /* @take */
    after++;
}

__attribute__((noinline)) void Pair(pthread_mutex_t *first, pthread_mutex_t *second)
{
    Take(first); /* @pair:first */
    Take(second); /* @pair:second */
    pthread_mutex_unlock(second);
    pthread_mutex_unlock(first);
    after++;
}

/* A distinct assembler comment after each call: the compiler merges no two of them. */
__attribute__((noinline)) void Route(int order)
{
    if (order == 0) {
        Pair(&a, &b); /* @route:0 */
        __asm__ volatile("# route 0" ::: "memory");
    } else {
        Pair(&b, &a); /* @route:1 */
        __asm__ volatile("# route 1" ::: "memory");
    }
    after++;
}

void *Worker(void *arg)
{
    Route((int)(intptr_t)arg); /* @worker */
    after++;
    return NULL;
}

int main(int argc, char **argv)
{
    int same = argc > 1 && strcmp(argv[1], "same") == 0;
    static const int order[] = {0, 0, 1};
    void *one = NULL;
    if (same && posix_memalign(&one, 4096, STACK_SIZE) != 0)
        return 1;
    for (int i = 0; i < 3; i++) {
        void *stack = one;
        pthread_attr_t attr;
        pthread_t th;
        if (!same && posix_memalign(&stack, 4096, STACK_SIZE) != 0)
            return 1;
        pthread_attr_init(&attr);
        pthread_attr_setstack(&attr, stack, STACK_SIZE);
        if (pthread_create(&th, &attr, Worker, (void *)(intptr_t)order[i]) != 0)
            return 1;
        pthread_join(th, NULL);
        pthread_attr_destroy(&attr);
        if (!same)
            free(stack);
    }
    free(one);
    puts("done");
    return 0;
}
