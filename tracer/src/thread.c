/*
 * thread.c - per-thread state and the registry of live threads.
 *
 * A thread keeps only lt_tls in TLS (see lt_internal.h for why). It registers on its first
 * event (or when our pthread_create trampoline starts it): its lt_thread comes from a pool of
 * mapped memory, it gets a sequence number T<n>, joins the registry, and arms a pthread key
 * whose destructor is our view of the thread's exit. That destructor gives the lt_thread back
 * to the pool; the thread stays `busy` (LT_BUSY_PASS) for good, so late calls from other
 * destructors pass straight through, and the program's signal handlers run at once. Pooled lt_threads are never unmapped, so a reader racing with an exit
 * (the thread dump) reads stale data, never unmapped memory.
 *
 * The held set is an array in acquisition order: inline in the lt_thread for the first few
 * entries, then mapped memory that doubles, never capped; indexed by address when large.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "lifetime.h"
#include "order.h"
#include "platform.h"
#include "sigdefer.h"

__thread lt_tls_block lt_tls LT_TLS;

/* registry_lock: the registry, the pool */
static lt_spin registry_lock LT_START_DATA = LT_SPIN_INIT(LT_RANK_REGISTRY);
static lt_thread *registry LT_START_DATA;
static lt_pool pool LT_START_DATA = LT_POOL(lt_thread, 256 * 1024);
static _Atomic int next_seq LT_START_DATA;
static pthread_key_t exit_key LT_START_DATA;
static _Atomic int exit_key_ready LT_START_DATA;
/* The main thread while its stack bounds are still to be read (lt_thread_bounds_later),
 * written under registry_lock; NULL when none. */
static lt_thread *_Atomic bounds_due LT_START_DATA;

/* ---------------------------------------------------------------------------------------- */

static void thread_exit(void *arg);

/* Under the registry lock. */
static void registry_link(lt_thread *t)
{
    t->prev = NULL;
    t->next = registry;
    if (registry)
        registry->prev = t;
    registry = t;
}

/* The 64-byte lines of [p, p + size) (whole lines) that are not all zeros, zeroed: a page the
 * thread never wrote is left as it is, no memory (read, the system's zero page). Zeroing all
 * of an lt_thread made all of it memory at the thread's exit, ~28 KB a thread where a thread
 * of a few locks writes 4-8 pages (1,000 threads: 18 MB resident while they lived, 41 MB
 * after they had ended; `memprobe none 1000`). */
static void zero_written(void *p, size_t size)
{
    uint64_t *w = p;
    for (size_t i = 0; i < size / sizeof *w; i += 8)
        if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7])
            memset(&w[i], 0, 64);
}

/* Dead threads' lt_threads the pool keeps as memory, for the next threads to start: those
 * beyond are given back to the system at their exit, so that a burst of thousands of threads
 * leaves no tens of megabytes behind, and threads that come and go a few at a time reuse
 * written pages, each a page fault less at their start. */
#define THREADS_KEPT 64

/* The thread's walks (callsite.c) emptied: none made. */
static void walks_clear(lt_thread *t)
{
    zero_written(&t->walks_lo,
                 offsetof(lt_thread, walk_frames) - offsetof(lt_thread, walks_lo));
}

/* An lt_thread given back made as a fresh one, by the thread that leaves it (thread_delete),
 * so the pool holds them zeroed: its whole pages given back to the system when `give_back`.
 * Its walks stay where they were made on a known stack, for the next thread to start on it
 * (walks_keep). The walks' frames (36 of its 64 KiB) are left as they are: callsite.c reads a
 * walk's frames only up to its n, and writes them before, and every walk that is not kept is
 * zeroed (n 0). Zeroing all of it at the next start, under the registry lock, was 63,000 of
 * the 82,000 instructions the tracer added to a thread's start and exit (callgrind,
 * `stressbench sigthreads`). The shadow cache (16 KiB) stays as it is too: a slot names an
 * entry and its gen, which say the same to every thread (a slot whose entry's gen moved on
 * matches nothing, as it would in the thread that wrote it), and its memo of a known edge
 * names both identities of the edge, which stays known while they live (order.c: known_one).
 * The next thread finds true answers there, or none. Reading its 256 lines for the few a
 * thread wrote was ~3,100 instructions at every exit (`stressbench tasks`: 3,948 of the
 * 17,100 a thread). */
