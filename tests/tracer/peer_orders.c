/*
 * peer_orders.c - the lock-order cases of other checkers' own test suites, written here as
 * our own scenarios in a small notation: lockdep's locking selftests (every cycle shape with
 * each lock type, the read/write mixes of its recursive-read rules, double unlock) and
 * ThreadSanitizer's deadlock-detector cases (trylocks in and out of a cycle, recursive
 * mutexes, locks made and destroyed between the two orders).
 *
 *   peer_orders [--list] [SUBSTRING]   run every scenario (whose name contains SUBSTRING)
 *
 * A scenario is a list of events, each through a function of its own (event0, event1...), so
 * a report's stacks say which event made each edge. The events run one after the other
 * (never two at once, so nothing really deadlocks) in the main thread or each in a thread of
 * its own; or concurrently, one thread each: every thread takes its first lock, all meet at
 * a barrier, then each goes on (a cycle of them then really deadlocks, as in the peers'
 * "must deadlock" tests). An event is a string of steps on locks 0-7: "W0" write-locks (or
 * locks) lock 0, "R0" read-locks it, "P0" and "p0" are the same with a deadline (timed), "T0"
 * trylocks it (write), "t0" tries it for read, "U0" unlocks it if this event got it, "V0"
 * unlocks it whatever happened (misuse), "I0" initialises it again, "D0" destroys it, "N"
 * makes and destroys 200 locks of the type, "M" makes, takes and destroys 200. Every scenario
 * runs in a child process of its own under the tracer (LOCKTRACE_ACTION=edeadlk, so a
 * self-deadlock or a deadlock makes the closing call return instead of ending the program),
 * and its verdict must be exactly the expected one: the report kinds, the number of locks in
 * the inversion's cycle, and which events its edges come from. The expectations are written
 * from the rules of the peer suite (a read against a read never blocks on a default,
 * reader-preferring rwlock and always may on a writer-preferring one), not from the tracer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lockmem.h"
#include "verdicts.h"

#define NOINLINE __attribute__((noinline))
#define LOCKS 8
#define EVENTS 8

/* Lock types: m normal mutex, r recursive, e error-checking, s spinlock, d default rwlock
 * (reader-preferring), w writer-preferring rwlock, x an rwlock asking PREFER_WRITER_NP (which
 * glibc treats as reader-preferring: recursive reads must not hang). */

static lockmem locks[LOCKS];
static char type_of[LOCKS];

static int is_rw(char type)
{
    return type == 'd' || type == 'w' || type == 'x';
}

static lm_kind kind_of(char type)
{
    switch (type) {
    case 'r': return LM_RECURSIVE;
    case 'e': return LM_ERRORCHECK;
    case 's': return LM_SPIN;
    case 'd': return LM_RW;
    case 'w': return LM_RW_WP;
    case 'x': return LM_RW_PW;
    default: return LM_NORMAL;
    }
}

static void init_lock(lockmem *l, char type)
{
    lockmem_init(l, kind_of(type));
}

static void destroy_lock(lockmem *l, char type)
{
    lockmem_destroy(l, kind_of(type));
}

static int lock_write(lockmem *l, char type)
{
    if (type == 's')
        return pthread_spin_lock(&l->s);
    return is_rw(type) ? pthread_rwlock_wrlock(&l->rw) : pthread_mutex_lock(&l->m);
}

/* A deadline far enough away that only a deadlock reaches it. */
static int lock_timed(lockmem *l, char type, int read)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 60;
    if (type == 's')
        return pthread_spin_lock(&l->s);
    if (is_rw(type))
        return read ? pthread_rwlock_timedrdlock(&l->rw, &t) : pthread_rwlock_timedwrlock(&l->rw, &t);
    return pthread_mutex_timedlock(&l->m, &t);
}

static int try_write(lockmem *l, char type)
{
    if (type == 's')
        return pthread_spin_trylock(&l->s);
    return is_rw(type) ? pthread_rwlock_trywrlock(&l->rw) : pthread_mutex_trylock(&l->m);
}

