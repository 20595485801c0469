/*
 * interpose.c - the exported pthread entry points and the annotation API; nothing else.
 *
 * Every lock entry point has the same shape: guard (tracer ready, not re-entered) -> event
 * before the call (may veto it) -> the real call -> event with the result. One shared path,
 * acquire_inline(), serves try, timed and blocking forms: it tries first and blocks only when
 * the lock is busy, which is where waits become visible; the pthread entry points take their
 * common case in acquire_fast, and the rest there. The held entry a grant makes is
 * prepared before the try, so that a granted lock costs the program's critical section only
 * the stores that add it. Unlocks are recorded after the real unlock, once libc accepted
 * them; init reports after it (so the lock's attributes can be read), destroy before.
 *
 * Real functions are resolved once, from the load-time constructor or from the first call
 * that comes earlier. A call made by the resolving thread while resolution is under way
 * (dlsym may allocate, an allocator may lock) is answered with success without locking:
 * there is only that one thread then.
 *
 * The unwinder (libunwind, dlopened, with a thread-local block malloc allocates) is readied
 * from the constructor, where the program holds no lock, when an object loaded with the
 * program may call a lock entry point; else at the first call that asks whether the tracer
 * is ready. A process whose objects call none (sh, sed, grep, make: most processes of a
 * build) then never loads it, about half of what the tracer cost each of them at its start.
 * Such a call comes from code loaded later (a plugin, an NSS module) or through a pointer
 * looked up by name, and the unwinder is loaded before the call takes anything, while no
 * thread holds a lock the tracer has seen (none was taken through it yet). (Loaded inside a
 * lock of the program's, by a malloc that takes that lock, or waiting for the dynamic
 * linker's lock held by a thread that waits for that lock, it would hang the process: so a
 * process whose own code may lock, from its allocator or a signal handler too, loads it at
 * start.)
 */
#define _GNU_SOURCE
#ifdef __APPLE__
#include "interpose_macos.h"
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "interpose.h"
#include "lifetime.h"
#include "platform.h"
#include "sigdefer.h"
#include "vmchild.h"

/* macOS has no timed, clock or spin lock functions (and no clock condition wait): there
 * those entry points are compiled out, with the calls that would reach them. */
#ifdef __APPLE__
#define LT_TIMED_LOCKS 0
#define LT_REALS_TIMED(X)
#else
#define LT_TIMED_LOCKS 1
#define LT_REALS_TIMED(X)                                                                  \
    X(pthread_rwlock_timedrdlock, NULL) X(pthread_rwlock_timedwrlock, NULL)                \
    X(pthread_rwlock_clockrdlock, NULL) X(pthread_rwlock_clockwrlock, NULL)                \
    X(pthread_mutex_timedlock, NULL) X(pthread_mutex_clocklock, NULL)                      \
    X(pthread_spin_init, NULL) X(pthread_spin_destroy, NULL) X(pthread_spin_lock, NULL)    \
    X(pthread_spin_trylock, NULL) X(pthread_spin_unlock, NULL)                             \
    X(pthread_cond_clockwait, NULL)
#endif

/* name, symbol version (NULL = default). Condition variables are versioned in glibc. */
#define LT_REALS(X)                                                                        \
    X(pthread_rwlock_init, NULL) X(pthread_rwlock_destroy, NULL)                           \
    X(pthread_rwlock_rdlock, NULL) X(pthread_rwlock_wrlock, NULL)                          \
    X(pthread_rwlock_tryrdlock, NULL) X(pthread_rwlock_trywrlock, NULL)                    \
    X(pthread_rwlock_unlock, NULL)                                                         \
    X(pthread_mutex_init, NULL) X(pthread_mutex_destroy, NULL)                             \
    X(pthread_mutex_lock, NULL) X(pthread_mutex_trylock, NULL)                             \
    X(pthread_mutex_unlock, NULL)                                                          \
    X(pthread_cond_wait, "GLIBC_2.3.2") X(pthread_cond_timedwait, "GLIBC_2.3.2")           \
    X(pthread_cond_signal, "GLIBC_2.3.2") X(pthread_cond_broadcast, "GLIBC_2.3.2")         \
    X(pthread_cond_destroy, "GLIBC_2.3.2")                                                 \
    X(pthread_create, NULL) X(pthread_join, NULL) LT_REALS_TIMED(X)

static struct {
#define X(name, version) __typeof__(&name) name;
    LT_REALS(X)
#undef X
} real LT_START_DATA;

/* glibc 2.34's _Fork, resolved with the others (a signal handler may make the first call). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
#define LT_UNDERSCORE_FORK 1
static _Atomic(void *) real_underscore_fork;
#else
#define LT_UNDERSCORE_FORK 0
#endif

#ifndef __APPLE__
/* The start variables' section (lt_internal.h) begins a page, so that they (under a
 * kilobyte) share one: this file is the library's first, and the assembler's alignment comes
 * before any of the file's variables. */
__asm__(".pushsection lt_start, \"aw\"\n.balign 4096\n.popsection");
#endif

/* Resolution state: NONE -> RESOLVING (by resolver_tid) -> STARTED -> FINISHING (by
 * resolver_tid: the unwinder) -> READY. */
enum { NONE, RESOLVING, STARTED, FINISHING, READY };
static _Atomic int state LT_START_DATA;
static _Atomic int resolver_tid LT_START_DATA;
static _Atomic int constructed LT_START_DATA; /* the tracer's constructor has begun */

static void resolve(void)
{
#define X(name, version) real.name = (__typeof__(&name))lt_platform_real(#name, version);
    LT_REALS(X)
#undef X
#if LT_UNDERSCORE_FORK
    atomic_store(&real_underscore_fork, lt_platform_real("_Fork", NULL));
#endif
#ifndef __APPLE__
    lt_interpose_once_resolve();
#endif
#if LT_C11_THREADS
    lt_interpose_c11_resolve();
#endif
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);
static inline int mem_ready(void);
static int mem_glibc(void);

/* Resolves, reads the configuration, registers the calling thread: 1 once done; 0 inside the
 * resolving thread's own resolution. */
static int start(void)
{
    int expected = NONE;
    if (atomic_compare_exchange_strong(&state, &expected, RESOLVING)) {
        int saved = errno; /* the program's call (or its start) sees errno as libc left it */
        atomic_store(&resolver_tid, lt_platform_tid());
        lt_busy_set(&lt_tls, LT_BUSY_IN);
        resolve();
        /* The allocator too, before a thread can start (through pthread_create, which waits
         * for this): a new thread's first free (its start record) resolved it with dlsym,
         * which waits for the loader's lock, while the main thread, in dlopen with that lock
         * (libunwind's, on its first unwind), freed and waited for the resolution: both hung
         * (tensorlib's tests under LOCKTRACE_CLASSES, 1 run in 5, where a library's
         * constructor started a thread before ours ran). */
        mem_ready();
        /* Where malloc is not glibc's, the unwinder and libdw are loaded (dlopen allocates)
         * only from the tracer's constructor on: a call before it comes from another
         * library's constructor, maybe from inside that allocator holding its own lock
         * (tcmalloc's first malloc, in libstdc++'s constructor, calls pthread_once from its
         * sbrk hook under its spinlock): every program with tcmalloc hung there, /bin/true
         * included (`harm-alloc.1`). Such calls are traced, without stacks. */
        if (!atomic_load(&constructed) && !mem_glibc())
            lt_platform_loads_wait(1);
        lt_config_load();
        lt_dump_install();
        lt_self();
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        atomic_store(&state, STARTED);
        lt_leave(&lt_tls); /* (after STARTED: a handler deferred meanwhile may lock) */
        errno = saved;
        return 1;
    }
    if (expected != RESOLVING)
        return 1;
    if (atomic_load(&resolver_tid) == lt_platform_tid())
        return 0;
    for (unsigned round = 0; atomic_load(&state) == RESOLVING;)
        lt_spin_backoff(&round);
    return 1;
}

/* Readies the unwinder for the calling thread (loading it), and with that the tracer; always
 * 1. Not from inside the tracer (the thread's call then passes through, as its own calls
 * made meanwhile do). Others wait: a fork, a new thread, a check, may need the unwinder. */
static int finish(void)
{
    int expected = STARTED;
    if (lt_outside(&lt_tls) && atomic_compare_exchange_strong(&state, &expected, FINISHING)) {
        int saved = errno; /* loading libunwind leaves its pipe's EAGAIN */
        atomic_store(&resolver_tid, lt_platform_tid());
        lt_enter(&lt_tls);
        lt_thread_bounds_settle();
        lt_platform_thread_init();
        atomic_store(&state, READY);
        lt_leave(&lt_tls); /* (after READY: a handler deferred meanwhile may lock) */
        errno = saved;
        return 1;
    }
    if (expected == FINISHING && atomic_load(&resolver_tid) != lt_platform_tid())
        for (unsigned round = 0; atomic_load(&state) != READY;)
            lt_spin_backoff(&round);
    return 1;
}

/* Returns 1 when the tracer is ready; 0 inside the resolving thread's own resolution. */
static __attribute__((noinline)) int init_slow(void)
{
    return start() && finish();
}

static inline int ready(void)
{
    return lt_likely(atomic_load_explicit(&state, memory_order_acquire) == READY) || init_slow();
}

int lt_interpose_ready(void)
{
    return ready();
}

