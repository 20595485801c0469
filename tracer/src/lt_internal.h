/*
 * lt_internal.h - the tracer's runtime: per-thread state, held sets, shadow entries and the
 * events interpose.c hands to the checker, with the functions of thread.c and shadow.c. Each
 * other module declares its functions in a header of its own (included at the end, so a
 * module includes just this file); the vocabulary the `locktrace` command shares is in
 * lt_types.h, allocation in alloc.h, formatting in fmt.h.
 *
 * Glossary:
 *   lt_lock     shadow state of one lock address (shadow.c); its generation names the identity
 *   lt_held     one lock the current thread holds, in its held set (thread.c)
 *   lt_thread   per-thread state, allocated when the thread registers (thread.c)
 *   lt_tls      the little a thread keeps in TLS: its re-entrancy flag and its lt_thread
 *   lt_event    one lock/unlock request handed from interpose.c to the checker (detect.c)
 *   lt_finding  one problem found, as plain data; handed to report.c (report.h)
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
#include <string.h>
#include <time.h>

#include "locktrace.h"
#include "lt_types.h"
#include "platform.h"
#include "spin.h"

#define LT_EXPORT __attribute__((visibility("default")))
#define LT_TLS __attribute__((tls_model("initial-exec")))
/* The variables every traced process writes (or reads) at its start and exit, whether it
 * takes a lock or not, side by side in a section of their own, which the linker gathers
 * after .data and interpose.c starts on a page: scattered over .bss and .data, each page they
 * were on was a page fault at every start (a traced /bin/true: 76 faults, 73 now). Those
 * every fork child writes or reads are there too: a page the child writes is a page copied,
 * and one the parent never touched a page fault when the child reads it (the fork of a
 * process with one thread: 40 faults in the child, 17 natively, 22 so). Also the few its
 * first lock call reads that are written once (lt_untracked, the unwinder's state and span):
 * a page each otherwise. Written at every thread start or report at most: they share lines
 * with those read on every lock call. */
#ifdef __APPLE__
#define LT_START_DATA __attribute__((section("__DATA,__lt_start")))
#else
#define LT_START_DATA __attribute__((section("lt_start")))
#endif
/* The code a fork child runs in the tracer (the fork handlers) and a process's way out
 * through _exit: cold, so that the compiler puts it in .text.unlikely, which the linker
 * gathers at the start of the text. A child maps the library's code afresh, 64 KiB at a page
 * fault (the kernel's fault-around), and that code was in five such pieces. */
#define LT_FORK_PATH __attribute__((cold))
#define lt_likely(x) __builtin_expect(!!(x), 1)
#define lt_unlikely(x) __builtin_expect(!!(x), 0)

/* A thread as reports name it: T<seq> (tid <tid>) "name". */
typedef struct lt_thread_info {
    int seq;       /* 0 = the first thread seen (main), then creation order */
    int tid;       /* kernel thread id */
    char name[16]; /* kernel comm name, NUL-terminated */
} lt_thread_info;

/* A thread gone holding locks (their orphan_of): who it was, and how it went. By its exit, the
 * kernel marks the robust mutexes it held, whose next locker gets EOWNERDEAD; by fork (a
 * thread of the parent that the child did not get), nothing ever does in the child. */
typedef struct lt_gone {
    lt_thread_info info;
    int by_fork;
} lt_gone;

/* What an edge of the order graph keeps of its first occurrence, but the modes (order.c's
 * labels). */
typedef struct lt_label {
    uint32_t from_stack, to_stack;     /* where from was taken, where to was taken under it */
    const lt_thread_info *thread;      /* the thread that made it (thread_intern) */
    union {
        struct {
            uint8_t from_partial : 1, to_partial : 1; /* the stack is only the frames recorded
                                                         with it */
            uint8_t unwound : 1;       /* both stacks are unwound ones (see request_describe) */
        };
        uint8_t flags;                 /* the three, the rest 0: compared as one (label_same) */
    };
} lt_label;

/* ------------------------------------------------------------------------------------------
 * Shadow state of one lock address. Entries are type-stable (never unmapped): a pointer to one
 * stays readable forever, and `gen` says whether it still names the same lock. gen changes
 * whenever the address gets a new identity (init, destroy, entry reuse), so (entry, gen) pairs
 * held in thread caches and held sets go stale instead of dangling.
 *
 * An entry is two records of 32 bytes: the hot one (lt_lock), all that init, an acquisition,
 * a release and destroy of a plain lock read or write, and the cold one (lt_lock_cold,
 * lt_lock_cold_of), what few locks or few calls need. A program with thousands of locks goes
 * through their entries at every init, acquisition, release and destroy, and the lines it
 * moves are most of the tracer's time there: `stressbench groups` (25,000 live mutexes of 40
 * bytes) runs at ~2.3x the time per lock of the same calls on 2,500 locks. With 64-byte
 * entries each lock's entry was a line of its own; hot records of locks side by side share
 * lines. What fewer locks still use (an annotation, the LOCKTRACE_STATS counters) is in a side
 * record, made the first time a lock needs it.
 * ---------------------------------------------------------------------------------------- */
typedef struct lt_lock_side {
    const void *object;               /* annotation: the guarded object */
    locktrace_describe_fn describe;   /* annotation: how to describe it */
    struct lt_lock_stats *_Atomic stats; /* LOCKTRACE_STATS counters (stats.c), NULL = none */
    _Atomic uint32_t gen;             /* the annotation's: the lock's gen when it was made */
} lt_lock_side;

typedef struct lt_lock {
    _Alignas(32) const void *_Atomic addr; /* the lock's address, marked (lt_addr_named);
                                         shadow.c keeps another value, never a marked address,
                                         while the entry names none: read it with lt_lock_addr */
    struct lt_order_node *_Atomic order_node; /* order.c: its node in the order graph, of this
                                         or an ended gen; NULL = none; negative: inline
                                         edges, or none (low bits 3), order.c's ref_room */
    _Atomic uint32_t gen;
    _Atomic int writer;               /* seq+1 of the thread holding it exclusively, 0 = none */
    uint32_t first_stack;             /* where the lock was first seen */
    uint8_t orphan_mode;              /* lt_mode the exited thread held (its cold orphan_of);
                                         LT_MODE_NONE = not orphaned */
    uint8_t api;                      /* lt_api the program last locked it through */
    uint8_t custom_flags;             /* LT_API_CUSTOM: LOCKTRACE_MUTEX_* flags of its create */
    uint8_t first_partial;            /* first_stack is the frames recorded lazily at init */
} lt_lock;
_Static_assert(sizeof(lt_lock) == 32, "hot records share lines");

/* What a live entry's addr keeps: its lock's address with bit 62 set, an address no program
 * has (user space ends below bit 57). Memory scanners that take the tracer's static memory
 * for roots, where the homes are (LeakSanitizer, a conservative collector), find no pointer
 * to the program's lock there: a leaked block holding a lock was no leak to LeakSanitizer.
 * Still positive, where an ended entry's complement is negative, and never NULL. */
#define LT_ADDR_NAMED ((uintptr_t)1 << 62)
static inline const void *lt_addr_named(const void *addr)
{
    return (const void *)((uintptr_t)addr | LT_ADDR_NAMED);
}
_Static_assert(offsetof(lt_lock, api) == offsetof(lt_lock, orphan_mode) + 1,
               "lt_lock_plain compares both at once");