static int unlock(lockmem *l, char type)
{
    if (type == 's')
        return pthread_spin_unlock(&l->s);
    return is_rw(type) ? pthread_rwlock_unlock(&l->rw) : pthread_mutex_unlock(&l->m);
}

/* Locks made between the two orders of an inversion: only made and destroyed ('N'), or
 * taken under the lock held then ('M'), as ThreadSanitizer's detector test does. */
static void many_locks(char type, int take)
{
    enum { MANY = 200 };
    lockmem *many = calloc(MANY, sizeof *many);
    for (int i = 0; i < MANY; i++) {
        init_lock(&many[i], type);
        if (take) {
            lock_write(&many[i], type);
            unlock(&many[i], type);
        }
    }
    for (int i = 0; i < MANY; i++)
        destroy_lock(&many[i], type);
    free(many);
}

/* Concurrent scenarios: every event's thread has its first lock. */
static pthread_barrier_t first_taken;
static int concurrent;

/* One event's steps; a step the notation does not know ends the child with status 3. */
static void play(const char *steps)
{
    int got[LOCKS] = {0}, taken = 0;
    for (const char *p = steps; *p; p++) {
        if (*p == ' ')
            continue;
        if (*p == 'N' || *p == 'M') {
            many_locks(type_of[0], *p == 'M');
            continue;
        }
        int i = p[1] - '0';
        if (i < 0 || i >= LOCKS) {
            fprintf(stderr, "peer_orders: bad step '%.2s'\n", p);
            _exit(3);
        }
        lockmem *l = &locks[i];
        char type = type_of[i];
        int rc = -1;
        switch (*p++) {
        case 'W':
            rc = lock_write(l, type);
            break;
        case 'R':
            rc = pthread_rwlock_rdlock(&l->rw);
            break;
        case 'P':
        case 'p':
            rc = lock_timed(l, type, p[-1] == 'p');
            break;
        case 'T':
            rc = try_write(l, type);
            break;
        case 't':
            rc = pthread_rwlock_tryrdlock(&l->rw);
            break;
        case 'U':
            if (got[i] > 0) {
                unlock(l, type);
                got[i]--;
            }
            break;
        case 'V':
            unlock(l, type);
            got[i] -= got[i] > 0;
            break;
        case 'I':
            init_lock(l, type);
            break;
        case 'D':
            destroy_lock(l, type);
            break;
        default:
            fprintf(stderr, "peer_orders: bad step '%.2s'\n", p - 1);
            _exit(3);
        }
        got[i] += rc == 0;
        if (rc >= 0 && !taken++ && concurrent)
            pthread_barrier_wait(&first_taken);
    }
}

/* Each event through a function of its own: the report's stacks name it. */
NOINLINE static void event0(const char *s) { play(s); }
NOINLINE static void event1(const char *s) { play(s); }
NOINLINE static void event2(const char *s) { play(s); }
NOINLINE static void event3(const char *s) { play(s); }
NOINLINE static void event4(const char *s) { play(s); }
NOINLINE static void event5(const char *s) { play(s); }
NOINLINE static void event6(const char *s) { play(s); }
NOINLINE static void event7(const char *s) { play(s); }
static void (*const event_fn[EVENTS])(const char *) = {event0, event1, event2, event3,
                                                        event4, event5, event6, event7};

typedef struct event_arg {
    int index;
    const char *steps;
} event_arg;