/* errno stays as it was (0 when main starts). */
__attribute__((constructor)) static void locktrace_load(void)
{
    int saved = errno;
    atomic_store(&constructed, 1);
    lt_platform_loads_wait(0);
    if (start() && lt_enter(&lt_tls)) {
        if (lt_tls.self && lt_platform_main_stack_later()) {
            lt_thread_bounds_later(lt_tls.self);
            if (atomic_load(&state) != STARTED) /* finished meanwhile (or finishing) */
                lt_thread_bounds_settle();
        } else {
            lt_callsite_thread_init(0);
        }
        lt_leave(&lt_tls);
        /* Now, not at the first lock call, where the program links lock calls (its first is
         * near), or where malloc is not glibc's: that allocator may call a lock function while
         * it holds its own lock, and the unwinder's load would then wait for it. A call before
         * this one may have readied the tracer without the unwinder: it is loaded here. */
        if (lt_platform_locks_linked() || !mem_glibc()) {
            finish();
            if (lt_enter(&lt_tls)) {
                lt_platform_thread_init();
                lt_leave(&lt_tls);
            }
        }
    }
    lt_platform_gc_roots(); /* outside the tracer: libgc may take its lock */
    errno = saved;
}

static inline lt_thread *entered_thread(void)
{
    lt_thread *t = lt_self();
    if (lt_unlikely(!t))
        lt_leave(&lt_tls);
    return t;
}

/* enter_thread where the tracer is untracked or the thread not simply outside it. */
static __attribute__((noinline, cold)) lt_thread *enter_thread_busy(void)
{
    if (atomic_load_explicit(&lt_untracked, memory_order_relaxed) || !lt_enter(&lt_tls))
        return NULL;
    return entered_thread();
}

/* Guard: the calling thread when this call is to be checked (the thread is then inside the
 * tracer), else NULL. (One test of both words, as the common case's two were before a busy
 * thread could be let in: LT_BUSY_ASYNC, lt_enter.) */
static inline lt_thread *enter_thread(void)
{
    if (lt_unlikely(atomic_load_explicit(&lt_untracked, memory_order_relaxed) | lt_tls.busy))
        return enter_thread_busy();
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    return entered_thread();
}

static inline int enter(lt_event *ev)
{
    return (ev->self = enter_thread()) != NULL;
}

/* The guard and the tracer's readiness in one question, for unlock's and destroy's common
 * case: the calling thread, now inside the tracer, when it is registered and the call is to
 * be checked; NULL otherwise (not registered yet, inside the tracer already, untracked), for
 * the slow path to ask ready() and enter_thread(). A thread registers only once the tracer
 * has started (its first call asks ready(), or the thread that created it did), so a
 * registered one needs no other question. (Only the unwinder may not be ready then, in a
 * process that has locked nothing through the tracer: a report, the one use it could have
 * in an unlock or a destroy, loads it, as it loads libdw.) (The lock calls ask ready() and enter_thread() as before:
 * there gcc kept two registers less through libc's try, and spilled them, 5 instructions
 * more where ready() is 3.) */
static inline lt_thread *enter_registered(void)
{
    if (lt_unlikely(atomic_load_explicit(&lt_untracked, memory_order_relaxed)) || lt_tls.busy)
        return NULL;
    lt_thread *t = lt_tls.self;
    if (lt_likely(t != NULL))
        lt_busy_set(&lt_tls, LT_BUSY_IN);
    return t;
}

#define CALLER (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa()

/* ------------------------------------------------------------------------------------------
 * The shared acquisition path.
 * ---------------------------------------------------------------------------------------- */
typedef lt_call call;

static inline int real_try(const call *c)
{
    void *l = (void *)c->ev.addr;
    switch (c->ev.kind) {
    case LT_RWLOCK:
        return c->ev.mode == LT_MODE_READ ? real.pthread_rwlock_tryrdlock(l)
                                          : real.pthread_rwlock_trywrlock(l);
#if LT_TIMED_LOCKS
    case LT_SPIN: return real.pthread_spin_trylock(l);
#endif
    default: return real.pthread_mutex_trylock(l);
    }
}

static int real_rwlock_wait(const call *c, void *l)
{
    int rd = c->ev.mode == LT_MODE_READ;
#if LT_TIMED_LOCKS
    if (c->ev.wait != LT_WAIT_BLOCK && c->has_clock)
        return rd ? real.pthread_rwlock_clockrdlock(l, c->clock, c->abstime)
                  : real.pthread_rwlock_clockwrlock(l, c->clock, c->abstime);
    if (c->ev.wait != LT_WAIT_BLOCK)
        return rd ? real.pthread_rwlock_timedrdlock(l, c->abstime)
                  : real.pthread_rwlock_timedwrlock(l, c->abstime);
#endif
    return rd ? real.pthread_rwlock_rdlock(l) : real.pthread_rwlock_wrlock(l);
}

static int real_mutex_wait(const call *c, void *l)
{
#if LT_TIMED_LOCKS
    if (c->ev.wait != LT_WAIT_BLOCK && c->has_clock)
        return real.pthread_mutex_clocklock(l, c->clock, c->abstime);
    if (c->ev.wait != LT_WAIT_BLOCK)
        return real.pthread_mutex_timedlock(l, c->abstime);
#else
    (void)c;
#endif
    return real.pthread_mutex_lock(l);
}

static int real_wait(const call *c)
{
    void *l = (void *)c->ev.addr;
    switch (c->ev.kind) {
    case LT_RWLOCK: return real_rwlock_wait(c, l);
#if LT_TIMED_LOCKS
    case LT_SPIN: return real.pthread_spin_lock(l);
#endif
    default: return real_mutex_wait(c, l);
    }
}

/* A lock wait ended by cancellation (only asynchronous cancellation can end one) takes its
 * wait record down on the way out. */
static void lock_wait_cancelled(void *ev)
{
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    lt_wait_end(ev);
    lt_leave(&lt_tls);
}

/* The lock is busy: publish the wait, block in libc, take the wait down. Out of line: the
 * cleanup handler's setjmp would slow every acquisition down. The handler is pushed before the
 * tracer is left and popped once it is entered again: a thread with asynchronous cancellation
 * on (cancel.c) is cancelled at that leave when a cancellation came while it was inside, and
 * its wait, left published, led the wait-for check's search round a dead thread for good. */
static __attribute__((noinline)) int wait(call *c)
{
    int rc = lt_wait_begin(&c->ev);
    if (rc == 0) {
        pthread_cleanup_push(lock_wait_cancelled, &c->ev);
        lt_leave(&lt_tls);
        rc = real_wait(c);
        lt_enter(&lt_tls);
        pthread_cleanup_pop(0);
    }
    lt_wait_end(&c->ev);
    return rc;
}

/* A request the tracer does not check (the thread is inside it already, or untracked). */
static __attribute__((noinline)) int unchecked(const call *c)
{
    return c->ev.wait == LT_WAIT_TRY ? real_try(c) : real_wait(c);
}

/* After libc's try answered rc, when the held set still has to learn of it (no entry was
 * prepared, or the try did not simply succeed): a busy lock is waited for. */
static __attribute__((noinline)) int acquire_tried(call *c, int rc)
{
    if (rc == ENOTRECOVERABLE && c->ev.wait != LT_WAIT_TRY)
        lt_platform_mutex_untry((void *)c->ev.addr, c->ev.self->info.tid);
    if (rc == EBUSY && c->ev.wait != LT_WAIT_TRY)
        rc = wait(c);
    else if (rc == EBUSY && c->abstime) /* a timed request that cannot sleep (acquire_timed) */
        rc = real_wait(c);
    lt_after_lock(&c->ev, rc);
    lt_leave(&lt_tls);
    return rc;
}

/* A request that is not the common case (`common`: lt_lock_common said it needs no check
 * before libc, but no entry could be prepared). */
static __attribute__((noinline)) int acquire_unusual(call *c, int common)
{
    if (!c->ev.self)
        return unchecked(c);
    int rc = common ? 0 : lt_before_lock_slow(&c->ev);
    if (rc == 0)
        rc = real_try(c);
    return acquire_tried(c, rc);
}

/* The lock's word, which libc's try reads next, is fetched while the tracer looks up the
 * lock's shadow entry: a program going through more locks than the cache holds misses on
 * both, and the two misses then overlap (`stressbench lazy`: the entry's miss was 93 % of
 * rdlock's samples, before libc's own). A prefetch never faults, so a custom lock, whose
 * memory the tracer never reads, is no exception. For a write: libc's try writes the word
 * with a compare-and-swap (glibc's rwlock try reads it first). With the line last written by
 * another core, a prefetch for reading gets a shared copy, which the swap then has to claim
 * again from the other core: two transactions between cores where the program's own rdlock
 * (one atomic add) makes one. GCC emits x86's prefetch for a write (prefetchw; CPUs without
 * it run it as a no-op) for __builtin_prefetch(p, 1) only when told the CPU has it, and
 * otherwise a prefetch for reading, so it is asked for by name. */
static inline __attribute__((always_inline)) void lock_prefetch(const void *addr)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__("prefetchw %0" : : "m"(*(const char *)addr));
#else
    __builtin_prefetch(addr, 1);
#endif
}

/* Every request: the common case with the event in registers (its copy into a call of its
 * own is made only for the other cases). Inline in acquire(), which the entry points' common
 * case (acquire_fast) leaves the rest to, and which the timed and other interfaces' requests
 * take. */