/* Whether l was last locked through api and is not orphaned: what an acquisition's common case
 * asks (detect.h), one compare of the two bytes side by side. */
static inline int lt_lock_plain(const lt_lock *l, uint8_t api)
{
    const uint8_t want[2] = {LT_MODE_NONE, api};
    return memcmp(&l->orphan_mode, want, sizeof want) == 0;
}

/* None of it is reset by a new identity, so that init, which makes one, never touches the
 * cold record: orphan_of means something only while the hot orphan_mode says so, klass and
 * an annotation carry the gen they were made for, and waiting_writers counts threads blocked
 * now, which each take back their own count whatever happened to the lock meanwhile. Nor do
 * init and destroy claim the entry here (shadow.c keeps claims in a table of their own): a
 * program that only makes, takes and destroys locks never touches its cold records. */
typedef struct lt_lock_cold {
    _Atomic int waiting_writers;      /* threads blocked in an untimed write request now */
    uint32_t orphan_stack;            /* where orphan_of took it: a stack id (its recorded
                                         frames when lazily taken), 0 = the call site alone */
    _Atomic uint64_t klass;           /* classes.c: gen << 32 | class id of this identity;
                                         another gen: not decided yet */
    const lt_gone *orphan_of;         /* the thread gone holding it (orphan_mode) */
    lt_lock_side *_Atomic side;       /* NULL until first needed (lt_shadow_side); then the
                                         entry's for good */
} lt_lock_cold;
_Static_assert(sizeof(lt_lock_cold) == 32, "a slab entry (shadow.c) is one line");

/* Home entries (shadow.c): most locks' entries lie where their address says, so that a lookup
 * is one load from the entry's own hot record. A 4 KiB page of the program's memory has a
 * bucket of 128 homes, one per 32 bytes (no two locks of 32 bytes or more share one: pthread
 * mutexes, rwlocks and condition variables are all larger), of 1,024 buckets: 4 MiB of zeroed
 * hot records, then their cold ones (4 MiB more, in the same order), of which only the pages
 * of homes in use are touched (of cold records, only where they are written). A home's hot
 * record takes as many bytes as the program memory it stands for, so locks side by side have
 * hot records side by side. The pages of a 4 MiB
 * region take the buckets in turn, from one its number's hash picks: an array of locks over up
 * to 1,024 pages has no two pages in one bucket, and glibc's arenas, 64 MiB apart, do not all
 * start in the same one. A lock whose home another lock has taken gets an entry elsewhere
 * (shadow.c's slabs: a line each, the hot record then the cold), found through the thread's
 * cache and the shadow's tables. */
#define LT_HOME_SLOT_SHIFT 5
#define LT_HOME_PAGE_BITS (12 - LT_HOME_SLOT_SHIFT)
#define LT_HOME_BUCKET_BITS 10
#define LT_HOMES ((size_t)1 << (LT_HOME_BUCKET_BITS + LT_HOME_PAGE_BITS))
typedef struct lt_home_area {
    lt_lock hot[LT_HOMES];
    lt_lock_cold cold[LT_HOMES];
} lt_home_area;
extern lt_home_area lt_shadow_homes __attribute__((visibility("hidden"))); /* not through
                                           the GOT: an address relative to the code */

static inline int lt_lock_is_home(const lt_lock *l)
{
    return (uintptr_t)l - (uintptr_t)lt_shadow_homes.hot < sizeof lt_shadow_homes.hot;
}

/* l's cold record. */
static inline lt_lock_cold *lt_lock_cold_of(const lt_lock *l)
{
    return lt_lock_is_home(l) ? (lt_lock_cold *)(void *)((char *)l + sizeof lt_shadow_homes.hot)
                              : (lt_lock_cold *)(void *)(l + 1);
}

/* The address l names now; NULL when it names none (destroyed, or not in use). */
static inline const void *lt_lock_addr(const lt_lock *l)
{
    uintptr_t a = (uintptr_t)atomic_load_explicit(&l->addr, memory_order_acquire);
    return (intptr_t)a < 0 ? NULL : (const void *)(a & ~LT_ADDR_NAMED);
}

/* l's side record when it holds an annotation of l's identity: one made in its gen, or, while
 * l is destroyed (its gen moved on, its addr is another value), in the gen before - a
 * destroyed lock keeps its annotation until the address is a lock again. */
static inline const lt_lock_side *lt_lock_annotated(const lt_lock *l)
{
    const lt_lock_side *x = atomic_load_explicit(&lt_lock_cold_of(l)->side, memory_order_acquire);
    if (!x)
        return NULL;
    uint32_t made = atomic_load_explicit(&x->gen, memory_order_acquire);
    uint32_t gen = atomic_load_explicit(&l->gen, memory_order_acquire);
    return made == gen ||
                   (made + 1 == gen &&
                    (intptr_t)atomic_load_explicit(&l->addr, memory_order_relaxed) < 0)
               ? x
               : NULL;
}

/* l's annotation (locktrace_annotate), NULL when none. */
static inline const void *lt_lock_object(const lt_lock *l)
{
    const lt_lock_side *x = lt_lock_annotated(l);
    return x ? x->object : NULL;
}
static inline locktrace_describe_fn lt_lock_describe(const lt_lock *l)
{
    const lt_lock_side *x = lt_lock_annotated(l);
    return x ? x->describe : NULL;
}

/* One entry of a held set: 56 bytes, since a thread may hold thousands. The stack of the
 * acquisition is kept cheaply as the call site (return address `ra`) and the return addresses
 * of the next few callers (callsite.c): LT_CALLERS beyond the first frame that is not a lock
 * wrapper, up to LT_WRAPPER_FRAMES of which lie before it (wrappers.c), interned as one
 * stack, `site` (a thread takes its locks from few places, and the walk that found the
 * callers remembers the id: stack.h, lt_stack_site_lazy). `stack` is a full stack only with
 * LOCKTRACE_STACKS=full, or once a report has recovered one (stack.c: lt_stack_lazy). */
#define LT_CALLERS 4
#define LT_WRAPPER_FRAMES 8
#define LT_CALLERS_MAX (LT_CALLERS + LT_WRAPPER_FRAMES)
typedef struct lt_held {
    const void *addr;
    lt_lock *lock;
    uint32_t gen;   /* lock->gen when acquired */
    uint8_t kind;   /* lt_kind */
    uint8_t mode;   /* lt_mode */
    uint8_t anchor; /* lt_anchor: taken by a blocking request, edges lead into it (order.c) */
    uint32_t depth; /* recursive mutex / recursive read acquisitions */
    uint32_t stack; /* stack id, 0 unless LOCKTRACE_STACKS=full */
    uint32_t site;  /* stack id of the call site and its callers; 0 = the call site alone */
    uintptr_t ra;   /* return address into the caller of the lock function */
    uint64_t since; /* LOCKTRACE_STATS: when it was taken (ns, monotonic) */
} lt_held;

/* Per-thread cache of shadow lookups: addr -> (entry, gen). 32 bytes, so that no slot
 * straddles two lines (at 24, a quarter did: two misses for one look-up). `known`: the
 * fingerprint of the last edge into the slot's lock that this thread found in the order
 * graph's known set (order.c: lt_order_known), 0 = none; a nested acquisition that makes the
 * same edge again then needs no look at that set, whose line is cold in a thread that woke
 * up (memcached's LRU maintainer). The fingerprint names both identities (entry and gen), so
 * a slot that now names another lock, or a new gen, never matches it. */
