/*
 * lto_main.c - locks taken through lto_lock.c's helper, built with -flto: the helper is
 * inlined across files (clang and gcc), and with gcc every inlined call's description points
 * into a unit of its own, the one the compiler wrote before linking. Each report's stacks
 * must still name the helper as an inlined call, with its caller's line. The comments marked
 * with @ name lines fidelity_test.py checks; keep them on the lines they mark. The volatile
 * `after` behind each marked call keeps it from becoming a tail call.
 *
 *   lto_main        a lock-order inversion: m0 then m1, then m1 then m0
 *   lto_main self   m0 taken again by the thread that holds it (a self-deadlock)
 */
#include <pthread.h>
#include <stdio.h>

void lock_it(pthread_mutex_t *m);

static pthread_mutex_t m0 = PTHREAD_MUTEX_INITIALIZER, m1 = PTHREAD_MUTEX_INITIALIZER;
static volatile int after;

__attribute__((noinline)) void Zero_then_one(void)
{
    lock_it(&m0); /* @Zero_then_one:0 */
    lock_it(&m1); /* @Zero_then_one:1 */
    pthread_mutex_unlock(&m1);
    pthread_mutex_unlock(&m0);
}

__attribute__((noinline)) void One_then_zero(void)
{
    lock_it(&m1); /* @One_then_zero:1 */
    lock_it(&m0); /* @One_then_zero:0 */
    pthread_mutex_unlock(&m0);
    pthread_mutex_unlock(&m1);
}

__attribute__((noinline)) void Relock(void)
{
    lock_it(&m0); /* @Relock:first */
    lock_it(&m0); /* @Relock:again */
    after = 1;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        Relock(); /* @main:relock */
        after = 2;
        return 0;
    }
    Zero_then_one(); /* @main:01 */
    One_then_zero(); /* @main:10 */
    puts("done");
    return 0;
}
