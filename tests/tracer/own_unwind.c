/*
 * own_unwind.c - a program that unwinds its own stack with libunwind (as gperftools' profilers,
 * crash handlers and language runtimes do), from two threads, and takes a mutex between. The
 * tracer's libunwind is this one (one copy a process): a lock call libunwind makes while it
 * holds its own cache lock must not make the tracer unwind too, which waited for that lock
 * forever (every program calling unw_step hung).
 *   own_unwind   prints "frames found: yes", then "done"
 */
#include <pthread.h>
#include <stdio.h>

#include "own_unwind.h"

static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static int found;

static int __attribute__((noinline)) unwind_at(int depth)
{
    if (depth > 0)
        return unwind_at(depth - 1) + 1;
    void *ips[64];
    return own_unwind_steps() + unw_backtrace(ips, 64);
}

static void *unwinder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        int n = unwind_at(i);
        pthread_mutex_lock(&counted);
        found += n > i;
        pthread_mutex_unlock(&counted);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, unwinder, NULL) != 0)
        return perror("pthread_create"), 1;
    unwinder(NULL);
    pthread_join(t, NULL);
    printf("frames found: %s\ndone\n", found == 40 ? "yes" : "no");
    return 0;
}