typedef struct lt_cache_slot {
    _Alignas(32) const void *addr;
    lt_lock *lock;
    uint32_t gen;
    uint64_t known;
} lt_cache_slot;
_Static_assert(sizeof(lt_cache_slot) == 32, "a cache slot lies in one line");

/* A waiting thread found by a key in waitfor.c's index: by its seq, its pthread_t, the lock
 * it waits to write, or a lock it holds for read (`held`). Under waitfor.c's lock. */
typedef struct lt_wait_link {
    uintptr_t key;
    struct lt_thread *t;
    struct lt_held *held;
    struct lt_wait_link *next, **pprev; /* the key's bucket */
    struct lt_wait_link *more;          /* the thread's read holds */
    uint8_t what;
} lt_wait_link;

/* What a thread is blocked on (waitfor.c). `seq` is odd while the thread waits; the thread
 * writes every other field before seq turns odd, under waitfor.c's lock, and leaves the list
 * under it too, so a reader holding that lock sees one consistent wait. (The thread dump reads
 * it without the lock and may show a wait that has just ended.) */
typedef struct lt_wait_slot {
    _Atomic uint32_t seq;
    lt_lock *lock;
    uint32_t gen;                 /* lock->gen when the wait began */
    uint8_t cancel_ends;          /* a cancellation of the thread ends this wait (cancel.c:
                                   * lt_cancel_would_end) */
    const void *addr;
    uint8_t kind, mode, wait;     /* lt_kind, lt_mode, lt_wait */
    uint8_t long_reported;        /* a long-wait report was made for this wait */
    uint8_t deferred;             /* closed a cycle through a signaller hint not yet seen
                                   * stalled, or `orphaned`: the watchdog looks again
                                   * (waitfor.c) */
    uint8_t orphaned;             /* its lock's holder exited holding it meanwhile */
    uint8_t waits_for;            /* lt_wait_for; the lock fields serve LT_FOR_LOCK only */
    uint8_t api;                  /* lt_api of the call that waits (pthread_join, thrd_join) */
    uintptr_t target;             /* LT_FOR_JOIN: the pthread_t; LT_FOR_SIGNAL: the condvar */
    const struct lt_cond_waiter *cond_waiter; /* LT_FOR_SIGNAL: its record (cond.c); NULL: no
                                               * hint (waitfor.c) */
    uintptr_t handle;             /* pthread_t of this thread */
    uint32_t stack;               /* where it waits */
    uintptr_t cfa;                /* the waiting call's frame (waitfor.c: left_behind) */
    lt_thread_info who;           /* the thread, with its kept name (lt_thread_info_kept) */
    struct timespec since;        /* CLOCK_MONOTONIC (lock to since: the wait, lt_wait_kept) */
    struct lt_thread *next_waiter, *prev_waiter; /* waitfor.c's list, under its lock */
    uint32_t mark;                /* cycle search visit stamp, under waitfor.c's lock */
    uint32_t next_look;           /* the watchdog's round that looks at a deferred wait next */
    uint8_t looks;                /* how many times it looked (waitfor.c: look_again) */
    lt_wait_link by_seq, by_handle, by_write; /* waitfor.c's index, under its lock */
    lt_wait_link *reads;          /* likewise, one per lock held for read */
} lt_wait_slot;

/* A thread's published wait that a signal handler's own wait interrupted (waitfor.c): what
 * it waits for, its slot's fields from lock to since, put back when the handler's wait ends.
 * A thread keeps up to LT_WAIT_NESTED of them, innermost last: its own wait, then the waits
 * of handlers that a handler of another signal interrupted in turn. A wait nested deeper is
 * neither published nor checked. */
#define LT_WAIT_NESTED 4
typedef struct lt_wait_kept {
    unsigned char what[offsetof(lt_wait_slot, next_waiter) - offsetof(lt_wait_slot, lock)];
} lt_wait_kept;

/* A walk over the callers of a lock call site (callsite.c), remembered by its thread. */
#define LT_WALK_SET_BITS 5 /* 32 sets of LT_WALK_WAYS walks */
#define LT_WALK_WAYS 4
#define LT_WALKS (LT_WALK_WAYS << LT_WALK_SET_BITS)
typedef struct lt_walk_frame {
    uintptr_t slot;                 /* where caller was read */
    uintptr_t caller;
} lt_walk_frame;

/* Every acquisition checks a remembered walk (callsite.h): a walk's line holds all the check
 * reads for up to LT_WALK_NEAR callers - the key, the id, the callers and where each was
 * read, as an offset from cfa in words - so the check costs one cache line, and the lines of
 * all walks lie together (a thread's walks span 8 KiB, two pages: what a lock call touches
 * after a system call has flushed the TLB). `near`: those are the whole walk (n <=
 * LT_WALK_NEAR, every offset fits); else the check reads the frames, which keep the whole
 * walk (lt_walk_frames) for everything else. */
#define LT_WALK_NEAR 4
typedef struct lt_walk {
    _Alignas(64) uintptr_t ra;      /* where the walk started */
    uintptr_t cfa;
    uint32_t stack;                 /* the call site and callers interned, 0 = not yet (stack.c:
                                       lt_stack_site) */
    uint8_t n;                      /* callers found */
    uint8_t near;                   /* the check needs no more than this line */
    uint8_t wrappers;               /* frames 0 .. wrappers-1 are lock wrappers (callsite.c) */
    uint8_t frames;                 /* its frames: its thread's walk_frames[frames - 1]; 0 =
                                       none yet (callsite.h: lt_callsite_frames) */
    uint16_t near_off[LT_WALK_NEAR]; /* frame[i].slot - cfa, in words */
    uintptr_t near_caller[LT_WALK_NEAR]; /* frame[i].caller */
} lt_walk;
_Static_assert(sizeof(lt_walk) == 64, "a near walk's check reads one line");

/* The frames of a walk (lt_walk.frames). */
typedef struct lt_walk_frames {
    lt_walk_frame frame[LT_CALLERS_MAX];
    uintptr_t sp[LT_CALLERS_MAX];   /* the stack pointer of the frame that returns to caller i */
} lt_walk_frames;

/* A stack of recorded frames (call site and callers) the thread interned lately, with its id
 * (stack.c: a thread's lock call sites repeat, so most are found here without the depot). */
#define LT_SITE_SLOTS 16
typedef struct lt_site_slot {
    uint32_t id, n;
    uintptr_t ips[1 + LT_CALLERS_MAX];
} lt_site_slot;

/* A lock in the thread's own stack, with the frame that held it when the thread last took
 * it: the frame's top and return address (lifetime.c). A frame that returns and another that
 * takes its place differ in one of them, so a lock at the same address in the new frame is
 * a new lock. Direct-mapped by address: a lock that loses its slot is only not checked. */
#define LT_FRAME_LOCK_BITS 5
typedef struct lt_frame_lock {
    const void *addr;
    uintptr_t top, ret;
} lt_frame_lock;

#define LT_CACHE_BITS 9
#define LT_CACHE_SLOTS (1 << LT_CACHE_BITS)
#define LT_HELD_INLINE 8   /* held entries before the set moves to mapped memory */
#define LT_HELD_INDEX_MIN 32 /* entries in use from which the set is large: looked up at its
                                ends, then indexed by address (thread.c) */

