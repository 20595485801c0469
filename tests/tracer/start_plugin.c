/*
 * start_plugin.c - loaded by start_deferred.c: takes two locks of its own in both orders;
 * the first order also in a thread started by libc's own pthread_create, whose first lock
 * call is then the process's first the tracer sees.
 */
#include <dlfcn.h>
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

void plugin_first(void)
{
    first_then_second();
}

void plugin_second(void)
{
    second_then_first();
}

static void *first_thread(void *arg)
{
    first_then_second();
    return arg;
}

/* 0 once a thread libc started (not through the tracer's pthread_create, which readies the
 * tracer in the calling thread) took the first order and ended. */
int plugin_first_natively(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        libc ? (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
                   libc, "pthread_create")
             : NULL;
    int (*join)(pthread_t, void **) = libc ? (int (*)(pthread_t, void **))dlsym(libc, "pthread_join")
                                           : NULL;
    pthread_t t;
    return create && join && create(&t, NULL, first_thread, NULL) == 0 && join(t, NULL) == 0
               ? 0
               : 1;
}