static inline __attribute__((always_inline)) int acquire_inline(const call *proto)
{
    if (!ready())
        return 0;
    lock_prefetch(proto->ev.addr);
    lt_event ev = proto->ev, copy;
    lt_held *spare = NULL;
    int edges = 0;
    int common = enter(&ev) && lt_likely(lt_lock_common(&ev));
    if (lt_likely(common))
        spare = lt_held_prepare(&ev, &edges, &copy);
    if (lt_unlikely(!spare))
        return acquire_unusual(&(call){ev, proto->has_clock, proto->clock, proto->abstime},
                               common);
    if (lt_unlikely(edges)) {
        /* The copy in memory is the event from here, where libc's try failing needs it too:
         * the registers that held ev were spilled around the try otherwise. */
        int rc = real_try(proto);
        if (lt_unlikely(rc != 0))
            return acquire_tried(&(call){copy, proto->has_clock, proto->clock, proto->abstime},
                                 rc);
        lt_after_lock_edges(copy.self, copy.mode, &copy, spare);
        lt_leave(&lt_tls);
        return 0;
    }
    int rc = real_try(proto);
    if (lt_unlikely(rc != 0)) {
        /* read back (the entry's lock; the common case holds none), not kept through the try
         * in registers, which were spilled (lt_held_commit too names the writer so) */
        ev.lock = spare->lock;
        ev.held = NULL;
        return acquire_tried(&(call){ev, proto->has_clock, proto->clock, proto->abstime}, rc);
    }
    lt_held_commit(&ev, spare);
    lt_leave(&lt_tls);
    return 0;
}

static __attribute__((noinline)) int acquire(call *c)
{
    return acquire_inline(c);
}

#if LT_TIMED_LOCKS
static int deadline_invalid(const call *c)
{
    return c->abstime && (c->abstime->tv_nsec < 0 || c->abstime->tv_nsec >= 1000000000L);
}

/* A timed request libc refuses before it looks at the lock goes straight to libc: glibc
 * sleeps only on CLOCK_REALTIME and CLOCK_MONOTONIC, and an rwlock checks its deadline's
 * nanoseconds up front too, where the try acquire makes first would take the lock the call
 * refuses. */
static int refused_up_front(const call *c)
{
    if (c->has_clock && c->clock != CLOCK_REALTIME && c->clock != CLOCK_MONOTONIC)
        return 1;
    return c->ev.kind == LT_RWLOCK && deadline_invalid(c);
}

/* A mutex checks the deadline's nanoseconds only once it has to sleep, so with them out of
 * range the request never waits: it takes a free lock and otherwise returns at once (EINVAL,
 * or EDEADLK for an error-checking mutex its caller holds). It is a try, then, and neither a
 * relock nor a request for a lock another thread holds is a deadlock; libc gives its own
 * answer for a busy lock (acquire_tried). */
static int acquire_timed(call *c)
{
    if (ready() && refused_up_front(c))
        return real_wait(c);
    if (deadline_invalid(c))
        c->ev.wait = LT_WAIT_TRY;
    return acquire(c);
}
#endif

int lt_interpose_acquire(lt_call *c)
{
#if LT_TIMED_LOCKS
    if (c->ev.wait == LT_WAIT_TIMED)
        return acquire_timed(c);
#endif
    return acquire(c);
}

/* Whether a lock the thread holds (h, found by acquire_fast) can be taken again in mode with
 * nothing to check or report: a recursive mutex, and a read of an rwlock held for read that
 * does not prefer writers (where a queued writer cannot stop the read: lt_before_lock_slow
 * asks exactly that). The entry must be current, and held_room not 0 (LOCKTRACE_STATS
 * counts a relock, which the general path does). */
static int relock_silent(const lt_thread *t, const lt_held *h, const void *addr, lt_kind kind,
                         lt_mode mode)
{
    if (h->mode != mode || !t->held_room || !lt_held_current(t, h))
        return 0;
    if (kind == LT_MUTEX)
        return lt_lock_mutex_type(addr, h->lock) == LT_MUTEX_RECURSIVE;
    return kind == LT_RWLOCK && mode == LT_MODE_READ && !lt_lock_prefers_writer(addr, h->lock);
}

/* A lock taken again by the thread that holds it, where that is legal (relock_silent): one
 * more level of its entry once libc counts it, where the general path asked every question
 * of a relock (~470 of the tracer's instructions a relock and its unlock in coturn, whose
 * recursive mutexes are taken again all the time, against ~170 for a first acquisition).
 * The rest goes the general way, and so does a try libc refuses, which changed nothing: a
 * fork child relocking a mutex its parent held (libc's owner is the parent's thread: EBUSY,
 * a report there), a count at its limit (EAGAIN). 1 when it took the lock. */
static __attribute__((noinline)) int relock(lt_thread *t, lt_held *h, const void *addr,
                                            lt_kind kind, lt_mode mode)
{
    if (!relock_silent(t, h, addr, kind, mode))
        return 0;
    void *l = (void *)addr;
    if ((kind == LT_MUTEX ? real.pthread_mutex_trylock(l) : real.pthread_rwlock_tryrdlock(l)) != 0)
        return 0;
    h->depth++;
    return 1;
}

#define CALL(lock, kind, mode, wait, ...)                                                     \
    (&(call){{(const void *)(lock), (kind), (mode), (wait), CALLER, NULL, NULL, NULL, 0, 0, 0},      \
             __VA_ARGS__})

/* acquire_fast's acquisition once its checks passed and the call site's stack is known
 * (site): the entry is filled before the order graph is asked, which then needs no more than
 * the entry. ra is the entry point's call site and cfa its frame, or 0 for the frame of the
 * entry point this is inlined into: read where it is used (a copy of the event after the
 * graph's question, an event after libc's try), so that no register keeps it through those
 * calls; the call site is read back from the entry there. */
static inline __attribute__((always_inline)) int acquire_site(lt_thread *t, const void *addr,
                                                             lt_lock *l, uint32_t site,
                                                             lt_kind kind, lt_mode mode,
                                                             lt_wait wait, uintptr_t ra,
                                                             uintptr_t cfa)
{
    uint32_t pos = t->held_end;
    lt_held *h = &t->held[pos];
    lt_event ev = {addr, kind, mode, wait, ra, cfa, t, l, NULL, 0, LT_API_PTHREAD, site};
    lt_held_fill_site(&ev, h);
    if (pos && (lt_cfg.classes != LT_CLASSES_OFF ||
                !lt_order_known(t, h->lock, mode, wait, &lt_cache_slot_of(t, h->addr)->known))) {
        /* edges to record after the grant: the event again, in memory, from the entry */
        lt_event copy = {h->addr, kind, mode, wait, h->ra,
                         cfa ? cfa : (uintptr_t)__builtin_dwarf_cfa(), t, h->lock, NULL, 0,
                         LT_API_PTHREAD, h->site};
        int rc = real_try(&(call){copy, 0, 0, NULL});
        if (lt_unlikely(rc != 0))
            return acquire_tried(&(call){copy, 0, 0, NULL}, rc);
        lt_after_lock_edges(t, mode, &copy, h);
        lt_leave(&lt_tls);
        return 0;
    }
    int rc = real_try(&(call){{h->addr, kind, mode, wait, 0, 0, NULL, NULL, NULL, 0, 0, 0}, 0, 0,
                              NULL});
    if (lt_unlikely(rc != 0)) {
        lt_event again = {h->addr, kind, mode, wait, h->ra,
                          cfa ? cfa : (uintptr_t)__builtin_dwarf_cfa(), t, h->lock, NULL, 0,
                          LT_API_PTHREAD, 0};
        return acquire_tried(&(call){again, 0, 0, NULL}, rc);
    }
    lt_held_commit(&(lt_event){.self = t, .mode = mode}, h);
    lt_leave(&lt_tls);
    return 0;
}

/* The kind, mode and wait of a request in one argument (acquire_walk's). */
#define HOW(kind, mode, wait) ((unsigned)(kind) | (unsigned)(mode) << 8 | (unsigned)(wait) << 16)

/* acquire_fast's request whose call site no walk of the thread's holds (a new frame, another
 * caller): the walk is made here (lt_stack_site_unheld: as lt_held_prepare would make it,
 * without looking at the walks again) and the acquisition goes on as acquire_fast's; only a
 * stack the depot has no room for goes to acquire(). Where every such request started over
 * there, it asked the general path's questions again and looked at the walks twice more
 * (stunnel, whose connection threads make new walks in most of their acquisitions). Out of
 * line, reached by a tail call: a call in the entry points kept one more register through
 * every acquisition. */
static __attribute__((noinline)) int acquire_walk(lt_thread *t, const void *addr, lt_lock *l,
                                                  unsigned how, uintptr_t ra, uintptr_t cfa)
{
    lt_kind kind = (lt_kind)(how & 0xff);
    lt_mode mode = (lt_mode)(how >> 8 & 0xff);
    lt_wait wait = (lt_wait)(how >> 16);
    uint32_t site = lt_stack_site_unheld(t, ra, cfa);
    if (lt_likely(site))
        return acquire_site(t, addr, l, site, kind, mode, wait, ra, cfa);
    lt_leave(&lt_tls);
    return acquire(&(call){{addr, kind, mode, wait, ra, cfa, NULL, NULL, NULL, 0, 0, 0}, 0, 0,
                           NULL});
}

/* The entry points' acquisition (untimed, pthread's): the common case with nothing live across
 * its calls but the thread and the held entry it fills, so that the entry point saves two
 * registers where the whole path (acquire_inline) saved six and kept the call site in a spilled
 * register through libc's try (~20 instructions an acquisition). Anything else - a lock whose
 * entry is not its home, in the thread's own stack, held by the thread, a large set that
 * needs its index, a held set without room - goes to acquire(), which starts over, before the
 * call changed anything but entering the tracer; a call site whose walk does not hold, to
 * acquire_walk. */
