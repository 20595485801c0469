/*
 * interpose_guard.c - C++ function-local statics (the Itanium C++ ABI's __cxa_guard_acquire,
 * __cxa_guard_release and __cxa_guard_abort), checked as pthread_once is (interpose_once.c):
 * a static's guard is a lock of kind LT_ONCE (api LT_API_CXX) that the thread running the
 * static's initialiser holds from the acquire that returns 1 to the release, or to the abort
 * when the initialiser throws. A thread that asks for a guard while another thread's
 * initialiser holds it waits for that thread, so an initialiser that asks for a lock the
 * waiting thread holds closes a wait-for cycle, found as any other; an initialiser that
 * reaches its own static again is a self-deadlock reported before the runtime's answer
 * (libstdc++ throws recursive_init_error, which ends in std::terminate; libc++ aborts).
 *
 * The compiler calls acquire only while the guard's first byte says "not done", so only the
 * first uses of each static come here. Its second byte is nonzero while some thread runs the
 * initialiser (libstdc++'s pending bit, libc++'s init byte): only then does the call wait,
 * and only then is a wait published, so a program's thousands of statics do not each pay for
 * a wait record. A thread that starts the initialiser between that read and the runtime's
 * own test makes the call wait unpublished: a cycle through it is missed, none is made up.
 *
 * The runtime's functions are found with RTLD_NEXT, else in libstdc++ or libc++abi loaded
 * locally (a C program such as Python that dlopens a C++ module with RTLD_LOCAL: the module's
 * calls bind to ours, and the runtime it loaded is not in the global scope), else a guard is
 * run here by the same rules under one tracer mutex.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

typedef int (*acquire_fn)(int64_t *);
typedef void (*end_fn)(int64_t *);

static struct {
    _Atomic(acquire_fn) acquire;
    _Atomic(end_fn) release, abort;
} rt;

/* The fallback runtime: one mutex and condition variable for every guard it runs, taken
 * through libc's own functions (the tracer's locks are never the interposed ones). */
static struct {
    int (*lock)(pthread_mutex_t *), (*unlock)(pthread_mutex_t *);
    int (*wait)(pthread_cond_t *, pthread_mutex_t *), (*broadcast)(pthread_cond_t *);
    pthread_mutex_t mu;
    pthread_cond_t cv;
} own = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static inline uint8_t *byte_of(int64_t *g, int i)
{
    return (uint8_t *)(void *)g + i;
}

static int own_acquire(int64_t *g)
{
    own.lock(&own.mu);
    while (__atomic_load_n(byte_of(g, 1), __ATOMIC_RELAXED))
        own.wait(&own.cv, &own.mu);
    int run = !__atomic_load_n(byte_of(g, 0), __ATOMIC_RELAXED);
    if (run)
        __atomic_store_n(byte_of(g, 1), 1, __ATOMIC_RELAXED);
    own.unlock(&own.mu);
    return run;
}

static void own_end(int64_t *g, int done)
{
    own.lock(&own.mu);
    if (done)
        __atomic_store_n(byte_of(g, 0), 1, __ATOMIC_RELEASE);
    __atomic_store_n(byte_of(g, 1), 0, __ATOMIC_RELAXED);
    own.broadcast(&own.cv);
    own.unlock(&own.mu);
}

static void own_release(int64_t *g)
{
    own_end(g, 1);
}

static void own_abort(int64_t *g)
{
    own_end(g, 0);
}

static void *runtime_sym(const char *name)
{
    static const char *const runtimes[] = {"libstdc++.so.6", "libc++abi.so.1"};
    void *fn = lt_platform_real(name, NULL);
    for (size_t i = 0; !fn && i < LT_ARRAY_LEN(runtimes); i++) {
        void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            fn = dlsym(h, name);
            dlclose(h); /* NOLOAD took a reference of its own */
        }
    }
    return fn;
}

/* Found at the first call, not with the pthread functions: a C program may load its C++
 * runtime long after the tracer started. All three come from one runtime. */
