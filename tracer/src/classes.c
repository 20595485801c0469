/*
 * classes.c - lock classes, and the lock-order graph over classes: predicted inversions.
 *
 * The instance graph (order.c) finds an inversion only once the same two locks were taken in
 * both orders. Like the kernel's lockdep, this module also reasons about classes: a lock's
 * class is the name the program gave it (locktrace_annotate_class) or, with
 * LOCKTRACE_CLASSES=site, the call site where the lock was first seen (initialised or first
 * taken), lock wrappers skipped. An edge A -> B between classes says some lock of class B was
 * taken while one of class A was held; it keeps the two instances and the stacks of its first
 * occurrence. A
 * cycle of classes is a deadlock the design allows even if no two instances on it ever met:
 * it is reported as a prediction, once, and the program goes on. A cycle whose edges chain
 * through the same instances is the instance graph's to report, and is not repeated here.
 *
 * Same-class nesting (a lock of class C taken while another of C is held) is no finding by
 * itself: a class may have an order among its instances. The order this module can see is
 * the address order. Without a declared one, instances nested both ways (one nesting in
 * ascending, one in descending address order) that could block each other are reported;
 * with a declared one (locktrace_annotate_nesting), the first nesting against it is.
 *
 * Mode rules are the instance graph's: an edge into a lock comes only from a blocking or
 * timed acquisition (a trylock never waits), and read against read conflicts only on a
 * writer-preferring rwlock, judged on the instance that made the edge.
 *
 * Cost: a lock's class is decided once per identity and kept in its shadow entry (klass,
 * tagged with the gen it belongs to). Each nested acquisition looks up the key of each new
 * class edge (both class ids, both modes, and the address order for a same-class one: exact,
 * no hashing collisions) in a set read without a lock; only an edge nobody has made before
 * takes the class lock, and only such an edge runs a search. Classes and class edges live as
 * long as the process: their number is bounded by the program's call sites and names, not
 * by its lock churn.
 */
#define _GNU_SOURCE
#include <string.h>

#include "graph.h"
#include "lt_internal.h"
#include "platform.h"

#define ID_BITS 28
#define MAX_ID ((1u << ID_BITS) - 1)
#define CLASS_BUCKETS 1024
#define KEYS_MIN 1024
#define NAME_BYTES 64

enum { DIR_OTHER, DIR_ASC, DIR_DESC }; /* a same-class edge: the address order it nests in */

typedef struct cls cls;

typedef struct cedge {
    lt_edge_info info;               /* its first occurrence */
    const lt_lock *from_lock, *to_lock;
    uint32_t from_gen, to_gen;       /* the instances, alive while their gens hold */
    cls *from, *to;
    struct cedge *next_out;
} cedge;

enum { SITE_UNASKED, SITE_WRAPPER, SITE_PROGRAM }; /* is a site's function a lock wrapper */

struct cls {
    uint32_t id;
    char name[NAME_BYTES];      /* an annotated class; "" for a site class */
    uintptr_t site;             /* a site class: where its locks were first seen */
    int wrapper;                /* a site: SITE_*; a wrapper's site names no class */
    unsigned order;             /* declared nesting order, LOCKTRACE_NEST_*; 0 = none */
    cedge *out;
    cedge *nest[3][2][2];       /* same-class nestings first seen: [dir][from write][to write] */
    int nest_reported;
    uint32_t mark[2];           /* search stamps, by the mode the class is entered with */
    cls *next_hash;
};

/* The keys of every class edge made so far: 0 marks a free slot. Replaced by a copy twice
 * the size when half full; old copies stay mapped for readers still inside them (their sizes
 * add up to less than the live copy's). */
typedef struct key_set {
    size_t mask, used;
    _Atomic uint64_t slot[];
} key_set;

