/*
 * lockcount.c - server_bench.py --lock-calls: a preload that counts a program's pthread lock
 * calls by kind, natively, so that a server's CPU per request under the tracer can be read
 * against how many lock operations a request makes (the tracer's cost is per operation).
 *
 * The counts live in the file LOCKCOUNT_FILE names, mapped shared, so that the script reads
 * them at the start and the end of its load, whatever the process does meanwhile (memcached
 * gives up root after the constructor has opened the file). An acquisition is `nested` when
 * its thread holds another lock (its own count of grants minus unlocks; a condition wait
 * leaves it unchanged): that is what makes the tracer's order-graph check run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The counters, in the file's order (server_bench.py: LOCK_CALLS). */
enum {
    MUTEX_INIT, MUTEX_DESTROY, MUTEX_LOCK, MUTEX_TRYLOCK, MUTEX_TRYLOCK_BUSY, MUTEX_UNLOCK,
    RWLOCK_RDLOCK, RWLOCK_WRLOCK, RWLOCK_TRY, RWLOCK_UNLOCK,
    SPIN_LOCK, SPIN_UNLOCK, COND_WAIT, COND_SIGNAL,
    NESTED, NCOUNTS
};

static _Atomic unsigned long *counts;
static _Thread_local long held;

static int (*next_mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *),
    (*next_mutex_destroy)(pthread_mutex_t *), (*next_mutex_lock)(pthread_mutex_t *),
    (*next_mutex_trylock)(pthread_mutex_t *), (*next_mutex_unlock)(pthread_mutex_t *);
static int (*next_rwlock_rdlock)(pthread_rwlock_t *), (*next_rwlock_wrlock)(pthread_rwlock_t *),
    (*next_rwlock_tryrdlock)(pthread_rwlock_t *), (*next_rwlock_trywrlock)(pthread_rwlock_t *),
    (*next_rwlock_unlock)(pthread_rwlock_t *);
#ifndef __APPLE__ /* (macOS has no pthread spinlocks; this preload is for Linux's servers) */
static int (*next_spin_lock)(pthread_spinlock_t *), (*next_spin_unlock)(pthread_spinlock_t *);
#endif
static int (*next_cond_wait)(pthread_cond_t *, pthread_mutex_t *),
    (*next_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *),
    (*next_cond_signal)(pthread_cond_t *), (*next_cond_broadcast)(pthread_cond_t *);

#define RESOLVE(name) next_##name = (__typeof__(next_##name))dlsym(RTLD_NEXT, "pthread_" #name)

/* From setup, or from a call that comes first: another library's constructor may lock. */
static void resolve(void)
{
    RESOLVE(mutex_init);
    RESOLVE(mutex_destroy);
    RESOLVE(mutex_lock);
    RESOLVE(mutex_trylock);
    RESOLVE(mutex_unlock);
    RESOLVE(rwlock_rdlock);
    RESOLVE(rwlock_wrlock);
    RESOLVE(rwlock_tryrdlock);
    RESOLVE(rwlock_trywrlock);
    RESOLVE(rwlock_unlock);
#ifndef __APPLE__
    RESOLVE(spin_lock);
    RESOLVE(spin_unlock);
#endif
    RESOLVE(cond_wait);
    RESOLVE(cond_timedwait);
    RESOLVE(cond_signal);
    RESOLVE(cond_broadcast);
}

/* The next definition of pthread_NAME, resolved on first use. */
#define NEXT(name) (next_##name ? next_##name : (resolve(), next_##name))

__attribute__((constructor)) static void setup(void)
{
    resolve();
    const char *path = getenv("LOCKCOUNT_FILE");
    int fd = path ? open(path, O_RDWR | O_CREAT, 0600) : -1;
    size_t size = NCOUNTS * sizeof *counts;
    if (fd < 0)
        return;
    if (ftruncate(fd, (off_t)size) == 0) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            counts = p;
    }
    close(fd);
}

static void count(int what)
{
    if (counts)
        atomic_fetch_add_explicit(&counts[what], 1, memory_order_relaxed);
}

/* A grant: counted, and the thread holds one lock more (a call before setup: not counted). */
static int granted(int rc, int what)
{
    count(what);
    if (rc == 0) {
        if (held > 0)
            count(NESTED);
        held++;
    }
    return rc;
}

static int released(int rc, int what)
{
    count(what);
    if (rc == 0 && held > 0)
        held--;
    return rc;
}

/* rsyslog makes, takes and frees a mutex per message: the tracer's init and destroy work. */
int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    count(MUTEX_INIT);
    return NEXT(mutex_init)(m, a);
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
    count(MUTEX_DESTROY);
    return NEXT(mutex_destroy)(m);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
    return granted(NEXT(mutex_lock)(m), MUTEX_LOCK);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
    int rc = NEXT(mutex_trylock)(m);
    return granted(rc, rc == 0 ? MUTEX_TRYLOCK : MUTEX_TRYLOCK_BUSY);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    return released(NEXT(mutex_unlock)(m), MUTEX_UNLOCK);
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return granted(NEXT(rwlock_rdlock)(l), RWLOCK_RDLOCK);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return granted(NEXT(rwlock_wrlock)(l), RWLOCK_WRLOCK);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return granted(NEXT(rwlock_tryrdlock)(l), RWLOCK_TRY);
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return granted(NEXT(rwlock_trywrlock)(l), RWLOCK_TRY);
}

int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    return released(NEXT(rwlock_unlock)(l), RWLOCK_UNLOCK);
}

#ifndef __APPLE__
int pthread_spin_lock(pthread_spinlock_t *s)
{
    return granted(NEXT(spin_lock)(s), SPIN_LOCK);
}

int pthread_spin_unlock(pthread_spinlock_t *s)
{
    return released(NEXT(spin_unlock)(s), SPIN_UNLOCK);
}
#endif

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    count(COND_WAIT);
    return NEXT(cond_wait)(c, m);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    count(COND_WAIT);
    return NEXT(cond_timedwait)(c, m, t);
}

int pthread_cond_signal(pthread_cond_t *c)
{
    count(COND_SIGNAL);
    return NEXT(cond_signal)(c);
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
    count(COND_SIGNAL);
    return NEXT(cond_broadcast)(c);
}