static void resolve(void)
{
    acquire_fn a = (acquire_fn)runtime_sym("__cxa_guard_acquire");
    end_fn r = (end_fn)runtime_sym("__cxa_guard_release");
    end_fn x = (end_fn)runtime_sym("__cxa_guard_abort");
    if (!a || !r || !x) {
        own.lock = (int (*)(pthread_mutex_t *))lt_platform_real("pthread_mutex_lock", NULL);
        own.unlock = (int (*)(pthread_mutex_t *))lt_platform_real("pthread_mutex_unlock", NULL);
        own.wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))lt_platform_real(
            "pthread_cond_wait", "GLIBC_2.3.2");
        own.broadcast = (int (*)(pthread_cond_t *))lt_platform_real("pthread_cond_broadcast",
                                                                      "GLIBC_2.3.2");
        a = own_acquire;
        r = own_release;
        x = own_abort;
    }
    atomic_store(&rt.release, r);
    atomic_store(&rt.abort, x);
    atomic_store(&rt.acquire, a);
}

static acquire_fn real_acquire(void)
{
    acquire_fn a = atomic_load_explicit(&rt.acquire, memory_order_acquire);
    if (lt_unlikely(!a)) {
        int busy = lt_tls.busy;
        lt_busy_set(&lt_tls, LT_BUSY_IN); /* the loader's calls are not the program's */
        resolve();
        lt_busy_restore(&lt_tls, busy);
        a = atomic_load(&rt.acquire);
    }
    return a;
}

LT_EXPORT int __cxa_guard_acquire(int64_t *g)
{
    acquire_fn acquire = real_acquire();
    if (__atomic_load_n(byte_of(g, 0), __ATOMIC_ACQUIRE) || !lt_interpose_ready() ||
        !lt_enter(&lt_tls))
        return acquire(g);
    lt_event ev = {g, LT_ONCE, LT_MODE_WRITE, LT_WAIT_BLOCK,
                   (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(),
                   NULL, NULL, NULL, 0, LT_API_CXX, 0};
    ev.self = lt_self();
    if (!ev.self) {
        lt_leave(&lt_tls);
        return acquire(g);
    }
    int rc = lt_before_lock(&ev);
    int recursion = ev.held != NULL; /* this thread runs the initialiser: reported (or
                                        suppressed) */
    /* the runtime's answer to a recursion is an exception, which must not find a wait
     * published */
    int waiting = rc == 0 && ev.lock && !ev.held && __atomic_load_n(byte_of(g, 1),
                                                                       __ATOMIC_RELAXED);
    if (waiting && lt_wait_begin(&ev) != 0) {
        /* a cycle, reported: the call cannot fail, so it waits as without the tracer */
        lt_wait_end(&ev);
        waiting = 0;
    }
    lt_leave(&lt_tls);
    /* The fallback runtime has no recursive_init_error to throw, and its wait would wait for
     * this very thread: it answers as libc++abi does. */
    if (recursion && acquire == own_acquire)
        abort();
    int run = acquire(g);
    lt_enter(&lt_tls);
    if (waiting)
        lt_wait_end(&ev);
    if (run && rc == 0)
        lt_after_lock(&ev, 0);
    lt_leave(&lt_tls);
    return run;
}

/* The guard leaves the held set once the runtime has let the waiting threads go, as a mutex
 * does after libc's unlock; a guard taken before the tracer was ready is not held by it. */
static void guard_end(int64_t *g, end_fn end, uintptr_t ra, uintptr_t cfa)
{
    end(g);
    if (!lt_interpose_ready() || !lt_enter(&lt_tls))
        return;
    lt_event ev = {g, LT_ONCE, LT_MODE_WRITE, LT_WAIT_BLOCK, ra, cfa, NULL, NULL, NULL, 0,
                   LT_API_CXX, 0};
    ev.self = lt_tls.self;
    if (ev.self && lt_held_find(ev.self, g))
        lt_after_unlock(&ev, 0);
    lt_leave(&lt_tls);
}

LT_EXPORT void __cxa_guard_release(int64_t *g)
{
    real_acquire(); /* resolves the three */
    guard_end(g, atomic_load(&rt.release), (uintptr_t)__builtin_return_address(0),
              (uintptr_t)__builtin_dwarf_cfa());
}

LT_EXPORT void __cxa_guard_abort(int64_t *g)
{
    real_acquire();
    guard_end(g, atomic_load(&rt.abort), (uintptr_t)__builtin_return_address(0),
              (uintptr_t)__builtin_dwarf_cfa());
}
