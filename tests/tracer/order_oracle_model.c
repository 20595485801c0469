/*
 * order_oracle_model.c - the reference model of lock-order inversion detection, written from
 * the README ("Cross-thread deadlocks and lock-order inversions", "Ended locks") and the
 * header of tracer/src/order.c, never from its code. Plain arrays, no cleverness: it has to be
 * obviously right, not fast.
 *
 * - A lock identity lives from init to its end (destroy, init again, free of its block).
 * - A lock taken again by the thread that holds it (recursive mutex, read of a read-held
 *   rwlock) makes no edge: it is counted in the entry of its first acquisition.
 * - A blocking acquisition of X in mode m by thread T makes an edge H(h) -> X(m) from each
 *   lock H that T holds (in mode h), newest first, down to the newest "anchor": a lock T took
 *   by a blocking request that conflicts with itself in its held mode. A trylock or a timed
 *   request makes no edge into its lock (it cannot wait for good), and its lock is no anchor. An edge keeps the lock
 *   held right under its `from` at its first occurrence ("below"). The README says this of
 *   edges out of anchors; the tracer keeps it for every edge (order.c's held_below_far:
 *   "asking is dearer than keeping it"), and that shows when a lock that was no anchor ends
 *   after an ending made an implied edge out of it. When `from` is an anchor and the lock
 *   right under it is none, the edge keeps the locks under it down to the newest anchor among
 *   them, at most 4 (the run).
 * - Modes conflict when either is write; read against read only on a writer-preferring
 *   rwlock; mutexes and spinlocks always.
 * - When an acquisition made a new edge, the graph is searched breadth-first from (X, m):
 *   a node entered in mode `in` is left by an edge whose held mode conflicts with `in`; a goal
 *   is a lock T held before X in a mode that conflicts with the mode the path reaches it in
 *   (X reached again in its other mode is none). The
 *   nearest goals give the shortest cycles; the one found is reported unless its set of locks
 *   was reported before. When several shortest cycles exist the tracer may pick any of them.
 * - When X ends, each edge X:x -> S whose lock below (or one of its run) is P, held in mode p
 *   then, with an edge P:p -> X:x (plain or implied; the ended lock right before X on an
 *   implied one's path does not stand for P), becomes an implied edge P -> S, unless P -> S
 *   (same modes) exists; its lock below is the next of the run after B, or past the run's
 *   last (and for a single one) none (so P's end implies nothing through it); it keeps the
 *   ended locks of its path, which a report lists. Then X and its edges leave the graph.
 *   (The modes make the edge in the one of the occurrence X -> S was made at: B read-held
 *   under X at one time and write-held at another implies nothing across.)
 * - A report's closing edge H -> X goes into the graph as a plain edge: made, when H was held
 *   under the anchor (the walk made none), or made plain, when it was an implied one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_oracle.h"

#define IMPLY_MAX 64  /* implied edges one ending makes (docs/limits.md) */
#define IMPLY_HOPS 16 /* plain edges an implied edge stands for */
#define MAX_PATHS 256 /* shortest cycles compared one by one; more: any of them is accepted */
#define RUN_KEYS 4    /* locks an edge out of an anchor keeps under it (docs/limits.md) */

typedef struct ident {
    int slot, type, alive;
    uintptr_t addr;
    int *out, nout, capout;
    int *in, nin, capin;
} ident;

typedef struct medge {
    int from, to, fm, tm;
    int nbelow; /* idents under `from` at the first occurrence (below_of), newest first */
    int below[RUN_KEYS];
    int below_mode[RUN_KEYS]; /* the modes they were held in then */
    int alive;
    int hops;
    int npath;
    int path[IMPLY_HOPS]; /* ended idents between from and to */
} medge;

typedef struct mheld {
    int id, mode, anchor;
    int count; /* taken again by its holder: one entry, counted */
} mheld;

typedef struct cand {
    int goal; /* the held lock the path ends at */
    int nkey, nseq;
    int key[64];
    uintptr_t seq[64 * IMPLY_HOPS];
    /* seq[k] is an ended lock on an implied edge's path: its address may be a live lock's
       too (init again), and two cycles over the same addresses are then told apart by it */
    unsigned char ended[64 * IMPLY_HOPS];
} cand;

