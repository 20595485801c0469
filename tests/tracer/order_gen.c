/*
 * order_gen.c - random lock programs in the shapes that exercise a new lock's first edges
 * (chains of locks made and taken at once under the newest one, hand over hand, then ended
 * and made again at the same address, and two of a chain taken the other way after some of
 * it ended), checked against what the program itself saw.
 *
 * Each program runs in a child of its own (an empty lock-order graph), with its stderr in a
 * memory file. Its threads take turns (semaphores, no lock order), so nothing ever waits.
 * Locks: mutexes of the three types, reader- and writer-preferring rwlocks, static ones
 * (PTHREAD_*_INITIALIZER first, then init) and heap ones (malloc'd, destroyed and freed, or
 * freed without destroy, or made by copying an initializer into fresh memory). Requests:
 * blocking, timed, try. Every acquisition notes the locks held then and how long stderr was
 * before and after it, so each report belongs to one acquisition.
 *
 * The check is the rules of tracer/src/order.c's header and docs/limits.md as written
 * down once more, not the tracer's code: a blocking acquisition of X in mode m (not a trylock
 * nor a timed one: neither can wait for good) orders every lock H its thread holds (in mode h)
 * before X ("H:h -> X:m", a fact, kept after the locks end). A lock identity is (slot, incarnation): init, destroy and free end one. Modes
 * conflict when either is write, read against read only on a writer-preferring rwlock; a
 * mutex always conflicts.
 *  - Nothing false: an inversion report comes at a blocking acquisition of X, at
 *    most one an acquisition, and its cycle (addresses in order) is one of facts through X's
 *    identity, conflicting at each lock; a place may stand for any identity its address had,
 *    and the places the report says ended may be passed over (an implied edge through ended
 *    locks says its head was taken while its tail was held, whatever the modes between, and
 *    a report lists some of those locks). A repeat ("again": the call sites of an earlier
 *    report) needs some cycle of facts through X. No report of another kind.
 *  - Nothing missed where the graph must have it: an acquisition that closes a 2-lock
 *    inversion X:m under H:h with X:x -> H:y, conflicting at both, between two live locks
 *    whose pair no acquisition closed before, must report something, when both edges are
 *    the graph's own: made with no anchor between (a lock taken by a blocking
 *    request that conflicts with itself; an older lock's order is kept only through it,
 *    and through its end only as far as "Ended locks" implies).
 * Which cycle is not checked: several may be equally short, and a search meets them in the
 * order of the graph's lists. ORDER_GEN_SEED=N runs seed N and prints its trace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "warm_reports.h"

#define SLOTS 10
#define THREADS 3
#define MAX_HELD 6   /* below the tracer's walk of the 8 newest held locks (README) */
#define SEGMENTS 14
#define PROGRAMS 40  /* the CI seeds: ~0.1 s each under the tracer */
#define WARM_PROGRAMS 8
#define MAX_IDENTS 4096
#define MAX_ACQ 4096
#define MAX_FACTS 65536
#define MAX_CYCLE 64
#define CHILD_ALARM_S 30

enum { MUTEX, RWLOCK };
enum { READ, WRITE };
enum { BLOCK, TIMED, TRY };

typedef struct ident {
    uintptr_t addr;
    int kind, wpref;
} ident;

typedef struct acq {
    int id, mode, how;
    int nheld, held[MAX_HELD], hmode[MAX_HELD];
    int anchor[MAX_HELD]; /* held[h] was taken by a blocking request and conflicts
                             with itself in its mode: it stands for the locks under it */
    off_t before, after; /* stderr's length around the call */
} acq;

typedef struct fact {
    int from, fmode, to, tmode;
    int direct; /* once made with no anchor between: an edge of the graph itself */
} fact;

/* The program's state and its record (the child's; the check runs in the child at the end). */
static struct {
    int kind[SLOTS], heap[SLOTS], live[SLOTS], id[SLOTS], held[SLOTS], wpref[SLOTS];
    int anchor[SLOTS]; /* of a held slot: acq's anchor */
    void *p[SLOTS];
    int stack[SLOTS], nstack;
    ident idents[MAX_IDENTS];
    int nidents;
    acq acqs[MAX_ACQ];
    int nacqs;
} g;

