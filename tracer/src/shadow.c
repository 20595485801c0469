/*
 * shadow.c - per-lock shadow state, keyed by lock address.
 *
 * Most entries are their locks' homes (lt_internal.h: lt_shadow_home), where lt_shadow_get
 * finds them with one load from the entry's own line, no table, no thread cache: a program
 * that goes through thousands of locks at random missed the cache twice a lookup otherwise
 * (the table's slot, then the entry; `stressbench lazy`). A lock whose home another lock
 * has gets its entry from a slab, filed in the tables below. A home is filed nowhere: its
 * own addr says which address it is for (its key), and it stays that address's, live or
 * destroyed, until the address's memory is released (lt_shadow_forget).
 *
 * 64 shards (a lock's is its page's), each an open-addressing table (linear probing) of
 * entry pointers under one of our own spinlocks, so unrelated locks rarely meet; a page's
 * locks have their home slots in address order (addr_hash), so neighbours' slots are
 * neighbours too. Entries
 * come from per-shard slabs and go back to a per-shard free list on destroy; slabs and tables
 * come from the shadow's heap, which is never unmapped: that is what lets threads keep
 * (entry, gen) pairs in their lookup caches and held sets without references (a changed gen
 * means "not the lock you knew"), and readers stay in a table that has been copied. The per-thread cache makes a repeated lookup a TLS probe and one load.
 *
 * Insertion and removal take the shard's lock; lookup does not. A reader probes the table
 * and accepts an entry only from a consistent snapshot (gen, addr, gen again): removal clears
 * the entry's addr before it bumps gen, so an accepted pair names a lock that was live at
 * that moment, and a later gen check tells whether it still is. Removal shifts later entries
 * of the probe chain back (no tombstones, so a table never fills up with dead slots), and a
 * reader racing with it may miss an entry: a lock-free miss is only a hint, answered again
 * under the lock. A table that grows is copied; the old copy stays mapped for readers that
 * may still be in it (tables double, so all copies together are at most twice the last).
 * Tables are kept at most half full: an absent address is then found absent in a few probes.
 *
 * destroy leaves the entry in its slot, destroyed (a new gen, no address), and the address in
 * the lock map: memory that held a lock is mostly either freed (lifetime.c then removes both,
 * as it removes a live lock) or made a lock again at the same address (pools, arrays of
 * locks re-initialised), and init then finds the entry where it was, without a new slot or a
 * lock-map change (each ~250 instructions). Destroyed entries are not counted (a shared count
 * was an atomic add at every destroy and init, a tenth of `stressbench groups`' time): a
 * table that fills up is first purged of them (purge), and grows only if that leaves it
 * nearly as full, so memory that never holds a lock again costs at most what the most locks
 * live at once did.
 *
 * An entry that names no lock keeps in addr the complement of what it still needs: a destroyed
 * entry, the address its slot is filed under (its key); a free one, the next free entry. A
 * complement has the top bit set, which no lock's address has, so no probe matches it, and
 * one word says both whether the entry names a lock and where it is filed: a hot record of
 * 32 bytes has no room for more.
 *
 * A slab entry's identity (addr, gen and what entry_clear resets) changes only under its
 * claim (claim_try): a flag set by a CAS and held for a few stores, never across a wait.
 * Table changes take the shard's lock and then claim the entries they touch, waiting for a
 * claim to drop; destroy and init of a lock whose entry is in the table (live, or left there
 * by destroy) only claim it, without the shard's lock, and take the locked path when the
 * claim is busy. Half of `stressbench churn`'s tracer instructions were its inits and
 * destroys, a third of those the shard lock.
 *
 * A home needs no claim but to be taken: homes are shared by the addresses of different
 * regions, and any shard's thread may want a vacant one (home_take). Once taken, only calls
 * on its own address change it - init, destroy, a lookup that finds it destroyed (under the
 * shard's lock), the release of its memory (under the shard's lock) - and a correct program
 * makes none of those while another is under way (nor uses a lock while it inits or
 * destroys it), while purge, the one change the program does not cause, never sees a home.
 * So the program's init and destroy of a lock whose entry is its home change it with plain
 * stores: their claims' compare-and-swaps were 8 % of `stressbench groups`' time, each
 * waiting for the order graph's cold stores before it to drain. A program that races an
 * init or destroy with another call on the same lock (undefined behaviour) may leave a home
 * naming its lock when it should not, or vacant when it should name it: the tracer then
 * loses that lock's history, but every step stays one a lone caller could make (no free
 * list, no table is involved), so it never crashes.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>

#include "lifetime.h"
#include "platform.h"

#define SHARD_BITS 6
#define SHARDS (1 << SHARD_BITS)
/* 1,024 slots, 16 KiB: with fewer, a page's slots share homes (addr_hash), and a table grown
 * from 256 slots has made two copies on the way, 7 pages written for the 4 it keeps. */
#define TABLE_MIN_BITS 10
/* Entries a shard's slab takes at a time: 256. Past the heap's first pages each chunk lies in
 * a large page, which is zeroed whole on its first touch: with 64 KiB chunks, a program with
 * 25,000 locks spread over every shard filled 40 % of its chunks and faulted in three large
 * pages (6 MiB zeroed, 1-2 ms, more when the kernel must compact for them), now two. */
#define SLAB_CHUNK ((size_t)16 * 1024)
#define SIDES_CHUNK ((size_t)4096)      /* side records a shard takes at a time */

/* A slot keeps the address beside the entry, so a probe passes other locks' slots without
 * touching their entries (each would be a cache miss). */
typedef struct slot {
    const void *_Atomic addr;  /* NULL = free */
    lt_lock *_Atomic lock;
} slot;

/* A table: 2^bits slots of mapped memory. Page-aligned, so a shard keeps the size in the low
 * bits of the address (a table word): a reader gets both in one load, and a table is whole
 * pages (a header beside the slots would take one page more, and its page fault). */
typedef struct table {
    slot *slot;
    unsigned bits;
} table;
#define TABLE_BITS_MASK ((uintptr_t)63)