static lt_spin class_lock = LT_SPIN_INIT(LT_RANK_CLASSES);
static key_set *_Atomic keys;
static cls *classes[CLASS_BUCKETS];
static uint32_t nclasses;
static uint32_t stamp;
static lt_pool class_pool = LT_POOL(cls, LT_ARENA_CHUNK);
static lt_pool edge_pool = LT_POOL(cedge, LT_ARENA_CHUNK);
static lt_bfs search_bfs;

/* ---------------------------------------------------------------------------------------- */

static inline uint64_t edge_key(uint32_t from, lt_mode mf, uint32_t to, lt_mode mt, int dir)
{
    return (uint64_t)from << 34 | (uint64_t)to << 6 | (uint64_t)(mf == LT_MODE_WRITE) << 5 |
           (uint64_t)(mt == LT_MODE_WRITE) << 4 | (uint64_t)dir << 2 | 1;
}

static inline size_t key_slot(uint64_t k, size_t mask)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static inline int key_known(uint64_t k)
{
    key_set *s = atomic_load_explicit(&keys, memory_order_acquire);
    for (size_t i = s ? key_slot(k, s->mask) : 0; s; i = (i + 1) & s->mask) {
        uint64_t v = atomic_load_explicit(&s->slot[i], memory_order_relaxed);
        if (v == k)
            return 1;
        if (v == 0)
            return 0;
    }
    return 0;
}

static void key_put(key_set *s, uint64_t k)
{
    size_t i = key_slot(k, s->mask);
    while (atomic_load_explicit(&s->slot[i], memory_order_relaxed) != 0)
        i = (i + 1) & s->mask;
    atomic_store_explicit(&s->slot[i], k, memory_order_release);
    s->used++;
}

