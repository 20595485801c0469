/*
 * platform.h - the OS primitives the tracer needs, one contract each. platform_linux.c
 * implements them for Linux/glibc (but for three reads of glibc's mutex word, inline below);
 * a platform_macos.c provides the same set. No other file calls dlsym, unwinds, reads lock
 * internals or writes to a descriptor directly.
 */
#ifndef LT_PLATFORM_H
#define LT_PLATFORM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lt_types.h"
#include "spin.h"

/* The next definition of `name` after the tracer (RTLD_NEXT), of symbol version `version`
 * when not NULL; NULL when there is none. May allocate: call with the re-entrancy flag set. */
void *lt_platform_real(const char *name, const char *version);

/* lt_platform_real(name, NULL), resolved at the first call and kept in *slot: for functions a
 * library's constructor may call before the tracer's own resolution ran, and for those not
 * worth a lookup at every process start. Resolved twice at worst, by two first calls at once,
 * to the same function. */
static inline void *lt_platform_real_lazy(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (!fn) {
        fn = lt_platform_real(name, NULL);
        atomic_store(slot, fn);
    }
    return fn;
}

/* While wait is set the unwinder and the symbolizer are not loaded (dlopen allocates): what
 * needs them goes without (no stack, no names). */
void lt_platform_loads_wait(int wait);

/* Kernel id of the calling thread. */
int lt_platform_tid(void);

/* Writes all of buf to fd, retrying on EINTR and short writes. Never allocates. 0 when all
 * of it was written, else -1 with errno set (ENOSPC...). */
int lt_platform_write(int fd, const char *buf, size_t len);

/* The tracer's text to stderr: as lt_platform_write_err(...), but on a pipe or socket it
 * raises no SIGPIPE and gives up on a reader that takes nothing for seconds. */
int lt_platform_write_err(const char *buf, size_t len);

/* Nonzero in a setuid/setgid (secure-execution) process: the environment is not to be
 * trusted with file names. */
int lt_platform_secure(void);

/* Calls a sandbox's seccomp filter may refuse: Firefox's content processes trap and log each
 * (a line "Sandbox: seccomp sandbox violation" on stderr), then make it fail. Once one is
 * refused in a process, the tracer does without it there (lt_platform_refused). */
typedef enum lt_refusable {
    LT_REFUSED_NAME,     /* prctl(PR_GET_NAME): the thread is named "?" */
    LT_REFUSED_POPULATE, /* madvise(MADV_POPULATE_WRITE): pages are faulted in when touched */
    LT_REFUSED_REMAP,    /* mremap: a mapping grows by a new one and a copy */
    LT_REFUSED_KILLABLE, /* calls a filter may kill the process for (process_vm_readv,
                          * membarrier, mremap, the timers', the fork's /proc read): none
                          * once a filter was seen (lt_platform_filtered) */
    LT_REFUSABLE
} lt_refusable;
/* Whether `call` was refused in this process (by lt_platform_refuse). By process id: a child
 * that shares the memory (vfork, a raw clone) may have installed a filter of its own; a fork
 * child whose parent was refused asks once again. A system call only once something was
 * refused in some process. Async-signal-safe; errno kept. */
int lt_platform_refused(lt_refusable call);
void lt_platform_refuse(lt_refusable call);
/* Whether errno, set by a failed call, says a filter refused it rather than the call failing
 * on its own: any error but ENOMEM, EAGAIN and EINTR (a filter's is its own choice: EPERM,
 * ENOSYS, EACCES...). */
int lt_platform_refusal(int err);

/* Name of the calling thread (NUL-terminated, truncated to size). */
void lt_platform_thread_name(char *buf, size_t size);
/* The name of thread tid of this process now (a system call or a file read: for reports);
 * -1, buf untouched, when it cannot be read (the thread has exited). Async-signal-safe. */
int lt_platform_thread_name_of(int tid, char *buf, size_t size);
/* Whether thread tid of this process has a signal pending that it neither blocks nor
 * ignores (its own, or one sent to the process): a handler will run in it. 0 when unknown. */
