/*
 * report.h - findings as plain data, and the report path that prints and files them
 * (report.c, report_build.c, report_file.c, suppress.c). report_build.c turns a finding into
 * an lt_rep (report_data.h), which report_text.c prints and report_json.c writes.
 */
#ifndef LT_REPORT_H
#define LT_REPORT_H

#include "lt_internal.h"

/* A lock as cross-thread reports name it. */
typedef struct lt_lock_ref {
    const void *addr;
    lt_kind kind;
    int mutex_type;  /* lt_mutex_type, mutexes only */
    int writer_pref; /* rwlocks: writer-preferring */
    int api;         /* lt_api */
    const void *object;
    locktrace_describe_fn describe;
    uint32_t generation;    /* of the identity at addr, 0 = unknown (two refs at one address
                               with different generations are two locks) */
    const char *class_name; /* classes.c: the lock's annotated class, NULL = none ... */
    uintptr_t class_site;   /* ... or the call site that names its site class, 0 = none */
    lt_ended ended;         /* an ended lock an inversion passes through (order.c) ... */
    uint32_t first_stack;   /* ... where it was first seen, 0 = unknown */
    int first_partial;
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
    const void *cond; /* a condition wait's to retake its mutex (waits_for LT_FOR_LOCK): its
                         condition variable, where it sleeps until woken; else NULL */
    lt_thread_info blocker;
    lt_mode held_mode;
    uint32_t held_stack;
    int held_partial; /* held_stack is only the frames recorded with it */
    int now_waits;    /* long-wait holder: it waits itself now; waits_for, wants (then not the
                         lock it holds), want_mode, wait, wait_stack, waited_ms and blocker (a
                         join's thread) say for what */
    char now_in[160]; /* long-wait holder that waits for nothing the tracer sees: what it does
                         (lt_platform_thread_doing), "" unknown */
} lt_wait_step;

/* One edge of the lock-order graph, immutable once published (order.c). */
typedef struct lt_edge_info {
    lt_lock_ref from, to;
    lt_mode from_mode, to_mode;
    uint32_t from_stack, to_stack; /* where `from` was taken, where `to` was taken under it */
    int from_partial, to_partial;  /* the stack is only the frames recorded with it */
    lt_thread_info thread;         /* the thread that first made the edge */
} lt_edge_info;

typedef struct lt_finding {
    lt_finding_kind kind;
    lt_reason why;
    lt_outcome outcome;
    lt_thread_info thread;       /* the thread that triggered the finding */
    const lt_thread_info *other; /* the exited owner (LT_WHY_ORPHANED), or the holder of a
                                    freed lock that is another thread (free-held), or of a lock
                                    this thread unlocks (bad-unlock), else NULL */
    int other_gone;              /* other is a thread gone holding the lock (fill_orphan) */
    int other_by_fork;           /* the owner is a thread of the parent that fork left behind */
    const void *lock;
    uint32_t generation;         /* the lock's shadow generation, 0 = unknown */
    lt_kind lock_kind;
    int mutex_type;              /* lt_mutex_type, mutexes only */
    int writer_pref;             /* rwlocks: writer-preferring */
    int api;                     /* lt_api the program called */
    lt_mode held_mode, req_mode;
    lt_wait wait;
    const void *object;
    locktrace_describe_fn describe;
    uint32_t request_stack;      /* where the request is made now */
    uint32_t held_stack;         /* where this thread took the lock before */
    int held_partial;            /* held_stack is only the frames recorded with it */
    uint32_t first_stack;        /* where the lock was first seen */
    int first_partial;           /* first_stack is only the frames recorded with it */
    const lt_held *held;         /* exit-held: the locks still held (valid during lt_report) */
    const lt_thread_info *owners; /* process-exit: owners[i] holds held[i]; NULL = `thread` */
    const void *mutex;           /* condvar-misuse: the mutex of this thread's wait */
    const void *other_mutex;     /* two-mutexes: the mutex other waiters wait with */
    const lt_cond_waiter *waiters; /* condvar-misuse: waiters named (copies) */
    size_t nwaiters;
    size_t waiting, waiting_max; /* destroy-waited: waiters left, a range when unsure (cond.c) */
    size_t nheld;
    const lt_wait_step *steps;   /* deadlock: the cycle in order; long-wait: the holders */
    size_t nsteps;
    int warning;                 /* deadlock: 1 = a timed wait will break it, 2 = a signal
                                    from outside the cycle may */
    const lt_edge_info *const *edges; /* inversion: the cycle, edges[i]->to == edges[i+1]->from */
    size_t nedges;
    int one_thread;              /* inversion: every edge was made by the same thread */
    uintptr_t block;             /* free-held: the memory released, [block, block+block_size) */
    size_t block_size;
    int block_how;               /* free-held: lt_release (lifetime.h) */
} lt_finding;

