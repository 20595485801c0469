/*
 * late_lib.c - the library late_main.c dlopens, built twice: as is ("first"), and with
 * -DSECOND, whose relock is another function on other lines at another offset, under another
 * lock. Loaded where the first one was, it must not be reported with the first one's names.
 * The comments marked with @ name lines fidelity_test.py checks.
 */
#include <pthread.h>

#ifndef SECOND
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static int first_relock(void)
{
    pthread_mutex_lock(&first_lock);
    int rc = pthread_mutex_lock(&first_lock); /* @first_relock */
    pthread_mutex_unlock(&first_lock);
    return rc;
}

int plugin_relock(void)
{
    return first_relock() + 0; /* @plugin_relock:first */
}
#else
static pthread_mutex_t padding_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second_lock = PTHREAD_MUTEX_INITIALIZER;

/* Moves second_relock and second_lock to offsets of their own. */
__attribute__((noinline)) static void padding(void)
{
    for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&padding_lock);
        pthread_mutex_unlock(&padding_lock);
    }
}

__attribute__((noinline)) static int second_relock(void)
{
    padding();
    pthread_mutex_lock(&second_lock);
    int rc = pthread_mutex_lock(&second_lock); /* @second_relock */
    pthread_mutex_unlock(&second_lock);
    return rc;
}

int plugin_relock(void)
{
    return second_relock() + 0; /* @plugin_relock:second */
}
#endif
