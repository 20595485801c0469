/*
 * lt_internal.h - the types every tracer module shares, and the cross-file prototypes grouped
 * by the file that defines them.
 *
 * Glossary:
 *   lt_lock     shadow state of one lock address (shadow.c); its generation names the identity
 *   lt_held     one lock the current thread holds, in its held set (thread.c)
 *   lt_thread   per-thread state in initial-exec TLS (thread.c)
 *   lt_event    one lock/unlock request handed from interpose.c to the checker (detect.c)
 *   lt_finding  one problem found, as plain data; handed to report.c (defined here)
 *   lt_rep      a finding as self-contained report data: text and JSON come from it
 *               (report_data.h; built by report_build.c, read back by tool/report_read.c)
 *   stack id    32-bit handle of an interned stack in the depot, 0 = none (stack.c)
 *   wait slot   what a thread is blocked on right now, for the wait-for check (waitfor.c)
 *   edge        A -> B in the lock-order graph: B was taken while A was held (order.c)
 */
#ifndef LT_INTERNAL_H
#define LT_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uthash.h>

#include "locktrace.h"

#define LT_EXPORT __attribute__((visibility("default")))
#define LT_TLS __attribute__((tls_model("initial-exec")))
#define lt_likely(x) __builtin_expect(!!(x), 1)
#define lt_unlikely(x) __builtin_expect(!!(x), 0)
#define LT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef enum { LT_RWLOCK, LT_MUTEX, LT_SPIN } lt_kind;
typedef enum { LT_MODE_NONE, LT_MODE_READ, LT_MODE_WRITE } lt_mode; /* mutex, spin: WRITE */
typedef enum { LT_WAIT_TRY, LT_WAIT_BLOCK, LT_WAIT_TIMED } lt_wait;
typedef enum { LT_MUTEX_NORMAL, LT_MUTEX_RECURSIVE, LT_MUTEX_ERRORCHECK } lt_mutex_type;

/* A thread as reports name it: T<seq> (tid <tid>) "name". */
typedef struct lt_thread_info {
    int seq;       /* 0 = the first thread seen (main), then creation order */
    int tid;       /* kernel thread id */
    char name[16]; /* kernel comm name, NUL-terminated */
} lt_thread_info;

/* Where a fork() is: every module with a lock of its own takes it before, releases it after
 * in the parent, and resets it in the child. */
typedef enum { LT_FORK_PREPARE, LT_FORK_PARENT, LT_FORK_CHILD } lt_fork_phase;

/* ------------------------------------------------------------------------------------------
 * Own locks. A spinlock that the thread owning it may take again: the forking thread holds
 * every tracer lock across fork() while the program's atfork handlers call back into us.
 * ---------------------------------------------------------------------------------------- */
typedef struct lt_spin {
    _Atomic int owner; /* tid of the holder, 0 = free */
    int depth;         /* nested acquisitions by the holder */
} lt_spin;

/* ------------------------------------------------------------------------------------------
 * Shadow state of one lock address. Entries are type-stable (never unmapped): a pointer to one
 * stays readable forever, and `gen` says whether it still names the same lock. gen changes
 * whenever the address gets a new identity (init, destroy, entry reuse), so (entry, gen) pairs
 * held in thread caches and held sets go stale instead of dangling.
 * ---------------------------------------------------------------------------------------- */
typedef struct lt_lock {
    /* read on every acquisition: one cache line, written only when the identity changes */
    _Alignas(64) const void *addr;
    _Atomic uint32_t gen;
    uint32_t first_stack;             /* where the lock was first seen */
    const lt_thread_info *orphan_of;  /* exited while holding it, NULL = not orphaned */
    uint8_t orphan_mode;              /* lt_mode the exited thread held */
    const void *object;               /* annotation: the guarded object */
    locktrace_describe_fn describe;   /* annotation: how to describe it */
    struct lt_lock_stats *_Atomic stats; /* LOCKTRACE_STATS counters (stats.c), NULL = none */
    struct lt_lock *next_free;
    /* written by acquisitions: kept off the line above so other threads' probes stay cheap */
    _Alignas(64) _Atomic int writer;  /* seq+1 of the thread holding it exclusively, 0 = none */
    _Atomic int waiting_writers;      /* threads blocked in a write request right now */
    UT_hash_handle hh;                /* shadow.c's table, keyed by addr */
} lt_lock;