typedef struct shard {
    lt_spin lock;
    _Atomic uintptr_t table;   /* its table word; 0 until the shard's first lock */
    size_t live;               /* entries in the table, destroyed ones included */
    lt_lock *free_list;        /* linked through addr: a reused entry keeps its gen, so no
                                  lt_pool */
    char *slab;                /* unused zeroed entries: slab_left bytes from here */
    size_t slab_left;
    char *sides;               /* unused side records (lt_shadow_side): sides_left bytes */
    size_t sides_left;
    char pad[64];              /* keep shards on separate cache lines */
} shard;

static shard shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = LT_SPIN_INIT(LT_RANK_SHADOW)}};

/* Fibonacci hashing: keys at a regular stride spread evenly over the top bits. */
static uint64_t fib_hash(uintptr_t key)
{
    return key * 0x9E3779B97F4A7C15ull;
}

/* All 64 bits: a table's home for the key is its top bits. The page's hash places the page,
 * and the lock's 4-byte slot in the page is added at 1/1024 of the table a slot: a page's
 * locks lie across the whole table in address order, so a walk over an array of locks walks
 * the table forward at a fixed stride, which the hardware prefetches (a random home a lock
 * missed the cache at every lookup: 83 % of probe's time in `stressbench groups`, 25,000 live
 * locks), and other pages' locks fall between them at the table's load, as random homes
 * would. In a table of fewer than 1,024 slots the slots of a page share homes, 1,024 / its
 * size each. The page's hash leaves out its top bits: they chose the shard (shard_of), alike
 * in one table. */
static uint64_t addr_hash(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    return (fib_hash(a >> 12) << SHARD_BITS) + ((uint64_t)(a & 4095) >> 2 << 54);
}

/* The shard of a lock is its 4 KiB page's: locks side by side (an array of them, objects
 * made one after the other) get their entries from one slab, in the order they are made, so
 * a program that walks its locks in order walks the entries in order too, and threads that
 * make locks in memory of their own rarely share a shard. */
static shard *shard_of(const void *addr)
{
    return &shards[fib_hash((uintptr_t)addr >> 12) >> (64 - SHARD_BITS)];
}

static table table_of(uintptr_t word)
{
    return (table){(slot *)(word & ~TABLE_BITS_MASK), (unsigned)(word & TABLE_BITS_MASK)};
}

static size_t slot_mask(table t)
{
    return ((size_t)1 << t.bits) - 1;
}

static size_t home(table t, uint64_t h)
{
    return (size_t)(h >> (64 - t.bits));
}

/* ------------------------------------------------------------------------------------------
 * The heap: memory for slabs and tables, never given back. Faulted in a 4 KiB page at a
 * time, a program's thousands of locks cost more in page faults than in their calls
 * (`stressbench groups`, 25,000 locks: ~1,100 faults in shadow.c, each 7-20 us on a virtual
 * machine, against ~250 instructions an init). Past its first LT_LARGE_FROM bytes it is taken
 * from the large pages of lt_large_alloc.
 * ---------------------------------------------------------------------------------------- */
static _Atomic size_t heap_used; /* bytes handed out, the small ones first */

/* size bytes (a multiple of the page size) of zeroed, page-aligned memory; NULL when out of
 * memory. */
static void *heap_alloc(size_t size)
{
    size_t at = atomic_fetch_add_explicit(&heap_used, size, memory_order_relaxed);
    return at >= LT_LARGE_FROM ? lt_large_alloc(size) : lt_map(size);
}

/* ------------------------------------------------------------------------------------------
 * The table.
 * ---------------------------------------------------------------------------------------- */

/* Lock-free: the entry filed under addr, live or destroyed; NULL when none is seen. Only a
 * hint, like probe's answer: its key, read under its claim, says whether it still is. */
static inline lt_lock *probe_filed(const shard *s, const void *addr, uint64_t h)
{
    uintptr_t word = atomic_load_explicit(&s->table, memory_order_acquire);
    if (!word)
        return NULL;
    table t = table_of(word);
    for (size_t i = home(t, h), n = 0; n <= slot_mask(t); i = (i + 1) & slot_mask(t), n++) {
        const void *at = atomic_load_explicit(&t.slot[i].addr, memory_order_acquire);
        if (!at)
            return NULL;
        if (at == addr)
            return atomic_load_explicit(&t.slot[i].lock, memory_order_acquire);
    }
    return NULL;
}

/* Lock-free: l when it is the live entry of addr, with its gen, from a consistent snapshot
 * (gen, addr, gen again): only one entry names an address at a time, so the snapshot alone
 * says so, wherever l was found. NULL otherwise. */
static inline lt_lock *live_as(lt_lock *l, const void *addr, uint32_t *gen)
{
    uint32_t g = atomic_load_explicit(&l->gen, memory_order_acquire);
    const void *named = atomic_load_explicit(&l->addr, memory_order_acquire);
    if (named != lt_addr_named(addr) || atomic_load_explicit(&l->gen, memory_order_relaxed) != g)
        return NULL;
    *gen = g;
    return l;
}

/* Lock-free: the live entry of addr and its gen; NULL when not found (which a concurrent
 * removal can make wrong: ask again under the lock). Not a destroyed entry (addr NULL): the
 * slot's address and entry are two loads, and while later entries of a chain move back the
 * entry read may be another address's, which only its own addr tells, or none at all, where
 * the chain's last slot was emptied between the two. */
static inline lt_lock *probe(const shard *s, const void *addr, uint64_t h, uint32_t *gen)
{
    lt_lock *l = probe_filed(s, addr, h);
    /* none filed, or its slot emptied since its address was read (remove_at) */
    return l ? live_as(l, addr, gen) : NULL;
}

/* Under the shard's lock: the slot of addr, or the free slot ending its probe chain. */
static slot *find_slot(table t, const void *addr, uint64_t h)
{
    size_t i = home(t, h);
    const void *at;
    while ((at = atomic_load_explicit(&t.slot[i].addr, memory_order_relaxed)) != NULL &&
           at != addr)
        i = (i + 1) & slot_mask(t);
    return &t.slot[i];
}

