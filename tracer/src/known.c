/*
 * known.c - sets of odd 64-bit keys in open addressing, and the known set of edge
 * fingerprints: how it is read without the graph lock, claimed in the gate, and grown (see
 * known.h; order.c says what is looked up when).
 */
#include "known.h"

#include "alloc.h"
#include "lt_internal.h"
#include "platform.h"

#define KNOWN_MIN 4096 /* smallest size of the known set (slots) */
_Static_assert(KNOWN_MIN % 8 == 0, "set_fill reads a set eight slots at a time");
#define TOMB 2         /* a removed key (keys are odd) */

lt_key_set *_Atomic lt_known;
_Atomic size_t lt_known_stale;  /* written under the graph lock, read by lt_known_grow */
_Atomic unsigned lt_known_epoch; /* copies and refills of the known set (known.h) */

/* key, known to be absent, into the first free or removed slot from its home on, counted by
 * the caller: 1 when the slot was free. */
static int set_place(lt_key_set *k, uint64_t key, size_t home)
{
    size_t i = home;
    uint64_t v;
    while ((v = atomic_load_explicit(&k->slot[i], memory_order_relaxed)) != 0 && v != TOMB)
        i = (i + 1) & k->mask;
    atomic_store_explicit(&k->slot[i], key, memory_order_release);
    return v == 0;
}

/* Under the graph lock, key known to be absent: into the first free or removed slot. The gate
 * is shut, so no other thread counts in `used` (lt_known_reserve): a plain store does for the
 * locked add. */