int lt_platform_signal_coming(int tid);
/* Whether thread tid of this process sleeps in a futex call, where glibc's locks, joins and
 * condition waits block: 1 when it sleeps there, with the futex word (the call's first
 * argument) in *word; 0 when it runs, is in another call or waits on a word of the tracer's
 * own; -1 when that cannot be told. */
int lt_platform_futex_word(int tid, uintptr_t *word);
/* What thread tid of this process does now, for a long-wait holder that waits for no lock:
 * "running", or "the system call read on fd 3 (pipe:[41])" (the file named for calls on a
 * descriptor); "" when it cannot be told (a seccomp filter, no /proc, macOS). */
void lt_platform_thread_doing(int tid, char *buf, size_t size);
/* Whether every thread of this process but the n in skip sleeps in a futex wait on its own
 * memory (not shared with another process) without a deadline (glibc's untimed lock, join
 * and condition waits), which only a thread of this process can end: nonzero then, a
 * fingerprint of those waits (equal for the same threads asleep at the same places). 0 when
 * one runs, sleeps elsewhere (I/O, a timer, a signal wait) or with a deadline, or when a
 * timer of the process, or a child process's exit, will send a signal the program handles,
 * whose handler may end a wait. Where the threads cannot be looked at, 1: nothing says the rest of the process may
 * still run. */
uint64_t lt_platform_others_stuck(const int *skip, size_t n);


/* For a mutex libc refuses to lock or unlock because its word marks it invalid: 1 when the
 * word is as pthread_mutex_destroy leaves it and no init made a mutex again, 2 when it is
 * marked invalid but no destroy left it so (never initialised, overwritten); 0 otherwise or
 * when it cannot be told. */
int lt_platform_mutex_destroyed(const void *mutex);

/* Type of a mutex read from the lock itself, so static initialisers count: lt_mutex_type. */
/* Nonzero for a robust mutex: its owner's death makes lock return EOWNERDEAD, not hang. */
/* Nonzero when libc's pthread_mutex_destroy will refuse the mutex (EBUSY) and leave it as it
 * is, locked; 0 when it will destroy it or that cannot be told. */
#ifdef __APPLE__
int lt_platform_mutex_type(const void *mutex);
int lt_platform_mutex_robust(const void *mutex);
int lt_platform_mutex_destroy_refused(const void *mutex);
#else
/* glibc's mutex word, read inline: the order graph asks a mutex's type at its first edge and
 * every destroy asks whether libc will refuse it, and their calls into platform_linux.c were
 * 23 of the ~790 instructions the tracer adds to a lock's lifecycle in `stressbench groups`
 * (the rest of what glibc's words say stays there). */
static inline int lt_platform_mutex_type(const void *mutex)
{
    switch (((const pthread_mutex_t *)mutex)->__data.__kind & 3) { /* adaptive: normal */
    case PTHREAD_MUTEX_RECURSIVE_NP: return LT_MUTEX_RECURSIVE;
    case PTHREAD_MUTEX_ERRORCHECK_NP: return LT_MUTEX_ERRORCHECK;
    default: return LT_MUTEX_NORMAL;
    }
}

/* glibc's private PTHREAD_MUTEX_ROBUST_NORMAL_NP bit in __kind (nptl/pthreadP.h). */
enum { LT_GLIBC_MUTEX_ROBUST_BIT = 16 };

static inline int lt_platform_mutex_robust(const void *mutex)
{
    return (((const pthread_mutex_t *)mutex)->__data.__kind & LT_GLIBC_MUTEX_ROBUST_BIT) != 0;
}

/* glibc's destroy (nptl/pthread_mutex_destroy.c) refuses a mutex that is not robust while
 * __nusers counts a holder, before it marks anything. */
static inline int lt_platform_mutex_destroy_refused(const void *mutex)
{
    return !lt_platform_mutex_robust(mutex) &&
           ((const pthread_mutex_t *)mutex)->__data.__nusers != 0;
}
#endif

/* Whether libc counts a thread in a wait on condition variable cv (its destroy would wait
 * for it): 0 when none is, 1 when one is or that cannot be told. */
int lt_platform_cond_waited(const void *cv);

/* Whether condition variable cv is process-shared (a thread of another process may signal
 * it); 0 when that cannot be told. */
int lt_platform_cond_shared(const void *cv);