static void thread_clear(lt_thread *t, int give_back)
{
    size_t page = (size_t)getpagesize();
    char *p = (char *)t, *end = p + sizeof *t,
         *lo = (char *)(((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1)),
         *hi = (char *)((uintptr_t)end & ~(uintptr_t)(page - 1));
    if (give_back && hi > lo) {
        lt_platform_discard(lo, (size_t)(hi - lo)); /* reads as zeros */
        zero_written(p, (size_t)(lo - p));
        zero_written(hi, (size_t)(end - hi));
        return;
    }
    zero_written(p, offsetof(lt_thread, walks_lo));
    if (!t->walks_lo && t->walk_frames_used)
        walks_clear(t);
}
_Static_assert(offsetof(lt_thread, walks_lo) % 64 == 0 &&
                   offsetof(lt_thread, walk_frames) % 64 == 0 &&
                   offsetof(lt_thread, cache) % 64 == 0 && sizeof(lt_thread) % 64 == 0 &&
                   _Alignof(lt_thread) == 64,
               "thread_clear zeroes whole lines");
_Static_assert(offsetof(lt_thread, cache) + sizeof(((lt_thread *)0)->cache) == sizeof(lt_thread) &&
                   offsetof(lt_thread, walk_frames) + sizeof(((lt_thread *)0)->walk_frames) ==
                       offsetof(lt_thread, cache) &&
                   offsetof(lt_thread, walks_lo) < offsetof(lt_thread, walk_next) &&
                   offsetof(lt_thread, walk_next) < offsetof(lt_thread, walks),
               "thread_clear leaves the walks' frames and the shadow cache alone, and "
               "walks_clear the walks");

/* A new thread's walks are the ones a dead thread made on the same stack. libc keeps the
 * stacks of ended threads (up to 40 MiB) and gives the last one of the size asked for to the
 * next thread, so a server that starts a thread per connection runs each new thread's code
 * from the frames the last one ran it from, on the same stack, and the thread's first
 * acquisition at each call site then costs a look at a walk, not a new walk and an interned
 * stack (`stressbench tasks`, a thread's 8 first lock pairs: 1,374 -> 419 instructions a
 * pair, native 70). A walk stays exact for the new thread: it is used only while the words at
 * its slots, read from the new thread's own frames above the same call site and stack
 * pointer, are the callers it found, and each frame's size and slot come from the site table,
 * which is the process's (callsite.c): the same words there make the same walk. That holds
 * within the same bounds (the walk's reads and its end were checked against them), so
 * lt_thread_walks_settle keeps the walks only where the new stack's bounds are theirs. An
 * lt_thread keeps its walks in the pool when fewer than THREADS_KEPT were there
 * (thread_delete), so those are the pool's first THREADS_KEPT freed ones; the last KEPT_LOOK
 * of them are asked (the new thread's stack pointer lies in the stack it starts on). */
#define KEPT_LOOK 16
static lt_thread *walks_keep(uintptr_t sp)
{
    size_t top = pool.nfree < THREADS_KEPT ? pool.nfree : THREADS_KEPT;
    for (size_t i = top; i-- > 0 && i + KEPT_LOOK >= top;) {
        const lt_thread *t = lt_pool_free_at(&pool, i);
        if (sp >= t->walks_lo && sp < t->walks_hi)
            return lt_pool_take_at(&pool, i);
    }
    return NULL;
}

/* Once the thread's stack bounds are known (0: not known): its walks stay if they were made
 * on that stack (walks_keep), else they go, and the walks it makes are on that stack. */
void lt_thread_walks_settle(lt_thread *t)
{
    if ((t->walks_lo != t->stack_lo || t->walks_hi != t->stack_hi) && t->walk_frames_used)
        walks_clear(t);
    t->walks_lo = t->stack_lo;
    t->walks_hi = t->stack_hi;
}

/* A fresh lt_thread for the calling thread (its id: tid) in the registry, with a dead
 * thread's walks on the stack sp is in where the pool has them (0: none asked); NULL when out
 * of memory. Its handle is set under the lock: a detach walking the registry sees it, or the
 * detach is pending when the thread claims it (waitfor.c). */
static lt_thread *thread_new(int tid, uintptr_t sp)
{
    lt_spin_lock_as(&registry_lock, tid);
    lt_thread *t = sp ? walks_keep(sp) : NULL;
    if (!t)
        t = lt_pool_take(&pool); /* zeroed: fresh, or by thread_clear (but kept walks and
                                     shadow cache) */
    if (t) {
        t->handle = (uintptr_t)pthread_self();
        registry_link(t);
    }
    lt_spin_unlock(&registry_lock);
    return t;
}

static void held_room_update(lt_thread *t);

/* Reports, dumps and exit-held lists read other threads' held sets while those threads run on
 * (lt_held_copy) with a check of each page and a copy (lt_platform_read): process_vm_readv,
 * one safe copy, is what sandboxes forbid (Chromium's kills the process for it). The set's
 * memory must then stay mapped between the check and the copy: its thread replaces it
 * (held_grow, held_release) with held_moves odd, and gives the old memory back only when no
 * reader is in (held_readers); else it keeps the range for good, its pages given back and
 * reading as zeros (removed entries): address space only, and only while a report reads. Each
 * side writes its word, then reads the other's (sequentially consistent): a reader the owner
 * did not see finds held_moves odd or changed, and leaves the set out. */
static _Atomic unsigned held_readers;

/* Whether the old memory may be unmapped now (held_retire). */
static int held_replace_begin(lt_thread *t)
{
    atomic_fetch_add(&t->held_moves, 1);
    return atomic_load(&held_readers) == 0;
}

static void held_replace_end(lt_thread *t)
{
    atomic_fetch_add_explicit(&t->held_moves, 1, memory_order_release);
}

static void held_retire(void *p, size_t size, int unmap)
{
    if (unmap)
        lt_platform_unmap(p, size);
    else
        lt_platform_discard(p, size);
}

static void held_release(lt_thread *t)
{
    if (t->held != t->inline_held) {
        lt_held *old = t->held;
        int alone = held_replace_begin(t);
        t->held = t->inline_held;
        held_replace_end(t);
        held_retire(old, t->cap * sizeof(lt_held), alone);
    }
    if (t->held_index)
        lt_platform_unmap(t->held_index, ((size_t)1 << t->held_index_bits) * sizeof(uint32_t));
    t->cap = LT_HELD_INLINE;
    t->nheld = t->held_end = t->held_start = 0;
    t->held_index = NULL;
    t->held_index_bits = 0;
    t->held_indexed = 0;
    held_room_update(t);
}

/* Out of the registry and back to the pool, by its thread (no longer lt_tls.self), zeroed
 * between two holds of the lock, not under it: threads that start and end together queue on
 * it, and a signal storm stretches whatever its holder does (100 threads each starting 10
 * under a 10 us timer yielded 16,000 times on it). Zeroed with busy LT_BUSY_PASS: the thread
 * holds nothing of the tracer's then, and a signal that comes runs its handler at once, where
 * a deferred one cost a flush (three system calls) at the thread's way out. A reader without
 * the lock (the thread dump) may read zeros there as it may read stale data. */
static void thread_delete(lt_thread *t)
{
    int tid = t->info.tid;
    held_release(t);
    lt_spin_lock_as(&registry_lock, tid);
    if (atomic_load_explicit(&bounds_due, memory_order_relaxed) == t) /* main's pthread_exit */
        atomic_store_explicit(&bounds_due, NULL, memory_order_relaxed);
    int give_back = pool.nfree >= THREADS_KEPT;
    if (t->prev)
        t->prev->next = t->next;
    else
        registry = t->next;
    if (t->next)
        t->next->prev = t->prev;
    lt_spin_unlock(&registry_lock);
    lt_busy_set(&lt_tls, LT_BUSY_PASS);
    thread_clear(t, give_back);
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    lt_spin_lock_as(&registry_lock, tid);
    lt_pool_put(&pool, t);
    lt_spin_unlock(&registry_lock);
}

/* The exit key is made by the first registration (the main thread, at load time). */
static void arm_exit_hook(lt_thread *t)
{
    if (!atomic_load(&exit_key_ready)) {
        lt_spin_lock(&registry_lock);
        if (!atomic_load(&exit_key_ready) && pthread_key_create(&exit_key, thread_exit) == 0)
            atomic_store(&exit_key_ready, 1);
        lt_spin_unlock(&registry_lock);
    }
    if (atomic_load(&exit_key_ready))
        pthread_setspecific(exit_key, t);
}

/* sp: the thread is starting (lt_thread_start), on the stack sp is in, whose bounds it reads
 * next (callsite.c: lt_callsite_thread_init); 0 for one that reads none (its walks go). */
static lt_thread *register_thread(int seq, uintptr_t sp)
{
    int tid = lt_platform_tid();
    lt_thread *t = thread_new(tid, sp);
    if (!t) {
        lt_report_degraded("out of memory for a thread's state: its locks are not tracked");
        return NULL;
    }
    t->info.tid = tid;
    t->info.seq = seq >= 0 ? seq : atomic_fetch_add(&next_seq, 1);
    lt_waitfor_detach_claim(t); /* a pthread_detach that came before this registration */
    lt_cancel_claim(t);         /* and a pthread_cancel */
    t->held = t->inline_held;
    t->cap = LT_HELD_INLINE;
    held_room_update(t);
    if (!sp)
        lt_thread_walks_settle(t);
    lt_tls.self = t;
    arm_exit_hook(t);
    return t;
}

/* The slow path of lt_self. */
lt_thread *lt_self_register(void)
{
    return lt_tls.self ? lt_tls.self : register_thread(-1, 0);
}

int lt_thread_next_seq(void)
{
    return atomic_fetch_add(&next_seq, 1);
}

int lt_thread_count(void)
{
    return atomic_load_explicit(&next_seq, memory_order_relaxed);
}

void lt_thread_start(int seq, uintptr_t sp)
{
    if (!lt_tls.self)
        register_thread(seq, sp);
}

/* The calling thread t as a report names it now: its name read from the kernel. */
void lt_thread_info_now(lt_thread *t, lt_thread_info *out)
{
    *out = t->info;
    lt_platform_thread_name(out->name, sizeof out->name);
}

/* The calling thread t with the name it had when first asked: for records made on every
 * wait (reading the name is a system call, and varnish waits a hundred thousand times a
 * minute). A report made while the thread still runs renames it (lt_thread_info_fresh). */
const lt_thread_info *lt_thread_info_kept(lt_thread *t)
{
    if (lt_unlikely(!t->info.name[0]))
        lt_platform_thread_name(t->info.name, sizeof t->info.name);
    return &t->info;
}

/* A kept thread's name as it is now, where its thread still runs (a name set since, by
 * pthread_setname_np, prctl or /proc); as kept otherwise. */
void lt_thread_info_fresh(lt_thread_info *info)
{
    lt_platform_thread_name_of(info->tid, info->name, sizeof info->name);
}

/* Key destructors run in rounds, as long as one of them sets a value again, up to
 * PTHREAD_DESTRUCTOR_ITERATIONS (glibc: 4). Re-arm until the last round, so that the
 * program's own destructors (which may release locks, in any round: one that sets its key
 * again releases in a later one) run first; check what is still held in the last round.
 * Checked in the second round until 2026-12-06, a lock released in the third was an
 * exit-held report. */
static void thread_exit(void *arg)
{
    lt_thread *t = arg;
    if (++t->exit_round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        pthread_setspecific(exit_key, t);
        return;
    }
    lt_cancel_async_end(&lt_tls);
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    lt_waitfor_thread_exit(t);
    lt_on_thread_exit(t);
    lt_stack_released(t); /* its frames have returned: the locks in them are gone */
    lt_order_thread_exit(t);
    lt_tls.self = NULL;
    thread_delete(t);
    lt_busy_set(&lt_tls, LT_BUSY_PASS); /* for good: the thread is leaving */
    lt_sig_thread_exit();
}

/* ---------------------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------------------------
 * The held set: entries in acquisition order in held[0 .. held_end). A small set is dense:
 * removal shifts the newer entries down (locks mostly go last-in first-out, which moves
 * nothing) and lookup scans. A large set (held_end from LT_HELD_INDEX_MIN on) is looked up at
 * its two ends first: released newest first or oldest first, as sets of thousands mostly are,
 * it needs nothing more, and its oldest entry leaves as a hole in front (held_start), so
 * each operation is O(1) without hashing. Only a lookup the ends cannot answer (a lock
 * released out of order, a read request: a write request for a mutex asks its shadow entry
 * first, lt_held_find_lock) makes the thread index the set by address; from then on the
 * index answers lookups and a removal leaves a hole anywhere (addr and lock NULL), until the
 * set is small again. Holes between held entries are compacted away once they outnumber
 * those, so each operation stays O(1) (amortised) with thousands held.
 * ---------------------------------------------------------------------------------------- */

/* After the set's capacity or indexing changed (lt_thread.held_room). The configuration is
 * loaded before the first thread registers. */
static void held_room_update(lt_thread *t)
{
    int plain = !lt_cfg.stats && lt_cfg.stacks == LT_STACKS_LAZY;
    t->held_room = t->held_indexed || !plain ? 0 : t->cap;
}

static size_t index_home(const lt_thread *t, const void *addr)
{
    return lt_page_slot_hash(addr, t->held_index_bits);
}

static size_t index_mask(const lt_thread *t)
{
    return ((size_t)1 << t->held_index_bits) - 1;
}

/* The entry at pos goes in; a held entry with the same address (only ever a stale one) loses
 * its slot to the newer. */
static void index_put(lt_thread *t, uint32_t pos)
{
    const void *addr = t->held[pos].addr;
    size_t i = index_home(t, addr);
    while (t->held_index[i] != 0 && t->held[t->held_index[i] - 1].addr != addr)
        i = (i + 1) & index_mask(t);
    t->held_index[i] = pos + 1;
}

/* The entry at `from` moved to `to`: its slot follows it. A stale entry that lost its slot to
 * a newer one with the same address has none. */
static void index_move(lt_thread *t, uint32_t from, uint32_t to)
{
    for (size_t i = index_home(t, t->held[to].addr); t->held_index[i] != 0;
         i = (i + 1) & index_mask(t))
        if (t->held_index[i] == from + 1) {
            t->held_index[i] = to + 1;
            return;
        }
}

/* Linear probing without tombstones: the entries after the removed slot move back when their
 * home allows it. */
static void index_del(lt_thread *t, uint32_t pos)
{
    size_t mask = index_mask(t), i = index_home(t, t->held[pos].addr);
    while (t->held_index[i] != pos + 1) {
        if (t->held_index[i] == 0)
            return;
        i = (i + 1) & mask;
    }
    for (size_t j = (i + 1) & mask; t->held_index[j] != 0; j = (j + 1) & mask) {
        size_t k = index_home(t, t->held[t->held_index[j] - 1].addr);
        int stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
        if (!stays) {
            t->held_index[i] = t->held_index[j];
            i = j;
        }
    }
    t->held_index[i] = 0;
}

/* Indexes the set, with two slots per entry it has room for (cap): an index emptied and
 * grown when cap needs another size, else the one it has. An index not in use is empty (the
 * set empties it as it stops using it), so building or growing costs the entries, not the
 * index's size (once 25,000 locks were held, its index is large). Grown in place: its pages
 * stay, where a new index each time the set doubled faulted in all its sizes' pages, twice
 * the largest's (128 of groups' page faults). 0 when out of memory: the index is then as it
 * was (mapped without lt_map: scanning still answers, so tracking need not stop). */
static int index_build(lt_thread *t, uint32_t cap)
{
    uint32_t bits = 7;
    while (((size_t)1 << bits) < (size_t)cap * 2)
        bits++;
    if (bits != t->held_index_bits) {
        size_t size = ((size_t)1 << bits) * sizeof(uint32_t);
        size_t old = t->held_index ? ((size_t)1 << t->held_index_bits) * sizeof(uint32_t) : 0;
        uint32_t *x = old ? lt_platform_remap(t->held_index, old, size) : lt_platform_map(size);
        if (!x)
            return 0;
        memset(x, 0, old); /* the entries go in again, at their homes in the larger index */
        t->held_index = x;
        t->held_index_bits = bits;
        t->held_indexed = 0; /* to be filled */
    }
    if (!t->held_indexed)
        for (uint32_t i = t->held_start; i < t->held_end; i++)
            if (t->held[i].lock)
                index_put(t, i);
    t->held_indexed = 1;
    held_room_update(t);
    return 1;
}

static lt_held *index_find(const lt_thread *t, const void *addr)
{
    for (size_t i = index_home(t, addr);; i = (i + 1) & index_mask(t)) {
        uint32_t v = t->held_index[i];
        if (v == 0)
            return NULL;
        if (t->held[v - 1].addr == addr)
            return &t->held[v - 1];
    }
}

/* Asked before each of the tracer's calls into libunwind (platform_linux.c), not where locks
 * are taken: the acquisition's fast path pays nothing, and a set's entries are seldom more
 * than a few. Whose ra is in the unwinder is known only once the tracer has loaded it, so the
 * entries are asked then, not when they were made. A set being replaced (held_moves odd: only
 * a signal handler can find it so) is not read, and counts as holding one. */
int lt_held_unwinder(const lt_thread *t)
{
    if (!t || !t->nheld)
        return 0;
    if (atomic_load_explicit(&t->held_moves, memory_order_relaxed) & 1)
        return 1;
    for (uint32_t i = t->held_end; i-- > t->held_start;)
        if (t->held[i].lock && lt_platform_in_unwinder(t->held[i].ra))
            return 1;
    return 0;
}

/* lt_held_find for a large set that holds locks, none of its ends addr's (lt_held_find_ends):
 * the index, which the calling thread makes now when the set has none. Another thread's set
 * (the wait-for check reads those of blocked threads) is scanned instead: only its thread
 * changes it. */
lt_held *lt_held_find_large(lt_thread *t, const void *addr)
{
    if (!t->held_indexed && (t != lt_tls.self || !index_build(t, t->cap))) {
        for (uint32_t i = t->held_end; i-- > t->held_start;)
            if (t->held[i].addr == addr)
                return &t->held[i];
        return NULL;
    }
    return index_find(t, addr);
}

/* Closes the holes, keeping acquisition order, in time proportional to the entries in use:
 * each moved entry's slot follows it. A set that has become small empties its index and
 * stops using it. */
void lt_held_compact(lt_thread *t)
{
    if (t->held_end != t->nheld) { /* holes */
        uint32_t n = 0;
        for (uint32_t i = t->held_start; i < t->held_end; i++) {
            if (!t->held[i].lock)
                continue;
            if (n != i) {
                t->held[n] = t->held[i];
                if (t->held_indexed)
                    index_move(t, i, n);
            }
            n++;
        }
        t->held_end = n;
        t->held_start = 0;
    }
    if (t->held_indexed && t->held_end < LT_HELD_INDEX_MIN / 2) {
        for (uint32_t i = 0; i < t->held_end; i++)
            index_del(t, i);
        t->held_indexed = 0;
        held_room_update(t);
    }
}

/* Fails only when memory is exhausted, and tracking is then off. Mapped entries move by
 * remapping: a set that grows to thousands copies none of them, nor faults its pages in
 * again (copying made a quarter of a 25,000-lock set's page faults, and its memmove 2 % of
 * the time); copied while a report reads held sets (held_replace_begin). */
static int held_grow(lt_thread *t)
{
    size_t size = (size_t)t->cap * 2 * sizeof(lt_held);
    int large = size >= LT_LARGE_FROM;
    if (large)
        size = lt_large_round(size);
    uint32_t cap = (uint32_t)(size / sizeof(lt_held));
    if (t->held_indexed && !index_build(t, cap))
        return 0;
    lt_held *h, *old = t->held == t->inline_held ? NULL : t->held;
    int alone = held_replace_begin(t);
    if (!old || !alone) {
        if ((h = lt_map(size)) != NULL)
            memcpy(h, t->held, t->held_end * sizeof(lt_held));
    } else if (large) {
        h = lt_remap_large(t->held, t->cap * sizeof(lt_held), size);
    } else {
        h = lt_remap(t->held, t->cap * sizeof(lt_held), size);
    }
    if (!h) {
        held_replace_end(t);
        return 0;
    }
    /* the new half is written entry after entry from now on: faulted in a small page at a
     * time it cost a set of 25,000 locks ~350 page faults, most of its growth's time */
    if (!large) {
        size_t kept = ((size_t)t->cap * sizeof(lt_held)) & ~(size_t)4095;
        lt_platform_populate((char *)h + kept, size - kept);
    }
    size_t old_bytes = (size_t)t->cap * sizeof(lt_held);
    t->held = h;
    t->cap = cap;
    held_replace_end(t);
    if (old && !alone)
        held_retire(old, old_bytes, 0);
    held_room_update(t);
    return 1;
}

/* lt_held_push (lt_internal.h) when the set is indexed or full. */
lt_held *lt_held_push_slow(lt_thread *t, const void *addr, lt_lock *l)
{
    if (lt_unlikely(t->held_end == t->cap)) {
        if (t->held_end - t->nheld > t->nheld)
            lt_held_compact(t);
        if (t->held_end == t->cap && !held_grow(t))
            return NULL;
    }
    uint32_t pos = t->held_end++;
    lt_held *h = &t->held[pos];
    h->addr = addr;
    h->lock = l;
    t->nheld++;
    if (lt_unlikely(t->held_indexed))
        index_put(t, pos);
    return h;
}

/* lt_held_remove (lt_internal.h) from an indexed set, or of an entry neither among the newest
 * two nor a large set's oldest (which leaves a hole in front, inline): a large set's is found
 * through the index, which the set gets now if it has none. */
void lt_held_remove_slow(lt_thread *t, lt_held *h)
{
    uint32_t pos = (uint32_t)(h - t->held);
    t->nheld--;
    if (!t->held_indexed && (t->held_end < LT_HELD_INDEX_MIN || !index_build(t, t->cap))) {
        lt_held *end = &t->held[--t->held_end];
        for (; h < end; h++)
            h[0] = h[1];
        return;
    }
    index_del(t, pos);
    h->addr = NULL;
    h->lock = NULL;
    if (t->nheld == 0) {
        t->held_end = t->held_start = 0;
        t->held_indexed = 0;
        held_room_update(t);
        return;
    }
    while (!t->held[t->held_end - 1].lock)
        t->held_end--;
    while (!t->held[t->held_start].lock)
        t->held_start++;
    if (t->held_end - t->held_start - t->nheld > t->nheld + LT_HELD_INDEX_MIN)
        lt_held_compact(t);
}

/* ---------------------------------------------------------------------------------------- */

/* A thread the fork child did not get, recorded in memory of the tracer's own: the program's
 * malloc may be one whose fork handlers (registered after the tracer's, so run after its child
 * handler) let go of the allocator's locks that its prepare handler took, and a malloc here
 * hung on them (Firefox: mozjemalloc; harm-fork.11). Only fork children allocate from this
 * arena, each while it has one thread, so it needs no lock. */
LT_FORK_PATH lt_gone *lt_gone_forked(const lt_thread_info *info)
{
    static lt_arena forked = LT_ARENA(4096);
    lt_gone *gone = lt_arena_alloc(&forked, sizeof *gone, _Alignof(lt_gone));
    if (gone)
        *gone = (lt_gone){*info, 1};
    return gone;
}

/* Only the forking thread lives on in the child; what the others held stays locked there
 * for good, so those locks become orphans of their (vanished) holders, except process-shared
 * ones, which the holders release in the parent. */
LT_FORK_PATH static void fork_child(void)
{
    lt_thread *self = lt_tls.self;
    if (atomic_load_explicit(&held_readers, memory_order_relaxed)) /* a reader not forked */
        atomic_store_explicit(&held_readers, 0, memory_order_relaxed);
    if (self) /* the child's only thread leads it: its id is the process's (and libc's getpid
                 is beside fork's code, where gettid was a page fault in every child) */
        self->info.tid = getpid();
    /* A cancellation of it another thread was sending (marked, not yet sent: cancel.c) will
     * never be sent here: its joins and condition waits waited for it for good
     * (harm-cancel.24). One sent already is the child's as libc's copy of the thread has it. */
    if (self && atomic_load_explicit(&self->cancelled, memory_order_relaxed) == LT_CANCEL_MARKED)
        atomic_store_explicit(&self->cancelled, LT_CANCEL_NONE, memory_order_relaxed);
    lt_thread *due = atomic_load_explicit(&bounds_due, memory_order_relaxed);
    if (due && due != self) /* the main thread is not the child's: its stack is no one's */
        atomic_store_explicit(&bounds_due, NULL, memory_order_relaxed);
    if (registry == self && (!self || !self->next))
        return; /* none other: the registry is the child's as it is (a write copies a page) */
    for (lt_thread *t = registry; t; t = t->next) {
        if (t == self || t->nheld == 0)
            continue;
        lt_gone *gone = lt_gone_forked(&t->info);
        if (gone)
            lt_orphan_locks(t, gone);
    }
    registry = NULL;
    if (self)
        registry_link(self);
}

LT_FORK_PATH void lt_thread_fork(lt_fork_phase phase)
{
    lt_spin_fork(&registry_lock, phase);
    if (phase == LT_FORK_CHILD)
        fork_child();
}

/* ---------------------------------------------------------------------------------------- */

/* The main thread's stack bounds are read from /proc/self/maps (4 system calls, 3 KiB to
 * parse), which most traced processes, those that never make a lock call, need not: t, the
 * main thread at load, gets them when the tracer is first needed (lt_thread_bounds_settle,
 * before any call is checked), by whichever thread needs it (the main thread's first call
 * may be in a handler on another stack; another thread's may come first). */
void lt_thread_bounds_later(lt_thread *t)
{
    lt_spin_lock(&registry_lock);
    atomic_store_explicit(&bounds_due, t, memory_order_relaxed);
    lt_spin_unlock(&registry_lock);
}

/* The bounds are read outside the lock and written under it, where the thread cannot have
 * left (thread_delete forgets it first), lo before hi: a dump that reads them meanwhile
 * without the lock finds hi 0, an empty stack. */
void lt_thread_bounds_settle(void)
{
    uintptr_t lo, hi;
    if (!atomic_load_explicit(&bounds_due, memory_order_acquire))
        return;
    int known = lt_platform_main_stack(&lo, &hi) == 0;
    lt_spin_lock(&registry_lock);
    lt_thread *t = atomic_exchange_explicit(&bounds_due, NULL, memory_order_relaxed);
    if (t && known) {
        t->stack_lo = lo;
        atomic_signal_fence(memory_order_release);
        t->stack_hi = hi;
    }
    lt_spin_unlock(&registry_lock);
}

/* Calls fn for every live thread under the registry lock: none can leave meanwhile, but they
 * go on running, so fn reads their held sets with lt_held_copy. */
void lt_thread_each(void (*fn)(lt_thread *t, void *arg), void *arg)
{
    lt_spin_lock(&registry_lock);
    for (lt_thread *t = registry; t; t = t->next)
        fn(t, arg);
    lt_spin_unlock(&registry_lock);
}

/* See held_readers. A dump in a signal handler that stopped its own thread in held_grow finds
 * held_moves odd. */
int lt_held_copy(const lt_thread *live, const lt_held *set, uint32_t moves, uint32_t i,
                 uint32_t n, lt_held *to)
{
    lt_thread *t = (lt_thread *)live;
    atomic_fetch_add(&held_readers, 1);
    int ok = !(moves & 1) && atomic_load(&t->held_moves) == moves &&
             *(lt_held *const volatile *)&t->held == set &&
             lt_platform_read(to, set + i, n * sizeof *to) == 0;
    atomic_fetch_sub(&held_readers, 1);
    return ok ? 0 : -1;
}

/* Entries are copied a chunk at a time onto the reader's stack: 16 of 56 bytes keeps the
 * frame small enough for a signal handler's stack and for a dlclose on a small thread stack,
 * and a set of up to 16 costs one copy. */
#define HELD_WALK_CHUNK 16

void lt_held_walk(const lt_thread *live, const lt_held *set, uint32_t moves, uint32_t from,
                  uint32_t end, lt_held_visit *fn, void *arg)
{
    lt_held chunk[HELD_WALK_CHUNK];
    for (uint32_t i = from; i < end; i += HELD_WALK_CHUNK) {
        uint32_t k = end - i < HELD_WALK_CHUNK ? end - i : HELD_WALK_CHUNK;
        if (lt_held_copy(live, set, moves, i, k, chunk) != 0)
            return;
        for (uint32_t j = 0; j < k; j++)
            if (chunk[j].lock && fn(&chunk[j], arg))
                return;
    }
}

/* held_moves first: a set replaced after it is read is then found out by the copy. */
void lt_held_walk_live(const lt_thread *live, lt_held_visit *fn, void *arg)
{
    uint32_t moves = atomic_load(&((lt_thread *)live)->held_moves);
    const lt_held *set = live->held;
    lt_held_walk(live, set, moves, 0, live->held_end, fn, arg);
}

/* The registry's head without the lock, for the thread dump (a signal handler cannot lock). */
lt_thread *lt_thread_first(void)
{
    return registry;
}
