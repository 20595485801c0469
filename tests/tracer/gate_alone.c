/*
 * gate_alone.c - the first thread to use the order graph enters its gate without a locked
 * instruction until another thread takes the graph lock (order.c, gate_alone). The hand-over
 * happens once a process, so the program runs itself as CHILDREN fresh processes (exec), each
 * with a different moment for it: the main thread makes locks' first edges (H -> x, the x of
 * a small pool destroyed and made again at the same addresses), while a second thread waits
 * until a given number of them are made (polled, never slept on), then makes a new edge of
 * its own, which takes the graph lock and ends the first thread's way. The main thread goes on
 * until that is done, then reverses two of its edges: one made before the hand-over, one after
 * (the newest). In every fourth child (x86-64) the main thread first installs a seccomp
 * filter that refuses membarrier, as a program may after the tracer readied it: the hand-over
 * then takes order.c's other way. Each child must report exactly those two inversions and
 * nothing else; the parent counts what the children printed and prints one line that does not
 * depend on timing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "refuse_syscall.h"

#define CHILDREN 40
#define POOL 64

static pthread_mutex_t outer, early, pool[POOL], p, q;
static atomic_long made;
static atomic_int handed;
static long wait_for;

static void *other(void *arg)
{
    (void)arg;
    while (atomic_load(&made) < wait_for)
        sched_yield();
    pthread_mutex_lock(&p);
    pthread_mutex_lock(&q);
    pthread_mutex_unlock(&q);
    pthread_mutex_unlock(&p);
    atomic_store(&handed, 1);
    return NULL;
}

/* membarrier refused from now on in this thread and those it starts (x86-64; elsewhere
 * nothing is installed and the child runs as the others). 0 when the filter did not go in. */
static int refuse_membarrier(void)
{
#ifdef __x86_64__
    return refuse_syscall(SYS_membarrier);
#else
    return 1;
#endif
}

static void nest(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

static int child(long k)
{
    pthread_t th;
    wait_for = 1 + k * 7 % 97;
    pthread_mutex_init(&outer, NULL);
    pthread_mutex_init(&early, NULL);
    pthread_mutex_init(&p, NULL);
    pthread_mutex_init(&q, NULL);
    nest(&outer, &early); /* before the other thread exists: made the alone way */
    if (k % 4 == 3 && !refuse_membarrier())
        return 1;
    if (pthread_create(&th, NULL, other, NULL) != 0)
        return 1;
    long i = 0;
    for (; !atomic_load(&handed) || i < 2 * POOL; i++) {
        pthread_mutex_t *x = &pool[i % POOL];
        if (i >= POOL)
            pthread_mutex_destroy(x);
        pthread_mutex_init(x, NULL);
        nest(&outer, x);
        atomic_store(&made, i + 1);
    }
    pthread_join(th, NULL);
    nest(&early, &outer);
    nest(&pool[(i - 1) % POOL], &outer);
    return 0;
}

/* Counts the lines of the reports in buf: inversions, and any other finding. */
static void count(const char *buf, int *inversions, int *others)
{
    for (const char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, "locktrace: lock-order-inversion", 31) == 0)
            (*inversions)++;
        else if (strncmp(l, "locktrace: ", 11) == 0)
            (*others)++;
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(strtol(argv[2], NULL, 10));
    int inversions = 0, others = 0, failed = 0;
    static char buf[1 << 20];
    for (long k = 0; k < CHILDREN; k++) {
        int fd[2];
        if (pipe(fd) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            char arg[32];
            snprintf(arg, sizeof arg, "%ld", k);
            dup2(fd[1], 2);
            close(fd[0]);
            close(fd[1]);
            execl("/proc/self/exe", argv[0], "child", arg, (char *)NULL);
            _exit(127);
        }
        close(fd[1]);
        size_t n = 0;
        ssize_t r;
        while ((r = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)r;
        buf[n] = '\0';
        close(fd[0]);
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed++;
        count(buf, &inversions, &others);
    }
    printf("children %d, inversions %d, other findings %d, failed %d\n", CHILDREN, inversions,
           others, failed);
    return 0;
}