/* Under the class lock, k known to be absent. 0 when out of memory. */
static int key_add(uint64_t k)
{
    key_set *s = atomic_load_explicit(&keys, memory_order_relaxed);
    if (!s || (s->used + 1) * 2 > s->mask + 1) {
        size_t size = s ? (s->mask + 1) * 2 : KEYS_MIN;
        key_set *g = lt_map(sizeof *g + size * sizeof g->slot[0]);
        if (!g)
            return 0;
        g->mask = size - 1;
        for (size_t i = 0; s && i <= s->mask; i++) {
            uint64_t v = atomic_load_explicit(&s->slot[i], memory_order_relaxed);
            if (v)
                key_put(g, v);
        }
        atomic_store_explicit(&keys, g, memory_order_release);
        s = g;
    }
    key_put(s, k);
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Classes, by name or by site; under the class lock.
 * ---------------------------------------------------------------------------------------- */
static size_t name_hash(const char *name, uintptr_t site)
{
    uint64_t h = site * 0x9E3779B97F4A7C15ull;
    for (; name && *name; name++)
        h = (h ^ (unsigned char)*name) * 0x100000001B3ull;
    return (size_t)(h >> 40) % CLASS_BUCKETS;
}

/* The class named `name` (NAME_BYTES - 1 bytes of it count), or of call site `site`; made
 * when new. NULL when out of memory or out of ids. */
static cls *class_get(const char *name, uintptr_t site)
{
    char key[NAME_BYTES] = "";
    if (name) {
        strncpy(key, name, sizeof key - 1);
        site = 0;
    }
    size_t b = name_hash(key, site);
    for (cls *c = classes[b]; c; c = c->next_hash)
        if (c->site == site && strcmp(c->name, key) == 0)
            return c;
    cls *c = nclasses < MAX_ID ? lt_pool_get(&class_pool) : NULL;
    if (!c)
        return NULL;
    c->id = ++nclasses;
    memcpy(c->name, key, sizeof key);
    c->site = site;
    c->next_hash = classes[b];
    classes[b] = c;
    return c;
}

/* Every class by id, for the reports; grown under the class lock. */
static cls **by_id;
static size_t by_id_cap;

/* class_get, listed by id; under the class lock. */
static cls *class_entry(const char *name, uintptr_t site)
{
    cls *c = class_get(name, site);
    if (c && !lt_scratch_fit((void **)&by_id, &by_id_cap, c->id + 1, sizeof *by_id))
        c = NULL;
    if (c)
        by_id[c->id] = c;
    return c;
}

static uint32_t class_id(const char *name)
{
    lt_spin_lock(&class_lock);
    cls *c = class_entry(name, 0);
    lt_spin_unlock(&class_lock);
    return c ? c->id : 0;
}

/* The site class of a lock first seen with stack ips[0 .. n): its first frame whose function
 * is no lock wrapper (wrappers.c: libstdc++, GLib, LOCKTRACE_WRAPPERS), so that the locks a
 * helper makes for different callers fall into their callers' classes. Each site's answer is
 * asked once and kept in its entry. 0 when one is not known yet (asked at a later call). */
static uint32_t site_class(const uintptr_t *ips, size_t n)
{
    cls *c = NULL;
    lt_spin_lock(&class_lock);
    for (size_t i = 0; i < n && (c = class_entry(NULL, ips[i])) != NULL; i++) {
        if (c->wrapper == SITE_UNASKED) {
            int w = lt_wrapper_at(ips[i]);
            c->wrapper = w > 0 ? SITE_WRAPPER : w == 0 ? SITE_PROGRAM : SITE_UNASKED;
        }
        if (c->wrapper != SITE_WRAPPER || i + 1 == n)
            break;
    }
    uint32_t id = c && c->wrapper != SITE_UNASKED ? c->id : 0;
    lt_spin_unlock(&class_lock);
    return id;
}

/* The class of identity (l, gen) of kind `kind` decided now: its first-seen call site (site
 * mode), or none. Once-controls get no site class: pthread_once is nearly always called
 * through a wrapper of the program's, and what their nesting says is reported already (two
 * init routines waiting for each other are a deadlock report). An annotation made meanwhile
 * wins. */
static __attribute__((noinline)) uint32_t class_decide(lt_lock *l, uint32_t gen, lt_kind kind)
{
    uint32_t id = 0;
    size_t n = 0;
    const uintptr_t *ips = NULL;
    if (lt_cfg.classes == LT_CLASSES_SITE && kind != LT_ONCE) {
        if (!l->first_stack)
            return 0; /* not filled in yet by the thread that saw it first: decide later */
        ips = lt_stack_get(l->first_stack, &n);
        if (!ips || !n || (id = site_class(ips, n)) == 0)
            return 0;
    }
    _Atomic uint64_t *klass = &lt_lock_cold_of(l)->klass;
    uint64_t old = atomic_load_explicit(klass, memory_order_relaxed);
    if ((uint32_t)(old >> 32) != gen &&
        atomic_compare_exchange_strong(klass, &old, (uint64_t)gen << 32 | id))
        return id;
    return (uint32_t)(old >> 32) == gen ? (uint32_t)old : 0;
}

/* The class of identity (l, gen), 0 = none. */
static inline uint32_t class_of(lt_lock *l, uint32_t gen, lt_kind kind)
{
    uint64_t k = atomic_load_explicit(&lt_lock_cold_of(l)->klass, memory_order_relaxed);
    if (lt_likely((uint32_t)(k >> 32) == gen))
        return (uint32_t)k;
    return class_decide(l, gen, kind);
}

void lt_classes_annotate(lt_event *ev, const char *name)
{
    lt_lock *l = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
    if (!l || !name || lt_cfg.classes == LT_CLASSES_OFF)
        return;
    uint32_t id = class_id(name);
    uint32_t gen = atomic_load_explicit(&l->gen, memory_order_relaxed);
    if (id)
        atomic_store_explicit(&lt_lock_cold_of(l)->klass, (uint64_t)gen << 32 | id,
                              memory_order_relaxed);
}

void lt_classes_nesting(lt_event *ev, unsigned order)
{
    lt_lock *l = lt_shadow_get(ev->self, ev->addr, ev->ra, ev->cfa);
    if (!l || lt_cfg.classes == LT_CLASSES_OFF)
        return;
    uint32_t id = class_of(l, atomic_load_explicit(&l->gen, memory_order_relaxed), LT_MUTEX);
    lt_spin_lock(&class_lock);
    if (id)
        by_id[id]->order = order;
    lt_spin_unlock(&class_lock);
}

/* ------------------------------------------------------------------------------------------
 * Predictions. A finding's edges are copies (the class lock is released before it is
 * reported); an instance that is gone by then keeps its address but loses its annotation
 * (the object it described may be freed).
 * ---------------------------------------------------------------------------------------- */
typedef struct prediction {
    lt_reason why;
    size_t n;
    lt_edge_info edge[2];        /* nesting: the two nestings */
    lt_edge_info *copies;        /* class cycle: its edges, mapped ... */
    const lt_edge_info **cycle;  /* ... and pointers to them, mapped */
    size_t mapped;               /* edges those mappings have room for */
} prediction;

static int alive(const lt_lock *l, uint32_t gen)
{
    return atomic_load_explicit(&l->gen, memory_order_relaxed) == gen;
}

static void copy_edge(lt_edge_info *out, const cedge *e)
{
    *out = e->info;
    if (!alive(e->from_lock, e->from_gen))
        out->from.object = NULL, out->from.describe = NULL;
    if (!alive(e->to_lock, e->to_gen))
        out->to.object = NULL, out->to.describe = NULL;
}

/* Can a thread holding ref's lock in `held` block one requesting it in `req`? */
static int conflicts(const lt_lock_ref *ref, lt_mode held, lt_mode req)
{
    return ref->kind != LT_RWLOCK || held == LT_MODE_WRITE || req == LT_MODE_WRITE ||
           ref->writer_pref;
}

static int same_instance(const lt_lock *a, uint32_t ga, const lt_lock *b, uint32_t gb)
{
    return a == b && ga == gb;
}

/* Same-class nestings a (ascending) and d (descending): one thread holding a's first lock
 * and wanting its second, another doing d's on the same two locks, block each other. Not
 * when they are the same two instances: the instance graph reports that. */
static int pair_blocks(const cedge *a, const cedge *d)
{
    if (same_instance(a->from_lock, a->from_gen, d->to_lock, d->to_gen) &&
        same_instance(a->to_lock, a->to_gen, d->from_lock, d->from_gen))
        return 0;
    return conflicts(&a->info.from, a->info.from_mode, d->info.to_mode) &&
           conflicts(&d->info.from, d->info.from_mode, a->info.to_mode);
}

/* A new same-class edge e of class c, nested in address order dir. */
static void nesting_check(cls *c, cedge *e, int dir, prediction *p)
{
    int fw = e->info.from_mode == LT_MODE_WRITE, tw = e->info.to_mode == LT_MODE_WRITE;
    if (!c->nest[dir][fw][tw])
        c->nest[dir][fw][tw] = e;
    if (c->nest_reported)
        return;
    int against = (c->order == LOCKTRACE_NEST_ADDRESS_ASC && dir == DIR_DESC) ||
                  (c->order == LOCKTRACE_NEST_ADDRESS_DESC && dir == DIR_ASC);
    if (against && conflicts(&e->info.from, e->info.from_mode, e->info.to_mode)) {
        p->why = LT_WHY_CLASS_DECLARED;
        p->n = 1;
        copy_edge(&p->edge[0], e);
        c->nest_reported = 1;
        return;
    }
    if (c->order)
        return;
    int other = dir == DIR_ASC ? DIR_DESC : DIR_ASC;
    for (int f = 0; f < 2; f++) {
        for (int t = 0; t < 2; t++) {
            const cedge *o = c->nest[other][f][t];
            const cedge *asc = dir == DIR_ASC ? e : o, *desc = dir == DIR_ASC ? o : e;
            if (!o || !pair_blocks(asc, desc))
                continue;
            p->why = LT_WHY_CLASS_NESTING;
            p->n = 2;
            copy_edge(&p->edge[0], asc);
            copy_edge(&p->edge[1], desc);
            c->nest_reported = 1;
            return;
        }
    }
}

/* Cycle search: breadth-first from the new edge's target class over the class graph (its
 * same-class edges aside), entering each class with a request mode and leaving it only by
 * an edge whose held mode conflicts with it; the goal is the new edge's source, entered in a
 * mode its held lock conflicts with. */
static void search_expand(lt_bfs *b, size_t at)
{
    const cedge *closing = b->ctx;
    cls *n = b->items[at].node;
    lt_mode in = (lt_mode)b->items[at].aux;
    for (cedge *e = n->out; e; e = e->next_out) {
        cls *w = e->to;
        int m = e->info.to_mode == LT_MODE_WRITE;
        if (w == n || !conflicts(&e->info.from, e->info.from_mode, in) || w->mark[m] == stamp)
            continue;
        w->mark[m] = stamp;
        int goal = w == closing->from &&
                   conflicts(&closing->info.from, closing->info.from_mode, e->info.to_mode);
        if (!lt_bfs_reach(b, at, w, e, e->info.to_mode, goal))
            return;
    }
}

/* Edge i of the cycle the search found: the closing edge, then the path from its target. */
static const cedge *path_edge(const cedge *closing, size_t i)
{
    return i ? search_bfs.path[i].via : closing;
}

/* The new edge closes a cycle of classes: the shortest one through it, copied out, unless
 * reported before or made of one chain of instances (the instance graph's). */
static void cycle_check(cedge *closing, prediction *p)
{
    search_bfs.expand = search_expand;
    search_bfs.ctx = closing;
    stamp++;
    closing->to->mark[closing->info.to_mode == LT_MODE_WRITE] = stamp;
    size_t n = lt_bfs_run(&search_bfs, closing->to, closing->info.to_mode);
    if (!n)
        return;
    uint64_t sum = 0, x = 0;
    int chained = 1;
    for (size_t i = 0; i < n; i++) {
        const cedge *a = path_edge(closing, i), *b = path_edge(closing, (i + 1) % n);
        chained &= same_instance(a->to_lock, a->to_gen, b->from_lock, b->from_gen);
        uint64_t h = (uint64_t)a->from->id * 0x9E3779B97F4A7C15ull;
        sum += h;
        x ^= h >> 17;
    }
    /* A cycle is one prediction whichever edge closes it: its key, kept in the set of edge
     * keys (those are odd, this one is even), says so. */
    uint64_t key = (sum ^ (x * 0xff51afd7ed558ccdull)) << 1 | 2;
    if (key_known(key) || !key_add(key) || chained)
        return;
    p->mapped = n;
    p->copies = lt_map(n * sizeof *p->copies);
    p->cycle = lt_map(n * sizeof *p->cycle);
    for (size_t i = 0; p->copies && p->cycle && i < n; i++) {
        copy_edge(&p->copies[i], path_edge(closing, i));
        p->cycle[i] = &p->copies[i];
    }
    p->why = LT_WHY_CLASS_CYCLE;
    p->n = p->copies && p->cycle ? n : 0;
}

static void report(prediction *p)
{
    const lt_edge_info *nest[2] = {&p->edge[0], &p->edge[1]};
    lt_finding f = {.kind = LT_FIND_INVERSION, .why = p->why, .outcome = LT_OUTCOME_CONTINUE};
    f.edges = p->cycle ? p->cycle : nest;
    f.nedges = p->n;
    f.thread = f.edges[0]->thread;
    f.one_thread = 1;
    for (size_t i = 1; i < p->n; i++)
        f.one_thread &= f.edges[i]->thread.tid == f.edges[0]->thread.tid;
    lt_report(&f);
}

static void prediction_free(prediction *p)
{
    if (p->copies)
        lt_platform_unmap(p->copies, p->mapped * sizeof *p->copies);
    if (p->cycle)
        lt_platform_unmap(p->cycle, p->mapped * sizeof *p->cycle);
}

/* ------------------------------------------------------------------------------------------
 * New class edges.
 * ---------------------------------------------------------------------------------------- */
static void class_ref(lt_lock_ref *r, const cls *c, uint32_t gen)
{
    r->class_name = c->name[0] ? c->name : NULL;
    r->class_site = c->site;
    r->generation = gen;
}

/* What the edge h -> ev will say, made before the class lock since it unwinds; *stack is
 * ev's stack, unwound once for all of an acquisition's new edges. */
static void edge_describe(cedge *e, lt_held *h, const lt_event *ev, uint32_t gen,
                          uint32_t *stack)
{
    memset(e, 0, sizeof *e);
    lt_lock_ref_fill(&e->info.from, h->addr, (lt_kind)h->kind, h->lock);
    lt_lock_ref_fill(&e->info.to, ev->addr, ev->kind, ev->lock);
    e->info.from_mode = (lt_mode)h->mode;
    e->info.to_mode = ev->mode;
    e->info.to_stack = *stack ? *stack : (*stack = lt_stack_here(ev->ra));
    e->info.from_stack = lt_held_stack(h, e->info.to_stack, &e->info.from_partial);
    lt_thread_info_now(ev->self, &e->info.thread);
    e->from_lock = h->lock;
    e->from_gen = h->gen;
    e->to_lock = ev->lock;
    e->to_gen = gen;
}

static void edge_new(lt_held *h, const lt_event *ev, uint32_t gen, uint32_t from, uint32_t to,
                     uint64_t key, uint32_t *stack)
{
    cedge d;
    prediction p = {0};
    int failed = 0;
    edge_describe(&d, h, ev, gen, stack);
    lt_spin_lock(&class_lock);
    if (!key_known(key)) {
        cedge *e = lt_pool_get(&edge_pool);
        failed = !e || !key_add(key);
        if (!failed) {
            *e = d;
            e->from = by_id[from];
            e->to = by_id[to];
            class_ref(&e->info.from, e->from, h->gen);
            class_ref(&e->info.to, e->to, gen);
            e->next_out = e->from->out;
            e->from->out = e;
            if (from == to)
                nesting_check(e->from, e, h->addr < ev->addr ? DIR_ASC : DIR_DESC, &p);
            else
                cycle_check(e, &p);
        } else if (e) {
            lt_pool_put(&edge_pool, e);
        }
    }
    lt_spin_unlock(&class_lock);
    if (failed)
        lt_report_out_of_memory();
    else if (p.n)
        report(&p);
    prediction_free(&p);
}

void lt_classes_acquired(lt_event *ev)
{
    lt_thread *t = ev->self;
    if (!lt_wait_orders(ev->wait) || lt_cfg.inversion == LT_INVERSION_OFF)
        return;
    uint32_t gen = atomic_load_explicit(&ev->lock->gen, memory_order_relaxed);
    uint32_t to = class_of(ev->lock, gen, ev->kind), stack = 0;
    if (!to)
        return;
    for (uint32_t i = t->held_end; i-- > 0;) {
        lt_held *h = &t->held[i];
        if (!h->lock || h->lock == ev->lock ||
            atomic_load_explicit(&h->lock->gen, memory_order_relaxed) != h->gen)
            continue;
        uint32_t from = class_of(h->lock, h->gen, (lt_kind)h->kind);
        if (!from)
            continue;
        int dir = from != to ? DIR_OTHER : h->addr < ev->addr ? DIR_ASC : DIR_DESC;
        uint64_t key = edge_key(from, (lt_mode)h->mode, to, ev->mode, dir);
        if (lt_unlikely(!key_known(key)))
            edge_new(h, ev, gen, from, to, key, &stack);
        if (i && lt_held_anchor(h)) /* nothing older to stop at: skip the test */
            break;
    }
}

LT_FORK_PATH void lt_classes_fork(lt_fork_phase phase)
{
    lt_spin_fork(&class_lock, phase);
}
