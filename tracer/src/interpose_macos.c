/*
 * interpose_macos.c - how liblocktrace.dylib takes over the pthread functions on macOS
 * (DYLD_INSERT_LIBRARIES): the __DATA,__interpose table of (replacement, original) pairs that
 * dyld applies to every other image, and the lookup of the originals for the tracer.
 *
 * dyld leaves the interposing image itself alone, so in this file `pthread_mutex_lock` is
 * still libsystem's function: the table's second column and lt_platform_real() (platform.h,
 * defined here rather than in platform_macos.c because the originals are this table's) both
 * use that. The replacements are interpose.c's entry points under the names
 * interpose_macos.h gives them. This file is compiled without that header.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "platform.h"

/* Every function macOS has that interpose.c replaces. */
#define LT_MACOS_INTERPOSED(X)                                                              \
    X(pthread_rwlock_init) X(pthread_rwlock_destroy) X(pthread_rwlock_rdlock)                \
    X(pthread_rwlock_wrlock) X(pthread_rwlock_tryrdlock) X(pthread_rwlock_trywrlock)         \
    X(pthread_rwlock_unlock) X(pthread_mutex_init) X(pthread_mutex_destroy)                  \
    X(pthread_mutex_lock) X(pthread_mutex_trylock) X(pthread_mutex_unlock)                   \
    X(pthread_cond_wait) X(pthread_cond_timedwait) X(pthread_cond_signal)                    \
    X(pthread_cond_broadcast) X(pthread_cond_destroy) X(pthread_create) X(pthread_join)

/* The replacements, as interpose.c defines them. */
#define DECLARE(name) extern __typeof__(name) lt_macos_##name;
LT_MACOS_INTERPOSED(DECLARE)
#undef DECLARE

typedef struct interpose_pair {
    const void *replacement;
    const void *original;
} interpose_pair;

#define PAIR(name) {(const void *)lt_macos_##name, (const void *)name},
__attribute__((used, section("__DATA,__interpose"))) static const interpose_pair pairs[] = {
    LT_MACOS_INTERPOSED(PAIR)
};
#undef PAIR

typedef struct real_fn {
    const char *name;
    void *fn;
} real_fn;

#define REAL(name) {#name, (void *)name},
static const real_fn reals[] = {LT_MACOS_INTERPOSED(REAL)};
#undef REAL

/* Symbol versions are a glibc notion; macOS has one definition per name. NULL for a name the
 * table does not replace (the functions macOS lacks). */
void *lt_platform_real(const char *name, const char *version)
{
    (void)version;
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        if (strcmp(reals[i].name, name) == 0)
            return reals[i].fn;
    return NULL;
}
