/*
 * unwind_callout.c - a program that unwinds itself with libunwind and defines functions that
 * libunwind calls while it holds its cache lock: dl_iterate_phdr (at each look-up the cache
 * misses) and mmap (the cache remade after a flush, at a size of the program's choosing). The
 * tracer's libunwind is this one, so a lock call made there must not make the tracer unwind
 * too, which waited for that lock forever. The unwinds are made
 * under a mutex (an order edge into libunwind's lock as well). One thread: libunwind 1.6
 * reads its cache after letting go of the cache lock, and a cache another thread remade
 * meanwhile is unmapped (a crash without the tracer where two threads unwind and flush, one
 * run in a few; the tracer's own unwinds in another thread are such a thread: docs/limits.md).
 *   unwind_callout phdr     dl_iterate_phdr takes a mutex; prints "frames found: yes",
 *                           "walks counted: yes"
 *   unwind_callout mmap     mmap takes a mutex; prints "frames found: yes", "mmaps counted: yes"
 *   unwind_callout report   mmap also unlocks a mutex on its stack that it does not hold: a
 *                           bad-unlock report, made inside libunwind's call (its repeats
 *                           counted); the same output, and "misused: yes"
 */
#undef _FILE_OFFSET_BITS /* meson's 64 would name it mmap64: libunwind calls mmap */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "own_unwind.h"

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t walks_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t unwinding = PTHREAD_MUTEX_INITIALIZER;
static volatile int counting, walking, reporting;
static long maps, walks;
static _Thread_local int stepping; /* in this program's own unwind (the tracer's unwinds call
                                      libunwind, and so this mmap, too) */
static int reported;
static int found;

static void __attribute__((noinline)) misuse(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m, &a);
    pthread_mutex_unlock(&m); /* not held: EPERM, and the tracer's report */
    pthread_mutex_destroy(&m);
}

/* Whether code address ra is libunwind's. */
static int in_libunwind(void *ra)
{
    Dl_info info;
    return dladdr(ra, &info) && info.dli_fname && strstr(info.dli_fname, "libunwind");
}

/* Every mmap in the process that goes through the symbol, libunwind's among them (counted). */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (counting) {
        int libunwinds = in_libunwind(__builtin_return_address(0));
        pthread_mutex_lock(&maps_lock);
        maps += libunwinds;
        int misusing = reporting && libunwinds && stepping; /* each time: the tracer's own
                                                              unwinds come here too, silently */
        reported += misusing;
        pthread_mutex_unlock(&maps_lock);
        if (misusing) /* not under maps_lock: the report's own mmaps come here too */
            misuse();
    }
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

typedef int phdr_callback(struct dl_phdr_info *, size_t, void *);

/* Every walk of the loaded objects that goes through the symbol, libunwind's (counted) among
 * them. */
int dl_iterate_phdr(phdr_callback *callback, void *arg)
{
    static int (*next)(phdr_callback *, void *);
    if (!next)
        next = (int (*)(phdr_callback *, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (walking) {
        int libunwinds = in_libunwind(__builtin_return_address(0));
        pthread_mutex_lock(&walks_lock);
        walks += libunwinds;
        pthread_mutex_unlock(&walks_lock);
    }
    return next(callback, arg);
}

static int __attribute__((noinline)) unwind_at(int depth)
{
    if (depth > 0)
        return unwind_at(depth - 1) + 1;
    stepping = 1;
    int n = own_unwind_steps();
    stepping = 0;
    return n;
}

static void unwinder(void)
{
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&unwinding);
        unw_flush_cache(unw_local_addr_space, 0, 0); /* the next unwind remakes the cache */
        found += unwind_at(i) > i;
        pthread_mutex_unlock(&unwinding);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "phdr") && strcmp(argv[1], "mmap") &&
                      strcmp(argv[1], "report")))
        return fprintf(stderr, "usage: unwind_callout phdr|mmap|report\n"), 2;
    if (!strcmp(argv[1], "phdr")) {
        walking = 1;
        unwinder();
        printf("frames found: %s\nwalks counted: %s\n", found == 10 ? "yes" : "no",
               walks > 0 ? "yes" : "no");
        return 0;
    }
    reporting = !strcmp(argv[1], "report");
    /* not libunwind's default size, so that a flushed cache is remade with mmap, under its lock */
    unwind_at(0);
    unw_set_cache_size(unw_local_addr_space, 1024, 0);
    counting = 1;
    unwinder();
    printf("frames found: %s\nmmaps counted: %s\n", found == 10 ? "yes" : "no",
           maps > 0 ? "yes" : "no");
    if (reporting)
        printf("misused: %s\n", reported ? "yes" : "no");
    return 0;
}
