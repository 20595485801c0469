/*
 * blocked.h - for test programs whose threads must block in a given order: instead of
 * sleeping "long enough" (which a busy machine makes too short), a thread announces what it
 * is about to request and the other one polls the kernel until that thread sleeps in a futex
 * wait (/proc/self/task/<tid>/syscall), which is where glibc's locks, joins and condition
 * waits block. The announcement rules out an earlier futex wait (a barrier, a previous
 * condition wait) being mistaken for the one that matters. Include it with _GNU_SOURCE
 * defined (syscall).
 */
#ifndef BLOCKED_H
#define BLOCKED_H

#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calling thread's kernel id. */
static inline int blocked_tid(void)
{
    return (int)syscall(SYS_gettid);
}

/* The /proc syscall file at `path` in buf (the system call's number, then its arguments):
 * 1, or 0 when it could not be read. */
static inline int blocked_syscall_line(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, size - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = 0;
    return 1;
}

/* Whether the thread whose /proc syscall file is `path` sleeps in a futex call right now; if
 * so and `word` is not NULL, *word is the futex word it sleeps on (the call's first argument). */
static inline int blocked_futex_word_at(const char *path, uintptr_t *word)
{
    char buf[256], *end;
    if (!blocked_syscall_line(path, buf, sizeof buf) || strtol(buf, &end, 10) != SYS_futex)
        return 0;
    if (word)
        *word = (uintptr_t)strtoull(end, NULL, 16);
    return 1;
}

static inline int blocked_in_futex_at(const char *path)
{
    return blocked_futex_word_at(path, NULL);
}

/* Whether thread `tid` of this process sleeps in a futex call right now. */
static inline int blocked_in_futex(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return blocked_in_futex_at(path);
}

/* Returns once thread `tid` sleeps in a futex wait (for callers that know the tid already). */
static inline void blocked_wait_tid(int tid)
{
    while (!blocked_in_futex(tid))
        sched_yield();
}

/* A thread about to block: set `tid` (announce) right before the blocking call; with
 * blocked_announce_on, also what it blocks on. */
typedef struct blocked_probe {
    _Atomic int tid;    /* 0 until announced */
    uintptr_t object;   /* 0: any futex wait will do */
    size_t size;
} blocked_probe;

static inline void blocked_announce(blocked_probe *p)
{
    atomic_store(&p->tid, blocked_tid());
}

/* Announces a wait on a futex word inside [object, object + size): a mutex, rwlock, condition
 * variable or semaphore, or for a join the joined thread's descriptor (its pthread_t points to
 * it; pass 4096). blocked_until then waits for that wait, not for any: a traced thread may
 * sleep on another futex on its way (the loader's lock while the tracer unwinds its stack for
 * the first time) before it has said what it waits for, and a test that makes a report then
 * would find it not yet waiting. */
static inline void blocked_announce_on(blocked_probe *p, const void *object, size_t size)
{
    p->object = (uintptr_t)object;
    p->size = size;
    blocked_announce(p);
}

/* Returns once the announced thread sleeps in its futex wait (on its object, if it said). */
static inline void blocked_until(blocked_probe *p)
{
    char path[64];
    uintptr_t word;
    int tid;
    while ((tid = atomic_load(&p->tid)) == 0)
        sched_yield();
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    while (!blocked_futex_word_at(path, &word) ||
           (p->object && (word < p->object || word - p->object >= p->size)))
        sched_yield();
}

#endif
