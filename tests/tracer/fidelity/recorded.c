/*
 * recorded.c - stacks recorded lazily (the call site and 4 callers): one that reaches the
 * thread's outermost frame is its whole stack, one that does not says it is recorded frames.
 * The comments marked with @ name lines fidelity_test.py checks; the volatile `after` behind
 * each marked call keeps it from becoming a tail call at -O2.
 *   recorded exit   a thread takes a lock in Hold, returns from it and exits holding it
 *                   (exit-held): "taken at" is whole, from Hold to the thread's start
 *   recorded deep   a lock first seen 6 calls deep, then unlocked by main, which does not hold
 *                   it (bad-unlock): "lock first seen" is the call site and 4 callers, marked
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static volatile int after;

#define NOINLINE __attribute__((noinline))

NOINLINE void Hold(void)
{
    pthread_mutex_lock(&held); /* @hold */
    after++;
}

NOINLINE void *Exiting(void *arg)
{
    Hold(); /* @exiting */
    after++;
    return arg;
}

NOINLINE void Deep1(pthread_mutex_t *m)
{
    pthread_mutex_lock(m); /* @deep1 */
    pthread_mutex_unlock(m);
    after++;
}

NOINLINE void Deep2(pthread_mutex_t *m)
{
    Deep1(m); /* @deep2 */
    after++;
}

NOINLINE void Deep3(pthread_mutex_t *m)
{
    Deep2(m); /* @deep3 */
    after++;
}

NOINLINE void Deep4(pthread_mutex_t *m)
{
    Deep3(m); /* @deep4 */
    after++;
}

NOINLINE void Deep5(pthread_mutex_t *m)
{
    Deep4(m); /* @deep5 */
    after++;
}

int main(int argc, char **argv)
{
    static pthread_mutex_t deep = PTHREAD_MUTEX_INITIALIZER;
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, Exiting, NULL);
        pthread_join(t, NULL);
    } else {
        Deep5(&deep); /* @main:deep */
        pthread_mutex_unlock(&deep);
    }
    puts("done");
    return 0;
}
