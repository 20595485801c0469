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
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calling thread's kernel id. */
static inline int blocked_tid(void)
{
    return (int)syscall(SYS_gettid);
}

/* Whether the thread whose /proc syscall file is `path` sleeps in a futex call right now. */
static inline int blocked_in_futex_at(const char *path)
{
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = 0;
    return atol(buf) == SYS_futex;
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

/* A thread about to block: set `tid` (announce) right before the blocking call. */
typedef struct blocked_probe {
    _Atomic int tid; /* 0 until announced */
} blocked_probe;

static inline void blocked_announce(blocked_probe *p)
{
    atomic_store(&p->tid, blocked_tid());
}

/* Returns once the announced thread sleeps in its futex wait. */
static inline void blocked_until(blocked_probe *p)
{
    int tid;
    while ((tid = atomic_load(&p->tid)) == 0)
        sched_yield();
    blocked_wait_tid(tid);
}

#endif
