/*
 * lt_types.h - the vocabulary of reports: lock kinds, modes, waits, finding kinds, reasons
 * and outcomes. Shared by the tracer, the `locktrace` command and the fuzz target, so it holds
 * plain enums only: nothing about threads, TLS or the tracer's tables.
 */
#ifndef LT_TYPES_H
#define LT_TYPES_H

#define LT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* LT_ONCE: a once-control (pthread_once, call_once), held like a mutex by the thread running
 * its init routine; others calling it meanwhile wait for that thread. */
/* LT_COND: a condition variable, named by condvar-misuse reports only (never held). */
/* LT_BARRIER: a pthread barrier, named by barrier-misuse reports only (never held). */
typedef enum { LT_RWLOCK, LT_MUTEX, LT_SPIN, LT_ONCE, LT_COND, LT_BARRIER } lt_kind;
typedef enum { LT_MODE_NONE, LT_MODE_READ, LT_MODE_WRITE } lt_mode; /* mutex, spin: WRITE */
typedef enum { LT_WAIT_TRY, LT_WAIT_BLOCK, LT_WAIT_TIMED } lt_wait;
typedef enum { LT_MUTEX_NORMAL, LT_MUTEX_RECURSIVE, LT_MUTEX_ERRORCHECK } lt_mutex_type;

/* The interface the program locked through, so reports use the names it wrote: a C11 mtx_t
 * is a pthread mutex underneath (glibc), checked alike but named "mtx_t" in reports. */
/* CUSTOM: locktrace_mutex_*; CXX: the C++ ABI's static-initialisation guards */
typedef enum { LT_API_PTHREAD, LT_API_C11, LT_API_CUSTOM, LT_API_CXX } lt_api;

/* How a lock's identity ended, for a report naming a lock that is gone (an order it stood in
 * for is kept, order.c): LT_ENDED_NOT for one that lives. */
typedef enum {
    LT_ENDED_NOT,
    LT_ENDED_DESTROY,  /* pthread_*_destroy */
    LT_ENDED_INIT,     /* initialised again without a destroy */
    LT_ENDED_FREE,     /* its memory was freed or unmapped */
    LT_ENDED_REUSE     /* its memory became another lock without init */
} lt_ended;

/* What a blocked thread waits for. */
typedef enum { LT_FOR_LOCK, LT_FOR_JOIN, LT_FOR_SIGNAL } lt_wait_for;

/* To add a kind: extend lt_finding_kind and the kind tables of report_text.c, and have
 * report_build.c put its threads, locks and stacks (each stack with a role) into the lt_rep;
 * a new reason: extend lt_reason and the reason tables of report_text.c. The cross-thread
 * kinds come last (code tests kind >= LT_FIND_DEADLOCK): they relate several threads and
 * locks through lt_rep.steps and have a formatter of their own in report_text.c. */
typedef enum {
    LT_FIND_SELF_DEADLOCK,
    LT_FIND_BAD_UNLOCK,
    LT_FIND_DESTROY_HELD,
    LT_FIND_EXIT_HELD,
    LT_FIND_FREE_HELD,
    LT_FIND_CONDVAR_MISUSE,
    LT_FIND_DESTROYED_USE,
    LT_FIND_BARRIER_MISUSE,
    LT_FIND_DEADLOCK,
    LT_FIND_INVERSION,
    LT_FIND_LONG_WAIT,
    LT_FIND_THREAD_DUMP, /* not a finding: every thread's locks and waits, on request */
    LT_FIND_KIND_COUNT
} lt_finding_kind;

typedef enum {
    LT_WHY_WRITE_HELD,       /* rwlock held for write, any request */
    LT_WHY_UPGRADE,          /* rwlock held for read, write request */
    LT_WHY_WRITER_QUEUED,    /* read again on a writer-preferring lock with a writer waiting */
    LT_WHY_REREAD_POSSIBLE,  /* ... with none waiting yet: a potential self-deadlock */
    LT_WHY_MUTEX_RELOCK,     /* normal/default mutex locked again */
    LT_WHY_ERRORCHECK_RELOCK,/* error-checking mutex locked again: returns EDEADLK */
    LT_WHY_SPIN_RELOCK,      /* spinlock locked again */
    LT_WHY_FORK_RELOCK,      /* a fork child locks again what its thread held at the fork */
    LT_WHY_ORPHANED,         /* held by a thread that has exited */
    LT_WHY_NOT_HELD,         /* unlock of a lock this thread does not hold */
    LT_WHY_DESTROY,          /* destroy while held */
    LT_WHY_EXIT,             /* thread exits holding locks */
    LT_WHY_WAIT_CYCLE,       /* deadlock: blocked threads wait for each other */
    LT_WHY_ORDER_CYCLE,      /* lock-order-inversion: the lock-order graph has a cycle */
    LT_WHY_WAIT_TIMEOUT,     /* long-wait: waited past LOCKTRACE_WAIT_TIMEOUT */
    LT_WHY_FREED,            /* free-held: the memory holding a held lock is released */
    LT_WHY_ONCE_RECURSION,   /* once-control called again from its own init routine */
    LT_WHY_DESTROY_WAITED,   /* condvar or barrier destroyed while threads wait on it */
    LT_WHY_TWO_MUTEXES,      /* condvar waited on with a mutex other waiters do not use */
    LT_WHY_WAIT_UNHELD,      /* condition wait with a mutex the thread does not hold */
    LT_WHY_RECURSIVE_WAIT,   /* condition wait with a recursive mutex held more than once */
    LT_WHY_PROCESS_EXIT,     /* exit-held: the process exits while threads hold locks */
    LT_WHY_DUMP_SIGNAL,      /* thread-dump: LOCKTRACE_DUMP_SIGNAL arrived */
    LT_WHY_DUMP_ABORT,       /* thread-dump: the other threads, after a report that aborts */
    LT_WHY_CLASS_CYCLE,      /* lock-order-inversion predicted: the class graph has a cycle */
    LT_WHY_CLASS_NESTING,    /* ... locks of one class nested in both address orders */
    LT_WHY_CLASS_DECLARED,   /* ... locks of one class nested against their declared order */
    LT_WHY_DESTROYED,        /* lock or unlock of a destroyed mutex: libc refuses it */
    LT_WHY_NO_MUTEX,         /* ... of memory marked as no mutex that no destroy left so */
    LT_WHY_INIT_WAITED,      /* barrier initialised again while threads wait on it */
    LT_WHY_DESTROY_TIMED,    /* condvar destroyed while threads wait on it, every one timed */
    LT_WHY_HELD_ELSEWHERE,   /* normal mutex whose word names this thread, not held at this
                                address: the same memory mapped twice */
    LT_WHY_ORPHANED_WAITING, /* ... and a thread already waiting for it when that one exited */
    LT_WHY_COUNT
} lt_reason;

typedef enum {
    LT_OUTCOME_CONTINUE, /* the program's call goes on */
    LT_OUTCOME_ABORT,    /* abort() after the report */
    LT_OUTCOME_EDEADLK   /* the call returns EDEADLK without calling libc */
} lt_outcome;

#endif
