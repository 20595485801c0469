/*
 * noharm.c - correct programs from real test suites, made small, that the tracer changed
 * (run with and without it: the output must be the same).
 *   noharm fds          lists the descriptors open at the start of main and again after two
 *                       threads took locks at call sites new to the tracer (which unwinds
 *                       there): only 0, 1 and 2, as the runner opened them. CPython's
 *                       test_subprocess checks a child's descriptors this way; libunwind's
 *                       pipe for checking addresses was two more in every traced process
 *   noharm fds-limit    the same in a copy of itself started with a soft RLIMIT_NOFILE of 64
 *                       (the pipe moved below a lowered limit: CPython's
 *                       test_close_fds_when_max_fd_is_lowered)
 *   noharm peek-refused a seccomp filter refuses process_vm_readv (EPERM, as container
 *                       profiles do), then two threads take two mutexes in opposite orders:
 *                       the tracer checks the addresses libunwind asks it to check another way,
 *                       and the inversion's stacks reach start_thread (x86-64 only: elsewhere
 *                       it says "no filter here" and takes the locks all the same)
 * Prints "done".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <errno.h>

#include "refuse_syscall.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;

/* The open descriptors, but the directory's own, in ascending order (the kernel lists them
 * so). */
static void list_fds(const char *when)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        perror("opendir /proc/self/fd");
        exit(2);
    }
    printf("descriptors %s:", when);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
}

static __attribute__((noinline)) void nested(pthread_mutex_t *inner)
{
    pthread_mutex_lock(&outer);
    pthread_mutex_lock(inner);
    pthread_mutex_unlock(inner);
    pthread_mutex_unlock(&outer);
}

static void *new_sites(void *arg)
{
    pthread_mutex_t inner;
    pthread_mutex_init(&inner, NULL);
    nested(&inner);
    pthread_mutex_destroy(&inner);
    return arg;
}

static int fds(void)
{
    pthread_t th[2];
    list_fds("at start");
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, new_sites, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    list_fds("after the locks");
    return 0;
}

/* The program again, with a soft limit of 64 descriptors from its start (the tracer is
 * loaded, and sets up its stacks, before main). */
static int fds_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    r.rlim_cur = r.rlim_max < 64 ? r.rlim_max : 64;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    fflush(stdout);
    execl("/proc/self/exe", "noharm", "fds", (char *)NULL);
    perror("execl");
    return 1;
}

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void take(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

static void *first_then_second(void *arg)
{
    take(&first, &second);
    return arg;
}

static void *second_then_first(void *arg)
{
    take(&second, &first);
    return arg;
}

/* process_vm_readv answers EPERM from here on, for this process; 1 when the filter is in
 * place. */
static int refuse_process_vm_readv(void)
{
#ifdef __x86_64__
    long word = 0, copy;
    struct iovec local = {&copy, sizeof copy}, remote = {&word, sizeof word};
    return refuse_syscall(SYS_process_vm_readv) &&
           process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 && errno == EPERM;
#else
    return 0;
#endif
}

static int peek_refused(void)
{
    pthread_t a, b;
    if (!refuse_process_vm_readv())
        printf("no filter here\n");
    if (pthread_create(&a, NULL, first_then_second, NULL) != 0)
        return 1;
    pthread_join(a, NULL);
    if (pthread_create(&b, NULL, second_then_first, NULL) != 0)
        return 1;
    pthread_join(b, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc;
    if (strcmp(mode, "fds") == 0)
        rc = fds();
    else if (strcmp(mode, "fds-limit") == 0)
        rc = fds_limit();
    else if (strcmp(mode, "peek-refused") == 0)
        rc = peek_refused();
    else {
        fprintf(stderr, "usage: noharm fds|fds-limit|peek-refused\n");
        return 2;
    }
    if (rc == 0)
        printf("done\n");
    return rc;
}
