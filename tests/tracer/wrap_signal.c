/*
 * wrap_signal.c - lock call sites seen for the first time inside a signal handler that
 * interrupted malloc. The first walk through a site decides whether its function is a lock
 * wrapper (callsite.c, wrappers.c): that must not allocate or lock, or the handler would wait
 * for the malloc lock its own thread holds. The main thread allocates and frees in a loop;
 * a timer signal's handler takes a mutex through lock_cache() (listed in LOCKTRACE_WRAPPERS)
 * from the next of 256 distinct call sites, each a site never seen before. Prints "done".
 * (Made with malloc, the decision hangs this program at once: checked by hand.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define SITES 256

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t taken;

__attribute__((noinline)) void lock_cache(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    __asm__ volatile("" ::: "memory");
}

#define SITE(i)                                                                                \
    case i:                                                                                    \
        lock_cache(&handler_lock);                                                             \
        break;
#define SITES4(i) SITE(i) SITE(i + 1) SITE(i + 2) SITE(i + 3)
#define SITES16(i) SITES4(i) SITES4(i + 4) SITES4(i + 8) SITES4(i + 12)
#define SITES64(i) SITES16(i) SITES16(i + 16) SITES16(i + 32) SITES16(i + 48)

static void on_timer(int sig)
{
    (void)sig;
    if (taken >= SITES)
        return;
    switch (taken) {
        SITES64(0) SITES64(64) SITES64(128) SITES64(192)
    }
    pthread_mutex_unlock(&handler_lock);
    taken++;
}

static void *nothing(void *arg)
{
    return arg;
}

int main(void)
{
    /* A second thread, even one that has ended, makes glibc's malloc lock its arenas. */
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_timer;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_PROF, &every, NULL);
    unsigned seed = 1;
    void *keep[64] = {0};
    while (taken < SITES) {
        seed = seed * 1103515245u + 12345u;
        size_t slot = (seed >> 8) % 64;
        free(keep[slot]);
        keep[slot] = malloc(16 + (seed >> 16) % 4096);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    for (size_t i = 0; i < 64; i++)
        free(keep[i]);
    puts("done");
    return 0;
}