static pthread_mutex_t smx[SLOTS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static pthread_rwlock_t srw[SLOTS] = {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER,
    PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER,
    PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER,
    PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER};

static uint64_t rs;
static int verbose;
static int ordered; /* warming up: locks taken in slot order only, so no inversion */

static unsigned rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (unsigned)(rs >> 11);
}
static int pct(int p) { return (int)(rnd() % 100) < p; }
static int rn(int n) { return n > 0 ? (int)(rnd() % (unsigned)n) : 0; }

static void die(const char *what)
{
    printf("order_gen: %s\n", what);
    fflush(stdout);
    _exit(2);
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
    if (!verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static off_t err_len(void)
{
    return lseek(2, 0, SEEK_CUR);
}

static void new_ident(int i)
{
    if (g.nidents == MAX_IDENTS)
        die("too many lock identities");
    g.idents[g.nidents] = (ident){(uintptr_t)g.p[i], g.kind[i], g.wpref[i]};
    g.id[i] = g.nidents++;
    g.live[i] = 1;
    trace("  s%d is identity %d at %p (%s%s)\n", i, g.id[i], g.p[i],
          g.kind[i] == MUTEX ? "mutex" : "rwlock", g.wpref[i] ? ", writer-preferring" : "");
}

/* Slot i (ended) gets a new lock; a static one may still be its initializer's. */
static void create(int i, int initializer)
{
    g.wpref[i] = 0;
    if (g.heap[i]) {
        if (pct(40))
            g.kind[i] = pct(60) ? MUTEX : RWLOCK;
        g.p[i] = malloc(64);
        if (!g.p[i])
            die("out of memory");
        if (g.kind[i] == MUTEX && pct(20)) { /* a mutex the tracer first sees at its lock */
            pthread_mutex_t z = PTHREAD_MUTEX_INITIALIZER;
            memcpy(g.p[i], &z, sizeof z);
            new_ident(i);
            return;
        }
    } else {
        g.p[i] = g.kind[i] == MUTEX ? (void *)&smx[i] : (void *)&srw[i];
        if (initializer) { /* (the memory may hold a lock a program before ended) */
            if (g.kind[i] == MUTEX)
                smx[i] = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
            else
                srw[i] = (pthread_rwlock_t)PTHREAD_RWLOCK_INITIALIZER;
            new_ident(i);
            return;
        }
    }
    if (g.kind[i] == MUTEX) {
        pthread_mutexattr_t a;
        static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
                                    PTHREAD_MUTEX_RECURSIVE};
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, types[rn(3)]);
        pthread_mutex_init(g.p[i], &a);
        pthread_mutexattr_destroy(&a);
    } else {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        g.wpref[i] = pct(35);
        if (g.wpref[i])
            pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(g.p[i], &a);
        pthread_rwlockattr_destroy(&a);
    }
    new_ident(i);
}

/* Slot i (live, not held) ends: destroyed (and freed), or a heap mutex freed as it is, or a
 * static mutex initialised again without a destroy. */
static void end(int i)
{
    int r = rn(10);
    trace("  end s%d (identity %d)\n", i, g.id[i]);
    g.live[i] = 0;
    if (g.heap[i] && g.kind[i] == MUTEX && r < 3) {
        free(g.p[i]);
        return;
    }
    if (!g.heap[i] && g.kind[i] == MUTEX && r < 3) {
        pthread_mutex_init(g.p[i], NULL);
        new_ident(i);
        return;
    }
    if (g.kind[i] == MUTEX)
        pthread_mutex_destroy(g.p[i]);
    else
        pthread_rwlock_destroy(g.p[i]);
    if (g.heap[i])
        free(g.p[i]);
}