/* Linux: the threads libc counts as waiting on barrier b in a round not complete (its
 * destroy would wait for them forever); 0 when none or when the word says nothing sure. */
unsigned lt_platform_barrier_blocked(const void *b);

/* After a trylock by thread tid returned ENOTRECOVERABLE: gives the mutex back if that try
 * left it locked by tid (glibc does so for a robust mutex; its lock calls do not). */
void lt_platform_mutex_untry(void *mutex, int tid);

/* Nonzero for a mutex or rwlock (kind lt_kind) made process-shared
 * (PTHREAD_PROCESS_SHARED), read from the lock word at `lock` (a copy will do): other
 * processes may hold and release it. */
int lt_platform_lock_pshared(const void *lock, int kind);

/* Nonzero when addr is in a mapping shared with other processes (MAP_SHARED, a fork child's
 * parent among them), from /proc/self/maps: for a spinlock, whose word has no process-shared
 * mark, and a process-shared mutex or rwlock, whose mark does not say where it lives. Never
 * allocates. */
int lt_platform_shared_memory(const void *addr);

/* Nonzero when the rwlock makes readers queue behind waiting writers (glibc:
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), read from the lock itself. */
int lt_platform_rwlock_prefers_writer(const void *rwlock);

/* What the lock word says: 0 when it shows that the thread with kernel id `tid` (0: any
 * thread) does not hold the lock (kind lt_kind) in `mode` (lt_mode), 1 when it does or when
 * the word cannot tell. A spinlock word and a read hold have no owner: only "unlocked"
 * contradicts. */
int lt_platform_lock_held(const void *lock, int kind, int mode, int tid);

/* Nonzero only when the lock word names the thread with kernel id `tid` as the lock's owner
 * (a mutex's owner, an rwlock's writer); 0 when it names another or none, or cannot name one
 * (a spinlock, a read hold, a word the platform keeps private). */
int lt_platform_lock_owned_by(const void *lock, int kind, int tid);

/* Nonzero when the rwlock word (a copy will do) shows that its writer still holds it after
 * an unlock by another thread that libc accepted (glibc makes that a read unlock); 0 where
 * the word cannot tell. */
int lt_platform_rwlock_writer_kept(const void *rwlock);

/* Nonzero when the lock word shows a writer queued on a writer-preferring rwlock that holds
 * readers, i.e. a read request would block now. 1 where the word cannot tell. */
int lt_platform_rwlock_writer_queued(const void *rwlock);

/* Nonzero when the rwlock word shows readers holding it (whichever threads they are); 0 when
 * it shows none, or cannot tell. */
int lt_platform_rwlock_read_held(const void *rwlock);

/* Zeroed, page-aligned memory outside malloc; NULL on failure. Freed with lt_platform_unmap. */
void *lt_platform_map(size_t size);
void lt_platform_unmap(void *p, size_t size);
/* Like lt_platform_map, but address space only: pages become memory when first written
 * (MAP_NORESERVE), so a large sparse table costs what it uses. */
void *lt_platform_reserve(size_t size);
/* The pages of [p, p + size) (page-aligned, from lt_platform_map) given back to the system,
 * the range still mapped: it reads as zeros from then on, for readers that may still be in it
 * without a lock. */
void lt_platform_discard(void *p, size_t size);
/* The mapping p of old bytes (from lt_platform_map) grown to size bytes, contents kept, the
 * new part zeroed; NULL on failure, p then untouched. Linux moves the pages (mremap): no copy,
 * and the pages already written are not faulted in again. */
void *lt_platform_remap(void *p, size_t old, size_t size);
/* Asks for large pages under the mapping [p, p + size) where the system has them (Linux:
 * transparent huge pages): for large tables read at random, one TLB entry and one page fault
 * per 2 MB instead of per 4 KB. A hint; nothing changes where it is not taken. */
void lt_platform_map_huge(void *p, size_t size);
/* Large pages under [p, p + size) (whole large pages, mapped) from now on, where the system
 * has them: advised as lt_platform_map_huge, and those of its large pages that have small
 * ones already made one now (Linux 6.1: MADV_COLLAPSE copies them), so that writing the rest
 * costs no fault a 4 KB page. For a structure that has just grown large. A hint. */