static inline __attribute__((always_inline)) int acquire_fast(const void *addr, lt_kind kind,
                                                             lt_mode mode, lt_wait wait)
{
    if (!ready())
        return 0;
    lock_prefetch(addr);
    lt_thread *t = enter_thread();
    if (lt_unlikely(!t))
        goto general_outside;
    uintptr_t ra = (uintptr_t)__builtin_return_address(0), cfa = (uintptr_t)__builtin_dwarf_cfa();
    lt_lock *l = lt_shadow_home(addr);
    if (lt_unlikely((uintptr_t)addr - t->stack_lo < t->stack_hi - t->stack_lo) ||
        lt_unlikely(atomic_load_explicit(&l->addr, memory_order_acquire) != lt_addr_named(addr)) ||
        lt_unlikely(!lt_lock_plain(l, LT_API_PTHREAD)))
        goto general;
    if (t->nheld) {
        if (t->held_end < LT_HELD_INDEX_MIN) {
            lt_held *held = lt_held_find(t, addr);
            if (held) {
                if (!relock(t, held, addr, kind, mode))
                    goto general;
                lt_leave(&lt_tls);
                return 0;
            }
        } else if (kind == LT_RWLOCK ||
                   atomic_load_explicit(&l->writer, memory_order_relaxed) == t->info.seq + 1 ||
                   atomic_load_explicit(&lt_foreign_unlocks, memory_order_relaxed)) {
            goto general; /* (lt_held_find_lock's shortcut, or the set's index) */
        }
    }
    if (lt_unlikely(t->held_end >= t->held_room))
        goto general;
    const lt_walk *w = lt_callsite_holding(t, ra, cfa);
    uint32_t site = w ? w->stack : 0;
    if (lt_unlikely(!site)) {
        if (!w)
            return acquire_walk(t, addr, l, HOW(kind, mode, wait), ra, cfa);
        goto general; /* (a walk without an id: the general path interns it) */
    }
    return acquire_site(t, addr, l, site, kind, mode, wait, ra, 0);
general:
    lt_leave(&lt_tls);
general_outside:
    return acquire(CALL(addr, kind, mode, wait, 0, 0, NULL));
}

#define ACQUIRE(lock, kind, mode, wait, ...) acquire_fast((const void *)(lock), kind, mode, wait)
#define ACQUIRE_TIMED(lock, kind, mode, ...)                                                  \
    acquire_timed(CALL(lock, kind, mode, LT_WAIT_TIMED, __VA_ARGS__))

/* One event around an init or destroy of another interface (C11): fn from detect.h. */
void lt_interpose_hook(void (*fn)(lt_event *), const void *lock, lt_kind kind, lt_api api,
                       uintptr_t ra, uintptr_t cfa)
{
    lt_event ev = {lock, kind, LT_MODE_NONE, LT_WAIT_TRY, ra, cfa, NULL, NULL, NULL, 0, api, 0};
    if (!ready() || !enter(&ev))
        return;
    fn(&ev);
    lt_leave(&lt_tls);
}

/* destroy: the tracer's part, then libc's call; 0 when the tracer is not ready (nor is libc's
 * function known). A registered thread needs no other question (enter_registered). init and
 * destroy hand the call's fields to detect.h in registers. */
static inline __attribute__((always_inline)) int destroying(const void *lock, lt_kind kind,
                                                            uintptr_t ra, uintptr_t cfa)
{
    lt_thread *t = enter_registered();
    if (lt_unlikely(!t)) {
        if (!ready())
            return 0;
        if ((t = enter_thread()) == NULL)
            return 1;
    }
    lt_destroy_lock(t, lock, kind, LT_API_PTHREAD, ra, cfa);
    lt_leave(&lt_tls);
    return 1;
}

#define DESTROY(real_call, lock, kind)                                                        \
    (destroying((const void *)(lock), (kind), CALLER) ? (real_call) : 0)

static inline int real_unlock(const void *lock, lt_kind kind)
{
    void *l = (void *)lock;
    switch (kind) {
    case LT_RWLOCK: return real.pthread_rwlock_unlock(l);
#if LT_TIMED_LOCKS
    case LT_SPIN: return real.pthread_spin_unlock(l);
#endif
    default: return real.pthread_mutex_unlock(l);
    }
}

/* An unlock of a lock this thread does not hold, or one libc refused: as an event. */
static __attribute__((noinline)) void unlock_unusual(lt_thread *t, int rc, const void *lock,
                                                     lt_kind kind, lt_api api, uintptr_t ra,
                                                     uintptr_t cfa)
{
    lt_event ev = {lock, kind, LT_MODE_NONE, LT_WAIT_TRY, ra, cfa, t, NULL, NULL, 0, api, 0};
    lt_unlock_unusual(&ev, rc);
}

/* The call site (ra, cfa) an unusual unlock reports: the one given, or with ra 0 the caller
 * of the entry point unlock() is inlined into, read there only (taken up front, the pair
 * kept a register and a stack slot through libc's unlock on every call). */
#define UNUSUAL_SITE(ra, cfa)                                                               \
    (ra) ? (ra) : (uintptr_t)__builtin_return_address(0),                                  \
        (ra) ? (cfa) : (uintptr_t)__builtin_dwarf_cfa()

/* Unlock of a lock the held set does not have: a bad unlock, unless libc's lock word names
 * this thread its owner. Then the thread took the lock through a call the tracer does not
 * see - a library loaded with RTLD_DEEPBIND, or a function pointer dlsym found in libc's own
 * handle (Python's ctypes.CDLL("libc.so.6")), calls libc directly - and the unlock is its own,
 * not a finding. Read before libc's unlock, which clears the owner. (ra, cfa) is the call site,
 * as UNUSUAL_SITE gives it. Or the lock's memory is mapped at another address too, where the
 * thread took it: that entry is stale once libc unlocked it here (lt_drop_stale reads the
 * words of what the thread holds), or it would lead false lock orders out of it. */
static __attribute__((noinline)) int unlock_unheld(lt_thread *t, const void *lock, lt_kind kind,
                                                   lt_api api, uintptr_t ra, uintptr_t cfa)
{
    int libc_owner = lt_platform_lock_owned_by(lock, kind, t->info.tid);
    int rc = real_unlock(lock, kind);
    if (!libc_owner || rc != 0)
        unlock_unusual(t, rc, lock, kind, api, ra, cfa);
    else if (t->nheld)
        lt_drop_stale(t);
    lt_leave(&lt_tls);
    return rc;
}

/* unlock (below) of a lock that is not the newest entry of a small set: released out of
 * order, or from a large set. Inline too: called, it cost each of groups' unlocks 28 more
 * instructions; inline, the newest entry's unlock pays 3 (flat-1: 323 -> 326 a pair). */
static inline __attribute__((always_inline)) int unlock_any(lt_thread *t, const void *lock,
                                                            lt_kind kind, lt_api api,
                                                            uintptr_t ra, uintptr_t cfa)
{
    lt_held *h = lt_unlock_begin_oldest(t, lock);
    int oldest = h != NULL;
    if (!oldest && !(h = lt_unlock_begin_any(t, lock)) && !lt_cfg.stats) /* (with stats, */
        return unlock_unheld(t, lock, kind, api, UNUSUAL_SITE(ra, cfa)); /* no entry is found) */
    int rc = real_unlock(lock, kind);
    if (lt_unlikely(oldest ? !lt_unlock_end_oldest(t, h, lock, rc)
                           : !lt_unlock_end_any(t, h, lock, rc)))
        unlock_unusual(t, rc, lock, kind, api, UNUSUAL_SITE(ra, cfa));
    lt_leave(&lt_tls);
    return rc;
}

/* Unlock: libc first, the held set after (lt_unlock_done), so a refused unlock (EPERM:
 * another thread's error-checking or recursive mutex) changes nothing and an accepted one
 * does not wait for the tracer - but for a plain store that says the lock has no writer
 * (lt_unlock_begin), which is cheaper while the lock is still held. The thread enters the
 * tracer before, so that its signal handlers pass through while its held set still names the
 * lock. Inline in the pthread entry points, which name the kind. */
static inline __attribute__((always_inline)) int unlock_entered(lt_thread *t, const void *lock,
                                                                lt_kind kind, lt_api api,
                                                                uintptr_t ra, uintptr_t cfa)
{
    const lt_held *top = lt_unlock_begin(t, lock);
    if (lt_unlikely(!top)) {
        if (t->nheld) /* out of order, or a large set */
            return unlock_any(t, lock, kind, api, ra, cfa);
        return unlock_unheld(t, lock, kind, api, UNUSUAL_SITE(ra, cfa));
    }
    int rc = real_unlock(lock, kind);
    if (lt_unlikely(!lt_unlock_end(t, top, lock, rc)))
        unlock_unusual(t, rc, lock, kind, api, UNUSUAL_SITE(ra, cfa));
    lt_leave(&lt_tls);
    return rc;
}

/* An unlock enter_registered did not let in (see acquire_first); (ra, cfa) is its site. */
static __attribute__((noinline)) int unlock_first(const void *lock, lt_kind kind, lt_api api,
                                                  uintptr_t ra, uintptr_t cfa)
{
    if (!ready())
        return 0;
    lt_thread *t = enter_thread();
    if (!t)
        return real_unlock(lock, kind);
    return unlock_entered(t, lock, kind, api, ra, cfa);
}