static void *event_thread(void *arg)
{
    event_arg *e = arg;
    event_fn[e->index](e->steps);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * Scenarios and their verdicts.
 * ---------------------------------------------------------------------------------------- */
enum { K_SELF = 1, K_BAD_UNLOCK = 2, K_DESTROY = 4, K_INVERSION = 8, K_DEADLOCK = 16 };
static const char *const kname[] = {"self-deadlock", "bad-unlock", "destroy-held",
                                    "lock-order-inversion", "deadlock"};

typedef struct scenario {
    char name[96];
    char types[LOCKS + 1];      /* one type letter per lock used */
    const char *events[EVENTS]; /* NULL ends the list */
    int threads;                /* each event in a thread of its own; 2: all at once */
    unsigned expect;            /* report kinds */
    int cycle;                  /* locks in the inversion's cycle (K_INVERSION) */
    unsigned edges;             /* the events whose edges the inversion names, by bit */
} scenario;

#define MAX_SCENARIOS 512
static scenario table[MAX_SCENARIOS];
static int nscenarios;

static scenario *add(const char *name, const char *types, unsigned expect)
{
    if (nscenarios == MAX_SCENARIOS) {
        fprintf(stderr, "peer_orders: too many scenarios\n");
        exit(2);
    }
    scenario *s = &table[nscenarios++];
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->types, sizeof s->types, "%s", types);
    s->expect = expect;
    return s;
}

/* A cycle expected: n locks, from the events in `edges`. */
static void inverted(scenario *s, int n, unsigned edges)
{
    s->expect |= K_INVERSION;
    s->cycle = n;
    s->edges = edges;
}

/* lockdep's cycle shapes (and Helgrind's ring of five), each event a pair "lock x, lock y,
 * unlock y, unlock x", with the events the shortest cycle is made of. */
typedef struct shape {
    const char *name;
    const char *events[5];
    int n, locks;
    unsigned edges;
} shape;

static const shape shapes[] = {
    {"lockdep ABBA", {"W0 W1 U1 U0", "W1 W0 U0 U1"}, 2, 2, 0x3},
    {"lockdep ABBCCA", {"W0 W1 U1 U0", "W1 W2 U2 U1", "W2 W0 U0 U2"}, 3, 3, 0x7},
    {"lockdep ABCABC", {"W0 W1 U1 U0", "W2 W0 U0 U2", "W1 W2 U2 U1"}, 3, 3, 0x7},
    {"lockdep ABBCCDDA", {"W0 W1 U1 U0", "W1 W2 U2 U1", "W2 W3 U3 U2", "W3 W0 U0 U3"}, 4, 4, 0xf},
    {"lockdep ABCDBDDA", {"W0 W1 U1 U0", "W2 W3 U3 U2", "W1 W3 U3 U1", "W3 W0 U0 U3"}, 4, 3, 0xd},
    {"lockdep ABCDBCDA", {"W0 W1 U1 U0", "W2 W3 U3 U2", "W1 W2 U2 U1", "W3 W0 U0 U3"}, 4, 4, 0xf},
    /* Helgrind's tc14_laog_dinphils: five philosophers, each takes its left fork, then its
     * right one */
    {"helgrind tc14 dining philosophers",
     {"W0 W1 U1 U0", "W1 W2 U2 U1", "W2 W3 U3 U2", "W3 W4 U4 U3", "W4 W0 U0 U4"}, 5, 5, 0x1f},
};

/* The same shape with every lock read-locked. */
static const char *as_reads(const char *steps, char *buf, size_t size)
{
    snprintf(buf, size, "%s", steps);
    for (char *p = buf; *p; p++)
        if (*p == 'W')
            *p = 'R';
    return buf;
}

static char read_buf[sizeof shapes / sizeof shapes[0]][5][16];

static void generate_shapes(void)
{
    static const struct {
        char type;
        int reads;
        const char *what;
    } kinds[] = {{'m', 0, "mutex"},         {'r', 0, "recursive mutex"},
                 {'e', 0, "error-checking mutex"}, {'s', 0, "spinlock"},
                 {'d', 0, "rwlock write"},  {'w', 0, "writer-preferring rwlock write"},
                 {'d', 1, "rwlock read"},   {'w', 1, "writer-preferring rwlock read"},
                 {'x', 1, "PREFER_WRITER_NP rwlock read"}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            const shape *sh = &shapes[i];
            char name[96], types[LOCKS + 1];
            snprintf(name, sizeof name, "%s, %s", sh->name, kinds[k].what);
            memset(types, kinds[k].type, (size_t)sh->n);
            types[sh->n] = 0;
            /* reads of a reader-preferring rwlock never wait for each other: no cycle */
            int silent = kinds[k].reads && kinds[k].type != 'w';
            scenario *s = add(name, types, 0);
            for (int e = 0; e < 5 && sh->events[e]; e++)
                s->events[e] = kinds[k].reads
                                   ? as_reads(sh->events[e], read_buf[i][e], sizeof read_buf[i][e])
                                   : sh->events[e];
            if (!silent)
                inverted(s, sh->locks, sh->edges);
        }
}

