/*
 * order_oracle_gen.c - random lock programs for the order oracle, from a seed.
 *
 * The generator keeps the whole lock state (which thread holds what, in which mode) so that
 * every blocking or timed request it writes is granted at once: a request that would wait is
 * written as a trylock, which then fails. A thread asks again for a lock it holds only where
 * that is legal (recursive mutex, read of a read-held rwlock, a trylock that fails): the
 * same-thread deadlocks are another test's subject. Locks are picked mostly from a small "hot"
 * set, so the orders of different turns meet and close cycles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_oracle.h"

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int below(rng *r, int n)
{
    return (int)(next(r) % (uint64_t)n);
}

static int chance(rng *r, int percent)
{
    return below(r, 100) < percent;
}

enum { UNINIT, LIVE, DESTROYED };

typedef struct held {
    int slot, mode;
} held;

typedef struct gen {
    rng r;
    oracle_program *p;
    int cap;
    unsigned types;       /* enabled lock types, by bit */
    int block_live[64];
    int *state, *type;    /* per slot */
    int *writer;          /* per slot: thread holding it for write, -1 */
    int *depth;           /* per slot: how many times `writer` holds it (recursive mutex) */
    int (*readers)[ORACLE_THREADS];
    held held[ORACLE_THREADS][ORACLE_MAX_HELD];
    int nheld[ORACLE_THREADS];
    int hot[8], nhot, hot_percent;
    int ops_percent[4]; /* unlock, init/destroy, free, timed/try mix (see step) */
    int timed, try, again; /* may use them */
} gen;

static void emit(gen *g, int op, int thread, int lock, int mode, int type, int ok)
{
    oracle_program *p = g->p;
    if (p->nsteps == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        p->steps = realloc(p->steps, (size_t)g->cap * sizeof *p->steps);
        if (!p->steps) {
            fprintf(stderr, "order_oracle: out of memory\n");
            exit(2);
        }
    }
    p->steps[p->nsteps++] = (oracle_step){(uint8_t)op, (uint8_t)thread, (uint8_t)mode,
                                          (uint8_t)type, (uint8_t)ok, (uint16_t)lock};
}

static int held_by_anyone(const gen *g, int slot)
{
    if (g->writer[slot] >= 0)
        return 1;
    for (int t = 0; t < ORACLE_THREADS; t++)
        if (g->readers[slot][t])
            return 1;
    return 0;
}

static int held_by(const gen *g, int slot, int t)
{
    return g->writer[slot] == t || g->readers[slot][t];
}

/* Would a request of thread t for slot in mode wait for another thread? */
static int must_wait(const gen *g, int slot, int t, int mode)
{
    if (g->writer[slot] >= 0 && g->writer[slot] != t)
        return 1;
    if (mode == MODE_WRITE)
        for (int u = 0; u < ORACLE_THREADS; u++)
            if (u != t && g->readers[slot][u])
                return 1;
    return 0;
}

static int random_type(gen *g)
{
    for (;;) {
        int ty = below(&g->r, TY_COUNT);
        if (g->types & (1u << ty))
            return ty;
    }
}

/* The slot made ready for use: its block allocated, a lock in it. */
static void make_ready(gen *g, int t, int slot)
{
    int b = slot / g->p->per_block;
    if (!g->block_live[b]) {
        emit(g, OP_ALLOC, t, b, 0, 0, 1);
        g->block_live[b] = 1;
    }
    if (g->state[slot] != LIVE) {
        g->type[slot] = random_type(g);
        emit(g, OP_INIT, t, slot, 0, g->type[slot], 1);
        g->state[slot] = LIVE;
    }
}

static int pick_slot(gen *g)
{
    int n = g->p->nblocks * g->p->per_block;
    return chance(&g->r, g->hot_percent) ? g->hot[below(&g->r, g->nhot)] : below(&g->r, n);
}

/* Thread t asks again for a lock it holds: a recursive mutex is taken again, a read lock on an
 * rwlock it holds for read too (no writer waits, so even a writer-preferring one lets it in);
 * anything else only as a trylock, which fails. */
