/*
 * locktrace.h - optional annotations for programs and libraries watched by locktrace.
 *
 * A program never needs this header to be traced: liblocktrace sees every pthread lock call.
 * Annotations add what the tracer cannot guess: which object a lock guards. A report then
 * reads "guarded object 0x55d0c2a0: tensorlib storage f32[2,2] cpu 16 B" instead of a bare
 * lock address.
 *
 * Nothing here needs linking against liblocktrace. The entry points below are weak references:
 * when the tracer is preloaded (LD_PRELOAD, DYLD_INSERT_LIBRARIES) or linked in, they resolve
 * to it; otherwise they are null and every call is one predictable branch. This works from a
 * shared library loaded normally (libtensorlib.so) as well as from an executable.
 *   Linux: nothing to do (weak undefined symbols are allowed, even with -z defs).
 *   macOS: link with -Wl,-U,_locktrace_annotate_lock_impl -Wl,-U,_locktrace_active_impl
 *   (and -Wl,-U,_<name>_impl for each locktrace_mutex_* or locktrace_annotate_* function you
 *   call).
 */
#ifndef LOCKTRACE_H
#define LOCKTRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes a one-line description of `object` (no newline, NUL-terminated, at most size bytes)
 * into buf. The tracer calls it only while formatting a report, on the reporting thread, at
 * a moment when the program may hold any of its locks: it must not take locks, allocate,
 * block or call back into the tracer. snprintf into buf is fine.
 */
typedef void (*locktrace_describe_fn)(const void *object, char *buf, size_t size);

/* Implemented by liblocktrace. Call the inline wrappers below, not these. */
void locktrace_annotate_lock_impl(const void *lock, const void *object,
                                  locktrace_describe_fn describe) __attribute__((weak));
int locktrace_active_impl(void) __attribute__((weak));

/*
 * Records that `lock` (any pthread lock: rwlock, mutex, spinlock) guards `object`, described
 * by `describe` at report time. Call it after initialising the lock. The annotation lasts
 * until the lock is destroyed or re-initialised; a second call replaces it. object and
 * describe may be NULL (describe NULL: reports print only the object's address).
 */
static inline void locktrace_annotate_lock(const void *lock, const void *object,
                                           locktrace_describe_fn describe)
{
    if (locktrace_annotate_lock_impl)
        locktrace_annotate_lock_impl(lock, object, describe);
}

/*
 * Custom locks: a lock that never calls pthread (a futex-based mutex, a spinlock, a lock
 * exported from another language) gets the same checks as a pthread one when its own code
 * says what it does, in the spirit of ThreadSanitizer's __tsan_mutex_* and Helgrind's client
 * requests. `lock` is the lock's address, its identity; the tracer never reads or writes it.
 *
 *   create      after initialising it: flags LOCKTRACE_MUTEX_RW (a reader-writer lock: read
 *               and write modes) and/or LOCKTRACE_MUTEX_RECURSIVE (its owner may lock again).
 *               Optional: a lock never created is a non-recursive mutex.
 *   destroy     before its memory goes (reported if it is held).
 *   pre_lock    before every lock attempt. flags: LOCKTRACE_MUTEX_READ (read mode of an rw
 *               lock), LOCKTRACE_MUTEX_TRY (a try-lock: never a deadlock), LOCKTRACE_MUTEX_TIMED.
 *               Returns 0 to go on, or EDEADLK (LOCKTRACE_ACTION=edeadlk) when the request
 *               could never be granted: then do not lock, and call no post_lock.
 *   block       optional, in the lock's slow path just before it sleeps waiting for another
 *               thread: makes deadlocks between threads visible the moment they form. Returns
 *               0, or EDEADLK when this wait closes a deadlock (LOCKTRACE_ACTION=edeadlk).
 *   post_lock   after the attempt, with the same flags; acquired: nonzero when the lock was
 *               taken, 0 when a try or timed attempt failed (or block's EDEADLK was obeyed).
 *   pre_unlock  before releasing it (flags: LOCKTRACE_MUTEX_READ for a read unlock).
 *
 * Reports name such a lock "custom mutex" / "custom rwlock"; locktrace_annotate_lock works
 * on it as on any lock. See the README for a futex mutex written with these calls.
 */
#define LOCKTRACE_MUTEX_RW 0x1u
#define LOCKTRACE_MUTEX_RECURSIVE 0x2u
#define LOCKTRACE_MUTEX_READ 0x4u
#define LOCKTRACE_MUTEX_TRY 0x8u
#define LOCKTRACE_MUTEX_TIMED 0x10u

