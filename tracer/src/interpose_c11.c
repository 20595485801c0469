/*
 * interpose_c11.c - the C11 <threads.h> entry points: mtx_*, cnd_*, thrd_create/thrd_join.
 *
 * glibc implements them on its internal pthread functions (mtx_lock calls
 * __pthread_mutex_lock, not the exported pthread_mutex_lock), so interposing pthread alone
 * never sees them. A mtx_t is a pthread_mutex_t and a cnd_t a pthread_cond_t there, so the
 * lock requests and condition waits take interpose.c's pthread paths, with the C11 api in the
 * event so reports say mtx_t, and map errno results to thrd_* codes the way glibc does.
 * The same goes for unlocks; init, destroy and the thread functions call the real C11
 * function itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <threads.h>

#include "interpose.h"
#include "lt_internal.h"
#include "platform.h"

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t is a pthread mutex (glibc)");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t is a pthread condvar (glibc)");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is a pthread_t (glibc)");

#define LT_REALS_C11(X)                                                                    \
    X(mtx_init) X(mtx_destroy) X(cnd_destroy) X(thrd_create) X(thrd_join)

static struct {
#define X(name) __typeof__(&name) name;
    LT_REALS_C11(X)
#undef X
} real;

void lt_interpose_c11_resolve(void)
{
#define X(name) real.name = (__typeof__(&name))lt_platform_real(#name, NULL);
    LT_REALS_C11(X)
#undef X
}

#define CALLER (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa()

/* An errno result as the thrd_* code glibc's C11 functions return for it. */
static int thrd_result(int rc)
{
    switch (rc) {
    case 0: return thrd_success;
    case EBUSY: return thrd_busy;
    case ETIMEDOUT: return thrd_timedout;
    case ENOMEM: return thrd_nomem;
    default: return thrd_error;
    }
}

#define C11_CALL(lock, mode, wait, abstime)                                                   \
    (&(lt_call){{(const void *)(lock), LT_MUTEX, (mode), (wait), CALLER, NULL, NULL, NULL, 0, \
                 LT_API_C11, 0},                                                              \
                0, 0, (abstime)})

/* ------------------------------------------------------------------------------------------
 * Mutexes.
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT int mtx_init(mtx_t *m, int type)
{
    if (!lt_interpose_ready())
        return thrd_success;
    int rc = real.mtx_init(m, type);
    if (rc == thrd_success)
        lt_interpose_hook(lt_on_init, m, LT_MUTEX, LT_API_C11, CALLER);
    return rc;
}

LT_EXPORT void mtx_destroy(mtx_t *m)
{
    if (!lt_interpose_ready())
        return;
    lt_interpose_hook(lt_on_destroy, m, LT_MUTEX, LT_API_C11, CALLER);
    real.mtx_destroy(m);
}

LT_EXPORT int mtx_lock(mtx_t *m)
{
    return thrd_result(lt_interpose_acquire(C11_CALL(m, LT_MODE_WRITE, LT_WAIT_BLOCK, NULL)));
}

LT_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict t)
{
    return thrd_result(lt_interpose_acquire(C11_CALL(m, LT_MODE_WRITE, LT_WAIT_TIMED, t)));
}

LT_EXPORT int mtx_trylock(mtx_t *m)
{
    return thrd_result(lt_interpose_acquire(C11_CALL(m, LT_MODE_WRITE, LT_WAIT_TRY, NULL)));
}

LT_EXPORT int mtx_unlock(mtx_t *m)
{
    return thrd_result(lt_interpose_unlock(m, LT_MUTEX, LT_API_C11, CALLER));
}

/* ------------------------------------------------------------------------------------------
 * Condition variables. Signals go through pthread_cond_signal/broadcast (interpose.c),
 * which leave the wait-for check its hint and call the same code glibc's cnd_* call.
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT int cnd_wait(cnd_t *c, mtx_t *m)
{
    return thrd_result(
        lt_interpose_cond_wait(C11_CALL(m, LT_MODE_WRITE, LT_WAIT_BLOCK, NULL), (void *)c));
}

LT_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                            const struct timespec *restrict t)
{
    return thrd_result(
        lt_interpose_cond_wait(C11_CALL(m, LT_MODE_WRITE, LT_WAIT_TIMED, t), (void *)c));
}

LT_EXPORT int cnd_signal(cnd_t *c)
{
    return thrd_result(pthread_cond_signal((pthread_cond_t *)c));
}

LT_EXPORT int cnd_broadcast(cnd_t *c)
{
    return thrd_result(pthread_cond_broadcast((pthread_cond_t *)c));
}

/* cnd_destroy returns nothing: a refused destroy just does not happen. */
LT_EXPORT void cnd_destroy(cnd_t *c)
{
    if (lt_interpose_ready() && !lt_interpose_cond_destroy(c, LT_API_C11, CALLER))
        real.cnd_destroy(c);
}

/* ------------------------------------------------------------------------------------------
 * Threads: a C11 thread's function returns int, which glibc keeps as its result.
 * ---------------------------------------------------------------------------------------- */
static int c11_thread_start(void *p)
{
    lt_start s = lt_interpose_started(p);
    return ((thrd_start_t)s.fn)(s.arg);
}

LT_EXPORT int thrd_create(thrd_t *th, thrd_start_t fn, void *arg)
{
    if (!lt_interpose_ready())
        return thrd_nomem;
    lt_start *s = lt_interpose_start_new((void *)fn, arg);
    if (!s)
        return real.thrd_create(th, fn, arg);
    int rc = real.thrd_create(th, c11_thread_start, s);
    if (rc != thrd_success)
        free(s);
    return rc;
}

static int real_thrd_join(pthread_t th, void *res)
{
    return real.thrd_join(th, res);
}

/* real_thrd_join gives thrd_* codes; EDEADLK comes from the wait-for check. */
LT_EXPORT int thrd_join(thrd_t th, int *res)
{
    if (!lt_interpose_ready())
        return thrd_error;
    int rc = lt_interpose_join(th, real_thrd_join, res, LT_API_C11,
                               (uintptr_t)__builtin_return_address(0),
                               (uintptr_t)__builtin_dwarf_cfa());
    return rc == EDEADLK ? thrd_error : rc;
}
