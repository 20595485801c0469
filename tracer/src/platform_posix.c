/*
 * platform_posix.c - the platform functions (platform.h) that Linux and macOS implement the
 * same way, with POSIX calls only.
 */
#define _GNU_SOURCE /* glibc: MAP_ANON, MAP_NORESERVE, madvise */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform.h"

int lt_platform_write(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            errno = ENOSPC;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

void *lt_platform_map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void lt_platform_unmap(void *p, size_t size)
{
    munmap(p, size);
}

/* The aligned part of a larger mapping, the rest given back. */
void *lt_platform_map_aligned(size_t size, size_t align)
{
    char *room = lt_platform_map(size + align);
    if (!room)
        return NULL;
    char *at = (char *)(((uintptr_t)room + align - 1) & ~(uintptr_t)(align - 1));
    if (at != room)
        lt_platform_unmap(room, (size_t)(at - room));
    if (at != room + align)
        lt_platform_unmap(at + size, (size_t)(room + align - at));
    return at;
}

void lt_platform_map_huge(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    int saved = errno; /* a kernel without large pages says EINVAL: the program's call must not */
    madvise(p, size, MADV_HUGEPAGE);
    errno = saved;
#else
    (void)p;
    (void)size;
#endif
}

static _Atomic pid_t refused[LT_REFUSABLE]; /* the process where each call was refused */

int lt_platform_refused(lt_refusable call)
{
    pid_t in = atomic_load_explicit(&refused[call], memory_order_relaxed);
    return in && in == getpid();
}

void lt_platform_refuse(lt_refusable call)
{
    atomic_store_explicit(&refused[call], getpid(), memory_order_relaxed);
}

int lt_platform_refusal(int err)
{
    return err != ENOMEM && err != EAGAIN && err != EINTR;
}

void *lt_platform_copy_over(void *p, size_t old, void *q, size_t size)
{
    if (q) {
        memcpy(q, p, old < size ? old : size);
        lt_platform_unmap(p, old);
    }
    return q;
}

/* Asked no more in a process once refused: Firefox's content sandbox logged each call (12-16
 * lines a headless screenshot). An older kernel's EINVAL counts too: it will not have it
 * later either. */
void lt_platform_populate(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    int saved = errno; /* the program's: a refused call must not change it */
    if (!lt_platform_refused(LT_REFUSED_POPULATE) && madvise(p, size, MADV_POPULATE_WRITE) != 0 &&
        lt_platform_refusal(errno))
        lt_platform_refuse(LT_REFUSED_POPULATE);
    errno = saved;
#else
    (void)p;
    (void)size;
#endif
}

void *lt_platform_reserve(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int lt_platform_altstack_base(uintptr_t sp, uintptr_t *lo)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK) ||
        sp < (uintptr_t)ss.ss_sp || sp - (uintptr_t)ss.ss_sp >= ss.ss_size)
        return 0;
    *lo = (uintptr_t)ss.ss_sp;
    return 1;
}
