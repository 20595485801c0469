/*
 * report_data.h - a report as plain, self-contained data (lt_rep), and the two writers that
 * turn one into text or JSON. Both the tracer and the `locktrace` tool compile
 * report_text.c and report_json.c: the tracer fills an lt_rep from an lt_finding
 * (report_build.c), the tool fills one from a JSON file (tool/report_read.c), and the same
 * code prints both. Nothing here points into the live process: addresses are numbers,
 * descriptions are strings, stacks are frames.
 *
 * A report is generic on purpose: a kind, a reason, an outcome, then lists of threads, locks
 * and stacks. A stack names its role ("request", "held", "first-seen", "taken", ...) and the
 * thread and lock it belongs to by index, so a new finding kind needs only its name in the
 * tables of report_text.c, and its stack roles in role_heading[] to print nicely.
 *
 * The cross-thread kinds (deadlock, lock-order-inversion, long-wait) relate several threads
 * and several locks, each in its own mode, so they add steps (lt_rep_step) that say who waits
 * for or holds what; their stacks name their step. report_text.c prints them with a formatter
 * of their own.
 */
#ifndef LT_REPORT_DATA_H
#define LT_REPORT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "lt_types.h"

#define LT_REPORT_VERSION 1 /* docs/report-schema.md; bump on any incompatible change */

/* The function name of a signal handler's caller, the signal return trampoline (as gdb names
 * it); the frame after it is the instruction the signal interrupted, no return address. */
#define LT_REP_SIGNAL_FRAME "<signal handler called>"

typedef struct lt_rep_frame {
    uint64_t ip;              /* the captured address (a return address except in frame #0) */
    const char *module;       /* path of the object file, NULL when unknown */
    const char *build_id;     /* lowercase hex of its GNU build-id, NULL when it has none */
    uint64_t module_offset;   /* ip minus the module's load address */
    const char *function;     /* NULL when unknown */
    uint64_t function_offset; /* of ip - 1 from the function's start */
    const char *file;         /* source file, NULL without debug info */
    int line;
    int inlined;              /* 1: a call inlined at this ip (its function's frame follows) */
    int wrapper;              /* 1: in a lock wrapper (wrappers.c); set by the tracer */
    const char *split_missing; /* the split DWARF file (-gsplit-dwarf) naming the calls inlined
                                  at ip, not found, so the line may be one of theirs; NULL
                                  otherwise. Not in the report file: symbolizing finds it */
} lt_rep_frame;

/* Why a stack ends before the thread's outermost frame (lt_rep_stack.cut). A stack that ends at
 * LOCKTRACE_STACK_DEPTH frames, or whose frames were left out to fit the report (dropped),
 * is not asked why: its last frame is not where the unwind stopped; nor is a partial one
 * (report_build.c, cut_at). */
typedef enum lt_rep_cut {
    LT_CUT_NONE,          /* whole, as far as the unwinder can tell */
    LT_CUT_NO_UNWIND_INFO /* the last frame's code has no unwind information (built without
                             unwind tables): its callers cannot be found */
} lt_rep_cut;

typedef struct lt_rep_stack {
    const char *role;     /* what the stack shows, see role_heading[] in report_text.c */
    int thread;           /* index into lt_rep.threads, -1 = none */
    int lock;             /* index into lt_rep.locks, -1 = none */
    int step;             /* index into lt_rep.steps, -1 = none */
    int partial;          /* 1: only the frames recorded at acquisition */
    size_t dropped;       /* frames left out to fit the report */
    lt_rep_cut cut;       /* why the unwind stopped at the last frame, when known */
    size_t nframes;
    lt_rep_frame *frames;
} lt_rep_stack;

typedef struct lt_rep_lock {
    uint64_t addr;
    lt_kind type;
    int mutex_type;           /* lt_mutex_type, mutexes only */
    int writer_pref;          /* rwlocks: writer-preferring */
    int api;                  /* lt_api: the names reports use (pthread_mutex_t, mtx_t) */
    lt_mode held_mode, req_mode;
    lt_wait wait;             /* of the request; meaningful when req_mode != NONE */
    uint32_t generation;      /* of the address's identity; 0 = unknown */
    uint64_t object;          /* annotation: the guarded object, 0 = none */
    const char *annotation;   /* annotation: its description, NULL = none */
    const char *name;         /* where it lives: "config_mu", "registry+0x8", "heap block 0x...
                                 (N bytes), offset K", a thread's stack frame; NULL = unknown */
    const char *class_name;   /* predicted inversions: the lock's class (LOCKTRACE_CLASSES) */
    lt_ended ended;           /* inversions: the lock's identity ended after the edges through
                                 it were made (they stand for the order it implied) */
} lt_rep_lock;

typedef struct lt_rep_thread {
    int seq; /* T<seq>; -1 = unknown */
    int tid;
    const char *name;
    int gone; /* has exited (or was left behind by fork) */
    int by_fork; /* gone: a thread of the parent that fork did not copy into this child */
} lt_rep_thread;

/* One link of a cross-thread report (indices into threads and locks, -1 = none).
 * deadlock: one per thread of the cycle, in order: `thread` waits (waits_for, `lock` in
 * want_mode, or `cond`) for `blocker`, which holds `lock` in held_mode (none: it is only
 * queued for write on a writer-preferring lock).
 * long-wait: steps[0] is the waiter (waited_ms); each further step is a holder `thread` of
 * steps[0]'s lock in held_mode.
 * lock-order-inversion: one per edge of the cycle: `lock` (want_mode) was taken while
 * holding `from` (held_mode), first by `thread`. */
