/*
 * order.c - the lock-order graph over lock instances, and lock-order inversions.
 *
 * A node is one lock identity, (shadow entry, gen): init, destroy and a reused address give
 * a new node, and a node whose entry has moved on to another gen is skipped, so no edge ever
 * outlives its lock. An edge A -> B, labelled with the modes, says B was acquired (not by a
 * trylock) while A was held; it keeps the stacks and the thread of its first occurrence.
 *
 * Cost: after each acquisition the thread looks up (held -> new) for the locks it holds, in a
 * per-thread direct-mapped cache, then in the global edge table without a lock (edges are
 * immutable and published with a release store). Only an edge nobody has made before takes
 * the graph lock; it is inserted and the search for a cycle through it runs there. Edges are
 * made from the ORDER_DIRECT most recently taken locks; older ones reach the new lock through
 * them (A -> B -> C), which finds every cycle of exclusive locks.
 *
 * A cycle can deadlock only if every lock on it can block: at each lock the mode one thread
 * holds it in conflicts with the mode the previous thread requests. Read against read
 * conflicts only on writer-preferring rwlocks (a queued writer stalls the second reader).
 * Each cycle is reported once, keyed by its set of locks.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lt_internal.h"
#include "platform.h"

#define ORDER_DIRECT 16       /* held locks that get a direct edge to a new lock */
#define CACHE_SLOTS 256       /* per-thread cache of known edges; power of two */
#define EDGE_BUCKETS 65536    /* global edge table; power of two */
#define NODE_BUCKETS 16384

typedef struct node node;

typedef struct edge {
    lt_edge_info info;
    node *from, *to;
    uintptr_t key_from, key_to;     /* lt_lock pointer | mode, see edge_key */
    uint32_t gen_from, gen_to;
    struct edge *next_out;          /* from->out, under the graph lock */
    struct edge *_Atomic next_hash; /* the edge table's chain, read without a lock */
} edge;

struct node {
    lt_lock *lock;
    uint32_t gen;
    int exclusive_only;             /* mutex or spinlock: every request conflicts */
    int writer_pref;
    edge *out;
    uint32_t mark[2];               /* search stamps, by the mode the node is entered with */
    node *next_hash;
};

/* One known edge in a thread's cache; the modes ride in the pointers' low bits. */
typedef struct cache_slot {
    uintptr_t from, to;
    uint32_t gen_from, gen_to;
} cache_slot;

static __thread cache_slot cache[CACHE_SLOTS] LT_TLS;

static lt_spin graph_lock;
static edge *_Atomic edges[EDGE_BUCKETS];
static node *nodes[NODE_BUCKETS];
static uint32_t stamp;
static uint64_t *reported;          /* keys of reported cycles */
static size_t nreported, reported_cap;

/* ---------------------------------------------------------------------------------------- */

static uintptr_t edge_key(const lt_lock *l, lt_mode mode)
{
    return (uintptr_t)l | (uintptr_t)mode;
}

static size_t edge_hash(uintptr_t from, uintptr_t to, uint32_t gf, uint32_t gt)
{
    uint64_t h = (from ^ (to << 7) ^ ((uint64_t)gf << 32) ^ gt) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40);
}

static edge *edge_find(uintptr_t from, uintptr_t to, uint32_t gf, uint32_t gt, size_t hash)
{
    edge *e = atomic_load_explicit(&edges[hash % EDGE_BUCKETS], memory_order_acquire);
    for (; e; e = atomic_load_explicit(&e->next_hash, memory_order_acquire))
        if (e->key_from == from && e->key_to == to && e->gen_from == gf && e->gen_to == gt)
            return e;
    return NULL;
}

static int node_live(const node *n)
{
    return atomic_load_explicit(&n->lock->gen, memory_order_relaxed) == n->gen;
}

/* Finds or makes the node of (l, gen); under the graph lock. */
static node *node_get(lt_lock *l, uint32_t gen, lt_kind kind, const void *addr)
{
    size_t b = (((uintptr_t)l >> 4) ^ gen) % NODE_BUCKETS;
    for (node *n = nodes[b]; n; n = n->next_hash)
        if (n->lock == l && n->gen == gen)
            return n;
    node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->lock = l;
    n->gen = gen;
    n->exclusive_only = kind != LT_RWLOCK;
    n->writer_pref = kind == LT_RWLOCK && lt_platform_rwlock_prefers_writer(addr);
    n->next_hash = nodes[b];
    nodes[b] = n;
    return n;
}