/* One entry of a held set. The stack of the acquisition is kept cheaply as the call site
 * (return address) and the caller's frame (CFA); `stack` is a full stack only with
 * LOCKTRACE_STACKS=full. */
typedef struct lt_held {
    const void *addr;
    lt_lock *lock;
    uint32_t gen;   /* lock->gen when acquired */
    uint8_t kind;   /* lt_kind */
    uint8_t mode;   /* lt_mode */
    uint8_t anchor; /* order.c: every older held lock has a path of edges to this one */
    uint32_t depth; /* recursive mutex / recursive read acquisitions */
    uint32_t stack; /* stack id, 0 unless LOCKTRACE_STACKS=full */
    uintptr_t ra;   /* return address into the caller of the lock function */
    uintptr_t cfa;  /* caller's stack pointer at that call */
    uint64_t since; /* LOCKTRACE_STATS: when it was taken (ns, monotonic) */
} lt_held;

/* Per-thread cache of shadow lookups: addr -> (entry, gen). */
typedef struct lt_cache_slot {
    const void *addr;
    lt_lock *lock;
    uint32_t gen;
} lt_cache_slot;

typedef enum { LT_FOR_LOCK, LT_FOR_JOIN, LT_FOR_SIGNAL } lt_wait_for;

/* What a thread is blocked on (waitfor.c). `seq` is odd while the thread waits; the thread
 * writes every other field before seq turns odd, under waitfor.c's lock, and leaves the list
 * under it too, so a reader holding that lock sees one consistent wait. (The thread dump reads
 * it without the lock and may show a wait that has just ended.) */
typedef struct lt_wait_slot {
    _Atomic uint32_t seq;
    lt_lock *lock;
    uint32_t gen;                 /* lock->gen when the wait began */
    const void *addr;
    uint8_t kind, mode, wait;     /* lt_kind, lt_mode, lt_wait */
    uint8_t long_reported;        /* a long-wait report was made for this wait */
    uint8_t waits_for;            /* lt_wait_for; the lock fields serve LT_FOR_LOCK only */
    uintptr_t target;             /* LT_FOR_JOIN: the pthread_t; LT_FOR_SIGNAL: the condvar */
    uintptr_t handle;             /* pthread_t of this thread */
    uint32_t stack;               /* where it waits */
    lt_thread_info who;           /* the thread, named when the wait began */
    struct timespec since;        /* CLOCK_MONOTONIC */
    struct lt_thread *next_waiter, *prev_waiter; /* waitfor.c's list, under its lock */
    uint32_t mark;                /* cycle search visit stamp, under waitfor.c's lock */
} lt_wait_slot;

#define LT_CACHE_BITS 8
#define LT_CACHE_SLOTS (1 << LT_CACHE_BITS)
#define LT_HELD_INLINE 8   /* held entries before the set moves to mapped memory */
#define LT_HELD_INDEX_MIN 32 /* entries in use from which the set is indexed by address */

typedef struct lt_thread {
    int busy;                   /* re-entrancy: inside the tracer, pass calls through */
    int registered;
    int exit_round;             /* key-destructor rounds seen at thread exit */
    lt_thread_info info;
    lt_held *held;              /* points at inline_held or at mapped memory */
    uint32_t nheld, cap;        /* locks held; entries allocated */
    uint32_t held_end;          /* entries in use: held ones, and removed ones (lock NULL)
                                   while the set is indexed */
    uint32_t *held_index;       /* addr -> position + 1, open addressing, mapped */
    uint32_t held_index_bits;   /* log2 of its slots; 0 = not mapped */
    int held_indexed;           /* held_index is in use (held_end reached LT_HELD_INDEX_MIN) */
    lt_held inline_held[LT_HELD_INLINE];
    struct lt_thread *next, *prev; /* registry of live threads */
    uint64_t wait_start;        /* LOCKTRACE_STATS: when the current blocking wait began (ns) */
    lt_cache_slot cache[LT_CACHE_SLOTS];
    lt_wait_slot waiting;
} lt_thread;

