/*
 * platform_posix.c - the platform functions (platform.h) that Linux and macOS implement the
 * same way, with POSIX calls only.
 */
#define _GNU_SOURCE /* glibc: MAP_ANON, MAP_NORESERVE, madvise */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/*
 * The tracer's text on stderr, where the program may have put a pipe or socket that nobody
 * reads, or whose reader has gone (a log collector that died, `prog 2>&1 | head -1`). Natively
 * such a program may never write there; the tracer's text must neither kill it nor stop it
 * for good: a write to a pipe without a reader raised SIGPIPE, which ended the program
 * (harden-env.1), and one to a full pipe blocked it forever inside a report, holding the
 * report lock, so its other threads' reports and its exit waited too, and its report file
 * was never written (harden-env.2). So, on a pipe or socket: SIGPIPE is blocked meanwhile
 * and one raised here taken back (one the program had pending stays), and the text goes in
 * pieces of PIPE_BUF bytes, each when poll says the descriptor takes it. A reader that takes
 * nothing for ERR_WAIT_MS loses the rest of that text, and later text goes only where poll
 * says it fits at once, until a piece is taken again. The pieces go through a duplicate of
 * the descriptor, so a program that puts something else at 2 meanwhile (dup2) gets none of
 * them there. Elsewhere (a file, a terminal) the text is written whole, as before: a report
 * stays in one piece in a file several processes write.
 */
#define ERR_WAIT_MS 5000

/* How much of len goes in one write: all of it where a pipe has room for it now (Linux: its
 * size less what it holds, less two pages that a partly read or written buffer may waste), so
 * that a report is not cut by another process's text in a pipe they share, as it was not when
 * it went in one write; else PIPE_BUF. */
static size_t err_piece(int fd, size_t len)
{
#if defined(F_GETPIPE_SZ) && defined(FIONREAD)
    int size, used = 0;
    if (len > PIPE_BUF && (size = fcntl(fd, F_GETPIPE_SZ)) > 0 &&
        ioctl(fd, FIONREAD, &used) == 0 && used >= 0 &&
        (size_t)size >= (size_t)used + len + 2 * 4096)
        return len;
#endif
    return len < PIPE_BUF ? len : PIPE_BUF;
}

int lt_platform_write_err(const char *buf, size_t len)
{
    static _Atomic int stalled; /* the last wait for the reader ran out */
    struct stat st;
    if (fstat(2, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return lt_platform_write(2, buf, len);
    sigset_t pipe_only, mask, pending;
    int saved = errno, rc = 0, sig, fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        fd = 2;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &mask);
    int had = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    while (len > 0) {
        struct pollfd p = {fd, POLLOUT, 0};
        int n = poll(&p, 1, atomic_load(&stalled) ? 0 : ERR_WAIT_MS);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            atomic_store(&stalled, 1);
        ssize_t put = -1;
        if (n == 1 && p.revents == POLLOUT &&
            (put = write(fd, buf, err_piece(fd, len))) < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            rc = -1;
            break;
        }
        atomic_store(&stalled, 0);
        buf += put;
        len -= (size_t)put;
    }
    if (fd != 2)
        close(fd);
    if (!had && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        sigwait(&pipe_only, &sig);
    if (!sigismember(&mask, SIGPIPE))
        pthread_sigmask(SIG_UNBLOCK, &pipe_only, NULL);
    errno = saved;
    return rc;
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