/* Under the shard's lock: readers see the entry no later than the address. */
static void slot_set(slot *to, const void *addr, lt_lock *l)
{
    atomic_store_explicit(&to->lock, l, memory_order_release);
    atomic_store_explicit(&to->addr, addr, memory_order_release);
}

/* Under the shard's lock: empties slot i, moving later entries of its probe chain back where
 * their home allows it, so every chain stays unbroken without tombstones. */
static void remove_at(table t, size_t i)
{
    size_t mask = slot_mask(t);
    const void *addr;
    for (size_t j = (i + 1) & mask;
         (addr = atomic_load_explicit(&t.slot[j].addr, memory_order_relaxed)) != NULL;
         j = (j + 1) & mask) {
        size_t k = home(t, addr_hash(addr));
        int stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
        if (!stays) {
            slot_set(&t.slot[i], addr, atomic_load_explicit(&t.slot[j].lock,
                                                            memory_order_relaxed));
            i = j;
        }
    }
    slot_set(&t.slot[i], NULL, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Entries.
 * ---------------------------------------------------------------------------------------- */

/* A claim holds the fork epoch it was taken in: a child counts a new one, and a claim from
 * before the fork belongs to a thread the child does not have, so the child takes it over. */
static _Atomic uint32_t claim_epoch = 1;

/* Claims are words of a table, by entry: in the entries' cold records, each init of a home
 * (`stressbench groups`: 25,000 at once) touched its cold page, 4 MB of zeroed large pages for
 * 1 MB of mutexes and their collapse, and a line a lifecycle. Entries 512 KB of homes (or
 * 256 KB of slabs) apart share a word: a claim is held for a few stores and no thread holds
 * two, so sharing one is a short wait (claim) or a claim found busy (claim_try), which every
 * caller already takes as a possibility. */
#define CLAIM_BITS 14
static _Atomic uint32_t claims[1u << CLAIM_BITS];

static _Atomic uint32_t *claim_of(const lt_lock *l)
{
    return &claims[((uintptr_t)l >> LT_HOME_SLOT_SHIFT) & ((1u << CLAIM_BITS) - 1)];
}

/* The claim of l, or 0 when another thread holds it now. */
static int claim_try(lt_lock *l)
{
    uint32_t now = atomic_load_explicit(&claim_epoch, memory_order_relaxed), seen = 0;
    _Atomic uint32_t *c = claim_of(l);
    if (atomic_compare_exchange_strong_explicit(c, &seen, now, memory_order_acquire,
                                                memory_order_relaxed))
        return 1;
    return seen != now && atomic_compare_exchange_strong_explicit(
                              c, &seen, now, memory_order_acquire, memory_order_relaxed);
}

/* Under the shard's lock: waits out a claim held by another thread (a few stores). */
static void claim(lt_lock *l)
{
    for (unsigned round = 0; !claim_try(l);)
        lt_spin_backoff(&round);
}

static void claim_drop(lt_lock *l)
{
    atomic_store_explicit(claim_of(l), 0, memory_order_release);
}

/* New entries start at gen 1 so a zeroed cache slot or held entry never matches. A shard's
 * slab starts as many entries into its first chunk as the shard's index: chunks are
 * page-aligned (and SLAB_CHUNK apart), so without that the first entries of all shards would
 * share one set of the L1 and L2 caches, and a program with a few dozen locks would miss the
 * cache on every acquisition (cachegrind: 0.95 L1 misses per lockbench pair). */
/* A slab entry: its line, the hot record then the cold one (lt_lock_cold_of). */
typedef struct slab_entry {
    _Alignas(64) lt_lock hot;
    lt_lock_cold cold;
} slab_entry;
_Static_assert(sizeof(slab_entry) == 64, "a slab entry is one line");

/* A slab chunk's first line, before its entries: the chunk made before it, so that
 * lt_shadow_each finds every entry ever handed out without a shard's lock. */
typedef struct slab_head {
    _Alignas(64) struct slab_head *next;
} slab_head;
_Static_assert(sizeof(slab_head) == sizeof(slab_entry), "a chunk's head takes an entry's room");

static slab_head *_Atomic slab_chunks; /* the newest chunk; pushed by any shard */

static void slab_chunk_push(slab_head *h)
{
    slab_head *top = atomic_load_explicit(&slab_chunks, memory_order_relaxed);
    do
        h->next = top;
    while (!atomic_compare_exchange_weak_explicit(&slab_chunks, &top, h, memory_order_release,
                                                  memory_order_relaxed));
}

static lt_lock *entry_alloc(shard *s)
{
    lt_spin_assert_mine(&s->lock); /* (the free list and the slab are the shard's) */
    lt_lock *l = s->free_list;
    if (l) {
        s->free_list = (lt_lock *)~(uintptr_t)atomic_load_explicit(&l->addr,
                                                                   memory_order_relaxed);
        return l;
    }
    if (s->slab_left < sizeof(slab_entry)) {
        size_t skip = sizeof(slab_head) +
                      (s->slab ? 0 : (size_t)(s - shards) * sizeof(slab_entry));
        char *chunk = heap_alloc(SLAB_CHUNK);
        if (!chunk)
            return NULL;
        slab_chunk_push((slab_head *)(void *)chunk);
        s->slab = chunk + skip;
        s->slab_left = SLAB_CHUNK - skip;
    }
    l = (lt_lock *)(void *)s->slab;
    s->slab += sizeof(slab_entry);
    s->slab_left -= sizeof(slab_entry);
    atomic_store_explicit(&l->gen, 1, memory_order_relaxed); /* published with its slot */
    return l;
}

/* Home entries (lt_internal.h: lt_shadow_home). Zeroed, a home names no lock (addr NULL) and
 * is vacant; it is taken under its claim, by the shard of the address it then names, and
 * freed as other entries are, but vacant again instead of on a free list: the next lock to
 * take it may be of any shard. Like the slabs' entries, homes are never unmapped, so the
 * (entry, gen) pairs kept of them go stale, never dangle. */
#ifdef __APPLE__
#define HOMES_ALIGN 4096 /* no large pages to align to */
#else
#define HOMES_ALIGN LT_LARGE_PAGE /* so that its large pages are whole: home_range_count */
#endif
_Alignas(HOMES_ALIGN) lt_home_area lt_shadow_homes;


/* The pages of homes a first sighting found, by bit: hot records, and their cold ones where
 * each identity writes them (home_cold_used; lt_home_area). Homes are zeroed memory the system
 * makes a page at a time, at the first touch: ~490 of the ~1,000 page faults of the first
 * round of `stressbench groups` (25,000 mutexes initialised in order), which is most of its
 * time. A program that sights locks page after page has as many pages ahead made memory, of
 * both, as it has seen in a row behind (from two, up to HOME_AHEAD), by one call each: one
 * fault in 17 pages then. (In a VM that traps the first touch of each page anyway, as this
 * machine's does, that saves the guest's part of a fault, a third of it.) Others touch them
 * as before (a few locks cost no pages ahead). */
#define HOME_PAGES (sizeof lt_shadow_homes.hot / 4096)
#define HOME_AHEAD 16
static _Atomic uint64_t home_pages[HOME_PAGES / 64];

static int home_page_seen(size_t page)
{
    return (atomic_load_explicit(&home_pages[page / 64], memory_order_relaxed) >> page % 64) & 1;
}

/* Pages seen in each large page of the home area, of hot records and of the cold ones that
 * are counted (home_cold_used). One that reaches HOME_LARGE_AT of its 512 is being filled by a
 * program with thousands of locks side by side (`groups`: 245 pages of hot records), and
 * becomes a large page then: its other pages are no first touch each. So does one that such a
 * run of pages enters from a large one before it (groups' homes may span two). A program's
 * first pages of homes, and all of few or scattered locks, stay small pages. */
#define HOME_LARGE_AT 32 /* not LT_LARGE_FROM's 16 pages: a page of homes may stand for one
                            lock, where a page of a pool holds dozens of objects */
#define HOME_RANGES (sizeof lt_shadow_homes / LT_LARGE_PAGE + 1)
static _Atomic uint32_t home_range_pages[HOME_RANGES];

/* The large pages of homes that are to become large pages, by bit (home_ranges_settle). */
static _Atomic uint64_t home_ranges_due;
_Static_assert(HOME_RANGES <= 64, "home_ranges_due has a bit for each large page of homes");

/* at: the hot or cold record page of homes numbered page, just seen. */
static void home_range_count(const char *at, size_t page)
{
    size_t r = (uintptr_t)at / LT_LARGE_PAGE - (uintptr_t)&lt_shadow_homes / LT_LARGE_PAGE;
    uint32_t seen = atomic_fetch_add_explicit(&home_range_pages[r], 1, memory_order_relaxed);
    if (seen == HOME_LARGE_AT - 1 ||
        (seen == 0 && r && page && home_page_seen(page - 1) &&
         atomic_load_explicit(&home_range_pages[r - 1], memory_order_relaxed) >= HOME_LARGE_AT))
        atomic_fetch_or_explicit(&home_ranges_due, (uint64_t)1 << r, memory_order_relaxed);
}

/* The large pages of homes that became due are made so (lt_platform_collapse), unless the
 * calling thread holds a lock: the call waits in the kernel for every CPU to drain its page
 * lists and for a large page (`lazy`: 0.3-42 ms of wall time, with 1-7 of the program's
 * locks held, for which its other threads waited meanwhile). Then the next sighting of a new
 * page by a thread that holds none makes them, before that page's first touch; a program
 * whose threads never sight one holding none keeps its small pages there. */
static void home_ranges_settle(void)
{
    const lt_thread *t = lt_tls.self;
    if (!atomic_load_explicit(&home_ranges_due, memory_order_relaxed) || (t && t->nheld))
        return;
    uint64_t due = atomic_exchange_explicit(&home_ranges_due, 0, memory_order_relaxed);
    uintptr_t first = (uintptr_t)&lt_shadow_homes / LT_LARGE_PAGE;
    for (; due; due &= due - 1)
        lt_platform_collapse((void *)((first + (uintptr_t)__builtin_ctzll(due)) * LT_LARGE_PAGE),
                             LT_LARGE_PAGE);
}

/* Whether a lock's cold record is written at each of its identities: with classes (klass).
 * Otherwise few locks' are (a writer that blocks, an orphan, an annotation), a page at a
 * time as they come, and a program with thousands of locks has no page of cold homes made
 * memory ahead, nor its 2 MB collapsed, for none used. */
static int home_cold_used(void)
{
    return lt_cfg.classes != LT_CLASSES_OFF;
}

static void home_page_mark(size_t page)
{
    uint64_t bit = (uint64_t)1 << page % 64;
    if (atomic_fetch_or_explicit(&home_pages[page / 64], bit, memory_order_relaxed) & bit)
        return;
    home_range_count((const char *)lt_shadow_homes.hot + page * 4096, page);
    if (home_cold_used())
        home_range_count((const char *)lt_shadow_homes.cold + page * 4096, page);
}

/* The claim words of the homes of `pages` pages from home l on (up to the table's end) are
 * made memory with those pages: each page of claims' 64 KB was a fault (~12 us on this VM)
 * in `stressbench groups`' first round, 16 of the ~70 the tracer took there. */
static void claims_ahead(const lt_lock *l, size_t pages)
{
    _Atomic uint32_t *c = claim_of(l);
    size_t n = pages * (4096 / sizeof *l), left = (size_t)(claims + (1u << CLAIM_BITS) - c);
    lt_populate(c, (n < left ? n : left) * sizeof *c);
}

/* l, the home of an address about to be looked up or filed: its page is seen, and when the
 * pages behind it were, as many ahead are made memory, hot and cold records
 * (lt_platform_populate leaves what is there). Before the shard's lock is taken: a call
 * that makes 33 pages memory would keep the shard's other threads waiting. */
static void home_pages_ahead(const lt_lock *l)
{
    size_t page = (size_t)(l - lt_shadow_homes.hot) / (4096 / sizeof *l), ahead = 0;
    if (home_page_seen(page))
        return;
    home_page_mark(page);
    while (ahead < HOME_AHEAD && ahead < page && home_page_seen(page - 1 - ahead))
        ahead++;
    int run = ahead >= 2; /* pages behind it were seen in a row */
    if (run && ahead > HOME_PAGES - 1 - page)
        ahead = HOME_PAGES - 1 - page;
    for (size_t k = 1; run && k <= ahead; k++)
        home_page_mark(page + k);
    home_ranges_settle();
    if (!run)
        return;
    lt_platform_populate((char *)lt_shadow_homes.hot + (page + 1) * 4096, ahead * 4096);
    claims_ahead(lt_shadow_homes.hot + (page + 1) * (4096 / sizeof *l), ahead);
    if (home_cold_used())
        lt_platform_populate((char *)lt_shadow_homes.cold + page * 4096, (ahead + 1) * 4096);
}

/* Every entry ever handed out (and some never handed out, zeroed), each to fn: the homes of
 * the pages seen (every home is taken on one, find_or_create), then the slab chunks. Without
 * a lock: entries are never unmapped, and the caller reads only what its own lock guards
 * (order.c's order_node, under the graph lock with its gate shut). */
void lt_shadow_each(void (*fn)(lt_lock *l, void *ctx), void *ctx)
{
    const size_t per = 4096 / sizeof(lt_lock);
    for (size_t page = 0; page < HOME_PAGES; page++) {
        if (!home_page_seen(page))
            continue;
        for (size_t i = 0; i < per; i++)
            fn(&lt_shadow_homes.hot[page * per + i], ctx);
    }
    for (slab_head *h = atomic_load_explicit(&slab_chunks, memory_order_acquire); h; h = h->next)
        for (slab_entry *e = (slab_entry *)(void *)(h + 1);
             (char *)e < (char *)h + SLAB_CHUNK; e++)
            fn(&e->hot, ctx);
}

/* Under the shard's lock of addr, which has no entry: its home, claimed, when vacant; NULL
 * when another lock has it (or the claim is busy: another shard's thread is taking it). */
static lt_lock *home_take(const void *addr)
{
    lt_lock *l = lt_shadow_home(addr);
    if (atomic_load_explicit(&l->addr, memory_order_relaxed) != NULL || !claim_try(l))
        return NULL;
    if (atomic_load_explicit(&l->addr, memory_order_relaxed) != NULL) { /* taken meanwhile */
        claim_drop(l);
        return NULL;
    }
    if (atomic_load_explicit(&l->gen, memory_order_relaxed) == 0) /* first used: see entry_alloc */
        atomic_store_explicit(&l->gen, 1, memory_order_relaxed);
    return l;
}

/* Under the shard's lock and l's claim: l, out of the table, is free for another address. */
static void entry_free(shard *s, lt_lock *l)
{
    lt_spin_assert_mine(&s->lock);
    if (lt_lock_is_home(l)) {
        atomic_store_explicit(&l->addr, NULL, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&l->addr, (const void *)~(uintptr_t)s->free_list,
                          memory_order_relaxed);
    s->free_list = l;
}

/* Clears everything an identity owns, then names addr: a lock-free reader that finds the
 * entry by its addr sees it cleared (the release store orders the plain ones before it: an
 * atomic read-modify-write here would wait for every store the thread has in flight, which
 * with thousands of locks are cache misses). All of it is in the hot record: what the cold one
 * holds of an identity needs no clearing (lt_lock_cold). `first` and `partial`: where the
 * lock is first seen, when the caller knows it already (first_seen); 0 = not yet. The caller
 * bumps or keeps gen. */
static inline __attribute__((always_inline)) void entry_clear(lt_lock *l, const void *addr,
                                                              uint32_t first, int partial)
{
    atomic_store_explicit(&l->writer, 0, memory_order_relaxed);
    l->first_stack = first;
    l->first_partial = (uint8_t)partial;
    l->orphan_mode = LT_MODE_NONE;
    l->api = LT_API_PTHREAD;
    atomic_store_explicit(&l->addr, lt_addr_named(addr), memory_order_release);
}

/* A destroyed entry stays in its slot, filed under its key, and names no lock. (A free entry
 * too names none, but is in no slot.) */
static int destroyed(const lt_lock *l)
{
    return (intptr_t)atomic_load_explicit(&l->addr, memory_order_relaxed) < 0;
}

/* The address l is filed under: its lock's (live), its key (destroyed); for a free entry the
 * next free one, an entry's address, which no lock has. NULL for a new entry. */
static const void *key_of(const lt_lock *l)
{
    uintptr_t a = (uintptr_t)atomic_load_explicit(&l->addr, memory_order_acquire);
    return (const void *)((intptr_t)a < 0 ? ~a : a & ~LT_ADDR_NAMED);
}

/* Under the shard's lock: the entry of addr, its home or one filed in s's table; NULL when
 * it has none. */
static lt_lock *find_locked(const shard *s, const void *addr, uint64_t h)
{
    lt_lock *home = lt_shadow_home(addr);
    if (key_of(home) == addr)
        return home;
    uintptr_t word = atomic_load_explicit(&s->table, memory_order_relaxed);
    return word ? atomic_load_explicit(&find_slot(table_of(word), addr, h)->lock,
                                       memory_order_relaxed)
                : NULL;
}

/* Under l's claim, l filed under addr: addr names a lock again (a destroyed entry: the gen
 * moved on at destroy; *revived = 1), or, `renew`, a new one (a live entry, init of a known
 * lock). 0 when l is live and not to be renewed. Always inline, with entry_clear: an init of
 * a lock in its home (lt_shadow_reset) renews it, and the two calls were 10 of the ~175
 * instructions of such an init (`stressbench groups`). */
static inline __attribute__((always_inline)) int entry_renew(lt_lock *l, const void *addr,
                                                             int renew, int *revived)
{
    *revived = destroyed(l);
    if (!*revived) {
        if (!renew)
            return 0;
        lt_shadow_gen_bump(l);
    }
    entry_clear(l, addr, 0, 0);
    return 1;
}

/* Under the shard's lock: the entries destroy left in s's table (t) leave it, and their
 * addresses the lock map; one whose claim is busy stays (homes are in no table). 1 when they
 * were enough to bring the table down to 3/8 full: each purge that does not grow the table
 * then comes at least 1/8 of its slots of new entries after the last, which pays for its
 * walk over all of them. */
static int purge(shard *s, table t)
{
    for (size_t i = 0; i <= slot_mask(t);) {
        lt_lock *l = atomic_load_explicit(&t.slot[i].lock, memory_order_relaxed);
        if (!l || !destroyed(l) || !claim_try(l)) {
            i++;
            continue;
        }
        const void *addr = key_of(l);
        if (!destroyed(l)) { /* renewed before the claim */
            claim_drop(l);
            i++;
            continue;
        }
        remove_at(t, i); /* slot i now holds a later entry of its chain, or none: seen next */
        s->live--;
        entry_free(s, l);
        claim_drop(l);
        lt_lockmap_remove(addr);
    }
    return s->live * 8 <= (slot_mask(t) + 1) * 3;
}


/* Under the shard's lock: room in s's table for one more entry at a load of at most 1/2: the
 * destroyed entries purged, or a larger copy published for readers. 0 when out of memory
 * (tracking is then off). */
static int make_room(shard *s)
{
    uintptr_t word = atomic_load_explicit(&s->table, memory_order_relaxed);
    table t = table_of(word);
    if (word && ((s->live + 1) * 2 <= slot_mask(t) + 1 || purge(s, t)))
        return 1;
    table g = {NULL, word ? t.bits + 1 : TABLE_MIN_BITS};
    if (!(g.slot = heap_alloc(((size_t)1 << g.bits) * sizeof(slot))))
        return 0;
    for (size_t i = 0; word && i <= slot_mask(t); i++) {
        const void *addr = atomic_load_explicit(&t.slot[i].addr, memory_order_relaxed);
        if (addr)
            slot_set(find_slot(g, addr, addr_hash(addr)), addr,
                     atomic_load_explicit(&t.slot[i].lock, memory_order_relaxed));
    }
    atomic_store_explicit(&s->table, (uintptr_t)g.slot | g.bits, memory_order_release);
    return 1;
}

/* Finds or creates the entry, with its gen; *created says which. `renew`: a live entry
 * found gets a new identity too (init of a known lock). NULL only when out of memory. */
static lt_lock *find_or_create(const void *addr, int renew, int *created, uint32_t *gen)
{
    uint64_t h = addr_hash(addr);
    shard *s = shard_of(addr);
    *created = 0;
    home_pages_ahead(lt_shadow_home(addr));
    lt_spin_lock(&s->lock);
    lt_lock *l = find_locked(s, addr, h);
    if (l) {
        claim(l);
        entry_renew(l, addr, renew, created);
    } else if ((l = home_take(addr)) != NULL ||
               (make_room(s) && (l = entry_alloc(s)) != NULL)) {
        if (!lt_lock_is_home(l))
            claim(l); /* a thread that found it filed under another address may hold it */
        if (lt_lockmap_add(addr)) {
            entry_clear(l, addr, 0, 0);
            if (!lt_lock_is_home(l)) {
                slot_set(find_slot(table_of(atomic_load_explicit(&s->table,
                                                                 memory_order_relaxed)),
                                   addr, h),
                         addr, l);
                s->live++;
            }
            *created = 1;
        } else { /* its memory could not be followed */
            entry_free(s, l);
            claim_drop(l);
            l = NULL;
        }
    }
    if (l) {
        *gen = atomic_load_explicit(&l->gen, memory_order_relaxed);
        claim_drop(l);
    }
    lt_spin_unlock(&s->lock);
    return l;
}

/* The entry the thread's last lookups suggest for the next, or NULL. A slab hands out
 * entries side by side in the order their locks are first seen, and a page's locks share a
 * slab (shard_of): a program that made an array of locks and goes through it in order - at
 * init, lock and destroy - finds each next entry beside the last, and a thread cache of 512
 * slots does not hold the 25,000 locks of `stressbench groups`, whose lookups were each a
 * table probe. Only in a run of entries found side by side: a guess that misses is a cache
 * miss of its own (`stressbench lazy`, locks picked at random: +0.3 M D1 misses). The low
 * bits of shadow_last count down from 3 at each entry that does not follow the last, so a
 * run survives the jump to the next page's locks (another shard's slab), where stopping at
 * once cost a second table probe.
 * The guess is only read: every 4 KiB of a slab chunk is entries (or zeros, never an
 * address), and entries are never unmapped, so whatever the entry is now, its own fields say
 * whether it names addr (live_as, key_of). Within the last one's page only: the next page
 * may be another mapping's. */
static inline lt_lock *predicted(const lt_thread *t)
{
    uintptr_t last = t->shadow_last;
    lt_lock *next = &((slab_entry *)(last & ~(uintptr_t)3) + 1)->hot;
    return last & 3 && (uintptr_t)next & 4095 ? next : NULL;
}

/* The guess was right, or the entry is a home: the program may go through its locks in
 * order, and the entries a few ahead are fetched now, to be written: init and destroy of a
 * slab entry claim it with a compare-and-swap, which holds up everything after it until its
 * line is there. */
static inline void run_ahead(const lt_lock *l)
{
    __builtin_prefetch((const char *)l + 256, 1); /* 4 slab entries, ~6 homes of mutexes */
}

/* init of a lock whose entry is in the table, live or destroyed, without the shard's lock:
 * the entry renewed, with its gen; NULL when there is none or its claim is busy (then
 * find_or_create). */
static lt_lock *renew_filed(const lt_thread *t, const void *addr, int *revived,
                            uint32_t *gen)
{
    lt_lock *l;
    if ((l = predicted(t)) != NULL && key_of(l) == addr)
        run_ahead(l);
    else
        l = probe_filed(shard_of(addr), addr, addr_hash(addr));
    if (!l || key_of(l) != addr || !claim_try(l))
        return NULL;
    if (key_of(l) != addr) { /* removed (and maybe filed again) before the claim */
        claim_drop(l);
        return NULL;
    }
    entry_renew(l, addr, 1, revived);
    *gen = atomic_load_explicit(&l->gen, memory_order_relaxed);
    claim_drop(l);
    return l;
}

/* The thread's cache slot of addr names (l, gen) from now on, and l is the last entry found
 * (predicted). */
static void cache_put(lt_thread *t, const void *addr, lt_lock *l, uint32_t gen)
{
    lt_cache_slot *slot = &t->cache[lt_addr_hash(addr, LT_CACHE_BITS)];
    slot->addr = addr;
    slot->lock = l;
    slot->gen = gen;
    uintptr_t was = t->shadow_last, run = was & 3;
    run = l == &((slab_entry *)(was & ~(uintptr_t)3) + 1)->hot ? 3 : run ? run - 1 : 0;
    t->shadow_last = (uintptr_t)l | run;
}


/* The lock l is new, first seen at the call (ra, cfa): recorded as an acquisition is
 * (lt_stack_site), where the lock was made (lt_shadow_reset) or first used. Locks that are
 * never made by a call (static initialisers, zeroed memory) are first seen by the thousand
 * in some programs, each a full unwind otherwise (`stressbench lazy`: 16 K unwinds, 15 % of
 * its samples). */
static __attribute__((noinline)) lt_lock *first_seen_new(lt_thread *t, lt_lock *l,
                                                        uintptr_t ra, uintptr_t cfa)
{
    int partial;
    l->first_stack = lt_stack_site(t, ra, cfa, &partial);
    l->first_partial = (uint8_t)partial;
    return l;
}

/* Returns l. (Its common case inline, a lazy stack whose walk holds with an id; the rest out
 * of line, a tail call, so that lt_shadow_reset of a home needs no frame.) */
static inline lt_lock *first_seen(lt_thread *t, lt_lock *l, uintptr_t ra, uintptr_t cfa)
{
    uint32_t id = lt_cfg.stacks != LT_STACKS_FULL ? lt_stack_site_held(t, ra, cfa) : 0;
    if (lt_unlikely(!id))
        return first_seen_new(t, l, ra, cfa);
    l->first_stack = id;
    l->first_partial = 1;
    return l;
}

/* lt_shadow_lookup of an address the table has no live entry for. */
static __attribute__((noinline)) lt_lock *lookup_locked(lt_thread *t, const void *addr,
                                                        uintptr_t ra, uintptr_t cfa)
{
    int created;
    uint32_t gen;
    lt_lock *l = find_or_create(addr, 0, &created, &gen);
    if (!l) {
        lt_report_out_of_memory(); /* the table could not grow */
        return NULL;
    }
    if (created)
        first_seen(t, l, ra, cfa);
    if (!lt_lock_is_home(l))
        cache_put(t, addr, l, gen);
    return l;
}

/* The slow path of lt_shadow_get: the table, then the thread's cache slot. The probe is
 * inline and the rest out of line, so that a lookup the cache misses (a thread that goes
 * through thousands of locks misses it at each) costs the probe and little more. */
lt_lock *lt_shadow_lookup(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa)
{
    uint32_t gen;
    lt_lock *l = predicted(t);
    if (l && live_as(l, addr, &gen))
        run_ahead(l);
    else
        l = probe(shard_of(addr), addr, addr_hash(addr), &gen);
    if (lt_unlikely(!l))
        return lookup_locked(t, addr, ra, cfa);
    cache_put(t, addr, l, gen);
    return l;
}

/* init: the address becomes a new lock, first seen at the call (ra, cfa) (first_seen): a
 * program that makes locks by the thousand would otherwise spend most of its init calls
 * unwinding. A lock is mostly used soon after its init: the thread's cache names it from
 * here. */
static __attribute__((noinline)) lt_lock *reset_filed(lt_thread *t, const void *addr,
                                                       uintptr_t ra, uintptr_t cfa)
{
    int created;
    uint32_t gen;
    lt_lock *l = renew_filed(t, addr, &created, &gen);
    if (!l && !(l = find_or_create(addr, 1, &created, &gen)))
        return NULL;
    if (!lt_lock_is_home(l)) /* a home needs none: lt_shadow_get looks there first */
        cache_put(t, addr, l, gen);
    first_seen(t, l, ra, cfa);
    return l;
}

/* (A lock whose entry is its home - only this call changes it now, see the top - renews it
 * here, with where it is first seen known before the entry names it, in the common case:
 * first_seen's stores once more after entry_clear's were 2 of its instructions; the rest,
 * reset_filed, out of line: its results through memory made the home's case cost ~20
 * instructions more in `stressbench groups`.) */
lt_lock *lt_shadow_reset(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa)
{
    lt_lock *l = lt_shadow_home(addr);
    uintptr_t a = (uintptr_t)atomic_load_explicit(&l->addr, memory_order_acquire);
    uintptr_t named = (uintptr_t)lt_addr_named(addr);
    if (lt_unlikely(a != named && ~a != (uintptr_t)addr)) /* not filed under addr */
        return reset_filed(t, addr, ra, cfa);
    run_ahead(l);
    if (a == named) /* live: renewed (entry_renew, with the word loaded once) */
        lt_shadow_gen_bump(l);
    uint32_t first = lt_cfg.stacks != LT_STACKS_FULL ? lt_stack_site_held(t, ra, cfa) : 0;
    entry_clear(l, addr, first, 1); /* (first 0: first_seen_new records it) */
    return lt_likely(first) ? l : first_seen_new(t, l, ra, cfa);
}

/* The entry of addr, live or destroyed (it then names no lock); never creates one. An entry
 * the table shows filed under addr (its key, as renew_filed reads it) is the answer without
 * the shard's lock: a free of memory that held locks finds each destroyed one so. */
lt_lock *lt_shadow_find(const void *addr)
{
    uint64_t h = addr_hash(addr);
    shard *s = shard_of(addr);
    lt_lock *l = lt_shadow_home(addr);
    if (key_of(l) == addr)
        return l;
    l = probe_filed(s, addr, h);
    if (l && key_of(l) == addr)
        return l;
    lt_spin_lock(&s->lock);
    l = find_locked(s, addr, h);
    lt_spin_unlock(&s->lock);
    return l;
}

/* Under the shard's lock: the entry of addr, live or destroyed, leaves the table (a home:
 * is vacant); the entry is recycled. 0 when addr had none. */
static int remove_locked(shard *s, const void *addr, uint64_t h)
{
    lt_lock *l = lt_shadow_home(addr);
    if (key_of(l) != addr) {
        uintptr_t word = atomic_load_explicit(&s->table, memory_order_relaxed);
        table t = table_of(word);
        slot *at = word ? find_slot(t, addr, h) : NULL;
        if (!(l = at ? atomic_load_explicit(&at->lock, memory_order_relaxed) : NULL))
            return 0;
        remove_at(t, (size_t)(at - t.slot));
        s->live--;
    }
    claim(l);
    if (!destroyed(l))
        lt_shadow_end_identity(l, addr);
    entry_free(s, l);
    claim_drop(l);
    return 1;
}

static __attribute__((noinline)) void destroy_filed(const void *addr, lt_lock *l)
{
    if (l && claim_try(l)) {
        int live = atomic_load_explicit(&l->addr, memory_order_relaxed) == lt_addr_named(addr);
        if (live) /* and so filed under addr: only a claim changes addr */
            lt_shadow_end_identity(l, addr);
        claim_drop(l);
        if (live)
            return;
    }
    shard *s = shard_of(addr);
    lt_spin_lock(&s->lock);
    if (remove_locked(s, addr, addr_hash(addr)))
        lt_lockmap_remove(addr); /* under the shard's lock: an entry made meanwhile keeps its bit */
    lt_spin_unlock(&s->lock);
}

/* destroy of the lock whose entry the caller found (l; NULL when it had none). A live home
 * only this call changes now (see the top); the rest out of line (destroy_filed). */
void lt_shadow_destroy(const void *addr, lt_lock *l)
{
    if (lt_likely(l && lt_lock_is_home(l) &&
                  atomic_load_explicit(&l->addr, memory_order_relaxed) == lt_addr_named(addr)))
        lt_shadow_end_identity(l, addr);
    else
        destroy_filed(addr, l);
}

/* Their memory is released: the addresses stop naming locks. A run of them in one shard (a
 * page's locks, listed in address order) is forgotten under one taking of its lock. They stay
 * in the lock map: the caller clears the map over the whole range released
 * (lt_lockmap_clear), once. */
void lt_shadow_forget(const void *const *addrs, size_t n)
{
    for (size_t i = 0; i < n;) {
        shard *s = shard_of(addrs[i]);
        lt_spin_lock(&s->lock);
        do
            remove_locked(s, addrs[i], addr_hash(addrs[i]));
        while (++i < n && shard_of(addrs[i]) == s);
        lt_spin_unlock(&s->lock);
    }
}

/* A shard's lock guards the side records it hands out, and the making of one: an entry's side
 * record is always made under the same shard's (the entry's address chooses it), so two
 * threads never both make one. Records come from the shadow's heap a page at a time. */
lt_lock_side *lt_shadow_side(lt_lock *l)
{
    lt_lock_side *_Atomic *side = &lt_lock_cold_of(l)->side;
    lt_lock_side *x = atomic_load_explicit(side, memory_order_acquire);
    if (lt_likely(x != NULL))
        return x;
    shard *s = &shards[fib_hash((uintptr_t)l) >> (64 - SHARD_BITS)];
    lt_spin_lock(&s->lock);
    x = atomic_load_explicit(side, memory_order_relaxed);
    if (!x && s->sides_left < sizeof *x && (s->sides = heap_alloc(SIDES_CHUNK)) != NULL)
        s->sides_left = SIDES_CHUNK;
    if (!x && s->sides_left >= sizeof *x) {
        x = (lt_lock_side *)(void *)s->sides;
        s->sides += sizeof *x;
        s->sides_left -= sizeof *x;
        atomic_store_explicit(side, x, memory_order_release);
    }
    lt_spin_unlock(&s->lock);
    return x;
}

/* The annotation names the gen it is made in, which is what ends it (lt_lock_annotated):
 * init, which makes a new identity, does not touch the side record. */
void lt_shadow_annotate(lt_lock *l, const void *object, locktrace_describe_fn describe)
{
    lt_lock_side *x = object || describe
                          ? lt_shadow_side(l)
                          : atomic_load_explicit(&lt_lock_cold_of(l)->side, memory_order_acquire);
    if (x) {
        x->object = object;
        x->describe = describe;
        atomic_store_explicit(&x->gen, atomic_load_explicit(&l->gen, memory_order_relaxed),
                              memory_order_release);
    }
}

/* A fork made alone takes no shard lock (lt_spin_fork) and needs no new claim epoch: claims
 * are held inside the tracer, where no thread was (its only one outside), and the count's
 * page is not copied. */
LT_FORK_PATH void lt_shadow_fork(lt_fork_phase phase)
{
    if (lt_fork_alone())
        return;
    if (phase == LT_FORK_CHILD)
        atomic_fetch_add_explicit(&claim_epoch, 1, memory_order_relaxed);
    for (int i = 0; i < SHARDS; i++)
        lt_spin_fork(&shards[phase == LT_FORK_PREPARE ? i : SHARDS - 1 - i].lock, phase);
}
