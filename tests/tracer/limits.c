/*
 * limits.c - correct programs that push the tracer past its own bounds (lim11's table in the
 * session notes): it must neither hang, crash nor change what they do, and what it keeps
 * must not grow with what they no longer use.
 *   limits NAME
 * Each prints what it did, so meson.build compares the traced run with the native one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* ------------------------------------------------------------------------------------------
 * Threads made one after another, a few alive at a time, each taking a lock in its own stack
 * between two global ones: every thread makes two new lock orders, which end with its stack.
 * Each thread also reserved room in the known set of lock orders when it made them, and that
 * room was never given back: 10,000 such threads grew the set past an 8 MB graph bound (and
 * 100,000 to 32 MB, RSS 119 MB against 15 MB now) for 6 live orders.
 * ---------------------------------------------------------------------------------------- */
#define SHORT_THREADS 20000
#define SHORT_ALIVE 4
static pthread_mutex_t outer[SHORT_ALIVE], inner[SHORT_ALIVE];

static void *short_thread(void *arg)
{
    long i = (long)arg;
    pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
    int bad = pthread_mutex_lock(&outer[i]) | pthread_mutex_lock(&own) |
              pthread_mutex_lock(&inner[i]);
    bad |= pthread_mutex_unlock(&inner[i]) | pthread_mutex_unlock(&own) |
           pthread_mutex_unlock(&outer[i]);
    return (void *)(long)bad;
}

NOINLINE static void short_threads(void)
{
    pthread_t th[SHORT_ALIVE];
    long bad = 0;
    for (int i = 0; i < SHORT_ALIVE; i++) {
        pthread_mutex_init(&outer[i], NULL);
        pthread_mutex_init(&inner[i], NULL);
    }
    for (int made = 0; made < SHORT_THREADS; made += SHORT_ALIVE) {
        for (long i = 0; i < SHORT_ALIVE; i++)
            if (pthread_create(&th[i], NULL, short_thread, (void *)i) != 0) {
                printf("pthread_create failed after %d threads\n", made);
                return;
            }
        for (int i = 0; i < SHORT_ALIVE; i++) {
            void *r;
            pthread_join(th[i], &r);
            bad |= (long)r;
        }
    }
    printf("made %d threads, each took 3 locks: %s\n", SHORT_THREADS, bad ? "bad" : "ok");
}

/* ------------------------------------------------------------------------------------------
 * A handler on an alternate signal stack of SIGSTKSZ's classic 8 KiB (about 6 KiB used
 * natively here) takes two locks nested: a new lock order, whose first occurrence the tracer
 * unwinds. The unwind (libunwind's cursor, the tracer's arrays of frames: ~7 KiB) overflowed
 * the stack, and the program died of SIGSEGV. A machine whose signal frame is larger (AMX)
 * gets a stack that much larger.
 * ---------------------------------------------------------------------------------------- */
static pthread_mutex_t handler_outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t handler_inner = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled, handler_bad;

static void locking_handler(int sig)
{
    (void)sig;
    handler_bad |= pthread_mutex_lock(&handler_outer) | pthread_mutex_lock(&handler_inner);
    handler_bad |= pthread_mutex_unlock(&handler_inner) | pthread_mutex_unlock(&handler_outer);
    handled++;
}

NOINLINE static void altstack_lock(void)
{
    long min = sysconf(_SC_MINSIGSTKSZ);
    size_t size = min > 4096 ? 2 * (size_t)min + 4096 : 8192;
    stack_t ss = {.ss_sp = malloc(size), .ss_size = size};
    struct sigaction sa = {.sa_handler = locking_handler, .sa_flags = SA_ONSTACK};
    if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0) {
        printf("set-up failed\n");
        return;
    }
    for (int i = 0; i < 100; i++)
        raise(SIGUSR1);
    printf("handler on an alternate stack ran %d times: %s\n", (int)handled,
           handler_bad ? "bad" : "ok");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(s, "short-threads"))
        short_threads();
    else if (!strcmp(s, "altstack-lock"))
        altstack_lock();
    else {
        fprintf(stderr, "unknown scenario '%s'\n", s);
        return 64;
    }
    return 0;
}