extern __thread lt_thread lt_tls LT_TLS;

/* ------------------------------------------------------------------------------------------
 * Events from interpose.c to the checker.
 * ---------------------------------------------------------------------------------------- */
typedef struct lt_event {
    const void *addr;
    lt_kind kind;
    lt_mode mode;
    lt_wait wait;
    uintptr_t ra, cfa;  /* call site of the program's lock call */
    lt_thread *self;    /* filled by the checker */
    lt_lock *lock;      /* filled by the checker */
    lt_held *held;      /* filled by lt_before_lock: this thread's entry for the lock */
} lt_event;

/* ------------------------------------------------------------------------------------------
 * Findings: plain data. report_build.c turns one into an lt_rep (report_data.h), which
 * report_text.c prints and report_json.c writes. To add a kind: extend lt_finding_kind and
 * the kind tables of report_text.c, and have report_build.c put its threads, locks and stacks
 * (each stack with a role) into the lt_rep; a new reason: extend lt_reason and the reason
 * tables of report_text.c. The cross-thread kinds come last (code tests kind >=
 * LT_FIND_DEADLOCK): they relate several threads and locks through lt_rep.steps and have a
 * formatter of their own in report_text.c.
 * ---------------------------------------------------------------------------------------- */
typedef enum {
    LT_FIND_SELF_DEADLOCK,
    LT_FIND_BAD_UNLOCK,
    LT_FIND_DESTROY_HELD,
    LT_FIND_EXIT_HELD,
    LT_FIND_DEADLOCK,
    LT_FIND_INVERSION,
    LT_FIND_LONG_WAIT,
    LT_FIND_KIND_COUNT
} lt_finding_kind;

typedef enum {
    LT_WHY_WRITE_HELD,       /* rwlock held for write, any request */
    LT_WHY_UPGRADE,          /* rwlock held for read, write request */
    LT_WHY_WRITER_QUEUED,    /* read again on a writer-preferring lock with a writer waiting */
    LT_WHY_MUTEX_RELOCK,     /* normal/default mutex locked again */
    LT_WHY_ERRORCHECK_RELOCK,/* error-checking mutex locked again: returns EDEADLK */
    LT_WHY_SPIN_RELOCK,      /* spinlock locked again */
    LT_WHY_ORPHANED,         /* held by a thread that has exited */
    LT_WHY_NOT_HELD,         /* unlock of a lock this thread does not hold */
    LT_WHY_DESTROY,          /* destroy while held */
    LT_WHY_EXIT,             /* thread exits holding locks */
    LT_WHY_WAIT_CYCLE,       /* deadlock: blocked threads wait for each other */
    LT_WHY_ORDER_CYCLE,      /* lock-order-inversion: the lock-order graph has a cycle */
    LT_WHY_WAIT_TIMEOUT,     /* long-wait: waited past LOCKTRACE_WAIT_TIMEOUT */
    LT_WHY_COUNT
} lt_reason;

typedef enum {
    LT_OUTCOME_CONTINUE, /* the program's call goes on */
    LT_OUTCOME_ABORT,    /* abort() after the report */
    LT_OUTCOME_EDEADLK   /* the call returns EDEADLK without calling libc */
} lt_outcome;

/* A lock as cross-thread reports name it. */
typedef struct lt_lock_ref {
    const void *addr;
    lt_kind kind;
    int mutex_type;  /* lt_mutex_type, mutexes only */
    int writer_pref; /* rwlocks: writer-preferring */
    const void *object;
    locktrace_describe_fn describe;
} lt_lock_ref;

