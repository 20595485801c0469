/*
 * known.h - sets of odd 64-bit keys in open addressing (lt_key_set), and the one of them the
 * lock-order graph looks its edges up in: the known set of edge fingerprints (order.c says
 * what a fingerprint is and when it is looked up; known.c how the set is read without a lock
 * and grows). The look-ups are here, inline: they run on every nested acquisition.
 *
 * known.c reaches back into order.c for what the set is made from (lt_order_known_fill,
 * lt_order_nedges), for the graph's bound on memory (lt_order_room) and for the graph lock
 * (lt_order_lock), which serialises every change of the set but the gate's claims.
 */
#ifndef LT_KNOWN_H
#define LT_KNOWN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* 0 marks a free slot, 2 a removed key (keys are odd). Written under the graph lock; the
 * known set is read without it (lt_known_add says how it grows). */
typedef struct lt_key_set {
    size_t mask, live;
    unsigned shift;   /* 64 - log2(slots): lt_set_home keeps the top bits */
    _Alignas(64) _Atomic size_t used; /* edges_fast counts in without the lock: a line apart */
    _Alignas(64) _Atomic uint64_t slot[];
} lt_key_set;

/* A key's first slot: the top bits of its product with the golden ratio. Keys that are
 * addresses (ords) lie at a regular stride, which the mask alone would pile into long runs.
 * The top bits keep a set's order in the one twice as large (a key's home there is twice its
 * home here, or one more), so a copy (set_fill) reads the old set and writes the new one
 * front to back. (The mask keeps a reader still in a set that was replaced inside its range:
 * known_drop.) */
static inline size_t lt_set_home(const lt_key_set *k, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> k->shift) & k->mask;
}

/* lt_set_find past the key's home, slot i. It also ends (not found) after a round of k's
 * slots: the known set a reader is in may have been replaced since, its slots made edges,
 * where none need read as free (known_drop). */
static inline int lt_set_find_on(const lt_key_set *k, uint64_t key, size_t i, size_t *stop)
{
    /* (Read again, volatile, not kept from the home's computation in a register: that cost
     * the look-up ending at its home, the common one, an instruction.) */
    size_t mask = *(const volatile size_t *)&k->mask;
    for (size_t left = mask;; left--) {
        i = (i + 1) & mask;
        uint64_t v = atomic_load_explicit(&k->slot[i], memory_order_relaxed);
        if (v == key)
            return 1;
        if (v == 0 || !left) {
            *stop = i;
            return 0;
        }
    }
}

/* Is key in k? When not, *stop is the free slot its probe ended at. (Its home apart, where
 * most look-ups end: lt_set_find_on's bound cost each ~1.4 instructions in lockbench's
 * nested-1.) */
static inline int lt_set_find(const lt_key_set *k, uint64_t key, size_t *stop)
{
    if (!k)
        return 0;
    size_t i = lt_set_home(k, key);
    uint64_t v = atomic_load_explicit(&k->slot[i], memory_order_relaxed);
    if (v == key)
        return 1;
    if (v != 0)
        return lt_set_find_on(k, key, i, stop);
    *stop = i;
    return 0;
}

static inline int lt_set_in(const lt_key_set *k, uint64_t key)
{
    size_t stop;
    return lt_set_find(k, key, &stop);
}

static inline int lt_set_has(lt_key_set *_Atomic *set, uint64_t key)
{
    return lt_set_in(atomic_load_explicit(set, memory_order_acquire), key);
}

size_t lt_set_bytes(size_t slots);

/* Under the graph lock, key known to be absent: into the first free or removed slot. */
void lt_set_put(lt_key_set *k, uint64_t key);

/* Under the graph lock, key absent, for a set only ever read under it (order.c's `moved`): a
 * full set is replaced by a copy, and unmapped. 0 when out of memory. */
int lt_set_add(lt_key_set *_Atomic *set, uint64_t key);

/* Under the graph lock. */
void lt_set_remove(lt_key_set *_Atomic *set, uint64_t key);

/* Without the graph lock, room for it reserved in k->used (lt_known_reserve): key into k
 * unless it is there. 1 when this call put it, so this thread adds its edge and no other does. */