/* lockdep's read/write mixes of three locks X, Y, Z (0, 1, 2), in all six orders of their
 * three events: whether a cycle can deadlock depends on every lock on it blocking. */
typedef struct mix {
    const char *name;
    const char *events[3];
    int deadlock_if_reads_recurse;
} mix;

static const mix mixes[] = {
    /* X held for write wants Y for read, Y held for write wants Z for read, Z held for write
     * wants X for read: each read waits for a writer. */
    {"W1R2/W2R3/W3R1", {"W0 R1 U1 U0", "W1 R2 U2 U1", "W2 R0 U0 U2"}, 1},
    /* Y held for read stalls the writer of Y; Z's reader waits for Z's writer; X's reader
     * waits for X's writer. */
    {"W1W2/R2R3/W3R1", {"W0 W1 U1 U0", "R1 R2 U2 U1", "W2 R0 U0 U2"}, 1},
    /* Z is read-held and read-wanted: a reader-preferring Z lets the second reader in. */
    {"W1W2/R2R3/R3W1", {"W0 W1 U1 U0", "R1 R2 U2 U1", "R2 W0 U0 U2"}, 0},
    /* Y is read-held and read-wanted: the same at Y. */
    {"W1R2/R2R3/W3W1", {"W0 R1 U1 U0", "R1 R2 U2 U1", "W2 W0 U0 U2"}, 0},
};

static void generate_mixes(void)
{
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        for (int wp = 0; wp < 2; wp++)
            for (int o = 0; o < 6; o++) {
                char name[96];
                snprintf(name, sizeof name, "lockdep %s, %s, order %d%d%d", mixes[i].name,
                         wp ? "writer-preferring" : "default rwlocks", orders[o][0] + 1,
                         orders[o][1] + 1, orders[o][2] + 1);
                scenario *s = add(name, wp ? "www" : "ddd", 0);
                unsigned edges = 0;
                for (int e = 0; e < 3; e++) {
                    s->events[e] = mixes[i].events[orders[o][e]];
                    edges |= 1u << e;
                }
                if (wp || mixes[i].deadlock_if_reads_recurse)
                    inverted(s, 3, edges);
            }
}

/* A scenario spelled out: its events up to a NULL. */
static scenario *spelled(const char *name, const char *types, unsigned expect,
                         const char *const *ev)
{
    scenario *s = add(name, types, expect);
    for (int i = 0; i < EVENTS && ev[i]; i++)
        s->events[i] = ev[i];
    return s;
}

#define EV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* lockdep's cases on one lock (the same lock again, in every mode), its double unlock, and
 * its read-lock/lock-write pairs. */
