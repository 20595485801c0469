/*
 * order.c - the lock-order graph over lock instances, and lock-order inversions.
 *
 * A node is one lock identity, (shadow entry, gen), reached from the entry (order_node): an
 * entry has at most one, of its current gen or of one that ended. A new lock's first edge
 * taken under a lock without a node needs neither a node nor an edge: it is kept in the
 * new lock's entry ("Inline edges") until the graph needs it. init, destroy and free end
 * it with all its edges, in O(1) ("Removal"), so a reused address starts without history and
 * the graph does not grow with lock churn; a node whose entry has moved on to another gen some
 * other way is skipped by the search and ended when the entry gets its next node. An edge
 * A -> B, labelled with the modes, says B was acquired (by a request that may wait for good,
 * not a trylock or a timed one: lt_wait_orders) while A was held; it
 * keeps the stacks and the thread of its first occurrence (see "New edges" for how much).
 *
 * Cost: after each nested acquisition the thread looks up (held -> new) for the locks it holds
 * by a 64-bit fingerprint of the edge (both identities and modes) in the global set of known
 * fingerprints, an open-addressing table read without a lock: 8 bytes an edge, so even
 * thousands of edges stay in cache, and one probe usually answers. (A per-thread cache in
 * front of it measured slower: with many edges it mostly misses.) A lock without a node (one
 * just initialised) has no edge into it, so its new edges look nothing up. Where several held
 * locks lead into the new one, the sequence is looked up as one chain first ("Chains"). The
 * new edges of one acquisition take the graph lock at most once; they are inserted there and
 * placed in an incremental topological order, which touches only the nodes between its ends; a
 * new lock takes its address as its place when that agrees, so locks taken in address order
 * are never reordered ("node_place"); edges that agree with the order, between locks with a
 * place or new ones placed at their addresses, need no graph lock at all (the gate,
 * edges_fast).
 * Removing a node touches none of its edges ("Removal"). While the order holds for every edge,
 * the graph has no cycle and nothing is searched; an edge that closes a cycle of the plain
 * graph is kept as a "back" edge, and from then on (until init or destroy removes it) each
 * acquisition that adds an edge runs a breadth-first search (graph.c) for the shortest cycle
 * through the new lock. Two edges sharing a fingerprint (odds 2^-64) would hide the second.
 *
 * Edges are made from the held locks newest first, down to the newest "anchor": a held lock
 * that was taken by a blocking request (so edges lead into it from every lock held then) and
 * that conflicts with itself in the mode it is held (so a cycle may pass through it). Every
 * older held lock reaches the new lock through the anchor (A -> B -> C), so one edge per
 * acquisition is the common case, and no number of trylocked or read-held locks in between
 * hides an edge: those get a direct edge each.
 *
 * A cycle can deadlock only if every lock on it can block: at each lock the mode one thread
 * holds it in conflicts with the mode the previous thread requests. Read against read
 * conflicts only on writer-preferring rwlocks (a queued writer stalls the second reader).
 * Each cycle is reported once, keyed by its set of locks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "graph.h"
#include "known.h"
#include "lt_internal.h"
#include "platform.h"

#define ORD_LAST ((int64_t)1 << 62) /* above every address */
#define WALK 16               /* held locks looked at per batch of new edges; a chain is one */
#define SWEEP_MIN 8           /* list entries a node takes before its first sweep */

typedef struct lt_order_node node;

enum { OUT, IN }; /* an edge's two lists: its from node's out-list, its to node's in-list */

/* What a plain edge keeps of its first occurrence, but the modes (lt_label): kept once for
 * all the edges that have the same (a program makes its edges at few places, by few threads),
 * and named by its index in label_pool (labels). */
typedef lt_label label;
_Static_assert(offsetof(label, from_stack) == 0 && offsetof(label, to_stack) == sizeof(uint32_t),
               "the two stacks begin a label, side by side (desc_make writes them as one)");

/* An edge, in 32 bytes: a program may make tens of millions (the `lazy` stress row), so nodes,
 * edges, labels and implied records are named by 32-bit indices into their pools (lt_ixpool),
 * and what the first occurrence was is a label. The locks are its nodes (lt_edge_info is made
 * from both when a report needs it); its fingerprint is made again from them when needed. */
typedef struct edge {
    uint32_t from, to;                 /* nodes; not to be followed once dead (may be reused) */
    uint32_t next[2];                  /* in from->list[OUT], to->list[IN]; under the graph lock */
    uint32_t label;                    /* its first occurrence (a label), or the record of what an
                                          implied edge stands for: "Ended locks" */
    uint8_t from_mode, to_mode;        /* lt_mode */
    uint8_t back : 1;                  /* closes a cycle: outside the topological order */
    uint8_t dead : 1;                  /* left the graph with one of its nodes ("Removal") */
    uint8_t implied : 1;               /* implied through an ended lock: `label` is its record */
    uint8_t lists;                     /* how many of the two lists still hold it */
    uint64_t below;                    /* the lock held right under `from` when it was first
                                          made, as a below key (held_key), `from` an anchor;
                                          or the run of them down to an anchor (BELOW_RUN):
                                          "Ended locks"; 0 = none */
} edge;
_Static_assert(sizeof(edge) == 32, "an edge is 32 bytes");

/* A below that names a run (below_run, "Ended locks"), in its low 32 bits: no below key has
 * bit 48 (ident_key). Alone, in a desc: below_keep decides where the edge is kept (edge_fill). */
#define BELOW_RUN ((uint64_t)1 << 48)

/* An inline edge H -> X ("Inline edges"), in an edge's room: X has no node, and its entry's
 * order_node names this (inline_ref). 32 bytes, so the lock's low bits carry the rest. */
typedef struct inline_edge {
    uintptr_t from;       /* H's entry; in the low bits (aligned to 32) H's kind, and whether
                             H was held and X taken for write (inline_pack) */
    uint32_t from_gen;    /* H's gen */
    uint32_t label;       /* its first occurrence */
    uint64_t below;       /* as an edge's */
    _Atomic uintptr_t child; /* X's one linked inline child's entry ("Inline edges"), 0: none;
                                in the low bits X's kind and flavour (INLINE_X) */
} inline_edge;
_Static_assert(sizeof(inline_edge) == sizeof(edge), "an inline edge takes an edge's room");
_Static_assert(_Alignof(lt_lock) >= 32, "an entry's five low bits are free");

/* An edge being made, before the graph keeps it: its label as it will be, whose thread is
 * the request's own until it is kept (thread_intern). */
typedef struct desc {
    label l;
    uint64_t below;
    uint8_t from_mode, to_mode;
} desc;

/* One of a node's lists: its first edge, and the edges pushed on it since the node was last
 * swept, side by side in one word, so that a push is one compare-and-swap (list_push): a
 * lock's first edge pushes on the held lock's out-list, and each locked instruction there
 * cost the `groups` row more than a cache miss. */
typedef union list_head {
    struct {
        uint32_t first;
        uint32_t pushed;
    };
    uint64_t word;
} list_head;

struct lt_order_node {
    _Alignas(64) const void *addr;  /* 64 bytes, one line: what a lock's lifecycle touches */
    lt_lock *lock;
    int64_t ord;                    /* place in the topological order; 0 until placed */
    list_head list[2];              /* edges out of it, into it (OUT, IN) */
    uint32_t dying_next;            /* the next in `ending`, or in `dying`, then `reaping`
                                       (next_of); while inline_realise makes it, the inline
                                       edge it makes real */
    _Atomic uint32_t in_from;       /* the node its in-list's one edge comes from, when that
                                       edge came with it (edge_first); 0 once another goes in
                                       (node_busy) */
    uint32_t gen;
    uint32_t ix;                    /* its index in node_pool, kept by node_init */
    uint8_t sweep_shift;            /* swept again once 2^sweep_shift edges were pushed */
    uint8_t kind;                   /* lt_kind */
    uint8_t exclusive_only;         /* mutex or spinlock: every request conflicts */
    uint8_t flavour;                /* lock_flavour, read while its identity lived */
    _Atomic uint8_t unindexed;      /* its in-list's one edge is not in the known set yet: made
                                       with it (edge_first), put there by node_index */
    _Atomic uint8_t listed;         /* published, not freed: lt_order_known_fill reads its list */
    _Atomic uint8_t dead;           /* left the graph (node_kill, lt_order_forget): its edges
                                       are dead */
    _Atomic uint8_t ending;         /* its identity ended, what it implies is not drawn yet:
                                       it is in `ending` ("Ended locks") */
};
_Static_assert(sizeof(struct lt_order_node) == 64, "a node is one line");
_Static_assert(_Alignof(struct lt_order_node) > 1, "an inline edge's reference is odd");

/* What only searches and reports read of a node, kept apart (node_cold) so that a lock's
 * lifecycle - its node made, its first edge, its end - touches one line: in `groups` (25 K
 * locks alive, 128-byte nodes) the node's second line was a cache miss at the acquisition
 * that made it and again at its destroy. Not cleared by node_init: a search stamp left by a
 * node's earlier use is below the current stamp, and the rest is written at the end. */
typedef struct node_cold {
    uint32_t mark[2];               /* search stamps, by the mode the node is entered with */
    uint32_t pk_mark;               /* reordering stamp */
    uint32_t first_stack;           /* the lock's, noted at its end (node_end_note) */
    uint8_t how, mutex_type, api, first_partial; /* noted at its end: lt_ended, the lock's */
} node_cold;

/* One edge of an implied edge's path as the graph had it: its first occurrence, or, when it
 * was implied itself, the path it stood for. */
typedef struct occurrence {
    uint32_t from_stack, to_stack;
    uint8_t from_mode, to_mode, from_partial, to_partial;
    const lt_thread_info *thread;
    struct implied *sub;        /* the path of an implied edge; NULL: a plain one */
} occurrence;

/* What an implied edge from -> to stands for: from -> lock -> to, lock ended ("Ended locks").
 * Shared by the implied edges and records whose paths contain it (refs); the last frees it. */
typedef struct implied {
    uint32_t ix;                /* its index in implied_pool */
    uint32_t refs;
    uint32_t hops;              /* plain edges on the path */
    lt_lock_ref lock;           /* the ended lock, as reports name it */
    occurrence in, out;         /* from -> lock, lock -> to */
} implied;


static lt_spin graph_lock = LT_SPIN_INIT(LT_RANK_GRAPH);
static lt_key_set *_Atomic moved; /* address ords held by nodes at other addresses (node_place) */
static int moved_lost;              /* moved is incomplete (no memory): addresses are not used */
static node *_Atomic ending;        /* nodes whose ends imply edges not yet drawn (dying_next) */
static node *_Atomic dying;         /* killed nodes not yet taken for reaping (dying_next) */
static node *reaping;               /* killed nodes taken from `dying`, being reaped (dying_next) */
static _Atomic size_t nedges;       /* edges whose fingerprints are, or are to be, in the known
                                       set: all but the unindexed first edges (edge_first), so
                                       that a new lock's first edge adds to no shared counter;
                                       added to in the gate; under the lock: nedges_locked */
static size_t ndead;                /* dead edges still in a list */
static uint32_t stamp;
static int64_t ord_first, ord_last = ORD_LAST; /* below or above every address ord (even) */
static _Atomic size_t nback;        /* back edges: while 0 the graph has no cycle */
static void *reported;              /* uint64_t keys of reported cycles, mapped */
static size_t nreported, reported_cap;

/*
 * The gate: new edges that agree with the topological order go in without the graph lock
 * (edges_fast), beside each other; everything else that reads or changes the graph takes the
 * lock and shuts the gate, then waits for those inside to leave. Inside, only four things
 * change, each by atomic steps: fingerprints join the known set (and the log of a copy being
 * made, lt_known_grow), edges are pushed on the heads of their nodes' lists, counters grow, and
 * a lock without a node gets one, placed at its address where that agrees with its new edges
 * (node_fast); nothing is unlinked, reordered, searched or freed. So a holder of the lock has
 * the graph to itself as before, and a fast edge needs no reordering and no search: while no
 * back edge exists an edge that agrees with the order cannot close a cycle (Dekker's
 * handshake: in, then look at shut; shut, then look at in; sequentially consistent both).
 * (Inline edges are made and ended in the gate too, for the same reason: no holder of the
 * lock makes them real meanwhile. They touch no list and no node.)
 *
 * A thread with a slot of its own (gate_slot, given under the lock by slot_claim) says it is
 * in by a flag on its slot's line, which graph_enter reads with the others: in `lazy` (4
 * threads making new edges at once) the one shared count of those inside went from core to
 * core twice a batch of new edges. The slot also counts the fingerprints its thread indexed
 * in the gate (lt_order_nedges) and keeps the room it reserved in the known set ahead
 * (lt_known_reserve): two more shared lines each batch wrote. Threads beyond GATE_SLOTS (and
 * those that never took the lock) use the shared count.
 */
#define GATE_SLOTS 64

static struct {
    _Alignas(64) _Atomic int in;      /* threads without a slot in the gate */
    _Atomic int shut;                 /* the graph lock's holder wants the graph to itself */
} gate;

typedef struct gate_slot {
    _Alignas(64) _Atomic int in; /* its thread is in the gate */
    _Atomic size_t added;        /* edges its thread indexed in the gate (not in nedges) */
    lt_known_room reserve;       /* what it reserved in the known set (lt_known_reserve) */
    const lt_thread *owner;      /* NULL: free; under the graph lock */
} gate_slot;

static gate_slot gate_slots[GATE_SLOTS];
static unsigned gate_nslots;         /* slots ever given: graph_enter looks at these */

/*
 * The slot whose thread says it is in by a plain store (gate_enter_slot), NULL: none. Each
 * way through the gate cost a locked exchange, in `groups` (one thread, a new lock's first
 * edge at every acquisition) ~5 % of the traced run's CPU time, and the exchange is only there
 * for a holder of the graph lock on another thread. So the first thread given a slot gets
 * this one too, where the platform has a barrier for all threads (lt_platform_barrier_all),
 * and keeps it while no other thread takes the lock: the first that does shuts the gate, takes
 * it away for good and runs that barrier before it looks at the slots (gate_alone_end). After
 * the barrier the alone thread's store is seen, or its next look finds the gate shut and
 * gate_alone gone - the look that follows its store, which is why it looks twice.
 */
static gate_slot *_Atomic gate_alone LT_START_DATA; /* (read by every fork child) */
static int gate_alone_given;         /* under the graph lock: it was given once, never again */

/* (A pointer in lt_thread, where an index cost each way through the gate a multiply-add.) */
static inline gate_slot *slot_of(const lt_thread *t)
{
    return t->gate_slot;
}

static inline lt_known_room *known_room(const lt_thread *t)
{
    gate_slot *s = slot_of(t);
    return s ? &s->reserve : NULL;
}

/* A thread other than the alone one (gate_alone) takes the graph lock, the gate shut: no
 * thread enters without the exchange any more, and the alone one's store is seen once the
 * barrier returns. */
static __attribute__((noinline, cold)) void gate_alone_end(void)
{
    lt_thread *t = lt_tls.self;
    if (t && slot_of(t) == atomic_load_explicit(&gate_alone, memory_order_relaxed))
        return; /* (the alone thread itself, which is not in the gate now) */
    atomic_store(&gate_alone, NULL);
    if (lt_platform_barrier_all() == 0)
        return;
    /* Not to be had any more: the program installed a seccomp filter since it was readied.
     * Nothing then makes the alone thread's store seen at once; it leaves that thread's store
     * buffer within microseconds, which these yields give it (no architecture promises it). */
    for (int i = 0; i < 64; i++)
        sched_yield();
}

static void graph_enter(void)
{
    lt_spin_lock(&graph_lock);
    atomic_store(&gate.shut, 1);
    if (lt_unlikely(atomic_load_explicit(&gate_alone, memory_order_relaxed) != NULL))
        gate_alone_end();
    lt_spin_wait(&gate.in);
    for (unsigned i = 0; i < gate_nslots; i++)
        lt_spin_wait(&gate_slots[i].in);
}

/* What is written "under the graph lock" with plain stores (the gate is shut, so no other
 * thread writes it): with LT_CHECKS an internal error unless the calling thread holds the lock
 * (the pools check the same, lt_ix_guarded); nothing in a release build. */
static inline void graph_held(void)
{
    lt_spin_assert_mine(&graph_lock);
}

static int graph_capped(void);

/* Under the graph lock: nothing that only the lock changes stands in the way of a first edge
 * made in the gate (edge_first_fits): no back edge, no dead node waiting for reaping, not
 * capped, no address ord moved or lost. */
static int graph_quiet(void)
{
    lt_key_set *m = atomic_load_explicit(&moved, memory_order_relaxed);
    return !atomic_load_explicit(&nback, memory_order_relaxed) && !reaping &&
           !atomic_load_explicit(&dying, memory_order_relaxed) && !graph_capped() &&
           !moved_lost && !(m && m->live);
}

/* graph_quiet as the last holder of the graph lock left it: what a thread in the gate reads,
 * where those six looks were made at every lock's first edge (`groups`: 13 instructions of
 * the 866 the tracer adds to a lock's lifecycle). Only the lock changes what it sums up, and
 * the lock shuts the gate first (Dekker's handshake with gate_enter); it is written before
 * the gate opens again (release), so a thread that saw the gate open sees the value written
 * for the graph it enters. (`ending` is not in it: forget_ending adds to it in the gate.) */
static _Atomic int quiet = 1;

static void graph_leave(void)
{
    int last = graph_lock.depth == 1;
    if (last) {
        atomic_store_explicit(&quiet, graph_quiet(), memory_order_relaxed);
        atomic_store_explicit(&gate.shut, 0, memory_order_release);
    }
    lt_spin_unlock(&graph_lock);
}

/* known.c's way into the graph lock (lt_known_grow). */
void lt_order_lock(void)
{
    graph_enter();
}

void lt_order_unlock(void)
{
    graph_leave();
}

/* The gate left by a thread whose slot is s (slot_of). */
static inline void gate_leave_slot(gate_slot *s)
{
    lt_crit_gate(-1);
    if (s)
        atomic_store_explicit(&s->in, 0, memory_order_release);
    else
        atomic_fetch_sub_explicit(&gate.in, 1, memory_order_release);
}

static inline void gate_leave(const lt_thread *t)
{
    gate_leave_slot(slot_of(t));
}