typedef struct lt_thread {
    /* On a line of its own: the pool puts threads side by side, and each writes its header
     * (nheld, held_end) on every lock call. The line holds all a lock call reads of the
     * thread but its held entries, shadow cache slot and walk, so that it misses once (a
     * server's thread finds it cold after each system call): the stack bounds, 13 KiB away,
     * were a second miss, a tenth of memcached's samples in the acquisition. */
    _Alignas(64) lt_held *held; /* points at inline_held or at mapped memory */
    uintptr_t stack_lo, stack_hi; /* this thread's stack, 0 = unknown (callsite.c) */
    uint32_t nheld, cap;        /* locks held; entries allocated */
    uint32_t held_end;          /* entries in use: held ones, and removed ones (lock NULL)
                                   while the set is indexed */
    uint32_t held_start;        /* entries below it are all removed ones; a set not indexed
                                   has none from it to held_end */
    uint32_t held_room;         /* held_end below this: the set is not indexed and has room
                                   for one more entry before it must grow (cap); 0 while
                                   indexed, and
                                   with LOCKTRACE_STATS or LOCKTRACE_STACKS=full (an entry
                                   then needs more than the fast paths do). One compare
                                   tells the fast paths they may append or pop. */
    int exit_round;             /* key-destructor rounds seen at thread exit */
    lt_thread_info info;        /* its seq on the first line: a write acquisition stores it */
    uint32_t *held_index;       /* addr -> position + 1, open addressing, mapped */
    uint32_t held_index_bits;   /* log2 of its slots; 0 = not mapped */
    int held_indexed;           /* held_index is in use (held_end reached LT_HELD_INDEX_MIN) */
    _Atomic uint32_t held_moves; /* odd while held is being replaced (thread.c: lt_held_copy) */
    lt_held inline_held[LT_HELD_INLINE];
    struct lt_thread *next, *prev; /* registry of live threads */
    uint64_t wait_start;        /* LOCKTRACE_STATS: when the current blocking wait began (ns) */
    struct lt_once_run *once_top; /* once init routines running on this thread, innermost first */
    uintptr_t handle;           /* its pthread_t: a join names the thread it waits for so */
    uint8_t detached;           /* a join of it fails at once (EINVAL): nobody waits for it */
    _Atomic uint8_t cancelled;  /* lt_cancel_state: pthread_cancel was called for it
                                   (interpose_cancel.c): the waits a cancellation ends wait
                                   for nothing (waitfor.c) */
    uint8_t unwind_none;        /* platform: libunwind's state for it could not be had, so it
                                   makes no unwind (lt_platform_thread_init) */
    struct lt_cond_waiter *cond_wait; /* the condition wait it is in, innermost (cond.c) */
    const void *custom_wait;    /* the lock of locktrace_mutex_block's wait, until post_lock */
    uint8_t custom_wait_kind, custom_wait_mode;
#if LT_CHECKS
    lt_spin_ranks ranks;          /* the tracer locks it holds (spin.c): on the first page with
                                     the header, which registration writes (at the end, 64 KiB
                                     on, it was a page fault more at every start) */
#endif
    /* What a thread writes in its first lock calls lies together after the header; the
     * arrays a thread fills as it meets call sites and locks come after (a page or two of
     * them for a thread of a few call sites), and the shadow cache, which only locks away
     * from their homes use, comes last: 2,000 threads of 4 locks each wrote 8 of its 17
     * pages each, spread over them (`stressbench crowd`). */
    uintptr_t shadow_last;        /* shadow.c: the entry the last lookup found, | a count
                                     (0-3) of the run of entries found side by side (a
                                     program going through an array of locks finds the next
                                     one's after it) */
    lt_site_slot sites[LT_SITE_SLOTS]; /* its last interned recorded stacks (stack.c) */
    lt_frame_lock frame_locks[1u << LT_FRAME_LOCK_BITS]; /* locks in its frames (lifetime.c) */
    uint32_t edge_free;           /* order.c: edges (pool indices) for its own new ones: a */
    uint32_t edge_block;          /* free list, then a run of unused ones from edge_block */
    uint32_t edge_nfree, edge_nblock;
    uint32_t edge_grant;          /* the size of the last block of new ones it took */
#define LT_EDGE_LABELS 4
    struct {
        lt_label l;
        uint32_t ix;              /* its index; 0 = none (l all 0) */
    } edge_label[LT_EDGE_LABELS]; /* order.c (label_find): the labels of its last new edges */
    uint32_t edge_label_next;     /* the one label_keep replaces next (mod LT_EDGE_LABELS) */
    uint32_t node_made;           /* order.c: nodes it made from its own, not yet taken back */
    uint32_t chain_missed;        /* order.c: chain look-ups missed in a row (chain_ask) */
    uint32_t label_sweep;         /* order.c: the sweep of labels its edge_label and
                                     first_label were kept after (labels_current) */
    void *node_free;              /* order.c: nodes for the new locks it takes (a free list), */
    uint32_t node_nfree, node_ngone;
    uint32_t node_grant;          /* the nodes its last fill kept it (node_cache_fill) */
#define LT_NODES_GONE 32
    struct lt_order_node *node_gone[LT_NODES_GONE]; /* and those of locks it ended, to leave
                                     the graph together (node_ngone of them) */
    void *gate_slot;              /* order.c: its slot of the gate, NULL = none */
    uint64_t first_held;          /* order.c (first_label): its last first edge's held */
    uint32_t first_to;            /* stack and site, to stack, and label (0 = none) */
    uint32_t first_label;
    lt_wait_slot waiting;
    lt_wait_kept interrupted[LT_WAIT_NESTED]; /* waitfor.c: the waits signal handlers' waits
                                     interrupted, nkept of them */
    uint8_t nkept;
    /* Its caller walks (callsite.c). A thread that ends leaves them to the next one to start
     * on the same stack (thread.c: walks_keep), with the bounds of the stack they were made
     * on: a server's new thread for each connection takes its locks from the same frames. */
    _Alignas(64) uintptr_t walks_lo, walks_hi; /* that stack; 0 = none, the walks are empty */
    uint8_t walk_next[1u << LT_WALK_SET_BITS]; /* per set: the way the next new walk takes */
    uint8_t walk_frames_used;     /* walk_frames given to walks, in the order they were made */
    lt_walk walks[LT_WALKS];      /* its last caller walks, */
    lt_walk_frames walk_frames[LT_WALKS]; /* and their frames (lt_walk.frames) */
    lt_cache_slot cache[LT_CACHE_SLOTS];
} lt_thread;
_Static_assert(offsetof(lt_thread, info.seq) < 64 && offsetof(lt_thread, held_room) < 64,
               "a lock call reads one line of its thread's header");

/* All the tracer keeps in TLS. Initial-exec TLS is fast but comes from glibc's static TLS
 * block, whose spare room for libraries loaded by dlopen (the tracer itself, or a library
 * linked with it, loaded from Python) is a few hundred bytes: so TLS holds two flags and three
 * pointers, and the lt_thread is allocated (alloc.h, never malloc) when the thread registers.
 *
 * busy is also what the program's signal handlers ask (sigdefer.c): LT_BUSY_IN and
 * LT_BUSY_FORK defer them to the thread's way out of the tracer (lt_leave), where sigpend says
 * one waits (lt_busy_defers). */
