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
 *   macOS: link with -Wl,-U,_locktrace_annotate_lock_impl -Wl,-U,_locktrace_active_impl.
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

/* Nonzero when liblocktrace is loaded into this process and watching it. */
static inline int locktrace_active(void)
{
    return locktrace_active_impl ? locktrace_active_impl() : 0;
}

#ifdef __cplusplus
}
#endif

#endif