void lt_set_put(lt_key_set *k, uint64_t key)
{
    if (set_place(k, key, lt_set_home(k, key)))
        atomic_store_explicit(&k->used, atomic_load_explicit(&k->used, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    k->live++;
}

/* Slots for n keys: four times as many (at least KNOWN_MIN), a power of two. */
static size_t set_slots(size_t n)
{
    size_t size = KNOWN_MIN;
    while (size < (n + 1) * 4)
        size *= 2;
    return size;
}

size_t lt_set_bytes(size_t slots)
{
    return sizeof(lt_key_set) + slots * sizeof(uint64_t);
}

/* Sets from this many bytes on are large memory (lt_large_alloc): a copy writes every page
 * of its set at once, and in small pages each was a page fault (`lazy`: ~900 a run, for the
 * copies of 512 KB, 1 MB and 2 MB). A set that is dropped gives its memory back and keeps its
 * range (known_drop), which large memory never hands out again. */
#define KNOWN_LARGE ((size_t)512 << 10)

/* An empty set of `size` slots (a power of two); NULL when out of memory. */
static lt_key_set *set_map(size_t size)
{
    size_t bytes = lt_set_bytes(size);
    lt_key_set *k = bytes >= KNOWN_LARGE ? lt_large_alloc(bytes) : lt_map(bytes);
    if (k) {
        k->mask = size - 1;
        k->shift = 64 - (unsigned)__builtin_ctzll(size);
    }
    return k;
}

/* s's value into keys[m], kept (m + 1) when a key: odd, where a free slot and TOMB are even. */
static unsigned slot_keep(uint64_t *keys, unsigned m, const _Atomic uint64_t *s)
{
    uint64_t v = atomic_load_explicit(s, memory_order_relaxed);
    keys[m] = v;
    return m + (unsigned)(v & 1);
}

/* The keys of k without its tombstones into g, a new set no other thread sees yet, larger
 * than k. A key sits at or a little past its home, and its home in g is its home in k scaled
 * up (lt_set_home): read front to back, k's keys go into g front to back too, each next to
 * the last, where their homes were lines nowhere near each other with the low bits. g's counts
 * are set once, not by a locked add per key. k is read eight slots at a time, its keys
 * gathered without a branch (slot_keep, written out): a branch a slot on whether it held a
 * key went either way at random at the load a set is copied at (5/8), and its mispredictions
 * were a third of the copy's time (`lazy`, the 1.3 M keys of its copies: 13.3 -> 9.5 ms of
 * CPU a run). */
static void set_fill(lt_key_set *g, const lt_key_set *k)
{
    size_t n = 0;
    uint64_t keys[8];
    for (size_t i = 0; k && i <= k->mask; i += 8) { /* a set has a multiple of 8 slots */
        const _Atomic uint64_t *s = &k->slot[i];
        unsigned m = slot_keep(keys, 0, &s[0]);
        m = slot_keep(keys, m, &s[1]);
        m = slot_keep(keys, m, &s[2]);
        m = slot_keep(keys, m, &s[3]);
        m = slot_keep(keys, m, &s[4]);
        m = slot_keep(keys, m, &s[5]);
        m = slot_keep(keys, m, &s[6]);
        m = slot_keep(keys, m, &s[7]);
        for (unsigned j = 0; j < m; j++)
            set_place(g, keys[j], lt_set_home(g, keys[j]));
        n += m;
    }
    atomic_store_explicit(&g->used, n, memory_order_relaxed);
    g->live = n;
}

/* Under the graph lock: *set's keys without its tombstones, copied into a new set of `size`
 * slots, which replaces it in *set (the old one is the caller's). NULL when out of memory. */
static lt_key_set *set_copy(lt_key_set *_Atomic *set, size_t size)
{
    lt_key_set *k = atomic_load_explicit(set, memory_order_relaxed);
    lt_key_set *g = set_map(size);
    if (!g)
        return NULL;
    lt_prefault(g->slot, (g->mask + 1) * sizeof *g->slot); /* one call, not a fault a page */
    set_fill(g, k);
    atomic_store_explicit(set, g, memory_order_release);
    return g;
}

/* Under the graph lock, key absent, for a set only ever read under it (moved): a full
 * set is replaced by a copy, and unmapped. 0 when out of memory. */
int lt_set_add(lt_key_set *_Atomic *set, uint64_t key)
{
    lt_key_set *k = atomic_load_explicit(set, memory_order_relaxed);
    if (!k || (k->used + 1) * 2 > k->mask + 1) {
        lt_key_set *g = set_copy(set, set_slots(k ? k->live : 0));
        if (!g)
            return 0;
        if (k)
            lt_platform_unmap(k, lt_set_bytes(k->mask + 1));
        k = g;
    }
    lt_set_put(k, key);
    return 1;
}

/* Under the graph lock. */
void lt_set_remove(lt_key_set *_Atomic *set, uint64_t key)
{
    lt_key_set *k = atomic_load_explicit(set, memory_order_relaxed);
    size_t i = k ? lt_set_home(k, key) : 0;
    uint64_t v = 0;
    while (k && (v = atomic_load_explicit(&k->slot[i], memory_order_relaxed)) != key && v != 0)
        i = (i + 1) & k->mask;
    if (k && v == key) {
        atomic_store_explicit(&k->slot[i], TOMB, memory_order_relaxed);
        k->live--;
    }
}

/*
 * A known set that another replaced, under the graph lock: its range stays, as a reader may
 * still be in it (it then asks the graph lock, lt_known_add). Its slots go on as memory for
 * edges (lt_order_recycle), which would otherwise be made fresh: in `lazy` (0.9 M edges) the
 * sets replaced as the set doubled were 15.5 MB, half the edges' memory, and this VM zeroes a
 * page it gives at ~0.3-1.1 GB/s (clear_page_erms, 20-33 % of the row's samples). Its header
 * stays as it was, so such a reader's probe stays inside and ends after a round of slots
 * (lt_set_find); an edge's word it reads is taken for its fingerprint with odds 2^-64, those
 * of two edges sharing one. (Moving the pages to the edges' range with mremap instead cost
 * more than it saved: the address-space lock and the other threads' TLBs flushed.) A set too
 * small for a chunk of edges, or one the edges have no room for, gives its memory back and
 * reads as empty.
 */
static void known_drop(lt_key_set *k)
{
    if (k && !lt_order_recycle((void *)k->slot, (k->mask + 1) * sizeof *k->slot))
        lt_platform_discard(k, lt_set_bytes(k->mask + 1));
}

/* Under the graph lock: the known set made again from the edges in the graph, in k if it is
 * large enough; NULL when out of memory. */
static lt_key_set *known_refill(lt_key_set *k)
{
    size_t size = set_slots(lt_order_nedges());
    if (k && size <= k->mask + 1) {
        for (size_t i = 0; i <= k->mask; i++)
            atomic_store_explicit(&k->slot[i], 0, memory_order_relaxed);
        atomic_store_explicit(&k->used, 0, memory_order_relaxed);
        k->live = 0;
    } else {
        lt_key_set *old = k;
        k = lt_order_room(lt_set_bytes(size)) ? set_map(size) : NULL;
        if (!k)
            return NULL;
        atomic_store_explicit(&lt_known, k, memory_order_release);
        known_drop(old);
    }
    atomic_store_explicit(&lt_known_stale, 0, memory_order_relaxed);
    lt_order_known_fill(k);
    return k;
}

/*
 * Growing the known set outside the graph lock. lt_known_add's copy of a set of a million
 * fingerprints kept every other thread waiting for tens of ms: in the `lazy` stress row (4
 * threads, 0.9 M new edges) those copies were nearly all of the lock's hold time. So once
 * the set is LT_KNOWN_GROW_AT full, the next thread to let go of its last lock (lt_known_idle;
 * known.h says why then) copies it into a set twice as large outside the graph lock, while
 * the others go on adding to the old one, which may fill to seven eighths meanwhile
 * (known_full); each fingerprint added meanwhile, in the gate or under the lock, is also
 * written to a log. It adds the logged ones to the copy as far as they are written
 * (known_catch_up_early), then takes the lock, adds the rest (or, when the log overflowed,
 * reads the old set again) and publishes the copy - unless lt_known_add copied or refilled
 * the set meanwhile (it filled up first), when the copy is dropped.
 * lt_known_growing changes only under the lock, with the gate shut, so an adder sees it set
 * from the first fingerprint the copy may miss to the end.
 */
#define GROW_LOG ((size_t)1 << 18)        /* fingerprints logged while a copy is made */

_Atomic int lt_known_growing;
static _Atomic size_t grow_nlogged;  /* fingerprints added meanwhile (some past the log's end) */
static _Atomic uint64_t *grow_log;   /* mapped by the first copy; all 0 while none is made */

_Atomic uint8_t lt_known_ahead;

/* Under the graph lock, the known set copied or made again: a plain store for the add, and a
 * release one (lt_known_look); and whether it is large enough to be asked for ahead. */
static void known_epoch_next(void)
{
    const lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_relaxed);
    atomic_store_explicit(&lt_known_epoch, lt_known_epoch_now() + 1, memory_order_release);
    atomic_store_explicit(&lt_known_ahead, k && k->mask + 1 >= LT_KNOWN_AHEAD_FROM,
                          memory_order_relaxed);
}

/* Is the known set k full when `used` of its slots are? At three quarters of them; at seven
 * eighths while a copy twice as large is being made, so that the copy is not wasted. (Half,
 * with the replaced sets kept, was 45 bytes an edge in `lazy`; at three quarters a probe for
 * an absent fingerprint reads 8.5 slots on average, a line or two.) */
static int known_full(const lt_key_set *k, size_t used)
{
    size_t slots = k->mask + 1;
    return used > (atomic_load_explicit(&lt_known_growing, memory_order_relaxed) ? slots / 8 * 7
                                                                        : slots / 4 * 3);
}

/* At most a quarter of k's fingerprints name dead edges: k is copied when it fills, not made
 * again from the edges. */
static int known_mostly_live(const lt_key_set *k)
{
    return atomic_load_explicit(&lt_known_stale, memory_order_relaxed) * 4 <=
           atomic_load_explicit(&k->used, memory_order_relaxed);
}

/* Under the graph lock or in the gate, while a copy is being made: fps[0 .. n) were added to
 * the known set (lt_known_logged, edges_fast): one locked add on the shared count for them. */
void lt_known_log(const uint64_t *fps, size_t n)
{
    size_t i = atomic_fetch_add_explicit(&grow_nlogged, n, memory_order_relaxed);
    for (size_t j = 0; j < n && i + j < GROW_LOG; j++)
        atomic_store_explicit(&grow_log[i + j], fps[j], memory_order_relaxed);
}

/*
 * Under the graph lock, fp absent. 0 when out of memory. When the set is full (lt_known_grow
 * came too late or not at all), a set of which at most a quarter are fingerprints of dead
 * edges is copied into one twice as large: a sequential read, where walking the edges would
 * miss the cache on each. Otherwise it is made again from the edges in the graph, which drops
 * those fingerprints: in place when it is large enough, else into a larger mapping. Readers
 * are not stopped: one racing with the refill may miss a fingerprint (it then takes the graph
 * lock, where the answer is exact), and any it finds was in the graph (or names an ending
 * identity). A replaced set keeps its range, as a reader may be inside it, but not its
 * memory: that goes to edges, or back (known_drop).
 */
int lt_known_add(uint64_t fp)
{
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_relaxed);
    if (!k || known_full(k, k->used + 1)) {
        lt_key_set *old = k;
        if (k && known_mostly_live(k)) {
            size_t size = 2 * (k->mask + 1);
            k = lt_order_room(lt_set_bytes(size)) ? set_copy(&lt_known, size) : NULL;
            if (k)
                known_drop(old);
        } else {
            k = known_refill(k);
        }
        known_epoch_next();
    }
    if (!k)
        return 0;
    lt_set_put(k, fp);
    lt_known_logged(fp);
    return 1;
}