static void lock(int i, int me)
{
    if (g.nacqs == MAX_ACQ)
        die("too many acquisitions");
    acq *a = &g.acqs[g.nacqs++];
    struct timespec ts;
    int r, k = rn(10);
    a->id = g.id[i];
    a->how = k < 1 ? TRY : k < 2 ? TIMED : BLOCK;
    a->mode = g.kind[i] == MUTEX || pct(45) ? WRITE : READ;
    a->nheld = g.nstack;
    for (int h = 0; h < g.nstack; h++) {
        a->held[h] = g.id[g.stack[h]];
        a->hmode[h] = g.held[g.stack[h]] - 1;
        a->anchor[h] = g.anchor[g.stack[h]];
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 30;
    a->before = err_len();
    if (g.kind[i] == MUTEX)
        r = a->how == TRY     ? pthread_mutex_trylock(g.p[i])
            : a->how == TIMED ? pthread_mutex_timedlock(g.p[i], &ts)
                              : pthread_mutex_lock(g.p[i]);
    else if (a->mode == WRITE)
        r = a->how == TRY     ? pthread_rwlock_trywrlock(g.p[i])
            : a->how == TIMED ? pthread_rwlock_timedwrlock(g.p[i], &ts)
                              : pthread_rwlock_wrlock(g.p[i]);
    else
        r = a->how == TRY     ? pthread_rwlock_tryrdlock(g.p[i])
            : a->how == TIMED ? pthread_rwlock_timedrdlock(g.p[i], &ts)
                              : pthread_rwlock_rdlock(g.p[i]);
    a->after = err_len();
    trace("acquisition %d: t%d %s s%d (identity %d) for %s -> %d, holding", g.nacqs - 1, me,
          a->how == TRY ? "tries" : a->how == TIMED ? "times" : "takes", i, a->id,
          a->mode == WRITE ? "write" : "read", r);
    for (int h = 0; h < a->nheld; h++)
        trace(" %d:%c", a->held[h], a->hmode[h] == WRITE ? 'w' : 'r');
    trace("\n");
    if (r)
        die("a lock of a free lock failed");
    g.held[i] = 1 + a->mode;
    g.anchor[i] = a->how == BLOCK && (a->mode == WRITE || g.wpref[i]);
    g.stack[g.nstack++] = i;
}

static void unlock_at(int k)
{
    int i = g.stack[k];
    int r = g.kind[i] == MUTEX ? pthread_mutex_unlock(g.p[i]) : pthread_rwlock_unlock(g.p[i]);
    if (r)
        die("an unlock failed");
    trace("  unlock s%d (identity %d)\n", i, g.id[i]);
    g.held[i] = 0;
    memmove(&g.stack[k], &g.stack[k + 1], sizeof(int) * (size_t)(g.nstack - k - 1));
    g.nstack--;
}

static int pick(int live)
{
    int c[SLOTS], n = 0;
    for (int i = ordered && g.nstack ? g.stack[g.nstack - 1] + 1 : 0; i < SLOTS; i++)
        if (live ? g.live[i] && !g.held[i] : !g.live[i])
            c[n++] = i;
    return n ? c[rn(n)] : -1;
}

/* A slot for a new lock: an ended one, or a live one not held, ended first. */
static int fresh_slot(void)
{
    int i = pick(0);
    if (i < 0 && (i = pick(1)) >= 0)
        end(i);
    if (i >= 0)
        create(i, 0);
    return i;
}

/* A chain of new locks, let go (oldest or newest first), some of them ended (and made again
 * at once), then two of them taken the other way: an inversion only while both live. */
static void chain_inverted(int me)
{
    int ch[MAX_HELD], n = 0, len = 2 + rn(3), base = g.nstack, i;
    while (n < len && g.nstack < MAX_HELD && (i = fresh_slot()) >= 0) {
        lock(i, me);
        ch[n++] = i;
    }
    for (int oldest = pct(50); g.nstack > base;)
        unlock_at(oldest ? base : g.nstack - 1);
    for (int c = 0; c < n; c++)
        if (pct(35)) {
            end(ch[c]);
            if (pct(50))
                create(ch[c], 0);
        }
    if (n < 2 || ordered || g.nstack + 2 > MAX_HELD)
        return;
    int x = rn(n - 1), y = x + 1 + rn(n - 1 - x);
    if (!g.live[ch[x]] || !g.live[ch[y]])
        return;
    lock(ch[y], me);
    lock(ch[x], me);
    unlock_at(g.nstack - 1);
    unlock_at(g.nstack - 1);
}

static void segment(int me)
{
    int nops = 3 + rn(16);
    for (int op = 0; op < nops; op++) {
        int r = rn(100), i;
        if (r < 40 || (g.nstack == 0 && r < 60)) { /* take a live lock */
            if (g.nstack < MAX_HELD && (i = pick(1)) >= 0)
                lock(i, me);
        } else if (r < 60) { /* release one, mostly the newest */
            if (g.nstack)
                unlock_at(pct(75) ? g.nstack - 1 : rn(g.nstack));
        } else if (r < 80) { /* a chain of new locks, each taken under the one before */
            for (int c = 1 + rn(4); c > 0 && g.nstack < MAX_HELD; c--) {
                if ((i = fresh_slot()) < 0)
                    break;
                lock(i, me);
                if (pct(25) && g.nstack >= 2) /* hand over hand */
                    unlock_at(g.nstack - 2);
            }
        } else if (r < 90) {
            chain_inverted(me);
        } else if (r < 96) { /* end a lock, maybe make one again there at once */
            if ((i = pick(1)) >= 0) {
                end(i);
                if (pct(60))
                    create(i, 0);
            }
        } else if ((i = pick(0)) >= 0) {
            create(i, 0);
        }
    }
    while (g.nstack)
        unlock_at(pct(80) ? g.nstack - 1 : rn(g.nstack));
}

static sem_t go[THREADS + 1], done;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (;;) {
        sem_wait(&go[me]); /* a cancellation point: run_program ends it here */
        segment(me);
        sem_post(&done);
    }
    return NULL;
}