struct oracle_model {
    const oracle_program *p;
    const oracle_run *r;
    ident *ids;
    int nids, capids;
    medge *edges;
    int nedges, capedges;
    int *slot_id;
    uintptr_t *block_base;
    mheld held[ORACLE_THREADS][ORACLE_MAX_HELD];
    int nheld[ORACLE_THREADS];
    int **reported; /* sorted key, its length first */
    int nreported, capreported;
    cand *cands; /* the last search's shortest cycles */
    int ncands, any;
    int thread, x, mode; /* the last search's acquisition */
    const char *beyond;
    int trace; /* print each edge made (oracle_model_trace) */
    /* search scratch */
    int *dist, *queue, *goal;
};

static void *grow(void *a, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return a;
    int c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    a = realloc(a, (size_t)c * size);
    if (!a) {
        fprintf(stderr, "order_oracle: out of memory\n");
        exit(2);
    }
    *cap = c;
    return a;
}

static int conflicts(const ident *x, int held, int req)
{
    if (!oracle_is_rw(x->type) || held == MODE_WRITE || req == MODE_WRITE)
        return 1;
    return x->type == TY_RW_WP;
}

oracle_model *oracle_model_new(const oracle_program *p, const oracle_run *r)
{
    oracle_model *m = calloc(1, sizeof *m);
    int nslots = p->nblocks * p->per_block;
    m->p = p;
    m->r = r;
    m->slot_id = malloc((size_t)nslots * sizeof *m->slot_id);
    m->block_base = calloc((size_t)p->nblocks, sizeof *m->block_base);
    m->cands = malloc(MAX_PATHS * sizeof *m->cands);
    if (!m || !m->slot_id || !m->block_base || !m->cands) {
        fprintf(stderr, "order_oracle: out of memory\n");
        exit(2);
    }
    for (int s = 0; s < nslots; s++)
        m->slot_id[s] = -1;
    return m;
}

void oracle_model_free(oracle_model *m)
{
    for (int i = 0; i < m->nids; i++) {
        free(m->ids[i].out);
        free(m->ids[i].in);
    }
    for (int i = 0; i < m->nreported; i++)
        free(m->reported[i]);
    free(m->reported);
    free(m->ids);
    free(m->edges);
    free(m->slot_id);
    free(m->block_base);
    free(m->cands);
    free(m->dist);
    free(m->queue);
    free(m->goal);
    free(m);
}

const char *oracle_model_beyond(const oracle_model *m)
{
    return m->beyond;
}

static int find_edge(const oracle_model *m, int from, int fm, int to, int tm)
{
    const ident *f = &m->ids[from];
    for (int k = 0; k < f->nout; k++) {
        const medge *e = &m->edges[f->out[k]];
        if (e->alive && e->to == to && e->fm == fm && e->tm == tm)
            return f->out[k];
    }
    return -1;
}

static void print_edge(const oracle_model *m, const medge *e)
{
    printf("  %d.%d:%c -> %d.%d:%c (%#lx -> %#lx)", m->ids[e->from].slot, e->from, "rw"[e->fm],
           m->ids[e->to].slot, e->to, "rw"[e->tm], (unsigned long)m->ids[e->from].addr,
           (unsigned long)m->ids[e->to].addr);
    for (int j = 0; j < e->nbelow; j++)
        printf("%s%d.%d", j ? "," : " below ", m->ids[e->below[j]].slot, e->below[j]);
    for (int j = 0; j < e->npath; j++)
        printf("%s%d.%d", j ? "," : " through ", m->ids[e->path[j]].slot, e->path[j]);
    printf("\n");
}

static int add_edge(oracle_model *m, medge e)
{
    if (m->trace)
        print_edge(m, &e);
    m->edges = grow(m->edges, &m->capedges, m->nedges + 1, sizeof *m->edges);
    int k = m->nedges++;
    e.alive = 1;
    m->edges[k] = e;
    ident *f = &m->ids[e.from], *t = &m->ids[e.to];
    f->out = grow(f->out, &f->capout, f->nout + 1, sizeof *f->out);
    f->out[f->nout++] = k;
    t->in = grow(t->in, &t->capin, t->nin + 1, sizeof *t->in);
    t->in[t->nin++] = k;
    return k;
}

/* X ends: the orders it stood between become implied edges, then it leaves the graph. The
 * lists are walked newest edge first, as the tracer keeps them: of two pairs that imply the
 * same edge, the newer one's path is the one kept. */