void locktrace_mutex_create_impl(const void *lock, unsigned flags) __attribute__((weak));
void locktrace_mutex_destroy_impl(const void *lock) __attribute__((weak));
int locktrace_mutex_pre_lock_impl(const void *lock, unsigned flags) __attribute__((weak));
int locktrace_mutex_block_impl(const void *lock, unsigned flags) __attribute__((weak));
void locktrace_mutex_post_lock_impl(const void *lock, unsigned flags, int acquired)
    __attribute__((weak));
void locktrace_mutex_pre_unlock_impl(const void *lock, unsigned flags) __attribute__((weak));

static inline void locktrace_mutex_create(const void *lock, unsigned flags)
{
    if (locktrace_mutex_create_impl)
        locktrace_mutex_create_impl(lock, flags);
}

static inline void locktrace_mutex_destroy(const void *lock)
{
    if (locktrace_mutex_destroy_impl)
        locktrace_mutex_destroy_impl(lock);
}

static inline int locktrace_mutex_pre_lock(const void *lock, unsigned flags)
{
    return locktrace_mutex_pre_lock_impl ? locktrace_mutex_pre_lock_impl(lock, flags) : 0;
}

static inline int locktrace_mutex_block(const void *lock, unsigned flags)
{
    return locktrace_mutex_block_impl ? locktrace_mutex_block_impl(lock, flags) : 0;
}

static inline void locktrace_mutex_post_lock(const void *lock, unsigned flags, int acquired)
{
    if (locktrace_mutex_post_lock_impl)
        locktrace_mutex_post_lock_impl(lock, flags, acquired);
}

static inline void locktrace_mutex_pre_unlock(const void *lock, unsigned flags)
{
    if (locktrace_mutex_pre_unlock_impl)
        locktrace_mutex_pre_unlock_impl(lock, flags);
}

/*
 * Lock classes (LOCKTRACE_CLASSES=annotated or site; off by default). Locks of one class are
 * expected to be taken in one order relative to other classes, so one run can predict a
 * deadlock between locks that never met: if a lock of class A was taken while one of class B
 * was held, and elsewhere a B while an A was held, two threads doing those on the same two
 * objects deadlock. Reports name such a prediction "lock-order-inversion: predicted".
 *
 *   annotate_class    names `lock`'s class (the text is copied; 63 bytes of it count). Call
 *                     it after initialising the lock; it lasts until the lock is destroyed or
 *                     re-initialised. Unnamed locks have no class under
 *                     LOCKTRACE_CLASSES=annotated, and their first-seen call site's under
 *                     LOCKTRACE_CLASSES=site.
 *   annotate_nesting  declares how locks of `lock`'s class nest inside each other:
 *                     LOCKTRACE_NEST_ADDRESS_ASC (the lower address first) or
 *                     LOCKTRACE_NEST_ADDRESS_DESC. A nesting against it is reported the first
 *                     time; without a declared order only nestings in both orders are.
 */
#define LOCKTRACE_NEST_ADDRESS_ASC 1u
#define LOCKTRACE_NEST_ADDRESS_DESC 2u

void locktrace_annotate_class_impl(const void *lock, const char *name) __attribute__((weak));
void locktrace_annotate_nesting_impl(const void *lock, unsigned order) __attribute__((weak));

static inline void locktrace_annotate_class(const void *lock, const char *name)
{
    if (locktrace_annotate_class_impl)
        locktrace_annotate_class_impl(lock, name);
}

static inline void locktrace_annotate_nesting(const void *lock, unsigned order)
{
    if (locktrace_annotate_nesting_impl)
        locktrace_annotate_nesting_impl(lock, order);
}

/*
 * Memory the program recycles itself holds new locks from here on: an object pool that builds
 * std::mutex objects in it again with placement new, a slab cleared with memset or given
 * PTHREAD_MUTEX_INITIALIZER again. No pthread call tells the tracer of that, and without this
 * call the locks there keep the orders of the ones before them (a pool object nested the other
 * way round than the last one at its address is a false lock-order-inversion). The tracer
 * forgets every lock in [addr, addr + size) as free() does; a lock still held there is a
 * free-held report. Call it when the memory is handed out again.
 */
void locktrace_memory_recycled_impl(const void *addr, size_t size) __attribute__((weak));

static inline void locktrace_memory_recycled(const void *addr, size_t size)
{
    if (locktrace_memory_recycled_impl)
        locktrace_memory_recycled_impl(addr, size);
}

/* Nonzero when liblocktrace is loaded into this process and watching it. */
static inline int locktrace_active(void)
{
    return locktrace_active_impl ? locktrace_active_impl() : 0;
}

#ifdef __cplusplus
}
#endif

#endif
