/*
 * cancel_fork.c - a thread forks while another thread is cancelling it: the tracer has marked
 * it (pthread_cancel is on its way, inside the tracer) and libc has not sent the cancellation
 * yet (cancel_shim.c holds the canceller there). Only the forking thread lives on in the
 * child, where no canceller will finish: the child joins a thread of its own, with its
 * cancellation disabled, and exits. Traced, the child waited for the mark to be sent, for
 * good. The parent's thread, its cancellation disabled too, is cancelled for nothing and
 * returns.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern _Atomic int cancel_shim_in, cancel_shim_go;

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_t target;

static void *nothing(void *arg)
{
    return arg;
}

static void *canceller(void *arg)
{
    (void)arg;
    printf("cancel -> %d\n", pthread_cancel(target));
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_mutex_lock(&m); /* a call into the tracer: registered */
    pthread_mutex_unlock(&m);
    pthread_t c;
    pthread_create(&c, NULL, canceller, NULL);
    while (!atomic_load(&cancel_shim_in))
        sched_yield();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a child that hangs ends, and the parent says so */
        pthread_t t;
        int rc = pthread_create(&t, NULL, nothing, NULL);
        if (rc == 0)
            rc = pthread_join(t, NULL);
        _exit(rc);
    }
    atomic_store(&cancel_shim_go, 1);
    pthread_join(c, NULL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status))
        printf("child exited %d\n", WEXITSTATUS(status));
    else
        printf("child killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return NULL;
}

int main(void)
{
    pthread_create(&target, NULL, forker, NULL);
    pthread_join(target, NULL);
    puts("done");
    return 0;
}
