/*
 * own_unwind.c - a program that unwinds its own stack with libunwind (as gperftools' profilers,
 * crash handlers and language runtimes do), from two threads, and takes a mutex between. The
 * tracer's libunwind is this one (one copy a process): a lock call libunwind makes while it
 * holds its own cache lock must not make the tracer unwind too, which waited for that lock
 * forever (every program calling unw_step hung).
 *   own_unwind   prints "frames found: yes", then "done"
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static int found;

static int __attribute__((noinline)) unwind_at(int depth)
{
    if (depth > 0)
        return unwind_at(depth - 1) + 1;
    unw_context_t context;
    unw_cursor_t cursor;
    int n = 0;
    void *ips[64];
    if (unw_getcontext(&context) == 0 && unw_init_local(&cursor, &context) == 0)
        while (unw_step(&cursor) > 0)
            n++;
    return n + unw_backtrace(ips, 64);
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