/* One thread of a wait-for cycle (deadlock) or a waiter and its holders (long-wait): `thread`
 * waits for `wants` in `want_mode`; `blocker` holds it in `held_mode` (acquired at
 * `held_stack`), or held_mode is LT_MODE_NONE when it is only queued for write on a
 * writer-preferring lock. */
typedef struct lt_wait_step {
    lt_thread_info thread;
    lt_lock_ref wants;
    lt_mode want_mode;
    lt_wait wait;
    uint32_t wait_stack;
    long waited_ms;
    int waits_for;    /* lt_wait_for: a lock, `blocker` to exit (pthread_join), or a signal on
                         the condition variable at wants.addr that `blocker` sent last */
    lt_thread_info blocker;
    lt_mode held_mode;
    uint32_t held_stack;
    int held_partial; /* held_stack is only the call site */
} lt_wait_step;

/* One edge of the lock-order graph, immutable once published (order.c). */
typedef struct lt_edge_info {
    lt_lock_ref from, to;
    lt_mode from_mode, to_mode;
    uint32_t from_stack, to_stack; /* where `from` was taken, where `to` was taken under it */
    int from_partial;              /* from_stack is only the call site */
    lt_thread_info thread;         /* the thread that first made the edge */
} lt_edge_info;

typedef struct lt_finding {
    lt_finding_kind kind;
    lt_reason why;
    lt_outcome outcome;
    lt_thread_info thread;       /* the thread that triggered the finding */
    const lt_thread_info *other; /* the exited owner (LT_WHY_ORPHANED), else NULL */
    const void *lock;
    uint32_t generation;         /* the lock's shadow generation, 0 = unknown */
    lt_kind lock_kind;
    int mutex_type;              /* lt_mutex_type, mutexes only */
    int writer_pref;             /* rwlocks: writer-preferring */
    lt_mode held_mode, req_mode;
    lt_wait wait;
    const void *object;
    locktrace_describe_fn describe;
    uint32_t request_stack;      /* where the request is made now */
    uint32_t held_stack;         /* where this thread took the lock before */
    int held_partial;            /* held_stack is only the call site */
    uint32_t first_stack;        /* where the lock was first seen */
    const lt_held *held;         /* exit-held: the locks still held (valid during lt_report) */
    size_t nheld;
    const lt_wait_step *steps;   /* deadlock: the cycle in order; long-wait: the holders */
    size_t nsteps;
    int warning;                 /* deadlock: 1 = a timed wait will break it, 2 = a signal
                                    from outside the cycle may */
    const lt_edge_info *const *edges; /* inversion: the cycle, edges[i]->to == edges[i+1]->from */
    size_t nedges;
    int one_thread;              /* inversion: every edge was made by the same thread */
} lt_finding;

/* config.c ------------------------------------------------------------------------------- */
typedef enum { LT_ACTION_ABORT, LT_ACTION_EDEADLK } lt_action;
typedef enum { LT_STACKS_LAZY, LT_STACKS_FULL } lt_stacks_mode;
typedef enum { LT_INVERSION_REPORT, LT_INVERSION_ABORT, LT_INVERSION_OFF } lt_inversion_mode;
#define LT_CFG_TYPE_CHOICE int
#define LT_CFG_TYPE_UINT int
#define LT_CFG_TYPE_BOOL int
#define LT_CFG_TYPE_STR const char * /* "" when unset */
typedef struct lt_config {
#define LT_OPTION(kind, field, name, def, accepted, help) LT_CFG_TYPE_##kind field;
#include "config.def"
#undef LT_OPTION
} lt_config;
extern lt_config lt_cfg;
void lt_config_load(void);

