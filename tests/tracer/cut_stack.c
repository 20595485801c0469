/*
 * cut_stack.c - a self-deadlock (write-held, then write) taken in cut_lock_twice
 * (cut_stack_lock.c), which meson.build links in two builds: without unwind tables, where the
 * report's stacks must say they are cut short and why, and the normal one, where they reach
 * _start or the thread's start and must not. Called from main, or from a thread ("thread").
 * Prints what the two calls returned.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

int cut_lock_twice(pthread_rwlock_t *l);

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;

/* A frame of the program's own between main (or the thread's start) and the lock calls: the
 * whole stack names it. */
__attribute__((noinline)) static void *take_twice(void *unused)
{
    (void)unused;
    printf("%d\n", cut_lock_twice(&lock));
    pthread_rwlock_unlock(&lock); /* the first call's hold: no exit-held report */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "thread") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, take_twice, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 2;
        return 0;
    }
    take_twice(NULL);
    return 0;
}
