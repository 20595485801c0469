/*
 * spinmalloc.c - a malloc of its own, made like tcmalloc's where it met the tracer: a lock of
 * its own that is not a pthread one (a spinlock), held while it calls pthread_once (tcmalloc's
 * sbrk hook does, in its first malloc). Preloaded, it is the program's malloc. Its lock
 * must not be asked for again by a thread that holds it: the tracer, called there, must not
 * allocate (it loaded the unwinder with dlopen, which does: every program hung). Where that
 * happens, it says so and ends the process with status 3 instead of spinning forever.
 * libspinmalloc_init.so, which it needs, allocates from its constructor, as libstdc++'s
 * does: that constructor runs before the tracer's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARENA (64u << 20)

static _Alignas(64) char arena[ARENA];
static size_t used;
static _Atomic int holder; /* kernel id of the thread holding the lock, 0 = free */
static pthread_once_t hooks = PTHREAD_ONCE_INIT;

static void hooks_init(void)
{
}

static void lock(void)
{
    int me = (int)syscall(SYS_gettid), free_ = 0;
    if (atomic_load(&holder) == me) {
        static const char m[] = "spinmalloc: asked for its lock again by the thread that holds it "
                                "(it would wait forever)\n";
        write(2, m, sizeof m - 1);
        _exit(3);
    }
    while (!atomic_compare_exchange_weak(&holder, &free_, me))
        free_ = 0;
}

static void unlock(void)
{
    atomic_store(&holder, 0);
}

/* Bump allocation; each block remembers its size just before it. */
static void *take(size_t size, size_t align)
{
    void *p = NULL;
    lock();
    pthread_once(&hooks, hooks_init);
    size_t at = (used + sizeof(size_t) + align - 1) & ~(align - 1);
    if (at + size <= ARENA) {
        ((size_t *)(void *)(arena + at))[-1] = size;
        p = arena + at;
        used = at + size;
    }
    unlock();
    return p;
}

/* What libspinmalloc_init.so's constructor allocated: a use of it, so that the link keeps the
 * library this one needs. */
extern void *spinmalloc_init_block;
void *spinmalloc_first_block(void) { return spinmalloc_init_block; }

void *malloc(size_t size) { return take(size, 16); }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t size) { return n && size > ARENA / n ? NULL : take(n * size, 16); }
void *memalign(size_t align, size_t size) { return take(size, align < 16 ? 16 : align); }
void *aligned_alloc(size_t align, size_t size) { return memalign(align, size); }
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p = memalign(align, size);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *realloc(void *p, size_t size)
{
    void *q = malloc(size);
    if (q && p) {
        size_t old = ((size_t *)p)[-1];
        memcpy(q, p, old < size ? old : size);
    }
    return q;
}
