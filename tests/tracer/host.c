/*
 * host.c - "never hurt the host": fork from a threaded program, dlopen'ed code, annotations
 * from a shared library, one thread holding 10,000 locks, a million live locks.
 *   host NAME [ARG]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct mini_storage mini_storage;
mini_storage *mini_new(void);
int mini_add_inplace(mini_storage *dst, mini_storage *src);

static pthread_mutex_t shared_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t shared_rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile int stop;

static void *busy_locker(void *arg)
{
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&shared_mutex);
        pthread_mutex_unlock(&shared_mutex);
        pthread_rwlock_rdlock(&shared_rw);
        pthread_rwlock_unlock(&shared_rw);
    }
    return NULL;
}

/* The child inherits what the forking thread holds, and may use the tracer freely. */
static int fork_child(void)
{
    pthread_mutex_t fresh;
    pthread_mutex_init(&fresh, NULL);
    pthread_mutex_lock(&fresh);
    pthread_mutex_unlock(&fresh);
    pthread_mutex_destroy(&fresh);
    pthread_rwlock_unlock(&shared_rw); /* taken by the forking thread before fork */
    return 0;
}

static void forks(void)
{
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, busy_locker, NULL);
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_rdlock(&shared_rw);
        pid_t pid = fork();
        if (pid == 0)
            _exit(fork_child());
        pthread_rwlock_unlock(&shared_rw);
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            printf("child %d ended badly: %#x\n", i, status);
    }
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    puts("forks done");
}

/* A lock held by another thread at fork() stays locked for good in the child. */
static pthread_barrier_t held, done;

static void *hold_during_fork(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&shared_mutex);
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&done);
    pthread_mutex_unlock(&shared_mutex);
    return NULL;
}

__attribute__((noinline)) void child_takes_orphan(void)
{
    pthread_mutex_lock(&shared_mutex);
    puts("child got the lock"); /* not reached; also keeps the lock call out of tail position */
}

static void fork_orphan(void)
{
    pthread_t th;
    int status;
    pthread_barrier_init(&held, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    pthread_create(&th, NULL, hold_during_fork, NULL);
    pthread_barrier_wait(&held);
    pid_t pid = fork();
    if (pid == 0) {
        child_takes_orphan();
        _exit(0);
    }
    waitpid(pid, &status, 0);
    pthread_barrier_wait(&done);
    pthread_join(th, NULL);
    printf("child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* The child of a fork holds an error-checking mutex whose owner, for libc, is the parent's
 * thread: its unlock is refused (EPERM) and changes nothing, so the child still holds it and
 * is still its writer (the unlock named no writer for a moment: lt_unlock_writer). A thread
 * of the child that holds n then waits for it, and the child waits for n: a deadlock. */
static pthread_mutex_t refused, refused_n = PTHREAD_MUTEX_INITIALIZER;
static atomic_int refused_n_held;

static void *refused_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&refused_n);
    atomic_store(&refused_n_held, 1);
    pthread_mutex_lock(&refused);
    puts("waiter got the lock"); /* not reached */
    return NULL;
}

static void fork_refused_unlock(void)
{
    pthread_mutexattr_t a;
    int status;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&refused, &a);
    pthread_mutex_lock(&refused);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t th;
        printf("child unlock -> %s\n", pthread_mutex_unlock(&refused) == EPERM ? "EPERM" : "?");
        fflush(stdout);
        pthread_create(&th, NULL, refused_waiter, NULL);
        while (!atomic_load(&refused_n_held))
            sched_yield();
        pthread_mutex_lock(&refused_n);
        puts("child got the lock"); /* not reached */
        _exit(0);
    }
    waitpid(pid, &status, 0);
    pthread_mutex_unlock(&refused);
    printf("child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void dlopened(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return;
    }
    mini_storage *(*make)(void) = (mini_storage * (*)(void)) dlsym(h, "mini_new");
    int (*add)(mini_storage *, mini_storage *) =
        (int (*)(mini_storage *, mini_storage *))dlsym(h, "mini_add_inplace");
    mini_storage *a = make(), *b = make();
    printf("distinct storages -> %d\n", add(a, b));
    fflush(stdout);
    printf("same storage -> %d\n", add(a, a));
}

static void dso_annotated(void)
{
    mini_storage *a = mini_new();
    printf("same storage -> %d\n", mini_add_inplace(a, a));
}

#define MANY_HELD 10000

static void held_10k(void)
{
    static pthread_mutex_t m[MANY_HELD];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < MANY_HELD; i++)
            pthread_mutex_lock(&m[i]);
        for (int i = 0; i < MANY_HELD; i++) /* oldest first: the far end of the held set */
            pthread_mutex_unlock(&m[round == 1 ? MANY_HELD - 1 - i : i]);
    }
    puts("held 10000 locks 3 times");
}

#define MILLION 1000000

static void million(void)
{
    pthread_rwlock_t *l = malloc(MILLION * sizeof *l);
    for (int i = 0; i < MILLION; i++)
        pthread_rwlock_init(&l[i], NULL);
    for (int i = 0; i < MILLION; i++) {
        pthread_rwlock_wrlock(&l[i]);
        pthread_rwlock_unlock(&l[i]);
        pthread_rwlock_rdlock(&l[MILLION - 1 - i]);
        pthread_rwlock_unlock(&l[MILLION - 1 - i]);
    }
    for (int i = 0; i < MILLION; i++)
        pthread_rwlock_destroy(&l[i]);
    free(l);
    puts("a million live locks");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "fork"))
        forks();
    else if (!strcmp(s, "fork-orphan"))
        fork_orphan();
    else if (!strcmp(s, "fork-refused-unlock"))
        fork_refused_unlock();
    else if (!strcmp(s, "dlopen") && argc > 2)
        dlopened(argv[2]);
    else if (!strcmp(s, "dso-annotated"))
        dso_annotated();
    else if (!strcmp(s, "held-10k"))
        held_10k();
    else if (!strcmp(s, "million"))
        million();
    else
        return 64;
    return 0;
}