/* Log entries read ahead of the one added (catch_up_one). */
#define CATCH_UP_AHEAD 16

/* Log entry i of n, v, into g unless it is there. A logged fingerprint's home in g is a
 * cache miss (they are logged in no order), so the home of the one CATCH_UP_AHEAD further on
 * is asked for first: one at a time, those misses were most of a catch-up's time (`lazy`:
 * 110-250 K fingerprints a run, ~30 ns each). An entry not written yet reads 0, whose home
 * is asked for in vain. */
static void catch_up_one(lt_key_set *g, size_t i, size_t n, uint64_t v)
{
    if (i + CATCH_UP_AHEAD < n) {
        uint64_t ahead = atomic_load_explicit(&grow_log[i + CATCH_UP_AHEAD], memory_order_relaxed);
        __builtin_prefetch(&g->slot[lt_set_home(g, ahead)], 1);
    }
    if (!lt_set_in(g, v))
        lt_set_put(g, v);
}

/* Under the graph lock: the keys of k (or of the log from `from` on) that g lacks, into g. */
static void known_catch_up(lt_key_set *g, const lt_key_set *k, size_t nlogged, size_t from)
{
    for (size_t i = 0; nlogged > GROW_LOG && i <= k->mask; i++) {
        uint64_t v = atomic_load_explicit(&k->slot[i], memory_order_relaxed);
        if (v != 0 && v != TOMB && !lt_set_in(g, v))
            lt_set_put(g, v);
    }
    for (size_t i = from; nlogged <= GROW_LOG && i < nlogged; i++)
        catch_up_one(g, i, nlogged, atomic_load_explicit(&grow_log[i], memory_order_relaxed));
}