static inline __attribute__((always_inline)) int unlock(const void *lock, lt_kind kind,
                                                        lt_api api, uintptr_t ra, uintptr_t cfa)
{
    lt_thread *t = enter_registered();
    if (lt_unlikely(!t))
        return unlock_first(lock, kind, api, UNUSUAL_SITE(ra, cfa));
    return unlock_entered(t, lock, kind, api, ra, cfa);
}

int lt_interpose_unlock(const void *lock, lt_kind kind, lt_api api, uintptr_t ra, uintptr_t cfa)
{
    return unlock(lock, kind, api, ra, cfa);
}

/* After libc refused an unlock that unlock_fast took, of h, the thread's entry for the lock:
 * as lt_unlock_end. (ra, cfa) is the call site. */
static __attribute__((noinline)) int unlock_refused(lt_thread *t, const lt_held *h, lt_kind kind,
                                                    int rc, uintptr_t ra, uintptr_t cfa)
{
    const void *lock = h->addr;
    lt_unlock_refused(t, h);
    if (!lt_unlock_done_slow(t, lock, rc))
        unlock_unusual(t, rc, lock, kind, LT_API_PTHREAD, ra, cfa);
    lt_leave(&lt_tls);
    return rc;
}

/* unlock_entered out of line, for unlock_fast's other cases; (ra, cfa) is the call site. */
static __attribute__((noinline)) int unlock_general(lt_thread *t, const void *lock, lt_kind kind,
                                                    uintptr_t ra, uintptr_t cfa)
{
    return unlock_entered(t, lock, kind, LT_API_PTHREAD, ra, cfa);
}

/* unlock_fast's newest entry held more than once (a recursive mutex's or read's relock): a
 * level less once libc accepted the unlock; anything else as unlock_general. (ra, cfa) is
 * the call site. */
static __attribute__((noinline)) int unlock_level(lt_thread *t, lt_held *h, const void *lock,
                                                  lt_kind kind, uintptr_t ra, uintptr_t cfa)
{
    if (!lt_held_current(t, h))
        return unlock_general(t, lock, kind, ra, cfa);
    int rc = real_unlock(lock, kind);
    if (lt_unlikely(rc != 0))
        return unlock_refused(t, h, kind, rc, ra, cfa);
    h->depth--;
    lt_leave(&lt_tls);
    return 0;
}

/* The entry points' unlock: its common cases - the newest or second newest entry of a small
 * set, the oldest of a large one (lt_unlock_begin_oldest), held once - with nothing live across libc's unlock:
 * the entry is found again after it from the thread (which is inside the tracer, so its set
 * has not changed), where keeping the thread, the lock and the entry through the call saved
 * and restored five registers an unlock. The rest goes to unlock_general, before the call
 * changed anything but entering the tracer. */
static inline __attribute__((always_inline)) int unlock_fast(const void *lock, lt_kind kind)
{
    lt_thread *t = enter_registered();
    if (lt_unlikely(!t))
        return unlock_first(lock, kind, LT_API_PTHREAD, UNUSUAL_SITE(0, 0));
    lt_held *h = lt_held_top(t, lock);
    if (lt_likely(h && h->depth == 1)) {
        if (lt_unlock_clears_writer(h)) /* (lt_unlock_begin, which gave groups 8 instructions
                                           an unlock more, in the branch that follows) */
            atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
        int rc = real_unlock(lock, kind);
        t = lt_tls.self;
        if (lt_unlikely(rc != 0))
            return unlock_refused(t, &t->held[t->held_end - 1], kind, rc, UNUSUAL_SITE(0, 0));
        lt_held_pop(t);
        if (!t->nheld)
            lt_order_idle();
        lt_leave(&lt_tls);
        return 0;
    }
    if (h && h->depth > 1)
        return unlock_level(t, h, lock, kind, UNUSUAL_SITE(0, 0));
    /* A large set's oldest entry before the second newest: a large set is released newest
       first (above) or oldest first (`stressbench groups`: its second-newest question before
       cost each unlock 9 instructions); a small set pays one compare for it. */
    if (t->held_end >= LT_HELD_INDEX_MIN && t->nheld && lt_unlock_begin_oldest(t, lock)) {
        int rc = real_unlock(lock, kind);
        t = lt_tls.self;
        if (lt_unlikely(rc != 0))
            return unlock_refused(t, &t->held[t->held_start], kind, rc, UNUSUAL_SITE(0, 0));
        lt_held_remove_oldest(t, &t->held[t->held_start]);
        lt_leave(&lt_tls);
        return 0;
    }
    if ((h = lt_held_second(t, lock)) != NULL && h->depth == 1) {
        /* (out of line, unlock_general looked at the newest entry again, scanned the set and
           saved and restored registers: 159 instructions such an unlock, 11 % of memcached's) */
        if (lt_unlock_clears_writer(h))
            atomic_store_explicit(&h->lock->writer, 0, memory_order_relaxed);
        int rc = real_unlock(lock, kind);
        t = lt_tls.self;
        if (lt_unlikely(rc != 0))
            return unlock_refused(t, &t->held[t->held_end - 2], kind, rc, UNUSUAL_SITE(0, 0));
        lt_held_remove(t, &t->held[t->held_end - 2]);
        lt_leave(&lt_tls);
        return 0;
    }
    return unlock_general(t, lock, kind, UNUSUAL_SITE(0, 0));
}

#define UNLOCK(lock, kind) unlock_fast((const void *)(lock), (kind))

/* init: a new identity for the address once libc has initialised the lock. The call site is
 * read here, after libc's call (inline in the entry point: its caller's), so that it is not
 * kept through that call. */
static inline __attribute__((always_inline)) int inited(int rc, const void *lock)
{
    lt_thread *t;
    if (rc == 0 && (t = enter_thread()) != NULL) {
        lt_init_lock(t, lock, LT_API_PTHREAD, CALLER);
        lt_leave(&lt_tls);
    }
    return rc;
}

#define INIT(real_call, lock) (ready() ? inited((real_call), (const void *)(lock)) : 0)

/* ------------------------------------------------------------------------------------------
 * Reader-writer locks.
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *attr)
{
    return INIT(real.pthread_rwlock_init(l, attr), l);
}

LT_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *l)
{
    return DESTROY(real.pthread_rwlock_destroy(l), l, LT_RWLOCK);
}

LT_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return ACQUIRE(l, LT_RWLOCK, LT_MODE_READ, LT_WAIT_BLOCK, 0, 0, NULL);
}

LT_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return ACQUIRE(l, LT_RWLOCK, LT_MODE_WRITE, LT_WAIT_BLOCK, 0, 0, NULL);
}

LT_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return ACQUIRE(l, LT_RWLOCK, LT_MODE_READ, LT_WAIT_TRY, 0, 0, NULL);
}

LT_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return ACQUIRE(l, LT_RWLOCK, LT_MODE_WRITE, LT_WAIT_TRY, 0, 0, NULL);
}

#if LT_TIMED_LOCKS
LT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t)
{
    return ACQUIRE_TIMED(l, LT_RWLOCK, LT_MODE_READ, 0, 0, t);
}

LT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t)
{
    return ACQUIRE_TIMED(l, LT_RWLOCK, LT_MODE_WRITE, 0, 0, t);
}

LT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c,
                                         const struct timespec *t)
{
    return ACQUIRE_TIMED(l, LT_RWLOCK, LT_MODE_READ, 1, c, t);
}

LT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c,
                                         const struct timespec *t)
{
    return ACQUIRE_TIMED(l, LT_RWLOCK, LT_MODE_WRITE, 1, c, t);
}
#endif

LT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    return UNLOCK(l, LT_RWLOCK);
}

/* ------------------------------------------------------------------------------------------
 * Mutexes.
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    return INIT(real.pthread_mutex_init(m, attr), m);
}

LT_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
    return DESTROY(real.pthread_mutex_destroy(m), m, LT_MUTEX);
}

LT_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    return ACQUIRE(m, LT_MUTEX, LT_MODE_WRITE, LT_WAIT_BLOCK, 0, 0, NULL);
}

LT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    return ACQUIRE(m, LT_MUTEX, LT_MODE_WRITE, LT_WAIT_TRY, 0, 0, NULL);
}

#if LT_TIMED_LOCKS
LT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
    return ACQUIRE_TIMED(m, LT_MUTEX, LT_MODE_WRITE, 0, 0, t);
}

LT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *t)
{
    return ACQUIRE_TIMED(m, LT_MUTEX, LT_MODE_WRITE, 1, c, t);
}
#endif

LT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    return UNLOCK(m, LT_MUTEX);
}

#if LT_TIMED_LOCKS
/* ------------------------------------------------------------------------------------------
 * Spinlocks.
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
    return INIT(real.pthread_spin_init(s, pshared), s);
}

LT_EXPORT int pthread_spin_destroy(pthread_spinlock_t *s)
{
    return DESTROY(real.pthread_spin_destroy(s), s, LT_SPIN);
}

LT_EXPORT int pthread_spin_lock(pthread_spinlock_t *s)
{
    return ACQUIRE(s, LT_SPIN, LT_MODE_WRITE, LT_WAIT_BLOCK, 0, 0, NULL);
}

LT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *s)
{
    return ACQUIRE(s, LT_SPIN, LT_MODE_WRITE, LT_WAIT_TRY, 0, 0, NULL);
}

LT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *s)
{
    return UNLOCK(s, LT_SPIN);
}
#endif

/* ------------------------------------------------------------------------------------------
 * Condition variables: the mutex leaves the held set for the wait and comes back after; the
 * wait is a waiter of the condition variable meanwhile (cond.c).
 * ---------------------------------------------------------------------------------------- */
