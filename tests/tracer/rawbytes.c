/*
 * rawbytes.c - a report whose strings hold bytes that are not UTF-8, and control characters:
 * the thread's name, the lock's annotation, a function's symbol, and (reports_test.py builds
 * it in such a directory from such a file name) the program's path and its source file. An
 * error-checking mutex relocked: reported, and the program goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "locktrace.h"

static void describe(const void *object, char *buf, size_t size)
{
    (void)object;
    snprintf(buf, size, "cache \xff\xfe of \xc3\x28 bytes\x01 \xe2\x82\xac");
}

/* Its symbol is "relock_" and the bytes ff fe. */
int relock(pthread_mutex_t *m) __asm__("relock_\xff\xfe");
int relock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    int rc = pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    return rc;
}

int main(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    pthread_setname_np(pthread_self(), "t\xff\xfe\x01x");
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m, &a);
    locktrace_annotate_lock(&m, &m, describe);
    printf("relock -> %s\n", relock(&m) == EDEADLK ? "EDEADLK" : "?");
    return 0;
}