static inline int lt_set_claim_from(lt_key_set *k, uint64_t key, size_t from)
{
    for (size_t i = from;; i = (i + 1) & k->mask) {
        uint64_t v = atomic_load_explicit(&k->slot[i], memory_order_relaxed);
        if (v == 0 && atomic_compare_exchange_strong_explicit(&k->slot[i], &v, key,
                                                              memory_order_release,
                                                              memory_order_relaxed))
            return 1;
        if (v == key)
            return 0;
    }
}

static inline int lt_set_claim(lt_key_set *k, uint64_t key)
{
    return lt_set_claim_from(k, key, lt_set_home(k, key));
}

/* The known set: fingerprints of the edges in the graph. */
extern lt_key_set *_Atomic lt_known;
extern _Atomic int lt_known_growing;     /* a copy of it is being made (lt_known_grow) */
extern _Atomic size_t lt_known_stale;    /* fingerprints in it of edges that are dead */

/* Known sets from this many slots on (1 MB) outgrow the cache, and are asked for ahead
 * (order.c: prefetch_held); smaller ones stay in it, where the fingerprints would cost
 * only instructions (lockbench nested-1). lt_known_ahead: the known set is that large; read
 * by every nested acquisition, written with each copy or refill (known.c). */
#define LT_KNOWN_AHEAD_FROM ((size_t)1 << 17)
extern _Atomic uint8_t lt_known_ahead __attribute__((visibility("hidden")));

static inline int lt_known_has(uint64_t fp)
{
    return lt_set_has(&lt_known, fp);
}

void lt_known_log(const uint64_t *fps, size_t n);

/* Under the graph lock or in the gate: fp was added to the known set. (lt_known_growing
 * changes only under the lock with the gate shut: a thread in the gate may read it once for
 * all it adds there, and log those together, as edges_fast does.) */
static inline void lt_known_logged(uint64_t fp)
{
    if (__builtin_expect(atomic_load_explicit(&lt_known_growing, memory_order_relaxed), 0))
        lt_known_log(&fp, 1);
}

/* Under the graph lock: one more fingerprint in the known set names a dead edge. The gate is
 * shut, so a plain store does for a locked add. */