/* report.c ------------------------------------------------------------------------------- */
#define LT_REPORT_CAP 100 /* reports printed per kind; later ones are counted */
void lt_report(lt_finding *f);
/* The outcome of a finding that would leave the program stuck for good: LOCKTRACE_ACTION's
 * (abort, or EDEADLK from the call). */
static inline lt_outcome lt_report_fatal_outcome(void)
{
    return lt_cfg.action == LT_ACTION_EDEADLK ? LT_OUTCOME_EDEADLK : LT_OUTCOME_ABORT;
}
/* "locktrace: note: <what>; ...": once for each reason (what's address: a literal of its own) */
void lt_report_degraded(const char *what);
void lt_report_out_of_memory(void);
void lt_report_order_partial(size_t max);
extern int64_t lt_order_partial_sec; /* when lt_report_order_partial was said; 0 = never */
/* nonzero once out of memory: nothing is checked any more (hidden: every lock call reads it,
 * with one instruction) */
extern _Atomic int lt_untracked __attribute__((visibility("hidden")));
void lt_report_fork(lt_fork_phase phase);

/* report_seen.c: the distinct reports so far (by signature) -------------------------------- */
struct lt_rep;
typedef struct lt_seen {
    char signature[17];
    int kind;                 /* lt_finding_kind */
    unsigned number;          /* printed as report <number>, filed as <program>.<pid>.<number>
                                 .json; 0 = not printed (its kind had reached the cap) */
    unsigned long count;      /* occurrences, 0 until the first is counted */
    int64_t first_sec, last_sec;
    long first_nsec, last_nsec;
    int filed;                /* its file was written */
    int pending;              /* count changed since the file was last written */
    int64_t written_ms;       /* monotonic time of that write */
    char place[128];          /* "deadlock.c:153" (lt_rep_format_place) */
} lt_seen;

/* LT_SEEN_EXPECTED: matched by a built-in rule (suppress.c), what a widely run program does
 * on purpose: not counted, so such a program stays clean (no summary file). */
enum { LT_SEEN_UNKNOWN, LT_SEEN_SUPPRESSED, LT_SEEN_EXPECTED, LT_SEEN_REPORT };
uint64_t lt_seen_key(const struct lt_rep *raw); /* of lt_report_build_raw's report */
/* What key was: LT_SEEN_UNKNOWN, LT_SEEN_SUPPRESSED, LT_SEEN_EXPECTED, or LT_SEEN_REPORT
 * with *out. */
int lt_seen_lookup(uint64_t key, lt_seen **out);
void lt_seen_remember(uint64_t key, int what, const lt_seen *s);
/* The report of r's signature, added (count 0) when new; NULL when the table is full. */
lt_seen *lt_seen_of(const struct lt_rep *r);
lt_seen *lt_seen_at(size_t i); /* in order of first occurrence; NULL past the last */
void lt_seen_fork_child(void);

/* report_build.c, report_file.c, suppress.c: see report_data.h for lt_rep -------------------- */
const struct lt_rep *lt_report_build(const lt_finding *f);
const struct lt_rep *lt_report_build_raw(const lt_finding *f);
void lt_report_setup(void);
void lt_report_file_write(const struct lt_rep *r, lt_seen *s);
void lt_report_file_repeat(lt_seen *s);
void lt_report_file_flush(void);   /* every pending count into its file; report lock held */
void lt_report_file_at_exit(void); /* the same, from _exit: takes the report lock */
void lt_report_exclusive(void (*fn)(void)); /* fn under the report lock (exit paths) */
void lt_report_file_counted(lt_finding_kind kind);
void lt_report_file_suppressed(lt_finding_kind kind);
void lt_report_file_fork_child(void);
void lt_report_file_write_dump(const char *json, size_t len); /* async-signal-safe */
/* report_channel.c: each new report said to the launcher (report lock held) */
void lt_report_channel_setup(void);
void lt_report_channel_new(lt_finding_kind kind);
void lt_report_channel_flush(void); /* what the launcher's full queue kept back, again */
int lt_report_channel_pending(void); /* whether there is such (read without the lock) */
void lt_report_channel_fork_child(void);
/* interpose_exec.c: program runs as process pid (from system or popen: is started by it)
 * "untraced", "unheard" (traced, but its environment lost the launcher's socket), or that
 * start "failed". No lock taken. */
void lt_report_channel_exec(const char *what, long pid, const char *program);
void lt_suppress_load(const char *path);
/* Glob with '*' only (any run of characters): suppressions and LOCKTRACE_WRAPPERS. */
int lt_glob(const char *pattern, const char *s);
/* What the rules make of r: LT_SEEN_EXPECTED (a built-in rule), LT_SEEN_SUPPRESSED (the
 * user's), or LT_SEEN_REPORT. */
int lt_suppressed(const struct lt_rep *r);
int lt_suppress_kind(int kind); /* 1: some rule names this kind */

#endif