/* Can a thread holding n in `held` block one requesting it in `req`? */
static int conflicts(const node *n, lt_mode held, lt_mode req)
{
    return n->exclusive_only || held == LT_MODE_WRITE || req == LT_MODE_WRITE || n->writer_pref;
}

/* ------------------------------------------------------------------------------------------
 * Cycle search: depth-first from the new edge's target back to its source, over live nodes,
 * entering each node with a request mode and leaving it only by an edge whose held mode
 * conflicts with it. The path is kept in a scratch array that grows (under the graph lock).
 * ---------------------------------------------------------------------------------------- */
typedef struct frame {
    node *at;
    lt_mode in;    /* the mode the previous edge requests `at` in */
    edge *via;     /* the edge that entered `at` */
    edge *next;    /* next outgoing edge to try */
} frame;

static frame *scratch;
static size_t scratch_cap;

static int scratch_fit(size_t n)
{
    if (n <= scratch_cap)
        return 1;
    size_t cap = scratch_cap ? scratch_cap * 2 : 256;
    frame *f = lt_platform_map(cap * sizeof *f);
    if (!f)
        return 0;
    if (scratch) {
        memcpy(f, scratch, scratch_cap * sizeof *f);
        lt_platform_unmap(scratch, scratch_cap * sizeof *f);
    }
    scratch = f;
    scratch_cap = cap;
    return 1;
}

static int enter_node(size_t depth, edge *via)
{
    node *n = via->to;
    int m = via->info.to_mode == LT_MODE_WRITE;
    if (n->mark[m] == stamp || !node_live(n) || !scratch_fit(depth + 1))
        return 0;
    n->mark[m] = stamp;
    scratch[depth] = (frame){n, via->info.to_mode, via, n->out};
    return 1;
}

/* Returns the cycle's length (edges, the new one first) and leaves its edges in scratch[].via
 * from index 0; 0 when the new edge closes no cycle that can deadlock. */