typedef struct cond_state {
    call *c;
    lt_held saved;
    int released;
    int arrived;
    int woken;    /* the wait returned 0; not when it is cancelled */
    int returned; /* the wait returned: not cancelled */
    lt_cond_waiter waiter;
} cond_state;

/* The mutex is back in the held set after the wait, also when the wait is cancelled: libc
 * retakes the mutex before the program's cancellation handlers run (and unlock it). */
static void cond_return(void *arg)
{
    cond_state *st = arg;
    if (enter(&st->c->ev)) {
        lt_waitfor_end(&st->c->ev);
        if (st->arrived)
            lt_cond_leave(&st->waiter, st->woken);
        if (st->released)
            lt_cond_reacquire(&st->c->ev, &st->saved, !st->returned);
        lt_leave(&lt_tls);
    }
}

static int real_cond_wait(const call *c, pthread_cond_t *cv)
{
    pthread_mutex_t *m = (pthread_mutex_t *)c->ev.addr;
    if (c->ev.wait == LT_WAIT_BLOCK)
        return real.pthread_cond_wait(cv, m);
#if LT_TIMED_LOCKS
    if (c->has_clock)
        return real.pthread_cond_clockwait(cv, m, c->clock, c->abstime);
#endif
    return real.pthread_cond_timedwait(cv, m, c->abstime);
}

static int cond_wait(call *c, pthread_cond_t *cv)
{
    cond_state st = {.c = c};
    int rc;
    if (!ready())
        return 0;
    lt_cancel_settle(lt_tls.self); /* (outside the tracer) */
    pthread_cleanup_push(cond_return, &st); /* (before the leave, as wait's) */
    if (enter(&c->ev)) {
        st.released = lt_cond_release(&c->ev, cv, &st.saved);
        /* not released: libc refuses the wait (EPERM), which waits for nothing */
        if (st.released) {
            lt_cond_arrive(&c->ev, cv, &st.waiter);
            st.arrived = 1;
            lt_waitfor_cond_begin(&c->ev, cv, &st.waiter);
        }
        lt_leave(&lt_tls);
    }
    rc = real_cond_wait(c, cv);
    st.woken = rc == 0;
    st.returned = 1;
    pthread_cleanup_pop(1);
    return rc;
}

int lt_interpose_cond_wait(lt_call *c, pthread_cond_t *cv)
{
    return cond_wait(c, cv);
}

/* A signal leaves a hint for the wait-for check (who is likely to wake this condvar) and
 * marks the waiters it may wake. */
static void signalled(pthread_cond_t *cv, int all)
{
    lt_event ev = {0};
    if (enter(&ev)) {
        lt_waitfor_signalled(ev.self, cv);
        lt_cond_signalled(cv, all);
        lt_leave(&lt_tls);
    }
}

LT_EXPORT int pthread_cond_signal(pthread_cond_t *cv)
{
    if (!ready())
        return 0;
    signalled(cv, 0);
    return real.pthread_cond_signal(cv);
}

LT_EXPORT int pthread_cond_broadcast(pthread_cond_t *cv)
{
    if (!ready())
        return 0;
    signalled(cv, 1);
    return real.pthread_cond_broadcast(cv);
}

/* A destroy while threads wait: reported, and refused with EBUSY under LOCKTRACE_ACTION=
 * edeadlk (libc would wait for the waiters forever). */
int lt_interpose_cond_destroy(void *cv, lt_api api, uintptr_t ra, uintptr_t cfa)
{
    lt_event ev = {cv, LT_COND, LT_MODE_NONE, LT_WAIT_TRY, ra, cfa, NULL, NULL, NULL, 0, api, 0};
    int refused = 0;
    if (enter(&ev)) {
        refused = lt_cond_destroy(&ev);
        lt_leave(&lt_tls);
    }
    return refused ? EBUSY : 0;
}

LT_EXPORT int pthread_cond_destroy(pthread_cond_t *cv)
{
    if (!ready())
        return 0;
    if (lt_interpose_cond_destroy(cv, LT_API_PTHREAD, CALLER))
        return EBUSY;
    return real.pthread_cond_destroy(cv);
}

LT_EXPORT int pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
    return cond_wait(&(call){{m, LT_MUTEX, LT_MODE_WRITE, LT_WAIT_BLOCK, CALLER, NULL, NULL,
                              NULL, 0, 0, 0}, 0, 0, NULL}, cv);
}

LT_EXPORT int pthread_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m,
                                     const struct timespec *t)
{
    return cond_wait(&(call){{m, LT_MUTEX, LT_MODE_WRITE, LT_WAIT_TIMED, CALLER, NULL, NULL,
                              NULL, 0, 0, 0}, 0, 0, t}, cv);
}

#if LT_TIMED_LOCKS
LT_EXPORT int pthread_cond_clockwait(pthread_cond_t *cv, pthread_mutex_t *m, clockid_t c,
                                     const struct timespec *t)
{
    return cond_wait(&(call){{m, LT_MUTEX, LT_MODE_WRITE, LT_WAIT_TIMED, CALLER, NULL, NULL,
                              NULL, 0, 0, 0}, 1, c, t}, cv);
}
#endif

/* ------------------------------------------------------------------------------------------
 * Threads and processes.
 * ---------------------------------------------------------------------------------------- */
lt_start *lt_interpose_start_new(void *fn, void *arg)
{
    lt_event ev = {0};
    if (!enter(&ev))
        return NULL;
    lt_busy_set(&lt_tls, LT_BUSY_PASS); /* malloc may block on a lock of the program's */
    lt_start *s = malloc(sizeof *s);
    lt_leave(&lt_tls);
    if (s)
        *s = (lt_start){fn, arg, lt_thread_next_seq(), 0};
    return s;
}

lt_start lt_interpose_started(lt_start *p)
{
    lt_start s = *p;
    int saved = errno; /* a new thread's fn starts with errno 0, as without the tracer */
    lt_busy_set(&lt_tls, LT_BUSY_PASS); /* free may block on a lock of the program's */
    free(p);
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    lt_thread_start(s.seq, (uintptr_t)__builtin_frame_address(0));
    if (lt_tls.self && s.detached) /* else a pthread_detach may have marked it already */
        lt_tls.self->detached = 1;
    lt_platform_thread_init();
    lt_callsite_thread_init(1);
    lt_leave(&lt_tls);
    errno = saved;
    return s;
}

static void *thread_start(void *p)
{
    lt_start s = lt_interpose_started(p);
    return ((void *(*)(void *))s.fn)(s.arg);
}

LT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                             void *arg)
{
    if (!ready())
        return EAGAIN;
    lt_start *s = lt_interpose_start_new((void *)fn, arg);
    if (!s)
        return real.pthread_create(th, attr, fn, arg);
    int state;
    s->detached = attr && pthread_attr_getdetachstate(attr, &state) == 0 &&
                  state == PTHREAD_CREATE_DETACHED;
    int rc = real.pthread_create(th, attr, thread_start, s);
    if (rc != 0)
        free(s);
    return rc;
}

/* A cancelled join (pthread_join is a cancellation point) takes its wait record down. */
static void join_cancelled(void *ev)
{
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    lt_waitfor_end(ev);
    lt_leave(&lt_tls);
}

/* A join is a wait like a lock request: it can close a cycle (the joined thread waits for a
 * lock the joiner holds). */
int lt_interpose_join(pthread_t th, int (*join)(pthread_t th, void *arg), void *arg, lt_api api,
                      uintptr_t ra, uintptr_t cfa)
{
    lt_event ev = {0};
    ev.ra = ra;
    ev.cfa = cfa;
    ev.api = api;
    lt_cancel_settle(lt_tls.self); /* (outside the tracer) */
    if (!enter(&ev))
        return join(th, arg);
    int rc = lt_waitfor_join_begin(&ev, (uintptr_t)th);
    if (rc == 0) { /* (pushed before the leave, as wait's) */
        pthread_cleanup_push(join_cancelled, &ev);
        lt_leave(&lt_tls);
        rc = join(th, arg);
        lt_enter(&lt_tls);
        pthread_cleanup_pop(0);
    }
    lt_waitfor_end(&ev);
    lt_leave(&lt_tls);
    return rc;
}

static int real_join(pthread_t th, void *ret)
{
    return real.pthread_join(th, ret);
}

LT_EXPORT int pthread_join(pthread_t th, void **ret)
{
    if (!ready())
        return EINVAL;
    return lt_interpose_join(th, real_join, ret, LT_API_PTHREAD, CALLER);
}

/* Every tracer lock is held across fork(), so the child gets consistent tables. They are
 * taken in spin.h's rank order by the tracer's own atfork prepare handler, registered when
 * the tracer starts: handlers registered later (the program's) run before it, while the
 * tracer still serves other threads, and their parent and child handlers run after the
 * tracer's have let go. From the prepare handler to the end of the parent's or the child's
 * the forking thread is inside the tracer (only libc runs between them): a handler of the
 * program's that parked it there, holding every tracer lock, stopped all the others. Its busy
 * before the fork is kept, under every tracer lock, in fork_busy: 3 bits a fork under way,
 * the innermost lowest (a fork from a signal handler nests in the fork its thread was making).
 * A fork made alone (lt_fork_alone: the process's only thread, outside the tracer) takes no
 * lock and keeps nothing there: its busy, LT_BUSY_FORK, says that it was LT_BUSY_OUT. */
static unsigned long fork_busy;

/* Whether the forking thread is the process's only one: no other registered with the tracer
 * (a thread a raw clone made, which libc does not count, is once it called in: the one that
 * could hold a tracer lock), and none as libc or the kernel count them. */