void lt_platform_collapse(void *p, size_t size);
/* lt_platform_map and lt_platform_remap of mappings aligned to align (a power of two, a
 * multiple of the page size): large pages can then lie under all of them. */
void *lt_platform_map_aligned(size_t size, size_t align);
void *lt_platform_remap_aligned(void *p, size_t old, size_t size, size_t align);
/* The mapping p of old bytes moved to q, a fresh mapping of size bytes, by a copy, and p given
 * back; returns q (NULL when q is). Where the pages cannot be moved (no mremap, or one a
 * sandbox refuses). */
void *lt_platform_copy_over(void *p, size_t old, void *q, size_t size);
/* Makes [p, p + size) (page-aligned, mapped) memory now, in one call, where the system can
 * (Linux 5.14: MADV_POPULATE_WRITE): for memory about to be written page after page, a page
 * fault each costs more than the call's work for all of them. Pages that are memory already
 * stay as they are. A hint. */
void lt_platform_populate(void *p, size_t size);

/* Sleeps about us microseconds (less when a signal comes), letting every other thread of any
 * priority run; not a cancellation point (a thread waiting for a tracer lock must not be
 * unwound there). */
void lt_platform_nap(unsigned us);
/* Sleeps while *word holds value, about us microseconds at most, until lt_platform_wake_one
 * wakes it (or a signal comes); not a cancellation point. A timed wait, so that it never
 * reads as the untimed futex wait of a stalled thread (lt_platform_others_stuck). Where there is no
 * futex (macOS) a nap of at most a millisecond, and lt_platform_wake_one does nothing. */
void lt_platform_sleep_on(_Atomic int *word, int value, unsigned us);
/* Wakes one thread asleep in lt_platform_sleep_on(word, ...). */
void lt_platform_wake_one(_Atomic int *word);

/* A pause in a busy wait: the CPU told so (less power, the other hyperthread runs). */
static inline void lt_platform_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The allocator behind free() (the next definitions after the tracer), for the entry points
 * that release memory. usable_size is NULL when the allocator that defines free does not
 * define it too (a foreign one would misread its blocks); glibc_chunks says blocks carry
 * glibc's chunk header (the block's size in the word before it): free and the program's
 * malloc are both glibc's. munmap is never NULL;
 * page is the page size. */
typedef struct lt_allocator {
    void (*free)(void *);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t); /* NULL when libc has none */
    size_t (*usable_size)(void *);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...); /* NULL when libc has none */
    int (*dlclose)(void *);
    size_t page;
    int glibc_chunks;
} lt_allocator;
void lt_platform_allocator(lt_allocator *out);

/* A loaded object (told by its program headers' address, its load address being 0 for a
 * non-PIE program) and the span of its writable segments, where its static locks are. */
typedef struct lt_object_data {
    const void *phdr;
    uintptr_t lo, hi;
    int program; /* the executable, which is never unloaded */
} lt_object_data;
/* The loaded objects with writable segments: the first max of them into out; returns how
 * many there are. */
size_t lt_platform_objects(lt_object_data *out, size_t max);

/* Tells a conservative garbage collector loaded with the program (libgc) that the tracer's
 * writable segments hold no reference to its heap: not roots to read at each collection. */
void lt_platform_gc_roots(void);

/* munmap and mremap without going through any interposed definition (while those are
 * resolved); target is mremap's new address (MREMAP_FIXED). */
int lt_platform_munmap_direct(void *p, size_t size);
void *lt_platform_mremap_direct(void *old, size_t old_size, size_t new_size, int flags,
                                void *target);

/* One frame of the current stack: instruction pointer and stack pointer in that frame. */
typedef struct lt_frame {
    uintptr_t ip, sp;
} lt_frame;

/* Unwinds the calling thread, innermost first, at most max frames; returns the count. None
 * while the thread holds a lock the unwinder took (lt_held_unwinder): this one, the backtrace,
 * proc_start and unwind_info below then answer as for an address they know nothing of. */
size_t lt_platform_unwind(lt_frame *frames, size_t max);

/* Where a fork() is, for the unwinder's own locks (a thread inside the unwinder at the fork
 * would leave them held in the child): called by the forking thread last in the prepare
 * phase, when it holds every tracer lock, and first in the parent and in the child. */
