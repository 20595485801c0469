/*
 * thread.c - per-thread state and the registry of live threads.
 *
 * A thread keeps only lt_tls in TLS (see lt_internal.h for why). It registers on its first
 * event (or when our pthread_create trampoline starts it): its lt_thread comes from a pool of
 * mapped memory, it gets a sequence number T<n>, joins the registry, and arms a pthread key
 * whose destructor is our view of the thread's exit. That destructor gives the lt_thread back
 * to the pool; the thread stays `busy` for good, so late calls from other destructors pass
 * straight through. Pooled lt_threads are never unmapped, so a reader racing with an exit
 * (the thread dump) reads stale data, never unmapped memory.
 *
 * The held set is an array in acquisition order: inline in the lt_thread for the first few
 * entries, then mapped memory that doubles, never capped.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

__thread lt_tls_block lt_tls LT_TLS;

static lt_spin registry_lock = LT_SPIN_INIT(LT_RANK_REGISTRY); /* the registry, the pool */
static lt_thread *registry;
static lt_pool pool = LT_POOL(lt_thread, 256 * 1024);
static _Atomic int next_seq;
static pthread_key_t exit_key;
static _Atomic int exit_key_ready;

/* ---------------------------------------------------------------------------------------- */

static void thread_exit(void *arg);

/* Under the registry lock. */
static void registry_link(lt_thread *t)
{
    t->prev = NULL;
    t->next = registry;
    if (registry)
        registry->prev = t;
    registry = t;
}

/* A fresh lt_thread in the registry; NULL when out of memory. */
static lt_thread *thread_new(void)
{
    lt_spin_lock(&registry_lock);
    lt_thread *t = lt_pool_get(&pool);
    if (t)
        registry_link(t);
    lt_spin_unlock(&registry_lock);
    return t;
}

static void held_release(lt_thread *t)
{
    if (t->held != t->inline_held)
        lt_platform_unmap(t->held, t->cap * sizeof(lt_held));
    t->held = t->inline_held;
    t->cap = LT_HELD_INLINE;
    t->nheld = 0;
}

/* Out of the registry and back to the pool. */
static void thread_delete(lt_thread *t)
{
    held_release(t);
    lt_spin_lock(&registry_lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        registry = t->next;
    if (t->next)
        t->next->prev = t->prev;
    lt_pool_put(&pool, t);
    lt_spin_unlock(&registry_lock);
}

/* The exit key is made by the first registration (the main thread, at load time). */
static void arm_exit_hook(lt_thread *t)
{
    if (!atomic_load(&exit_key_ready)) {
        lt_spin_lock(&registry_lock);
        if (!atomic_load(&exit_key_ready) && pthread_key_create(&exit_key, thread_exit) == 0)
            atomic_store(&exit_key_ready, 1);
        lt_spin_unlock(&registry_lock);
    }
    if (atomic_load(&exit_key_ready))
        pthread_setspecific(exit_key, t);
}

static lt_thread *register_thread(int seq)
{
    lt_thread *t = thread_new();
    if (!t) {
        lt_report_degraded("out of memory for a thread's state: its locks are not tracked");
        return NULL;
    }
    t->info.tid = lt_platform_tid();
    t->info.seq = seq >= 0 ? seq : atomic_fetch_add(&next_seq, 1);
    t->held = t->inline_held;
    t->cap = LT_HELD_INLINE;
    lt_tls.self = t;
    arm_exit_hook(t);
    return t;
}

/* The slow path of lt_self. */
lt_thread *lt_self_register(void)
{
    return lt_tls.self ? lt_tls.self : register_thread(-1);
}

int lt_thread_next_seq(void)
{
    return atomic_fetch_add(&next_seq, 1);
}

void lt_thread_start(int seq)
{
    if (!lt_tls.self)
        register_thread(seq);
}

void lt_thread_info_now(lt_thread *t, lt_thread_info *out)
{
    *out = t->info;
    lt_platform_thread_name(out->name, sizeof out->name);
}

/* Key destructors run in rounds. The first time, re-arm and let the program's own
 * destructors (which may release locks) run; check what is still held in the next round. */
static void thread_exit(void *arg)
{
    lt_thread *t = arg;
    if (t->exit_round++ == 0) {
        pthread_setspecific(exit_key, t);
        return;
    }
    lt_tls.busy = 1; /* for good: the thread is leaving */
    lt_on_thread_exit(t);
    lt_tls.self = NULL;
    thread_delete(t);
}

/* ---------------------------------------------------------------------------------------- */

/* Fails only when memory is exhausted, and tracking is then off. */
static int held_grow(lt_thread *t)
{
    uint32_t cap = t->cap * 2;
    lt_held *h = lt_map(cap * sizeof(lt_held));
    if (!h)
        return 0;
    memcpy(h, t->held, t->nheld * sizeof(lt_held));
    if (t->held != t->inline_held)
        lt_platform_unmap(t->held, t->cap * sizeof(lt_held));
    t->held = h;
    t->cap = cap;
    return 1;
}

lt_held *lt_held_push(lt_thread *t)
{
    if (lt_unlikely(t->nheld == t->cap) && !held_grow(t))
        return NULL;
    return &t->held[t->nheld++];
}

/* Keeps acquisition order; locks are mostly released last-in first-out, which moves nothing. */
void lt_held_remove(lt_thread *t, lt_held *h)
{
    lt_held *end = &t->held[--t->nheld];
    for (; h < end; h++)
        h[0] = h[1];
}

/* ---------------------------------------------------------------------------------------- */

/* Only the forking thread lives on in the child; what the others held stays locked there
 * for good, so those locks become orphans of their (vanished) holders. */
static void fork_child(void)
{
    lt_thread *self = lt_tls.self;
    if (self)
        self->info.tid = lt_platform_tid();
    for (lt_thread *t = registry; t; t = t->next) {
        if (t == self || t->nheld == 0)
            continue;
        lt_thread_info *gone = malloc(sizeof *gone);
        if (gone) {
            *gone = t->info;
            lt_orphan_locks(t, gone);
        }
    }
    registry = NULL;
    if (self)
        registry_link(self);
}

void lt_thread_fork(lt_fork_phase phase)
{
    lt_spin_fork(&registry_lock, phase);
    if (phase == LT_FORK_CHILD)
        fork_child();
}

/* ---------------------------------------------------------------------------------------- */

/* Calls fn for every live thread under the registry lock: none can leave meanwhile, but they
 * go on running, so fn reads their held sets with lt_platform_peek. */
void lt_thread_each(void (*fn)(lt_thread *t, void *arg), void *arg)
{
    lt_spin_lock(&registry_lock);
    for (lt_thread *t = registry; t; t = t->next)
        fn(t, arg);
    lt_spin_unlock(&registry_lock);
}

/* The registry's head without the lock, for the thread dump (a signal handler cannot lock). */
lt_thread *lt_thread_first(void)
{
    return registry;
}