/* Outside the graph lock, g still the copier's own: the logged fingerprints that g lacks, into
 * g, as far as their loggers wrote them (a fingerprint is odd: 0 is an entry not written yet),
 * pass after pass while the adders log CATCH_UP_TAIL or more meanwhile; how many entries it
 * took. Under the lock, with the gate shut, the copy of lazy's largest set caught up 40-80 K
 * logged fingerprints, a cache miss each in the new set: ~10 ms that every thread waited.
 *
 * It stops once the set it copies was replaced (the epoch moved on: the copy will be dropped),
 * and before g is seven eighths full, which it never is while that set is the known one (g
 * is twice its size, and it is full at seven eighths). A copier descheduled long enough
 * (load 24) saw lt_known_add copy the set twice meanwhile, the adders logging on into the
 * larger ones (lt_known_growing stays set): the log outgrew g, which filled to its last slot,
 * and the probe for the next logged fingerprint never ended - a thread spinning with the
 * program's locks held, the others blocked on them. */
#define CATCH_UP_TAIL 256

static size_t known_catch_up_early(lt_key_set *g, unsigned epoch)
{
    size_t done = 0, before, most = (g->mask + 1) / 8 * 7;
    do {
        before = done;
        size_t n = atomic_load_explicit(&grow_nlogged, memory_order_relaxed);
        if (n > GROW_LOG || lt_known_epoch_now() != epoch)
            return done; /* known_catch_up reads the old set again, or the copy is dropped */
        for (uint64_t v; done < n &&
                         atomic_load_explicit(&g->used, memory_order_relaxed) < most &&
                         (v = atomic_load_explicit(&grow_log[done], memory_order_relaxed)) != 0;
             done++)
            catch_up_one(g, done, n, v);
    } while (done - before >= CATCH_UP_TAIL);
    return done;
}

/* The log's entries zeroed, none being written: under the graph lock at the end of a copy
 * (lt_known_growing still set, so no adder is in the gate), or in the child after fork. */
static void grow_log_clear(void)
{
    size_t n = atomic_load_explicit(&grow_nlogged, memory_order_relaxed);
    for (size_t i = 0; grow_log && i < n && i < GROW_LOG; i++)
        atomic_store_explicit(&grow_log[i], 0, memory_order_relaxed);
}

_Atomic int lt_known_due;

/* lt_known_grow, k LT_KNOWN_GROW_AT full. (A want that comes after the copy it wanted is
 * dropped by that copy's first question: it is no longer that full.) */
void lt_known_want(lt_key_set *k)
{
    if (atomic_load_explicit(&k->used, memory_order_relaxed) >= LT_KNOWN_GROW_NOW(k->mask + 1))
        lt_known_copy();
    else if (!atomic_load_explicit(&lt_known_due, memory_order_relaxed) &&
             !atomic_load_explicit(&lt_known_growing, memory_order_relaxed) && known_mostly_live(k))
        atomic_store_explicit(&lt_known_due, 1, memory_order_relaxed);
}