void lt_platform_fork(lt_fork_phase phase);

/* Whether the calling thread is the process's only one, as the kernel counts them (0 when
 * that cannot be known: then there may be others, as under a seccomp filter). */
int lt_platform_alone(void);

/* Asymmetric fences (order.c's gate): lt_platform_barrier_ready() readies the process for
 * lt_platform_barrier_all() and says whether it can (0: no); lt_platform_barrier_all() then
 * makes every thread of the process run a full memory barrier before it returns (0; -1 when
 * it cannot, as under a seccomp filter installed since), so a thread may pair a plain store
 * and a later load with it instead of a locked instruction of its own. */
int lt_platform_barrier_ready(void);
int lt_platform_barrier_all(void);

/* Prepares the calling thread for later unwinding (loading the unwinder first if it is not
 * yet). Called at load and when a thread starts, where the thread holds none of the
 * program's locks, and in a process that did not load it at start, at its first call, before
 * that call takes anything (interpose.c). */
void lt_platform_thread_init(void);

/* Whether an object loaded now may call one of the tracer's lock entry points (any export
 * but those a process that takes no lock calls: free, sigaction, _exit...); 1 when that
 * cannot be told. */
int lt_platform_locks_linked(void);

/* The calling thread's stack: [*lo, *hi). 0, or -1 when unknown. made: the thread is one
 * pthread_create made (not the process's first), its stack one the thread library gave it.
 * Called where the thread holds none of the program's locks (it may allocate). */
int lt_platform_stack_bounds(int made, uintptr_t *lo, uintptr_t *hi);

/* Whether the calling thread is the process's main thread, on its stack, whose bounds are
 * costly to read (Linux: /proc/self/maps, 4 system calls and a parse at the start of every
 * traced process, most of which never take a lock): lt_platform_main_stack reads them when
 * the tracer is first needed. 0 where they are cheap: lt_platform_stack_bounds at once. */
int lt_platform_main_stack_later(void);

/* The main thread's stack [*lo, *hi), asked from any thread; 0, or -1 when unknown. */
int lt_platform_main_stack(uintptr_t *lo, uintptr_t *hi);

/* The lowest address of the stack [lo, hi) a thread's bounds name, as it is now: lo, but for
 * a main thread's stack whose lo was only where it could grow to (Linux: RLIMIT_STACK's reach,
 * down to the mapping below it when read), the start of its mapping now: under `ulimit -s
 * unlimited` the brk heap lies below the stack with nothing mapped between, and grows into
 * that reach. Reads /proc/self/maps for such a stack: for reports and a thread's exit, never
 * on a lock path. */
uintptr_t lt_platform_stack_low(uintptr_t lo, uintptr_t hi);

/* 1, with its lowest address in *lo, when sp is in the calling thread's alternate signal
 * stack (sigaltstack) and the thread runs on it; 0 otherwise. A system call: no lock. */
int lt_platform_altstack_base(uintptr_t sp, uintptr_t *lo);

/* Runs fn(arg) on the stack [stack, stack + size) and returns when fn does:
 * 0; -1 when this platform cannot switch stacks (fn has not run). One call at a time: the
 * contexts are static (callers hold a lock). */
int lt_platform_on_stack(void (*fn)(void *), void *arg, void *stack, size_t size);

/* Return addresses only, innermost first; faster than lt_platform_unwind. */
size_t lt_platform_backtrace(uintptr_t *ips, size_t max);

/* Start address of the function containing ip, 0 when unknown. */
uintptr_t lt_platform_proc_start(uintptr_t ip);

/* Whether the unwinder has unwind information for the code at ip (a return address: the call
 * before it is looked up): 1, 0 when it has none (an unwind that reaches ip stops there), -1
 * when that is not known. Reports ask it of a stack's last frame (report_build.c). */
int lt_platform_unwind_info(uintptr_t ip);

/* Nonzero when ip lies in the tracer's own object. Safe in a signal handler once the tracer's
 * load constructors ran (Linux: the bounds are found at the first question, which
 * interpose_signal.c's constructor asks). */
