/*
 * wrap_user.c - a program's own lock wrapper, lock_cache(), under a transaction API whose
 * begin functions return with the cache lock held. update() begins a transaction through three
 * such levels, then refreshes the cache, which takes the lock again: a self-deadlock. Recorded
 * from lock_cache, the earlier acquisition's four callers end at update(), which has moved on
 * to another call since, so the stack is partial; with LOCKTRACE_WRAPPERS=lock_cache they are
 * counted from its caller and reach main, and the stack is whole. The comments marked with @
 * name lines fidelity_test.py checks. No tail calls: each frame stays a frame at -O2.
 */
#include <pthread.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

struct cache {
    pthread_mutex_t mu;
    int entries;
};

static struct cache the_cache = {PTHREAD_MUTEX_INITIALIZER, 0};

NOINLINE void lock_cache(struct cache *c)
{
    pthread_mutex_lock(&c->mu); /* @lock_cache */
    NO_TAIL_CALL();
}

NOINLINE void open_txn(struct cache *c)
{
    lock_cache(c); /* @open_txn */
    NO_TAIL_CALL();
}

NOINLINE void begin(struct cache *c)
{
    open_txn(c); /* @begin */
    NO_TAIL_CALL();
}

NOINLINE void begin_update(struct cache *c)
{
    begin(c); /* @begin_update */
    NO_TAIL_CALL();
}

NOINLINE void refresh(struct cache *c)
{
    lock_cache(c); /* @refresh */
    c->entries++;
    pthread_mutex_unlock(&c->mu);
}

NOINLINE void update(struct cache *c)
{
    begin_update(c); /* @update:begin */
    refresh(c); /* @update:refresh */
    pthread_mutex_unlock(&c->mu);
}

int main(void)
{
    update(&the_cache); /* @main */
    printf("%d\n", the_cache.entries);
    return 0;
}