static inline int gate_enter_slot(gate_slot *s)
{
    lt_crit_gate(1);
    if (!s) {
        atomic_fetch_add(&gate.in, 1);
    } else if (s == atomic_load_explicit(&gate_alone, memory_order_relaxed)) {
        atomic_store_explicit(&s->in, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* (the store before the looks) */
        if (lt_unlikely(s != atomic_load_explicit(&gate_alone, memory_order_relaxed)))
            atomic_exchange(&s->in, 1);
    } else {
        atomic_exchange(&s->in, 1); /* (a locked instruction on the thread's own line) */
    }
    if (!atomic_load(&gate.shut))
        return 1;
    gate_leave_slot(s);
    return 0;
}

/* The gate found shut by another thread's holder of the graph lock: waits for it to open
 * (1) instead of queueing for the lock behind it. With 4 threads making new edges at once
 * (`lazy`), each that found the gate shut took the lock in turn and shut it again for the
 * next: a convoy. 0 when t holds the lock itself. */
static int gate_wait_open(const lt_thread *t)
{
    if (atomic_load_explicit(&graph_lock.owner, memory_order_relaxed) == t->info.tid)
        return 0;
    lt_spin_wait(&gate.shut);
    return 1;
}

static inline int gate_enter(const lt_thread *t)
{
    return gate_enter_slot(slot_of(t));
}

/* Under the graph lock: t gets a free slot, if one is left. */
static void slot_claim(lt_thread *t)
{
    graph_held();
    for (unsigned i = 0; !t->gate_slot && i < GATE_SLOTS; i++) {
        if (gate_slots[i].owner)
            continue;
        gate_slots[i].owner = t;
        gate_slots[i].reserve.room = 0;
        t->gate_slot = &gate_slots[i];
        if (gate_nslots <= i)
            gate_nslots = i + 1;
        if (!gate_alone_given) {
            gate_alone_given = 1;
            if (lt_platform_barrier_ready())
                atomic_store(&gate_alone, &gate_slots[i]);
        }
    }
}

static void nedges_locked(ptrdiff_t d);

/* Under the graph lock, t exiting: its slot is free again, its count of edges in nedges. */
static void slot_release(lt_thread *t)
{
    graph_held();
    gate_slot *s = slot_of(t);
    if (!s)
        return;
    nedges_locked((ptrdiff_t)atomic_load_explicit(&s->added, memory_order_relaxed));
    atomic_store_explicit(&s->added, 0, memory_order_relaxed);
    lt_known_give_back(&s->reserve);
    s->owner = NULL;
    t->gate_slot = NULL;
    if (s == atomic_load_explicit(&gate_alone, memory_order_relaxed))
        atomic_store(&gate_alone, NULL); /* (the next owner of s is another thread) */
}

/* ---------------------------------------------------------------------------------------- */

/* Fingerprint of from(gf, mf) -> to(gt, mt); shadow entries are aligned, so the modes fit in
 * the low bits of their addresses. Three independent multiplies, then one mixing round: this
 * runs on every nested acquisition. */
static uint64_t fingerprint(const lt_lock *from, uint32_t gf, lt_mode mf, const lt_lock *to,
                            uint32_t gt, lt_mode mt)
{
    uint64_t a = ((uintptr_t)from | (uintptr_t)mf) * 0x9E3779B97F4A7C15ull;
    uint64_t b = ((uintptr_t)to | (uintptr_t)mt) * 0xC2B2AE3D27D4EB4Full;
    uint64_t g = (((uint64_t)gf << 32) | gt) * 0x165667B19E3779F9ull;
    uint64_t x = a ^ ((b << 31) | (b >> 33)) ^ g;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (x ^ (x >> 32)) | 1;
}

/* ------------------------------------------------------------------------------------------
 * Nodes and edges come from mapped slabs and go back to free lists, under the graph lock.
 * Nothing under that lock may call malloc: a program's own malloc may take a pthread mutex,
 * and the thread holding that mutex may be on its way into the graph lock.
 * ---------------------------------------------------------------------------------------- */
#define NODE_BITS 12
#define EDGE_BITS 14 /* chunks of 512 KB, so that a program past its first takes large pages;
                        2^28 edges in all (8 GB), then out of memory as any failed map */
#define LABEL_BITS 12
#define IMPLIED_BITS 8

/* A chunk of node_pool holds its 2^NODE_BITS nodes, then their cold parts in the same order. */
typedef struct node_room {
    char hot[sizeof(node)];
    node_cold cold;
} node_room;

static lt_ixpool node_pool = LT_IXPOOL(node_room, NODE_BITS, LT_RANK_GRAPH);
static lt_ixpool edge_pool = LT_IXPOOL(edge, EDGE_BITS, LT_RANK_GRAPH);
static lt_ixpool label_pool = LT_IXPOOL(label, LABEL_BITS, LT_RANK_GRAPH);
static lt_ixpool implied_pool = LT_IXPOOL(implied, IMPLIED_BITS, LT_RANK_GRAPH);

static inline node *node_at(uint32_t i)
{
    return lt_ix_at(&node_pool, i, NODE_BITS, sizeof(node));
}

/* The node after n in the list of dying_next it is in; NULL at its end. */
static node *next_of(const node *n)
{
    return n->dying_next ? node_at(n->dying_next) : NULL;
}

static void next_set(node *n, const node *next)
{
    n->dying_next = next ? next->ix : 0;
}

static inline node_cold *cold_of(const node *n)
{
    uint32_t i = n->ix;
    return (node_cold *)(node_pool.chunk[i >> NODE_BITS] + (sizeof(node) << NODE_BITS)) +
           (i & ((1u << NODE_BITS) - 1));
}

static inline edge *edge_at(uint32_t i)
{
    return lt_ix_at(&edge_pool, i, EDGE_BITS, sizeof(edge));
}

static inline inline_edge *inline_at(uint32_t i)
{
    return (inline_edge *)edge_at(i);
}

#define INLINE_LOW ((uintptr_t)31)
#define INLINE_KIND ((uintptr_t)7)
#define INLINE_FROM_WRITE ((uintptr_t)8)
#define INLINE_TO_WRITE ((uintptr_t)16)
#define INLINE_FLAVOUR_SHIFT 3
#define INLINE_X INLINE_LOW /* what a child word keeps of its own lock: kind, flavour */
_Static_assert(LT_BARRIER <= 7 && LT_MODE_WRITE == 2 && LT_MODE_READ == 1 &&
                   INLINE_FROM_WRITE == (uintptr_t)LT_MODE_WRITE << 2 &&
                   INLINE_TO_WRITE == (uintptr_t)LT_MODE_WRITE << 3,
               "a kind in three bits, a mode in one");

/* (WRITE is the mode with bit 1: shifted into place, where a compare each cost branches.) */
static inline uintptr_t inline_pack(const lt_lock *l, lt_kind kind, lt_mode from_mode,
                                    lt_mode to_mode)
{
    return (uintptr_t)l | (uintptr_t)kind | ((uintptr_t)(from_mode & LT_MODE_WRITE) << 2) |
           ((uintptr_t)(to_mode & LT_MODE_WRITE) << 3);
}

static inline lt_lock *inline_from(const inline_edge *r)
{
    return (lt_lock *)(r->from & ~INLINE_LOW);
}

static inline lt_mode inline_mode(const inline_edge *r, uintptr_t bit)
{
    return r->from & bit ? LT_MODE_WRITE : LT_MODE_READ;
}

static inline lt_lock *inline_child(const inline_edge *r)
{
    return (lt_lock *)(atomic_load_explicit(&r->child, memory_order_relaxed) & ~INLINE_LOW);
}

static inline const label *label_at(uint32_t i)
{
    return lt_ix_at(&label_pool, i, LABEL_BITS, sizeof(label));
}

static inline implied *implied_at(uint32_t i)
{
    return lt_ix_at(&implied_pool, i, IMPLIED_BITS, sizeof(implied));
}

static int graph_room(size_t more);

/* An index of p, unless it needs a new chunk and the graph has no room for it (graph_room);
 * 0 then, or when out of memory. Under the graph lock. */
static uint32_t ix_take(lt_ixpool *p)
{
    size_t more = lt_ix_has_free(p) ? 0 : lt_ix_maps(p);
    return more && !graph_room(more) ? 0 : lt_ix_take(p);
}

/* Under the graph lock: a node from the pool, which names it by n->ix from then on. */
static node *node_take(void)
{
    uint32_t i = ix_take(&node_pool);
    node *n = i ? node_at(i) : NULL;
    if (n)
        n->ix = i;
    return n;
}

static int node_dead(const node *n)
{
    return atomic_load_explicit(&n->dead, memory_order_relaxed);
}

/* Is n a lock in the graph: not dead, and its identity current - or ended with what its end
 * implies not yet drawn, which it stands for until then ("Ended locks"). */
static int node_live(const node *n)
{
    return !node_dead(n) && (atomic_load_explicit(&n->lock->gen, memory_order_acquire) == n->gen ||
                             atomic_load_explicit(&n->ending, memory_order_relaxed));
}

/* What l's entry says of it in the graph: a node, an inline edge (ref_inline), or NULL. */
static node *order_ref(const lt_lock *l)
{
    return atomic_load_explicit(&l->order_node, memory_order_acquire);
}

/* A reference that is no node has its top bit set, so that "a node?" is one signed compare
 * as "NULL?" was (node_of, node_find and order.h, on every nested acquisition), and says what
 * the lock has by its low bits (a node's are 0; order.h knows them), an edge's room by the
 * index between: an inline edge into the lock (inline_ref, 1); no edge, and the room of an
 * ended identity's inline edge, kept by the entry for its next (kept_ref, 3); no edge in but
 * inline edges out of it, and maybe a room kept (root_ref, 2). */
#define REF_INLINE 1
#define REF_ROOT 2
#define REF_KEPT 3
#define REF_TOP ((uintptr_t)1 << 63)

static inline uint32_t ref_inline(const node *r)
{
    uintptr_t v = (uintptr_t)r;
    return (v & 3) == REF_INLINE ? (uint32_t)(v >> 2) : 0;
}

/* The room a reference names, or 0. */
static inline uint32_t ref_room(const node *r)
{
    uintptr_t v = (uintptr_t)r;
    return v & REF_TOP ? (uint32_t)(v >> 2) : 0;
}

static inline node *ref_node(const node *r)
{
    return (intptr_t)r > 0 ? (node *)r : NULL;
}

/* Is a lock so referred to a root: inline edges out of it, none in, no node? */
static inline int ref_root(const node *r)
{
    return ((uintptr_t)r & 3) == REF_ROOT;
}

/* Does a lock so referred to have neither a node nor an inline edge? */
static inline int ref_free(const node *r)
{
    return !r || ((uintptr_t)r & 3) == REF_KEPT;
}

static inline node *room_ref(uint32_t i, uintptr_t kind)
{
    return (node *)(REF_TOP | ((uintptr_t)i << 2) | kind);
}

static inline node *inline_ref(uint32_t i)
{
    return room_ref(i, REF_INLINE);
}

/* The lock has no edge now: its room kept, if it has one. */
static inline node *kept_ref(uint32_t i)
{
    return i ? room_ref(i, REF_KEPT) : NULL;
}

static node *node_of(const lt_lock *l)
{
    return ref_node(order_ref(l));
}

/* The node of (l, gen), NULL when it has none; under the graph lock. */
static node *node_find(const lt_lock *l, uint32_t gen)
{
    node *n = node_of(l);
    return n && n->gen == gen ? n : NULL;
}

/* Has the identity (l, gen) ended? Then no edge is made for it. */
static int identity_ended(const lt_lock *l, uint32_t gen)
{
    return atomic_load_explicit(&l->gen, memory_order_relaxed) != gen;
}

static void node_retire(lt_lock *l, node *n);
static void inline_realise(lt_lock *l, uint32_t gen);

/* Is (l, gen) new to the graph: without a node, so no edge leads into it? (Or ending: its
 * node went first, lt_order_forget, and no edge is made for it.) */
static int node_fresh(const lt_lock *l, uint32_t gen)
{
    node *n = node_of(l);
    return !n || n->gen != gen;
}

/* The edges pushed on n's lists since it was last swept (its entries then). */
static uint32_t node_pushed(const node *n)
{
    return __atomic_load_n(&n->list[OUT].pushed, __ATOMIC_RELAXED) +
           __atomic_load_n(&n->list[IN].pushed, __ATOMIC_RELAXED);
}

/* A node with `entries` in its lists is swept again once that many more edges have been
 * pushed, and SWEEP_MIN, rounded up to a power of two. */
static uint8_t sweep_shift(uint32_t entries)
{
    uint64_t at = 2 * (uint64_t)entries + SWEEP_MIN - 1;
    uint8_t shift = (uint8_t)(64 - __builtin_clzll(at));
    return shift > 31 ? 31 : shift;
}

/* What a lock of `kind` is beyond its kind, as reports name it: an rwlock whether it prefers
 * writers, a mutex its type. Read from the lock at its first edge, while it lives, and kept
 * with the edge (inline) or node: an identity ended by init is gone from its memory (libc's
 * init runs first), and a report named it by its successor (a recursive mutex initialised
 * again as an rwlock was "mutex (normal)"). Noted where the lock enters the graph, not at
 * init: most locks never do, and an acquisition that makes no new edge reads nothing. Inline,
 * with the reads (platform.h): called, it cost every lock's first edge in `groups` 17
 * instructions. */
static inline __attribute__((always_inline)) uint8_t lock_flavour(const lt_lock *l, lt_kind kind,
                                                                  const void *addr)
{
    if (kind == LT_RWLOCK)
        return (uint8_t)lt_lock_prefers_writer(addr, l);
    return kind == LT_MUTEX ? (uint8_t)lt_lock_mutex_type(addr, l) : 0;
}
_Static_assert(LT_MUTEX_ERRORCHECK < (1 << (5 - INLINE_FLAVOUR_SHIFT)) && LT_BARRIER < 8,
               "a flavour fits above a kind in an inline child word's free bits");

/* n, from the pool or a thread's own, made the node of (l, gen), at `ord` (0: not placed). */
static void node_init(node *n, lt_lock *l, uint32_t gen, lt_kind kind, uint8_t flavour,
                      const void *addr, int64_t ord)
{
    *n = (node){.addr = addr, .lock = l, .gen = gen, .ix = n->ix, .kind = (uint8_t)kind,
                .exclusive_only = kind != LT_RWLOCK, .flavour = flavour,
                .sweep_shift = sweep_shift(0), .ord = ord};
}

/* n, just published as its lock's node, joins the nodes lt_order_known_fill reads (it walks
 * the node pool, under the graph lock, so no thread is in the gate then). A node being made
 * by another thread, or kept in a thread's cache, is not listed: its lists may be anything.
 * (A list of all nodes cost a compare-and-swap on one global line for every new lock, and a
 * write to two other nodes' lines when it left.) */
static void node_list(node *n)
{
    atomic_store_explicit(&n->listed, 1, memory_order_relaxed);
}

/* Finds or makes the node of (l, gen), an identity that has not ended (a node left by an ended
 * one goes); a new one is not yet in the order (ord 0). Under the graph lock. */
static node *node_get(lt_lock *l, uint32_t gen, lt_kind kind, const void *addr)
{
    graph_held();
    node *n = order_ref(l);
    if (ref_inline(n)) {
        inline_realise(l, gen);
        if (ref_inline(n = order_ref(l)))
            return NULL; /* (out of memory) */
    }
    uint32_t kept = ref_room(n);
    if (ref_node(n) && n->gen == gen)
        return n;
    if (ref_node(n))
        node_retire(l, n);
    n = node_take();
    if (!n)
        return NULL;
    node_init(n, l, gen, kind, lock_flavour(l, kind, addr), addr, 0);
    node_list(n);
    atomic_store_explicit(&l->order_node, n, memory_order_release);
    if (kept)
        lt_ix_put(&edge_pool, kept);
    return n;
}

/*
 * A new node's place in the order: its address when that is free and agrees with the new edge
 * (ord below the other end's for a source, above it for a target), else first (a source) or
 * last (a target), where it agrees with any edge. Programs that have an order for many locks
 * mostly take them by address (an array in index order, "lower address first"); their edges
 * then agree with the order from the start and nothing is ever reordered. Reordering only
 * permutes the ords of existing nodes, so an address is free unless a node holds it: a node
 * at that address, or one that reordering gave it, which the set `moved` says (keys 2 ord + 1;
 * address ords lie between ord_first and ORD_LAST). The first is the new node itself: the
 * entry at an address has one node, and an entry leaves its address only after its node left
 * the graph (lt_order_forget). While nothing was reordered `moved` is empty and never probed.
 *
 * Once something was reordered, addresses have failed to predict the order, and a new lock
 * placed by its address (or at an end) lies far from the lock its first edge names: its next
 * edges, with that lock's neighbours, then reorder everything between (`stressbench replace`,
 * a chain in index order whose locks are remade at unrelated addresses: every new lock
 * reordered the rest of the chain). So then it goes right beside that lock instead (ord_near:
 * just above its source, just below its target), where any lock ordered before (after) that
 * one is ordered before (after) it too. Those places are odd ords, which no lock's own
 * address is (a lock at an odd address is placed as if it had none) and the ends are not
 * (they move by 2), so they never stand in the way of an address or an end; a node holding
 * one is in `moved` like any node holding an address ord not its own.
 */
#define NEAR_TRIES 40 /* odd ords ord_near looks at: bounded, each one probe of `moved` */

static uint64_t ord_key(int64_t ord)
{
    return (uint64_t)ord << 1 | 1;
}

static int ord_is_addr(int64_t ord)
{
    return ord > 0 && ord < ORD_LAST;
}

/* A lock at address a may have a as its ord (even: odd ords are ord_near's). */
static int ord_own_ok(int64_t a)
{
    return ord_is_addr(a) && !(a & 1);
}

/* n holds an odd ord, or an address ord that is not its own: it is in `moved`. */
static int ord_moved(const node *n)
{
    return (n->ord & 1) || (ord_is_addr(n->ord) && n->ord != (int64_t)(uintptr_t)n->addr);
}

static int ord_free(int64_t a)
{
    lt_key_set *k = atomic_load_explicit(&moved, memory_order_relaxed);
    return !(k && k->live && lt_set_has(&moved, ord_key(a)));
}

/* Something was reordered and `moved` is complete: ord_near may look. */
static int ord_near_ok(void)
{
    lt_key_set *k = atomic_load_explicit(&moved, memory_order_relaxed);
    return !moved_lost && k && k->live;
}

/* A free odd ord below `other` (for a source) or above it (a target), taken: it joins `moved`.
 * The 8 nearest first, then ever farther ones (2^k, up to 2^35 away): where many locks went
 * beside the same ones, the odd ords there are taken, and a place past some of their
 * neighbours is still nearer than an end. 0: none of NEAR_TRIES (or no memory to remember
 * it). */
static int64_t ord_near(int64_t other, int source)
{
    int64_t c = source ? (other - 2) | 1 : (other + 1) | 1;
    for (int64_t i = 0, d = 0; i < NEAR_TRIES; i++, d = d < 16 ? d + 2 : d * 2) {
        int64_t at = source ? c - d : c + d;
        if (ord_free(at))
            return lt_set_add(&moved, ord_key(at)) ? at : 0;
    }
    return 0;
}

/* `other`: the other end's ord, or (near 0) its address, when it has no place yet. */
static void node_place(node *n, int source, int64_t other, int near)
{
    int64_t a = (int64_t)(uintptr_t)n->addr;
    if (near && ord_near_ok() && (n->ord = ord_near(other, source)) != 0)
        return;
    if (!moved_lost && ord_own_ok(a) && (source ? a < other : a > other) && ord_free(a))
        n->ord = a;
    else
        n->ord = source ? (ord_first -= 2) : (ord_last += 2);
}

/* Places the new ones of an edge's ends, from -> to. */
static void edge_ends_place(node *from, node *to)
{
    if (!from->ord && !to->ord) {
        node_place(from, 1, (int64_t)(uintptr_t)to->addr, 0);
        node_place(to, 0, from->ord, 1);
    } else if (!from->ord) {
        node_place(from, 1, to->ord, 1);
    } else if (!to->ord) {
        node_place(to, 0, from->ord, 1);
    }
}

static uint64_t edge_fingerprint(const edge *e)
{
    const node *from = node_at(e->from), *to = node_at(e->to);
    return fingerprint(from->lock, from->gen, (lt_mode)e->from_mode, to->lock, to->gen,
                       (lt_mode)e->to_mode);
}

static edge *edge_live(uint32_t *link, int side);

/* Under the graph lock: the fingerprint of every edge in the graph into k. */
void lt_order_known_fill(lt_key_set *k)
{
    graph_held();
    edge *e;
    for (uint32_t i = 1; (i = lt_ix_over(&node_pool, i)) < node_pool.next; i++) {
        node *n = node_at(i);
        if (!atomic_load_explicit(&n->listed, memory_order_relaxed))
            continue;
        for (uint32_t *at = &n->list[OUT].first; !node_dead(n) && (e = edge_live(at, OUT));
             at = &e->next[OUT])
            if (!atomic_load_explicit(&node_at(e->to)->unindexed, memory_order_relaxed))
                lt_set_put(k, edge_fingerprint(e));
    }
}

/* Under the graph lock: the edges whose fingerprints are, or are to be, in the known set. */
size_t lt_order_nedges(void)
{
    graph_held();
    size_t n = atomic_load_explicit(&nedges, memory_order_relaxed);
    for (unsigned i = 0; i < gate_nslots; i++)
        n += atomic_load_explicit(&gate_slots[i].added, memory_order_relaxed);
    return n;
}

/* In the gate: the thread of slot s (slot_of) indexed d more edges. */
static inline void nedges_slot(gate_slot *s, size_t d)
{
    if (s)
        atomic_store_explicit(&s->added, atomic_load_explicit(&s->added, memory_order_relaxed) + d,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&nedges, d, memory_order_relaxed);
}

/* In the gate: t indexed d more edges. */
static void nedges_gated(const lt_thread *t, size_t d)
{
    nedges_slot(slot_of(t), d);
}

/* ------------------------------------------------------------------------------------------
 * Removal. A lock identity's end (lt_order_forget) costs O(1): its entry lets go of the node,
 * which is marked dead - from then on every walk passes its edges by (edge_live) and no new
 * edge finds it - and leaves the graph with a batch of others under one taking of the graph
 * lock. A node with at most EAGER list entries leaves at once (its edges killed, see below);
 * one with more is pushed on `dying`, and its memory is reaped later by whoever adds edges
 * under the graph lock, a few list entries at a time ("reap"): so freeing a block of thousands
 * of locks with a million edges between them walks none of them then, and a program that goes
 * on making edges pays for the walk in small steps, against the edges it adds; one that stops
 * never pays it. While the graph has a cycle (a back edge) reaping is not deferred, so a dead
 * back edge does not keep every acquisition searching. (Deferring every node to `dying`
 * measured slower in `groups`, where each lock has 2 edges: its memory is then touched twice,
 * cold the second time; a thread's batch of FORGET_BATCH nodes is still in the cache.)
 *
 * The lists are singly linked, and a list lets go of an edge without touching its other
 * list: the edge is marked dead, stays in the other list until a walk of that list unlinks
 * it (edge_live), and is freed by the last list to let go. A dead node keeps every edge it
 * had in its own lists until its reaping kills them, so no edge that is not marked dead
 * names a freed node. A node's lists are swept whenever they have doubled since their last
 * sweep (rounded up to a power of two, sweep_shift) while dead edges or nodes exist, so its
 * lists never hold more than five times the live entries they had then, and 16, at O(1)
 * amortised per edge added; dead nodes awaiting reaping hold at most the edges the graph had.
 *
 * A dead edge's fingerprint stays in the known set: it names a lock identity that ended (or
 * is ending: lt_order_forget comes before the lock's gen moves on), so no acquisition can make
 * it again; lt_known_add drops such leftovers when it rebuilds.
 * ---------------------------------------------------------------------------------------- */
#define REAP_STEP 16          /* list entries of dead nodes let go per taking of the lock */
#define EAGER 32              /* a node leaves at once when its lists have no more entries */
#define FORGET_BATCH LT_NODES_GONE /* nodes a thread lets go of before they leave the graph */

static void implied_put(struct implied *v);
static void below_put(uint64_t below, lt_thread *recycler);
static void edge_cache_put(lt_thread *t, uint32_t i);
static void node_cache_put(lt_thread *t, node *n);

/* `recycler`, where the functions below take one: the thread whose nodes leave the graph
 * (nodes_gone_leave), which takes what they free into its own caches, up to as many nodes as
 * it made from them (node_made), and twice as many edges: a thread that ends the locks it
 * made gets their memory back while it is still in the cache, where the pool gave it back a
 * round of locks later, each line a cache miss then (`groups`: 25 K locks made, taken nested
 * and destroyed, over and over). One that ends the locks of others fills the pool as before
 * (NULL). A parameter, not a global: inlined in the batch, it stays in a register. */

/* Edge i (e), in no list any more, goes back to the recycler's cache or the pool. */
static inline __attribute__((always_inline)) void edge_free(uint32_t i, edge *e,
                                                            lt_thread *recycler)
{
    if (e->implied)
        implied_put(implied_at(e->label));
    below_put(e->below, recycler);
    if (recycler && recycler->edge_nfree < 2 * (size_t)recycler->node_nfree)
        edge_cache_put(recycler, i);
    else
        lt_ix_put(&edge_pool, i);
}

/* One of its lists let go of edge i (e): the last one frees it. */
static inline __attribute__((always_inline)) void edge_drop(uint32_t i, edge *e,
                                                            lt_thread *recycler)
{
    if (--e->lists == 0) {
        ndead--;
        edge_free(i, e, recycler);
    }
}

/* Under the graph lock, d edges more (or fewer): the gate is shut, so no other thread writes
 * nedges, and a plain store does instead of a locked add for every edge made or killed. */
static void nedges_locked(ptrdiff_t d)
{
    graph_held();
    atomic_store_explicit(&nedges, atomic_load_explicit(&nedges, memory_order_relaxed) + (size_t)d,
                          memory_order_relaxed);
}

/* Edge i (e) leaves the graph with one of its nodes, whose list lets go of it. Inlined where a
 * node leaves with its lists (node_leave), every lock's end in `groups`. `to`: its to node,
 * where the caller has it (NULL: looked up). */
/* The live edge e, whose to node is `to`, leaves the counts of the graph. */
static inline __attribute__((always_inline)) void edge_uncount(const edge *e, const node *to)
{
    if (!atomic_load_explicit(&to->unindexed, memory_order_relaxed)) {
        nedges_locked(-1);
        lt_known_dead();
    }
    if (e->back)
        atomic_fetch_sub_explicit(&nback, 1, memory_order_relaxed);
}

static inline __attribute__((always_inline)) void edge_kill_at(uint32_t i, edge *e,
                                                               lt_thread *recycler, node *to)
{
    if (!e->dead) {
        edge_uncount(e, to ? to : node_at(e->to));
        e->dead = 1;
        ndead++;
    }
    edge_drop(i, e, recycler);
}

static void edge_kill(uint32_t i)
{
    edge_kill_at(i, edge_at(i), NULL, NULL);
}

/* The first live edge from *link on in a list of `side`, unlinking the dead ones before it:
 * those marked, and those whose other end is dead. */
static edge *edge_live(uint32_t *link, int side)
{
    for (uint32_t i; (i = *link) != 0;) {
        edge *e = edge_at(i);
        if (lt_likely(!e->dead && !node_dead(node_at(side == OUT ? e->to : e->from))))
            return e;
        *link = e->next[side];
        edge_kill(i);
    }
    return NULL;
}

/*
 * A lock's first edge H -> X, made with X's node (edge_first), is not put in the known set: a
 * program that makes locks, takes each once under another and destroys it (`groups`) paid a
 * cache miss per lock there for an edge never looked up again. X's node says so (unindexed)
 * until an edge into X is next looked up for adding, in the gate (edges_fast) or under the
 * graph lock (edges_add, imply), which first puts that edge's fingerprint in the known set
 * (node_index). Meanwhile no edge goes into X (edge_first leaves it to the general way), and a
 * look-up that misses leads there. The edge is the one in X's in-list, unless it died.
 */
static edge *unindexed_edge(const node *x)
{
    uint32_t i = __atomic_load_n(&x->list[IN].first, __ATOMIC_RELAXED);
    return i && !edge_at(i)->dead ? edge_at(i) : NULL;
}

static int node_unindexed(const node *x)
{
    return atomic_load_explicit(&x->unindexed, memory_order_acquire);
}

/* Under the graph lock; 0 when out of memory (or capped). */
static int node_index(node *x)
{
    graph_held();
    edge *e;
    if (lt_likely(!node_unindexed(x)))
        return 1;
    if ((e = unindexed_edge(x)) != NULL) {
        if (!lt_known_add(edge_fingerprint(e)))
            return 0;
        nedges_locked(1);
    }
    atomic_store_explicit(&x->unindexed, 0, memory_order_release);
    return 1;
}

/* Dead nodes wait for reaping, or ended ones for drawing what they imply: edges_fast leaves
 * new edges to the lock, where edges_add does that first. */
static int reap_pending(void)
{
    return reaping || atomic_load_explicit(&dying, memory_order_relaxed) ||
           atomic_load_explicit(&ending, memory_order_relaxed);
}

/* n's lists have doubled since it was last swept: unlinks their dead edges, if any exist. */
static __attribute__((noinline)) void node_sweep(node *n)
{
    if (ndead || reap_pending()) {
        edge *e;
        for (int side = OUT; side <= IN; side++) {
            n->list[side].pushed = 0;
            for (uint32_t *at = &n->list[side].first; (e = edge_live(at, side));
                 at = &e->next[side])
                n->list[side].pushed++;
        }
    }
    n->sweep_shift = sweep_shift(node_pushed(n));
}

/* Edges went into the lists of n (list_push counts them). */
static inline void node_linked(node *n)
{
    if (lt_unlikely(node_pushed(n) >> n->sweep_shift))
        node_sweep(n);
}

/* A sweep of n is due, and has work: edges_fast leaves n's new edges to the lock. Its callers
 * found nothing waiting to be reaped (reap_pending: three globals, which every new edge read
 * again here), so the work is dead edges. */
static inline int node_sweep_due(const node *n)
{
    return ndead && (node_pushed(n) + 1) >> n->sweep_shift;
}

/* n, which no entry reaches any more, leaves the graph, to be reaped later. */
static void node_kill(node *n)
{
    atomic_store_explicit(&n->dead, 1, memory_order_release);
    node *top = atomic_load_explicit(&dying, memory_order_relaxed);
    do
        next_set(n, top);
    while (!atomic_compare_exchange_weak_explicit(&dying, &top, n, memory_order_release,
                                                  memory_order_relaxed));
}

/* Under the graph lock: n, whose edges are dead, leaves the listed nodes and the set of
 * moved ords, and goes back to the pool. */
static inline __attribute__((always_inline)) void node_free(node *n, lt_thread *recycler)
{
    if (atomic_load_explicit(&moved, memory_order_relaxed) && ord_moved(n)) /* (no set: none) */
        lt_set_remove(&moved, ord_key(n->ord));
    atomic_store_explicit(&n->listed, 0, memory_order_relaxed);
    if (recycler && recycler->node_made) {
        recycler->node_made--;
        node_cache_put(recycler, n);
    } else {
        lt_ix_put(&node_pool, n->ix);
    }
}

/* Under the graph lock: the edges of n's list of `side` (a constant) leave the graph. A live
 * edge at the head of its other end's list leaves that list too, and is freed at once: else it
 * is marked dead there and visited again when that list lets go of it - in `groups`, where a
 * lock's one edge out is the one edge into the next lock, each edge was visited from both ends,
 * its second visit a third of what a lock's end cost the graph. The other end's line is read
 * anyway (its `unindexed`, edge_uncount). The gate is shut, so no list changes meanwhile; a
 * node_busy that reads the other end's list without the lock sees the edge or not, and either
 * way tells no lie, as n, the edge's end, has left. */
static inline __attribute__((always_inline)) void list_leave(node *n, int side,
                                                             lt_thread *recycler)
{
    const int other = side == OUT ? IN : OUT;
    for (uint32_t i = n->list[side].first, next; i; i = next) {
        edge *e = edge_at(i);
        node *o = node_at(side == OUT ? e->to : e->from);
        next = e->next[side];
        if (!e->dead && o->list[other].first == i) {
            __atomic_store_n(&o->list[other].first, e->next[other], __ATOMIC_RELAXED);
            edge_uncount(e, side == OUT ? o : n);
            edge_free(i, e, recycler);
        } else {
            edge_kill_at(i, e, recycler, side == IN ? n : o);
        }
    }
}

/* Under the graph lock: n, which no entry reaches any more, leaves the graph; at once when its
 * lists are short, else marked dead and reaped later. Inlined in a thread's batch
 * (nodes_gone_leave), every lock's end in `groups`; node_leave elsewhere. */
static inline __attribute__((always_inline)) void node_leave_at(node *n, lt_thread *recycler)
{
    if (node_pushed(n) > EAGER) {
        node_kill(n);
        return;
    }
    list_leave(n, OUT, recycler);
    list_leave(n, IN, recycler);
    node_free(n, recycler);
}

static void node_leave(node *n)
{
    node_leave_at(n, NULL);
}

/* Under the graph lock: l lets go of its node n, which leaves the graph unless another thread
 * took it first. */
static void node_retire(lt_lock *l, node *n)
{
    if (atomic_compare_exchange_strong(&l->order_node, &n, NULL))
        node_leave(n);
}

/*
 * Under the graph lock, before anything of the graph is looked at: up to `budget` steps of
 * reaping, each a list entry of a dead node let go (which kills its edge) or a dead node with
 * empty lists freed. Every edge of a dead node is in its lists, so none is left naming it.
 * The nodes killed meanwhile wait in `dying` until those being reaped are done.
 */
static void reap(size_t budget)
{
    graph_held();
    if (atomic_load_explicit(&nback, memory_order_relaxed))
        budget = SIZE_MAX;
    for (; budget; budget--) {
        if (!reaping && (!atomic_load_explicit(&dying, memory_order_relaxed) ||
                         !(reaping = atomic_exchange_explicit(&dying, NULL, memory_order_acquire))))
            return;
        node *n = reaping;
        int side = n->list[OUT].first ? OUT : IN;
        uint32_t i = n->list[side].first;
        if (i) {
            n->list[side].first = edge_at(i)->next[side];
            edge_kill(i);
        } else {
            reaping = next_of(n);
            node_free(n, NULL);
        }
    }
}

/* Under the graph lock: the nodes t let go of (lt_order_forget) leave the graph. */
static void nodes_gone_leave(lt_thread *t)
{
    graph_held();
    for (uint32_t i = 0; i < t->node_ngone; i++)
        node_leave_at(t->node_gone[i], t);
    t->node_ngone = 0;
}

/*
 * A lock without a node (most of those initialised) costs one load here. A thread lets go of
 * a node without the graph lock. One whose end may imply edges (node_implies) goes on
 * `ending` as it is, standing for its lock until the next taking of the graph lock that adds
 * edges or searches draws what it implies (ending_draw), in the order the locks ended: so a
 * block of thousands of locks freed at once, whose edges lead to each other, costs a look at
 * the first entries of each one's lists, and a program that makes no new edge after it never
 * pays for the rest (the `lazy` stress row ends so). Any other is marked dead, so every walk
 * passes its edges by from then on (edge_live) and no new edge finds it, and the thread keeps
 * it until it has FORGET_BATCH of them (or exits), which then leave the graph under one
 * taking of the lock. While the graph has a cycle a node leaves at once, with what it implies
 * drawn (as in reap), and so does one that a thread not registered lets go of.
 */
static int node_implies(const node *x);
static int node_busy(const node *x);
static void inline_forget_locked(lt_lock *l);
static inline const inline_edge *inline_implied(const lt_lock *l, const inline_edge *r);
static void node_imply(node *x);

/* What a report says of the lock of x, whose identity ends now (`how`): noted in x, as its
 * memory may go before x's end is drawn. Its type is the one noted while it lived (flavour):
 * its memory may be gone already (a dlclose'd library's static mutex, forgotten after the
 * unmapping: LibreOffice faulted at exit; peer-plugin.4), or another lock's (init). */
static void node_end_note(node *x, lt_ended how)
{
    lt_lock *l = x->lock;
    node_cold *c = cold_of(x);
    c->how = (uint8_t)how;
    c->mutex_type = x->kind == LT_MUTEX ? x->flavour : 0;
    c->api = l->api;
    c->first_stack = 0;
    c->first_partial = 0;
    if (atomic_load_explicit(&l->gen, memory_order_relaxed) == x->gen) {
        c->first_stack = l->first_stack;
        c->first_partial = l->first_partial;
    }
}

/* Under the graph lock: the nodes on `ending` leave the graph, in the order their locks ended,
 * each with the edges it implies drawn (a later one still stands for its lock then). */
static void ending_draw(void)
{
    graph_held();
    node *n = atomic_load_explicit(&ending, memory_order_relaxed), *first = NULL, *next;
    if (lt_likely(!n))
        return;
    for (n = atomic_exchange_explicit(&ending, NULL, memory_order_acquire); n; n = next) {
        next = next_of(n);
        next_set(n, first);
        first = n;
    }
    for (n = first; n; n = next) {
        next = next_of(n);
        node_imply(n);
        atomic_store_explicit(&n->ending, 0, memory_order_relaxed);
        node_leave(n);
    }
}

/* l's node leaves the graph now, under the graph lock, with the edges it implied made. */
static __attribute__((noinline)) void forget_now(lt_lock *l, lt_ended how)
{
    node *n;
    graph_enter();
    ending_draw();
    inline_forget_locked(l);
    if ((n = node_of(l)) != NULL) {
        node_end_note(n, how);
        node_imply(n);
        node_retire(l, n);
    }
    graph_leave();
}

/* n, let go of by its entry and not busy, waits in t's batch, which leaves the graph once it
 * has FORGET_BATCH nodes (out of line: the common end of a lock then needs no frame). */
static __attribute__((noinline)) void nodes_gone_batch(lt_thread *t)
{
    graph_enter();
    nodes_gone_leave(t);
    graph_leave();
}

static inline void node_gone(lt_thread *t, node *n)
{
    atomic_store_explicit(&n->dead, 1, memory_order_release);
    t->node_gone[t->node_ngone] = n;
    if (++t->node_ngone >= FORGET_BATCH)
        nodes_gone_batch(t);
}

/* l's node n, busy (node_busy), goes on `ending` in the gate: its end may imply edges, and no
 * search runs until it is drawn, so none names it while its lock's memory may be going. */
static __attribute__((noinline)) void forget_ending(node *n, lt_ended how)
{
    node_end_note(n, how);
    atomic_store_explicit(&n->ending, 1, memory_order_release);
    node *top = atomic_load_explicit(&ending, memory_order_relaxed);
    do
        next_set(n, top);
    while (!atomic_compare_exchange_weak_explicit(&ending, &top, n, memory_order_release,
                                                  memory_order_relaxed));
}

/* lt_order_forget for a lock with an inline edge in, or out only (ref): in the gate, so that
 * no holder of the graph lock makes it real meanwhile, the entry keeps the room for its next
 * identity, unless the end implies an edge, when the lock makes it real first. A plain store:
 * two ends of one identity at once (a program's race) store the same. (A function of its own:
 * lt_order_forget_node's frame was a tenth of a lock's end in `groups`.) ref was read before
 * the gate: a holder of the graph lock may have given l a node since, though no thread holds
 * l - another thread's acquisition made an inline edge out of l real (inline_realise goes up
 * the inline edges, inline_edge_real gives their from a node) - and its room is then an edge
 * of the graph, or back in the pool. So the gate reads the reference again, and the lock
 * answers when it changed (a destroy that went on with the one it read took the real edge
 * for an inline one, or kept a room the pool handed out again). */
void lt_order_forget_inline(lt_lock *l, node *ref, lt_ended how)
{
    lt_thread *t = lt_tls.self;
    uint32_t i = ref_room(ref);
    if (t && gate_enter(t)) {
        int done = order_ref(l) == ref && (!ref_inline(ref) || !inline_implied(l, inline_at(i)));
        if (done)
            atomic_store_explicit(&l->order_node, kept_ref(i), memory_order_release);
        gate_leave(t);
        if (done)
            return;
    }
    forget_now(l, how);
}

/* In the gate, like lt_order_forget_inline and for the same reason: a holder of the graph
 * lock may be making l's node now, though no thread holds l - another thread's acquisition
 * makes the inline edges around l real (inline_realise publishes the nodes up the inline
 * edges, then makes their edges; node_get gives the lock they come from one, then its edge out;
 * the children down are made after) - and its lists are then not yet what node_busy reads.
 * A destroy that read them so took the node from its entry under inline_realise, which then
 * went on with the NULL it read back (SIGSEGV in inline_edge_real), or the end lost what it
 * implied. When the gate is shut the lock answers. */
void lt_order_forget_node(lt_lock *l, node *n, lt_ended how)
{
    lt_thread *t = lt_tls.self;
    if (!t || atomic_load_explicit(&nback, memory_order_relaxed) || !gate_enter(t)) {
        forget_now(l, how);
        return;
    }
    node *mine = n;
    int implies = node_busy(n) && node_implies(n),
        got = atomic_compare_exchange_strong(&l->order_node, &mine, NULL);
    if (got && implies)
        forget_ending(n, how);
    gate_leave(t);
    if (got && !implies)
        node_gone(t, n);
}

/* Can a thread holding n in `held` block one requesting it in `req`? */
static int conflicts(const node *n, lt_mode held, lt_mode req)
{
    return n->exclusive_only || held == LT_MODE_WRITE || req == LT_MODE_WRITE ||
           n->flavour; /* (an rwlock's: whether it prefers writers) */
}

/* ------------------------------------------------------------------------------------------
 * Topological order (Pearce and Kelly's incremental algorithm): every edge that is not a
 * "back" edge goes from a lower ord to a higher one. A new edge against the order reorders
 * just the nodes between its ends; one that closes a cycle of the plain graph (any modes)
 * cannot be placed and is marked back. While no back edge exists the graph has no cycle, so
 * no new edge needs a cycle search at all. Under the graph lock.
 * ---------------------------------------------------------------------------------------- */
static lt_bfs pk_fwd, pk_bwd;
static int64_t *pk_ords;
static size_t pk_ords_cap;

typedef struct pk_bound {
    node *stop;    /* forward: the new edge's source; reaching it means a cycle */
    int64_t ord;   /* forward: visit below it; backward: above it */
} pk_bound;

static void pk_expand_fwd(lt_bfs *b, size_t at)
{
    const pk_bound *k = b->ctx;
    node *n = b->items[at].node;
    edge *e;
    for (uint32_t *link = &n->list[OUT].first; (e = edge_live(link, OUT)); link = &e->next[OUT]) {
        node *w = node_at(e->to);
        if (e->back || cold_of(w)->pk_mark == stamp || w->ord > k->ord)
            continue;
        cold_of(w)->pk_mark = stamp;
        if (!lt_bfs_reach(b, at, w, e, 0, w == k->stop))
            return;
    }
}

static void pk_expand_bwd(lt_bfs *b, size_t at)
{
    const pk_bound *k = b->ctx;
    node *n = b->items[at].node;
    edge *e;
    for (uint32_t *link = &n->list[IN].first; (e = edge_live(link, IN)); link = &e->next[IN]) {
        node *w = node_at(e->from);
        if (e->back || cold_of(w)->pk_mark == stamp || w->ord < k->ord)
            continue;
        cold_of(w)->pk_mark = stamp;
        if (!lt_bfs_reach(b, at, w, e, 0, 0))
            return;
    }
}

/* Sorts items[0 .. n) by their nodes' ord (heapsort: nothing here may call malloc). */
static void sort_by_ord(lt_bfs_item *a, size_t n)
{
#define ORD(i) (((node *)a[i].node)->ord)
    for (size_t end = n, start = n / 2; end > 1;) {
        size_t root;
        if (start > 0) {
            root = --start;
        } else {
            lt_bfs_item t = a[0];
            a[0] = a[--end];
            a[end] = t;
            root = 0;
        }
        for (size_t child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && ORD(child + 1) > ORD(child))
                child++;
            if (ORD(root) >= ORD(child))
                break;
            lt_bfs_item t = a[root];
            a[root] = a[child];
            a[child] = t;
        }
    }
#undef ORD
}