int lt_platform_in_tracer(uintptr_t ip);
/* Whether ip is in the unwinder the tracer loaded (0 before it is loaded): a lock call made
 * from there is the program's own call into it, which holds the unwinder's locks or is
 * taking one. */
int lt_platform_in_unwinder(uintptr_t ip);

/* What is known about a code address. Strings stay valid until the next call. */
typedef struct lt_symbol {
    const char *function; /* NULL when unknown */
    uintptr_t function_offset;
    const char *module;   /* path of the object file, NULL when unknown */
    uintptr_t module_offset;
    const char *file;     /* source file, NULL without debug info */
    int line;
    int inlined;          /* a call inlined at the address (the function's frame comes last) */
    const char *split_missing; /* dwarf_frames.h: the -gsplit-dwarf file not found, or NULL */
} lt_symbol;

/* Describes ip: the calls inlined at it, innermost first, then its function, at most max into
 * out; returns how many (1 or more when max > 0). A return address is looked up as ip - 1 by
 * the caller. Report time only. */
size_t lt_platform_symbolize(uintptr_t ip, lt_symbol *out, size_t max);

/* Nonzero when ip is the signal return trampoline: the frame of a signal handler's caller,
 * whose next frame's address is the interrupted instruction, no return address. */
int lt_platform_is_sigreturn(uintptr_t ip);

/* The variable whose storage holds addr, from the ELF symbol tables of the loaded objects
 * (static and function-static symbols included, C++ demangled), as "name" or "name+0xK" in
 * buf (NUL-terminated, cut to size); 0 when no data symbol covers addr. Report time only. */
int lt_platform_data_symbol(uintptr_t addr, char *buf, size_t size);
/* The thread-local variable (of the thread whose pthread_t is `thread`) whose storage holds
 * addr, as lt_platform_data_symbol names one; 0 when none does, or where the thread's TLS
 * blocks cannot be found (glibc on x86-64 only). Report time only. */
int lt_platform_tls_symbol(uintptr_t addr, uintptr_t thread, char *buf, size_t size);

/* Loads now what lt_platform_symbolize needs, for a caller that will symbolize at exit: a
 * library loaded then would run its initialisers after the program's own cleanup. */
void lt_platform_symbolize_init(void);

/* Copies n bytes at src that another thread may unmap meanwhile: 0 on success, -1 when some
 * of it is not mapped (nothing faults), or when it cannot be read safely here: after
 * lt_platform_filtered found a seccomp filter. Async-signal-safe. Linux: process_vm_readv,
 * which a sandbox's filter may refuse, or kill the process for (Chromium's). */
int lt_platform_peek(void *dst, const void *src, size_t n);
/* Whether a seccomp filter is, or may be, in force in the calling thread now: one file read
 * while none was seen in the process, none after (async-signal-safe; errno kept). Asked before
 * a call a sandbox may kill the process for (Chromium's, in every process: membarrier,
 * getitimer, timer_gettime; in its GPU process: mremap), and before a report peeks
 * (lockname.c: the heap's records, other threads' stacks): once a filter is seen, every
 * lt_platform_peek of the process fails from then on (a filter is never taken away, and is
 * inherited): not every filter forbids process_vm_readv, but Chromium's kills the process
 * for it and Firefox's traps and logs it (LT_REFUSED_KILLABLE). Held sets need no peek
 * (lt_held_copy). Elsewhere than Linux 0. */
int lt_platform_filtered(void);
/* The same for memory no other thread can unmap meanwhile (the caller's own locks, the code
 * it runs, libc's own objects), in any sandbox: checked first, then copied (a mapping removed
 * between the two would fault). errno is kept. Async-signal-safe. */
int lt_platform_read(void *dst, const void *src, size_t n);
/* The object file that contains ip: its path (the executable's is absolute), load address and
 * GNU build-id in lowercase hex ("" when it has none). Never allocates. 0 when ip is in no
 * loaded object, nor in one of the thread's list of objects just unloaded (below). */
