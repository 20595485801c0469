/*
 * start_plugin.c - loaded by start_deferred.c: takes two locks of its own in both orders.
 */
#include <pthread.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void first_then_second(void)
{
    pthread_mutex_lock(&first);
    pthread_mutex_lock(&second);
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
}

__attribute__((noinline)) static void second_then_first(void)
{
    pthread_mutex_lock(&second);
    pthread_mutex_lock(&first);
    pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
}

void plugin_run(void)
{
    first_then_second();
    second_then_first();
}
