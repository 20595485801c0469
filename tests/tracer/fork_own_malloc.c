/*
 * fork_own_malloc.c - a program with its own malloc, which takes its lock in a fork prepare
 * handler and lets go of it in the child and parent handlers (as jemalloc and Firefox's
 * mozjemalloc do), forks while another thread holds a mutex. Natively and traced the child
 * exits at once: the tracer, whose child handler runs before the program's (registered
 * later), must not call malloc there (it did, to record the thread that held the mutex, and
 * the child hung on the allocator's lock: Firefox's headless screenshot never ended).
 * Prints "child exited 0" and "done"; "child hung" (and kills it) after 30 s without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A bump allocator over a static buffer, under one mutex; a block's size is kept before it. */
static pthread_mutex_t heap_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Alignas(64) char heap[64 << 20];
static size_t heap_used;

static void *bump(size_t align, size_t size)
{
    void *p = NULL;
    if (align < 16)
        align = 16;
    pthread_mutex_lock(&heap_mutex);
    size_t at = (heap_used + sizeof(size_t) + align - 1) & ~(align - 1);
    if (at + size <= sizeof heap) {
        memcpy(heap + at - sizeof(size_t), &size, sizeof size);
        p = heap + at;
        heap_used = at + size;
    }
    pthread_mutex_unlock(&heap_mutex);
    if (!p)
        errno = ENOMEM;
    return p;
}

static size_t size_of(const void *p)
{
    size_t n;
    memcpy(&n, (const char *)p - sizeof n, sizeof n);
    return n;
}

void *malloc(size_t size) { return bump(16, size); }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t size)
{
    void *p = n && size > SIZE_MAX / n ? NULL : bump(16, n * size);
    return p ? memset(p, 0, n * size) : NULL;
}
void *realloc(void *old, size_t size)
{
    void *p = bump(16, size);
    if (p && old)
        memcpy(p, old, size_of(old) < size ? size_of(old) : size);
    return p;
}
void *memalign(size_t align, size_t size) { return bump(align, size); }
void *aligned_alloc(size_t align, size_t size) { return bump(align, size); }
int posix_memalign(void **out, size_t align, size_t size)
{
    void *p = bump(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t size) { return bump(4096, size); }
void *pvalloc(size_t size) { return bump(4096, (size + 4095) & ~(size_t)4095); }
size_t malloc_usable_size(void *p) { return p ? size_of(p) : 0; }

static void heap_lock(void) { pthread_mutex_lock(&heap_mutex); }
static void heap_unlock(void) { pthread_mutex_unlock(&heap_mutex); }

static pthread_mutex_t held_across = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holding, forked;

static void *holder(void *arg)
{
    pthread_mutex_lock(&held_across);
    atomic_store(&holding, 1);
    while (!atomic_load(&forked))
        sched_yield();
    pthread_mutex_unlock(&held_across);
    return arg;
}

int main(void)
{
    pthread_t t;
    int status;
    pthread_atfork(heap_lock, heap_unlock, heap_unlock);
    if (pthread_create(&t, NULL, holder, NULL) != 0)
        return 1;
    while (!atomic_load(&holding))
        sched_yield();
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    atomic_store(&forked, 1);
    pthread_join(t, NULL);
    if (child < 0)
        return 1;
    for (int i = 0; i < 3000; i++) { /* 30 s */
        if (waitpid(child, &status, WNOHANG) == child) {
            printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            printf("done\n");
            return 0;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    printf("child hung\n");
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return 1;
}