static void acquire_again(gen *g, int t, int slot)
{
    int type = g->type[slot];
    int mode = g->readers[slot][t] ? MODE_READ : MODE_WRITE;
    int how = below(&g->r, 3) == 0 && g->try ? OP_TRY
              : chance(&g->r, 30) && g->timed && type != TY_SPIN ? OP_TIMED
                                                                 : OP_LOCK;
    int ok = type == TY_RECURSIVE || (mode == MODE_READ && chance(&g->r, 70));
    if (!ok && !g->try)
        return;
    if (!ok) /* a trylock that fails: for write, or for read of a write-held rwlock */
        mode = oracle_is_rw(type) && mode == MODE_WRITE && chance(&g->r, 50) ? MODE_READ : MODE_WRITE;
    emit(g, ok ? how : OP_TRY, t, slot, mode, type, ok);
    if (!ok)
        return;
    if (mode == MODE_WRITE)
        g->depth[slot]++;
    else
        g->readers[slot][t]++;
    g->held[t][g->nheld[t]++] = (held){slot, mode};
}

static void acquire(gen *g, int t)
{
    int slot = pick_slot(g);
    if (held_by(g, slot, t)) {
        if (g->again)
            acquire_again(g, t, slot);
        return;
    }
    make_ready(g, t, slot);
    int type = g->type[slot];
    int mode = oracle_is_rw(type) && chance(&g->r, 50) ? MODE_READ : MODE_WRITE;
    int how = below(&g->r, 100) < g->ops_percent[3] ? (chance(&g->r, 50) ? OP_TRY : OP_TIMED)
                                                    : OP_LOCK;
    if ((how == OP_TIMED && (type == TY_SPIN || !g->timed)) || (how == OP_TRY && !g->try))
        how = OP_LOCK;
    int wait = must_wait(g, slot, t, mode);
    if (wait)
        how = OP_TRY;
    emit(g, how, t, slot, mode, type, !wait);
    if (wait)
        return;
    if (mode == MODE_WRITE) {
        g->writer[slot] = t;
        g->depth[slot] = 1;
    } else {
        g->readers[slot][t]++;
    }
    g->held[t][g->nheld[t]++] = (held){slot, mode};
}

static void release(gen *g, int t, int k)
{
    held h = g->held[t][k];
    memmove(&g->held[t][k], &g->held[t][k + 1], (size_t)(g->nheld[t] - k - 1) * sizeof h);
    g->nheld[t]--;
    if (h.mode == MODE_WRITE && --g->depth[h.slot] == 0)
        g->writer[h.slot] = -1;
    else if (h.mode == MODE_READ)
        g->readers[h.slot][t]--;
    emit(g, OP_UNLOCK, t, h.slot, h.mode, g->type[h.slot], 1);
}

/* init again, destroy, or free a block: only of locks no thread holds. */
static void lifecycle(gen *g, int t, int free_block)
{
    int per = g->p->per_block;
    if (free_block) {
        int b = below(&g->r, g->p->nblocks);
        if (!g->block_live[b])
            return;
        for (int s = b * per; s < (b + 1) * per; s++)
            if (held_by_anyone(g, s))
                return;
        emit(g, OP_FREE, t, b, 0, 0, 1);
        g->block_live[b] = 0;
        for (int s = b * per; s < (b + 1) * per; s++)
            g->state[s] = UNINIT;
        return;
    }
    int slot = pick_slot(g);
    if (!g->block_live[slot / per] || held_by_anyone(g, slot))
        return;
    if (g->state[slot] == LIVE && chance(&g->r, 60)) {
        emit(g, OP_DESTROY, t, slot, 0, g->type[slot], 1);
        g->state[slot] = DESTROYED;
    } else {
        g->type[slot] = random_type(g);
        emit(g, OP_INIT, t, slot, 0, g->type[slot], 1);
        g->state[slot] = LIVE;
    }
}

static void step(gen *g, int t)
{
    int u = below(&g->r, 100);
    if (g->nheld[t] && u < g->ops_percent[0])
        release(g, t, below(&g->r, g->nheld[t]));
    else if (u >= 100 - g->ops_percent[1] - g->ops_percent[2])
        lifecycle(g, t, u >= 100 - g->ops_percent[2]);
    else if (g->nheld[t] < ORACLE_MAX_HELD)
        acquire(g, t);
}