static void run_program(void)
{
    pthread_t th[THREADS + 1];
    int nthr = 1 + rn(THREADS);
    for (int i = 0; i < SLOTS; i++) {
        g.kind[i] = pct(60) ? MUTEX : RWLOCK;
        g.heap[i] = pct(50);
        if (pct(70))
            create(i, !g.heap[i] && pct(60));
        else
            g.live[i] = 0;
    }
    sem_init(&done, 0, 0);
    for (int t = 1; t <= nthr; t++) {
        sem_init(&go[t], 0, 0);
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t))
            die("pthread_create failed");
    }
    for (int s = 0; s < SEGMENTS; s++) {
        int who = rn(nthr + 1);
        trace("segment %d by t%d\n", s, who);
        if (who == 0) {
            segment(0);
        } else {
            sem_post(&go[who]);
            sem_wait(&done);
        }
    }
    for (int t = 1; t <= nthr; t++)
        pthread_cancel(th[t]);
    for (int t = 1; t <= nthr; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < SLOTS; i++)
        if (g.live[i])
            end(i);
}

/* ---------------------------------------------------------------------------------------- */
/* The check. */

static fact facts[MAX_FACTS];
static int nfacts;

static int conflicts(int id, int held, int req)
{
    const ident *x = &g.idents[id];
    return x->kind == MUTEX || held == WRITE || req == WRITE || x->wpref;
}

static void add_fact(int from, int fmode, int to, int tmode, int direct)
{
    for (int f = 0; f < nfacts; f++)
        if (facts[f].from == from && facts[f].fmode == fmode && facts[f].to == to &&
            facts[f].tmode == tmode) {
            facts[f].direct |= direct;
            return;
        }
    if (nfacts == MAX_FACTS)
        die("too many facts");
    facts[nfacts++] = (fact){from, fmode, to, tmode, direct};
}

/* Is there a chain of facts from (x entered in mode m) back to a lock a->held[] in a mode
 * conflicting with the request reaching it? Breadth-first over (identity, mode entered). */