typedef struct lt_rep_step {
    int thread;
    int waits_for;  /* lt_wait_for */
    int lock;
    int from;
    lt_mode want_mode, held_mode;
    lt_wait wait;
    int blocker;
    long waited_ms;
    uint64_t cond;  /* the condition variable of an LT_FOR_SIGNAL wait */
    const char *cond_name; /* where that condition variable lives, as a lock's name says */
    int api;        /* lt_api of a join or condition wait (thrd_join, cnd_wait) */
    int now_waits;  /* long-wait holder: it waits itself now, as a waiter's step says (its
                       lock the one it waits for, blocker the thread it joins) */
    const char *now_in; /* long-wait holder that waits for no lock: "running", "the system
                           call read on fd 3 (pipe:[41])"; NULL unknown */
} lt_rep_step;

typedef struct lt_rep {
    int version;
    lt_finding_kind kind;
    lt_reason why;
    lt_outcome outcome;
    int64_t time_sec;     /* when it was found, Unix time */
    long time_nsec;
    int pid;
    const char *program;  /* path of the executable */
    int launcher_pid;     /* pid of the locktrace launcher that ran it, 0 = none */
    int image;            /* which program image of the pid (report_file.c), 0 or 1 = the first */
    int warning;          /* deadlock: 1 = a timed wait ends it, 2 = a signal from outside may */
    int one_thread;       /* lock-order-inversion: one thread took the locks in both orders */
    int wait_timeout;     /* long-wait: LOCKTRACE_WAIT_TIMEOUT in seconds */
    long waiting;         /* destroy-waited: threads waiting on the condition variable, at */
    long waiting_max;     /* least and at most (equal unless libc woke unmarked waiters) */
    size_t nthreads, nlocks, nstacks, nsteps;
    lt_rep_thread *threads; /* [0]: the thread that triggered the finding */
    lt_rep_lock *locks;     /* [0]: the lock concerned (exit-held: every lock still held) */
    lt_rep_stack *stacks;
    lt_rep_step *steps;     /* cross-thread kinds only */
    /* De-duplication (report_identity.c): one report stands for every occurrence of its
     * signature; time_sec/time_nsec is the first. occurrences 0: not counted (a thread dump,
     * or a file written before de-duplication), and the three members below are absent. */
    char signature[17];     /* "" = not recorded: lt_rep_signature computes it */
    unsigned long occurrences;
    int64_t last_time_sec;
    long last_time_nsec;
} lt_rep;

/* Name tables (report_text.c): index -> name; the reverse lookups return -1 when absent. */
const char *lt_rep_kind_name(int kind);
/* Whether a report of this reason counts threads waiting (lt_rep.waiting, waiting_max). */
int lt_rep_counts_waiters(int why);
const char *lt_rep_reason_name(int why);
const char *lt_rep_outcome_name(int outcome);
const char *lt_rep_type_name(int type);
const char *lt_rep_mutex_type_name(int type);
const char *lt_rep_mode_name(int mode);
const char *lt_rep_wait_name(int wait);
const char *lt_rep_waits_for_name(int waits_for);
const char *lt_rep_api_name(int api);
const char *lt_rep_ended_name(int ended);
const char *lt_rep_cut_name(int cut);
int lt_rep_lookup(const char *(*names)(int), const char *name, size_t len);

/* report_text.c: the text the program prints on stderr (and `locktrace report` prints). */
size_t lt_rep_format_text(const lt_rep *r, char *buf, size_t size);
/* Just the frame lines of one stack, appended at buf+at; returns the new end. */
size_t lt_rep_format_frames(const lt_rep_stack *s, char *buf, size_t size, size_t at);

/* report_identity.c: which bug a report is, and where. */
/* 16 hex digits that stay the same for the same bug across occurrences, runs and machines:
 * kind, reason and, for each stack but first-seen, its role and the function and source line
 * (base name) of its first three calls; no addresses, thread ids, times or lock names. The
 * recorded one when r has it. */
void lt_rep_signature(const lt_rep *r, char out[17]);
/* The stack that says where the finding happened: the request of a same-thread finding, the
 * first wait of a deadlock or long wait, the first edge's acquisition of an inversion; NULL
 * when the report has no stack. */
const lt_rep_stack *lt_rep_primary_stack(const lt_rep *r);
/* The program's frame of s: its first frame outside lock wrappers; of a stack of wrappers
 * only, its first frame. NULL without frames. */
const lt_rep_frame *lt_rep_own_frame(const lt_rep_stack *s);
/* The first frame of s outside lock wrappers (the program's line, not std::mutex::lock's in a
 * libstdc++ header; of a stack of wrappers only, its first frame) when it has a source file
 * and line; NULL otherwise. */
const lt_rep_frame *lt_rep_source_frame(const lt_rep_stack *s);
/* Where the report is, short, appended at buf+at: "deadlock.c:153", else the function of
 * the primary stack's first frame, else "module+0x..." */
size_t lt_rep_format_place(const lt_rep *r, char *buf, size_t size, size_t at);

/* report_build.c (tracer only): stack id -> symbolized frames, valid until the next build;
 * partial: the id is the frames recorded with a lazily taken acquisition (lt_rep_stack). */
const lt_rep_stack *lt_report_build_stack(uint32_t id, int partial);

/* report_json.c: the report as one JSON document, frames per stack capped at max_frames
 * (the rest are counted as dropped). Returns the length it needs, which may exceed size:
 * then call again with fewer frames. */
size_t lt_rep_format_json(const lt_rep *r, char *buf, size_t size, size_t max_frames);
/* The end of that document when r->occurrences is set: LT_REP_JSON_COUNT_KEY, the count and
 * the last time, then "}\n". The tracer rewrites only this on a repeat. */
#define LT_REP_JSON_COUNT_KEY ",\"occurrences\":"
size_t lt_rep_format_json_count(const lt_rep *r, char *buf, size_t size);

#endif
