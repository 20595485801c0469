/*
 * wrap_glib.c - locks taken through GLib: GRWLock through its lockers (g_rw_lock_*_locker_new,
 * inline functions of GLib's header that are frames of their own at -O0, around
 * g_rw_lock_*_lock in libglib) and GRecMutex through g_rec_mutex_lock. (GMutex is not a
 * pthread mutex on Linux: GLib implements it on futexes, so the tracer does not see it.) The
 * comments marked with @ name lines fidelity_test.py checks.
 *   upgrade: a read lock held, then the write lock of the same GRWLock (self-deadlock)
 *   order:   the registry and cache locks taken in both orders (lock-order inversion)
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

static GRWLock registry;
static GRecMutex cache;

NOINLINE void Write_registry(void)
{
    GRWLockWriterLocker *w = g_rw_lock_writer_locker_new(&registry); /* @Write_registry */
    g_rw_lock_writer_locker_free(w);
}

NOINLINE void Read_then_write(void)
{
    GRWLockReaderLocker *r = g_rw_lock_reader_locker_new(&registry); /* @Read_then_write:read */
    Write_registry(); /* @Read_then_write:write */
    g_rw_lock_reader_locker_free(r);
}

NOINLINE void Registry_then_cache(void)
{
    g_rw_lock_writer_lock(&registry); /* @Registry_then_cache:registry */
    g_rec_mutex_lock(&cache); /* @Registry_then_cache:cache */
    g_rec_mutex_unlock(&cache);
    g_rw_lock_writer_unlock(&registry);
}

NOINLINE void Cache_then_registry(void)
{
    g_rec_mutex_lock(&cache); /* @Cache_then_registry:cache */
    g_rw_lock_writer_lock(&registry); /* @Cache_then_registry:registry */
    g_rw_lock_writer_unlock(&registry);
    g_rec_mutex_unlock(&cache);
}

int main(int argc, char **argv)
{
    g_rw_lock_init(&registry);
    g_rec_mutex_init(&cache);
    if (argc > 1 && strcmp(argv[1], "upgrade") == 0) {
        Read_then_write(); /* @main:upgrade */
    } else {
        Registry_then_cache(); /* @main:rc */
        Cache_then_registry(); /* @main:cr */
    }
    NO_TAIL_CALL();
    puts("done");
    return 0;
}