static int fork_alone_now(void)
{
    lt_thread *self = lt_tls.self;
    return lt_thread_first() == self && (!self || !self->next) && lt_platform_alone();
}

/* The busy the innermost fork found, popped. */
static int fork_busy_pop(void)
{
    if (lt_fork_alone())
        return LT_BUSY_OUT;
    int busy = (int)(fork_busy & 7);
    fork_busy >>= 3;
    return busy;
}

LT_FORK_PATH static void fork_phase(lt_fork_phase phase)
{
    if (phase == LT_FORK_PREPARE) {
        int busy = lt_tls.busy;
        lt_busy_set(&lt_tls, !busy && fork_alone_now() ? LT_BUSY_FORK : LT_BUSY_IN);
        lt_report_fork(phase);
        lt_waitfor_fork(phase);
        lt_order_fork(phase);
        lt_thread_fork(phase);
        lt_shadow_fork(phase);
        lt_lockmap_fork(phase);
        lt_stats_fork(phase);
        lt_stack_fork(phase);
        lt_cond_fork(phase);
        lt_classes_fork(phase);
        lt_platform_fork(phase);
        if (!lt_fork_alone())
            fork_busy = fork_busy << 3 | (unsigned)busy;
    } else {
        lt_vm_fork(phase);
        lt_sig_fork(phase);
        lt_platform_fork(phase);
        lt_classes_fork(phase);
        lt_cond_fork(phase);
        lt_stack_fork(phase);
        lt_stats_fork(phase);
        lt_lockmap_fork(phase);
        lt_shadow_fork(phase);
        lt_thread_fork(phase);
        lt_order_fork(phase);
        lt_waitfor_fork(phase);
        lt_report_fork(phase);
    }
}

LT_FORK_PATH static void fork_prepare(void)
{
    fork_phase(LT_FORK_PREPARE);
}

LT_FORK_PATH static void fork_parent(void)
{
    int busy = fork_busy_pop();
    fork_phase(LT_FORK_PARENT);
    lt_busy_restore(&lt_tls, busy);
}

/* The forking thread's id, as its held locks' words still name it, is the parent's. */
LT_FORK_PATH static void fork_child(void)
{
    lt_thread *self = lt_tls.self;
    int tid_in_parent = self ? self->info.tid : 0;
    int busy = fork_busy_pop();
    fork_phase(LT_FORK_CHILD);
    if (self)
        lt_on_forked(self, tid_in_parent);
    lt_busy_restore(&lt_tls, busy);
}

/* A child the system call makes, past libc's fork (interpose_vfork.c): the atfork handlers'
 * work all the same, or a tracer lock another thread held at the fork stays taken in the
 * child for good (its first new lock order hung). libc's record of the thread's kernel id
 * keeps the parent's there (the kernel writes the child's only where libc's fork asks it to),
 * so the words of the locks the thread took, before the fork and after, name that id: the
 * thread keeps it in the tracer too, and holds what it held (a recursive mutex locked again
 * is counted, not hung). */
LT_FORK_PATH int lt_interpose_fork_unseen_prepare(void)
{
    if (atomic_load(&state) < STARTED) /* no atfork handler yet, nothing to keep either */
        return 0;
    fork_prepare();
    return 1;
}

LT_FORK_PATH void lt_interpose_fork_unseen_parent(void)
{
    fork_parent();
}

LT_FORK_PATH void lt_interpose_fork_unseen_child(void)
{
    lt_thread *self = lt_tls.self;
    int tid = self ? self->info.tid : 0;
    int busy = fork_busy_pop();
    fork_phase(LT_FORK_CHILD);
    if (self)
        self->info.tid = tid;
    lt_busy_restore(&lt_tls, busy);
}

#if LT_UNDERSCORE_FORK
/* glibc's _Fork: a fork without the atfork handlers, which a signal handler may make. The
 * tracer's are not the program's to skip: a tracer lock another thread held at that moment
 * stayed taken in the child, whose first new lock order hung. The kernel gives libc the
 * child's id, as for fork, so the child is fork's. (glibc's fork calls its own _Fork, not
 * this one.) */
LT_EXPORT pid_t _Fork(void)
{
    pid_t (*fork_fn)(void) = (pid_t (*)(void))lt_platform_real_lazy(&real_underscore_fork, "_Fork");
    int saved = errno;
    int traced = lt_interpose_fork_unseen_prepare();
    errno = saved;
    pid_t pid = fork_fn();
    saved = errno;
    if (traced) {
        if (pid == 0)
            fork_child();
        else
            fork_parent();
    }
    errno = saved;
    return pid;
}
#endif

#ifndef __APPLE__
/* ------------------------------------------------------------------------------------------
 * Memory that can hold locks: free, cfree, realloc, reallocarray, munmap, mremap and mmap over
 * existing memory (C++'s operator delete calls free). A lock's identity ends with its memory
 * (lifetime.c), which is told before the memory goes back. These are called before the
 * tracer is ready, from inside dlsym and from the tracer itself: the allocator's functions
 * are resolved on first use, a call the resolving thread makes meanwhile is passed by (free
 * leaks its block, which is rare and small), and nothing is checked while the thread is
 * inside the tracer. A block is looked at only when the lock map says it may hold a known
 * lock.
 *
 * free and realloc are as cheap as can be for the blocks that hold no known lock (nearly
 * all): with glibc's allocator, the block's bound is its chunk header (the word before it,
 * which free reads anyway) and the lock map is read inline, so the check is a few loads
 * before the call to libc, with no TLS, no re-entrancy guard and no malloc_usable_size.
 * ---------------------------------------------------------------------------------------- */
enum { READY_CHUNKS = READY + 1 }; /* ready, and blocks carry glibc's chunk header */

static lt_allocator mem LT_START_DATA;
static _Atomic int mem_state LT_START_DATA; /* NONE -> RESOLVING -> READY or READY_CHUNKS */
static _Atomic int mem_resolver LT_START_DATA;

static __attribute__((noinline)) int mem_resolve(void)
{
    int expected = NONE;
    if (atomic_compare_exchange_strong(&mem_state, &expected, RESOLVING)) {
        atomic_store(&mem_resolver, lt_platform_tid());
        lt_platform_allocator(&mem);
        atomic_store_explicit(&mem_state, mem.glibc_chunks && mem.free ? READY_CHUNKS : READY,
                              memory_order_release);
        return 1;
    }
    if (atomic_load(&mem_resolver) == lt_platform_tid())
        return 0;
    for (unsigned round = 0; atomic_load_explicit(&mem_state, memory_order_acquire) < READY;)
        lt_spin_backoff(&round);
    return 1;
}

static inline int mem_ready(void)
{
    return lt_likely(atomic_load_explicit(&mem_state, memory_order_acquire) >= READY) ||
           mem_resolve();
}

/* Whether malloc is glibc's, as far as the tracer can tell. */
static int mem_glibc(void)
{
    return mem_ready() && atomic_load_explicit(&mem_state, memory_order_acquire) == READY_CHUNKS;
}

/* The size word of glibc block p's chunk, the word before p: its size (bits 0-2 are flags).
 * The block and the next chunk's size word fill [p, p + size) (a mapped chunk ends 16 bytes
 * earlier). */
static inline size_t chunk_size_word(void *p)
{
    return ((const size_t *)p)[-1];
}

/* glibc's bound of block p: where the next chunk's size word starts. */
static inline uintptr_t chunk_end(void *p)
{
    return (uintptr_t)p + (chunk_size_word(p) & ~(size_t)7) - sizeof(size_t);
}

/* Whether p (NULL or a glibc block) is known to hold no lock, answered without a call; 0
 * sends the caller to the slow path, which also resolves the allocator. */
static inline int block_clear(void *p)
{
    return lt_likely(atomic_load_explicit(&mem_state, memory_order_acquire) == READY_CHUNKS) &&
           (!p || lt_likely(lt_lockmap_block_clear((uintptr_t)p, chunk_size_word(p))));
}

/* The end of p's block when it may hold a known lock, else 0. Only then is the allocator
 * asked for the block's exact extent (other allocators: always). */
static inline uintptr_t block_with_locks(void *p)
{
    if (!p || !mem.usable_size)
        return 0;
    uintptr_t bound = mem.glibc_chunks ? chunk_end(p) : (uintptr_t)p + mem.usable_size(p);
    if (!lt_lockmap_maybe((uintptr_t)p, bound) || !lt_lockmap_any((uintptr_t)p, bound))
        return 0;
    return (uintptr_t)p + mem.usable_size(p);
}

static __attribute__((noinline)) void released(uintptr_t lo, uintptr_t hi, lt_release how,
                                               uintptr_t ra)
{
    lt_event ev = {0};
    if (!enter(&ev))
        return;
    lt_memory_released(ev.self, lo, hi, how, ra);
    lt_leave(&lt_tls);
}

static __attribute__((noinline)) void free_slow(void *p, uintptr_t ra)
{
    if (!mem_ready() || !mem.free)
        return;
    uintptr_t end = block_with_locks(p);
    if (end)
        released((uintptr_t)p, end, LT_RELEASE_FREE, ra);
    mem.free(p);
}

LT_EXPORT void free(void *p)
{
    if (block_clear(p))
        mem.free(p);
    else
        free_slow(p, (uintptr_t)__builtin_return_address(0));
}

LT_EXPORT void cfree(void *p)
{
    if (block_clear(p))
        mem.free(p);
    else
        free_slow(p, (uintptr_t)__builtin_return_address(0));
}

