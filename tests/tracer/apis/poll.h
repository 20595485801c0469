/*
 * poll.h - what the programs of tests/tracer/apis share: waiting until another thread is
 * blocked, by polling the kernel's view of it (never by sleeping and assuming), and deadlines.
 */
#ifndef APIS_POLL_H
#define APIS_POLL_H

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Whether thread `tid` of this process sleeps in a futex call right now: it is blocked in a
 * lock, a join, a condition wait or a once. */
static inline int in_futex(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return atol(buf) == SYS_futex;
}

static inline void until_blocked(int tid)
{
    while (!in_futex(tid))
        sched_yield();
}

/* CLOCK_REALTIME (TIME_UTC) deadline ms from now. */
static inline struct timespec ms_from_now(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

#endif