static void generate_lockdep(void)
{
    static const struct {
        const char *types, *what;
        unsigned again;
    } one[] = {{"m", "mutex", K_SELF}, {"r", "recursive mutex", 0},
               {"e", "error-checking mutex", K_SELF}, {"s", "spinlock", K_SELF},
               {"d", "rwlock write", K_SELF}, {"w", "writer-preferring rwlock write", K_SELF}};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "lockdep AA, %s", one[i].what);
        spelled(name, one[i].types, one[i].again, EV("W0 W0 U0 U0"));
        snprintf(name, sizeof name, "lockdep double unlock, %s", one[i].what);
        spelled(name, one[i].types, K_BAD_UNLOCK, EV("W0 U0 V0"));
    }
    spelled("lockdep double unlock, rwlock read", "d", K_BAD_UNLOCK, EV("R0 U0 V0"));
    spelled("lockdep double unlock, writer-preferring rwlock read", "w", K_BAD_UNLOCK,
            EV("R0 U0 V0"));
    /* read again: legal on a reader-preferring rwlock; on a writer-preferring one it hangs
     * once a writer queues between the two reads (self-1.6 has that one); with none queued,
     * as here, it is the potential self-deadlock lockdep's rwsem rule reports, and the call
     * goes on */
    spelled("lockdep rlock AA1, rwlock read twice", "d", 0, EV("R0 R0 U0 U0"));
    spelled("lockdep rsem AA1, writer-preferring rwlock read twice, no writer", "w", K_SELF,
            EV("R0 R0 U0 U0"));
    spelled("lockdep rlock AA2, rwlock read then write", "d", K_SELF, EV("R0 W0 U0"));
    spelled("lockdep rlock AA3, rwlock write then read", "d", K_SELF, EV("W0 R0 U0"));
    spelled("lockdep rsem AA2, writer-preferring rwlock read then write", "w", K_SELF,
            EV("R0 W0 U0"));
    spelled("lockdep rsem AA3, writer-preferring rwlock write then read", "w", K_SELF,
            EV("W0 R0 U0"));
    /* read_lock(A) lock(B), lock(B) write_lock(A): A's reader stalls B's order */
    inverted(spelled("lockdep rlock ABBA1, read-held rwlock and a mutex, then write", "dm", 0,
                     EV("R0 W1 U1 U0", "W1 W0 U0 U1")), 2, 0x3);
    inverted(spelled("lockdep rwsem ABBA1, the same on a writer-preferring rwlock", "wm", 0,
                     EV("R0 W1 U1 U0", "W1 W0 U0 U1")), 2, 0x3);
    /* the same pair once with a read, then with a write: the write's edge is new */
    inverted(spelled("lockdep rlock chaincache ABBA1, read then write under the mutex", "dm",
                     0, EV("R0 W1 U1 U0", "W1 R0 U0 U1", "W1 W0 U0 U1")), 2, 0x5);
    spelled("lockdep rlock ABBA2, read-held rwlock and a mutex, then read", "dm", 0,
            EV("R0 W1 U1 U0", "W1 R0 U0 U1"));
    inverted(spelled("lockdep rwsem ABBA2, the same on a writer-preferring rwlock", "wm", 0,
                     EV("R0 W1 U1 U0", "W1 R0 U0 U1")), 2, 0x3);
    inverted(spelled("lockdep rlock ABBA3, write-held rwlock and a mutex, then write", "dm", 0,
                     EV("W0 W1 U1 U0", "W1 W0 U0 U1")), 2, 0x3);
}

