/*
 * random_pair.h - the mutator step of the stop-the-world tests: two random mutexes of a
 * shared array taken in index order (so every program run is free of inversions, whatever
 * the threads draw) and let go, newest first.
 */
#ifndef RANDOM_PAIR_H
#define RANDOM_PAIR_H

#include <pthread.h>

/* The next draw of the thread's generator *r (a linear congruential one: any spread will do). */
static inline unsigned random_next(unsigned *r)
{
    return (*r = *r * 1103515245u + 12345u) >> 8;
}

/* Takes and lets go of two distinct mutexes of locks[0 .. n) drawn with *r, the lower index
 * first; that index in *low. 0 when both draws named the same mutex (nothing taken). */
static inline int random_pair(pthread_mutex_t *locks, unsigned n, unsigned *r, unsigned *low)
{
    unsigned i = random_next(r) % n, j = random_next(r) % n;
    if (i == j)
        return 0;
    if (i > j) {
        unsigned t = i;
        i = j;
        j = t;
    }
    pthread_mutex_lock(&locks[i]);
    pthread_mutex_lock(&locks[j]);
    pthread_mutex_unlock(&locks[j]);
    pthread_mutex_unlock(&locks[i]);
    *low = i;
    return 1;
}

#endif