static void end_ident(oracle_model *m, int x)
{
    ident *X = &m->ids[x];
    int made = 0;
    for (int a = X->nout - 1; a >= 0; a--) {
        int ko = X->out[a];
        if (!m->edges[ko].alive || !m->edges[ko].nbelow)
            continue;
        for (int b = X->nin - 1; b >= 0; b--) {
            int ki = X->in[b];
            medge out = m->edges[ko], in = m->edges[ki];
            int j = 0;
            while (j < out.nbelow && (in.from != out.below[j] || in.fm != out.below_mode[j]))
                j++;
            if (!in.alive || j == out.nbelow || in.tm != out.fm || in.from == out.to ||
                find_edge(m, in.from, in.fm, out.to, out.tm) >= 0)
                continue;
            if (in.hops + out.hops > IMPLY_HOPS) {
                m->beyond = "an implied edge would stand for more than 16 edges";
                continue;
            }
            if (++made > IMPLY_MAX) {
                m->beyond = "an ending would imply more than 64 edges";
                continue;
            }
            /* under in.from when out was made: the next of out's run; past its last none
               is known (in's below is of in's first occurrence, maybe another) */
            medge e = {.from = in.from, .to = out.to, .fm = in.fm, .tm = out.tm,
                       .nbelow = j + 1 < out.nbelow, .hops = in.hops + out.hops};
            if (e.nbelow) {
                e.below[0] = out.below[j + 1];
                e.below_mode[0] = out.below_mode[j + 1];
            }
            memcpy(e.path, in.path, (size_t)in.npath * sizeof *e.path);
            e.npath = in.npath;
            e.path[e.npath++] = x;
            memcpy(e.path + e.npath, out.path, (size_t)out.npath * sizeof *e.path);
            e.npath += out.npath;
            add_edge(m, e);
            X = &m->ids[x];
        }
    }
    X->alive = 0;
    for (int a = 0; a < X->nout; a++)
        m->edges[X->out[a]].alive = 0;
    for (int b = 0; b < X->nin; b++)
        m->edges[X->in[b]].alive = 0;
    m->slot_id[X->slot] = -1;
}