void oracle_generate(oracle_program *p, uint64_t seed, const oracle_features *f)
{
    gen g = {.r = {seed}, .p = p};
    memset(p, 0, sizeof *p);
    p->seed = seed;
    /* sizes: a few locks (cycles everywhere), tens, or hundreds */
    int size = below(&g.r, 3);
    p->nthreads = 1 + below(&g.r, ORACLE_THREADS);
    p->nblocks = 1 + below(&g.r, 4);
    p->per_block = size == 0 ? 1 + below(&g.r, 3) : size == 1 ? 4 + below(&g.r, 12)
                                                             : 16 + below(&g.r, 49);
    int nslots = p->nblocks * p->per_block;
    int length = 20 + below(&g.r, size == 2 ? 400 : 200);
    do
        g.types = (unsigned)next(&g.r) & f->types;
    while (!g.types);
    g.nhot = 2 + below(&g.r, 6);
    for (int i = 0; i < g.nhot; i++)
        g.hot[i] = below(&g.r, nslots);
    g.hot_percent = nslots <= 8 ? 0 : 50 + below(&g.r, 50);
    g.ops_percent[0] = 25 + below(&g.r, 30);
    g.ops_percent[1] = f->ends ? below(&g.r, 12) : 0;
    g.ops_percent[2] = f->ends ? below(&g.r, 3) : 0;
    g.ops_percent[3] = below(&g.r, 50);
    g.timed = f->timed;
    g.try = f->try;
    g.again = f->again;
    g.state = calloc((size_t)nslots, sizeof *g.state);
    g.type = calloc((size_t)nslots, sizeof *g.type);
    g.writer = malloc((size_t)nslots * sizeof *g.writer);
    g.depth = calloc((size_t)nslots, sizeof *g.depth);
    g.readers = calloc((size_t)nslots, sizeof *g.readers);
    if (!g.state || !g.type || !g.writer || !g.depth || !g.readers) {
        fprintf(stderr, "order_oracle: out of memory\n");
        exit(2);
    }
    for (int s = 0; s < nslots; s++)
        g.writer[s] = -1;
    for (int b = 0; b < p->nblocks; b++) {
        emit(&g, OP_ALLOC, 0, b, 0, 0, 1);
        g.block_live[b] = 1;
    }
    int t = 0;
    for (int i = 0; i < length; i++) {
        if (chance(&g.r, 25))
            t = below(&g.r, p->nthreads);
        step(&g, t);
    }
    for (t = 0; t < p->nthreads; t++)
        while (g.nheld[t])
            release(&g, t, below(&g.r, g.nheld[t]));
    free(g.state);
    free(g.type);
    free(g.writer);
    free(g.depth);
    free(g.readers);
}

void oracle_program_free(oracle_program *p)
{
    free(p->steps);
    p->steps = NULL;
}

void oracle_print_program(const oracle_program *p)
{
    static const char *const op[] = {"alloc", "free", "init", "destroy",
                                     "lock", "timed", "try", "unlock"};
    static const char *const ty[] = {"mutex",     "recursive", "errorcheck", "rwlock",
                                     "rwlock-wp", "spin",      "rwlock-pw"};
    printf("program seed %llu: %d threads, %d blocks of %d slots, %d steps\n",
           (unsigned long long)p->seed, p->nthreads, p->nblocks, p->per_block, p->nsteps);
    for (int i = 0; i < p->nsteps; i++) {
        const oracle_step *s = &p->steps[i];
        printf("  %3d T%d %-7s %s%u", i, s->thread, op[s->op],
               s->op == OP_ALLOC || s->op == OP_FREE ? "block " : "slot ", s->lock);
        if (s->op == OP_INIT)
            printf(" %s", ty[s->type]);
        if (s->op >= OP_LOCK)
            printf(" %s %s", ty[s->type], s->mode == MODE_READ ? "read" : "write");
        if (s->op == OP_TRY)
            printf(" -> %s", s->ok ? "taken" : "busy");
        printf("\n");
    }
}