/* Fibonacci hashing, top bits: locks at a regular stride (arrays of structs) spread evenly. */
static inline size_t lt_addr_hash(const void *addr, unsigned bits)
{
    return (size_t)(((uintptr_t)addr * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* thread.c ------------------------------------------------------------------------------- */
lt_thread *lt_self_register(void);

/* The calling thread's state, registering it on first use. Inline: every event starts here. */
static inline lt_thread *lt_self(void)
{
    return lt_likely(lt_tls.registered) ? &lt_tls : lt_self_register();
}

lt_held *lt_held_find_indexed(const lt_thread *t, const void *addr);

/* This thread's entry for addr, newest first; NULL when it does not hold it. A small set is
 * scanned (it has no removed entries); a large one is looked up in its index. */
static inline lt_held *lt_held_find(const lt_thread *t, const void *addr)
{
    if (lt_unlikely(t->held_indexed))
        return lt_held_find_indexed(t, addr);
    for (uint32_t i = t->held_end; i-- > 0;)
        if (t->held[i].addr == addr)
            return &t->held[i];
    return NULL;
}

lt_held *lt_held_push(lt_thread *t, const lt_held *e);
void lt_held_remove(lt_thread *t, lt_held *h);
void lt_held_compact(lt_thread *t);
void lt_thread_start(int seq);
int lt_thread_next_seq(void);
void lt_thread_info_now(lt_thread *t, lt_thread_info *out);
void lt_spin_lock(lt_spin *s);
void lt_spin_unlock(lt_spin *s);
void lt_spin_reset(lt_spin *s);
void lt_spin_fork(lt_spin *s, lt_fork_phase phase);
void lt_thread_fork(lt_fork_phase phase);
void lt_thread_each(void (*fn)(lt_thread *t, void *arg), void *arg);
lt_thread *lt_thread_first(void);

static inline int lt_enter(lt_thread *t)
{
    if (t->busy)
        return 0;
    t->busy = 1;
    return 1;
}
static inline void lt_leave(lt_thread *t) { t->busy = 0; }

/* shadow.c ------------------------------------------------------------------------------- */
lt_lock *lt_shadow_lookup(lt_thread *t, const void *addr, uintptr_t ra);

/* The shadow entry of addr, created (first seen at ra) when new. Inline: the thread's cache
 * answers almost every call; lt_shadow_lookup is the slow path. NULL only without memory. */
static inline lt_lock *lt_shadow_get(lt_thread *t, const void *addr, uintptr_t ra)
{
    lt_cache_slot *slot = &t->cache[lt_addr_hash(addr, LT_CACHE_BITS)];
    if (lt_likely(slot->addr == addr) &&
        atomic_load_explicit(&slot->lock->gen, memory_order_relaxed) == slot->gen)
        return slot->lock;
    return lt_shadow_lookup(t, addr, ra);
}
lt_lock *lt_shadow_reset(const void *addr, uintptr_t ra);
void lt_shadow_forget(const void *addr);
void lt_shadow_fork(lt_fork_phase phase);

/* stack.c -------------------------------------------------------------------------------- */
uint32_t lt_stack_here(uintptr_t from_ra);
uint32_t lt_stack_intern(const uintptr_t *ips, size_t n);
const uintptr_t *lt_stack_get(uint32_t id, size_t *n);
uint32_t lt_stack_recover(uintptr_t ra, uintptr_t cfa, int *partial);
void lt_stack_fork(lt_fork_phase phase);

/* detect.c: the event API -----------------------------------------------------------------
 * interpose.c calls these with the thread inside the tracer (lt_thread.busy set), so hooks may
 * take tracer locks, allocate and unwind freely. ev->addr/kind/mode/wait/ra/cfa and ev->self
 * are filled by interpose.c. New checkers (lock order, wait-for) hook in here:
 *   lt_before_lock   before libc, for every lock request; fills ev->lock (shadow entry) and
 *                    ev->held (this thread's entry for the lock, if any). Returns 0 to go on
 *                    or an errno (EDEADLK) that the call returns without calling libc.
 *   lt_wait_begin    the request found the lock busy and is about to block in libc; returns
 *                    0 to block or an errno (EDEADLK: the wait would close a deadlock);
 *   lt_wait_end      ... and came back (acquired, timed out or failed).
 *   lt_after_lock    libc's result; on success the lock joins the held set.
 *   lt_before_unlock before libc's unlock; the lock leaves the held set.
 *   lt_on_init, lt_on_destroy, lt_on_annotate, lt_cond_release/lt_cond_reacquire (around a
 *   condition wait), lt_on_thread_exit, lt_orphan_locks (exit and fork).
 * A finding is an lt_finding handed to lt_report (report.c). */
int lt_before_lock(lt_event *ev);
int lt_wait_begin(lt_event *ev);
void lt_wait_end(lt_event *ev);
void lt_after_lock(lt_event *ev, int rc);
void lt_before_unlock(lt_event *ev);
void lt_on_init(lt_event *ev);
void lt_on_destroy(lt_event *ev);
int lt_cond_release(lt_event *ev, lt_held *saved);
void lt_cond_reacquire(lt_event *ev, const lt_held *saved);
void lt_on_annotate(lt_event *ev, const void *object, locktrace_describe_fn describe);
void lt_on_thread_exit(lt_thread *t);
void lt_orphan_locks(lt_thread *t, const lt_thread_info *owner);

/* order.c -------------------------------------------------------------------------------- */
void lt_order_acquired(lt_event *ev);
int lt_order_anchor(const lt_event *ev);
void lt_order_forget(const void *addr);
void lt_order_fork(lt_fork_phase phase);

/* waitfor.c ------------------------------------------------------------------------------ */
int lt_waitfor_begin(lt_event *ev);
int lt_waitfor_join_begin(lt_event *ev, uintptr_t target);
void lt_waitfor_cond_begin(lt_event *ev, const void *cond);
void lt_waitfor_signalled(lt_thread *t, const void *cond);
void lt_waitfor_end(lt_event *ev);
void lt_waitfor_fork(lt_fork_phase phase);
void lt_lock_ref_fill(lt_lock_ref *r, const void *addr, lt_kind kind, const lt_lock *l);
uint32_t lt_held_stack(lt_held *h, uint32_t under, int *partial);
int lt_scratch_fit(void **a, size_t *cap, size_t n, size_t size, const char *what);

/* dump.c --------------------------------------------------------------------------------- */
void lt_dump_install(void);
void lt_dump_threads(int symbolize);

/* report.c ------------------------------------------------------------------------------- */
#define LT_REPORT_CAP 100 /* reports printed per kind; later ones are counted */
void lt_report(lt_finding *f);
void lt_report_degraded(const char *what);
void lt_report_fork(lt_fork_phase phase);

/* report_build.c, report_file.c, suppress.c: see report_data.h for lt_rep -------------------- */
struct lt_rep;
const struct lt_rep *lt_report_build(const lt_finding *f);
void lt_report_setup(void);
void lt_report_file_write(const struct lt_rep *r);
void lt_report_file_counted(lt_finding_kind kind);
void lt_report_file_suppressed(lt_finding_kind kind);
void lt_report_file_fork_child(void);
void lt_suppress_load(const char *path);
int lt_suppressed(const struct lt_rep *r);

/* stats.c: LOCKTRACE_STATS; every hook is behind `if (lt_unlikely(lt_cfg.stats))` ------------ */
void lt_stats_setup(void);
void lt_stats_fork_child(void);
void lt_stats_wait_begin(lt_event *ev);
void lt_stats_wait_end(lt_event *ev);
void lt_stats_acquired(lt_event *ev, lt_held *h);
void lt_stats_released(lt_held *h);

/* report_text.c ------------------------------------------------------------------------- */
size_t lt_fmt_str(char *buf, size_t size, size_t at, const char *s);
size_t lt_fmt_hex(char *buf, size_t size, size_t at, uintptr_t v);
size_t lt_fmt_dec(char *buf, size_t size, size_t at, long v);

#endif
