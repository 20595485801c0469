/*
 * mixed_nodebug.c - built without -g (a library or generated file of the program with no
 * debug info): a self-deadlock whose frame has no line to show. See gap_main.cpp.
 */
#include <pthread.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void lock_twice(void)
{
    pthread_mutex_lock(&m);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
}