static inline void lt_known_dead(void)
{
    atomic_store_explicit(&lt_known_stale,
                          atomic_load_explicit(&lt_known_stale, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Under the graph lock, fp absent: into the known set. 0 when out of memory. */
int lt_known_add(uint64_t fp);

/* Used slots from which on a set of `slots` is copied into one twice as large (lt_known_copy):
 * from LT_KNOWN_GROW_AT by the next thread to let go of its last lock (lt_known_idle), from
 * LT_KNOWN_GROW_NOW by the next to add edges (lt_known_grow), a program whose threads never
 * let go of all their locks; both below full (lt_known_add). The copy of `lazy`'s largest set
 * made memory of 16 MB, 30 ms on an idle machine: made with the program's locks held, it kept
 * every other thread waiting for one of them within a millisecond. */
#define LT_KNOWN_GROW_AT(slots) ((slots) / 8 * 5)
#define LT_KNOWN_GROW_NOW(slots) ((slots) / 16 * 11)

/* A copy is wanted (LT_KNOWN_GROW_AT): read by every unlock that lets go of a thread's last
 * lock, written about once a copy. */
extern _Atomic int lt_known_due;

void lt_known_copy(void);
void lt_known_want(lt_key_set *k);
void lt_known_copy_due(void);

/* Outside the graph lock and the gate: the known set is LT_KNOWN_GROW_AT full, so a copy is
 * wanted (lt_known_due), or made now from LT_KNOWN_GROW_NOW on, unless another thread is
 * making one. Asked before each batch of new edges, and the answer is almost always no: that
 * much is inline. (An acquire load: k->mask was written by the thread that made k, before it
 * published it.) */
static inline void lt_known_grow(void)
{
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_acquire);
    if (k && atomic_load_explicit(&k->used, memory_order_relaxed) >= LT_KNOWN_GROW_AT(k->mask + 1))
        lt_known_want(k);
}

/* The calling thread let go of its last lock, outside the graph lock and the gate: the copy
 * lt_known_grow wants, if any. */
static inline void lt_known_idle(void)
{
    if (__builtin_expect(atomic_load_explicit(&lt_known_due, memory_order_relaxed), 0))
        lt_known_copy_due();
}

/* Room a thread keeps reserved in the known set (lt_known_reserve), per gate slot. */
typedef struct lt_known_room {
    size_t room;     /* slots it reserved in the known set of epoch `epoch` */
    unsigned epoch;
} lt_known_room;

/* Copies and refills of the known set: changed under the graph lock, by a release store after
 * the set's slots (lt_known_look reads it outside). */
extern _Atomic unsigned lt_known_epoch;

static inline unsigned lt_known_epoch_now(void)
{
    return atomic_load_explicit(&lt_known_epoch, memory_order_relaxed);
}

/*
 * A look at the known set outside the gate that a claim in the gate may go on from: a new
 * edge's fingerprint was probed for (absent) before the gate, and was probed for again from
 * its home by lt_set_claim - the same slots, ~20 instructions a new edge in `lazy`. The slots
 * the first probe passed were taken then, and stay taken while the set is the same one and
 * no refill emptied it (its epoch unchanged): a key put since is at or past the free slot it
 * stopped at (lt_set_find's *stop), where the claim starts. The epoch is read first (acquire:
 * a refill's slots are stored before its epoch), so a look that overlaps a refill sees an
 * older epoch than the gate will.
 */
typedef struct lt_known_look {
    lt_key_set *k;
    unsigned epoch;
} lt_known_look;

static inline void lt_known_look_now(lt_known_look *l)
{
    l->epoch = atomic_load_explicit(&lt_known_epoch, memory_order_acquire);
    l->k = atomic_load_explicit(&lt_known, memory_order_acquire);
}

/* In the gate, k the known set: does l still say where its probes stopped? */
static inline int lt_known_look_holds(const lt_known_look *l, const lt_key_set *k)
{
    return l->k == k && l->epoch == lt_known_epoch_now();
}

/* lt_known_reserve when the thread's own reserve is short (known.c). */
int lt_known_reserve_more(lt_known_room *s, lt_key_set *k, size_t room);

/* In the gate: room for `room` more fingerprints in the known set k, counted in k->used
 * (lt_set_claim needs it); 0 when k is full, and must grow under the lock. s: the thread's
 * reserve (NULL: it has no gate slot). Inline, with lt_set_claim: each new edge asks both. */
static inline int lt_known_reserve(lt_known_room *s, lt_key_set *k, size_t room)
{
    if (s && s->epoch == lt_known_epoch_now() && s->room >= room) {
        s->room -= room;
        return 1;
    }
    return lt_known_reserve_more(s, k, room);
}

/* In the gate: n of the slots lt_known_reserve gave were not used. (Inline: every batch of new
 * edges gives some back, most of them none.) */
static inline void lt_known_unreserve(lt_known_room *s, lt_key_set *k, size_t n)
{
    if (s)
        s->room += n;
    else if (n)
        atomic_fetch_sub_explicit(&k->used, n, memory_order_relaxed);
}

/* Under the graph lock, s's thread leaving: the room it reserved goes back to the known set.
 * (Left counted as used, each thread that ever made an edge in the gate took up to 64 slots
 * for good: 100,000 short threads each taking a lock of its own between two others grew the
 * set to 4 M slots, 32 MB, for 6 live edges.) */
static inline void lt_known_give_back(lt_known_room *s)
{
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_relaxed);
    if (k && s->epoch == lt_known_epoch_now())
        atomic_fetch_sub_explicit(&k->used, s->room, memory_order_relaxed);
    s->room = 0;
}

/* The bytes the known set maps (the graph's bound counts them). */
size_t lt_known_bytes(void);

/* In the child after fork: a copy another thread was making is lost. */
void lt_known_fork_child(void);

/* From order.c, under the graph lock: the fingerprint of every edge in the graph into k
 * (lt_set_put); how many edges have, or are to have, their fingerprints in the known set; may
 * the graph map `more` bytes (0 caps it). */
void lt_order_known_fill(lt_key_set *k);
size_t lt_order_nedges(void);
int lt_order_room(size_t more);

/* From order.c, under the graph lock: [mem, mem + size), the slots of a known set that was
 * replaced, made edges (lt_ix_give); 0: not taken. */
int lt_order_recycle(void *mem, size_t size);

/* From order.c: the graph lock, taken with the gate shut, and let go. */
void lt_order_lock(void);
void lt_order_unlock(void);

#endif