/* lt_known_idle, a copy wanted: the first thread to see it makes it. */
void lt_known_copy_due(void)
{
    atomic_store_explicit(&lt_known_due, 0, memory_order_relaxed);
    lt_known_copy();
}

/* The set LT_KNOWN_GROW_AT full: asked again, with the rest. */
void lt_known_copy(void)
{
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_acquire), *g = NULL;
    /* A set a quarter of which names dead edges is made again in place when it fills
     * (lt_known_add): copying it would double it with every round of locks made and destroyed.
     * That is seen before the lock too: in `groups`, where every round's locks are destroyed,
     * asking the lock took it for each new edge between LT_KNOWN_GROW_AT and full. */
    if (!k ||
        atomic_load_explicit(&k->used, memory_order_relaxed) < LT_KNOWN_GROW_AT(k->mask + 1) ||
        atomic_load_explicit(&lt_known_growing, memory_order_relaxed) || !known_mostly_live(k))
        return;
    lt_order_lock();
    int mine = k == atomic_load_explicit(&lt_known, memory_order_relaxed) &&
               !atomic_load_explicit(&lt_known_growing, memory_order_relaxed) &&
               known_mostly_live(k) &&
               lt_order_room(lt_set_bytes(2 * (k->mask + 1))) &&
               (grow_log || (grow_log = lt_map(GROW_LOG * sizeof *grow_log)));
    unsigned epoch = lt_known_epoch_now();
    if (mine) {
        atomic_store_explicit(&lt_known_growing, 1, memory_order_relaxed);
        atomic_store_explicit(&grow_nlogged, 0, memory_order_relaxed);
    }
    lt_order_unlock();
    if (!mine)
        return;
    size_t early = 0; /* log entries added to g outside the lock */
    /* Its pages written before the copy reads them: a page first read maps the shared zero
     * page, and its first write then faults again and stops the other CPUs to flush it. */
    if ((g = set_map(2 * (k->mask + 1))) != NULL) {
        lt_prefault(g->slot, (g->mask + 1) * sizeof *g->slot);
        set_fill(g, k);
        early = known_catch_up_early(g, epoch);
    }
    lt_order_lock();
    if (g && lt_known_epoch_now() == epoch) {
        known_catch_up(g, k, atomic_load_explicit(&grow_nlogged, memory_order_relaxed), early);
        atomic_store_explicit(&lt_known, g, memory_order_release);
        known_drop(k);
        known_epoch_next();
    } else if (g) {
        lt_platform_unmap(g, lt_set_bytes(g->mask + 1));
    }
    grow_log_clear();
    atomic_store_explicit(&lt_known_growing, 0, memory_order_relaxed);
    lt_order_unlock();
}

/* Slots a thread with a gate slot reserves ahead in the known set k: a few, or fewer for a
 * small set, which the reserved but unused slots of many threads would fill early. */
static size_t reserve_ahead(const lt_key_set *k)
{
    size_t ahead = (k->mask + 1) >> 9;
    return ahead < 64 ? ahead : 64;
}

/* In the gate: room for `room` more fingerprints in the known set k, counted in k->used
 * (lt_set_claim needs it); 0 when k is full, and must grow under the lock. A thread with a
 * gate slot takes its reserve first, and reserves ahead when that is short: k->used, on a
 * line that every batch of fast edges wrote twice, is written once every few batches. A
 * reserve lasts as long as its set (the epoch): a copy or refill counts what it holds. */
int lt_known_reserve_more(lt_known_room *s, lt_key_set *k, size_t room)
{
    size_t have = s && s->epoch == lt_known_epoch_now() ? s->room : 0;
    size_t take = room - have + (s ? reserve_ahead(k) : 0);
    if (known_full(k, atomic_fetch_add_explicit(&k->used, take, memory_order_relaxed) + take)) {
        atomic_fetch_sub_explicit(&k->used, take, memory_order_relaxed);
        return 0;
    }
    if (s) {
        s->room = have + take - room;
        s->epoch = lt_known_epoch_now();
    }
    return 1;
}

size_t lt_known_bytes(void)
{
    const lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_relaxed);
    return k ? lt_set_bytes(k->mask + 1) : 0;
}

/* A copy another thread was making is lost. The log is all 0 while none is made: nothing is
 * written then (a page written in the child is a page copied). */
LT_FORK_PATH void lt_known_fork_child(void)
{
    if (!atomic_load_explicit(&lt_known_growing, memory_order_relaxed))
        return;
    grow_log_clear();
    atomic_store(&lt_known_growing, 0);
}
