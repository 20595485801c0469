/*
 * spin.h - the tracer's own locks, and the one order in which they may be taken.
 *
 * A tracer lock is never one of the program's (interposed) locks: it is an lt_spin, a
 * spinlock that yields, then sleeps until its unlock, while it waits, and that the thread
 * owning it may take again (a program's atfork handler registered before the tracer's runs
 * while the forking thread holds them all, and may lock).
 *
 * The rank table. A thread may take a lock only while every tracer lock it holds ranks
 * before it (same-rank array locks: in address order, which fork does with all of them and
 * lockmap.c with two neighbouring stripes). fork()
 * takes them all in this order from the tracer's own atfork prepare handler, which runs
 * after the program's handlers, so those handlers run while the tracer can serve them.
 *
 *   rank              lock (file)                     taken under it
 *   LT_RANK_REPORT    report_lock (report.c)          symbolization; stack depot (stripe,
 *                                                     arena); the thread dump at abort
 *   LT_RANK_WAITFOR   wf_lock (waitfor.c)             stack depot (steps of a cycle); mapping
 *                                                     memory (its index's links); a cond
 *                                                     shard (whether a waiter was woken)
 *   LT_RANK_GRAPH     graph_lock (order.c)            mapping memory only
 *   LT_RANK_REGISTRY  registry_lock (thread.c)        its pool; stack depot (holders of a
 *                                                     long wait); a shadow shard, the depot
 *                                                     and a cond shard (a condition wait
 *                                                     whose mutex a leaving thread kept)
 *   LT_RANK_SHADOW    64 shard locks (shadow.c)       lockmap stripes; mapping memory
 *   LT_RANK_LOCKMAP   64 stripe locks (lockmap.c)     mapping memory only
 *   LT_RANK_STATS     stats_lock (stats.c)            mapping memory only
 *   LT_RANK_STACK     256 depot stripes (stack.c)     arena_lock
 *   LT_RANK_ARENA     arena_lock (stack.c)            mapping memory only
 *   LT_RANK_COND      256 shard locks (cond.c)        mapping memory only (its queues)
 *   LT_RANK_CLASSES   class_lock (classes.c)          mapping memory only
 *
 * With -Dtracer_checks (LT_CHECKS, on in development builds and CI) taking a lock out of
 * this order is an internal error: a message naming both ranks, then abort(). So is using,
 * without the lock, state its comment says is under it, where the code asks
 * (lt_spin_assert_mine: the graph's plain stores, shadow.c's free lists, waitfor.c's list of
 * waiting threads; lt_spin_assert_rank: the index pools).
 */
#ifndef LT_SPIN_H
#define LT_SPIN_H

#include <stdatomic.h>

typedef enum {
    LT_RANK_NONE, /* not a valid rank: every lock names its own */
    LT_RANK_REPORT,
    LT_RANK_WAITFOR,
    LT_RANK_GRAPH,
    LT_RANK_REGISTRY,
    LT_RANK_SHADOW,
    LT_RANK_LOCKMAP,
    LT_RANK_STATS,
    LT_RANK_STACK,
    LT_RANK_ARENA,
    LT_RANK_COND,
    LT_RANK_CLASSES,
    LT_RANK_COUNT
} lt_rank;

typedef struct lt_spin {
    _Atomic int owner;    /* tid of the holder, 0 = free */
    int depth;            /* nested acquisitions by the holder */
    int rank;             /* lt_rank */
    _Atomic int sleepers; /* waiters asleep on owner (spin.c), whom the unlock wakes */
} lt_spin;

#if LT_CHECKS
/* What a thread holds, for the rank check: how many locks of each rank and the last one
 * taken of each rank (which ranks it holds, bit r, are lt_tls.crit's: lt_internal.h). A
 * registered thread keeps it in its lt_thread, which the lock reaches anyway for the thread's
 * id; spin.c keeps one in TLS for a thread before it registers and after it leaves (neither
 * happens while it holds a tracer lock). */
typedef struct lt_spin_ranks {
    unsigned short n[LT_RANK_COUNT];
    const lt_spin *last[LT_RANK_COUNT];
} lt_spin_ranks;
#endif

#define LT_SPIN_INIT(rank) {0, 0, (rank), 0}

/* Where a fork() is: every module with a lock of its own takes it before, releases it after
 * in the parent, and resets it in the child. */
typedef enum { LT_FORK_PREPARE, LT_FORK_PARENT, LT_FORK_CHILD } lt_fork_phase;

void lt_spin_lock(lt_spin *s);
/* lt_spin_lock by the calling thread, whose id is me: for a thread not registered, which
 * spares the system call that asks it (a thread's start and exit, thread.c). */
void lt_spin_lock_as(lt_spin *s, int me);
/* One step of waiting for another thread to finish something, round counting the steps from
 * 0: a pause while a holder on another CPU is likely about to let go, then yields, then naps
 * of up to a millisecond (so that a holder of any priority runs). Every wait of the tracer for
 * another thread goes through it. */
void lt_spin_backoff(unsigned *round);
/* Waits for *busy to read 0, by lt_spin_backoff. */
void lt_spin_wait(const _Atomic int *busy);
void lt_spin_unlock(lt_spin *s);
/* With LT_CHECKS an internal error (a message, then abort()) unless this thread holds s: for
 * what a comment says is used "under" s. Nothing in a release build. */
/* The same for the lock of a rank that one lock has (the graph's): a rank where a pointer
 * to the lock in a structure's initializer is a relocation the loader writes at every start,
 * a page copied in each process (order.c's index pools: 4 pages). */
#if LT_CHECKS
void lt_spin_assert_mine(const lt_spin *s);
void lt_spin_assert_rank(int rank);
#else
static inline void lt_spin_assert_mine(const lt_spin *s) { (void)s; }
static inline void lt_spin_assert_rank(int rank) { (void)rank; }
#endif
/* Takes s before a fork, lets go of it after in the parent, frees it in the child: in a fork
 * made alone (lt_fork_alone) none is held, and it leaves them all as they are. */
void lt_spin_fork(lt_spin *s, lt_fork_phase phase);

#endif
