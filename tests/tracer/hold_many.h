/*
 * hold_many.h - a thread holds thousands of mutexes at once (trylock: no order edges), then
 * lets them go: the tracer's held set for it grows well past its first mapping (noharm.c,
 * sandboxed.c: the growth where a sandbox refuses or traps mremap).
 */
#ifndef HOLD_MANY_H
#define HOLD_MANY_H

#include <pthread.h>

#define HELD_AT_ONCE 3000

/* 0 when all HELD_AT_ONCE were held at once and let go. */
static inline int hold_many(void)
{
    static pthread_mutex_t held[HELD_AT_ONCE];
    for (int i = 0; i < HELD_AT_ONCE; i++)
        if (pthread_mutex_init(&held[i], NULL) != 0 || pthread_mutex_trylock(&held[i]) != 0)
            return -1;
    for (int i = HELD_AT_ONCE; i-- > 0;)
        pthread_mutex_unlock(&held[i]);
    return 0;
}

#endif