static int cycle_through(const acq *a)
{
    static unsigned char seen[MAX_IDENTS][2];
    static int queue[2 * MAX_IDENTS][2];
    int head = 0, tail = 0;
    memset(seen, 0, sizeof seen);
    queue[tail][0] = a->id, queue[tail++][1] = a->mode;
    seen[a->id][a->mode] = 1;
    while (head < tail) {
        int n = queue[head][0], in = queue[head++][1];
        for (int f = 0; f < nfacts; f++) {
            const fact *e = &facts[f];
            if (e->from != n || !conflicts(n, e->fmode, in))
                continue;
            for (int h = 0; h < a->nheld; h++)
                if (a->held[h] == e->to && conflicts(e->to, a->hmode[h], e->tmode))
                    return 1;
            if (!seen[e->to][e->tmode]) {
                seen[e->to][e->tmode] = 1;
                queue[tail][0] = e->to, queue[tail++][1] = e->tmode;
            }
        }
    }
    return 0;
}

/* A report's cycle: its addresses in order (place k -> place k+1, the last -> place 0), and
 * which of them it says ended ("... after these edges were made"). An implied edge through
 * ended locks says what happened - its head was taken while its tail was held - whatever
 * the modes of the locks between (order.c "Ended locks"), and a report lists some of them. */
typedef struct rcycle {
    uintptr_t addr[MAX_CYCLE];
    int n, ended[MAX_CYCLE];
} rcycle;

/* Can the cycle go on from place k, identity id entered in mode in, back to X (place 0,
 * identity x) by facts, passing over ended places only, conflicting at every lock it stops
 * at? Depth first: n is small. */
static int cycle_on(const rcycle *c, int k, int id, int in, int x, int first_mode)
{
    for (int next = k + 1; next <= c->n; next++) {
        uintptr_t to = c->addr[next % c->n];
        for (int f = 0; f < nfacts; f++) {
            const fact *e = &facts[f];
            if (e->from != id || g.idents[e->to].addr != to || (k && !conflicts(id, in, e->fmode)))
                continue;
            if (next == c->n ? e->to == x && conflicts(x, e->tmode, first_mode)
                             : k == 0 ? cycle_on(c, next, e->to, e->tmode, x, e->fmode)
                                      : cycle_on(c, next, e->to, e->tmode, x, first_mode))
                return 1;
        }
        if (next == c->n || !c->ended[next])
            break;
    }
    return 0;
}

/* Is the report's cycle one of facts through identity x, at its address? */
static int cycle_made(const rcycle *c, int x)
{
    rcycle r = {.n = c->n};
    for (int k = 0; k < c->n; k++) {
        if (c->addr[k] != g.idents[x].addr)
            continue;
        for (int i = 0; i < c->n; i++) {
            r.addr[i] = c->addr[(k + i) % c->n];
            r.ended[i] = c->ended[(k + i) % c->n];
        }
        if (cycle_on(&r, 0, x, 0, x, 0))
            return 1;
    }
    return 0;
}

/* The addresses of the cycle a report's first line names, in its order, the closing repeat
 * left out; -1 when the line cannot be read. */
static int cycle_of(const char *line, uintptr_t *addr)
{
    const char *p = strstr(line, "in a cycle (");
    int n = 0;
    if (!p)
        return -1;
    for (p += strlen("in a cycle ("); n < MAX_CYCLE;) {
        char *end;
        if (strncmp(p, "0x", 2) != 0)
            return -1;
        addr[n++] = (uintptr_t)strtoull(p, &end, 16);
        p = end;
        if (strncmp(p, " \"", 2) == 0 && (p = strchr(p + 2, '"')) != NULL)
            p++;
        if (!p)
            return -1;
        if (strncmp(p, " -> ", 4) == 0)
            p += 4;
        else if (*p == ')')
            return n > 1 && addr[n - 1] == addr[0] ? n - 1 : -1;
        else
            return -1;
    }
    return -1;
}