/* realloc may move the block or release it (size 0): its locks end either way. */
static __attribute__((noinline)) int realloc_ready(void *p, uintptr_t ra)
{
    if (!mem_ready() || !mem.realloc) {
        errno = ENOMEM;
        return 0;
    }
    uintptr_t end = block_with_locks(p);
    if (end)
        released((uintptr_t)p, end, LT_RELEASE_REALLOC, ra);
    return 1;
}

static __attribute__((noinline)) void *realloc_slow(void *p, size_t size, uintptr_t ra)
{
    return realloc_ready(p, ra) ? mem.realloc(p, size) : NULL;
}

/* The common case is a tail call, as free's is. */
LT_EXPORT void *realloc(void *p, size_t size)
{
    if (block_clear(p))
        return mem.realloc(p, size);
    return realloc_slow(p, size, (uintptr_t)__builtin_return_address(0));
}

LT_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!block_clear(p) && !realloc_ready(p, (uintptr_t)__builtin_return_address(0)))
        return NULL;
    return mem.reallocarray ? mem.reallocarray(p, n, size) : mem.realloc(p, bytes);
}

/* size rounded up to whole pages, as the kernel takes it */
static size_t pages(size_t size)
{
    return (size + mem.page - 1) & ~(mem.page - 1);
}

/* The pages [lo, lo + size) stop being this memory: their locks are forgotten, reporting
 * held ones. lo not on a page: the call will fail. */
static void pages_released(uintptr_t lo, size_t size, uintptr_t ra)
{
    uintptr_t hi = lo + pages(size);
    if (lt_unlikely(!(lo & (mem.page - 1)) && hi > lo && lt_lockmap_any(lo, hi)))
        released(lo, hi, LT_RELEASE_MUNMAP, ra);
}

LT_EXPORT int munmap(void *p, size_t size)
{
    if (!mem_ready())
        return lt_platform_munmap_direct(p, size);
    pages_released((uintptr_t)p, size, (uintptr_t)__builtin_return_address(0));
    return mem.munmap(p, size);
}

/* A mapping that shrinks loses its tail; one that moves (MREMAP_MAYMOVE, _FIXED,
 * _DONTUNMAP) takes its contents to new addresses, where the locks in it are new locks (seen
 * again at their next use), and its locks at the old addresses are gone; MREMAP_FIXED also
 * replaces what was mapped at the target. What goes if the call succeeds is forgotten
 * before it, as munmap does (a call that fails then only costs those locks their history).
 * Whether a growth with MREMAP_MAYMOVE moves is known only after the call: then the old
 * range's locks, if it had any before, are forgotten after it. */
LT_EXPORT void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
    void *target = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        target = va_arg(ap, void *);
        va_end(ap);
    }
    if (!mem_ready())
        return lt_platform_mremap_direct(old, old_size, new_size, flags, target);
    uintptr_t lo = (uintptr_t)old, ra = (uintptr_t)__builtin_return_address(0);
    size_t old_len = pages(old_size), new_len = pages(new_size);
    int moves = (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) != 0;
    if (moves && old_len)
        pages_released(lo, old_len, ra);
    else if (new_len < old_len)
        pages_released(lo + new_len, old_len - new_len, ra);
    if (flags & MREMAP_FIXED)
        pages_released((uintptr_t)target, new_len, ra);
    int had_locks = !moves && new_len > old_len && lo + old_len > lo &&
                    lt_lockmap_any(lo, lo + old_len);
    void *ret = mem.mremap ? mem.mremap(old, old_size, new_size, flags, target)
                           : lt_platform_mremap_direct(old, old_size, new_size, flags, target);
    if (lt_unlikely(had_locks) && ret != MAP_FAILED && ret != old)
        pages_released(lo, old_len, ra);
    return ret;
}

/* A library that dlclose unloads takes the locks in its data with it (a plugin's static
 * mutex): loaded again, often at the same address, its locks are new ones, as after munmap;
 * their old orders would make false inversions with the new ones. ld.so unmaps it with its
 * own munmap, unseen, after all of its destructors, and which objects go (dependencies too,
 * or none while others hold them) is known only after the call. So the locks held as it
 * begins are noted (lifetime.h), and after it, the objects listed before it and missing
 * after it are gone: what their writable segments still hold is forgotten, and a lock still
 * held is reported as munmap reports one (its holder would unlock unmapped memory). Judged
 * there, after everything of the object's own that could release it: its destructors, with
 * a priority or not, and its atexit functions (glibc's __cxa_finalize, which an object
 * built without gcc's crtstuff, or loaded with RTLD_DEEPBIND, never calls through the
 * tracer). At exit nothing is unmapped, and nothing is judged. */

/* The pages of an object's writable segments. */
static void object_pages(const lt_object_data *o, uintptr_t *lo, uintptr_t *hi)
{
    *lo = o->lo & ~(uintptr_t)(mem.page - 1);
    *hi = (o->hi + mem.page - 1) & ~(uintptr_t)(mem.page - 1);
}

/* The objects of before[0 .. n) missing from the loader's list now (listed into now[], room
 * for cap: mapped before the unload, as nothing may be mapped between the unload and
 * lt_unload_hold) have their locks judged. */
static __attribute__((noinline)) void objects_gone(const lt_object_data *before, size_t n,
                                                   lt_object_data *now, size_t cap,
                                                   lt_unloading *u, uintptr_t ra)
{
    lt_event ev = {0};
    if (!enter(&ev))
        return;
    lt_unload_hold(u);
    size_t now_n = lt_platform_objects(now, cap);
    for (size_t i = 0; i < n && now_n <= cap; i++) { /* else no way to tell what went */
        size_t j = 0;
        while (j < now_n && now[j].phdr != before[i].phdr)
            j++;
        uintptr_t lo, hi;
        object_pages(&before[i], &lo, &hi);
        if (j == now_n && lt_lockmap_any(lo, hi))
            lt_memory_unloaded(ev.self, lo, hi, ra, u);
    }
    lt_leave(&lt_tls);
}

/* The held locks of the objects' writable segments, noted (NULL: none held). */
static __attribute__((noinline)) lt_unloading *unload_begin(const lt_object_data *before,
                                                           size_t n)
{
    lt_event ev = {0};
    lt_unloading *u = NULL;
    if (enter(&ev)) {
        u = lt_unload_begin(before, n);
        lt_leave(&lt_tls);
    }
    return u;
}

LT_EXPORT int dlclose(void *handle)
{
    if (!mem_ready() || !mem.dlclose || !ready()) {
        int (*real)(void *) = (int (*)(void *))lt_platform_real("dlclose", NULL);
        return real ? real(handle) : -1;
    }
    size_t cap = 0, n = lt_platform_objects(NULL, 0);
    lt_object_data *before = NULL; /* then room for the list after: cap each */
    lt_unloading *u = NULL;
    if (n) {
        cap = n + 64;
        before = lt_map(2 * cap * sizeof *before);
        if (before && (n = lt_platform_objects(before, cap)) > cap)
            n = 0; /* more loaded meanwhile than room: none is looked for */
        if (before && n)
            u = unload_begin(before, n);
    }
    int rc = mem.dlclose(handle);
    if (before) {
        if (rc == 0 && n)
            objects_gone(before, n, before + cap, cap, u, (uintptr_t)__builtin_return_address(0));
        lt_platform_unmap(before, 2 * cap * sizeof *before);
    }
    lt_unload_end(u);
    return rc;
}
#endif

/* ------------------------------------------------------------------------------------------
 * Annotations (locktrace.h).
 * ---------------------------------------------------------------------------------------- */
LT_EXPORT void locktrace_annotate_lock_impl(const void *lock, const void *object,
                                            locktrace_describe_fn describe)
{
    lt_event ev = {lock, LT_MUTEX, LT_MODE_NONE, LT_WAIT_TRY, CALLER, NULL, NULL, NULL, 0, 0, 0};
    if (!ready() || !enter(&ev))
        return;
    lt_on_annotate(&ev, object, describe);
    lt_leave(&lt_tls);
}

LT_EXPORT void locktrace_annotate_class_impl(const void *lock, const char *name)
{
    lt_event ev = {lock, LT_MUTEX, LT_MODE_NONE, LT_WAIT_TRY, CALLER, NULL, NULL, NULL, 0, 0, 0};
    if (!ready() || !enter(&ev))
        return;
    lt_classes_annotate(&ev, name);
    lt_leave(&lt_tls);
}

LT_EXPORT void locktrace_annotate_nesting_impl(const void *lock, unsigned order)
{
    lt_event ev = {lock, LT_MUTEX, LT_MODE_NONE, LT_WAIT_TRY, CALLER, NULL, NULL, NULL, 0, 0, 0};
    if (!ready() || !enter(&ev))
        return;
    lt_classes_nesting(&ev, order);
    lt_leave(&lt_tls);
}

LT_EXPORT void locktrace_memory_recycled_impl(const void *addr, size_t size)
{
    uintptr_t lo = (uintptr_t)addr, hi = lo + size;
    lt_event ev = {addr, LT_MUTEX, LT_MODE_NONE, LT_WAIT_TRY, CALLER, NULL, NULL, NULL, 0, 0, 0};
    if (hi <= lo || !ready() || !lt_lockmap_any(lo, hi) || !enter(&ev))
        return;
    lt_memory_released(ev.self, lo, hi, LT_RELEASE_RECYCLED, ev.ra);
    lt_leave(&lt_tls);
}

LT_EXPORT int locktrace_active_impl(void)
{
    return 1;
}
