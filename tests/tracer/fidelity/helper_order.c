/*
 * helper_order.c - two locks taken through one shared helper from different callers, in both
 * orders (the shape of ThreadSanitizer's deadlock tests). Each lock's "taken at" stack must
 * name its own caller and lines. The comments marked with @ name lines fidelity_test.py
 * checks; keep them on the lines they mark. With an argument: a self-deadlock through the
 * helper instead.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m0 = PTHREAD_MUTEX_INITIALIZER, m1 = PTHREAD_MUTEX_INITIALIZER;

void acquire(pthread_mutex_t *m)
{
    pthread_mutex_lock(m); /* @acquire */
}

void release(pthread_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

void Acquire0(void)
{
    acquire(&m0); /* @Acquire0 */
}

void Acquire1(void)
{
    acquire(&m1); /* @Acquire1 */
}

void Acquire_0_then_1(void)
{
    Acquire0(); /* @Acquire_0_then_1:0 */
    Acquire1(); /* @Acquire_0_then_1:1 */
    release(&m1);
    release(&m0);
}

void Acquire_1_then_0(void)
{
    Acquire1(); /* @Acquire_1_then_0:1 */
    Acquire0(); /* @Acquire_1_then_0:0 */
    release(&m0);
    release(&m1);
}

/* "self": m0 taken again through the helper from another caller: a self-deadlock whose
 * earlier acquisition must name Acquire0's caller, not the request's. (A function of its own:
 * inlined into main, clang would share its first call with Acquire_0_then_1's, at line 0.) */
void Take_again(void)
{
    Acquire0(); /* @Take_again */
}

__attribute__((noinline)) void Relock(void)
{
    Acquire0(); /* @Relock:first */
    Take_again(); /* @Relock:again */
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        Relock(); /* @main:relock */
        return 0;
    }
    Acquire_0_then_1(); /* @main:01 */
    Acquire_1_then_0(); /* @main:10 */
    puts("done");
    return 0;
}