static int held_mode(const oracle_model *m, int t, int id)
{
    for (int k = 0; k < m->nheld[t]; k++)
        if (m->held[t][k].id == id)
            return m->held[t][k].mode;
    return -1;
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The key of a path of states st[0..len] (ident * 2 + mode): its distinct locks, sorted (the
 * tracer keys a cycle by its set of locks, each counted once, however often the path passes
 * it: an rwlock may be entered for read, then for write). Returns its length. */
static int key_of(const int *st, int len, int *key)
{
    int n = 0;
    for (int k = 0; k <= len; k++)
        key[n++] = st[k] / 2;
    qsort(key, (size_t)n, sizeof *key, cmp_int);
    int u = 0;
    for (int k = 0; k < n; k++)
        if (!u || key[u - 1] != key[k])
            key[u++] = key[k];
    return u;
}

static int reported_key(const oracle_model *m, const int *key, int n)
{
    for (int i = 0; i < m->nreported; i++)
        if (m->reported[i][0] == n && !memcmp(m->reported[i] + 1, key, (size_t)n * sizeof *key))
            return 1;
    return 0;
}

static int was_reported(const oracle_model *m, const cand *c)
{
    return reported_key(m, c->key, c->nkey);
}

/* The path of states st[0..len] over edges ev[0..len-1] as a candidate. */
static void add_cand(oracle_model *m, const int *st, const int *ev, int len)
{
    if (m->ncands == MAX_PATHS) {
        m->any = 1;
        return;
    }
    cand *c = &m->cands[m->ncands++];
    c->goal = st[len] / 2;
    c->nkey = key_of(st, len, c->key);
    c->nseq = 0;
    for (int k = 0; k < len; k++) {
        const medge *e = &m->edges[ev[k]];
        c->ended[c->nseq] = 0;
        c->seq[c->nseq++] = m->ids[e->from].addr;
        for (int j = 0; j < e->npath; j++) {
            c->ended[c->nseq] = 1;
            c->seq[c->nseq++] = m->ids[e->path[j]].addr;
        }
    }
    c->ended[c->nseq] = 0;
    c->seq[c->nseq++] = m->ids[st[len] / 2].addr;
}

/* Every shortest path from st[0] to the goal state `target`, depth first over the BFS layers.
 * A path passes another goal state only when the cycle it closes there was reported: the
 * search goes on past those, and ends at one that was not. */
static void paths(oracle_model *m, int *st, int *ev, int k, int target)
{
    int key[64];
    if (m->any)
        return;
    if (k == m->dist[target]) {
        if (st[k] == target)
            add_cand(m, st, ev, k);
        return;
    }
    if (k > 0 && m->goal[st[k]] && !reported_key(m, key, key_of(st, k, key)))
        return;
    int n = st[k] / 2, in = st[k] % 2;
    const ident *x = &m->ids[n];
    for (int a = 0; a < x->nout; a++) {
        const medge *e = &m->edges[x->out[a]];
        int s = e->to * 2 + e->tm;
        if (e->alive && conflicts(x, e->fm, in) && m->dist[s] == k + 1) {
            st[k + 1] = s;
            ev[k] = x->out[a];
            paths(m, st, ev, k + 1, target);
        }
    }
}

/* Has the graph of live edges a cycle, modes left aside? (Depth first, colours in dist.) */
static int cyclic_from(oracle_model *m, int n)
{
    m->dist[n] = 1;
    const ident *x = &m->ids[n];
    for (int a = 0; a < x->nout; a++) {
        const medge *e = &m->edges[x->out[a]];
        if (e->alive && (m->dist[e->to] == 1 || (m->dist[e->to] == 0 && cyclic_from(m, e->to))))
            return 1;
    }
    m->dist[n] = 2;
    return 0;
}

static int cyclic(oracle_model *m)
{
    for (int n = 0; n < m->nids; n++)
        m->dist[n] = 0;
    for (int n = 0; n < m->nids; n++)
        if (m->dist[n] == 0 && cyclic_from(m, n))
            return 1;
    return 0;
}

/* Thread t took x in mode `mode` with new edges: the cycles through it that the tracer's
 * breadth-first search may report. It goes on past a goal whose cycle (the search path's
 * locks) was reported, and reports the first whose cycle was not; a state is reached once, by
 * a shortest path. So a report must close a shortest path to some goal state with a new set of
 * locks; one is certain when some goal state has such paths only; none may come when every
 * shortest path to every goal state was reported. (Before graph's cbde6b2 the first goal
 * ended the search, reported or not: finding oracle-2.)
 *
 * The tracer searches only while the graph has a cycle (README: "While the topological order
 * holds the graph has no cycle and nothing is searched"), or has had one whose back edge is
 * not reaped yet: a cycle closed only through a lock held under the anchor, whose edge to the
 * anchor went with an ended lock that implied nothing ("only the lock held right under B when
 * B -> C was first made counts"), may be found or not. */
static int search(oracle_model *m, int t, int x, int mode)
{
    int ns = 2 * m->nids;
    m->dist = realloc(m->dist, (size_t)ns * sizeof *m->dist);
    m->queue = realloc(m->queue, (size_t)ns * sizeof *m->queue);
    m->goal = realloc(m->goal, (size_t)ns * sizeof *m->goal);
    m->ncands = 0;
    m->any = 0;
    m->thread = t;
    m->x = x;
    m->mode = mode;
    int cycles = cyclic(m);
    for (int s = 0; s < ns; s++)
        m->dist[s] = -1, m->goal[s] = 0;
    int head = 0, tail = 0;
    m->queue[tail++] = x * 2 + mode;
    m->dist[x * 2 + mode] = 0;
    while (head < tail) {
        int s = m->queue[head++];
        const ident *n = &m->ids[s / 2];
        for (int a = 0; a < n->nout; a++) {
            const medge *e = &m->edges[n->out[a]];
            int w = e->to * 2 + e->tm;
            if (!e->alive || !conflicts(n, e->fm, s % 2) || m->dist[w] >= 0)
                continue;
            m->dist[w] = m->dist[s] + 1;
            int h = e->to == x ? -1 : held_mode(m, t, e->to);
            m->goal[w] = h >= 0 && conflicts(&m->ids[e->to], h, e->tm);
            m->queue[tail++] = w;
        }
    }
    int certain = 0, st[64], ev[64];
    st[0] = x * 2 + mode;
    for (int w = 0; w < ns && !m->any; w++) {
        if (!m->goal[w])
            continue;
        if (m->dist[w] >= 63) {
            m->any = 1;
            break;
        }
        int first = m->ncands, fresh = 0;
        paths(m, st, ev, 0, w);
        for (int i = first; i < m->ncands; i++)
            fresh += !was_reported(m, &m->cands[i]);
        certain |= fresh && fresh == m->ncands - first;
    }
    int fresh = 0;
    for (int i = 0; i < m->ncands; i++)
        fresh += !was_reported(m, &m->cands[i]);
    if (m->any || (fresh && !cycles))
        return V_MAY;
    return certain ? V_MUST : fresh ? V_MAY : V_NONE;
}

/* What the edge from held[t][k] keeps under it: the lock right under it; when it is an
 * anchor and that lock is none, the locks under it down to the newest anchor among them, at
 * most RUN_KEYS (each of them had its own edge into the anchor, and all were held when the
 * edge was made). */
static void below_of(const oracle_model *m, int t, int k, medge *e)
{
    const mheld *h = &m->held[t][k];
    e->nbelow = 0;
    for (int j = k - 1; j >= 0 && e->nbelow < RUN_KEYS; j--) {
        e->below[e->nbelow] = m->held[t][j].id;
        e->below_mode[e->nbelow++] = m->held[t][j].mode;
        if (!h->anchor || m->held[t][j].anchor)
            break;
    }
}

static int acquire(oracle_model *m, const oracle_step *s)
{
    int t = s->thread, x = m->slot_id[s->lock];
    const ident *X = &m->ids[x];
    int fresh = 0;
    for (int k = m->nheld[t] - 1; k >= 0; k--)
        if (m->held[t][k].id == x) {
            /* taken again by its holder: it could not wait, so no edge leads into it; its
               entry stays where it was, counted (so edges lead out of it from there) */
            m->held[t][k].count++;
            return V_NONE;
        }
    if (s->op == OP_LOCK) {
        for (int k = m->nheld[t] - 1; k >= 0; k--) {
            const mheld *h = &m->held[t][k];
            if (find_edge(m, h->id, h->mode, x, s->mode) < 0) {
                medge e = {.from = h->id, .to = x, .fm = h->mode, .tm = s->mode, .hops = 1};
                below_of(m, t, k, &e);
                add_edge(m, e);
                fresh++;
                X = &m->ids[x];
            }
            if (h->anchor)
                break;
        }
    }
    int anchor = s->op == OP_LOCK && conflicts(X, s->mode, s->mode);
    m->held[t][m->nheld[t]++] = (mheld){x, s->mode, anchor, 1};
    return fresh ? search(m, t, x, s->mode) : V_NONE;
}

int oracle_model_step(oracle_model *m, int i)
{
    const oracle_step *s = &m->p->steps[i];
    int per = m->p->per_block;
    m->ncands = 0;
    m->any = 0;
    switch (s->op) {
    case OP_ALLOC:
        m->block_base[s->lock] = m->r->base[i];
        return V_NONE;
    case OP_FREE:
        for (int k = s->lock * per; k < (s->lock + 1) * per; k++)
            if (m->slot_id[k] >= 0)
                end_ident(m, m->slot_id[k]);
        return V_NONE;
    case OP_INIT: {
        if (m->slot_id[s->lock] >= 0)
            end_ident(m, m->slot_id[s->lock]);
        m->ids = grow(m->ids, &m->capids, m->nids + 1, sizeof *m->ids);
        int b = s->lock / per;
        m->ids[m->nids] = (ident){.slot = s->lock, .type = s->type, .alive = 1,
                                  .addr = m->block_base[b] +
                                          (uintptr_t)(s->lock % per) * oracle_slot_size()};
        m->slot_id[s->lock] = m->nids++;
        return V_NONE;
    }
    case OP_DESTROY:
        end_ident(m, m->slot_id[s->lock]);
        return V_NONE;
    case OP_UNLOCK: {
        int t = s->thread, x = m->slot_id[s->lock];
        for (int k = m->nheld[t] - 1; k >= 0; k--) {
            if (m->held[t][k].id == x && --m->held[t][k].count == 0) {
                memmove(&m->held[t][k], &m->held[t][k + 1],
                        (size_t)(m->nheld[t] - k - 1) * sizeof m->held[t][k]);
                m->nheld[t]--;
                break;
            }
            if (m->held[t][k].id == x)
                break;
        }
        return V_NONE;
    }
    default:
        return s->ok ? acquire(m, s) : V_NONE;
    }
}

/* The closing edge goal -> X of a reported cycle, into the graph as a plain edge (order.c's
 * closing_unwound: "into the graph, where it was implied through an anchor or kept only
 * recorded frames"): the walk made none when the goal was held under the anchor, and an
 * implied one becomes the occurrence the report shows. */
static void closing_edge(oracle_model *m, int goal)
{
    int t = m->thread;
    for (int k = 0; k < m->nheld[t]; k++) {
        const mheld *h = &m->held[t][k];
        if (h->id != goal)
            continue;
        int e = find_edge(m, goal, h->mode, m->x, m->mode);
        medge plain = {.from = goal, .to = m->x, .fm = h->mode, .tm = m->mode, .hops = 1,
                       .alive = 1};
        if (e < 0) {
            below_of(m, t, k, &plain);
            add_edge(m, plain);
        } else if (m->edges[e].npath) {
            /* the occurrence changes, not what was under */
            plain.nbelow = m->edges[e].nbelow;
            memcpy(plain.below, m->edges[e].below, sizeof plain.below);
            memcpy(plain.below_mode, m->edges[e].below_mode, sizeof plain.below_mode);
            m->edges[e] = plain;
        }
        return;
    }
}

/* Is the report's cycle b (ended flags be) the candidate c, rotated? The flags count: a cycle
 * through a lock that was initialised again and one through its new identity have the same
 * addresses but not the same set of locks (seed 340653: the first was reported, the model took
 * the report for the second and called the second's own report a repeat). */
static int rotation(const cand *c, const uintptr_t *b, const unsigned char *be, int n)
{
    for (int r = 0; r < n; r++) {
        int k = 0;
        while (k < n && c->seq[(r + k) % n] == b[k] && c->ended[(r + k) % n] == !!be[k])
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

int oracle_model_accept(oracle_model *m, const uintptr_t *addr, const unsigned char *ended, int n,
                        char *why, size_t size)
{
    int unreported = 0;
    for (int i = 0; i < m->ncands; i++)
        unreported += !was_reported(m, &m->cands[i]);
    for (int i = 0; i < m->ncands; i++) {
        cand *c = &m->cands[i];
        if (was_reported(m, c) || (addr ? c->nseq != n || !rotation(c, addr, ended, n)
                                        : n != 0 || unreported != 1))
            continue;
        m->reported = grow(m->reported, &m->capreported, m->nreported + 1, sizeof *m->reported);
        int *k = malloc((size_t)(c->nkey + 1) * sizeof *k);
        if (!k) {
            fprintf(stderr, "order_oracle: out of memory\n");
            exit(2);
        }
        k[0] = c->nkey;
        memcpy(k + 1, c->key, (size_t)c->nkey * sizeof *k);
        m->reported[m->nreported++] = k;
        closing_edge(m, c->goal);
        if (m->nreported == 100) /* README: "Each kind prints at most 100 distinct reports" */
            m->beyond = "100 reports, the most the tracer prints of a kind";
        return 1;
    }
    if (m->any)
        return 1;
    if (!addr && !n && unreported > 1) {
        m->beyond = "a repeated report (\"again\") where the model has several new cycles";
        return 1;
    }
    size_t used = (size_t)snprintf(why, size, "expected %s", m->ncands ? "one of" : "no cycle");
    for (int i = 0; i < m->ncands && used < size; i++) {
        cand *c = &m->cands[i];
        used += (size_t)snprintf(why + used, size - used, "%s (", i ? "," : "");
        for (int j = 0; j < c->nseq && used < size; j++)
            used += (size_t)snprintf(why + used, size - used, "%s%#lx%s", j ? " -> " : "",
                                     (unsigned long)c->seq[j], c->ended[j] ? " (ended)" : "");
        if (used < size)
            used += (size_t)snprintf(why + used, size - used, ")%s",
                                     was_reported(m, c) ? " reported before" : "");
    }
    return 0;
}

void oracle_model_dump(const oracle_model *m)
{
    printf("model graph (slot.identity:mode):\n");
    for (int k = 0; k < m->nedges; k++)
        if (m->edges[k].alive)
            print_edge(m, &m->edges[k]);
}

void oracle_model_trace(oracle_model *m, int on)
{
    m->trace = on;
}
