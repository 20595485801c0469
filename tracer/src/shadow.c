/*
 * shadow.c - per-lock shadow state, keyed by lock address.
 *
 * 64 shards, each a uthash table under one of our own spinlocks, so unrelated locks rarely
 * meet. Entries come from per-shard slabs of mapped memory and go back to a per-shard free
 * list on destroy; they are never unmapped, which is what lets threads keep (entry, gen)
 * pairs in their lookup caches and held sets without references: a changed gen means "not
 * the lock you knew". The per-thread cache makes a repeated lookup a TLS probe and one load.
 */
#define _GNU_SOURCE
#include <string.h>

/* Out of memory while growing a table: leave the lock untracked, never exit the program. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(entry) (s->table_full = 1) /* s: the shard being added to */
/* Bucket arrays in mapped memory too, never the program's malloc: LeakSanitizer would count
 * them as the program's leaks (they live until exit). */
#define uthash_malloc(size) lt_platform_map(size)
#define uthash_free(ptr, size) lt_platform_unmap(ptr, size)

#include "lt_internal.h"
#include "platform.h"

#define SHARD_BITS 6
#define SHARDS (1 << SHARD_BITS)

typedef struct shard {
    lt_spin lock;
    lt_lock *table;     /* uthash head */
    lt_lock *free_list; /* through next_free: a reused entry keeps its gen, so no lt_pool */
    lt_arena slab;      /* zeroed: LT_ARENA_CHUNK at a time */
    int table_full;     /* the last add could not grow the table */
    char pad[64];       /* keep shards on separate cache lines */
} shard;

static shard shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = LT_SPIN_INIT(LT_RANK_SHADOW)}};

static shard *shard_of(const void *addr)
{
    return &shards[lt_addr_hash(addr, SHARD_BITS)];
}

/* New entries start at gen 1 so a zeroed cache slot or held entry never matches. */
static lt_lock *entry_alloc(shard *s)
{
    lt_lock *l = s->free_list;
    if (l) {
        s->free_list = l->next_free;
        return l;
    }
    l = lt_arena_alloc(&s->slab, sizeof(lt_lock), _Alignof(lt_lock));
    if (!l)
        return NULL;
    atomic_store(&l->gen, 1);
    return l;
}

/* Clears everything an identity owns; the caller bumps or keeps gen. */
static void entry_clear(lt_lock *l, const void *addr)
{
    l->addr = addr;
    atomic_store(&l->writer, 0);
    atomic_store(&l->waiting_writers, 0);
    l->first_stack = 0;
    l->object = NULL;
    l->describe = NULL;
    l->orphan_of = NULL;
    l->orphan_mode = LT_MODE_NONE;
    l->api = LT_API_PTHREAD;
}

/* Finds or creates the entry; *created says which. NULL only when out of memory. */
static lt_lock *find_or_create(const void *addr, int *created)
{
    shard *s = shard_of(addr);
    lt_lock *l;
    lt_spin_lock(&s->lock);
    HASH_FIND_PTR(s->table, &addr, l);
    *created = !l;
    if (!l && (l = entry_alloc(s)) != NULL) {
        entry_clear(l, addr);
        s->table_full = 0;
        HASH_ADD_PTR(s->table, addr, l);
        if (s->table_full) {
            l->next_free = s->free_list;
            s->free_list = l;
            l = NULL;
        }
    }
    lt_spin_unlock(&s->lock);
    return l;
}

/* The slow path of lt_shadow_get: the table, then the thread's cache slot. */
lt_lock *lt_shadow_lookup(lt_thread *t, const void *addr, uintptr_t ra)
{
    int created;
    lt_lock *l = find_or_create(addr, &created);
    if (!l) {
        lt_report_out_of_memory(); /* the table could not grow */
        return NULL;
    }
    if (created)
        l->first_stack = lt_stack_here(ra);
    lt_cache_slot *slot = &t->cache[lt_addr_hash(addr, LT_CACHE_BITS)];
    slot->addr = addr;
    slot->lock = l;
    slot->gen = atomic_load(&l->gen);
    return l;
}

/* init: the address becomes a new lock, first seen here. */
lt_lock *lt_shadow_reset(const void *addr, uintptr_t ra)
{
    int created;
    lt_lock *l = find_or_create(addr, &created);
    if (!l)
        return NULL;
    if (!created) {
        atomic_fetch_add(&l->gen, 1);
        entry_clear(l, addr);
    }
    l->first_stack = lt_stack_here(ra);
    return l;
}

/* destroy: the address stops naming a lock; the entry is recycled under a new gen. */
void lt_shadow_forget(const void *addr)
{
    shard *s = shard_of(addr);
    lt_lock *l;
    lt_spin_lock(&s->lock);
    HASH_FIND_PTR(s->table, &addr, l);
    if (l) {
        HASH_DEL(s->table, l);
        atomic_fetch_add(&l->gen, 1);
        l->next_free = s->free_list;
        s->free_list = l;
    }
    lt_spin_unlock(&s->lock);
}

void lt_shadow_fork(lt_fork_phase phase)
{
    for (int i = 0; i < SHARDS; i++)
        lt_spin_fork(&shards[phase == LT_FORK_PREPARE ? i : SHARDS - 1 - i].lock, phase);
}
