/*
 * blocked.h - for tests: wait until another thread of this process is blocked, by asking the
 * kernel (never by sleeping and hoping).
 */
#ifndef LT_TEST_BLOCKED_H
#define LT_TEST_BLOCKED_H

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int test_tid(void)
{
    return (int)syscall(SYS_gettid);
}

/* Whether thread `tid` of this process sleeps in a futex call right now (a lock, a join or a
 * condition wait): the first field of /proc/self/task/<tid>/syscall. */
static inline int test_in_futex(int tid)
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

static inline void test_until_blocked(int tid)
{
    while (!test_in_futex(tid))
        sched_yield();
}

#endif