enum {
    LT_BUSY_OUT,  /* outside the tracer */
    LT_BUSY_IN,   /* inside: calls pass through, the program's handlers wait for lt_leave */
    LT_BUSY_PASS, /* calls pass through, handlers run at once: the thread holds nothing of the
                     tracer's (a leaving thread after its teardown, the tracer's calls into
                     the program's allocator, which may block on a program lock) */
    LT_BUSY_FORK, /* as LT_BUSY_IN, in a fork the process's only thread makes from outside the
                     tracer (lt_fork_alone), from the tracer's prepare handler to the end of
                     its parent or child handler */
    LT_BUSY_ASYNC, /* as LT_BUSY_OUT, the program's asynchronous cancellation on: lt_enter
                      defers it while the thread is inside (cancel.c) */
};
typedef struct lt_tls_block {
    int busy;         /* LT_BUSY_*: re-entrancy, inside the tracer pass calls through */
    uint16_t sigpend; /* sigdefer.c: a handler deferred, to run at lt_leave */
    uint16_t crit;    /* LT_CHECKS: tracer locks held and gate entries (LT_CRIT_*) */
    lt_thread *self; /* NULL until the thread registers, and again once it has left */
    void *unw_masked; /* platform: the unwind under way with every signal blocked, or NULL */
    void *_Atomic sigrec; /* sigdefer.c: the thread's deferred handlers, NULL until one */
} lt_tls_block;
_Static_assert(sizeof(lt_tls_block) <= 32, "glibc's spare static TLS is a few hundred bytes");

extern __thread lt_tls_block lt_tls LT_TLS;

/* Whether a program's handler of a signal that finds its thread so busy waits for lt_leave. */
static inline int lt_busy_defers(int busy)
{
    return busy == LT_BUSY_IN || busy == LT_BUSY_FORK;
}

/* In the fork handlers: the fork is made by the process's only thread from outside the
 * tracer, so no other thread holds a tracer lock or is in the order graph's gate, and none can
 * be until the fork is made (nothing but libc and the fork handlers runs meanwhile). The
 * handlers then take no lock and write only what the child must have otherwise (a page written
 * after the fork is a page fault in each process, ~50-100 us on a virtual machine). Told by
 * the forking thread's own busy, which the handlers write anyway, where a word of its own
 * was another page written in each process at each fork. */
static inline int lt_fork_alone(void)
{
    return lt_tls.busy == LT_BUSY_FORK;
}

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
    int published;      /* waitfor.c: this event's wait is the thread's published one (2 or
                           more: a signal handler's, which interrupted the thread's published
                           wait, kept as lt_thread.interrupted[published - 2]) */
    uint8_t api;        /* lt_api of the entry point, LT_API_PTHREAD = 0 */
    uint32_t site;      /* lt_stack_site_lazy of (ra, cfa) once lt_held_prepare has it, for
                           order.c's new edges; 0 = not yet (ask lt_stack_site_lazy) */
} lt_event;