/* ThreadSanitizer's deadlock-detector cases (deadlock_detector_stress_test's Test1-17). */
static void generate_tsan(void)
{
    static const struct {
        const char *types, *what;
    } kinds[] = {{"mmm", "mutex"}, {"sss", "spinlock"}, {"ddd", "rwlock"}, {"rrr", "recursive mutex"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char name[96];
        /* locks made and destroyed between the two orders change nothing */
        snprintf(name, sizeof name, "tsan Test3, 200 locks made between the orders, %s", kinds[k].what);
        inverted(spelled(name, kinds[k].types, 0, EV("W0 W1 U1 U0", "W2 N U2", "W1 W0 U0 U1")),
                 2, 0x5);
        /* ... and made, taken under another and destroyed: ThreadSanitizer's detector forgets
         * the first order here (its epoch moved on); the inversion is still real */
        snprintf(name, sizeof name, "tsan Test4, 200 locks taken between the orders, %s", kinds[k].what);
        inverted(spelled(name, kinds[k].types, 0, EV("W0 W1 U1 U0", "W2 M U2", "W1 W0 U0 U1")),
                 2, 0x5);
        snprintf(name, sizeof name, "tsan Test5, the two orders in two threads, %s", kinds[k].what);
        scenario *s = spelled(name, kinds[k].types, 0, EV("W0 W1 U1 U0", "W1 W0 U0 U1"));
        s->threads = 1;
        inverted(s, 2, 0x3);
        /* a trylock adds no edge into the lock it tries, a lock held by one is a source */
        snprintf(name, sizeof name, "tsan Test7, trylock under the other, both ways, %s", kinds[k].what);
        spelled(name, kinds[k].types, 0, EV("W0 T1 U1 U0", "T1 W0 U1 U0"));
        snprintf(name, sizeof name, "tsan Test7, trylock first, then lock under it, %s", kinds[k].what);
        spelled(name, kinds[k].types, 0, EV("T0 W1 U1 U0", "W1 T0 U1 U0"));
        snprintf(name, sizeof name, "tsan Test7, trylocked lock held, then the other order, %s", kinds[k].what);
        inverted(spelled(name, kinds[k].types, 0, EV("T0 W1 U0 U1", "W1 W0 U0 U1")), 2, 0x3);
        snprintf(name, sizeof name, "tsan Test7, an order, then a trylocked lock under it, %s", kinds[k].what);
        inverted(spelled(name, kinds[k].types, 0, EV("W1 W0 U0 U1", "T0 W1 U0 U1")), 2, 0x3);
        /* 4 threads nest 4 locks each in one order: no cycle */
        snprintf(name, sizeof name, "tsan Test10, 4 threads nest their own 4 locks, %s", kinds[k].what);
        s = spelled(name, kinds[k].types, 0,
                    EV("W0 W1 W2 W3 U3 U2 U1 U0", "W0 W1 W2 W3 U3 U2 U1 U0",
                       "W0 W1 W2 W3 U3 U2 U1 U0", "W0 W1 W2 W3 U3 U2 U1 U0"));
        s->types[3] = s->types[0];
        s->threads = 1;
    }
    /* read holds: a reader-preferring rwlock lets the second reader in (ThreadSanitizer
     * reports these, glibc cannot deadlock on them); a writer-preferring one may not */
    spelled("tsan Test8, read-held then locked, locked then read, rwlock", "dd", 0,
            EV("R0 W1 U0 U1", "W1 R0 U0 U1"));
    inverted(spelled("tsan Test8, read-held then locked, locked then read, writer-preferring",
                     "ww", 0, EV("R0 W1 U0 U1", "W1 R0 U0 U1")), 2, 0x3);
    spelled("tsan Test8, read then read both ways, rwlock", "dd", 0,
            EV("R0 R1 U0 U1", "R1 R0 U0 U1"));
    inverted(spelled("tsan Test8, read then read both ways, writer-preferring", "ww", 0,
                     EV("R0 R1 U0 U1", "R1 R0 U0 U1")), 2, 0x3);
    inverted(spelled("tsan Test9, recursive mutexes each held three times, both orders", "rr", 0,
                     EV("W0 W0 W0 W1 U1 U0 U0 U0", "W1 W1 W1 W0 U0 U1 U1 U1")), 2, 0x3);
    scenario *s = spelled("tsan Test12, 4 threads read-nest 4 shared rwlocks in one order", "dddd", 0,
                          EV("R0 R1 R2 R3 U3 U2 U1 U0", "R0 R1 R2 R3 U3 U2 U1 U0",
                             "R0 R1 R2 R3 U3 U2 U1 U0", "R0 R1 R2 R3 U3 U2 U1 U0"));
    s->threads = 1;
    s = spelled("tsan Test13, 4 threads read-take 4 shared rwlocks under a fifth", "ddddd", 0,
                EV("R0 R1 U1 R2 U2 R3 U3 R4 U4 U0", "R0 R1 U1 R2 U2 R3 U3 R4 U4 U0",
                   "R0 R1 U1 R2 U2 R3 U3 R4 U4 U0", "R0 R1 U1 R2 U2 R3 U3 R4 U4 U0"));
    s->threads = 1;
    spelled("tsan Test15, recursive read locks", "d", 0,
            EV("R0 R0 U0 U0 R0 R0 R0 U0 U0 U0"));
}

/* The same cycles with their events at once, one thread each, every thread holding its
 * first lock before any asks for its second: where every lock on the cycle blocks, the
 * threads really deadlock (the closing request returns EDEADLK, the others then finish, and
 * the edges they made close no cycle); where a read gets in beside a read, nothing blocks
 * for good and no deadlock may be reported. */
static void generate_concurrent(void)
{
    static const struct {
        char type;
        int reads;
        const char *what;
    } kinds[] = {{'m', 0, "mutex"}, {'r', 0, "recursive mutex"}, {'s', 0, "spinlock"},
                 {'d', 0, "rwlock write"}, {'w', 0, "writer-preferring rwlock write"},
                 {'d', 1, "rwlock read"}, {'w', 1, "writer-preferring rwlock read"}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            const shape *sh = &shapes[i];
            char name[96], types[LOCKS + 1];
            snprintf(name, sizeof name, "%s at once, %s", sh->name, kinds[k].what);
            memset(types, kinds[k].type, (size_t)sh->n);
            types[sh->n] = 0;
            /* reads block nothing here (no writer ever queues): a writer-preferring lock's
             * order is still a potential deadlock, a reader-preferring one's is none */
            scenario *s = add(name, types, kinds[k].reads ? 0 : K_DEADLOCK);
            s->threads = 2;
            for (int e = 0; e < 5 && sh->events[e]; e++)
                s->events[e] = kinds[k].reads
                                   ? as_reads(sh->events[e], read_buf[i][e], sizeof read_buf[i][e])
                                   : sh->events[e];
            if (kinds[k].reads && kinds[k].type == 'w')
                inverted(s, sh->locks, sh->edges);
        }
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        for (int wp = 0; wp < 2; wp++) {
            char name[96];
            snprintf(name, sizeof name, "lockdep %s at once, %s", mixes[i].name,
                     wp ? "writer-preferring" : "default rwlocks");
            scenario *s = add(name, wp ? "www" : "ddd",
                              mixes[i].deadlock_if_reads_recurse ? K_DEADLOCK : 0);
            s->threads = 2;
            for (int e = 0; e < 3; e++)
                s->events[e] = mixes[i].events[e];
            if (wp && !mixes[i].deadlock_if_reads_recurse)
                inverted(s, 3, 0x7);
        }
}

/* Timed acquisitions (a deadline) make no orders into their locks, as trylocks: a deadline
 * ends every wait through one, so no schedule hangs on the cycle for good, and a back-off that
 * drops its first lock on ETIMEDOUT is correct code. ThreadSanitizer (MutexFlagTryLock) and
 * Helgrind ("isTryLock-ish") take them so; lockdep's rt_mutex_timed_lock counts them. The same
 * cycle with both requests blocking is reported (the ABBA cases above). A lock a timed request
 * took still orders the locks taken under it. */
static void generate_timed(void)
{
    static const struct {
        const char *types, *what;
    } kinds[] = {{"mm", "mutex"}, {"ee", "error-checking mutex"}, {"rr", "recursive mutex"},
                 {"dd", "rwlock write"}, {"ww", "writer-preferring rwlock write"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char name[96];
        snprintf(name, sizeof name, "timed ABBA, %s, silent", kinds[k].what);
        spelled(name, kinds[k].types, 0, EV("W0 P1 U1 U0", "W1 P0 U0 U1"));
        snprintf(name, sizeof name, "timed AB, blocking BA, %s, silent", kinds[k].what);
        spelled(name, kinds[k].types, 0, EV("W0 P1 U1 U0", "W1 W0 U0 U1"));
        snprintf(name, sizeof name, "timed A then blocking B, blocking BA, %s", kinds[k].what);
        inverted(spelled(name, kinds[k].types, 0, EV("P0 W1 U1 U0", "W1 W0 U0 U1")), 2, 0x3);
    }
    spelled("timed read-held rwlock, then a mutex, then a timed write, silent", "dm", 0,
            EV("p0 W1 U1 U0", "W1 P0 U0 U1"));
    spelled("timed read-held rwlock, then a mutex, then a timed read", "dm", 0,
            EV("p0 W1 U1 U0", "W1 p0 U0 U1"));
}

static void generate(void)
{
    generate_shapes();
    generate_mixes();
    generate_lockdep();
    generate_tsan();
    generate_timed();
    generate_concurrent();
}

/* ------------------------------------------------------------------------------------------
 * The runner.
 * ---------------------------------------------------------------------------------------- */
static void run_events(const scenario *s)
{
    for (int i = 0; s->types[i]; i++) {
        type_of[i] = s->types[i];
        init_lock(&locks[i], s->types[i]);
    }
    if (s->threads == 2) {
        pthread_t t[EVENTS];
        event_arg arg[EVENTS];
        int n = 0;
        while (n < EVENTS && s->events[n])
            n++;
        concurrent = 1;
        pthread_barrier_init(&first_taken, NULL, (unsigned)n);
        for (int e = 0; e < n; e++) {
            arg[e] = (event_arg){e, s->events[e]};
            pthread_create(&t[e], NULL, event_thread, &arg[e]);
        }
        for (int e = 0; e < n; e++)
            pthread_join(t[e], NULL);
        return;
    }
    for (int e = 0; e < EVENTS && s->events[e]; e++) {
        if (s->threads) {
            pthread_t t;
            event_arg arg = {e, s->events[e]};
            pthread_create(&t, NULL, event_thread, &arg);
            pthread_join(t, NULL);
        } else {
            event_fn[e](s->events[e]);
        }
    }
}

/* The number of locks the (first) inversion report names, 0 without one. */
static int cycle_in(const char *text)
{
    const char *r = strstr(text, "locktrace: lock-order-inversion: ");
    return r ? atoi(r + strlen("locktrace: lock-order-inversion: ")) : 0;
}

/* The events whose frames the first inversion report shows. */
static unsigned edges_in(const char *text)
{
    const char *r = strstr(text, "locktrace: lock-order-inversion: ");
    if (!r)
        return 0;
    const char *end = strstr(r + 1, "\nlocktrace: ");
    unsigned got = 0;
    for (unsigned e = 0; e < EVENTS; e++) {
        char frame[32]; /* room for any unsigned: -O1 with sanitizers cannot bound e */
        snprintf(frame, sizeof frame, " in event%u ", e);
        const char *f = strstr(r, frame);
        if (f && (!end || f < end))
            got |= 1u << e;
    }
    return got;
}

#define NKINDS (sizeof kname / sizeof kname[0])

static void print_verdict(unsigned kinds, int cycle, unsigned edges)
{
    verdict_print(kinds, kname, NKINDS);
    if (kinds & K_INVERSION) {
        printf(" cycle of %d, events", cycle);
        for (int e = 0; e < EVENTS; e++)
            if (edges & (1u << e))
                printf(" %d", e);
    }
}

static char out[1 << 17];

static void run_scenario(const void *arg)
{
    run_events(arg);
}

/* Runs s in a child; 1 when its verdict is the expected one. */
static int run(const scenario *s)
{
    int status = verdict_child(run_scenario, s, out, sizeof out);
    unsigned got = verdict_kinds(out, kname, NKINDS);
    int cycle = cycle_in(out);
    unsigned edges = edges_in(out);
    int ok = status == 0 && got == s->expect &&
             (!(got & K_INVERSION) || (cycle == s->cycle && edges == s->edges));
    if (!ok) {
        printf("FAIL %s: expected ", s->name);
        print_verdict(s->expect, s->cycle, s->edges);
        printf(", got ");
        print_verdict(got, cycle, edges);
        verdict_print_ending(status);
        printf("\n%.3000s\n", out);
    }
    return ok;
}

static const char *scenario_name(int i)
{
    return table[i].name;
}

static void print_expected(int i)
{
    print_verdict(table[i].expect, table[i].cycle, table[i].edges);
}

static int run_one(int i)
{
    return run(&table[i]);
}

int main(int argc, char **argv)
{
    generate();
    return verdict_main(argc, argv,
                        &(verdict_suite){"peer_orders", nscenarios, scenario_name, print_expected, run_one});
}