/* The nodes of a and their ords leave `moved` (before the reordering) or join it (after).
 * Without memory to remember them, node_place stops using addresses. */
static void pk_moved(const lt_bfs_item *a, size_t n, int join)
{
    for (size_t i = 0; i < n; i++) {
        const node *x = a[i].node;
        if (!ord_moved(x))
            continue;
        if (!join)
            lt_set_remove(&moved, ord_key(x->ord));
        else if (!lt_set_add(&moved, ord_key(x->ord)))
            moved_lost = 1;
    }
}

/* The new edge from -> to runs against the order: reorder, or say it closes a cycle (1). */
static int pk_insert(node *from, node *to)
{
    pk_bound fwd = {from, from->ord}, bwd = {NULL, to->ord};
    pk_fwd.expand = pk_expand_fwd;
    pk_fwd.ctx = &fwd;
    pk_bwd.expand = pk_expand_bwd;
    pk_bwd.ctx = &bwd;
    stamp++;
    cold_of(to)->pk_mark = stamp;
    if (lt_bfs_run(&pk_fwd, to, 0) || pk_fwd.failed)
        return 1;
    stamp++;
    cold_of(from)->pk_mark = stamp;
    lt_bfs_run(&pk_bwd, from, 0);
    size_t nf = pk_fwd.n, nb = pk_bwd.n;
    if (pk_bwd.failed || !lt_scratch_fit((void **)&pk_ords, &pk_ords_cap, nf + nb, sizeof *pk_ords))
        return 1; /* out of memory: treated as a cycle, which only costs searches */
    sort_by_ord(pk_bwd.items, nb);
    sort_by_ord(pk_fwd.items, nf);
    /* The ords both sets hold, merged in order, go to the backward set first. */
    size_t i = 0, j = 0, k = 0;
    while (i < nb || j < nf) {
        int take_b = j == nf || (i < nb && ((node *)pk_bwd.items[i].node)->ord <
                                               ((node *)pk_fwd.items[j].node)->ord);
        pk_ords[k++] = take_b ? ((node *)pk_bwd.items[i++].node)->ord
                              : ((node *)pk_fwd.items[j++].node)->ord;
    }
    pk_moved(pk_bwd.items, nb, 0);
    pk_moved(pk_fwd.items, nf, 0);
    for (k = 0; k < nb; k++)
        ((node *)pk_bwd.items[k].node)->ord = pk_ords[k];
    for (k = 0; k < nf; k++)
        ((node *)pk_fwd.items[k].node)->ord = pk_ords[nb + k];
    pk_moved(pk_bwd.items, nb, 1);
    pk_moved(pk_fwd.items, nf, 1);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Cycle search: breadth-first from the newly taken lock X over live nodes, entering each node
 * with a request mode and leaving it only by an edge whose held mode conflicts with it. A goal
 * is a lock the thread taking X holds, in a mode that conflicts with the request reaching it:
 * it was held when X was taken, so the path back to it and the edge H -> X close a cycle. The
 * nearest goal gives a shortest cycle through X.
 * ---------------------------------------------------------------------------------------- */
typedef struct search {
    lt_thread *t;
    lt_held *goal; /* the thread's entry for the lock the path ends at */
} search;

static lt_bfs cycle_bfs;

static uint64_t reached_key(const lt_bfs *b, size_t at, const node *w);
static int reported_has(uint64_t key);

static void cycle_expand(lt_bfs *b, size_t at)
{
    search *s = b->ctx;
    node *n = b->items[at].node;
    lt_mode in = (lt_mode)b->items[at].aux;
    edge *e;
    for (uint32_t *link = &n->list[OUT].first; (e = edge_live(link, OUT)); link = &e->next[OUT]) {
        node *w = node_at(e->to);
        int m = e->to_mode == LT_MODE_WRITE;
        if (!conflicts(n, (lt_mode)e->from_mode, in) || cold_of(w)->mark[m] == stamp ||
            !node_live(w))
            continue;
        cold_of(w)->mark[m] = stamp;
        lt_held *h = lt_held_find(s->t, w->addr);
        int goal = h && h->lock == w->lock && h->gen == w->gen &&
                   conflicts(w, (lt_mode)h->mode, (lt_mode)e->to_mode);
        /* A cycle reported before is no goal: one through X that is not, maybe longer or
         * through another held lock, may be new (a second ABBA between other threads). */
        if (goal && reported_has(reached_key(b, at, w)))
            goal = 0;
        if (goal)
            s->goal = h;
        if (!lt_bfs_reach(b, at, w, e, e->to_mode, goal))
            return;
    }
}

/* ---------------------------------------------------------------------------------------- */

/*
 * A cycle is one inversion whichever edge closes it and whichever way a search goes round it:
 * keyed by the set of its locks, each counted once (a path may pass an rwlock twice, entered
 * for read, then for write). Its nodes are gathered in key_nodes, under the graph lock.
 */
static const node **key_nodes;
static size_t key_nodes_cap;

/* The key of the nodes key_nodes[0 .. n). */
static uint64_t lock_set_key(size_t n)
{
    uint64_t sum = 0, x = 0;
    for (size_t i = 0; i < n; i++) {
        const node *k = key_nodes[i];
        size_t j = 0;
        while (j < i && key_nodes[j] != k)
            j++;
        if (j < i)
            continue;
        uint64_t h = ((uint64_t)(uintptr_t)k->lock ^ ((uint64_t)k->gen << 48)) *
                     0x9E3779B97F4A7C15ull;
        sum += h;
        x ^= h >> 17;
    }
    return sum ^ (x * 0xff51afd7ed558ccdull);
}

/* The key of the cycle of the n nodes of cycle_bfs's path; 0 when out of memory. */
static uint64_t cycle_key(size_t n)
{
    if (!lt_scratch_fit((void **)&key_nodes, &key_nodes_cap, n, sizeof *key_nodes))
        return 0;
    for (size_t i = 0; i < n; i++)
        key_nodes[i] = cycle_bfs.path[i].node;
    return lock_set_key(n);
}

/* The key of the cycle the search closes at w, reached from items[at]; 0 when out of memory. */
static uint64_t reached_key(const lt_bfs *b, size_t at, const node *w)
{
    size_t n = 1;
    for (size_t i = at;; i = b->items[i].parent) {
        n++;
        if (i == 0)
            break;
    }
    if (!lt_scratch_fit((void **)&key_nodes, &key_nodes_cap, n, sizeof *key_nodes))
        return 0;
    key_nodes[0] = w;
    n = 1;
    for (size_t i = at;; i = b->items[i].parent) {
        key_nodes[n++] = b->items[i].node;
        if (i == 0)
            break;
    }
    return lock_set_key(n);
}


static int reported_has(uint64_t key)
{
    const uint64_t *keys = reported;
    for (size_t i = 0; key && i < nreported; i++)
        if (keys[i] == key)
            return 1;
    return 0;
}

/* Records key; 0 when it was there already (or cannot be remembered: then it is reported
 * again rather than lost). */
static int first_report(uint64_t key)
{
    if (reported_has(key))
        return 0;
    if (!key || !lt_scratch_fit(&reported, &reported_cap, nreported + 1, sizeof key))
        return 1;
    ((uint64_t *)reported)[nreported++] = key;
    return 1;
}

static size_t cycle_bytes(size_t n)
{
    return n * (sizeof(lt_edge_info *) + sizeof(lt_edge_info));
}

/* A plain edge's first occurrence: label l, in these modes. */
static void occurrence_plain(occurrence *o, const label *l, uint8_t from_mode, uint8_t to_mode)
{
    *o = (occurrence){.from_stack = l->from_stack, .to_stack = l->to_stack,
                      .from_mode = from_mode, .to_mode = to_mode,
                      .from_partial = l->from_partial, .to_partial = l->to_partial,
                      .thread = l->thread};
}

/* What edge e says: its first occurrence, or the path it stands for (not counted in refs). */
static void occurrence_of(occurrence *o, const edge *e)
{
    if (e->implied)
        *o = (occurrence){.from_mode = e->from_mode, .to_mode = e->to_mode,
                          .sub = implied_at(e->label)};
    else
        occurrence_plain(o, label_at(e->label), e->from_mode, e->to_mode);
}

/* A plain edge's occurrence o, as a report has it, but the locks. */
static void occurrence_info(lt_edge_info *i, const occurrence *o)
{
    memset(i, 0, sizeof *i);
    i->from_mode = (lt_mode)o->from_mode;
    i->to_mode = (lt_mode)o->to_mode;
    i->from_stack = o->from_stack;
    i->to_stack = o->to_stack;
    i->from_partial = o->from_partial;
    i->to_partial = o->to_partial;
    i->thread = *o->thread;
}

/* Are e's stacks unwound ones (request_describe)? */
static int edge_unwound(const edge *e)
{
    return !e->implied && label_at(e->label)->unwound;
}

/* What the plain edge e says, as a report has it; under the graph lock (its nodes are live). */
static void edge_info(lt_edge_info *i, const edge *e)
{
    occurrence o;
    const node *from = node_at(e->from), *to = node_at(e->to);
    occurrence_of(&o, e);
    occurrence_info(i, &o);
    lt_lock_ref_fill(&i->from, from->addr, from->kind, from->lock);
    lt_lock_ref_fill(&i->to, to->addr, to->kind, to->lock);
}

static uint32_t edge_hops(const edge *e);
static size_t edge_infos(lt_edge_info *copy, size_t k, const edge *e);

/* Copies the cycle of n locks out of the search's path, by value (once the lock is released
 * its edges may go), the closing edge H -> X first, left for the caller to fill, an implied
 * edge as the edges of its path: *m edges in all. NULL when already reported. One mapping:
 * the pointers, then the edges. */
static const lt_edge_info **take_cycle(size_t n, size_t *m)
{
    if (!first_report(cycle_key(n)))
        return NULL;
    *m = 1;
    for (size_t i = 1; i < n; i++)
        *m += edge_hops(cycle_bfs.path[i].via);
    const lt_edge_info **out = lt_map(cycle_bytes(*m));
    lt_edge_info *copy = out ? (lt_edge_info *)(out + *m) : NULL;
    for (size_t i = 1, k = 1; out && i < n; i++)
        k = edge_infos(copy, k, cycle_bfs.path[i].via);
    for (size_t i = 0; out && i < *m; i++)
        out[i] = &copy[i];
    return out;
}

static void report_inversion(const lt_edge_info **cycle, size_t n)
{
    lt_finding f = {.kind = LT_FIND_INVERSION, .why = LT_WHY_ORDER_CYCLE};
    f.outcome = lt_cfg.inversion == LT_INVERSION_ABORT ? LT_OUTCOME_ABORT : LT_OUTCOME_CONTINUE;
    f.thread = cycle[0]->thread;
    f.edges = cycle;
    f.nedges = n;
    f.one_thread = 1;
    for (size_t i = 1; i < n; i++)
        f.one_thread &= cycle[i]->thread.tid == cycle[0]->thread.tid;
    lt_report(&f);
    lt_platform_unmap(cycle, cycle_bytes(n));
}

/* ------------------------------------------------------------------------------------------
 * New edges. An edge keeps where both of its locks were taken and by which thread. A full
 * stack needs an unwind (and the thread's name a system call), which would dominate the cost
 * of a new edge; so each call site unwinds for its first UNWOUND_PER_SITE new edges only, and
 * after that an edge keeps the frames recorded cheaply with each acquisition (call site and
 * its next callers, callsite.c), marked partial, and the thread's name as last read. A
 * program with few new edges (most, and every inversion found early) gets full stacks; one
 * that makes new edges by the million at a few sites gets them at the cost of a few loads.
 * The edge that closes a reported cycle is made or remade unwound, from the live stack.
 * ---------------------------------------------------------------------------------------- */
#define UNWOUND_PER_SITE 64
#define SITE_COUNTERS 4096

static _Atomic uint8_t site_unwound[SITE_COUNTERS]; /* per call site (hashed): unwinds made */

typedef struct request {
    lt_event *ev;
    uint32_t gen;           /* the new lock's gen */
    int described;          /* the fields below are filled (for the first new edge) */
    int unwound;            /* to_stack is unwound, and from stacks are joined to it */
    uint32_t to_stack;      /* where it is being taken */
    int to_partial;
    lt_thread_info thread;  /* the thread taking it */
    int added;              /* an edge into it was added to the graph */
    int fresh;              /* it had no node: no edge into it was known */
} request;

static _Atomic uint8_t *site_counter(uintptr_t ra)
{
    return &site_unwound[(ra * 0x9E3779B97F4A7C15ull) >> 52];
}

/* Has call site ra unwinds left (without taking one)? */
static int site_unwinds(uintptr_t ra)
{
    return atomic_load_explicit(site_counter(ra), memory_order_relaxed) < UNWOUND_PER_SITE;
}

static int site_may_unwind(uintptr_t ra)
{
    if (!site_unwinds(ra))
        return 0;
    atomic_fetch_add_explicit(site_counter(ra), 1, memory_order_relaxed);
    return 1;
}

/* Where and by whom the new lock is taken, unwound (and the name read) when `unwind`: the whole
 * stack as blocking waits take it (lt_stack_whole), read through the site table where that
 * knows every frame. libunwind's backtrace built a 256 KiB trace cache at a thread's first
 * one, 64 page faults: in `groups` a third of its first round's acquisitions' time. */
static void request_fill(request *r, int unwind)
{
    lt_thread *t = r->ev->self;
    r->described = 1;
    r->unwound = unwind;
    if (unwind) {
        r->to_stack = lt_stack_whole(t, r->ev->ra, r->ev->cfa);
        r->to_partial = 0;
        lt_thread_info_now(t, &r->thread);
        memcpy(t->info.name, r->thread.name, sizeof t->info.name); /* the name as last read */
        t->first_label = 0; /* it named the thread as it was (first_label) */
        return;
    }
    r->to_stack = r->ev->site ? r->ev->site : lt_stack_site_lazy(t, r->ev->ra, r->ev->cfa);
    r->to_partial = 1;
    if (!t->info.name[0])
        lt_thread_info_now(t, &t->info);
    r->thread = t->info;
}

static void request_describe(request *r)
{
    if (!r->described)
        request_fill(r, lt_cfg.stacks == LT_STACKS_FULL || site_may_unwind(r->ev->ra));
}

static inline uint64_t held_below(const lt_thread *t, const lt_held *h);
static inline uint64_t edge_below(const lt_thread *t, lt_held *h);
static uint64_t below_keep(lt_thread *t, lt_held *h);

/* lt_held_stack(h, under, partial), with its answers that need no depot inline: every new
 * edge out of a lock taken lazily asks, nearly always with no stack to join, and the two
 * calls to say "its recorded frames" were a tenth of a lock's first edge in `groups`. */
static inline uint32_t held_stack(lt_held *h, uint32_t under, int *partial)
{
    *partial = !h->stack;
    if (h->stack)
        return h->stack;
    if (!under && h->site)
        return h->site;
    return lt_held_stack(h, under, partial);
}

/* The edge h -> (the lock t takes in to_mode, where to_stack says) as it will be kept, made by
 * `thread`. */
static inline void desc_make_from(desc *d, const lt_thread *t, lt_held *h, uint32_t from_stack,
                                  int partial, lt_mode to_mode, uint32_t to_stack,
                                  int to_partial, int unwound, const lt_thread_info *thread);

static inline void desc_make(desc *d, const lt_thread *t, lt_held *h, lt_mode to_mode,
                             uint32_t to_stack, int to_partial, int unwound,
                             const lt_thread_info *thread)
{
    int partial;
    uint32_t from_stack = held_stack(h, unwound ? to_stack : 0, &partial);
    desc_make_from(d, t, h, from_stack, partial, to_mode, to_stack, to_partial, unwound, thread);
}

/* The part of d that is the edge's own, not its label's: what edge_fill takes from d. */
static inline void desc_ends(desc *d, const lt_thread *t, lt_held *h, lt_mode to_mode)
{
    d->below = edge_below(t, h);
    d->from_mode = h->mode;
    d->to_mode = (uint8_t)to_mode;
}

/* The label of the edge from a lock taken at from_stack (partial: only its recorded frames)
 * to one taken at to_stack, made by `thread`. */
static inline void label_make(label *l, uint32_t from_stack, int partial, uint32_t to_stack,
                              int to_partial, int unwound, const lt_thread_info *thread)
{
    /* Both stacks by one store, and the flags as their byte: label_find compares the stacks
     * as a word and the flags as a byte, and a load that spans narrower stores still in
     * flight waits for them (store forwarding fails): a tenth of edge_first's time in groups
     * each (three bit-fields compared at once were loaded as 4 bytes). */
    uint32_t stacks[2] = {from_stack, to_stack};
    uint64_t word;
    memcpy(&word, stacks, sizeof word);
    memcpy(l, &word, sizeof word); /* into the label, not its first field: they are its start */
    l->thread = thread;
    l->flags = 0;
    l->from_partial = partial != 0;
    l->to_partial = to_partial != 0;
    l->unwound = unwound != 0;
}

/* desc_make with h's stack (and whether it is partial) known. */
static inline void desc_make_from(desc *d, const lt_thread *t, lt_held *h, uint32_t from_stack,
                                  int partial, lt_mode to_mode, uint32_t to_stack,
                                  int to_partial, int unwound, const lt_thread_info *thread)
{
    desc_ends(d, t, h, to_mode);
    label_make(&d->l, from_stack, partial, to_stack, to_partial, unwound, thread);
}

/* The edge h -> r as it will be kept. */
static inline void edge_describe(desc *d, lt_held *h, request *r)
{
    request_describe(r);
    desc_make(d, r->ev->self, h, r->ev->mode, r->to_stack, r->to_partial, r->unwound,
              &r->thread); /* until the graph keeps it (thread_intern) */
}

/* Edge e made as d says (of h -> the lock t takes), its first occurrence label lab; not yet in
 * the graph: its ends and `lists` are written where it joins them (edge_join, edge_first).
 * Field by field: `*e = (edge){...}` compiled to a string store (rep stos) of the whole edge
 * before its fields, in edges_fast ~17 of the instructions a new edge takes. A below that
 * edge_below left open (BELOW_RUN) is decided here, where the edge is kept, a run from one of
 * t's own edges: t has WALK more than the edges it makes. */
static void edge_fill(edge *e, const desc *d, uint32_t lab, lt_thread *t, lt_held *h)
{
    e->next[OUT] = e->next[IN] = 0;
    e->label = lab;
    e->from_mode = d->from_mode;
    e->to_mode = d->to_mode;
    e->back = e->dead = e->implied = 0;
    e->below = lt_unlikely(d->below & BELOW_RUN) ? below_keep(t, h) : d->below;
}

static inline uint64_t edge_fp(const lt_held *h, const request *r)
{
    return fingerprint(h->lock, h->gen, (lt_mode)h->mode, r->ev->lock, r->gen, r->ev->mode);
}

/* The threads edges name, each as it was named (a thread's name changes rarely), kept once
 * each: a label holds a pointer, not the 24 bytes. The last one kept for each thread (by
 * seq, hashed) is looked up first; a thread that misses there, or was renamed, is kept
 * again. Under the graph lock; NULL when out of memory. A record that no label and no
 * implied edge names any more goes back to the pool at the next sweep (label_sweep). */
#define THREAD_SLOTS 1024

typedef struct thread_rec {
    lt_thread_info info; /* first: a label's thread is this */
    uint32_t mark;       /* the last sweep that found it named (sweep_stamp) */
} thread_rec;

static const lt_thread_info *thread_kept[THREAD_SLOTS];
static uint32_t sweep_stamp; /* sweeps made (label_sweep), for their marks */
static lt_pool thread_pool = LT_POOL(thread_rec, LT_ARENA_CHUNK);
static thread_rec **thread_recs; /* every record kept, for the sweep */
static size_t nthread_recs, thread_recs_cap;

static const lt_thread_info **thread_slot(const lt_thread_info *who)
{
    return &thread_kept[(unsigned)who->seq % THREAD_SLOTS];
}

/* who as last kept; NULL when it is not (read only: the lock's holder or edges_fast). */
static const lt_thread_info *thread_kept_find(const lt_thread_info *who)
{
    const lt_thread_info *kept = *thread_slot(who);
    return kept && !memcmp(kept, who, sizeof *who) ? kept : NULL;
}

static const lt_thread_info *thread_intern(const lt_thread_info *who)
{
    graph_held();
    const lt_thread_info **slot = thread_slot(who);
    thread_rec *kept;
    if (thread_kept_find(who))
        return *slot;
    if (!lt_scratch_fit((void **)&thread_recs, &thread_recs_cap, nthread_recs + 1,
                        sizeof *thread_recs) ||
        !(kept = lt_pool_take(&thread_pool)))
        return NULL;
    *kept = (thread_rec){.info = *who, .mark = sweep_stamp};
    thread_recs[nthread_recs++] = kept;
    *slot = &kept->info;
    return &kept->info;
}

/* The labels, found by what they say through an open-addressing set of their indices: read
 * without the graph lock (edges_fast and edge_first leave an edge whose label is not found to
 * the lock), written under it, and copied into one twice as large when half full (the old
 * one keeps its range but not its memory: a reader still in it finds nothing). There are as
 * many as distinct (stacks, thread) pairs with an edge: a label that no edge names any more
 * goes back to the pool at the next sweep (label_sweep), so a thread's labels go some time
 * after its edges. */
#define LABELS_MIN 1024

typedef struct label_set {
    size_t mask, used;
    _Atomic uint32_t slot[];
} label_set;

static label_set *_Atomic labels;

static size_t label_home(const label_set *s, const label *l)
{
    uint64_t a = ((uint64_t)l->from_stack << 32 | l->to_stack) * 0x9E3779B97F4A7C15ull;
    uint64_t b = ((uint64_t)(uintptr_t)l->thread ^ (uint64_t)l->from_partial << 1 ^
                  (uint64_t)l->to_partial << 2 ^ (uint64_t)l->unwound << 3) *
                 0xC2B2AE3D27D4EB4Full;
    return (size_t)((a ^ b ^ (b >> 29)) >> 32) & s->mask;
}

static int label_same(const label *a, const label *b)
{
    return a->from_stack == b->from_stack && a->to_stack == b->to_stack &&
           a->thread == b->thread && a->flags == b->flags;
}

/* x, a label of t's new edge, joins t's last ones in place of the oldest. */
static uint32_t label_keep(lt_thread *t, uint32_t x)
{
    unsigned j = t->edge_label_next++ % LT_EDGE_LABELS;
    t->edge_label[j].l = *label_at(x);
    return t->edge_label[j].ix = x;
}

/* label_find's look-up in the set. */
static __attribute__((noinline)) uint32_t label_lookup(lt_thread *t, const label *l)
{
    label_set *s = atomic_load_explicit(&labels, memory_order_acquire);
    for (size_t i = s ? label_home(s, l) : 0; s; i = (i + 1) & s->mask) {
        uint32_t x = atomic_load_explicit(&s->slot[i], memory_order_acquire);
        if (x == 0)
            return 0;
        if (label_same(label_at(x), l))
            return label_keep(t, x);
    }
    return 0;
}

/* Sweeps of the labels made (label_sweep): an index a thread found before one may name
 * another label since, or a freed one. Written under the graph lock with the gate shut, so
 * read in the gate or under the lock it says whether one came between. */
static _Atomic uint32_t label_sweeps;

/* In the gate or under the graph lock: were t's kept labels (edge_label, first_label), and
 * the indices it found outside the gate, found after the last sweep? Those found before are
 * not used (edge_first: the general way, under the lock, finds them again). */
static inline int labels_current(const lt_thread *t)
{
    return t->label_sweep == atomic_load_explicit(&label_sweeps, memory_order_relaxed);
}

/* In the gate or under the graph lock: t's kept labels emptied when a sweep came since they
 * were found. */
static inline void labels_renew(lt_thread *t)
{
    if (lt_likely(labels_current(t)))
        return;
    memset(t->edge_label, 0, sizeof t->edge_label);
    t->first_label = 0;
    t->label_sweep = atomic_load_explicit(&label_sweeps, memory_order_relaxed);
}

/* l's index, its thread kept; 0 when it has none (yet). A thread's new edges mostly have one
 * of the labels of its last few, which it keeps by value (t->edge_label): its call sites, each
 * way round (`lazy` alternates four, for which one label missed half of the time). Kept as
 * indices, the most recent first, each look at one went through the pool's table of chunks
 * and each hit not first moved it there: ~20 instructions a new edge in `lazy`. */
static inline uint32_t label_find(lt_thread *t, const label *l)
{
    for (size_t j = 0; j < LT_EDGE_LABELS; j++)
        if (label_same(&t->edge_label[j].l, l))
            return t->edge_label[j].ix;
    return label_lookup(t, l);
}

/* The label edge_label_gated found last in one batch: the from stack it was found for (its
 * partial flag above it; 0: none yet), and its index. */
typedef struct label_memo {
    uint64_t from;
    uint32_t lab;
} label_memo;

/*
 * The edge h -> r in the gate, r described and its thread kept (`who`): d's part that is the
 * edge's own (desc_ends), and its label's index; 0: the graph lock describes it, where the
 * stack depot is asked (lt_held_stack, for a stack of h that is neither recorded nor its call
 * site's frames, or to be joined to r's unwound one). The labels of a batch's edges differ
 * only in their from stacks, and a batch's held locks were mostly taken at one place (`lazy`:
 * its read locks at one call site): the label found last (*m) is asked first, where making
 * each edge's label and finding it (label_find) cost ~40 instructions a new edge.
 */
static inline uint32_t edge_label_gated(desc *d, lt_held *h, const request *r,
                                        const lt_thread_info *who, label_memo *m)
{
    uint32_t from_stack = h->stack ? h->stack : r->unwound ? 0 : h->site;
    uint64_t from = (uint64_t)!h->stack << 32 | from_stack;
    if (!from_stack)
        return 0;
    desc_ends(d, r->ev->self, h, r->ev->mode);
    if (from == m->from)
        return m->lab;
    label_make(&d->l, from_stack, !h->stack, r->to_stack, r->to_partial, r->unwound, who);
    uint32_t lab = label_find(r->ev->self, &d->l);
    if (lab) {
        m->from = from;
        m->lab = lab;
    }
    return lab;
}

/* Under the graph lock: label x (absent) into s. */
static void label_put(label_set *s, uint32_t x)
{
    size_t i = label_home(s, label_at(x));
    while (atomic_load_explicit(&s->slot[i], memory_order_relaxed))
        i = (i + 1) & s->mask;
    atomic_store_explicit(&s->slot[i], x, memory_order_release);
    s->used++;
}

static size_t label_set_bytes(size_t slots)
{
    return sizeof(label_set) + slots * sizeof(uint32_t);
}

static void label_sweep(const lt_thread_info *pin);

/* Labels in use from which on the next label made sweeps first (label_sweep sets it). */
static size_t label_sweep_at = LABELS_MIN;

/* Under the graph lock: l's index, made if it has none, its thread kept; 0 when out of
 * memory. */
static uint32_t label_intern(lt_thread *t, const label *l)
{
    graph_held();
    labels_renew(t);
    uint32_t x = label_find(t, l);
    label_set *s, *g;
    if (x)
        return x;
    if (lt_ix_handed(&label_pool) - label_pool.nfree >= label_sweep_at) {
        label_sweep(l->thread);
        labels_renew(t);
    }
    s = atomic_load_explicit(&labels, memory_order_relaxed);
    if (!s || (s->used + 1) * 2 > s->mask + 1) {
        size_t size = s ? 2 * (s->mask + 1) : LABELS_MIN;
        if (!graph_room(label_set_bytes(size)) || !(g = lt_map(label_set_bytes(size))))
            return 0;
        g->mask = size - 1;
        for (size_t i = 0; s && i <= s->mask; i++)
            if ((x = atomic_load_explicit(&s->slot[i], memory_order_relaxed)) != 0)
                label_put(g, x);
        atomic_store_explicit(&labels, g, memory_order_release);
        if (s)
            lt_platform_discard(s, label_set_bytes(s->mask + 1));
        s = g;
    }
    if (!(x = ix_take(&label_pool)))
        return 0;
    *(label *)label_at(x) = *l;
    label_put(s, x);
    return label_keep(t, x);
}

/*
 * The sweep: labels and thread records that nothing names any more go back to their pools.
 * Kept for good, a thread that made a lock order left them for the life of the process (~90
 * bytes a thread, counted against LOCKTRACE_GRAPH_MAX): a server with a thread per
 * connection grew by that much a connection, and 100,000 short threads took a graph bounded
 * at 1 MB past its bound, after which a new inversion went unreported (harden-limit.5).
 * Under the graph lock with the gate shut, so nothing names a label anew meanwhile. What
 * names one: an edge in a list of a listed node (dead ones too: marking them costs less than
 * telling), an inline edge (in a lock's entry, which lt_shadow_each reads), and an index a
 * thread found outside the gate, which it uses only if no sweep came between
 * (labels_current). A thread record is named by the labels that stay and by implied edges.
 * Reference counts would have cost every lock's first edge a store to its label's line, and
 * its end a locked one when another thread ends it; the sweep costs the first edge a compare.
 * It runs when the labels in use reach twice those the last one kept, and a sixteenth of the
 * nodes, edges and lock entries it walked (so that the walk is paid for), LABELS_MIN at least.
 */
#define SWEEP_PER 16

static uint64_t *label_marks; /* by label index: named, then (a second run of words) free */
static size_t label_marks_cap;

static inline void mark_set(uint64_t *bits, uint32_t i)
{
    bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static inline int mark_has(const uint64_t *bits, uint32_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1;
}

static void label_mark(uint32_t i)
{
    if (i && i < label_pool.next)
        mark_set(label_marks, i);
}

static void thread_mark(const lt_thread_info *who)
{
    if (who)
        ((thread_rec *)(uintptr_t)who)->mark = sweep_stamp;
}

/* The threads of an implied edge's path (its records, each an edge's first occurrence). */
static void implied_mark(const implied *v)
{
    const occurrence *o[2] = {&v->in, &v->out};
    for (int k = 0; k < 2; k++) {
        if (o[k]->sub)
            implied_mark(o[k]->sub);
        else
            thread_mark(o[k]->thread);
    }
}

/* lt_shadow_each's: the label of l's inline edge, if it has one; ctx counts the entries. */
static void inline_mark(lt_lock *l, void *ctx)
{
    uint32_t i = ref_inline(order_ref(l));
    if (i)
        label_mark(inline_at(i)->label);
    ++*(size_t *)ctx;
}

/* Under the graph lock: the sweep, `pin` (a record about to be named) kept. */
static void label_sweep(const lt_thread_info *pin)
{
    graph_held();
    uint32_t next = label_pool.next;
    size_t words = (next + 63) / 64, walked = 0, live = 0;
    label_set *s = atomic_load_explicit(&labels, memory_order_relaxed);
    if (!s || !lt_scratch_fit((void **)&label_marks, &label_marks_cap, 2 * words,
                              sizeof *label_marks))
        return;
    uint64_t *named = label_marks, *spare = label_marks + words;
    memset(label_marks, 0, 2 * words * sizeof *label_marks);
    for (size_t k = 0; k < label_pool.nfree; k++)
        mark_set(spare, label_pool.stack[k]);
    sweep_stamp++;
    thread_mark(pin);
    for (uint32_t i = 1; (i = lt_ix_over(&node_pool, i)) < node_pool.next; i++, walked++) {
        const node *n = node_at(i);
        if (!atomic_load_explicit(&n->listed, memory_order_relaxed))
            continue;
        for (uint32_t j = n->list[OUT].first; j; j = edge_at(j)->next[OUT], walked++) {
            const edge *e = edge_at(j);
            if (e->implied)
                implied_mark(implied_at(e->label));
            else
                label_mark(e->label);
        }
    }
    lt_shadow_each(inline_mark, &walked);
    /* The set again, in place, of the labels that stay: a reader outside the gate meanwhile
     * finds fewer, or an index it does not use (labels_current). */
    for (size_t i = 0; i <= s->mask; i++)
        atomic_store_explicit(&s->slot[i], 0, memory_order_relaxed);
    s->used = 0;
    for (uint32_t i = 1; (i = lt_ix_over(&label_pool, i)) < next; i++) {
        if (mark_has(spare, i))
            continue;
        if (!mark_has(named, i)) {
            lt_ix_put(&label_pool, i);
            continue;
        }
        label_put(s, i);
        thread_mark(label_at(i)->thread);
        live++;
    }
    for (size_t k = 0; k < nthread_recs;) {
        thread_rec *r = thread_recs[k];
        if (r->mark == sweep_stamp) {
            k++;
            continue;
        }
        const lt_thread_info **slot = thread_slot(&r->info);
        if (*slot == &r->info)
            *slot = NULL;
        thread_recs[k] = thread_recs[--nthread_recs];
        lt_pool_put(&thread_pool, r);
    }
    atomic_store_explicit(&label_sweeps,
                          atomic_load_explicit(&label_sweeps, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    label_sweep_at = 2 * live > walked / SWEEP_PER ? 2 * live : walked / SWEEP_PER;
    if (label_sweep_at < LABELS_MIN)
        label_sweep_at = LABELS_MIN;
}

/* ------------------------------------------------------------------------------------------
 * The memory bound, LOCKTRACE_GRAPH_MAX: 16 K locks allow 134 M distinct edges (6 GB), and a
 * program's own memory is no bound on them. The graph takes memory at few places, each under
 * the graph lock: a chunk of a pool (ix_take, edge_cache_fill) and a larger known or label
 * set; each first adds up what the graph has mapped, and a growth that would take it past
 * the bound is refused and caps the graph (said once, lt_report_order_partial). From then on
 * no edge is recorded (edges_add, the gate: capping shuts it), so the graph only loses edges;
 * those recorded are still checked, and a new edge that closes a cycle with them is reported
 * as before (edges_unrecorded).
 * ---------------------------------------------------------------------------------------- */
static _Atomic int capped;

/* Inline edges being made real (inline_realise), under the graph lock: they are orders
 * recorded already, kept in a lock's entry, so their nodes and edges may take the graph past
 * its bound (at most a node and an edge a lock that has one); refused, a recorded order
 * stayed inline where the capped graph's search could not see it, and its inversion went
 * unreported when another thread had taken the pools' last free room (cfg-3.53, one run in
 * seven beside two busy loops). */
static int realising;

static size_t graph_bytes(void)
{
    const label_set *s = atomic_load_explicit(&labels, memory_order_relaxed);
    return edge_pool.mapped + node_pool.mapped + label_pool.mapped + implied_pool.mapped +
           lt_known_bytes() + (s ? label_set_bytes(s->mask + 1) : 0);
}

/* Under the graph lock: may the graph map `more` bytes? 0 when that would take it past the
 * bound, which caps it. */
static int graph_room(size_t more)
{
    if (lt_likely(!more || realising || graph_bytes() + more <= lt_cfg.graph_max))
        return 1;
    if (!atomic_exchange(&capped, 1))
        lt_report_order_partial(lt_cfg.graph_max);
    return 0;
}

int lt_order_room(size_t more)
{
    return graph_room(more);
}

static int graph_capped(void)
{
    return atomic_load_explicit(&capped, memory_order_relaxed);
}

/* Can no other thread push on the lists of a node whose lock this thread holds in `mode`, as
 * long as it holds it? In the gate only a thread that holds a lock pushes on its node's
 * out-list, and only one that was just granted it on its in-list; a lock held for write (a
 * mutex or a spinlock always) has one holder, unless a thread unlocked a lock it did not
 * hold (lt_foreign_unlocks: `foreign`), when the held sets may say two. */
static inline int held_alone(lt_mode mode, int foreign)
{
    return mode == LT_MODE_WRITE && !foreign;
}

/* held_alone's `foreign`, read once for all the locks a caller asks about. */
static inline int foreign_unlocks(void)
{
    return atomic_load_explicit(&lt_foreign_unlocks, memory_order_relaxed) != 0;
}

/* The run of edges first .. last (`count` of them, linked through next[side] from first to
 * last; `last` by its address, which a caller has at hand) onto the head of n's list of `side`: under the graph lock, or in edges_fast beside
 * others doing the same (nothing else changes a list then, so a push cannot be lost or
 * misplaced). `alone`: no other thread pushes on it meanwhile (the lock is held, or
 * held_alone), so a load and a store do, where a compare-and-swap was the dearest instruction
 * of a lock's first edge in groups. */
static inline __attribute__((always_inline)) void list_push_run(node *n, int side, uint32_t first,
                                                                edge *e, uint32_t count,
                                                                int alone)
{
    list_head head = {.word = __atomic_load_n(&n->list[side].word, __ATOMIC_RELAXED)}, pushed;
    do {
        e->next[side] = head.first;
        pushed.first = first;
        pushed.pushed = head.pushed + count;
        if (alone) {
            __atomic_store_n(&n->list[side].word, pushed.word, __ATOMIC_RELEASE);
            break;
        }
    } while (!__atomic_compare_exchange_n(&n->list[side].word, &head.word, pushed.word, 1,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    if (side == IN)
        atomic_store_explicit(&n->in_from, 0, memory_order_relaxed);
}

/* Edge i alone onto the head of n's list of `side` (list_push_run). */
static inline __attribute__((always_inline)) void list_push(node *n, int side, uint32_t i,
                                                            int alone)
{
    list_push_run(n, side, i, edge_at(i), 1, alone);
}

/* The new edge i, described (edge_fill, imply: not back, not dead), gets its ends; it joins
 * their lists by list_push or list_push_run. */
static inline void edge_ends(edge *e, node *from, node *to)
{
    e->from = from->ix;
    e->to = to->ix;
    e->lists = 2;
}

/* The new edge i joins the lists of its ends (not yet the order); list_push says what the
 * alones are. */
static inline void edge_join(uint32_t i, node *from, node *to, int from_alone, int to_alone)
{
    edge_ends(edge_at(i), from, to);
    list_push(from, OUT, i, from_alone);
    list_push(to, IN, i, to_alone);
}

/* Links the new edge i from -> to (described, from the pool, its label kept or implied)
 * into the graph and the order; under the graph lock. 0 when out of memory. */
static int edge_insert(uint32_t i, node *from, node *to, uint64_t fp)
{
    graph_held();
    edge *e = edge_at(i);
    if (!lt_known_add(fp))
        return 0;
    nedges_locked(1);
    edge_join(i, from, to, 1, 1);
    node_linked(from);
    node_linked(to);
    edge_ends_place(from, to);
    if (from->ord > to->ord && pk_insert(from, to)) {
        e->back = 1;
        atomic_fetch_add_explicit(&nback, 1, memory_order_relaxed);
    }
    return 1;
}

/* The same for the edge from the held lock h. */
static int edge_link(uint32_t i, const lt_held *h, node *to, uint64_t fp)
{
    node *from = node_get(h->lock, h->gen, (lt_kind)h->kind, h->addr);
    return from && edge_insert(i, from, to, fp);
}

/* known.c's way to give the edges the slots of a replaced known set (known_drop). */
int lt_order_recycle(void *mem, size_t size)
{
    graph_held();
    return lt_ix_give(&edge_pool, mem, size);
}

/* Each thread keeps edges of its own for edges_fast, which takes no lock: edges freed to the
 * pool, taken under the graph lock, else a block of new ones, untouched: the thread faults
 * their pages in after it leaves the lock (edges_add), not in the gate or under the lock,
 * where a page fault (a large page's 2 MB zeroed) keeps the lock's next holder waiting. So
 * edges_fast leaves WALK edges for the lock, which takes them from the free list (the old
 * block's rest joins it) before the new block. Blocks grow with the graph, from EDGE_CACHE
 * edges to EDGE_BLOCK (blocks of EDGE_CACHE made half of the graph lock's takings in the
 * `lazy` stress row: 4 threads, 0.9 M new edges), and so do the nodes a thread keeps; edges
 * come in chunks of 512 KB, of large pages from the second on (lt_ixpool), or in the slots of
 * a known set that was replaced (lt_order_recycle). */
#define EDGE_CACHE 256
#define EDGE_FIRST 64 /* a thread's first block (2 KB): most threads make a few orders */
#define EDGE_BLOCK 4096
#define NODE_CACHE 64
#define NODE_FIRST 16 /* the nodes a thread keeps first */
#define NODE_MANY 1024

/* How many edges or nodes a thread takes at a time: one per `per` edges the graph has had at
 * once at most (first edges too, which nedges leaves out), from `least` to `most`. Under the
 * graph lock. */
static uint32_t cache_size(size_t per, uint32_t least, uint32_t most)
{
    size_t n = lt_ix_handed(&edge_pool) / per;
    return n < least ? least : n > most ? most : (uint32_t)n;
}

/* How many a cache that has `have` lacks of `keep`. */
static inline size_t short_of(size_t have, size_t keep)
{
    return have < keep ? keep - have : 0;
}

/* Freed objects a cache fill asks for ahead of the one it takes (ix_prefetch). */
#define FILL_AHEAD 24

/* A thread's cache takes `want` freed objects of p one after another (the last freed first):
 * the lines of those `from` .. FILL_AHEAD - 1 places down its stack are asked for ahead:
 * freed nodes and edges come back to a thread long after their locks ended (in `groups` a
 * round of 25 K locks later), so each line a fill writes was a cache miss, one after the
 * other (the fills were a tenth of the time in `groups`). */
static inline void ix_prefetch(const lt_ixpool *p, unsigned bits, size_t size, size_t from,
                               size_t want)
{
    for (size_t k = from; k < FILL_AHEAD && k < want && k < p->nfree; k++)
        __builtin_prefetch(lt_ix_at(p, p->stack[p->nfree - 1 - k], bits, size), 1);
}

static size_t edge_cache_has(const lt_thread *t)
{
    return (size_t)t->edge_nfree + t->edge_nblock;
}

/* A thread's own edges: a free list threaded through next[OUT], then the run from edge_block.
 * (Always inlined, as inline_child_edge: once the file grew by the sweep, gcc called both
 * from lt_order_acquired, 7 instructions every lock's first edge in `groups`.) */
static inline __attribute__((always_inline)) uint32_t edge_cache_take(lt_thread *t)
{
    uint32_t i = t->edge_free;
    if (i) {
        t->edge_free = edge_at(i)->next[OUT];
        t->edge_nfree--;
        return i;
    }
    t->edge_nblock--;
    return t->edge_block++;
}

static void edge_cache_put(lt_thread *t, uint32_t i)
{
    edge_at(i)->next[OUT] = t->edge_free;
    t->edge_free = i;
    t->edge_nfree++;
}

/* Under the graph lock: t's edges topped up; fewer when out of memory. 1 when it got a new
 * block. (A run cut short by the end of a chunk joins the list, and the next one is taken.) */
static int edge_cache_fill(lt_thread *t)
{
    /* A thread's blocks double from EDGE_FIRST, up to the graph's size: sized by the graph
     * alone, whose count has the blocks threads took, 2,000 threads that made 3 edges each
     * took 4,096 edges each, 128 KB made memory a thread (`stressbench crowd`: 600 MB). */
    uint32_t block = cache_size(16, EDGE_CACHE, EDGE_BLOCK),
             own = t->edge_grant ? 2 * t->edge_grant : EDGE_FIRST;
    if (block > own)
        block = own;
    ix_prefetch(&edge_pool, EDGE_BITS, sizeof(edge), 0, short_of(t->edge_nfree, EDGE_CACHE));
    while (t->edge_nfree < EDGE_CACHE && lt_ix_has_free(&edge_pool)) {
        uint32_t i = lt_ix_take(&edge_pool);
        ix_prefetch(&edge_pool, EDGE_BITS, sizeof(edge), FILL_AHEAD - 1,
                    short_of(t->edge_nfree, EDGE_CACHE));
        edge_cache_put(t, i); /* edges_fast writes all of it */
    }
    if (edge_cache_has(t) >= 2 * WALK)
        return 0;
    do {
        for (; t->edge_nblock; t->edge_nblock--)
            edge_cache_put(t, t->edge_block++); /* the rest of the run joins the list */
        t->edge_nblock = graph_room(lt_ix_maps(&edge_pool))
                             ? lt_ix_block(&edge_pool, block, &t->edge_block)
                             : 0;
    } while (t->edge_nblock && t->edge_nblock < 2 * WALK);
    if (t->edge_nblock)
        t->edge_grant = block;
    return t->edge_nblock != 0;
}

/* Each thread keeps nodes of its own too, for the new locks edges_fast places (node_fast): a
 * free list threaded through their first word. */
static node *node_cache_take(lt_thread *t)
{
    node *x = t->node_free;
    if (x) {
        t->node_free = *(void **)x;
        t->node_nfree--;
    }
    return x;
}

static void node_cache_put(lt_thread *t, node *n)
{
    *(void **)n = t->node_free;
    t->node_free = n;
    t->node_nfree++;
}

/* n, the first node a fill takes that was never handed out before, and the `more` it takes
 * after it: those in n's chunk (beside it, in index order) are made memory by one call. */
static void node_fresh_prefault(node *n, uint32_t more)
{
    uint32_t room = (1u << NODE_BITS) - 1 - (n->ix & ((1u << NODE_BITS) - 1));
    if (more > room)
        more = room;
    if (more)
        lt_prefault(n + 1, more * sizeof(node));
}

/* Under the graph lock: t's nodes topped up to `keep` at most; fewer when out of memory. A
 * thread keeps NODE_FIRST first, twice its last each time it used more than half of them, up
 * to `keep` (the graph's size): sized by the graph alone, whose count has the edges parked in
 * threads' caches, 2,000 threads that made 4 locks each kept 965 nodes each, 80 KB made
 * memory a thread (`stressbench crowd 2000 4 10`: 162 MB of its peak 290 MB). The fill
 * writes each node, and nodes never handed out before were a page fault each (~370 of the
 * ~1,380 of `groups`, whose first round, most of its time, is page faults): their pages are
 * made memory at once (node_fresh_prefault). */
static void node_cache_fill(lt_thread *t, uint32_t keep)
{
    node *n;
    uint32_t last = t->node_grant,
             own = !last ? NODE_FIRST : t->node_nfree < last / 2 ? 2 * last : last;
    if (keep > own)
        keep = own;
    t->node_grant = keep;
    uint32_t fresh = lt_ix_next(&node_pool); /* the first index never handed out */
    ix_prefetch(&node_pool, NODE_BITS, sizeof(node), 0, short_of(t->node_nfree, keep));
    while (t->node_nfree < keep && (n = node_take())) { /* node_init */
        if (n->ix == fresh)
            node_fresh_prefault(n, keep - t->node_nfree - 1);
        ix_prefetch(&node_pool, NODE_BITS, sizeof(node), FILL_AHEAD - 1, short_of(t->node_nfree, keep));
        node_cache_put(t, n);
    }
}

/* Under the graph lock: t's edges and nodes topped up; fewer when out of memory. 1 when it got
 * a new block of edges. */
static int caches_fill(lt_thread *t)
{
    slot_claim(t);
    int block = edge_cache_fill(t);
    node_cache_fill(t, cache_size(64, NODE_CACHE, NODE_MANY));
    return block;
}

void lt_order_thread_exit(lt_thread *t)
{
    if (!edge_cache_has(t) && !t->node_free && !t->node_ngone && !t->gate_slot)
        return;
    graph_enter();
    nodes_gone_leave(t);
    slot_release(t);
    while (edge_cache_has(t))
        lt_ix_put(&edge_pool, edge_cache_take(t));
    while (t->node_free)
        lt_ix_put(&node_pool, node_cache_take(t)->ix);
    graph_leave();
}

/* In the gate, room for one key reserved in k, beside other threads doing the same: one of
 * them puts the fingerprint. */
static void node_index_gated(const lt_thread *t, lt_key_set *k, node *x)
{
    edge *e = unindexed_edge(x);
    uint64_t fp = e ? edge_fingerprint(e) : 0;
    if (e && lt_set_claim(k, fp)) {
        lt_known_logged(fp);
        nedges_gated(t, 1);
    } else
        lt_known_unreserve(known_room(t), k, 1);
    atomic_store_explicit(&x->unindexed, 0, memory_order_release);
}

/*
 * Inside the gate: a node for the lock l of gen `gen`, which has none, from t's own, at its
 * address - when that place is free (nothing was reordered, node_place) and lies between the
 * ords `above` and `below`, where the new edges that need it agree with it. NULL: the lock
 * makes it. Of two threads making it at once the first to publish it wins; the other takes
 * that one.
 */
static node *node_fast(lt_thread *t, lt_lock *l, uint32_t gen, lt_kind kind, const void *addr,
                       int64_t above, int64_t below)
{
    int64_t a = (int64_t)(uintptr_t)addr;
    lt_key_set *k = atomic_load_explicit(&moved, memory_order_relaxed);
    node *other = order_ref(l), *x;
    uint32_t kept = ref_room(other);
    if (!t->node_free || !ref_free(other) || !ord_own_ok(a) || a <= above || a >= below ||
        moved_lost || (k && k->live) || identity_ended(l, gen))
        return NULL;
    x = node_cache_take(t);
    node_init(x, l, gen, kind, lock_flavour(l, kind, addr), addr, a);
    if (!atomic_compare_exchange_strong_explicit(&l->order_node, &other, x, memory_order_release,
                                                 memory_order_acquire)) {
        node_cache_put(t, x);
        return (other = node_of(l)) != NULL && other->gen == gen ? other : NULL;
    }
    if (kept)
        edge_cache_put(t, kept); /* (only the winner of the exchange: nobody else names it) */
    node_list(x);
    t->node_made++;
    return x;
}

/* Inside the gate: the node of r's lock, made (node_fast) above the placed nodes of hs when it
 * has none; those of hs without one are made below it (edges_fast). */
static node *node_target(lt_thread *t, lt_held **hs, size_t n, const request *r)
{
    node *to = node_find(r->ev->lock, r->gen), *from;
    int64_t above = 0;
    for (size_t i = 0; !to && i < n; i++)
        if ((from = node_find(hs[i]->lock, hs[i]->gen)) && from->ord > above)
            above = from->ord;
    return to ? to : node_fast(t, r->ev->lock, r->gen, r->ev->kind, r->ev->addr, above, ORD_LAST);
}

/*
 * Inside the gate: the edges hs[i] -> r (r described) that agree with the order, the graph
 * having no back edge, go into the graph: into a node of each end that is placed already (or,
 * for a new lock, made here: node_fast), from t's own edges, with the first occurrence
 * decided by lt_set_claim - from where the probe of `look` stopped (stops[i]), when it still
 * holds. Each is described here, as it goes in: described for all before the gate, into an
 * array that this loop read back, they cost `lazy` ~40 instructions a new edge. The others
 * (an end without a node or a place, against the order, a sweep due, a description that
 * needs the depot) are left at the front of hs and fps, for the lock: their number is
 * returned.
 */
static size_t edges_fast(gate_slot *s, lt_held **hs, uint64_t *fps, size_t n, request *r,
                         const lt_known_look *look, const size_t *stops)
{
    lt_thread *t = r->ev->self;
    lt_known_room *reserve = s ? &s->reserve : NULL;
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_acquire);
    const lt_thread_info *who;
    node *to;
    labels_renew(t);
    if (atomic_load_explicit(&nback, memory_order_relaxed) || reap_pending() || graph_capped() ||
        edge_cache_has(t) < n + WALK || !k || !(who = thread_kept_find(&r->thread)) ||
        !(to = node_target(t, hs, n, r)) || !to->ord || node_sweep_due(to))
        return n;
    size_t room = n + (node_unindexed(to) != 0);
    if (!lt_known_reserve(reserve, k, room))
        return n; /* the set must grow: under the lock */
    if (room > n)
        node_index_gated(t, k, to);
    if (look && !lt_known_look_holds(look, k))
        stops = NULL;
    size_t left = 0, added = 0;
    /* A copy of the known set is being made: the fingerprints claimed here are logged for it,
     * at once (lt_known_logged). */
    int growing = atomic_load_explicit(&lt_known_growing, memory_order_relaxed);
    uint64_t logged[WALK];
    size_t nlogged = 0;
    label_memo memo = {0, 0};
    uint32_t run = 0; /* the edges into `to`, the newest first (to `last`): pushed at once */
    edge *last = NULL;
    int foreign = foreign_unlocks();
    for (size_t i = 0; i < n; i++) {
        node *from = node_find(hs[i]->lock, hs[i]->gen);
        if (!from)
            from = node_fast(t, hs[i]->lock, hs[i]->gen, (lt_kind)hs[i]->kind, hs[i]->addr, 0,
                             to->ord);
        uint32_t lab = 0;
        desc d;
        if (!from || !from->ord || from->ord >= to->ord || node_sweep_due(from) ||
            !(lab = edge_label_gated(&d, hs[i], r, who, &memo))) {
            hs[left] = hs[i];
            fps[left++] = fps[i];
            continue;
        }
        if (!lt_set_claim_from(k, fps[i], stops ? stops[i] : lt_set_home(k, fps[i])))
            continue;
        if (lt_unlikely(growing))
            logged[nlogged++] = fps[i];
        uint32_t e = edge_cache_take(t);
        edge *ep = edge_at(e); /* once: its byte stores may alias the pool's table of chunks */
        edge_fill(ep, &d, lab, t, hs[i]);
        edge_ends(ep, from, to);
        list_push_run(from, OUT, e, ep, 1, held_alone((lt_mode)hs[i]->mode, foreign));
        ep->next[IN] = run;
        last = added++ ? last : ep;
        run = e;
    }
    if (nlogged)
        lt_known_log(logged, nlogged);
    lt_known_unreserve(reserve, k, n - added);
    if (added) {
        list_push_run(to, IN, run, last, (uint32_t)added, held_alone(r->ev->mode, foreign));
        nedges_slot(s, added);
    }
    r->added |= added > 0;
    return left;
}

/* Is fps[i] one of fps[0 .. i)? (Two held entries of one lock in one mode.) */
static int fp_repeated(const uint64_t *fps, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (fps[j] == fps[i])
            return 1;
    return 0;
}

/* Adds the edges hs[i] -> r (fingerprints fps[i]), each unless another thread just did: those
 * that agree with the order in the gate, the others under one taking of the graph lock. 0
 * when out of memory. look, stops: where probes for them stopped (edges_fast), or NULL. */
static int edges_add(lt_held **hs, uint64_t *fps, size_t n, request *r,
                     const lt_known_look *look, const size_t *stops)
{
    lt_thread *t = r->ev->self;
    desc d[WALK];
    node *to = NULL;
    const lt_thread_info *who = NULL;
    int failed = 0;
    int fresh; /* r's lock has no node: no edge into it is known, none need be looked up */
    request_describe(r);
    lt_known_grow();
    gate_slot *s = slot_of(t); /* (caches_fill below, under the lock, may give t one) */
    if (gate_enter_slot(s) || (gate_wait_open(t) && gate_enter_slot(s))) {
        n = edges_fast(s, hs, fps, n, r, look, stops);
        gate_leave_slot(s);
        if (!n)
            return 1;
    }
    for (size_t i = 0; i < n; i++)
        edge_describe(&d[i], hs[i], r);
    graph_enter();
    ending_draw();
    reap(REAP_STEP * n);
    int block = caches_fill(t);
    if (ref_inline(order_ref(r->ev->lock)) && !identity_ended(r->ev->lock, r->gen))
        inline_realise(r->ev->lock, r->gen); /* (its edge in is then known, or looked up) */
    fresh = node_fresh(r->ev->lock, r->gen);
    failed = !fresh && !node_index(node_of(r->ev->lock)) && !graph_capped();
    for (size_t i = 0; i < n && !failed && !graph_capped(); i++) {
        if (fresh ? fp_repeated(fps, i) : lt_known_has(fps[i]))
            continue;
        if (identity_ended(hs[i]->lock, hs[i]->gen))
            continue;
        if (!to && identity_ended(r->ev->lock, r->gen))
            break;
        if (!to) {
            to = node_get(r->ev->lock, r->gen, r->ev->kind, r->ev->addr);
            who = thread_intern(&r->thread);
        }
        uint32_t lab = 0, e = 0;
        if (to && who) {
            d[i].l.thread = who;
            lab = label_intern(t, &d[i].l);
        }
        if (lab && edge_cache_has(t)) {
            edge_fill(edge_at(e = edge_cache_take(t)), &d[i], lab, t, hs[i]);
            if (!edge_link(e, hs[i], to, fps[i])) {
                below_put(edge_at(e)->below, NULL);
                lt_ix_put(&edge_pool, e);
                e = 0;
            }
        }
        failed = !e && !graph_capped();
        r->added |= e != 0;
    }
    graph_leave();
    if (block)
        lt_prefault(edge_at(t->edge_block), t->edge_nblock * sizeof(edge));
    if (failed)
        lt_report_out_of_memory();
    return !failed;
}

static void edge_add(lt_held *h, request *r, uint64_t fp)
{
    edges_add(&h, &fp, 1, r, NULL, NULL);
}

/* The closing edge H -> X as the graph has it; under the graph lock. */
static edge *edge_find(const lt_held *h, const request *r, node *x)
{
    edge *e;
    for (uint32_t *link = &x->list[IN].first; (e = edge_live(link, IN)); link = &e->next[IN]) {
        const node *from = node_at(e->from);
        if (from->lock == h->lock && from->gen == h->gen && e->from_mode == h->mode &&
            e->to_mode == r->ev->mode)
            return e;
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * Ended locks. Edges come from the held locks down to the newest anchor only: with A, X and B
 * taken in that order and held at once, B's acquisition makes X -> B, and A -> B is implied by
 * A -> X -> B. When X's identity ends its edges go, and the order A -> B would go with them.
 * So an edge out of an anchor keeps the lock that was held right under it when the edge was
 * first made (edge.below), and when X ends, each edge X -> S out of it with a lock P below,
 * where the graph has P -> X in the modes P and X were held in then (that occurrence's edge,
 * held_key), becomes an implied edge P -> S (unless the graph has that edge
 * already): an edge like any other, which says what happened - S was taken while P was held
 * - and keeps how it is known, the occurrences of P -> X and X -> S and X as it was
 * (`implied`), so a report through it names X and shows every stack. It is implied in turn,
 * its path growing, when S ends and an edge out of S names P itself under S, or when P ends
 * and it knows the lock under P (below). X, the lock right before S on its path, does not
 * stand for P: an edge out of S made with X under S may come from another acquisition of S
 * than X -> S's first occurrence, the one that had P under X (P, X, S nested, then Q, X, S, T:
 * P was never held when T was taken). Edges that only chain through X at different times
 * (X -> A, then later B -> X) imply nothing: no lock was held under X.
 *
 * The lock P under X may be no anchor (read-held where reads do not block each other, or
 * trylocked): then P does not stand for the locks under it, each of which made its own edge
 * into X when X was taken, and S was taken while each was held. So the edge keeps them all,
 * down to the newest anchor among them (with A, R read, X, S nested: R and A), as a run
 * (below_run) in an edge's room of its own, and X's end pairs X -> S with the edge into X from
 * each; the implied edge keeps the next lock of the run as its lock below (what was under its
 * from when S was taken). Past the run's last (and under a single lock below) it keeps none:
 * what was under P when S was taken is not known - P -> X's own below is of P -> X's first
 * occurrence, maybe another acquisition of X than the one S was taken under - so P's end
 * implies nothing through it (an order through two ended anchors, A, X, B, C nested, B then X
 * ended, is lost; keeping P -> X's below there made a false one, Y -> C). A run
 * holds RUN_KEYS locks: an order through more non-anchors stacked under X is lost. A plain
 * mutex under a plain mutex (`groups`) never has one: the test is its held entry's anchor byte.
 *
 * What is kept is the locks under X at X -> S's first occurrence: S taken under X later with
 * other locks under it implies nothing more. An ending makes at most IMPLY_MAX implied edges,
 * found among IMPLY_LOOK (edge in, edge out) pairs, each with a path of at most IMPLY_HOPS
 * plain edges; beyond those bounds an order is lost as it was before. An ending is drawn
 * (ending_draw, before the graph is next searched or reordered) only when the node may have a
 * live edge in and a live edge out with a lock under its anchor (node_implies, which reads
 * the lists' first IMPLIES_LOOK entries in the gate): a lock destroyed after the locks it was
 * taken under costs a look at those entries. Until it is drawn the node stands for its lock
 * (node_live): an ending drawn after it implies through it what it would have implied had
 * the lock ended first; every search draws the pending ends before it starts, and none runs
 * while a node is put on `ending` (that is done in the gate).
 * ---------------------------------------------------------------------------------------- */
#define IMPLY_MAX 64          /* implied edges one ending makes */
#define IMPLY_LOOK 65536      /* (edge in, edge out) pairs one ending looks at */
#define IMPLY_HOPS 16         /* plain edges on an implied edge's path */
#define IMPLIES_LOOK 4        /* list entries node_implies reads before it says "may" */


/* A lock identity as one number: the entry's address (user space, below 2^47; 32-byte
 * aligned: a home is half a line) and the low 20 bits of its gen (bits 0-4 and 49-63), so
 * two identities share one only when 2^20 others came between them at one entry. (With 6
 * bits of gen beside a home's address, the home 32 bytes below at a gen 32 higher had the
 * same key.) Bit 47 is left for BELOW_WRITE, bit 48 for BELOW_RUN. */
static uint64_t ident_key(const lt_lock *l, uint32_t gen)
{
    return (uint64_t)(uintptr_t)l | (gen & 31) | (uint64_t)(gen >> 5) << 49;
}

/* A lock held, as a below key: its ident_key and whether it was held for write (bit 47: user
 * addresses lie below 2^47), so that an implication through X pairs X -> S with the edge into
 * X of the same occurrence ("Ended locks"): a lock read-held under X once and write-held under
 * it another time implies nothing across the two. */
#define BELOW_WRITE ((uint64_t)1 << 47)

static inline uint64_t held_key(const lt_held *k)
{
    return ident_key(k->lock, k->gen) | (k->mode == LT_MODE_WRITE ? BELOW_WRITE : 0);
}

/* The held entry under h: the newest below it among WALK entries (a removed one leaves a
 * hole); NULL when there is none. */
static lt_held *held_under(const lt_thread *t, const lt_held *h)
{
    for (lt_held *k = (lt_held *)h, *stop = h - WALK < t->held ? t->held : (lt_held *)h - WALK;
         k-- != stop;)
        if (k->lock)
            return k;
    return NULL;
}

/* The lock the edge h -> ev stands in for too, as a below key: the newest lock held under h;
 * 0 when there is none. Only an anchor needs it, where the walk stops (walk_held); under any
 * other lock the walk went on and made that lock's edge, which the graph then knows, so
 * asking is dearer than keeping it. A lock under h that ended since is kept too: no edge
 * leads from it any more, so it implies nothing. */
static __attribute__((noinline)) uint64_t held_below_far(const lt_thread *t, const lt_held *h)
{
    const lt_held *k = held_under(t, h);
    return k ? held_key(k) : 0;
}

static inline uint64_t held_below(const lt_thread *t, const lt_held *h)
{
    if (h == t->held)
        return 0;
    if (lt_likely(h[-1].lock != NULL))
        return held_key(&h[-1]);
    return held_below_far(t, h);
}

#define RUN_KEYS 4

/* The locks held under an anchor when an edge out of it was first made, as below keys, newest
 * first, down to the newest anchor among them, or RUN_KEYS of them; 0 after the last. In an
 * edge's room, the edge's own: it goes with the edge (edge_free). A lock under the anchor
 * that is no anchor itself (read-held where reads do not block each other, trylocked) does not
 * stand for the locks under it, each of which led its own edge into the anchor: S taken under
 * X with R (read) and A held under it was taken while R and A were held, and X's end implies
 * both R -> S and A -> S. */
typedef struct below_run {
    uint64_t key[RUN_KEYS];
} below_run;
_Static_assert(sizeof(below_run) == sizeof(edge), "a run takes an edge's room");

static inline below_run *run_at(uint64_t below)
{
    return (below_run *)edge_at((uint32_t)below);
}

/* The anchor bit of lt_anchor that YES and ASK have, NONE and NO lack: without it h is none. */
#define ANCHOR_MAYBE 1
_Static_assert((LT_ANCHOR_YES & LT_ANCHOR_ASK & ANCHOR_MAYBE) &&
                   !((LT_ANCHOR_NONE | LT_ANCHOR_NO) & ANCHOR_MAYBE),
               "YES and ASK have the bit, NONE and NO lack it");

/* The below of a new edge h -> the lock t takes (desc_ends): held_below, answered at once by
 * the held entries' anchor bytes when the lock under h is an anchor (a plain mutex under a
 * plain mutex, `groups`) or h is known to be none (a read-held rwlock the walk went past,
 * `lazy`); else BELOW_RUN, for below_keep to decide where the edge is kept. */
static inline uint64_t edge_below(const lt_thread *t, lt_held *h)
{
    if (h == t->held)
        return 0;
    if (lt_likely(h[-1].lock != NULL &&
                  (!(h->anchor & ANCHOR_MAYBE) || h[-1].anchor == LT_ANCHOR_YES)))
        return held_key(&h[-1]);
    return BELOW_RUN;
}

/* The below of a new edge out of h that edge_below left open: when h is an anchor and the
 * lock under it is none, its run, in one of t's own edges; else, or when there is no second
 * lock or no edge left, the newest key alone (held_below). */
static __attribute__((noinline)) uint64_t below_keep(lt_thread *t, lt_held *h)
{
    uint64_t key[RUN_KEYS] = {0};
    size_t n = 0;
    if (!lt_held_anchor(h))
        return held_below(t, h);
    for (lt_held *k = h, *stop = h - WALK < t->held ? t->held : h - WALK;
         n < RUN_KEYS && k-- != stop;) {
        if (!k->lock)
            continue; /* (a hole, as held_under passes) */
        key[n++] = held_key(k);
        if (lt_held_anchor(k))
            break;
    }
    if (n < 2 || !edge_cache_has(t))
        return key[0];
    uint32_t i = edge_cache_take(t);
    memcpy(run_at(i)->key, key, sizeof key);
    return BELOW_RUN | i;
}

/* An edge's below goes with it: its run back to the recycler's cache or the pool (as
 * edge_free puts an edge). */
static void below_put(uint64_t below, lt_thread *recycler)
{
    if (lt_likely(!(below & BELOW_RUN)))
        return;
    if (recycler && recycler->edge_nfree < 2 * (size_t)recycler->node_nfree)
        edge_cache_put(recycler, (uint32_t)below);
    else
        lt_ix_put(&edge_pool, (uint32_t)below);
}

/* The below of an edge t made and did not use, outside the graph lock: its run back to t's
 * own cache, never the pool, which only the lock guards (below_put put it there when t's
 * cache was full, and a fill on another thread at that moment took an index twice: under
 * `lazy`, one run in a few hundred ran away at its threads' exit). */
static void below_unused(uint64_t below, lt_thread *t)
{
    if (lt_unlikely(below & BELOW_RUN))
        edge_cache_put(t, (uint32_t)below);
}

/* The below keys of an edge's below into keys (RUN_KEYS of room); how many. */
static size_t below_keys(uint64_t below, uint64_t *keys)
{
    if (!(below & BELOW_RUN)) {
        keys[0] = below;
        return below != 0;
    }
    const below_run *run = run_at(below);
    size_t n = 0;
    while (n < RUN_KEYS && run->key[n]) {
        keys[n] = run->key[n];
        n++;
    }
    return n;
}

/* e's from as it was held when e was made, as a below key (held_key). */
static uint64_t edge_from_key(const edge *e)
{
    const node *from = node_at(e->from);
    return ident_key(from->lock, from->gen) | (e->from_mode == LT_MODE_WRITE ? BELOW_WRITE : 0);
}

static uint32_t edge_hops(const edge *e)
{
    return e->implied ? implied_at(e->label)->hops : 1;
}

static void implied_put(implied *v)
{
    if (v && --v->refs == 0) {
        implied_put(v->in.sub);
        implied_put(v->out.sub);
        lt_ix_put(&implied_pool, v->ix);
    }
}

/* Is e, in a list of `side` of a node that ends, a live edge whose other end lives (OUT: with
 * a lock under its anchor)? A dead edge's other end may be freed: it is not followed. */
static inline int edge_may_imply(const edge *e, int side)
{
    return !e->dead && !node_dead(node_at(side == OUT ? e->to : e->from)) &&
           (side == IN || e->below);
}

/* Has x such an edge on `side`? Read in the gate; 1 when the first IMPLIES_LOOK entries do
 * not tell. */
static inline int list_may_imply(const node *x, int side)
{
    uint32_t i = __atomic_load_n(&x->list[side].first, __ATOMIC_ACQUIRE);
    for (size_t looked = 0; i; i = edge_at(i)->next[side]) {
        if (edge_may_imply(edge_at(i), side) || ++looked == IMPLIES_LOOK)
            return 1;
    }
    return 0;
}

/* May x's end imply edges? In the gate (node_busy): nothing is unlinked or freed there, so
 * x's lists can be read without the graph lock. */
static int node_implies(const node *x)
{
    return list_may_imply(x, IN) && list_may_imply(x, OUT);
}

/* Are both of x's lists non-empty, so that only node_implies can tell? In the gate (a holder
 * of the graph lock adds edges to nodes of locks no thread holds: inline_realise, imply). A
 * list that is empty tells at once: x's edges are otherwise only added by x's own
 * acquisitions, none of which comes now.
 * So does an in-list whose one edge came with x (in_from) from a node that left the graph:
 * the edge cannot imply (edge_may_imply), and it is told without reading it - at the
 * destroy of a lock taken under another destroyed before it (`groups`), the edge's line was
 * a cache miss, and the gate two locked adds. A node named by in_from that was freed, and
 * maybe made again, killed that edge first: dead or not, it tells no lie. */
static int node_busy(const node *x)
{
    uint32_t f = atomic_load_explicit(&x->in_from, memory_order_relaxed);
    return __atomic_load_n(&x->list[IN].first, __ATOMIC_RELAXED) &&
           __atomic_load_n(&x->list[OUT].first, __ATOMIC_RELAXED) && !(f && node_dead(node_at(f)));
}

/* The ended lock x as a report will name it, from what was noted at its end (node_end_note):
 * its memory may be gone, and a describe callback must not see freed memory, so it has no
 * annotation. */
static void ended_ref(lt_lock_ref *r, const node *x)
{
    const node_cold *c = cold_of(x);
    *r = (lt_lock_ref){.addr = x->addr, .kind = (lt_kind)x->kind, .mutex_type = c->mutex_type,
                       .writer_pref = x->kind == LT_RWLOCK && x->flavour, .api = c->api,
                       .generation = x->gen, .ended = (lt_ended)c->how, .first_stack = c->first_stack,
                       .first_partial = c->first_partial};
}

/* The implied edge from -> to of i = from -> x and o = x -> to, x ended (named ref), with
 * `below` (a key: an implied edge has no run), unless the graph has it or its path would be
 * too long; 1 when made. Out of memory, the order is lost, as it was before implied edges. */
static __attribute__((cold)) int imply(edge *i, edge *o, const lt_lock_ref *ref, uint64_t below)
{
    node *from = node_at(i->from), *to = node_at(o->to);
    uint32_t hops = edge_hops(i) + edge_hops(o);
    uint64_t fp = fingerprint(from->lock, from->gen, (lt_mode)i->from_mode, to->lock, to->gen,
                              (lt_mode)o->to_mode);
    if (hops > IMPLY_HOPS || graph_capped() || !node_index(to) || lt_known_has(fp))
        return 0;
    uint32_t vi = ix_take(&implied_pool), ei = vi ? ix_take(&edge_pool) : 0;
    if (!ei) {
        if (vi)
            lt_ix_put(&implied_pool, vi);
        return 0;
    }
    implied *v = implied_at(vi);
    *v = (implied){.ix = vi, .refs = 1, .hops = hops, .lock = *ref};
    occurrence_of(&v->in, i);
    occurrence_of(&v->out, o);
    if (v->in.sub)
        v->in.sub->refs++;
    if (v->out.sub)
        v->out.sub->refs++;
    *edge_at(ei) = (edge){.label = vi, .from_mode = i->from_mode, .to_mode = o->to_mode,
                          .implied = 1, .below = below};
    if (edge_insert(ei, from, to, fp))
        return 1;
    implied_put(v);
    lt_ix_put(&edge_pool, ei);
    return 0;
}

/* Under the graph lock, x's identity ended (node_end_note): the edges it implied between live
 * locks become implied edges. Its lists are read, not swept: dead edges in them are left to the
 * reaping, which a program that stops making edges never pays for (a block of thousands of
 * locks freed at once). */
static __attribute__((cold)) void node_imply(node *x)
{
    lt_lock_ref ref;
    size_t made = 0, looked = 0, n;
    uint64_t keys[RUN_KEYS];
    uint32_t in = x->list[IN].first;
    while (in && !edge_may_imply(edge_at(in), IN))
        in = edge_at(in)->next[IN];
    if (!in)
        return; /* no live lock leads into x: each edge out would look at every edge in */
    ended_ref(&ref, x);
    for (uint32_t oi = x->list[OUT].first; oi; oi = edge_at(oi)->next[OUT]) {
        edge *o = edge_at(oi);
        if (!edge_may_imply(o, OUT) || !node_live(node_at(o->to)))
            continue;
        n = below_keys(o->below, keys);
        for (uint32_t ii = x->list[IN].first; ii; ii = edge_at(ii)->next[IN]) {
            edge *i = edge_at(ii);
            size_t k = 0;
            if (made == IMPLY_MAX || ++looked > IMPLY_LOOK)
                return;
            if (!edge_may_imply(i, IN) || i->to_mode != o->from_mode || i->from == o->to ||
                !node_live(node_at(i->from)))
                continue;
            for (uint64_t from = edge_from_key(i); k < n && keys[k] != from; k++)
                ;
            if (k == n)
                continue;
            /* The lock under i's from when o was made: the next in the run. Past the run's
             * last it is not known - i's own below is of i's first occurrence, maybe another
             * acquisition than o's - so none: the implied edge implies nothing at its from's
             * end (with Y, X, S then Z, X, S, T nested, S's end would else imply X -> T
             * under Y, and X's then Y -> T, which never happened) */
            made += (size_t)imply(i, o, &ref, k + 1 < n ? keys[k + 1] : 0);
        }
    }
}

static size_t implied_infos(lt_edge_info *copy, size_t k, const implied *v,
                            const lt_lock_ref *from, const lt_lock_ref *to);

/* Into copy[k]...: the plain edges the occurrence o from -> to stands for; the index after. */
static size_t occurrence_infos(lt_edge_info *copy, size_t k, const occurrence *o,
                               const lt_lock_ref *from, const lt_lock_ref *to)
{
    if (o->sub)
        return implied_infos(copy, k, o->sub, from, to);
    occurrence_info(&copy[k], o);
    copy[k].from = *from;
    copy[k].to = *to;
    return k + 1;
}

static size_t implied_infos(lt_edge_info *copy, size_t k, const implied *v,
                            const lt_lock_ref *from, const lt_lock_ref *to)
{
    k = occurrence_infos(copy, k, &v->in, from, &v->lock);
    return occurrence_infos(copy, k, &v->out, &v->lock, to);
}

/* Into copy[k]...: edge e as a report has it, the plain edges of its path when it is implied;
 * the index after them. Under the graph lock (its nodes are live). */
static size_t edge_infos(lt_edge_info *copy, size_t k, const edge *e)
{
    if (!e->implied) {
        edge_info(&copy[k], e);
        return k + 1;
    }
    lt_lock_ref from, to;
    const node *f = node_at(e->from), *t = node_at(e->to);
    lt_lock_ref_fill(&from, f->addr, (lt_kind)f->kind, f->lock);
    lt_lock_ref_fill(&to, t->addr, (lt_kind)t->kind, t->lock);
    return implied_infos(copy, k, implied_at(e->label), &from, &to);
}

/* ------------------------------------------------------------------------------------------
 * Inline edges. A lock's first edge H -> X, taken while H has no node (none, or an inline edge
 * of its own), is not made a node and an edge: X's entry names an inline edge (inline_ref), a
 * record of what the edge would keep, in an edge's room from the thread's own, made and
 * dropped in the gate without a list or a shared line touched. A program that makes locks
 * and takes each under the one before (`groups`: a chain of 25,000) so gives each a record
 * instead of a node, an edge and a push on the held lock's list, and ends it by putting the
 * record back (inline_forget), where a node left the graph with its edges.
 *
 * Sound because the inline edges form trees off the graph: each lock with an inline edge has
 * no other edge in, and its edges out are inline edges into locks that had none. So no cycle
 * passes through it, and nothing but its end needs it: no search, report or look-up in the
 * known set meets it (inline edges are not in the known set, as first edges are not:
 * node_index). The moment a lock with an inline edge would get a node (node_get: a second
 * edge in, an edge out to a lock that is no new one, its edge looked up again) the edge is made
 * real (inline_realise), and so are the inline edges up from it, whose locks get nodes in
 * turn (node_fast and edges_fast leave such locks to the graph lock, which does it).
 *
 * Its end: X's end implies an edge P -> C ("Ended locks") when its edge in, P -> X, lives and
 * an edge X -> C out of it was first made with P held right under X. X records one such child,
 * its linked child: the first lock taken fresh under it while X had its inline edge (another is
 * made the general way, which makes X real). A child taken under X before X had an edge in
 * (X had no node and no inline edge) is not linked and need not be: for X -> C to have been
 * made with a lock P held under X, X (taken by a blocking request, an anchor; else the walk
 * goes on to P and makes P -> C itself) was taken while P was held, which made P -> X then,
 * so X had an edge in. So X's end makes its edges real first (then the node's end draws what
 * it implies) only when its edge in lives and its linked child was taken over P: a lock ended
 * after the one it was taken under (`groups`: FIFO) costs a look at that one's gen. A lock
 * made real makes its linked child real too, down the children: a node's end reads only its
 * lists.
  * ---------------------------------------------------------------------------------------- */

/* l's inline edge, 0 when it has none. */
static inline uint32_t inline_of(const lt_lock *l)
{
    return ref_inline(order_ref(l));
}

/* The inline edge of the linked child that p's inline edge r names, while that child's edge
 * still comes from p: NULL when the child ended or was made real. Its from_gen is the gen of
 * r's identity (the link is made with the child's edge, and r's room gets a new link with each
 * identity), which init has moved on before it ends r (lt_order_forget). Read in the gate or
 * under the graph lock; in the gate a room taken meanwhile may be read, which at worst sends
 * the caller the general way. */
static inline __attribute__((always_inline)) inline_edge *inline_child_edge(const inline_edge *r,
                                                                            const lt_lock *p)
{
    lt_lock *c = inline_child(r);
    uint32_t ci = c ? inline_of(c) : 0;
    inline_edge *cr = ci ? inline_at(ci) : NULL;
    return cr && inline_from(cr) == p ? cr : NULL;
}

/* The end of l, whose inline edge is r, implies an edge ("Ended locks") when its edge in lives
 * and its linked child was taken with that edge's lock held right under l: that child's inline
 * edge then, else NULL. */
static inline const inline_edge *inline_implied(const lt_lock *l, const inline_edge *r)
{
    const lt_lock *p = inline_from(r);
    const inline_edge *cr;
    return !identity_ended(p, r->from_gen) && (cr = inline_child_edge(r, l)) != NULL &&
                   cr->below == (ident_key(p, r->from_gen) |
                                 (inline_mode(r, INLINE_FROM_WRITE) == LT_MODE_WRITE ? BELOW_WRITE
                                                                                    : 0)) &&
                   inline_mode(r, INLINE_TO_WRITE) == inline_mode(cr, INLINE_FROM_WRITE)
               ? cr
               : NULL;
}

/* Under the graph lock: l, of gen `gen`, with an inline edge, gets a node, and so do the locks
 * up the inline edges into it, to the first that has a node, or none, or ended; each node keeps
 * the index of its lock's inline edge in dying_next (on no list yet) for inline_edge_real. How
 * many got one: fewer when out of memory. */
static size_t inline_nodes(lt_lock *l, uint32_t gen)
{
    graph_held();
    size_t k = 0;
    for (uint32_t i; (i = inline_of(l)) != 0; k++) {
        inline_edge *r = inline_at(i);
        node *n = node_take();
        if (!n)
            break;
        uintptr_t x = atomic_load_explicit(&r->child, memory_order_relaxed);
        node_init(n, l, gen, (lt_kind)(x & INLINE_KIND),
                  (uint8_t)((x & INLINE_X) >> INLINE_FLAVOUR_SHIFT), lt_lock_addr(l), 0);
        n->dying_next = i;
        node_list(n);
        atomic_store_explicit(&l->order_node, n, memory_order_release);
        l = inline_from(r);
        gen = r->from_gen;
        if (identity_ended(l, gen)) {
            k++;
            break;
        }
    }
    return k;
}

/* Under the graph lock: the inline edge that n keeps (inline_nodes) becomes an edge of the
 * graph in its room, from the node of the lock it comes from (made now if that is a root),
 * unless that lock ended, is still inline (out of memory) or is no root any more: its end let
 * go of its reference (lt_order_forget, while no thread holds it), and a destroy or free moves
 * the gen on only after that, so identity_ended does not tell yet. (A node made for it then
 * was one of an ended identity, at the address its end cleared: an rwlock's kind read there
 * was a SIGSEGV in node_init.) That lock it returns, and in *child the linked child of n's
 * lock, if that is still inline. */
static lt_lock *inline_edge_real(node *n, lt_lock **child)
{
    uint32_t i = n->dying_next;
    inline_edge r = *inline_at(i);
    lt_lock *p = inline_from(&r);
    lt_mode fm = inline_mode(&r, INLINE_FROM_WRITE), tm = inline_mode(&r, INLINE_TO_WRITE);
    node *from = node_find(p, r.from_gen); /* (one made for an identity init ended: its end) */
    n->dying_next = 0;
    *child = inline_child_edge(&r, n->lock) ? inline_child(&r) : NULL;
    if (!from && !identity_ended(p, r.from_gen) && ref_root(order_ref(p)))
        from = node_get(p, r.from_gen, (lt_kind)(r.from & INLINE_KIND), lt_lock_addr(p));
    if (from) {
        *edge_at(i) = (edge){.label = r.label, .from_mode = (uint8_t)fm, .to_mode = (uint8_t)tm,
                             .below = r.below};
        if (edge_insert(i, from, n, fingerprint(p, r.from_gen, fm, n->lock, n->gen, tm)))
            return p;
    }
    lt_ix_put(&edge_pool, i);
    return p;
}

/* Under the graph lock: the inline edge of l (of gen `gen`), and those it takes with it,
 * become nodes and edges of the graph: up the inline edges into it, and down from each lock
 * made real its linked child, and that one's, and so on (each current: it has its edge). */
static void inline_realise(lt_lock *l, uint32_t gen)
{
    lt_lock *c, *up;
    realising++;
    for (size_t k = inline_nodes(l, gen); k--; l = up) {
        up = inline_edge_real(node_of(l), &c);
        while (c && inline_nodes(c, atomic_load_explicit(&c->gen, memory_order_relaxed)))
            inline_edge_real(node_of(c), &c);
    }
    realising--;
}

/* Under the graph lock, l's identity ending: its inline edge, if it has one, goes, or, when
 * its end implies an edge, is made real first, so that the node's end draws it. */
static void inline_forget_locked(lt_lock *l)
{
    graph_held();
    node *ref = order_ref(l);
    uint32_t i = ref_room(ref);
    if (ref_node(ref) || ref_free(ref))
        return;
    const inline_edge *cr = ref_inline(ref) ? inline_implied(l, inline_at(i)) : NULL;
    if (cr) {
        inline_realise(l, cr->from_gen); /* (its gen, which init moved on already) */
        return;
    }
    atomic_store_explicit(&l->order_node, kept_ref(i), memory_order_release);
}

/* ------------------------------------------------------------------------------------------
 * Chains (lockdep's idea): an acquisition makes edges from a sequence of held locks into the
 * new one, and a program repeats its sequences. A chain's key combines the fingerprints of
 * its edges; once every edge of a chain is in the graph, the key goes into a direct-mapped
 * cache, and the next time the same sequence comes the edges are not looked up one by one: one
 * probe answers. The key names lock identities (entry and gen), and edges leave the graph only
 * with an identity (lt_order_forget, before the gen changes), so a key found promises its
 * edges. The cache only loses keys (overwritten), which costs the lookups they saved.
 *
 * A thread whose sequences do not repeat (`lazy`: 1-10 of 16 K locks at random) found none
 * there, and its look-up and its store were each a cache miss, a twentieth of its time: after
 * CHAIN_TRUST look-ups missed in a row it asks the cache (and fills it) only once in
 * CHAIN_RETRY acquisitions, until a look-up finds its chain again (chain_ask).
 * ---------------------------------------------------------------------------------------- */
#define CHAIN_BITS 14
#define CHAIN_TRUST 64
#define CHAIN_RETRY 64

static _Atomic uint64_t chains[1u << CHAIN_BITS];

static uint64_t chain_mix(uint64_t key, uint64_t fp)
{
    key = (key ^ fp) * 0x9E3779B97F4A7C15ull;
    return key ^ (key >> 31);
}

/* Does this acquisition of t look its chain up (and keep it)? */
static inline int chain_ask(lt_thread *t)
{
    return t->chain_missed < CHAIN_TRUST || (++t->chain_missed & (CHAIN_RETRY - 1)) == 0;
}

/* t's look-up found its chain (1) or not. */
static inline void chain_found(lt_thread *t, int found)
{
    if (found)
        t->chain_missed = 0;
    else if (t->chain_missed < CHAIN_TRUST)
        t->chain_missed++;
}

static _Atomic uint64_t *chain_slot(uint64_t key)
{
    return &chains[key >> (64 - CHAIN_BITS)];
}

/* ---------------------------------------------------------------------------------------- */

/* The closing edge H -> X of a reported cycle, from the live stack: into the report (i), and
 * into the graph, where it was implied through an anchor or kept only recorded frames. */
static void closing_unwound(lt_edge_info *i, lt_held *h, request *r)
{
    desc d;
    occurrence o;
    uint32_t lab = 0;
    if (!r->unwound)
        request_fill(r, 1);
    edge_describe(&d, h, r);
    occurrence_plain(&o, &d.l, d.from_mode, d.to_mode);
    occurrence_info(i, &o);
    lt_lock_ref_fill(&i->from, h->addr, (lt_kind)h->kind, h->lock);
    lt_lock_ref_fill(&i->to, r->ev->addr, r->ev->kind, r->ev->lock);
    graph_enter();
    node *x = node_find(r->ev->lock, r->gen);
    edge *e = x ? edge_find(h, r, x) : NULL;
    if (e && !edge_unwound(e) && (d.l.thread = thread_intern(&r->thread)) != NULL)
        lab = label_intern(r->ev->self, &d.l);
    if (lab) {
        if (e->implied) /* implied: this occurrence shows it plainly */
            implied_put(implied_at(e->label));
        e->label = lab;
        e->implied = 0;
    }
    graph_leave();
    if (!e)
        edge_add(h, r, edge_fp(h, r));
}

/* Under the graph lock, before a search for cycles through the lock t takes: the inline edges
 * into the locks t holds, the search's goals (cycle_expand), made real. Such an edge is in no
 * list, and where it comes from a lock that got a node since (a root keeps no record of its
 * children), the search from that lock did not find the held one: P -> H inline, P given a
 * node by another edge, then H held under an anchor whose chain of inline edges up to H was cut
 * by an ended lock, and t's request for P (H -> P through its held set) went unreported. */
static void held_inline_realise(lt_thread *t)
{
    for (uint32_t i = t->held_start; i < t->held_end; i++) {
        const lt_held *h = &t->held[i];
        if (h->lock && inline_of(h->lock) && !identity_ended(h->lock, h->gen))
            inline_realise(h->lock, h->gen);
    }
}

/* New edges went into X: the shortest cycle through it, if the graph has cycles at all.
 * Reported after the graph lock is released. The closing edge H -> X is this acquisition's,
 * as first made if that was unwound, else described from the live stack. 0 when the search
 * ran to its end and found none. */
static int cycle_check(request *r)
{
    search s = {r->ev->self, NULL};
    const lt_edge_info **cycle = NULL;
    int unwound = 0;
    size_t n = 0, m = 0;
    graph_enter();
    ending_draw();
    held_inline_realise(r->ev->self);
    node *x = node_find(r->ev->lock, r->gen);
    if (x) {
        cycle_bfs.expand = cycle_expand;
        cycle_bfs.ctx = &s;
        stamp++;
        cold_of(x)->mark[r->ev->mode == LT_MODE_WRITE] = stamp;
        n = lt_bfs_run(&cycle_bfs, x, r->ev->mode);
        cycle = n ? take_cycle(n, &m) : NULL;
    }
    if (cycle) {
        const edge *e = edge_find(s.goal, r, x);
        unwound = e && edge_unwound(e);
        if (unwound)
            edge_info((lt_edge_info *)cycle[0], e);
    }
    int none = !n && !cycle_bfs.failed;
    graph_leave();
    if (!cycle)
        return !none;
    if (!unwound)
        closing_unwound((lt_edge_info *)cycle[0], s.goal, r);
    report_inversion(cycle, m);
    return 1;
}

/* After a successful blocking acquisition of l, before it joins the held set, an
 * edge leads from each held lock that is still what it was (newest first, down to the newest
 * anchor): is h one? */
static inline int edge_source(const lt_held *h, const lt_lock *l)
{
    return h->lock && h->lock != l &&
           atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen;
}

/* Up to WALK held locks from below *i down, newest first, into hs, down to the newest anchor:
 * 1 in *more when the walk stopped at WALK without reaching it. */
static inline size_t walk_held(lt_thread *t, const lt_event *ev, uint32_t *i, lt_held **hs,
                               int *more)
{
    size_t n = 0;
    *more = 0;
    while (*i > 0) {
        lt_held *h = &t->held[--*i];
        if (!edge_source(h, ev->lock))
            continue;
        hs[n++] = h;
        if (*i > 0 && lt_held_anchor(h)) /* (the lowest ends the walk anyway) */
            break;
        if (n == WALK) {
            *more = *i > 0;
            break;
        }
    }
    return n;
}

/*
 * At most SOURCES_MAX held locks lead an edge into a lock a thread takes: the newest ones, and
 * below them the newest anchor, which every older one reaches. A thread that holds thousands
 * of read locks of reader-preferring rwlocks, or of trylocked locks, has no anchor among them,
 * and each acquisition made an edge from every one: N held made N^2/2 edges (10,000 read
 * locks: 17 s and 2.9 GB, where the program alone takes no time). Past the bound the older
 * ones' direct edges are not made, which is said once: an inversion through one of them goes
 * unreported. Programs hold far fewer locks at once; lockdep and ThreadSanitizer track fewer.
 */
#define SOURCES_MAX 128
_Static_assert(SOURCES_MAX == 128, "past_sources' note names the bound");

/* The index above the newest anchor below *i (0 when none): what walk_held goes on from once
 * SOURCES_MAX edge sources were walked. */
static __attribute__((noinline)) uint32_t past_sources(lt_thread *t, const lt_event *ev,
                                                        uint32_t i)
{
    int skipped = 0;
    while (i > 0) {
        lt_held *h = &t->held[i - 1];
        if (edge_source(h, ev->lock)) {
            if (lt_held_anchor(h))
                break;
            skipped = 1;
        }
        i--;
    }
    if (skipped)
        lt_report_degraded("a thread took a lock while holding more than 128 read-held or trylocked locks above its newest blocking one: "
                           "lock orders from the older ones are not recorded");
    return i;
}

/* The next batch of edge sources (walk_held), *sources of them walked so far. */
static size_t walk_more(lt_thread *t, const lt_event *ev, uint32_t *i, lt_held **hs, int *more,
                        size_t *sources)
{
    if (*sources >= SOURCES_MAX)
        *i = past_sources(t, ev, *i);
    size_t n = walk_held(t, ev, i, hs, more);
    *sources += n;
    return n;
}

/* The fingerprints of the edges hs[i] -> ev's lock (of gen `gen`) into fps. */
static inline void fingerprints(lt_held **hs, size_t n, const lt_event *ev, uint32_t gen,
                                uint64_t *fps)
{
    for (size_t k = 0; k < n; k++)
        fps[k] = fingerprint(hs[k]->lock, hs[k]->gen, (lt_mode)hs[k]->mode, ev->lock, gen,
                             ev->mode);
}

static __attribute__((noinline)) int inline_first_locked(lt_held *h, request *r);

/* Adds the edges of hs that are not in the graph yet; 0 when out of memory. */
static inline __attribute__((always_inline)) int batch_add(lt_held **hs, uint64_t *fps,
                                                            size_t n, request *r)
{
    size_t fresh = 0, stops[WALK];
    lt_known_look look;
    if (r->fresh)
        return (n == 1 && inline_first_locked(hs[0], r)) || edges_add(hs, fps, n, r, NULL, NULL);
    lt_known_look_now(&look);
    for (size_t k = 0; k < n; k++) {
        if (lt_likely(lt_set_find(look.k, fps[k], &stops[fresh])))
            continue;
        hs[fresh] = hs[k];
        fps[fresh++] = fps[k];
    }
    return fresh ? edges_add(hs, fps, fresh, r, &look, stops) : 1;
}

/* Asks for the lines of [p, p + size) (an object about to be read or written). */
static inline void prefetch_object(const void *p, size_t size)
{
    for (size_t at = 0; at < size; at += 64)
        __builtin_prefetch((const char *)p + at, 1);
    __builtin_prefetch((const char *)p + size - 1, 1);
}

/* The edge (and the node, with `node`) t's next new edges will take from its caches. (Always
 * inlined: gcc dropped the calls of this function, which has no effect it can see.) */
static inline __attribute__((always_inline)) void caches_prefetch(const lt_thread *t, int node)
{
    if (node && t->node_free)
        __builtin_prefetch(t->node_free, 1); /* one line (_Alignas(64)) */
    if (edge_cache_has(t))
        __builtin_prefetch(edge_at(t->edge_free ? t->edge_free : t->edge_block), 1);
}

/* The lines this acquisition's new edges will most likely touch, asked for at once before
 * the work that comes first (the look-ups): the new lock's node (or the node the thread will
 * make it from) and the edge the thread will take next. Met one after the other, each was a
 * cache miss: in `groups` three of the order graph's misses a lock lifecycle, in `lazy` the
 * new lock's node was half of edges_add's time. (The held locks' nodes too cost 12
 * instructions an edge in `lazy` and no time that could be measured: they were touched when
 * those locks were taken. The known set's slots were asked for as the request entered, where
 * that was a head start: prefetch_held; asked for here, batch_add loads them right after -
 * 8 instructions an edge in `lazy` for a head start of a few.) */
static inline void edges_prefetch(const lt_thread *t, const lt_lock *l)
{
    const node *x = node_of(l);
    if (x)
        prefetch_object(x, sizeof *x);
    caches_prefetch(t, !x);
}

/*
 * A lock's first edge H -> X, X without a node: the new edge of a program that makes locks
 * and takes them nested (in `groups` every acquisition's). No edge leads into or out of X, so
 * none is looked up and none can close a cycle; only a thread making this very edge now can
 * have it, and the one that publishes X's node decides. X's node is made with the edge in its
 * in-list before it is published, at X's address (node_place), which must lie above H's
 * place; then H's out-list takes the edge, in the gate, and the known set takes it only if
 * it is ever looked up (node_index). 0: the general way (acquired_edges) must take it - the call
 * site's stacks are still unwound, the gate is shut, H has no place below X, ...
 */
static int edge_first_fits(lt_event *ev, uint32_t gen, node *from, int64_t a)
{
    return atomic_load_explicit(&quiet, memory_order_relaxed) &&
           !atomic_load_explicit(&ending, memory_order_relaxed) && from && from->ord &&
           from->ord < a && !node_sweep_due(from) && ref_free(order_ref(ev->lock)) &&
           !identity_ended(ev->lock, gen);
}

/* In the gate: x, which holds e (ep) in its in-list, becomes X's node, and e joins H's out-list;
 * the known set gets neither yet (node_index). What was used: 2 both, 0 neither (X's
 * identity ended), -1 neither, and the general way must decide (another thread made X's node
 * meanwhile, maybe with this very edge: only the known set can tell). Only a thread that holds
 * X makes its node (here, node_fast, node_get), so while this one holds X alone (held_alone)
 * none can have made it since edge_first_fits looked: a release store publishes x, where a
 * compare-and-swap was a locked instruction on every lock's first edge. */
static int edge_first_gated(lt_event *ev, uint32_t gen, lt_held *h, uint32_t e, edge *ep,
                            node *x)
{
    node *from = node_find(h->lock, h->gen), *other = order_ref(ev->lock);
    uint32_t kept = ref_room(other);
    int foreign;
    if (!ref_free(other) || !edge_first_fits(ev, gen, from, x->ord) || !labels_current(ev->self))
        return -1;
    foreign = foreign_unlocks();
    ep->from = from->ix;
    atomic_store_explicit(&x->in_from, from->ix, memory_order_relaxed);
    if (held_alone(ev->mode, foreign))
        atomic_store_explicit(&ev->lock->order_node, x, memory_order_release);
    else if (!atomic_compare_exchange_strong_explicit(&ev->lock->order_node, &other, x,
                                                      memory_order_release, memory_order_acquire))
        return (other = node_of(ev->lock)) == NULL || other->gen == gen ? -1 : 0;
    if (kept)
        edge_cache_put(ev->self, kept); /* (this thread's: it alone replaced the reference) */
    node_list(x);
    list_push(from, OUT, e, held_alone((lt_mode)h->mode, foreign));
    return 2;
}

/* The label of edge_first's edge h -> (the lock t takes in to_mode at to_stack), described as
 * request_fill does lazily, without a request; 0: the graph lock keeps it. A thread makes its
 * first edges at few places, in `groups` at one: its last label is kept with what it was made
 * from (h's stack and site, which give the from stack and its flag, and to_stack), and its
 * thread is the one t->info says, until t->info changes (a name read again, request_fill; a
 * fork, lt_order_fork) - where the thread was looked up among those kept, the label described
 * and looked up for every lock. The label's to stack names the call site (its first frame is
 * `ra`), so a label kept was made where ra had no unwinds left (site_unwinds), and none come
 * back: the look at the site's counter is for labels not kept. */
_Static_assert(offsetof(lt_held, site) == offsetof(lt_held, stack) + sizeof(uint32_t),
               "a held lock's stack and site are one word (first_label)");
static inline uint32_t first_label(lt_thread *t, lt_held *h, lt_mode to_mode, uint32_t to_stack,
                                   uintptr_t ra)
{
    uint64_t held;
    const lt_thread_info *who;
    desc d;
    memcpy(&held, &h->stack, sizeof held);
    if (lt_likely(t->first_label && t->first_held == held && t->first_to == to_stack))
        return t->first_label;
    if (site_unwinds(ra) || !t->info.name[0] || !(who = thread_kept_find(&t->info)))
        return 0;
    desc_make(&d, t, h, to_mode, to_stack, 1, 0, who);
    uint32_t lab = label_find(t, &d.l);
    if (lab && (h->stack || h->site)) { /* (else the depot gave the from stack: not kept) */
        t->first_held = held;
        t->first_to = to_stack;
        t->first_label = lab;
    }
    return lab;
}

/* In the gate, or under the graph lock (inline_first_locked): inline_first's edge h -> X,
 * where only this thread holds X and h. The lock h may have an inline edge of its own, then X
 * becomes its linked child, unless it has one; else it is a root from now on (root_ref), so
 * that no inline edge goes into it. (Inline in both: called, it cost every lock's first edge
 * in `groups` 13 instructions.) */
static inline __attribute__((always_inline)) int inline_first_gated(lt_event *ev, uint32_t gen,
                                                                    lt_held *h, uint32_t lab)
{
    lt_thread *t = ev->self;
    lt_lock *x = ev->lock, *p = h->lock;
    node *pr = order_ref(p), *xr = order_ref(x);
    inline_edge *pe = ref_inline(pr) ? inline_at(ref_inline(pr)) : NULL;
    if (!ref_free(xr) || identity_ended(x, gen) || node_of(p) ||
        (pe && inline_child_edge(pe, p)))
        return 0;
    uint32_t i = xr ? ref_room(xr) : edge_cache_take(t); /* (the entry's room, kept) */
    inline_edge *r = inline_at(i);
    r->from = inline_pack(p, (lt_kind)h->kind, (lt_mode)h->mode, ev->mode);
    r->from_gen = h->gen;
    r->label = lab;
    r->below = held_below(t, h);
    uintptr_t flavour = lock_flavour(x, ev->kind, ev->addr);
    atomic_store_explicit(&r->child, (uintptr_t)ev->kind | flavour << INLINE_FLAVOUR_SHIFT,
                          memory_order_relaxed);
    if (pe)
        atomic_store_explicit(&pe->child,
                              (uintptr_t)x | (atomic_load_explicit(&pe->child, memory_order_relaxed) &
                                              INLINE_X),
                              memory_order_relaxed);
    else if (ref_free(pr))
        atomic_store_explicit(&p->order_node, room_ref(ref_room(pr), REF_ROOT),
                              memory_order_relaxed);
    atomic_store_explicit(&x->order_node, inline_ref(i), memory_order_release);
    return 1;
}

/* A lock's first edge h -> X, h without a node: kept inline ("Inline edges"), when this
 * thread alone holds both (held_alone), so none but it makes an edge into X or out of h
 * meanwhile. 0: the general way takes it. */
static int inline_first(lt_event *ev, uint32_t gen, lt_held *h, uint32_t lab)
{
    lt_thread *t = ev->self;
    int foreign = foreign_unlocks(), kept;
    if (!held_alone(ev->mode, foreign) || !held_alone((lt_mode)h->mode, foreign))
        return 0;
    if (!gate_enter(t))
        return 0;
    kept = labels_current(t) && inline_first_gated(ev, gen, h, lab);
    gate_leave(t);
    return kept;
}

/*
 * A lock's first edge h -> X, h without a node, that edge_first left to the general way (the
 * call site still unwinds, UNWOUND_PER_SITE; the thread has too few edges of its own; full
 * stacks), described as edges_add would: kept inline all the same, under the graph lock, when
 * both are held by this thread alone. Made there as a node and an edge, X's node made every
 * later lock taken under X take edge_first's way with a node: in `groups` the 64 unwound
 * first edges of the first round gave all its 25,000 locks nodes, and their pool's pages,
 * zeroed, were a large part of that round, most of the row's time. 0: the general way goes
 * on. (Out of line, and asked before edges_add, not in it: there it cost `lazy` 30
 * instructions a round.)
 */
static __attribute__((noinline)) int inline_first_locked(lt_held *h, request *r)
{
    lt_thread *t = r->ev->self;
    int foreign = foreign_unlocks(), kept = 0, block;
    const lt_thread_info *who;
    uint32_t lab;
    desc d;
    if (!held_alone(r->ev->mode, foreign) || !held_alone((lt_mode)h->mode, foreign) ||
        node_of(h->lock) || !ref_free(order_ref(r->ev->lock)))
        return 0;
    edge_describe(&d, h, r);
    graph_enter();
    slot_claim(t);
    block = edge_cache_fill(t);
    if (!graph_capped() && edge_cache_has(t) && (who = thread_intern(&r->thread)) != NULL) {
        d.l.thread = who;
        kept = (lab = label_intern(t, &d.l)) != 0 && inline_first_gated(r->ev, r->gen, h, lab);
    }
    graph_leave();
    if (block)
        lt_prefault(edge_at(t->edge_block), t->edge_nblock * sizeof(edge));
    return kept;
}

static int edge_first(lt_event *ev, uint32_t gen, lt_held *h)
{
    lt_thread *t = ev->self;
    int64_t a = (int64_t)(uintptr_t)ev->addr;
    uint32_t lab;
    if (lt_cfg.stacks == LT_STACKS_FULL || edge_cache_has(t) < 1 + WALK ||
        !(lab = first_label(t, h, ev->mode,
                            ev->site ? ev->site : lt_stack_site_lazy(t, ev->ra, ev->cfa), ev->ra)))
        return 0;
    if (!node_of(h->lock))
        return inline_first(ev, gen, h, lab);
    if (!t->node_free || !ord_own_ok(a))
        return 0;
    desc d = {.below = edge_below(t, h), .from_mode = h->mode, .to_mode = (uint8_t)ev->mode};
    uint32_t e = edge_cache_take(t);
    node *x = node_cache_take(t);
    edge *ep = edge_at(e);
    /* Those the next lock's first edge takes, asked for now (these were, by the last one):
     * there, stores to lines still on their way wait at the gate's locked instruction (a
     * third of edge_first's time). */
    caches_prefetch(t, 1);
    edge_fill(ep, &d, lab, t, h);
    ep->to = x->ix;
    ep->lists = 2;
    node_init(x, ev->lock, gen, ev->kind, lock_flavour(ev->lock, ev->kind, ev->addr), ev->addr, a);
    x->list[IN].first = e;
    x->list[IN].pushed = 1;
    /* x is this thread's until the gate publishes it (release): a plain store, where `=` on
     * an atomic is a sequentially consistent one, a locked exchange on every lock's first edge. */
    atomic_store_explicit(&x->unindexed, 1, memory_order_relaxed);
    int used = -1;
    if (gate_enter(t)) {
        used = edge_first_gated(ev, gen, h, e, ep, x);
        gate_leave(t);
    }
    if (used < 1) {
        below_unused(ep->below, t);
        edge_cache_put(t, e);
    }
    if (used < 2)
        node_cache_put(t, x);
    else
        t->node_made++;
    return used >= 0;
}

/* The walk found more than the one known edge the common case has: its chain, and the edges
 * of every held lock, batch by batch. */
static __attribute__((noinline)) void acquired_edges(lt_thread *t, lt_event *ev, uint32_t gen,
                                                     uint32_t i, lt_held **hs, uint64_t *fps,
                                                     size_t n, int more)
{
    request r = {.ev = ev, .gen = gen, .fresh = !node_of(ev->lock)};
    uint64_t key = 0;
    int chained = n > 1 && !more && chain_ask(t);
    for (size_t k = 0; chained && k < n; k++)
        key = chain_mix(key, fps[k]);
    if (chained && !r.fresh) {
        int found = atomic_load_explicit(chain_slot(key), memory_order_relaxed) == (key | 1);
        chain_found(t, found);
        if (found)
            return;
    }
    edges_prefetch(t, ev->lock);
    int whole = batch_add(hs, fps, n, &r);
    if (chained && whole)
        atomic_store_explicit(chain_slot(key), key | 1, memory_order_relaxed);
    r.fresh = 0; /* the first batch may have given it a node, and other threads may add edges */
    size_t sources = n;
    while (more && (n = walk_more(t, ev, &i, hs, &more, &sources)) > 0) {
        fingerprints(hs, n, ev, gen, fps);
        batch_add(hs, fps, n, &r);
    }
    /* (Capped meanwhile: some edges were not recorded, edges_unrecorded's case.) */
    if ((lt_unlikely(r.added) && atomic_load_explicit(&nback, memory_order_relaxed)) ||
        lt_unlikely(graph_capped()))
        cycle_check(&r);
}

/* The key that says the edge of fingerprint fp was checked, capped (the chain cache's). */
static uint64_t unrecorded_key(uint64_t fp)
{
    return chain_mix(0, fp) | 1;
}

/*
 * The graph is capped: may one of the new edges hs -> X (not recorded) close a cycle with
 * those recorded? Not when X or H has no place in the order (no edge), or, while no back edge
 * exists, H lies below X (every path leads upwards); nor when the edge is recorded, or was
 * checked before (unrecorded_key, put by a search that found no cycle: the graph only loses
 * edges now). In the gate or under the graph lock, where ords do not change.
 */
static int unrecorded_may_close(lt_held **hs, const uint64_t *fps, size_t n, const lt_event *ev,
                                uint32_t gen)
{
    const node *x = node_find(ev->lock, gen), *h;
    for (size_t i = 0; x && x->ord && i < n; i++)
        if ((h = node_find(hs[i]->lock, hs[i]->gen)) && h->ord &&
            (atomic_load_explicit(&nback, memory_order_relaxed) || h->ord > x->ord) &&
            atomic_load_explicit(chain_slot(unrecorded_key(fps[i])), memory_order_relaxed) !=
                unrecorded_key(fps[i]) &&
            !lt_known_has(fps[i]))
            return 1;
    return 0;
}

/* Capped: the inline edges into ev's lock (of gen `gen`) and the held locks hs made real, as
 * they were recorded before, so that unrecorded_may_close and the search see them (where
 * memory for their nodes is still to be had). */
static void inline_realise_capped(lt_held **hs, size_t n, const lt_event *ev, uint32_t gen)
{
    int any = inline_of(ev->lock) != 0;
    for (size_t k = 0; k < n; k++)
        any |= inline_of(hs[k]->lock) != 0;
    if (!any)
        return;
    graph_enter();
    if (inline_of(ev->lock) && !identity_ended(ev->lock, gen))
        inline_realise(ev->lock, gen);
    for (size_t k = 0; k < n; k++)
        if (inline_of(hs[k]->lock) && !identity_ended(hs[k]->lock, hs[k]->gen))
            inline_realise(hs[k]->lock, hs[k]->gen);
    graph_leave();
}

/* Capped: ev's new edges are not recorded, but one that closes a cycle with the recorded ones
 * is reported as before; a search that finds none marks the edges checked. */
static __attribute__((noinline)) void edges_unrecorded(lt_thread *t, lt_event *ev, uint32_t gen,
                                                       uint32_t i, lt_held **hs, uint64_t *fps,
                                                       size_t n, int more)
{
    request r = {.ev = ev, .gen = gen};
    size_t sources = n;
    int may;
    for (;;) {
        inline_realise_capped(hs, n, ev, gen);
        int gated = gate_enter(t);
        if (!gated)
            graph_enter();
        may = unrecorded_may_close(hs, fps, n, ev, gen);
        if (gated)
            gate_leave(t);
        else
            graph_leave();
        if (may || !more || !(n = walk_more(t, ev, &i, hs, &more, &sources)))
            break;
        fingerprints(hs, n, ev, gen, fps);
    }
    if (!may || cycle_check(&r))
        return;
    for (size_t k = 0; k < n; k++)
        atomic_store_explicit(chain_slot(unrecorded_key(fps[k])), unrecorded_key(fps[k]),
                              memory_order_relaxed);
}

/* The first batch of the edges ev's acquisition makes (walk_held from the newest held lock)
 * into hs and fps; 0 when it adds none: a trylock or timed request, inversions off, nothing
 * held, or one edge that is known (the steady state of a nested acquisition). A lock without
 * a node has no known edge into it: the known set, a miss in the cache when large, is not
 * looked at. Its first edge, one (*first), is left without a fingerprint, which edge_first
 * does not need. */
static inline size_t first_batch(lt_event *ev, uint32_t *gen, uint32_t *i, lt_held **hs,
                                 uint64_t *fps, int *more, int *first)
{
    lt_thread *t = ev->self;
    if (t->nheld == 0 || !lt_wait_orders(ev->wait) || lt_cfg.inversion == LT_INVERSION_OFF)
        return 0;
    *gen = atomic_load_explicit(&ev->lock->gen, memory_order_relaxed);
    *i = t->held_end;
    size_t n = walk_held(t, ev, i, hs, more);
    *first = n == 1 && !*more && ref_free(order_ref(ev->lock));
    if (*first)
        return n;
    fingerprints(hs, n, ev, *gen, fps);
    if (n == 1 && !*more && lt_likely(lt_known_has(fps[0])))
        return 0;
    return n;
}

void lt_order_acquired(lt_event *ev)
{
    uint32_t gen, i;
    lt_held *hs[WALK];
    uint64_t fps[WALK];
    int more, first = 0;
    size_t n = first_batch(ev, &gen, &i, hs, fps, &more, &first);
    if (first && !graph_capped() && edge_first(ev, gen, hs[0]))
        return;
    if (first)
        fingerprints(hs, n, ev, gen, fps);
    if (lt_unlikely(n && graph_capped()))
        edges_unrecorded(ev->self, ev, gen, i, hs, fps, n, more);
    else if (n)
        acquired_edges(ev->self, ev, gen, i, hs, fps, n, more);
}

/* Held locks whose edges into a new lock are asked for ahead, newest first. */
#define PREFETCH_HELD 8

/*
 * The known-set slots where the edges from t's newest held locks into `to` (in `mode`) would
 * be, asked for by the check before the grant (lt_order_known_walk) before it reads the lock's
 * shadow entry: the core gets here while the wrapper's load of that entry is still on its
 * way, the branches on it taken as predicted (an entry is nearly always what they expect). The
 * fingerprints name the new lock's gen, which is in that entry's line: gen 1, a lock's first
 * identity (shadow.c), is taken for it, the gen of every lock never destroyed or initialised
 * again. Once the set outgrows the cache each look-up is a miss (`lazy`: 16 MB, where 1-10 of
 * 16 K locks are taken nested at random), and each came after the entry's own miss, which the
 * fingerprint waited for: two misses one after the other, a nested acquisition. Asked for
 * together, they overlap. (Asked for in the wrapper, before the entry's load, its registers
 * cost every request: lockbench flat-1 3 instructions a pair.) The walk stops at the newest
 * anchor already known as one, as walk_held does (without asking a read-held lock: that calls
 * into libc); a prefetch of a wrong slot (another gen, an entry that is not the lock's home, a
 * set replaced meanwhile) only costs the line.
 */
static __attribute__((noinline, cold)) void prefetch_held(const lt_thread *t, const lt_lock *to,
                                                         lt_mode mode)
{
    lt_key_set *k = atomic_load_explicit(&lt_known, memory_order_acquire);
    for (uint32_t i = t->held_end, n = 0; k && i > 0 && n < PREFETCH_HELD;) {
        const lt_held *h = &t->held[--i];
        if (!h->lock)
            continue;
        __builtin_prefetch(
            &k->slot[lt_set_home(k, fingerprint(h->lock, h->gen, (lt_mode)h->mode, to, 1, mode))]);
        if (h->anchor == LT_ANCHOR_YES)
            break;
        n++;
    }
}

/* Whether the edge one -> (l in `mode`) is known (lt_order_known_walk). */
static inline int known_one(const lt_held *one, lt_lock *l, lt_mode mode, uint64_t *memo)
{
    uint32_t gen = atomic_load_explicit(&l->gen, memory_order_relaxed);
    uint64_t fp = fingerprint(one->lock, one->gen, (lt_mode)one->mode, l, gen, mode);
    /* A fingerprint the known set had stays in it while both its identities live: only a
     * refill drops any, and it puts back every edge still in the graph ("Removal"). */
    if (fp == *memo)
        return 1;
    if (!lt_known_has(fp))
        return 0;
    *memo = fp;
    return 1;
}

/* lt_order_known for a lock with a node, something held. Only the common case is answered: no
 * edge, or one that is known. A walk that meets a second held lock before an anchor stops
 * there, without fingerprints: its chain is looked up by lt_order_acquired, after the grant,
 * which walks again (where every acquisition makes new edges, fingerprinting them twice was
 * 9 % of the instructions). */
static __attribute__((noinline)) int known_walk_many(lt_thread *t, lt_lock *l, lt_mode mode,
                                                     uint64_t *memo)
{
    lt_held *one = NULL;
    for (uint32_t i = t->held_end; i > 0;) {
        lt_held *h = &t->held[--i];
        if (!edge_source(h, l))
            continue;
        if (one)
            return 0;
        one = h;
        if (lt_held_anchor(h))
            break;
    }
    if (!one)
        return 1;
    return known_one(one, l, mode, memo);
}

/* lt_order_known_walk's answer for a set of one entry, the common nesting of two locks,
 * without the walk's loop, which made the function save six registers (lockbench nested-1:
 * 18 instructions a pair); known_walk_many walks larger ones. */
int lt_order_known_walk(lt_thread *t, lt_lock *l, lt_mode mode, uint64_t *memo)
{
    if (lt_unlikely(atomic_load_explicit(&lt_known_ahead, memory_order_relaxed)))
        prefetch_held(t, l, mode);
    if (t->held_end != 1)
        return known_walk_many(t, l, mode, memo);
    return !edge_source(&t->held[0], l) || known_one(&t->held[0], l, mode, memo);
}

/* A fork made alone (lt_fork_alone) neither takes the graph lock nor shuts the gate: no
 * other thread is in it or can enter. In the child each word is written only where it is
 * not what the child needs already: a write copies its page. */
LT_FORK_PATH void lt_order_fork(lt_fork_phase phase)
{
    lt_thread *t = lt_tls.self;
    if (phase == LT_FORK_PREPARE && t && t->first_label)
        t->first_label = 0; /* the child's tid is another (first_label): let go of before, so
                               that the child neither writes its page nor reads one the
                               parent never touched (the end of lt_thread) */
    if (phase != LT_FORK_CHILD) {
        if (!lt_fork_alone())
            (phase == LT_FORK_PREPARE ? graph_enter : graph_leave)();
        return;
    }
    if (atomic_load_explicit(&gate_alone, memory_order_relaxed) != NULL)
        atomic_store(&gate_alone, NULL); /* (the child's barrier is not readied) */
    if (lt_fork_alone())
        return; /* no thread was in the gate nor held the lock; no known set was being copied */
    if (atomic_load(&gate.in) != 0)
        atomic_store(&gate.in, 0); /* no thread is in edges_fast, but some may have counted */
    for (unsigned i = 0; i < gate_nslots; i++)
        if (atomic_load(&gate_slots[i].in) != 0)
            atomic_store(&gate_slots[i].in, 0);
    if (atomic_load(&gate.shut) != 0)
        atomic_store(&gate.shut, 0);
    lt_known_fork_child(); /* a copy another thread was making is lost */
    lt_spin_fork(&graph_lock, phase);
}