#define INVERSION "locktrace: lock-order-inversion: "

/* Does the report whose body is [body, end) say the lock at addr ended (a line naming it
 * with "after these edges were made")? The body ends at the next report. */
static int ended_in(uintptr_t addr, const char *body, const char *end)
{
    char name[32];
    int len = snprintf(name, sizeof name, "%#lx ", (unsigned long)addr);
    for (const char *p = body; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (strncmp(p, "locktrace: ", n < 11 ? n : 11) == 0 && n >= 11)
            return 0;
        if (memmem(p, n, name, (size_t)len) && memmem(p, n, " after these edges were made", 28))
            return 1;
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

/* The reports of acquisition a (text[from, to)): 1 when they are what the facts allow. */
static int check_reports(const acq *a, int k, const char *text, off_t from, off_t to)
{
    static rcycle c;
    int reports = 0;
    for (off_t at = from; at < to;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', (size_t)(to - at));
        at = nl ? nl - text + 1 : to;
        if (strncmp(line, "locktrace: ", 11) != 0)
            continue;
        int len = (int)(nl ? nl - line : to - (line - text));
        if (strncmp(line, INVERSION, strlen(INVERSION)) != 0 || ++reports > 1 || a->how != BLOCK) {
            printf("acquisition %d: %s: %.*s\n", k,
                   reports > 1        ? "a second report"
                   : a->how != BLOCK ? "a report at a trylock or timed lock"
                                     : "a report of another kind",
                   len, line);
            return 0;
        }
        if (strncmp(line + strlen(INVERSION), "again (", 7) == 0) {
            if (!cycle_through(a)) {
                printf("acquisition %d: a repeat with no cycle through the lock: %.*s\n", k,
                       len, line);
                return 0;
            }
            continue;
        }
        c.n = cycle_of(line, c.addr);
        for (int p = 0; p < c.n; p++)
            c.ended[p] = ended_in(c.addr[p], nl ? nl : text + to, text + to);
        if (c.n < 0 || !cycle_made(&c, a->id)) {
            printf("acquisition %d: %s: %.*s\n", k,
                   c.n < 0 ? "a cycle that cannot be read" : "a cycle the program did not make",
                   len, line);
            return 0;
        }
    }
    return 1;
}

/* 1 when the pair {x, y} was closed into a 2-lock inversion before; else marks it. */
static int pair_closed(int x, int y)
{
    static int (*pairs)[2];
    static int npairs, cap;
    if (x > y) {
        int t = x;
        x = y;
        y = t;
    }
    for (int i = 0; i < npairs; i++)
        if (pairs[i][0] == x && pairs[i][1] == y)
            return 1;
    if (npairs == cap && !(pairs = realloc(pairs, sizeof *pairs * (size_t)(cap = 2 * cap + 64))))
        die("out of memory");
    pairs[npairs][0] = x;
    pairs[npairs++][1] = y;
    return 0;
}

/* Does acquisition a (not a trylock) close a 2-lock inversion of X with a lock H it holds,
 * X:x -> H:y known and conflicting at both, never closed before? It must be reported when
 * both of its edges are the graph's own (docs/limits.md: an order older than an anchor is
 * kept only through it, and through its end only as far as "Ended locks" implies): X -> H made
 * with no anchor between, and H at or above the newest anchor now. */
static int closes_new_pair(const acq *a)
{
    int must = 0;
    for (int h = a->nheld - 1, above = 1; h >= 0; above = above && !a->anchor[h], h--)
        for (int f = 0; f < nfacts; f++) {
            const fact *e = &facts[f];
            if (e->from != a->id || e->to != a->held[h] || !conflicts(a->id, e->fmode, a->mode) ||
                !conflicts(e->to, a->hmode[h], e->tmode))
                continue;
            if (!pair_closed(a->id, a->held[h]) && above && e->direct) {
                trace("acquisition closes %d:%c -> %d:%c -> %d\n", a->id, "rw"[e->fmode], e->to,
                      "rw"[e->tmode], a->id);
                must = 1;
            }
        }
    return must;
}

/* The run's stderr against its record; 1 when it passes. */
static int check(const char *text, off_t len)
{
    off_t from = 0;
    for (int k = 0; k < g.nacqs; k++) {
        const acq *a = &g.acqs[k];
        if (a->before > from && memmem(text + from, (size_t)(a->before - from), "locktrace: ", 11)) {
            printf("acquisition %d: a report before it, outside any acquisition\n", k);
            return 0;
        }
        if (verbose && a->after > a->before) {
            const char *at = text + a->before, *nl = memchr(at, '\n', (size_t)(a->after - a->before));
            trace("acquisition %d reported: %.*s\n", k, nl ? (int)(nl - at) : 0, at);
        }
        int fresh = a->how == BLOCK && closes_new_pair(a);
        for (int h = a->nheld - 1, above = 1; a->how == BLOCK && h >= 0; h--) {
            add_fact(a->held[h], a->hmode[h], a->id, a->mode, above);
            above = above && !a->anchor[h];
        }
        if (!check_reports(a, k, text, a->before, a->after))
            return 0;
        if (fresh && !memmem(text + a->before, (size_t)(a->after - a->before), INVERSION,
                             strlen(INVERSION))) {
            printf("acquisition %d: closes a new 2-lock inversion, and no report\n", k);
            return 0;
        }
        from = a->after;
    }
    if (len > from && memmem(text + from, (size_t)(len - from), "locktrace: ", 11)) {
        printf("a report after the last acquisition\n");
        return 0;
    }
    return 1;
}

/* Child: the program of this seed, its stderr in a memory file, then the check. */
static void child(uint64_t seed)
{
    int fd = memfd_create("order_gen", 0);
    if (fd < 0 || dup2(fd, 2) < 0)
        die("no memory file for stderr");
    alarm(CHILD_ALARM_S);
    rs = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    for (int i = 0; i < 5; i++)
        rnd();
    run_program();
    off_t len = err_len();
    char *text = malloc((size_t)len + 1);
    if (!text || pread(2, text, (size_t)len, 0) != len)
        die("cannot read stderr back");
    text[len] = 0;
    int ok = check(text, len);
    if (!ok || verbose)
        printf("--- seed %llu, stderr:\n%s", (unsigned long long)seed, text);
    fflush(stdout);
    _exit(ok ? 0 : 1);
}

static int run_seed(uint64_t seed)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0)
        child(seed);
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid failed");
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 1;
    printf("FAIL seed %llu (status %#x; reproduce: ORDER_GEN_SEED=%llu order_gen)\n",
           (unsigned long long)seed, st, (unsigned long long)seed);
    return 0;
}

/* Programs in this process first, their locks taken in slot order (no inversion, no report):
 * the tracer's first edges at a call site go the general way until the site's stack is known
 * (order.c "Inline edges" needs a warm call site), and the children start from this state. */
static void warm_sites(void)
{
    ordered = 1;
    for (uint64_t s = 0; s < WARM_PROGRAMS; s++) {
        rs = ~s * 0x9E3779B97F4A7C15ull;
        run_program();
        memset(&g, 0, sizeof g);
    }
    ordered = 0;
}

int main(void)
{
    const char *one = getenv("ORDER_GEN_SEED");
    const char *many = getenv("ORDER_GEN_PROGRAMS");
    const char *base = getenv("ORDER_GEN_BASE");
    uint64_t first = base ? strtoull(base, NULL, 0) : 1;
    uint64_t count = many ? strtoull(many, NULL, 0) : PROGRAMS;
    int failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    warm_reports("order_gen");
    warm_sites();
    if (one) {
        verbose = 1;
        first = strtoull(one, NULL, 0);
        count = 1;
    }
    for (uint64_t s = first; s < first + count; s++)
        failed += !run_seed(s);
    printf("order_gen: %llu programs, %d failed\n", (unsigned long long)count, failed);
    return failed != 0;
}
