/*
 * dlopen_tracer.c - loads liblocktrace.so with dlopen (path in argv[1]) rather than
 * LD_PRELOAD, as a program that loads a library linked with the tracer does. The load must
 * succeed (its TLS must fit in what glibc keeps for dlopen), and the tracer's own entry
 * points, called through dlsym, must work: a thread made after the load relocks an
 * error-checking mutex and is told EDEADLK with a report.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*mutex_fn)(pthread_mutex_t *);
static mutex_fn traced_lock, traced_unlock;

static void *relock(void *arg)
{
    pthread_mutex_t *m = arg;
    traced_lock(m);
    int rc = traced_lock(m);
    traced_unlock(m);
    printf("relock -> %s\n", rc == EDEADLK ? "EDEADLK" : strerror(rc));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_tracer LIBLOCKTRACE\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*active)(void) = (int (*)(void))dlsym(h, "locktrace_active_impl");
    traced_lock = (mutex_fn)dlsym(h, "pthread_mutex_lock");
    traced_unlock = (mutex_fn)dlsym(h, "pthread_mutex_unlock");
    if (!active || !traced_lock || !traced_unlock) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    printf("active %d\n", active());

    pthread_mutexattr_t a;
    pthread_mutex_t m;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m, &a);
    pthread_t t;
    if (pthread_create(&t, NULL, relock, &m) != 0)
        return 1;
    pthread_join(t, NULL);
    return 0;
}