/* Fibonacci hashing, top bits: locks at a regular stride (arrays of structs) spread evenly. */
static inline size_t lt_addr_hash(const void *addr, unsigned bits)
{
    return (size_t)(((uintptr_t)addr * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* The home of a lock in a table probed linearly (a large held set's index; shadow.c's tables
 * place a lock the same way, less the bits that chose its shard): the page's hash places the
 * page, and the lock's 4-byte slot in the page adds 1/1024 of the table a slot. A walk over
 * an array of locks then walks the table forward at a fixed stride, which the hardware
 * prefetches, and other pages' locks fall between at the table's load, as random homes would.
 * (The 64-byte line's hash sent the next line ~0.6 of a table away: a cache miss a lookup.) */
static inline size_t lt_page_slot_hash(const void *addr, unsigned bits)
{
    uintptr_t a = (uintptr_t)addr;
    uint64_t h = (a >> 12) * 0x9E3779B97F4A7C15ull + ((uint64_t)(a & 4095) >> 2 << 54);
    return (size_t)(h >> (64 - bits));
}

/* thread.c ------------------------------------------------------------------------------- */
lt_thread *lt_self_register(void);

/* The calling thread's state, registering it on first use. Inline: every event starts here.
 * NULL only when there is no memory for it: the thread's calls then pass through. */
static inline lt_thread *lt_self(void)
{
    lt_thread *t = lt_tls.self;
    return lt_likely(t != NULL) ? t : lt_self_register();
}

/* Whether h, an entry for its lock, is the newest for it without looking further: it names
 * its lock's identity and, held for write, its lock names t as the writer. An entry another
 * thread made stale stays in the set until a lookup finds it (lt_held_find_lock asks the
 * lock's writer, not the set), so an older entry may be stale with a newer one beside it. */
static inline int lt_held_current(const lt_thread *t, const lt_held *h)
{
    return atomic_load_explicit(&h->lock->gen, memory_order_relaxed) == h->gen &&
           (h->mode != LT_MODE_WRITE ||
            atomic_load_explicit(&h->lock->writer, memory_order_relaxed) == t->info.seq + 1);
}

/* A large set's entry for addr at one of its ends: the newest, or the oldest when current;
 * NULL when neither (lt_held_find_large looks further). Sets of thousands are mostly released
 * newest or oldest first: inline, that needs no call. The set must hold a lock: its ends are
 * then held entries (thread.c), where a set emptied by pops keeps its held_end. */
static inline lt_held *lt_held_find_ends(lt_thread *t, const void *addr)
{
    lt_held *h = &t->held[t->held_end - 1];
    if (h->addr == addr)
        return h;
    h = &t->held[t->held_start];
    return h->addr == addr && lt_held_current(t, h) ? h : NULL;
}

lt_held *lt_held_find_large(lt_thread *t, const void *addr);

/* This thread's entry for addr, the newest; NULL when it does not hold it. A small set is
 * scanned; a large one is looked up at its ends, then in its index (thread.c). t may be
 * another thread, which then must not change its set meanwhile (the wait-for check reads
 * blocked threads'). */
static inline lt_held *lt_held_find(lt_thread *t, const void *addr)
{
    uint32_t end = t->held_end;
    if (lt_unlikely(end >= LT_HELD_INDEX_MIN)) {
        lt_held *h = t->nheld ? lt_held_find_ends(t, addr) : NULL;
        return h || !t->nheld ? h : lt_held_find_large(t, addr);
    }
    for (uint32_t i = end; i-- > 0;)
        if (t->held[i].addr == addr)
            return &t->held[i];
    return NULL;
}

/* Unlocks libc accepted of locks their thread did not hold (detect.c): until there is one,
 * no held entry for write outlives its lock's release. (Hidden, as lt_cfg: read with one
 * instruction.) */
extern _Atomic unsigned lt_foreign_unlocks __attribute__((visibility("hidden")));

/* lt_held_find for a request of kind for the lock at addr, shadow entry l (NULL: none). A
 * mutex or spinlock is only ever held for write, and one this thread holds names it as its
 * writer: where the lock names another writer or none, the thread does not hold it (a held
 * entry that says otherwise is stale), and a large set needs no lookup - what makes a
 * thread that holds thousands of locks take one more without touching its set. Not a custom
 * lock, whose kind the program names at each call. Always inline (in each lock entry point,
 * through lt_lock_common): gcc 12 made it one shared function, and the call cost every
 * acquisition ~10 instructions, more than the common case's answer (none held) itself. */
static inline __attribute__((always_inline)) lt_held *lt_held_find_lock(lt_thread *t,
                                                                       const void *addr,
                                                                       const lt_lock *l,
                                                                       lt_kind kind, lt_api api)
{
    if (lt_likely(t->nheld == 0))
        return NULL;
    if (t->held_end >= LT_HELD_INDEX_MIN && l && (kind == LT_MUTEX || kind == LT_SPIN) &&
        api != LT_API_CUSTOM &&
        atomic_load_explicit(&l->writer, memory_order_relaxed) != t->info.seq + 1 &&
        !atomic_load_explicit(&lt_foreign_unlocks, memory_order_relaxed))
        return NULL;
    return lt_held_find(t, addr);
}

/* Whether t (NULL: none) holds a lock taken by a call from inside the unwinder
 * (lt_platform_in_unwinder): the program's own unwind, which holds libunwind's locks while it
 * calls out (thread.c). */
int lt_held_unwinder(const lt_thread *t);
lt_held *lt_held_push_slow(lt_thread *t, const void *addr, lt_lock *l);
void lt_held_remove_slow(lt_thread *t, lt_held *h);

/* The slot the next entry of a set with room takes, where it can be filled before it joins
 * the set (lt_held_append); NULL when the next entry needs lt_held_push's slow path (the set
 * is indexed, or full). Nothing reads a slot beyond held_end. */
static inline lt_held *lt_held_spare(const lt_thread *t)
{
    uint32_t pos = t->held_end;
    return lt_likely(pos < t->held_room) ? &t->held[pos] : NULL;
}

/* The spare slot, filled, joins the set as its newest entry. */
static inline void lt_held_append(lt_thread *t)
{
    t->held_end++;
    t->nheld++;
}

/* A new newest entry for the lock at addr (shadow entry l, never NULL: a hole has none); the
 * caller fills in the rest. NULL when out of memory. Inline: a set with room appends. */
static inline lt_held *lt_held_push(lt_thread *t, const void *addr, lt_lock *l)
{
    lt_held *h = lt_held_spare(t);
    if (lt_unlikely(!h))
        return lt_held_push_slow(t, addr, l);
    h->addr = addr;
    h->lock = l;
    lt_held_append(t);
    return h;
}

/* The newest entry, when it is for addr and the set is not indexed: it leaves by a pop
 * (lt_held_pop). NULL otherwise (look it up with lt_held_find). */
static inline lt_held *lt_held_top(const lt_thread *t, const void *addr)
{
    uint32_t end = t->held_end;
    if (lt_unlikely(end - 1 >= t->held_room)) /* empty, or indexed */
        return NULL;
    lt_held *h = &t->held[end - 1];
    return lt_likely(h->addr == addr) ? h : NULL;
}

/* The second newest entry, when it is for addr (and the newest is not) and the set is not
 * indexed: two nested locks released in the order they were taken, as memcached's workers and
 * LRU maintainer release an item lock and an LRU lock, and unbound its two read locks. It
 * leaves by lt_held_remove, the newest taking its place. NULL otherwise. */
static inline lt_held *lt_held_second(const lt_thread *t, const void *addr)
{
    uint32_t end = t->held_end;
    if (lt_unlikely(end - 1 >= t->held_room) || t->nheld < 2)
        return NULL;
    lt_held *h = &t->held[end - 2];
    return h->addr == addr && h[1].addr != addr ? h : NULL;
}

/* The newest entry of a set not indexed leaves. The last one leaves the set as it began,
 * without a hole in front: a large set released oldest first loses its last entry here, and
 * with held_start left there the next round of acquisitions filled the set from that point,
 * so that it reached its capacity and had to be compacted (`stressbench groups`: a copy of
 * 8,000 entries a round, 8 instructions a lock). */
static inline void lt_held_pop(lt_thread *t)
{
    if (--t->nheld == 0)
        t->held_start = t->held_end = 0;
    else
        t->held_end--;
}

/* The oldest entry h of a large set not indexed leaves: a hole in front (held_start). */
static inline void lt_held_remove_oldest(lt_thread *t, lt_held *h)
{
    t->nheld--;
    h->addr = NULL;
    h->lock = NULL;
    if (++t->held_start == t->held_end)
        t->held_start = t->held_end = 0;
}

/* h leaves the held set. Inline: locks mostly go last-in first-out, from a set not indexed, and
 * next most often the second newest first (two nested locks released in the order they were
 * taken, as unbound releases its two per query): the newest then takes its place. A large set
 * released in the order taken (`stressbench groups`) loses its oldest entry inline too. */
static inline void lt_held_remove(lt_thread *t, lt_held *h)
{
    lt_held *top = &t->held[t->held_end - 1];
    if (lt_unlikely(t->held_indexed) || (h != top && h + 1 != top)) {
        if (h == &t->held[t->held_start] && t->held_end >= LT_HELD_INDEX_MIN &&
            !t->held_indexed)
            lt_held_remove_oldest(t, h);
        else
            lt_held_remove_slow(t, h);
        return;
    }
    if (h != top)
        *h = *top;
    lt_held_pop(t);
}
void lt_held_compact(lt_thread *t);
void lt_thread_start(int seq, uintptr_t sp);
void lt_thread_walks_settle(lt_thread *t);
void lt_thread_bounds_later(lt_thread *t);
void lt_thread_bounds_settle(void);
int lt_thread_next_seq(void);
int lt_thread_count(void); /* threads numbered so far: grows when one starts */
void lt_thread_info_now(lt_thread *t, lt_thread_info *out);
const lt_thread_info *lt_thread_info_kept(lt_thread *t);
void lt_thread_info_fresh(lt_thread_info *info);
void lt_thread_fork(lt_fork_phase phase);
/* In a fork child: a record of a thread it did not get (by_fork), not from malloc. */
lt_gone *lt_gone_forked(const lt_thread_info *info);
void lt_thread_each(void (*fn)(lt_thread *t, void *arg), void *arg);
lt_thread *lt_thread_first(void);
/* Copies entries [i, i + n) of the held set `set` of thread `live` (an lt_thread, never
 * unmapped), which its thread may be replacing meanwhile, for a report, a dump or an exit-held
 * list; set and moves as read from live before (held, held_moves). 0, or -1 when the set was
 * replaced since, or is being replaced (the caller leaves it out). In any sandbox (no
 * process_vm_readv); async-signal-safe; no lock, no wait. */
int lt_held_copy(const lt_thread *live, const lt_held *set, uint32_t moves, uint32_t i,
                 uint32_t n, lt_held *to);
/* Calls fn with a copy of each entry in [from, end) of such a set, in order, but the removed
 * ones (lock NULL), until fn returns nonzero; set, moves and end as for lt_held_copy. A set
 * replaced meanwhile ends the walk: the entries not visited yet are left out. The same safety
 * as lt_held_copy. lt_held_walk_live reads set, moves and end from live itself, and walks
 * from 0: a live thread's held_start may change under the reader. */
typedef int lt_held_visit(const lt_held *h, void *arg);
void lt_held_walk(const lt_thread *live, const lt_held *set, uint32_t moves, uint32_t from,
                  uint32_t end, lt_held_visit *fn, void *arg);
void lt_held_walk_live(const lt_thread *live, lt_held_visit *fn, void *arg);

/* busy is read by the thread's own signal handlers: the compiler must neither sink the store
 * that enters past the tracer's first lock or gate entry (acquire operations let earlier
 * stores move after them) nor hoist the store that leaves above its last release. The fences
 * emit no instruction. */
static inline void lt_busy_set(lt_tls_block *b, int busy)
{
    atomic_signal_fence(memory_order_seq_cst);
    b->busy = busy;
    atomic_signal_fence(memory_order_seq_cst);
}

/* Whether the thread is outside the tracer, as the program's own calls find it. */
static inline int lt_outside(const lt_tls_block *b)
{
    return b->busy == LT_BUSY_OUT || b->busy == LT_BUSY_ASYNC;
}

/* cancel.c: lt_enter of a thread that is not LT_BUSY_OUT: into the tracer with its
 * cancellation deferred (1) when it is LT_BUSY_ASYNC, else 0. */
__attribute__((cold)) int lt_enter_busy(lt_tls_block *b);

/* cancel.c: out of the tracer, cancellation asynchronous again (lt_leave_slow); and,
 * as the thread leaves for good, deferred for the rest of its exit. */
void lt_cancel_async_again(lt_tls_block *b);
void lt_cancel_async_end(lt_tls_block *b);

/* cancel.c, for interpose_cancel.c: libc's pthread_setcanceltype; the thread marked
 * LT_BUSY_ASYNC (on) or not. */
typedef int (*canceltype_fn)(int, int *);
canceltype_fn lt_cancel_real(void);
void lt_cancel_async_mark(lt_tls_block *b, int on);

/* cancel.c: the threads a pthread_cancel is for marked (lt_thread.cancelled) before libc
 * sends it and again after (rc: libc's answer), one that had not registered yet as it
 * registers (lt_cancel_claim); the calling thread t, outside the tracer, cancelled here if it
 * is due, else past its cancellation (lt_cancel_settle); whether a cancellation of the
 * calling thread would end a wait it begins now, one at a cancellation point (a join, a
 * condition wait) or not (a lock request). */
typedef enum lt_cancel_state {
    LT_CANCEL_NONE,
    LT_CANCEL_MARKED, /* pthread_cancel is sending it one */
    LT_CANCEL_SENT,   /* libc has: it is pending or has acted */
    LT_CANCEL_SPENT   /* it acted, or the thread exits: none ends a wait of it any more */
} lt_cancel_state;
void lt_cancel_sent(uintptr_t handle);
void lt_cancel_delivered(uintptr_t handle, int rc);
void lt_cancel_claim(lt_thread *t);
void lt_cancel_settle(lt_thread *t);
int lt_cancel_would_end(const lt_tls_block *b, int at_point);

static inline int lt_enter(lt_tls_block *b)
{
    if (b->busy)
        return lt_enter_busy(b);
    lt_busy_set(b, LT_BUSY_IN);
    return 1;
}

void lt_sig_flush(void);

/* With LT_CHECKS, what lt_leave finds the thread still holds (crit, 0 when nothing): the
 * ranks of the tracer locks it holds, bit r - the rank check's own bookkeeping, kept here, so
 * taking a tracer lock costs nothing more (spin.c) - and above them the count of its entries
 * into the order graph's gate (lt_crit_gate). Without, crit stays 0. */
#define LT_CRIT_RANKS ((1u << LT_RANK_COUNT) - 1)
#define LT_CRIT_GATE (1u << LT_RANK_COUNT)
/* In every build, its top bit: the thread is LT_BUSY_ASYNC outside the tracer, so that
 * lt_leave's one test sends it to turn its cancellation back (cancel.c). */
#define LT_CRIT_ASYNC (1u << 15)
_Static_assert(LT_RANK_COUNT <= 13,
               "crit holds the rank bits, a count of gate entries and LT_CRIT_ASYNC");

/* The thread entered the order graph's gate (+1) or left it (-1). */
static inline void lt_crit_gate(int d)
{
#if LT_CHECKS
    lt_tls.crit = (uint16_t)(lt_tls.crit + d * (int)LT_CRIT_GATE);
#else
    (void)d;
#endif
}

/* lt_leave's rare work: a tracer lock still held or the gate not left (LT_CHECKS: a handler
 * of the program's that ran now and parked the thread would stop every thread that needs
 * them; an internal error), else the handlers deferred meanwhile. */
void lt_leave_slow(lt_tls_block *b);

/* Out of the tracer: a handler deferred meanwhile runs now (sigdefer.c). A signal after the
 * store runs at once; one before it set sigpend, which the load after it sees. One test of
 * sigpend and crit, as wide as their stores: x86-64 `movzwl; or; jne`, the instructions the
 * test of sigpend alone took. (They were read as one 32-bit word: a load wider than a store
 * still on its way - the gate's crit - cannot take its value from it and waits until every
 * older store is written, the held entry's and the lock's lines missing the cache among them;
 * in `groups`, whose every lock and destroy leaves the gate just before, 9 % of the CPU.) */
static inline void lt_leave(lt_tls_block *b)
{
    lt_busy_set(b, LT_BUSY_OUT);
    if (lt_unlikely(b->sigpend | b->crit))
        lt_leave_slow(b);
}

/* busy back to what a caller that set it found (outside: it leaves the tracer). */
static inline void lt_busy_restore(lt_tls_block *b, int busy)
{
    if (busy == LT_BUSY_OUT || busy == LT_BUSY_ASYNC)
        lt_leave(b);
    else
        lt_busy_set(b, busy);
}

/* lifetime.c: a lock request for memory in the calling thread's own stack. */
void lt_frame_lock_seen(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa);
static inline void lt_frame_lock_check(lt_thread *t, const void *addr, uintptr_t ra,
                                       uintptr_t cfa)
{
    if (lt_unlikely((uintptr_t)addr - t->stack_lo < t->stack_hi - t->stack_lo))
        lt_frame_lock_seen(t, addr, ra, cfa);
}

/* shadow.c ------------------------------------------------------------------------------- */
lt_lock *lt_shadow_lookup(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa);

/* t's cache slot of addr (it may name another address). */
static inline lt_cache_slot *lt_cache_slot_of(lt_thread *t, const void *addr)
{
    return &t->cache[lt_addr_hash(addr, LT_CACHE_BITS)];
}

/* The home of the lock at addr (it may be another lock's, or no lock's). Its region's first
 * bucket, added in pages to addr, leaves in bits 5-21 the bucket and the 32-byte slot, which
 * scaled are the home's offset (fewer instructions than indices). */
static inline lt_lock *lt_shadow_home(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    uintptr_t first = ((a >> (12 + LT_HOME_BUCKET_BITS)) * 0x9E3779B97F4A7C15ull) >>
                      (64 - LT_HOME_BUCKET_BITS);
    uintptr_t at = (a + (first << 12)) & (((uintptr_t)1 << (12 + LT_HOME_BUCKET_BITS)) -
                                          ((uintptr_t)1 << LT_HOME_SLOT_SHIFT));
    return (lt_lock *)(void *)((char *)lt_shadow_homes.hot +
                               at * (sizeof(lt_lock) >> LT_HOME_SLOT_SHIFT));
}
_Static_assert(sizeof(lt_lock) % ((size_t)1 << LT_HOME_SLOT_SHIFT) == 0,
               "a home's offset in its bucket is its lock's offset in the page, scaled");

/* The shadow entry of addr, created (first seen at ra) when new. Inline: its home, else the
 * thread's cache, answers almost every call; lt_shadow_lookup is the slow path. An entry
 * that names addr is addr's (only one names an address at a time). NULL only without
 * memory. */
static inline lt_lock *lt_shadow_get(lt_thread *t, const void *addr, uintptr_t ra,
                                     uintptr_t cfa)
{
    lt_lock *home = lt_shadow_home(addr);
    if (lt_likely(atomic_load_explicit(&home->addr, memory_order_acquire) == lt_addr_named(addr)))
        return home;
    lt_cache_slot *slot = lt_cache_slot_of(t, addr);
    if (lt_likely(slot->addr == addr) &&
        atomic_load_explicit(&slot->lock->gen, memory_order_relaxed) == slot->gen)
        return slot->lock;
    return lt_shadow_lookup(t, addr, ra, cfa);
}
lt_lock *lt_shadow_reset(lt_thread *t, const void *addr, uintptr_t ra, uintptr_t cfa);
void lt_shadow_destroy(const void *addr, lt_lock *l);

/* Under the entry's claim (shadow.c), the only place gen changes once an entry is made: a
 * load and a store, not an atomic increment (see shadow.c: entry_clear). Readers that see
 * the new gen see what was stored before it (lt_shadow_end_identity: addr cleared). */
static inline void lt_shadow_gen_bump(lt_lock *l)
{
    atomic_store_explicit(&l->gen, atomic_load_explicit(&l->gen, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* Under the entry's claim, l live and filed under addr (or a live home, which only calls on
 * its own address change: shadow.c): the address stops naming a lock, l's gen moves on (so
 * the annotation and the rest of its state go with it). Its addr is cleared before gen
 * changes: see shadow.c's probe. */
static inline void lt_shadow_end_identity(lt_lock *l, const void *addr)
{
    atomic_store_explicit(&l->addr, (const void *)~(uintptr_t)addr, memory_order_relaxed);
    lt_shadow_gen_bump(l);
}
/* Their memory is released: the n addresses stop naming locks (see shadow.c). */
void lt_shadow_forget(const void *const *addrs, size_t n);
lt_lock *lt_shadow_find(const void *addr);
/* Every entry ever made to fn, without a lock (order.c's sweep: lock entries keep its inline
 * edges). */
void lt_shadow_each(void (*fn)(lt_lock *l, void *ctx), void *ctx);
void lt_shadow_fork(lt_fork_phase phase);
/* l's side record, made now when it has none; NULL when out of memory (said once). */
lt_lock_side *lt_shadow_side(lt_lock *l);
/* locktrace_annotate: l guards object, which describe names in reports (NULLs: neither). */
void lt_shadow_annotate(lt_lock *l, const void *object, locktrace_describe_fn describe);

/* What a lock's own word says (platform.h), except for a custom lock (locktrace_mutex_*,
 * api LT_API_CUSTOM; or a C++ guard), whose memory the tracer never reads: its type comes from
 * its create flags, it prefers no writers, is not robust, and who holds it is what the tracer
 * recorded. l may be NULL (no shadow entry). Defined in detect.c, but for the type: inline, as
 * the order graph asks it at every mutex's first edge. */
static inline int lt_lock_custom(const lt_lock *l)
{
    return l && (l->api == LT_API_CUSTOM || l->api == LT_API_CXX); /* no libc word to read */
}

/* (Always inlined: gcc called it from the order graph's first edges once order.c grew, 15
 * instructions every lock's first edge in `groups`.) */
static inline __attribute__((always_inline)) int lt_lock_mutex_type(const void *addr,
                                                                  const lt_lock *l)
{
    if (lt_unlikely(lt_lock_custom(l)))
        return l->custom_flags & LOCKTRACE_MUTEX_RECURSIVE ? LT_MUTEX_RECURSIVE : LT_MUTEX_NORMAL;
    return lt_platform_mutex_type(addr);
}

int lt_lock_prefers_writer(const void *addr, const lt_lock *l);
int lt_lock_writer_queued(const void *addr, const lt_lock *l);
int lt_lock_robust(const void *addr, const lt_lock *l);
int lt_lock_word_held(const void *addr, const lt_lock *l, lt_kind kind, lt_mode mode, int tid);

/* Does a request of this kind order the locks its thread holds before its lock (order.c's
 * edges into it, classes.c's predictions)? Only one that may wait for good. A trylock never
 * waits; a timed request gives up at its deadline, so no schedule hangs for good on an order
 * through it: a back-off that takes its second lock with a deadline, drops the first on
 * ETIMEDOUT and retries is correct code (Helgrind and ThreadSanitizer's deadlock detector
 * take a timed lock as a trylock too). A cycle of threads really waiting, a timed wait among
 * them, is still a warning (waitfor.c). */
static inline int lt_wait_orders(lt_wait wait)
{
    return wait == LT_WAIT_BLOCK;
}

/* A held entry's `anchor` (order.c's anchors): not taken by a blocking request (NONE), or taken
 * by one and an anchor (YES) or not (NO); ASK: a blocking read of an rwlock, the answer not
 * asked yet (lt_held_anchor). */
typedef enum lt_anchor { LT_ANCHOR_NONE, LT_ANCHOR_YES, LT_ANCHOR_NO, LT_ANCHOR_ASK } lt_anchor;

/* The anchor of a held entry taken in `mode`, by a blocking request or not. */
static inline uint8_t lt_anchor_of(lt_kind kind, lt_mode mode, int blocking)
{
    return !blocking ? LT_ANCHOR_NONE
           : kind != LT_RWLOCK || mode == LT_MODE_WRITE ? LT_ANCHOR_YES
                                                        : LT_ANCHOR_ASK;
}

/* Is h an anchor: taken by a blocking request (edges lead into it) and conflicting with itself
 * in the mode it is held, so that every older held lock reaches a new one through it? A lock
 * held for read conflicts with itself only on a writer-preferring rwlock, which its word says
 * (two calls into libc's layout): asked once a held entry and kept there. The order graph
 * walks the held locks at every nested acquisition, before the grant and after, and asked it
 * at every read-held lock it passed, in `stressbench lazy` 1.9 times an acquisition, 0.6
 * now. (Only a new lock, by init, changes the answer, and its holder holds the old one no
 * more.) */
static inline int lt_held_anchor(lt_held *h)
{
    if (h->anchor == LT_ANCHOR_YES)
        return 1;
    if (lt_likely(h->anchor != LT_ANCHOR_ASK))
        return 0;
    h->anchor = lt_lock_prefers_writer(h->addr, h->lock) ? LT_ANCHOR_YES : LT_ANCHOR_NO;
    return h->anchor == LT_ANCHOR_YES;
}

/* The modules' own headers: a module includes just this file. */
#include "alloc.h"
#include "callsite.h"
#include "classes.h"
#include "cond.h"
#include "config.h"
#include "detect.h"
#include "dump.h"
#include "exitheld.h"
#include "fmt.h"
#include "order.h"
#include "report.h"
#include "stack.h"
#include "stats.h"
#include "waitfor.h"
#include "wrappers.h"

#endif