typedef struct lt_module {
    char path[4096];
    uintptr_t base;
    char build_id[2 * 64 + 1];
} lt_module;
int lt_platform_module(uintptr_t ip, lt_module *out);
/* A loaded object's file and the span [lo, hi) of its loaded segments. */
typedef struct lt_module_span {
    lt_module module;
    uintptr_t lo, hi;
} lt_module_span;
#ifndef __APPLE__
/* The loaded object that holds addr; 0 when none does. */
int lt_platform_module_span(uintptr_t addr, lt_module_span *out);
/* Objects dlclose has just unloaded: until the thread calls this again (n = 0: none), its
 * reports name addresses in them as if they were still loaded (file, build-id, function and
 * line, read from the files). The caller keeps m[] meanwhile. */
void lt_platform_modules_unloaded(const lt_module_span *m, size_t n);
/* The pages of [lo, hi) reserved, mapped inaccessible, when nothing is mapped there; 0 when
 * they are. Given back by lt_platform_release_hole (the same lo and hi). */
int lt_platform_hold_hole(uintptr_t lo, uintptr_t hi);
void lt_platform_release_hole(uintptr_t lo, uintptr_t hi);
/* The i-th place (i < LT_DEBUGLINK_PLACES) where the debug file that the .gnu_debuglink
 * section of `file` names `link` is looked for, into path: beside the file, in its .debug/
 * directory, under /usr/lib/debug at the file's own directory (GDB's and libdw's places). 0
 * when link is not a plain file name, file names no directory, the path does not fit or is
 * file itself. Never allocates (platform_elfsym.c reads debug files in a signal handler). */
#define LT_DEBUGLINK_PLACES 3
int lt_platform_debuglink_path(char *path, size_t size, const char *file, const char *link,
                               size_t i);
#endif
/* The same, async-signal-safe (no loader lock, no allocation), for the thread dump; also the
 * address range [lo, hi) of the object's mappings, so a caller can reuse the answer. */
int lt_platform_module_safe(uintptr_t ip, lt_module *out, uintptr_t *lo, uintptr_t *hi);

/* The mapping that holds addr, from /proc/self/maps: its bounds, file offset and path (a
 * file, "[heap]", "[stack]"..., "" when anonymous); 0 when addr is in none. Never allocates. */
typedef struct lt_mapping {
    uintptr_t start, end, offset;
    char path[4096];
} lt_mapping;
int lt_platform_mapping(uintptr_t addr, lt_mapping *out);

/* The malloc block that holds addr, in the mapping m that holds it (lt_platform_mapping): its
 * start and usable size (what malloc_usable_size says of it). 0 when the program's allocator
 * is not one whose blocks can be found from inside (Linux: glibc's, 64-bit), when addr is in
 * no block in use, or when the allocator's records do not validate (other threads allocate
 * meanwhile). Never allocates, never faults. Report time only: one caller at a time. */
int lt_platform_heap_block(uintptr_t addr, const lt_mapping *m, uintptr_t *start, size_t *size);

/* The symbol name (as linked: C++ names mangled) of the function that contains code address
 * ip, into name (NUL-terminated, cut to size): 1 when found, 0 when unknown, -1 when not known
 * yet (another thread is reading that object's symbols: ask again later). No allocation, no
 * lock: callable anywhere, also in a signal handler (callsite.c asks at a lock call site). */
int lt_platform_function_safe(uintptr_t ip, char *name, size_t size);

/* Path of the running executable, NUL-terminated, cut to size. */
void lt_platform_exe_path(char *buf, size_t size);

/* Sends len bytes at msg as one datagram to the unix socket of abstract name `name` (Linux's
 * abstract namespace: no file system involved), never waiting: 0 when sent, 1 when the
 * socket's queue is full for now, -1 when it cannot be sent (no such socket any more, a
 * seccomp filter seen: lt_platform_filtered). A socket of its own each time, closed at once:
 * a descriptor kept open may have been closed or reused by the program (a daemon closes them
 * all). errno kept. Elsewhere than Linux -1. */
int lt_platform_datagram(const char *name, const char *msg, size_t len);

/* Before the tracer aborts the program: its standard output's and error's buffers written,
 * where that cannot block or write a stream in use (platform_linux.c says when). */
void lt_platform_flush_stdio(void);

/* The tracer's abort(): the program's SIGABRT handler runs, and the process ends even when the
 * handler jumps out of it (glibc; elsewhere abort() alone). */
_Noreturn void lt_platform_abort(void);

#endif