static size_t find_cycle(edge *added)
{
    node *src = added->from;
    size_t depth = 0;
    stamp++;
    if (!enter_node(depth++, added))
        return 0;
    while (depth > 0) {
        frame *f = &scratch[depth - 1];
        edge *e = f->next;
        if (!e) {
            depth--;
            continue;
        }
        f->next = e->next_out;
        if (!conflicts(f->at, e->info.from_mode, f->in))
            continue;
        if (e->to == src) {
            if (!conflicts(src, added->info.from_mode, e->info.to_mode) || !scratch_fit(depth + 1))
                continue;
            scratch[depth].via = e;
            return depth + 1;
        }
        if (enter_node(depth, e))
            depth++;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

/* A cycle is one inversion whichever edge closes it: keyed by the set of its locks. */
static uint64_t cycle_key(size_t n)
{
    uint64_t sum = 0, x = 0;
    for (size_t i = 0; i < n; i++) {
        const node *k = scratch[i].via->from;
        uint64_t h = ((uint64_t)(uintptr_t)k->lock ^ ((uint64_t)k->gen << 48)) * 0x9E3779B97F4A7C15ull;
        sum += h;
        x ^= h >> 17;
    }
    return sum ^ (x * 0xff51afd7ed558ccdull);
}

/* Records key; 0 when it was there already (or cannot be remembered: then it is reported
 * again rather than lost). */
static int first_report(uint64_t key)
{
    for (size_t i = 0; i < nreported; i++)
        if (reported[i] == key)
            return 0;
    if (nreported == reported_cap) {
        size_t cap = reported_cap ? reported_cap * 2 : 64;
        uint64_t *r = realloc(reported, cap * sizeof *r);
        if (!r)
            return 1;
        reported = r;
        reported_cap = cap;
    }
    reported[nreported++] = key;
    return 1;
}

/* Copies the cycle out of scratch (valid only under the lock); NULL when already reported. */
static const lt_edge_info **take_cycle(size_t n)
{
    if (!first_report(cycle_key(n)))
        return NULL;
    const lt_edge_info **out = malloc(n * sizeof *out);
    for (size_t i = 0; out && i < n; i++)
        out[i] = &scratch[i].via->info;
    return out;
}

static void report_inversion(const lt_edge_info **cycle, size_t n)
{
    lt_finding f = {.kind = LT_FIND_INVERSION};
    f.outcome = lt_cfg.inversion == LT_INVERSION_ABORT ? LT_OUTCOME_ABORT : LT_OUTCOME_CONTINUE;
    f.thread = cycle[0]->thread;
    f.edges = cycle;
    f.nedges = n;
    f.one_thread = 1;
    for (size_t i = 1; i < n; i++)
        f.one_thread &= cycle[i]->thread.tid == cycle[0]->thread.tid;
    lt_report(&f);
    free(cycle);
}

/* ------------------------------------------------------------------------------------------
 * New edges.
 * ---------------------------------------------------------------------------------------- */
typedef struct request {
    lt_event *ev;
    uint32_t gen;       /* the new lock's gen */
    uint32_t stack;     /* where it was taken: unwound once, for the first new edge */
} request;

static edge *edge_make(lt_held *h, request *r)
{
    edge *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    lt_edge_info *i = &e->info;
    lt_lock_ref_fill(&i->from, h->addr, (lt_kind)h->kind, h->lock);
    lt_lock_ref_fill(&i->to, r->ev->addr, r->ev->kind, r->ev->lock);
    i->from_mode = (lt_mode)h->mode;
    i->to_mode = r->ev->mode;
    i->from_stack = lt_held_stack(h, &i->from_partial);
    i->to_stack = r->stack ? r->stack : (r->stack = lt_stack_here(r->ev->ra));
    lt_thread_info_now(r->ev->self, &i->thread);
    e->key_from = edge_key(h->lock, (lt_mode)h->mode);
    e->key_to = edge_key(r->ev->lock, r->ev->mode);
    e->gen_from = h->gen;
    e->gen_to = r->gen;
    return e;
}

static void edge_publish(edge *e, size_t hash)
{
    e->next_out = e->from->out;
    e->from->out = e;
    edge *_Atomic *b = &edges[hash % EDGE_BUCKETS];
    atomic_store_explicit(&e->next_hash, atomic_load_explicit(b, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(b, e, memory_order_release);
}

/* Inserts the edge unless another thread just did; decides under the lock, reports after. */
static void edge_add(lt_held *h, request *r, size_t hash)
{
    edge *e = edge_make(h, r);
    if (!e)
        return;
    const lt_edge_info **cycle = NULL;
    size_t n = 0;
    lt_spin_lock(&graph_lock);
    if (!edge_find(e->key_from, e->key_to, e->gen_from, e->gen_to, hash)) {
        e->from = node_get(h->lock, h->gen, (lt_kind)h->kind, h->addr);
        e->to = node_get(r->ev->lock, r->gen, r->ev->kind, r->ev->addr);
        if (e->from && e->to) {
            edge_publish(e, hash);
            n = find_cycle(e);
            cycle = n ? take_cycle(n) : NULL;
            e = NULL;
        }
    }
    lt_spin_unlock(&graph_lock);
    free(e);
    if (cycle)
        report_inversion(cycle, n);
}

static void edge_seen(lt_held *h, request *r)
{
    uintptr_t from = edge_key(h->lock, (lt_mode)h->mode), to = edge_key(r->ev->lock, r->ev->mode);
    size_t hash = edge_hash(from, to, h->gen, r->gen);
    cache_slot *s = &cache[hash % CACHE_SLOTS];
    if (lt_likely(s->from == from && s->to == to && s->gen_from == h->gen && s->gen_to == r->gen))
        return;
    if (!edge_find(from, to, h->gen, r->gen, hash))
        edge_add(h, r, hash);
    *s = (cache_slot){from, to, h->gen, r->gen};
}

/* After a successful blocking or timed acquisition of ev->lock, before it joins the held
 * set: an edge from each of the most recent held locks that still are what they were. */
void lt_order_acquired(lt_event *ev)
{
    lt_thread *t = ev->self;
    if (t->nheld == 0 || ev->wait == LT_WAIT_TRY || lt_cfg.inversion == LT_INVERSION_OFF)
        return;
    request r = {ev, atomic_load_explicit(&ev->lock->gen, memory_order_relaxed), 0};
    uint32_t low = t->nheld > ORDER_DIRECT ? t->nheld - ORDER_DIRECT : 0;
    for (uint32_t i = t->nheld; i-- > low;) {
        lt_held *h = &t->held[i];
        if (h->lock != ev->lock &&
            atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen)
            edge_seen(h, &r);
    }
}

void lt_order_fork(lt_fork_phase phase)
{
    lt_spin_fork(&graph_lock, phase);
}
