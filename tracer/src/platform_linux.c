/*
 * platform_linux.c - platform.h for Linux and glibc: dlsym/dlvsym, gettid, prctl names,
 * glibc lock internals (mutex kind, rwlock preference), libunwind for stacks and libdw for
 * function names and file:line at report time, from local files only.
 *
 * libunwind and libdw are loaded privately (dlopen RTLD_LOCAL) on first use, never linked:
 * linked into a preloaded library they would join the program's global symbol scope, and
 * libunwind.so.8 exports _Unwind_* and backtrace, which would then replace libgcc's and
 * glibc's for the whole program (C++ exceptions included).
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "platform.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <libunwind.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "dwarf_frames.h"
#include "lt_internal.h"

void *lt_platform_real(const char *name, const char *version)
{
    return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

/* ------------------------------------------------------------------------------------------
 * Private libraries. Symbol names come from the headers' own macros (unw_step is
 * _ULx86_64_step), so the function-pointer fields carry the same names as the functions.
 * ---------------------------------------------------------------------------------------- */
#define LT_STR(x) LT_STR_(x)
#define LT_STR_(x) #x

#define UNWIND_FUNCS(X)                                                                     \
    X(unw_tdep_getcontext) X(unw_init_local) X(unw_step) X(unw_get_reg) X(unw_backtrace)   \
    X(unw_get_proc_info_by_ip) X(unw_get_accessors)

#define DW_FUNCS(X)                                                                         \
    X(dwfl_begin) X(dwfl_end) X(dwfl_report_begin_add) X(dwfl_report_elf) X(dwfl_report_end)    \
    X(dwfl_build_id_find_debuginfo) X(dwfl_addrmodule)                                      \
    X(dwfl_module_build_id) X(dwelf_elf_gnu_build_id) X(elf_version) X(elf_begin) X(elf_end)   \
    X(dwfl_module_getsymtab) X(dwfl_module_getsym_info)

#define FIELD(f) __typeof__(&f) f;
static struct {
    UNWIND_FUNCS(FIELD)
    unw_addr_space_t *local_as; /* &unw_local_addr_space */
} unw;
static struct {
    DW_FUNCS(FIELD)
} dw;
#undef FIELD
static lt_dw_api dw_frames; /* what dwarf_frames.c calls: bound with the rest of libdw */

#define BIND(table, f) ok &= (table.f = (__typeof__(&f))dlsym(h, LT_STR(f))) != NULL;
#define BIND_UNW(f) BIND(unw, f)
#define BIND_DW(f) BIND(dw, f)
#define BIND_DW_FRAMES(f) BIND(dw_frames, f)

/* libunwind's module id for thread-local storage, 0 when it has none, and the bytes glibc
 * mallocs for a thread's block of it (see lt_platform_thread_init) */
static size_t unw_tls_module, unw_tls_bytes;

/* libunwind takes locks of its own, through pthread_mutex_lock (passed straight through
 * inside the tracer): a fork made while another thread is inside libunwind (an unwind, a
 * backtrace, a procedure look-up) leaves them held in the child by a thread it does not have,
 * and the child's next call into libunwind (a lock made or taken at a new call site) waits
 * forever. So a fork waits for the calls other threads are making and holds new ones back
 * until it is made, but for its own thread's: a fork from a signal handler may have
 * interrupted its thread's own call, which goes on in the parent and in the child once the
 * handler returns.
 *
 * The fork waits last in the tracer's prepare phase (lt_platform_fork), once it holds every
 * tracer lock: a thread holding one (a report, which names a lock by its frame) may call
 * into libunwind and must not be held back then, since the fork waits for its lock; no
 * thread can be holding one any more when calls are held back. A call into libunwind takes
 * no tracer lock, so the fork's wait for those under way ends.
 *
 * A call under way is a slot holding its thread's id, claimed and given back with one atomic
 * operation each: a count and a thread-local flag beside it were two, and a signal between
 * them left the fork handler miscounting its own thread (waiting for itself forever, or the
 * child's count one short, so a later fork there waited for nobody). A thread that finds no
 * free slot (more than UNW_SLOTS calls at once) yields until one is.
 *
 * A call into libunwind may read files (a function's name, unwind information outside the
 * loaded image) or, where its pipe is in use (unw_access_mem), read and write the pipe: these
 * are cancellation points, and a thread with a cancel pending would be cancelled inside the
 * lock call that unwinds, after libc granted the lock and before the program's cleanup handler
 * that releases it is pushed. So the calls run with cancellation disabled. */
#define UNW_SLOTS 64
static _Atomic(pthread_t) unw_calls[UNW_SLOTS]; /* 0 = free */
static _Atomic int unwind_fork;                  /* a fork is being made, by unwind_forker */
static _Atomic(pthread_t) unwind_forker;

/* What a call into libunwind changes for its thread, put back by unw_leave. */
typedef struct unw_call {
    int errno_before; /* the program's: libunwind's checks of addresses leave EAGAIN or EBADF */
    size_t slot;      /* its claim in unw_calls */
    int cancel;       /* the cancellation state it had */
    int pipe_guard;   /* SIGPIPE was blocked for the call: libunwind may use its pipe */
    int masked;       /* every signal was blocked for the call (unw_enter_masked) */
    sigset_t mask;    /* the signal mask it had */
    sigset_t asked;   /* masked: the mask libunwind's own sigprocmask calls have set */
    int pipe_pending; /* a SIGPIPE was pending for it already */
} unw_call;

/* libunwind's pipe is not used: its memory reads are ours (unw_access_mem), set once while
 * libunwind is loaded, before another thread may call into it. */
static _Atomic int unw_no_pipe;

/* SIGPIPE alone. */
static void pipe_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
}

/* Before a call into libunwind: disables cancellation, blocks SIGPIPE where libunwind may use
 * its pipe, and claims a slot. libunwind (1.6) opens its pipe again, closing the old one,
 * without a lock when a check finds it closed (a daemon closed every descriptor): another
 * thread's check may write into the pipe whose read end was just closed, and the SIGPIPE
 * killed the program (harm-fd.1, a few runs in a hundred). Without the pipe there is no
 * SIGPIPE to fear, and the guard's three system calls per unwind are saved.
 *
 * Refused (0: the caller answers "no frames") while this thread holds a lock that libunwind
 * took: the tracer's libunwind is the program's where the program loads it too (one copy a
 * process), and the program's unwind holds libunwind's cache lock while it calls out -
 * dl_iterate_phdr at each look-up its cache misses, mmap and munmap when its cache is remade,
 * sigprocmask. A lock call made there (a dl_iterate_phdr or mmap of the program's own that
 * takes a mutex) had the tracer unwind, with the same libunwind, which waited for that lock
 * forever, every signal blocked (harm-unwind.5, .2). Asked
 * here, where every call into libunwind passes, it holds for reports too (lockname.c names a
 * lock by the frame of an unwind). */
static int unw_enter_as(unw_call *c, int masked)
{
    if (lt_unlikely(lt_held_unwinder(lt_tls.self) || (lt_tls.self && lt_tls.self->unwind_none)))
        return 0;
    pthread_t self = pthread_self();
    sigset_t all, only_pipe, pending;
    c->errno_before = errno;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &c->cancel);
    c->pipe_guard = !atomic_load_explicit(&unw_no_pipe, memory_order_relaxed);
    c->masked = masked;
    if (masked) {
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &c->mask);
        c->asked = c->mask;
        lt_tls.unw_masked = c;
    }
    if (c->pipe_guard) {
        pipe_set(&only_pipe);
        if (!masked)
            pthread_sigmask(SIG_BLOCK, &only_pipe, &c->mask);
        /* Only a blocked SIGPIPE can be pending: while the thread had it unblocked none was,
         * and asking costs a system call on each of the tens of thousands of unwinds a
         * program makes. */
        c->pipe_pending = sigismember(&c->mask, SIGPIPE) && sigpending(&pending) == 0 &&
                          sigismember(&pending, SIGPIPE);
    }
    unsigned round = 0;
    for (size_t i = (size_t)(((uint64_t)self * 0x9E3779B97F4A7C15ull) >> 58);; i++) {
        pthread_t free_slot = 0;
        _Atomic(pthread_t) *slot = &unw_calls[i % UNW_SLOTS];
        if (!atomic_compare_exchange_strong(slot, &free_slot, self)) {
            if (i % UNW_SLOTS == UNW_SLOTS - 1)
                lt_spin_backoff(&round);
            continue;
        }
        if (!atomic_load(&unwind_fork) || pthread_equal(atomic_load(&unwind_forker), self)) {
            c->slot = i % UNW_SLOTS;
            return 1;
        }
        atomic_store(slot, 0);
        while (atomic_load(&unwind_fork))
            lt_spin_backoff(&round);
    }
}

/* A SIGPIPE that became pending during the call was libunwind's: taken, not delivered. */
static void unw_leave(const unw_call *c)
{
    sigset_t only_pipe;
    atomic_store(&unw_calls[c->slot], 0);
    if (c->pipe_guard && !c->pipe_pending) { /* takes one if pending, else returns at once */
        pipe_set(&only_pipe);
        sigtimedwait(&only_pipe, NULL, &(struct timespec){0, 0});
    }
    if (c->masked) {
        lt_tls.unw_masked = NULL;
        pthread_sigmask(SIG_SETMASK, &c->asked, NULL);
    } else if (c->pipe_guard && !sigismember(&c->mask, SIGPIPE)) {
        /* SIGPIPE alone: a signal deferred during the call stays blocked (sigdefer.c) */
        pipe_set(&only_pipe);
        pthread_sigmask(SIG_UNBLOCK, &only_pipe, NULL);
    }
    pthread_setcancelstate(c->cancel, NULL);
    errno = c->errno_before;
}

static int unw_enter(unw_call *c)
{
    return unw_enter_as(c, 0);
}

/* For an unwind that steps frame by frame: libunwind (1.6, built to block signals) blocks
 * every signal around each step's look-up in its cache and again around each search of the
 * loaded objects, two system calls each time: about 2.7 pairs a frame, 2960 calls when
 * python3 starts, 8 ms of its 15 ms under the tracer on a machine whose system calls cost
 * 2.7 us. So the whole unwind runs with every signal blocked, as libunwind wants its steps
 * to, and libunwind's own calls (sigprocmask, below) are answered from unw_call: two
 * system calls an unwind. unw_backtrace, whose cached frames make no such call, keeps
 * unw_enter. */
static int unw_enter_masked(unw_call *c)
{
    return unw_enter_as(c, 1);
}

/* libunwind (1.6) checks an address before it reads the program's memory where it is told to
 * (by default every read of an unwind step, "conservative checks") by writing a byte of it
 * into a pipe that it opens when it sets itself up and keeps: two descriptors the program did
 * not open, in every traced process. A program that lists its descriptors sees them (CPython's
 * test_subprocess checks that a child has only the ones it was given: two failures), and one
 * that opens descriptors up to its limit gets two fewer. So the pipe is refused while
 * libunwind sets itself up (it ignores pipe2's result), and the local address space's reads
 * of memory come here. The reads libunwind would check are checked, with one system call
 * (bytes_readable: EFAULT where the direct read would fault; libunwind's check made three),
 * and a page found readable joins a small table of pages not checked again, as
 * libunwind keeps 4 of its own (neither forgets a page, which can only matter for an address
 * that only bad unwind information would give); the others are read directly, as libunwind
 * reads them. Checking every read instead made LOCKTRACE_STACKS=full unwinds 4-6x slower
 * (lifetime-4.2).
 *
 * Which reads libunwind checks is the low bit of the argument it passes to its own accessor
 * (1.6 to 1.8: the unwound context's address, with that bit; 1.5 passed its cursor, and kept
 * the flag there). So the accessor first checks every read of one step made from a context
 * of unwind_first's, and stays only if each argument was that context (or NULL): otherwise
 * libunwind's own accessor is put back, and libunwind opens its pipe at its first check, as
 * it did before. */
#define GOOD_PAGES 16                       /* a power of two */
#define PAGE_4K ((uintptr_t)4095)           /* the smallest page size: larger ones hold them */
static _Atomic uintptr_t good_pages[GOOD_PAGES]; /* page addresses, slot by page number */
static _Atomic(pthread_t) unw_setting_up;   /* the thread whose pipe2 is libunwind's set-up */
static const void *probe_context;           /* during set-up: the context the step is made on */
static _Atomic int probe_mismatch;          /* an argument of the set-up's step was not it */
static int (*unw_own_access_mem)(unw_addr_space_t, unw_word_t, unw_word_t *, int, void *);

static _Atomic uintptr_t *good_slot(uintptr_t page)
{
    return &good_pages[(page >> 12) & (GOOD_PAGES - 1)];
}

static int page_good(uintptr_t page)
{
    return atomic_load_explicit(good_slot(page), memory_order_relaxed) == page;
}

/* Whether the 8 bytes at addr can be read, without faulting: rt_sigprocmask with a `how`
 * that is not one. The kernel copies the 8-byte set from addr first (EFAULT if it cannot),
 * then refuses the call (EINVAL) without changing the mask. Every sandbox lets it through,
 * since libc's own signal and thread functions need it. process_vm_readv, which the tracer
 * used first, is a debugging call that sandboxes forbid, and not always with an error:
 * Chromium's seccomp filter traps it (SIGSYS) and its handler crashes the process on purpose,
 * as a filter whose action is to kill does; inside an unwind, which blocks every signal, the
 * kernel killed the process outright (harm-peek.2). Not through libc, which reads the set
 * itself. Leaves errno EINVAL or EFAULT. */
static int bytes_readable(uintptr_t addr)
{
    return syscall(SYS_rt_sigprocmask, -1, (void *)addr, NULL, (size_t)8) != 0 && errno == EINVAL;
}

/* Whether the word at addr can be read, without faulting. */
static int word_readable(unw_word_t addr, unw_word_t *val)
{
    /* the kernel's set is 8 bytes (64 signals): the word, and a little more for a smaller one */
    _Static_assert(sizeof(unw_word_t) <= 8, "a word fits in the kernel's signal set");
    if (!bytes_readable(addr))
        return 0;
    memcpy(val, (const void *)addr, sizeof *val);
    return 1;
}

/* The word at addr, read only once its pages are known to be readable. */
static int checked_read(unw_word_t addr, unw_word_t *val)
{
    uintptr_t first = addr & ~PAGE_4K, last = (addr + sizeof *val - 1) & ~PAGE_4K;
    if (first == 0) /* never mapped, and libunwind refuses it too */
        return -UNW_EUNSPEC;
    if (page_good(first) && page_good(last)) {
        memcpy(val, (const void *)addr, sizeof *val);
        return 0;
    }
    if (!word_readable(addr, val))
        return -UNW_EUNSPEC;
    atomic_store_explicit(good_slot(first), first, memory_order_relaxed);
    atomic_store_explicit(good_slot(last), last, memory_order_relaxed);
    return 0;
}

static int unw_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
                          void *arg)
{
    (void)as;
    if (write) { /* as libunwind's own: in place (unw_set_reg; the tracer never writes) */
        memcpy((void *)addr, val, sizeof *val);
        return 0;
    }
    uintptr_t packed = (uintptr_t)arg;
    const void *probe = probe_context;
    if (lt_unlikely(probe != NULL)) {
        if (arg && (const void *)(packed & ~(uintptr_t)1) != probe)
            atomic_store(&probe_mismatch, 1);
        return checked_read(addr, val);
    }
    if (packed & 1)
        return checked_read(addr, val);
    memcpy(val, (const void *)addr, sizeof *val);
    return 0;
}

/* libunwind sets itself up at its first unwind, behind a flag it reads without its lock:
 * ThreadSanitizer saw two threads' first unwinds race on its signal mask. So a cursor is
 * set up (which is where libunwind sets itself up) while the library is being loaded
 * (load_once), before another thread may use it. Not unw_backtrace: its first call in a
 * thread also fills a 256 KiB trace cache, 64 of the page faults that every traced process
 * paid at its start (/bin/true: 123 more than native), whether it ever unwound or not. One
 * step from the cursor tells whether unw_access_mem may stay (above). */
static void unwind_first(void)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    unw_call c;
    unw_accessors_t *a;
    if (!unw_enter(&c)) /* loaded first inside the program's unwind: libunwind's accessor stays */
        return;
    atomic_store(&unw_setting_up, pthread_self());
    a = unw.unw_get_accessors(*unw.local_as); /* which sets libunwind up too */
    if (unw.unw_tdep_getcontext(&ctx) == 0 && unw.unw_init_local(&cur, &ctx) == 0 && a) {
        unw_own_access_mem = a->access_mem;
        probe_context = &ctx;
        a->access_mem = unw_access_mem;
        unw.unw_step(&cur);
        probe_context = NULL;
        if (atomic_load(&probe_mismatch))
            a->access_mem = unw_own_access_mem;
        else
            atomic_store(&unw_no_pipe, 1);
    }
    atomic_store(&unw_setting_up, 0);
    unw_leave(&c);
}

/* glibc's __libc_single_threaded (2.32 on, <sys/single_threaded.h>) is true while the
 * process has never had a second thread, as libc creates them (pthread_create, its own
 * helper threads): then nothing is read. (It is false for good once a thread was made, and
 * in a child forked by a process that had one.) */
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define NEVER_THREADED() (__libc_single_threaded != 0)
#else
#define NEVER_THREADED() 0
#endif

/* What filtered reads of /proc/thread-self/status: its "Seccomp:" line comes near byte 900
 * (a long "Groups:" line moves it on: not found, a filter may be in force). */
#define STATUS_SIZE 2048
static int filtered(char *status, size_t size);

/* Else the "Threads:" line of /proc/thread-self/status, as filtered read it: not read once a
 * seccomp filter was seen (one might kill on open; the thread may then not be alone). In the
 * fork of a process that never had a second thread this cost 4 system calls and a page of
 * stack written (a page fault) at each fork. */
LT_FORK_PATH int lt_platform_alone(void)
{
    if (NEVER_THREADED())
        return 1;
    char status[STATUS_SIZE];
    filtered(status, sizeof status);
    return strstr(status, "\nThreads:\t1\n") != NULL;
}

/* membarrier(2)'s expedited private barrier: an interrupt to each CPU running a thread of
 * the process, once registered. (The global one waits for a scheduler grace period.) Only
 * where no seccomp filter is in force: Chromium's kills the process for membarrier, so none
 * may have come since it was readied either. */
int lt_platform_barrier_ready(void)
{
    return !lt_platform_filtered() &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

int lt_platform_barrier_all(void)
{
    if (lt_platform_filtered())
        return -1;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -1;
}

LT_FORK_PATH void lt_platform_fork(lt_fork_phase phase)
{
    if (lt_fork_alone()) /* no other thread is inside libunwind, nor can enter it */
        return;
    pthread_t self = pthread_self();
    if (phase == LT_FORK_PREPARE) {
        atomic_store(&unwind_forker, self);
        atomic_store(&unwind_fork, 1);
    }
    for (size_t i = 0; i < UNW_SLOTS; i++) {
        pthread_t t;
        if (phase == LT_FORK_PREPARE) {
            for (unsigned round = 0;
                 (t = atomic_load(&unw_calls[i])) != 0 && !pthread_equal(t, self);)
                lt_spin_backoff(&round);
        } else if (phase == LT_FORK_CHILD) { /* the child has no other thread */
            if (!pthread_equal(atomic_load(&unw_calls[i]), self))
                atomic_store(&unw_calls[i], 0);
        }
    }
    if (phase != LT_FORK_PREPARE)
        atomic_store(&unwind_fork, 0);
}

/* An object's span of addresses (span_of, lt_platform_in_tracer). */
typedef struct span {
    _Atomic uintptr_t lo, hi;
} span;
static void span_of(span *sp, uintptr_t addr);

/* libunwind's span, once loaded. The tracer's libunwind is the program's where the program
 * loads it too (one copy a process, whatever RTLD_LOCAL says). */
static span unwinder LT_START_DATA;

/* unw_tls_bytes from libunwind's PT_TLS: its size, and its alignment where that is more than
 * malloc's (glibc 2.36's allocate_dtv_entry then mallocs both). */
static int tls_bytes_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (info->dlpi_tls_modid != unw_tls_module)
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_TLS)
            unw_tls_bytes = ph->p_memsz + (ph->p_align > _Alignof(max_align_t) ? ph->p_align : 0);
    }
    return 1;
}

static int bind_unwind(void *h)
{
    int ok = 1;
    UNWIND_FUNCS(BIND_UNW)
    ok &= (unw.local_as = dlsym(h, LT_STR(unw_local_addr_space))) != NULL;
    if (dlinfo(h, RTLD_DI_TLS_MODID, &unw_tls_module) != 0)
        unw_tls_module = 0;
    if (unw_tls_module)
        dl_iterate_phdr(tls_bytes_of, NULL);
    if (ok) {
        span_of(&unwinder, (uintptr_t)unw.unw_backtrace);
        unwind_first();
    }
    return ok;
}

static int bind_dw(void *h)
{
    int ok = 1;
    DW_FUNCS(BIND_DW)
    LT_DW_FRAME_FUNCS(BIND_DW_FRAMES)
    return ok;
}

enum { UNLOADED, LOADING, LOADED, MISSING };

/* lt_platform_loads_wait: while set, load_once loads nothing and says so. */
static _Atomic int loads_waiting LT_START_DATA;

void lt_platform_loads_wait(int wait)
{
    atomic_store_explicit(&loads_waiting, wait, memory_order_release);
}

/* Whether the process has no descriptor free (RLIMIT_NOFILE reached): a load that failed
 * then may work later. */
static int no_fd_free(void)
{
    int fd = open("/", O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd < 0 && (errno == EMFILE || errno == ENFILE);
}

/* Loads soname privately and binds its symbols, once; 1 when it is usable. A thread that
 * arrives while another one loads waits for it. With `retry`, a load that failed for want of
 * a free descriptor is tried again at the next need: libdw, which the first report loads, so
 * a program at its descriptor limit then had no function names for the rest of its life
 * (harden-env.7). Not libunwind, which a lock call may load: it would try at every call. */
static int load_once(_Atomic int *state, const char *soname, int (*bind)(void *), int retry)
{
    int s = atomic_load_explicit(state, memory_order_acquire);
    if (lt_likely(s == LOADED))
        return 1;
    if (atomic_load_explicit(&loads_waiting, memory_order_acquire))
        return 0;
    if (s == UNLOADED && atomic_compare_exchange_strong(state, &s, LOADING)) {
        void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        int later = !h && retry && no_fd_free();
        s = h && bind(h) ? LOADED : later ? UNLOADED : MISSING;
        atomic_store_explicit(state, s, memory_order_release);
        if (later)
            lt_report_degraded("no descriptor free to load libdw.so.1: no function names now");
        else if (s == MISSING)
            lt_report_degraded(soname[3] == 'u' ? "cannot load libunwind.so.8: no stacks"
                                                : "cannot load libdw.so.1: no function names");
    }
    for (unsigned round = 0;
         (s = atomic_load_explicit(state, memory_order_acquire)) == LOADING;)
        lt_spin_backoff(&round);
    return s == LOADED;
}

static int have_unwind(void)
{
    static _Atomic int state LT_START_DATA;
    return load_once(&state, "libunwind.so.8", bind_unwind, 0);
}

static int have_dw(void)
{
    static _Atomic int state;
    return load_once(&state, "libdw.so.1", bind_dw, 1);
}

/* The top of the first 1024 descriptors, or of a lower limit: where the descriptors the
 * tracer keeps open go, since a program's own files come there last. */
static int fd_top(void)
{
    struct rlimit r;
    return getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < 1024 ? (int)r.rlim_cur : 1024;
}

/* fd moved to the lowest free number from `from` on (close-on-exec with F_DUPFD_CLOEXEC);
 * fd itself where there is none. */
static int fd_moved(int fd, int from, int cmd)
{
    int high = fd >= 0 && from > 8 ? fcntl(fd, cmd, from) : -1;
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

/* libunwind (1.6) checks that it may read an address (where a frame has no unwind
 * information, and in unw_backtrace's fast path) by writing a byte from it into a pipe that
 * it opens once and keeps. With the lowest free descriptors, as pipe2 gives them, a program
 * that closes every descriptor it did not open (a daemon, close_range) gets those numbers
 * back for its own files, and libunwind then writes bytes of memory into them and reads
 * bytes of their input. Opened from inside the tracer, the pipe moves to the top of the
 * first 1024 descriptors (or of a lower limit), where a program's files come last; once the
 * program has closed it, libunwind's next check fails to read it and opens another. The
 * program's own calls go straight to the kernel, as glibc's do. */
static int pipe_high(int fds[2], int flags)
{
    int top = fd_top();
    for (int i = 0; i < 2; i++)
        fds[i] = fd_moved(fds[i], top - 2, flags & O_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD);
    return 0;
}

/* A file libdw keeps open for the rest of the session (every object a report names, and its
 * debug file): close-on-exec, and below libunwind's pipe near the top of the first 1024
 * descriptors. libdw opens them with neither: after a process's first report, every child
 * it started inherited a dozen descriptors, and a daemon that closed them all and opened its
 * own files got their numbers, which libdw closes when it starts a new session (harm-fd.6). */
static int fd_kept(int fd)
{
    int top = fd_top();
    return fd_moved(fd, top > 128 ? top - 64 : top / 2, F_DUPFD_CLOEXEC);
}

LT_EXPORT int pipe2(int fds[2], int flags)
{
    if (pthread_equal(atomic_load(&unw_setting_up), pthread_self())) {
        errno = EMFILE; /* libunwind's pipe, not needed (unw_access_mem) */
        return -1;
    }
    int rc = (int)syscall(SYS_pipe2, fds, flags);
    return rc == 0 && !lt_outside(&lt_tls) ? pipe_high(fds, flags) : rc;
}

LT_EXPORT int pipe(int fds[2])
{
    return pipe2(fds, 0);
}

/* A thread's sigprocmask while it unwinds with every signal blocked (unw_enter_masked) can
 * only be libunwind's, which no signal can interrupt: the mask it asks for is kept in the
 * call and set when the unwind ends, with no system call now. Any other goes to libc, whose
 * sigprocmask is pthread_sigmask with errno. */
LT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    unw_call *c = lt_tls.unw_masked;
    int rc = 0;
    if (lt_likely(!c)) {
        rc = pthread_sigmask(how, set, old);
    } else if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK) {
        rc = EINVAL;
    } else {
        sigset_t before = c->asked;
        if (set && how == SIG_SETMASK)
            c->asked = *set;
        else if (set && how == SIG_BLOCK)
            sigorset(&c->asked, &before, set);
        for (int sig = 1; set && how == SIG_UNBLOCK && sig < NSIG; sig++)
            if (sigismember(set, sig) == 1)
                sigdelset(&c->asked, sig);
        if (old)
            *old = before;
    }
    if (rc == 0)
        return 0;
    errno = rc;
    return -1;
}

int lt_platform_munmap_direct(void *p, size_t size)
{
    return (int)syscall(SYS_munmap, p, size);
}

void *lt_platform_mremap_direct(void *old, size_t old_size, size_t new_size, int flags,
                                void *target)
{
    return (void *)syscall(SYS_mremap, old, old_size, new_size, flags, target);
}

/* mremap with `flags` (and target), or where a sandbox refuses it (Firefox's content sandbox
 * traps and logs it: 216-2,141 lines a headless screenshot, and each refusal turned tracking
 * off in that process as out of memory) or may kill for it (lt_platform_filtered), a copy
 * into `fresh` (NULL: a new mapping) from then on. No reader is in the old pages meanwhile,
 * either way: the tracer's grown mappings are scratch arrays under one lock and held sets,
 * which their own thread moves only while no report reads them (thread.c: held_readers). NULL
 * on failure, p then untouched; errno kept. */
static void *remap(void *p, size_t old, size_t size, int flags, void *fresh)
{
    int saved = errno;
    void *q = MAP_FAILED;
    if (!lt_platform_refused(LT_REFUSED_REMAP)) {
        if (lt_platform_filtered()) { /* Chromium's baseline policy (its GPU process) kills */
            lt_platform_refuse(LT_REFUSED_REMAP);
        } else {
            q = lt_platform_mremap_direct(p, old, size, flags, fresh);
            if (q == MAP_FAILED && lt_platform_refusal(errno))
                lt_platform_refuse(LT_REFUSED_REMAP);
        }
    }
    if (q == MAP_FAILED && lt_platform_refused(LT_REFUSED_REMAP))
        q = lt_platform_copy_over(p, old, fresh ? fresh : lt_platform_map(size), size);
    errno = saved;
    return q == MAP_FAILED ? NULL : q;
}

/* MADV_DONTNEED: the pages of a private mapping read as zeros after it, and the call takes the
 * address space's lock for reading, where a mapping made over them (MAP_FIXED) takes it for
 * writing, behind every page fault of every thread: 4,000 threads ending at once, each giving
 * its state back so (thread.c), took 4.1 s of CPU against 1.7 s (`memprobe nested 4000`). A
 * call refused (a sandbox) maps the range anew. */
void lt_platform_discard(void *p, size_t size)
{
    int saved = errno;
    if (madvise(p, size, MADV_DONTNEED) != 0)
        mmap(p, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    errno = saved;
}

void *lt_platform_remap(void *p, size_t old, size_t size)
{
    return remap(p, old, size, MREMAP_MAYMOVE, NULL);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1; glibc's headers before 2.37 lack it */
#endif

void lt_platform_collapse(void *p, size_t size)
{
    lt_platform_map_huge(p, size);
    int saved = errno; /* an older kernel, or a range with no page yet, says EINVAL */
    madvise(p, size, MADV_COLLAPSE);
    errno = saved;
}

/* mremap chooses the place: the pages go where an aligned mapping was made for them. */
void *lt_platform_remap_aligned(void *p, size_t old, size_t size, size_t align)
{
    char *at = lt_platform_map_aligned(size, align);
    if (!at)
        return NULL;
    void *q = remap(p, old, size, MREMAP_MAYMOVE | MREMAP_FIXED, at);
    if (!q)
        lt_platform_unmap(at, size);
    return q;
}

static uintptr_t load_segment(const struct dl_phdr_info *info, uintptr_t addr);

typedef struct owner_query {
    uintptr_t addr;
    const void *phdr; /* the program headers of the object that holds addr */
} owner_query;

static int owner_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    owner_query *q = arg;
    (void)size;
    if (!load_segment(info, q->addr))
        return 0;
    q->phdr = info->dlpi_phdr;
    return 1;
}

/* Whether a and b are in one loaded object, told by its program headers' address (its load
 * address is 0 for a non-PIE program). Not dladdr: it also looks for the nearest symbol,
 * and its four calls here were a third of the instructions of a traced /bin/true (347 K). */
static int same_module(const void *a, const void *b)
{
    owner_query qa = {(uintptr_t)a, NULL}, qb = {(uintptr_t)b, NULL};
    return a && b && dl_iterate_phdr(owner_of, &qa) == 1 && dl_iterate_phdr(owner_of, &qb) == 1 &&
           qa.phdr == qb.phdr;
}

typedef struct object_list {
    lt_object_data *out;
    size_t max, n;
} object_list;

/* The span of the object's writable segments into *out; 0 when it has none. */
static int object_data(const struct dl_phdr_info *info, lt_object_data *out)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    *out = (lt_object_data){info->dlpi_phdr, lo, hi,
                            (uintptr_t)info->dlpi_phdr == getauxval(AT_PHDR)};
    return hi > lo;
}

static int list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    object_list *list = arg;
    lt_object_data o;
    (void)size;
    if (!object_data(info, &o))
        return 0;
    if (list->n < list->max)
        list->out[list->n] = o;
    list->n++;
    return 0;
}

size_t lt_platform_objects(lt_object_data *out, size_t max)
{
    object_list list = {out, max, 0};
    dl_iterate_phdr(list_object, &list);
    return list.n;
}

/* The tracer's own writable segments (its .data and .bss, 16 MB of tables: shadow homes,
 * lock map, report buffers), at most 4 of them. */
typedef struct own_segments {
    uintptr_t self;
    size_t n;
    char *lo[4], *hi[4];
} own_segments;

static int own_writable(struct dl_phdr_info *info, size_t size, void *arg)
{
    own_segments *own = arg;
    (void)size;
    if (!load_segment(info, own->self))
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum && own->n < 4; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        own->lo[own->n] = (char *)(info->dlpi_addr + ph->p_vaddr);
        own->hi[own->n] = own->lo[own->n] + ph->p_memsz;
        own->n++;
    }
    return 1;
}

/* A conservative collector (Boehm's libgc: Guile, w3m, ECL, Gauche...) takes every loaded
 * object's writable segments for roots and reads them at each collection: the tracer's too,
 * 2-4 ms a collection where an empty heap takes 0.02 ms, and the lock addresses kept there
 * held on to collected objects that contain locks (a Guile mutex made, used and dropped stayed
 * allocated: 300,000 of them, a heap of 15 MB against 2 MB). No block of the program's is
 * referenced from the tracer's memory alone, which is what libgc's GC_exclude_static_roots
 * is for. Not when the collector is malloc too (built with redirect-malloc): then the blocks
 * the tracer mallocs would be. The call is made outside dl_iterate_phdr, whose lock libgc
 * takes under its own. A libgc loaded later (dlopen) is not told. */
static int maybe_defined(const char *name);

void lt_platform_gc_roots(void)
{
    if (!maybe_defined("GC_exclude_static_roots")) /* dlsym's miss would malloc its message */
        return;
    void (*exclude)(void *, void *) =
        (void (*)(void *, void *))dlsym(RTLD_DEFAULT, "GC_exclude_static_roots");
    if (!exclude || same_module((void *)exclude, dlsym(RTLD_DEFAULT, "malloc")))
        return;
    own_segments own = {.self = (uintptr_t)lt_platform_gc_roots};
    dl_iterate_phdr(own_writable, &own);
    for (size_t i = 0; i < own.n; i++)
        exclude(own.lo[i], own.hi[i]);
}

/* ------------------------------------------------------------------------------------------
 * Whether the objects loaded now call a lock entry point of the tracer's. Code calls a function
 * of another object only through a dynamic relocation that names it (a PLT slot, a GOT entry,
 * a pointer in data), so the names their relocations give are what they can call. libc and
 * the dynamic linker name none but free and realloc.
 * ---------------------------------------------------------------------------------------- */

/* The tracer's exports that a process calls without taking any lock: the memory that may hold
 * locks (free and the like), signal actions, pipes, _exit and dlclose. (sh, make, sed and
 * grep call some of them: free and realloc, sigaction, pipe, dlclose.) Every other export
 * counts as a lock entry point, new ones too. */
static const char *const lock_free_exports[] = {
    "free", "cfree", "realloc", "reallocarray", "munmap", "mremap", "dlclose",
    "pipe", "pipe2",
    "_exit", "_Exit", "sigaction", "sigprocmask", "signal", "bsd_signal", "ssignal",
    "sysv_signal", "__sysv_signal", "sigset", "sigignore", "siginterrupt"};

#if UINTPTR_MAX > 0xffffffffu
#define REL_SYM ELF64_R_SYM
#else
#define REL_SYM ELF32_R_SYM
#endif

/* An object's dynamic symbols, strings and relocations as the loader has them in memory. */
typedef struct dyn_tables {
    const ElfW(Sym) *sym;
    const char *str;
    const uint32_t *gnu_hash;
    const char *rel[2]; /* the relocations (DT_RELA or DT_REL) and the PLT's (DT_JMPREL) */
    size_t rel_size[2], rel_ent[2];
} dyn_tables;

/* The loader rewrites the addresses in a dynamic section to run-time ones where it may write
 * there; where it may not (a read-only dynamic section), they are offsets from the base. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

static void dyn_tables_of(const struct dl_phdr_info *info, dyn_tables *t)
{
    const ElfW(Dyn) *d = NULL;
    int plt_rela = 1;
    *t = (dyn_tables){.rel_ent = {sizeof(ElfW(Rela)), sizeof(ElfW(Rela))}};
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; d && d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: t->sym = dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_STRTAB: t->str = dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_GNU_HASH: t->gnu_hash = dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_RELA: case DT_REL: t->rel[0] = dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_RELASZ: case DT_RELSZ: t->rel_size[0] = d->d_un.d_val; break;
        case DT_RELAENT: case DT_RELENT: t->rel_ent[0] = d->d_un.d_val; break;
        case DT_JMPREL: t->rel[1] = dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: t->rel_size[1] = d->d_un.d_val; break;
        case DT_PLTREL: plt_rela = d->d_un.d_val == DT_RELA; break;
        }
    }
    t->rel_ent[1] = plt_rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
}

/* name's symbol in t's GNU hash table (its Bloom filter rejects nearly every other name at
 * once); NULL when t does not define it. */
static const ElfW(Sym) *gnu_lookup(const dyn_tables *t, const char *name)
{
    enum { BITS = sizeof(ElfW(Addr)) * 8 };
    const uint32_t *h = t->gnu_hash;
    uint32_t nbuckets = h[0], first = h[1], nbloom = h[2], shift = h[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)&h[4];
    const uint32_t *buckets = (const uint32_t *)&bloom[nbloom], *chain = &buckets[nbuckets];
    uint32_t hash = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        hash = hash * 33 + *c;
    ElfW(Addr) word = bloom[(hash / BITS) % nbloom];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % BITS)) | ((ElfW(Addr))1 << ((hash >> shift) % BITS));
    if ((word & mask) != mask)
        return NULL;
    for (uint32_t i = buckets[hash % nbuckets]; i >= first; i++) {
        uint32_t h2 = chain[i - first];
        if ((h2 | 1) == (hash | 1) && strcmp(name, t->str + t->sym[i].st_name) == 0)
            return t->sym[i].st_shndx != SHN_UNDEF ? &t->sym[i] : NULL;
        if (h2 & 1)
            break;
    }
    return NULL;
}

static int lock_entry(const dyn_tables *own, const char *name)
{
    if (!gnu_lookup(own, name))
        return 0;
    for (size_t i = 0; i < LT_ARRAY_LEN(lock_free_exports); i++)
        if (strcmp(name, lock_free_exports[i]) == 0)
            return 0;
    return 1;
}

typedef struct linked_query {
    uintptr_t self; /* an address of the tracer's */
    dyn_tables own;
    int own_found, locks;
} linked_query;

static int find_own(struct dl_phdr_info *info, size_t size, void *arg)
{
    linked_query *q = arg;
    (void)size;
    if (!load_segment(info, q->self))
        return 0;
    dyn_tables_of(info, &q->own);
    q->own_found = q->own.sym && q->own.str && q->own.gnu_hash;
    return 1;
}

static int calls_locks(struct dl_phdr_info *info, size_t size, void *arg)
{
    linked_query *q = arg;
    dyn_tables t;
    (void)size;
    if (load_segment(info, q->self))
        return 0;
    dyn_tables_of(info, &t);
    for (int k = 0; k < 2 && t.sym && t.str; k++)
        for (size_t at = 0; t.rel[k] && t.rel_ent[k] && at + t.rel_ent[k] <= t.rel_size[k];
             at += t.rel_ent[k]) {
            /* r_info follows r_offset in both forms */
            size_t sym = REL_SYM(((const ElfW(Rel) *)(t.rel[k] + at))->r_info);
            if (sym && lock_entry(&q->own, t.str + t.sym[sym].st_name))
                return q->locks = 1;
        }
    return 0;
}

typedef struct name_query {
    const char *name;
    int found;
} name_query;

static int defines(struct dl_phdr_info *info, size_t size, void *arg)
{
    name_query *q = arg;
    dyn_tables t;
    (void)size;
    dyn_tables_of(info, &t);
    if (!t.sym || !t.str)
        return 0;
    q->found = !t.gnu_hash || gnu_lookup(&t, q->name); /* no GNU table: cannot tell */
    return q->found;
}

/* Whether a loaded object may define name; without dlsym, whose miss (the common answer)
 * allocates its error message: the only malloc a traced process that takes no lock made. */
static int maybe_defined(const char *name)
{
    name_query q = {name, 0};
    dl_iterate_phdr(defines, &q);
    return q.found;
}

int lt_platform_locks_linked(void)
{
    linked_query q = {.self = (uintptr_t)lt_platform_locks_linked};
    if (dl_iterate_phdr(find_own, &q) != 1 || !q.own_found)
        return 1;
    dl_iterate_phdr(calls_locks, &q);
    return q.locks;
}

static int valgrind_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    return info->dlpi_name && strstr(info->dlpi_name, "/vgpreload_core-") != NULL;
}

void lt_platform_allocator(lt_allocator *out)
{
    *out = (lt_allocator){0};
    out->free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    out->realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    out->reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
    out->usable_size = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    out->munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    if (!out->munmap)
        out->munmap = lt_platform_munmap_direct;
    out->mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
    out->dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    out->page = (size_t)getpagesize();
    if (!same_module((void *)out->free, (void *)out->usable_size))
        out->usable_size = NULL;
    /* The program's malloc too: a malloc preloaded before the tracer (LD_PRELOAD=libtcmalloc.so:
     * liblocktrace.so) is the program's, while the next free after the tracer is glibc's. */
    /* Under valgrind, libc's free runs valgrind's allocator (redirected where it is, not
     * where dlsym finds it), whose blocks have no chunk header: each read of one was an
     * "Invalid read of size 8" in liblocktrace.so, and --error-exitcode failed the run.
     * valgrind preloads its core object into every program it runs. */
    out->glibc_chunks = out->usable_size &&
                        same_module((void *)out->free, (void *)gnu_get_libc_version) &&
                        same_module(dlsym(RTLD_DEFAULT, "malloc"), (void *)gnu_get_libc_version) &&
                        !dl_iterate_phdr(valgrind_object, NULL);
}

int lt_platform_tid(void)
{
    return gettid();
}

/* The system call itself: glibc's nanosleep and clock_nanosleep are cancellation points. */
void lt_platform_nap(unsigned us)
{
    struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &t, NULL);
}

void lt_platform_sleep_on(_Atomic int *word, int value, unsigned us)
{
    struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &t, NULL, 0);
}

void lt_platform_wake_one(_Atomic int *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int lt_platform_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

/* /proc/self/task/<tid>/comm, with cancellation disabled: open and read are cancellation
 * points, and the callers are inside the program's lock calls. */
int lt_platform_thread_name_of(int tid, char *buf, size_t size)
{
    char path[64], name[17];
    size_t at = lt_fmt_str(path, sizeof path, 0, "/proc/self/task/");
    at = lt_fmt_dec(path, sizeof path, at, tid);
    lt_fmt_str(path, sizeof path, at, "/comm");
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, name, sizeof name - 1);
    if (fd >= 0)
        close(fd);
    pthread_setcancelstate(state, NULL);
    if (n <= 0 || size == 0)
        return -1;
    while (n > 0 && name[n - 1] == '\n')
        n--;
    size_t i = 0;
    for (; i + 1 < size && i < (size_t)n; i++)
        buf[i] = name[i];
    buf[i] = 0;
    return 0;
}

/* The hexadecimal mask on the line of /proc's status that starts with `key`, 0 if none. */
static uint64_t status_mask(const char *status, const char *key)
{
    const char *at = strstr(status, key);
    uint64_t mask = 0;
    if (!at)
        return 0;
    for (at += strlen(key); *at == ' ' || *at == '\t'; at++)
        ;
    for (;; at++) {
        int d = *at >= '0' && *at <= '9'   ? *at - '0'
                : *at >= 'a' && *at <= 'f' ? *at - 'a' + 10
                                           : -1;
        if (d < 0)
            return mask;
        mask = mask << 4 | (uint64_t)d;
    }
}

/* The file at `path` (under /proc), as much as fits in buf; "" when it cannot be read. With
 * cancellation disabled: open and read are cancellation points. */
static void proc_file(const char *path, char *buf, size_t size)
{
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    for (ssize_t got = 1; fd >= 0 && got > 0 && n < size - 1; n += (size_t)got)
        if ((got = read(fd, buf + n, size - 1 - n)) < 0)
            got = 0;
    if (fd >= 0)
        close(fd);
    pthread_setcancelstate(state, NULL);
    buf[n] = 0;
}

/* Whether a seccomp filter is, or may be, in force in the calling thread: the "Seccomp:" line
 * of /proc/thread-self/status (0 no filter, 2 filters; 1, strict mode, allows no call the
 * tracer makes), read into status ("" once a filter was seen: not read again). A filter is
 * never taken away and is inherited, so once one is seen, calls a filter may kill the process
 * for are made no more (LT_REFUSED_KILLABLE), nor is the file read again. May be: the file
 * unreadable (Chromium's renderers: open refused with EPERM, or an empty root without /proc),
 * or the line not within what was read. A kernel without seccomp has no such line. Not
 * prctl(PR_GET_SECCOMP), which Chromium's filter kills the process for where it lets open
 * fail (libc opens files of its own: sandboxes refuse file system calls with an error, the
 * rest they do not expect with death); not a watch on the program's prctl and seccomp calls,
 * which misses those made with a raw system call instruction (Chromium's). Per thread: a
 * filter may be the calling thread's alone. A filter installed by another thread after this
 * read and before the calls that follow it is missed. Async-signal-safe; errno kept. */
static int filtered(char *status, size_t size)
{
    status[0] = 0;
    if (lt_platform_refused(LT_REFUSED_KILLABLE))
        return 1;
    int saved = errno;
    proc_file("/proc/thread-self/status", status, size);
    errno = saved;
    const char *line = strstr(status, "\nSeccomp:");
    if (line ? status_mask(line, "\nSeccomp:") == 0 : status[0] && strlen(status) < size - 1)
        return 0;
    lt_platform_refuse(LT_REFUSED_KILLABLE);
    return 1;
}

static void task_file(int tid, const char *file, char *buf, size_t size)
{
    char path[64];
    size_t at = lt_fmt_str(path, sizeof path, 0, "/proc/self/task/");
    at = lt_fmt_dec(path, sizeof path, at, tid);
    at = lt_fmt_str(path, sizeof path, at, "/");
    lt_fmt_str(path, sizeof path, at, file);
    proc_file(path, buf, size);
}

/* A task's syscall file, "nr arg0 .. arg5 sp pc" (the arguments in hex) while it sleeps in a
 * call: the call's number (-1 when there is none: "running", "-1 sp pc" outside a call, or
 * nothing read), and up to n of its first arguments in arg; how many were read. */
static int syscall_of(const char *call, long *nr, unsigned long *arg, int n)
{
    char *end;
    *nr = strtol(call, &end, 10);
    if (end == call || *nr < 0) {
        *nr = -1;
        return 0;
    }
    int got = 0;
    for (const char *at = end; got < n; at = end) {
        arg[got] = strtoul(at, &end, 16);
        if (end == at)
            break;
        got++;
    }
    return got;
}

/* The calls a holder sleeps in while its waiters wait: I/O, sleeps, child waits, and the
 * futex of a lock the tracer does not see (a semaphore, a raw futex); fd: its first
 * argument is a descriptor, whose file is named. */
static const struct {
    long nr;
    const char *name;
    int fd;
} calls[] = {
    {SYS_read, "read", 1}, {SYS_write, "write", 1}, {SYS_readv, "readv", 1},
    {SYS_writev, "writev", 1}, {SYS_pread64, "pread64", 1}, {SYS_pwrite64, "pwrite64", 1},
    {SYS_recvfrom, "recvfrom", 1}, {SYS_recvmsg, "recvmsg", 1}, {SYS_sendto, "sendto", 1},
    {SYS_sendmsg, "sendmsg", 1}, {SYS_accept, "accept", 1}, {SYS_accept4, "accept4", 1},
    {SYS_connect, "connect", 1}, {SYS_flock, "flock", 1}, {SYS_fcntl, "fcntl", 1},
    {SYS_fsync, "fsync", 1}, {SYS_fdatasync, "fdatasync", 1}, {SYS_epoll_pwait, "epoll_pwait", 1},
    {SYS_ppoll, "ppoll", 0}, {SYS_pselect6, "pselect6", 0}, {SYS_nanosleep, "nanosleep", 0},
    {SYS_clock_nanosleep, "clock_nanosleep", 0}, {SYS_wait4, "wait4", 0},
    {SYS_waitid, "waitid", 0}, {SYS_futex, "futex", 0},
    {SYS_rt_sigtimedwait, "rt_sigtimedwait", 0}, {SYS_rt_sigsuspend, "rt_sigsuspend", 0},
    {SYS_openat, "openat", 0},
#ifdef SYS_epoll_wait /* not on every architecture */
    {SYS_epoll_wait, "epoll_wait", 1},
#endif
#ifdef SYS_poll
    {SYS_poll, "poll", 0},
#endif
#ifdef SYS_select
    {SYS_select, "select", 0},
#endif
#ifdef SYS_pause
    {SYS_pause, "pause", 0},
#endif
};

void lt_platform_thread_doing(int tid, char *buf, size_t size)
{
    char call[128];
    buf[0] = 0;
    if (lt_platform_filtered()) /* no file of /proc read where a filter may kill for it */
        return;
    task_file(tid, "syscall", call, sizeof call);
    if (strncmp(call, "running", 7) == 0) {
        lt_fmt_str(buf, size, 0, "running");
        return;
    }
    long nr;
    unsigned long fd;
    int args = syscall_of(call, &nr, &fd, 1);
    if (nr < 0)
        return;
    size_t i = 0, n = sizeof calls / sizeof calls[0];
    while (i < n && calls[i].nr != nr)
        i++;
    size_t at = lt_fmt_str(buf, size, 0, "the system call ");
    if (i == n) {
        lt_fmt_dec(buf, size, at, nr);
        return;
    }
    at = lt_fmt_str(buf, size, at, calls[i].name);
    if (!calls[i].fd || args < 1 || fd > INT32_MAX)
        return;
    char path[64], file[256];
    size_t p = lt_fmt_str(path, sizeof path, 0, "/proc/self/fd/");
    lt_fmt_dec(path, sizeof path, p, (long)fd);
    ssize_t got = readlink(path, file, sizeof file - 1);
    at = lt_fmt_str(buf, size, at, " on fd ");
    at = lt_fmt_dec(buf, size, at, (long)fd);
    if (got > 0) {
        file[got] = 0;
        at = lt_fmt_str(buf, size, at, " (");
        at = lt_fmt_str(buf, size, at, file);
        lt_fmt_str(buf, size, at, ")");
    }
}

int lt_platform_futex_word(int tid, uintptr_t *word)
{
    char call[64];
    task_file(tid, "syscall", call, sizeof call);
    if (!call[0])
        return -1;
    long nr;
    unsigned long arg;
    int args = syscall_of(call, &nr, &arg, 1);
    if (nr != SYS_futex)
        return 0;
    if (args < 1)
        return -1;
    /* A word of the tracer's own: the thread waits for a tracer lock (lt_platform_sleep_on),
     * inside the tracer, where a nap was before: not where a program's wait blocks. */
    *word = arg;
    return !lt_platform_in_tracer(arg);
}

int lt_platform_signal_coming(int tid)
{
    char status[4096];
    task_file(tid, "status", status, sizeof status);
    uint64_t pending = status_mask(status, "\nSigPnd:") | status_mask(status, "\nShdPnd:");
    return (pending & ~status_mask(status, "\nSigBlk:") & ~status_mask(status, "\nSigIgn:")) != 0;
}

/* A sandbox may refuse PR_GET_NAME: Firefox's content processes trap it, log the call on
 * stderr and make it fail, and some died of SIGSEGV meanwhile (1 or 2 in each traced headless
 * screenshot, whose picture was then missing). Once refused, it is not asked again in the
 * process (lt_platform_refused), and the name is "?", not empty, so that a thread's kept name
 * is not asked for at every wait (1,400 logged refusals in one screenshot). errno stays the
 * program's. */
void lt_platform_thread_name(char *buf, size_t size)
{
    char name[16] = {0}; /* PR_GET_NAME writes up to 16 bytes */
    int saved = errno;
    if (lt_platform_refused(LT_REFUSED_NAME)) {
        name[0] = '?';
    } else if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) {
        lt_platform_refuse(LT_REFUSED_NAME);
        name[0] = '?';
    } else if (!name[0]) {
        name[0] = '?';
    }
    errno = saved;
    size_t i = 0;
    for (; i + 1 < size && name[i]; i++)
        buf[i] = name[i];
    if (size)
        buf[i] = 0;
}

/* glibc's destroy sets __kind to -1, which every lock and unlock call refuses (EINVAL); init,
 * a static initialiser or zeroed memory give a valid kind again. It destroys only a mutex
 * nobody holds (__nusers 0, not robust), so the rest of its word stays unlocked: a kind of -1
 * with a lock word or an owner is memory that never was a mutex (0xff bytes, say). */
int lt_platform_mutex_destroyed(const void *mutex)
{
    const pthread_mutex_t *m = mutex;
    if (m->__data.__kind != -1)
        return 0;
    return m->__data.__lock == 0 && m->__data.__owner == 0 && m->__data.__nusers == 0 ? 1 : 2;
}

/* glibc counts each waiter in __wrefs (in steps of 8, above three flag bits) from the start of
 * its wait until the wait no longer needs the condition variable: woken, timed out or
 * cancelled, a waiter leaves that count before it retakes its mutex, and the destroy waits
 * only for the count (nptl/pthread_cond_wait.c, pthread_cond_destroy.c). */
int lt_platform_cond_waited(const void *cv)
{
    return (__atomic_load_n(&((const pthread_cond_t *)cv)->__data.__wrefs, __ATOMIC_ACQUIRE) >> 3) != 0;
}

/* glibc >= 2.25 keeps the process-shared attribute in bit 0 of __wrefs
 * (__PTHREAD_COND_SHARED_MASK); init sets it, and the waiters' count above it never does. */
int lt_platform_cond_shared(const void *cv)
{
    return (__atomic_load_n(&((const pthread_cond_t *)cv)->__data.__wrefs, __ATOMIC_RELAXED) & 1) != 0;
}

/* glibc's barrier word (nptl, glibc >= 2.23; struct pthread_barrier in internaltypes.h):
 * `in` counts arrivals, `current_round` is the arrival count at which the last round
 * completed; a round is complete when in reaches current_round + count. Between the last
 * arrival and its update of current_round the difference is `count`: not counted (they are
 * being let go). Past the reset threshold (2^31 arrivals) arrivals wait for a reset: not
 * counted either. */
typedef struct glibc_barrier {
    unsigned in, current_round, count;
    int shared;
    unsigned out;
} glibc_barrier;
_Static_assert(sizeof(glibc_barrier) <= sizeof(pthread_barrier_t), "glibc's barrier word");

unsigned lt_platform_barrier_blocked(const void *b)
{
    const glibc_barrier *g = b;
    unsigned in = __atomic_load_n(&g->in, __ATOMIC_ACQUIRE);
    unsigned round = __atomic_load_n(&g->current_round, __ATOMIC_ACQUIRE);
    unsigned count = __atomic_load_n(&g->count, __ATOMIC_RELAXED);
    unsigned waiting = in - round;
    return in > round && in <= INT_MAX && waiting < count ? waiting : 0;
}

/* glibc's trylock of a robust mutex made unrecoverable takes its word and returns
 * ENOTRECOVERABLE without giving it back (nptl tests the old word for the caller's tid,
 * where lock and timedlock unlock unconditionally): the mutex is off the caller's robust
 * list, so its unlock crashes in libc, and every other lock waits for good. This gives it
 * back as lock does: the word to 0, a waiter woken (robust futexes are always shared). */
void lt_platform_mutex_untry(void *mutex, int tid)
{
    _Atomic int *word = (_Atomic int *)&((pthread_mutex_t *)mutex)->__data.__lock;
    if ((atomic_load(word) & FUTEX_TID_MASK) == tid) {
        atomic_store(word, 0);
        syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
}

/* glibc's PTHREAD_MUTEX_PSHARED_BIT in __kind (nptl/pthreadP.h); an rwlock keeps the
 * attribute in __shared. A spinlock's word has no room for it. */
enum { GLIBC_MUTEX_PSHARED_BIT = 128 };

int lt_platform_lock_pshared(const void *lock, int kind)
{
    if (kind == LT_MUTEX)
        return (((const pthread_mutex_t *)lock)->__data.__kind & GLIBC_MUTEX_PSHARED_BIT) != 0;
    if (kind == LT_RWLOCK)
        return ((const pthread_rwlock_t *)lock)->__data.__shared != 0;
    return 0;
}

/* glibc honours writer preference only for the non-recursive kind. */
int lt_platform_rwlock_prefers_writer(const void *rwlock)
{
    return ((const pthread_rwlock_t *)rwlock)->__data.__flags ==
           PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* glibc's rwlock word (nptl/pthread_rwlock_common.c): __readers holds the reader count above
 * three flag bits; in a read phase, WRLOCKED means a writer waits to take over. */
enum { GLIBC_RW_WRPHASE = 1, GLIBC_RW_WRLOCKED = 2, GLIBC_RW_READER_SHIFT = 3 };

/* glibc's x86 spinlocks count down from 1 (free); elsewhere they are 0 when free. */
static int spin_locked(int word)
{
#if defined(__x86_64__) || defined(__i386__)
    return word <= 0;
#else
    return word != 0;
#endif
}

/* glibc records the owner's tid in every mutex (__owner) and the writer's in every rwlock
 * (__cur_writer). With lock elision (off unless tuned on) an elided lock records nobody: it
 * then reads as not held, which can only hide a report. */
int lt_platform_lock_held(const void *lock, int kind, int mode, int tid)
{
    int owner;
    switch (kind) {
    case LT_MUTEX:
        owner = ((const pthread_mutex_t *)lock)->__data.__owner;
        return tid ? owner == tid : owner != 0;
    case LT_SPIN: return spin_locked(*(const volatile int *)lock);
    case LT_ONCE: return (*(const volatile int *)lock & 3) == 1; /* glibc: running, not done */
    default: break;
    }
    const pthread_rwlock_t *rw = lock;
    if (mode == LT_MODE_WRITE)
        return tid ? rw->__data.__cur_writer == tid : rw->__data.__cur_writer != 0;
    return (atomic_load((const _Atomic unsigned *)&rw->__data.__readers) >>
            GLIBC_RW_READER_SHIFT) != 0;
}

int lt_platform_lock_owned_by(const void *lock, int kind, int tid)
{
    switch (kind) {
    case LT_MUTEX: return ((const pthread_mutex_t *)lock)->__data.__owner == tid;
    case LT_RWLOCK: return ((const pthread_rwlock_t *)lock)->__data.__cur_writer == tid;
    default: return 0;
    }
}

/* glibc's unlock tells a writer's from a reader's by __cur_writer, the writer's kernel id:
 * another thread's unlock decrements the reader count (which wraps below zero) and leaves
 * __cur_writer as it was. */
int lt_platform_rwlock_writer_kept(const void *rwlock)
{
    return ((const pthread_rwlock_t *)rwlock)->__data.__cur_writer != 0;
}

int lt_platform_rwlock_writer_queued(const void *rwlock)
{
    unsigned r = atomic_load((const _Atomic unsigned *)&((const pthread_rwlock_t *)rwlock)
                                 ->__data.__readers);
    return !(r & GLIBC_RW_WRPHASE) && (r & GLIBC_RW_WRLOCKED) && (r >> GLIBC_RW_READER_SHIFT);
}

/* In a read phase the count is of readers that hold the lock (or have it granted and are on
 * their way out of rdlock); in a write phase it counts readers waiting, who hold nothing. A
 * count with its top bit set is one another thread's unlock took below zero
 * (lt_platform_rwlock_writer_kept): no reader holds it. */
int lt_platform_rwlock_read_held(const void *rwlock)
{
    unsigned r = atomic_load((const _Atomic unsigned *)&((const pthread_rwlock_t *)rwlock)
                                 ->__data.__readers);
    return !(r & GLIBC_RW_WRPHASE) && (r >> GLIBC_RW_READER_SHIFT) != 0 && !(r >> 31);
}

/* Static rather than on the caller's stack, which is the one short of room. While fn runs,
 * [on_lo, on_hi) is its stack and on_caller the caller's registers where it switched, so
 * that an unwind from fn (lockname.c names a lock's frame) goes on into the caller's stack. */
static ucontext_t on_back, on_other;
static unw_context_t on_caller;
static _Atomic uintptr_t on_lo LT_START_DATA, on_hi LT_START_DATA;
static void (*on_fn)(void *);
static void *on_arg;

static void on_entry(void)
{
    on_fn(on_arg); /* returning resumes on_back (uc_link) */
}

int lt_platform_on_stack(void (*fn)(void *), void *arg, void *stack, size_t size)
{
    if (!have_unwind() || unw.unw_tdep_getcontext(&on_caller) != 0 || getcontext(&on_other) != 0)
        return -1;
    on_other.uc_stack.ss_sp = stack;
    on_other.uc_stack.ss_size = size;
    on_other.uc_link = &on_back;
    on_fn = fn;
    on_arg = arg;
    makecontext(&on_other, on_entry, 0);
    atomic_store_explicit(&on_lo, (uintptr_t)stack, memory_order_relaxed);
    atomic_store_explicit(&on_hi, (uintptr_t)stack + size, memory_order_relaxed);
    int rc = swapcontext(&on_back, &on_other);
    atomic_store_explicit(&on_hi, 0, memory_order_relaxed);
    return rc == 0 ? 0 : -1;
}

/* Whether this thread runs on lt_platform_on_stack's stack now. */
static int on_other_stack(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return sp >= atomic_load_explicit(&on_lo, memory_order_relaxed) &&
           sp < atomic_load_explicit(&on_hi, memory_order_relaxed);
}

static size_t unwind_frames(lt_frame *frames, size_t max)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    size_t n = 0;
    if (on_other_stack())
        ctx = on_caller; /* the frames before the switch, the program's among them */
    else if (unw.unw_tdep_getcontext(&ctx) != 0)
        return 0;
    if (unw.unw_init_local(&cur, &ctx) != 0)
        return 0;
    while (n < max) {
        unw_word_t ip, sp;
        unw.unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw.unw_get_reg(&cur, UNW_REG_SP, &sp);
        frames[n].ip = ip;
        frames[n].sp = sp;
        n++;
        if (unw.unw_step(&cur) <= 0)
            break;
    }
    return n;
}

size_t lt_platform_unwind(lt_frame *frames, size_t max)
{
    unw_call c;
    if (!have_unwind() || !unw_enter_masked(&c))
        return 0;
    size_t n = unwind_frames(frames, max);
    unw_leave(&c);
    return n;
}

/* The dynamic linker's entry that returns (allocating it on a thread's first call) the
 * thread's block of a dlopened module's thread-local storage (the x86-64 and AArch64 ABI). */
typedef struct {
    unsigned long module, offset;
} tls_index;
extern void *__tls_get_addr(tls_index *ti);

/* libunwind is loaded with dlopen, so its thread-local state is allocated by glibc, with
 * malloc, on each thread's first unwind. Left to happen later, inside a lock that the
 * program's own malloc takes, that allocation would deadlock; asking for the block here does
 * it now. Not an unwind: unw_backtrace's first call in a thread also builds its 256 KiB
 * trace cache, which cost a thread that lives for one lock a millisecond (32x the CPU of a
 * program that starts 20000 such threads). */
void lt_platform_thread_init(void)
{
    if (!have_unwind() || !unw_tls_module)
        return;
    /* glibc ends the process when that malloc is refused ("cannot allocate memory for
     * thread-local data: ABORT", status 127), where the program, near its memory's end, has
     * its own allocations refused and goes on. A block of the same size malloc'd and freed
     * first stays in this thread's cache for it; refused, the thread unwinds nothing (its
     * stacks are its call sites) and the block is never asked for. */
    int busy = lt_tls.busy;
    lt_busy_set(&lt_tls, LT_BUSY_PASS); /* the program's allocator may block on a program lock */
    void *room = malloc(unw_tls_bytes ? unw_tls_bytes : 1);
    if (room) {
        free(room);
        __tls_get_addr(&(tls_index){unw_tls_module, 0});
    }
    lt_busy_set(&lt_tls, busy);
    if (!room) {
        if (lt_tls.self)
            lt_tls.self->unwind_none = 1;
        lt_report_degraded("out of memory for a thread's unwinder state: its stacks are call sites only");
    }
}

size_t lt_platform_backtrace(uintptr_t *ips, size_t max)
{
    unw_call c;
    if (!have_unwind() || !unw_enter(&c))
        return 0;
    int n = unw.unw_backtrace((void **)ips, (int)max);
    unw_leave(&c);
    return n > 0 ? (size_t)n : 0;
}

uintptr_t lt_platform_proc_start(uintptr_t ip)
{
    unw_proc_info_t pi;
    unw_call c;
    if (!have_unwind() || !unw_enter(&c))
        return 0;
    int rc = unw.unw_get_proc_info_by_ip(*unw.local_as, ip, &pi, NULL);
    unw_leave(&c);
    return rc == 0 ? pi.start_ip : 0;
}

int lt_platform_unwind_info(uintptr_t ip)
{
    unw_proc_info_t pi;
    unw_call c;
    if (!have_unwind() || ip == 0 || !unw_enter(&c))
        return -1;
    int rc = unw.unw_get_proc_info_by_ip(*unw.local_as, ip - 1, &pi, NULL);
    unw_leave(&c);
    return rc == 0 ? 1 : rc == -UNW_ENOINFO ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------
 * Separate debug files, found locally only: by build-id under /usr/lib/debug/.build-id, else
 * by .gnu_debuglink beside the file, in its .debug/ directory or under /usr/lib/debug.
 * libdw's dwfl_standard_find_debuginfo asks debuginfod last, which loads libcurl and a TLS
 * stack into the traced program (running their initialisers, even after the program's own
 * cleanup at exit) and may block the reporting thread on the network. Network lookups are
 * for the offline `locktrace report`.
 * ---------------------------------------------------------------------------------------- */

/* Whether the file at fd is mod's debug file: same build-id, when mod has one to compare. */
static int debug_file_matches(Dwfl_Module *mod, int fd)
{
    const unsigned char *want;
    const void *got;
    GElf_Addr vaddr;
    int n = dw.dwfl_module_build_id(mod, &want, &vaddr);
    if (n <= 0)
        return 1;
    dw.elf_version(EV_CURRENT);
    Elf *elf = dw.elf_begin(fd, ELF_C_READ_MMAP, NULL);
    ssize_t m = elf ? dw.dwelf_elf_gnu_build_id(elf, &got) : -1;
    int same = m == n && memcmp(got, want, (size_t)n) == 0;
    if (elf)
        dw.elf_end(elf);
    return same;
}

static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname,
                                Dwarf_Addr base, const char *file, const char *debuglink,
                                GElf_Word crc, char **debuginfo_file_name)
{
    int fd = dw.dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
                                             debuginfo_file_name);
    for (size_t i = 0; fd < 0 && file && debuglink && i < LT_DEBUGLINK_PLACES; i++) {
        char path[4096];
        if (!lt_platform_debuglink_path(path, sizeof path, file, debuglink, i) ||
            (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        if (debug_file_matches(mod, fd) && (*debuginfo_file_name = strdup(path)) != NULL)
            return fd_kept(fd);
        close(fd);
        fd = -1;
    }
    return fd_kept(fd);
}

/* The loader's counts of objects loaded and unloaded so far (glibc's dlpi_adds, dlpi_subs).
 * The same counts mean the same objects at the same addresses. */
typedef struct loader_gen {
    unsigned long long adds, subs;
} loader_gen;

static int read_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
    loader_gen *g = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *g = (loader_gen){info->dlpi_adds, info->dlpi_subs};
    return 1;
}

/* The objects dlclose has just unloaded that this thread's reports still name
 * (lt_platform_modules_unloaded), and the number of that list, 0 when there is none. */
static __thread const lt_module_span *unloaded LT_TLS;
static __thread size_t nunloaded LT_TLS;
static __thread unsigned long unloaded_list LT_TLS;
static _Atomic unsigned long unloaded_lists; /* lists made so far */

/* The libdw session, and the loader's state it knows: the counts it was brought up to date
 * at, and the load biases of the objects reported to it. */
#define KNOWN_OBJECTS 4096
static struct {
    Dwfl *dwfl;
    int tried;
    loader_gen at;
    unsigned long unloaded; /* the list of unloaded objects it knows too, 0 = none */
    size_t nknown;
    uintptr_t known[KNOWN_OBJECTS];
} session;

/* Objects found new in the loader's list, named, to be reported to libdw after the walk:
 * libdw allocates (its thread-local block, its tables), and a malloc that unwinds (gperftools'
 * heap profiler) needs libunwind's lock, which a SIGPROF handler's unwind in another thread
 * holds while it waits for the loader's lock the walk holds: the demo's report under
 * libtcmalloc_and_profiler with CPUPROFILE and HEAPPROFILE set hung in 3 of 5 runs. */
#define NEW_OBJECTS 16
static struct {
    size_t n;
    int more; /* the walk stopped with new objects left */
    uintptr_t addr[NEW_OBJECTS];
    char path[NEW_OBJECTS][PATH_MAX];
} found;

/* Notes a loaded object the session does not know yet, from its file, at its load bias. Taken
 * from the loader's list, not /proc/self/maps, where libdw's own mappings of the files it
 * reads would show as more pieces of them. The vdso has no file and stays unknown. */
static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (size_t i = 0; i < session.nknown; i++)
        if (session.known[i] == info->dlpi_addr)
            return 0;
    if (session.nknown == KNOWN_OBJECTS)
        return 1;
    if (found.n == NEW_OBJECTS) {
        found.more = 1;
        return 1;
    }
    session.known[session.nknown++] = info->dlpi_addr;
    found.addr[found.n] = info->dlpi_addr;
    if (!info->dlpi_name || !info->dlpi_name[0])
        lt_platform_exe_path(found.path[found.n], PATH_MAX);
    else
        lt_fmt_str(found.path[found.n], PATH_MAX, 0, info->dlpi_name);
    found.n++;
    return 0;
}

/* path, loaded at base, to libdw, from a descriptor of ours (fd_kept), which libdw keeps on
 * success. */
static void report_object(const char *path, uintptr_t base)
{
    int fd = fd_kept(open(path, O_RDONLY | O_CLOEXEC));
    if (fd >= 0 && !dw.dwfl_report_elf(session.dwfl, path, path, fd, base, true))
        close(fd);
}

/* Reports every object the session does not know yet to libdw, outside the loader's lock. */
static void report_objects(void)
{
    do {
        found.n = 0;
        found.more = 0;
        dl_iterate_phdr(find_object, NULL);
        for (size_t i = 0; i < found.n; i++)
            report_object(found.path[i], found.addr[i]);
    } while (found.more);
    for (size_t i = 0; i < nunloaded; i++) { /* unless something was loaded there since */
        const lt_module *m = &unloaded[i].module;
        size_t k = 0;
        while (k < session.nknown && session.known[k] != m->base)
            k++;
        if (k == session.nknown)
            report_object(m->path, m->base);
    }
}

/* The libdw session, brought up to date when the loader's counts have moved since it was: a
 * library dlopened since then is added (it would have no names or lines); after an unload
 * the session is made anew, since a library loaded where a closed one was would get the
 * closed one's; so it is when the thread's list of objects just unloaded changes, whose
 * files it then reads too. Reports are serialised; lt_symbol's strings last until the next call, so
 * nothing from an ended session is still in use. */
static Dwfl *symbolizer(void)
{
    static const Dwfl_Callbacks callbacks = {.find_debuginfo = find_debuginfo_local};
    loader_gen now = {0, 0};
    if (!have_dw())
        return NULL;
    dl_iterate_phdr(read_gen, &now);
    if (session.tried && now.adds == session.at.adds && now.subs == session.at.subs &&
        session.unloaded == unloaded_list)
        return session.dwfl;
    if (session.dwfl && (now.subs != session.at.subs || session.unloaded != unloaded_list)) {
        dw.dwfl_end(session.dwfl);
        session.dwfl = NULL;
    }
    session.tried = 1;
    session.at = now;
    session.unloaded = unloaded_list;
    if (!session.dwfl) {
        session.nknown = 0;
        if ((session.dwfl = dw.dwfl_begin(&callbacks)) == NULL)
            return NULL;
    }
    dw.dwfl_report_begin_add(session.dwfl);
    report_objects();
    if (dw.dwfl_report_end(session.dwfl, NULL, NULL) != 0) {
        dw.dwfl_end(session.dwfl);
        session.dwfl = NULL;
    }
    return session.dwfl;
}

/* __cxa_demangle: the program's own, or libstdc++'s loaded privately (a C program, or a C++
 * one linked without libstdc++, still gets readable C++ names); NULL when there is none. */
typedef char *(*demangler)(const char *, char *, size_t *, int *);
static demangler find_demangler(void)
{
    static demangler fn;
    static int looked;
    if (!looked) {
        looked = 1;
        fn = (demangler)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        void *h = fn ? NULL : dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            fn = (demangler)dlsym(h, "__cxa_demangle");
    }
    return fn;
}

/* Names of one lookup (its inlined calls and function), demangled; valid until the next. */
#define NAMES 64
static char names[NAMES][1024];
static size_t nnames;

static const char *name_of(void *ctx, const char *symbol)
{
    (void)ctx;
    demangler fn = symbol && symbol[0] == '_' && symbol[1] == 'Z' ? find_demangler() : NULL;
    int status = -1;
    char *d = fn ? fn(symbol, NULL, NULL, &status) : NULL;
    const char *use = d && status == 0 ? d : symbol;
    char *buf = names[nnames++ % NAMES];
    size_t i = 0;
    for (; use && use[i] && i + 1 < sizeof names[0]; i++)
        buf[i] = use[i];
    buf[i] = 0;
    free(d);
    return use ? buf : NULL;
}

void lt_platform_symbolize_init(void)
{
    have_dw();
}

size_t lt_platform_symbolize(uintptr_t ip, lt_symbol *out, size_t max)
{
    Dl_info info;
    lt_dw_frame found[NAMES / 2];
    if (max == 0)
        return 0;
    out[0] = (lt_symbol){0};
    if (dladdr((void *)ip, &info)) {
        out[0].module = info.dli_fname;
        out[0].module_offset = ip - (uintptr_t)info.dli_fbase;
        if (info.dli_sname) {
            out[0].function = info.dli_sname;
            out[0].function_offset = ip - (uintptr_t)info.dli_saddr;
        }
    }
    Dwfl *dwfl = symbolizer();
    Dwfl_Module *mod = dwfl ? dw.dwfl_addrmodule(dwfl, ip) : NULL;
    dw_frames.name = name_of;
    nnames = 0;
    size_t n = mod ? lt_dw_frames(&dw_frames, mod, ip, found, max < NAMES / 2 ? max : NAMES / 2)
                   : 0;
    lt_symbol base = out[0];
    for (size_t i = 0; i < n; i++) {
        lt_symbol s = base;
        if (found[i].function) {
            s.function = found[i].function;
            s.function_offset = found[i].function_offset;
        }
        s.file = found[i].file;
        s.line = found[i].line;
        s.inlined = found[i].inlined;
        s.split_missing = found[i].split_missing;
        out[i] = s;
    }
    return n ? n : 1;
}

/* Start of the loaded segment of info's object that holds addr, 0 when none does. */
static uintptr_t load_segment(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= start && addr < start + ph->p_memsz)
            return start;
    }
    return 0;
}

/* An object's span: from the start of its first loaded segment to the end of its last, found
 * once by an address in it. Then the question is two compares, which a signal handler may ask
 * (sigaction's, whether a handler is the tracer's: dladdr there took the loader's lock, and
 * the thread the signal interrupted might be taking it - in dladdr itself, in the same
 * sigaction). */
typedef struct span_query {
    uintptr_t addr, lo, hi;
} span_query;

static int span_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    span_query *q = arg;
    (void)size;
    if (!load_segment(info, q->addr))
        return 0;
    q->lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) {
            q->lo = start < q->lo ? start : q->lo;
            q->hi = start + ph->p_memsz > q->hi ? start + ph->p_memsz : q->hi;
        }
    }
    return 1;
}

/* Sets *sp to the span of the object that holds addr (nothing when none does). */
static void span_of(span *sp, uintptr_t addr)
{
    span_query q = {addr, 0, 0};
    if (!dl_iterate_phdr(span_find, &q))
        return;
    atomic_store_explicit(&sp->lo, q.lo, memory_order_relaxed);
    atomic_store_explicit(&sp->hi, q.hi, memory_order_release);
}

static int in_span(span *sp, uintptr_t ip)
{
    uintptr_t hi = atomic_load_explicit(&sp->hi, memory_order_acquire);
    uintptr_t lo = atomic_load_explicit(&sp->lo, memory_order_relaxed);
    return ip - lo < hi - lo;
}

static span own LT_START_DATA;

int lt_platform_in_tracer(uintptr_t ip)
{
    if (lt_unlikely(!atomic_load_explicit(&own.hi, memory_order_acquire)))
        span_of(&own, (uintptr_t)lt_platform_in_tracer);
    return in_span(&own, ip);
}

int lt_platform_in_unwinder(uintptr_t ip)
{
    return in_span(&unwinder, ip);
}

static int segment_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t *addr = arg, start = load_segment(info, *addr);
    (void)size;
    if (start)
        *addr = start;
    return start != 0;
}

/* The module whose segments hold addr. libdw knows a module by its file mappings, so a large
 * .bss, mapped anonymously past the file's end, is found through its segment's start. */
static Dwfl_Module *data_module(Dwfl *dwfl, uintptr_t addr)
{
    Dwfl_Module *mod = dw.dwfl_addrmodule(dwfl, addr);
    uintptr_t start = addr;
    if (!mod && dl_iterate_phdr(segment_of, &start) == 1)
        mod = dw.dwfl_addrmodule(dwfl, start);
    return mod;
}

/* A variable's symbol: an object (or common) symbol whose extent covers addr; the nearest
 * lower symbol alone would name padding or a neighbour. */
int lt_platform_data_symbol(uintptr_t addr, char *buf, size_t size)
{
    GElf_Off off = 0;
    GElf_Sym sym;
    Dwfl *dwfl = symbolizer();
    Dwfl_Module *mod = dwfl ? data_module(dwfl, addr) : NULL;
    const char *name = mod ? dw_frames.dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL)
                           : NULL;
    int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
    if (!name || (type != STT_OBJECT && type != STT_COMMON) || off >= sym.st_size)
        return 0;
    nnames = 0;
    size_t n = lt_fmt_str(buf, size, 0, name_of(NULL, name));
    if (off) {
        n = lt_fmt_str(buf, size, n, "+");
        lt_fmt_hex(buf, size, n, off);
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Thread-local variables. A thread's block of a module's TLS is found through its dynamic
 * thread vector (DTV), which glibc keeps in the thread's TCB on x86-64 (tcbhead_t: the TCB's
 * own address, then the DTV; pthread_t is the TCB's address): entry m (16 bytes: the block,
 * what to free) is module m's block, -1 while not made. That layout is glibc's own, so it is
 * checked first against what dl_iterate_phdr says of the reporting thread's blocks
 * (dlpi_tls_data); every read of another thread's is a peek, as that thread runs on (a DTV it
 * grows meanwhile is read stale, and a block found so is still checked to hold addr).
 * ---------------------------------------------------------------------------------------- */
#if defined(__x86_64__) && defined(__GLIBC__)
typedef struct tls_query {
    uintptr_t addr, self_dtv, dtv;
    int bad;               /* the reporting thread's DTV disagrees with dl_iterate_phdr */
    uintptr_t image, offset; /* found: the module's TLS image, and addr's offset in its block */
} tls_query;

static int dtv_of(uintptr_t tcb, uintptr_t *dtv)
{
    return tcb && lt_platform_peek(dtv, (const void *)(tcb + sizeof(void *)), sizeof *dtv) == 0;
}

static int dtv_block(uintptr_t dtv, size_t module, uintptr_t *block)
{
    return lt_platform_peek(block, (const void *)(dtv + module * 2 * sizeof(void *)),
                            sizeof *block) == 0 && *block != (uintptr_t)-1;
}

static int tls_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    tls_query *q = arg;
    const ElfW(Phdr) *tls = NULL;
    uintptr_t mine, theirs;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            tls = &info->dlpi_phdr[i];
    if (!tls || !info->dlpi_tls_modid)
        return 0;
    if (info->dlpi_tls_data &&
        (!dtv_block(q->self_dtv, info->dlpi_tls_modid, &mine) || mine != (uintptr_t)info->dlpi_tls_data))
        return q->bad = 1;
    if (!dtv_block(q->dtv, info->dlpi_tls_modid, &theirs) || q->addr - theirs >= tls->p_memsz)
        return 0;
    q->image = info->dlpi_addr + tls->p_vaddr;
    q->offset = q->addr - theirs;
    return 1;
}

int lt_platform_tls_symbol(uintptr_t addr, uintptr_t thread, char *buf, size_t size)
{
    tls_query q = {.addr = addr};
    Dwfl *dwfl = symbolizer();
    if (!dwfl || !dtv_of((uintptr_t)pthread_self(), &q.self_dtv) || !dtv_of(thread, &q.dtv) ||
        !dl_iterate_phdr(tls_module, &q) || q.bad)
        return 0;
    Dwfl_Module *mod = data_module(dwfl, q.image);
    int n = mod ? dw.dwfl_module_getsymtab(mod) : 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        const char *name = dw.dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL);
        /* a TLS symbol's value is its offset in the module's block (unadjusted here) */
        if (!name || GELF_ST_TYPE(sym.st_info) != STT_TLS || q.offset - sym.st_value >= sym.st_size)
            continue;
        nnames = 0;
        size_t at = lt_fmt_str(buf, size, 0, name_of(NULL, name));
        if (q.offset != sym.st_value) {
            at = lt_fmt_str(buf, size, at, "+");
            lt_fmt_hex(buf, size, at, q.offset - sym.st_value);
        }
        return 1;
    }
    return 0;
}
#else
int lt_platform_tls_symbol(uintptr_t addr, uintptr_t thread, char *buf, size_t size)
{
    (void)addr;
    (void)thread;
    (void)buf;
    (void)size;
    return 0;
}
#endif

/* process_vm_readv on ourselves reports EFAULT instead of raising SIGSEGV, in one copy that
 * a mapping removed meanwhile cannot fault. The process is named by getpid, a system call:
 * not by the thread id the registry keeps, which a child that a raw clone made (Chromium's
 * zygote makes its renderers so, without libc's fork handlers) inherits from its parent,
 * naming the parent (whose memory it read) or, in a new pid namespace, nobody. */
int lt_platform_peek(void *dst, const void *src, size_t n)
{
    struct iovec local = {dst, n}, remote = {(void *)src, n};
    if (lt_platform_refused(LT_REFUSED_KILLABLE))
        return -1;
    int saved = errno;
    int ok = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
    /* ESRCH: the main thread has left (pthread_exit) and the process's leader has no memory;
     * the calling thread names the same memory */
    if (!ok && errno == ESRCH)
        ok = process_vm_readv(gettid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
    errno = saved;
    return ok ? 0 : -1;
}

int lt_platform_filtered(void)
{
    char status[STATUS_SIZE];
    return filtered(status, sizeof status);
}

/* Each 4 KiB page of the range is checked (its first 8 bytes: a page is readable whole or not
 * at all), then the bytes are copied: no process_vm_readv, which sandboxes forbid, Chromium's
 * fatally (see bytes_readable; its renderers crashed at their first new lock call site, whose
 * object's ELF header this reads). A mapping removed between the check and the copy would
 * fault: hence only for memory no other thread can take away meanwhile. errno is the
 * caller's. */
int lt_platform_read(void *dst, const void *src, size_t n)
{
    if (n == 0)
        return 0;
    int saved = errno, ok = 1;
    uintptr_t page = (uintptr_t)src & ~PAGE_4K, last = ((uintptr_t)src + n - 1) & ~PAGE_4K;
    for (;; page += PAGE_4K + 1) {
        ok = page != 0 && bytes_readable(page);
        if (!ok || page == last)
            break;
    }
    errno = saved;
    if (!ok)
        return -1;
    memcpy(dst, src, n);
    return 0;
}

/* The kernel returns from a signal handler into the C library's sigreturn trampoline, which
 * has no symbol a symbolizer finds (glibc's __restore_rt is local; the address looked up for
 * it, one before, is often between functions) and is no call: it is recognised by its code,
 * as unwinders do. */
#if defined(__x86_64__)
#define SIGRETURN_CODE {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, /* mov $15,%rax */ \
                        0x0f, 0x05}                               /* syscall */
#elif defined(__aarch64__)
#define SIGRETURN_CODE {0x68, 0x11, 0x80, 0xd2, /* mov x8, #139 */ \
                        0x01, 0x00, 0x00, 0xd4} /* svc #0 */
#endif
int lt_platform_is_sigreturn(uintptr_t ip)
{
#ifdef SIGRETURN_CODE
    static const unsigned char code[] = SIGRETURN_CODE;
    unsigned char here[sizeof code];
    return lt_platform_read(here, (const void *)ip, sizeof here) == 0 && /* code being run */
           memcmp(here, code, sizeof code) == 0;
#else
    (void)ip;
    return 0;
#endif
}

/*
 * Writes out what the program left in its standard output's and error's buffers, before the
 * tracer aborts it (abort() writes no stdio buffer, and what a program printed before it
 * deadlocked is what its user reads first). Only where that can neither hang nor garble:
 *  - the streams are glibc's own stdout and stderr objects (freopen keeps them); a FILE the
 *    program put in their place may be freed, or run program code to write (fopencookie);
 *  - a stream another thread has locked may stay locked for good (its holder may be one of
 *    the deadlocked threads): ftrylockfile, never flockfile;
 *  - a stream this thread has locked may be in the middle of an operation (a signal handler
 *    that interrupted printf): glibc's lock word names its owner (as in libio's _IO_lock_t:
 *    lock, count, owner), and such a stream is left alone, as is one whose program locks it
 *    itself (FSETLOCKING_BYCALLER: no lock says whether it is in use);
 *  - its descriptor must take a write now: a pipe whose reader waits for this process would
 *    block the write, and with it the abort.
 */
extern FILE _IO_2_1_stdout_, _IO_2_1_stderr_;

static void flush_stream(FILE *f)
{
    struct glibc_io_lock {
        int lock, count;
        void *owner;
    } held;
    void *lock = f->_lock;
    int fd = fileno_unlocked(f);
    struct pollfd p = {fd, POLLOUT, 0};
    if (fd < 0 || __fsetlocking(f, FSETLOCKING_QUERY) == FSETLOCKING_BYCALLER || !lock ||
        lt_platform_read(&held, lock, sizeof held) != 0 || /* glibc's own streams' lock */
        (held.lock && held.owner == (void *)pthread_self()) || poll(&p, 1, 0) != 1 ||
        p.revents != POLLOUT || ftrylockfile(f) != 0)
        return;
    fflush(f);
    funlockfile(f);
}

/* A reader that closes its end between the poll and the write makes it raise SIGPIPE, which
 * would end the process before its report: blocked meanwhile, and one raised here taken back
 * (one the program had pending stays). */
void lt_platform_flush_stdio(void)
{
    sigset_t pipe_only, mask, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &mask);
    int had = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    flush_stream(&_IO_2_1_stdout_);
    flush_stream(&_IO_2_1_stderr_);
    if (!had && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe_only, NULL, &(struct timespec){0, 0});
    if (!sigismember(&mask, SIGPIPE)) /* SIGPIPE alone: see unw_leave */
        pthread_sigmask(SIG_UNBLOCK, &pipe_only, NULL);
}

#ifdef __GLIBC__
/* glibc's (exported, no longer declared): a cleanup buffer that its longjmp runs as it jumps
 * past the frame holding it, as a cancellation does. */
void _pthread_cleanup_push(struct _pthread_cleanup_buffer *buffer, void (*routine)(void *),
                           void *arg);
#endif

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* The program's SIGABRT handler jumped out of the tracer's abort() (siglongjmp, a test
 * framework's way to go on to its next test): the process ends all the same, as abort() ends
 * it after a handler that returns. Going on, the thread would have kept the tracer's state
 * of a call never finished: its later lock calls passed through untraced, its deferred
 * signals waited for good, and its next self-deadlock hung unreported (harden-env.4). */
static void abort_anyway(void *real_sigaction)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigset_t abrt;
    sigemptyset(&dfl.sa_mask);
    if (real_sigaction)
        ((sigaction_fn)real_sigaction)(SIGABRT, &dfl, NULL);
    sigemptyset(&abrt);
    sigaddset(&abrt, SIGABRT);
    pthread_sigmask(SIG_UNBLOCK, &abrt, NULL);
    raise(SIGABRT);
    _exit(127);
}

void lt_platform_abort(void)
{
#ifdef __GLIBC__
    struct _pthread_cleanup_buffer jumped;
    _pthread_cleanup_push(&jumped, abort_anyway, lt_platform_real("sigaction", NULL));
#endif
    abort();
}

void lt_platform_exe_path(char *buf, size_t size)
{
    ssize_t n = size ? readlink("/proc/self/exe", buf, size - 1) : -1;
    if (size)
        buf[n > 0 ? n : 0] = 0;
}

int lt_platform_datagram(const char *name, const char *msg, size_t len)
{
    struct sockaddr_un to = {.sun_family = AF_UNIX}; /* sun_path[0] 0: the abstract name */
    size_t n = strlen(name);
    int rc = -1, saved = errno;
    if (n >= sizeof to.sun_path || lt_platform_filtered())
        return -1;
    memcpy(to.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        ssize_t sent = sendto(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&to,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
        rc = sent == (ssize_t)len ? 0 : errno == EAGAIN || errno == ENOBUFS ? 1 : -1;
        close(fd);
    }
    errno = saved;
    return rc;
}

/* n's build-id as lowercase hex into out (129 bytes); 0 when n is not a GNU build-id note. */
static int build_id_note(const ElfW(Nhdr) *n, char *out)
{
    const char *name = (const char *)(n + 1);
    const unsigned char *desc = (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
    if (n->n_type != NT_GNU_BUILD_ID || n->n_namesz != 4 || n->n_descsz > 64 ||
        memcmp(name, "GNU", 4) != 0)
        return 0;
    for (size_t k = 0; k < n->n_descsz; k++) {
        out[2 * k] = "0123456789abcdef"[desc[k] >> 4];
        out[2 * k + 1] = "0123456789abcdef"[desc[k] & 15];
    }
    out[2 * n->n_descsz] = 0;
    return 1;
}

/* The build-id among a module's PT_NOTE segments, as hex into out (129 bytes), "" if none. */
static void note_build_id(const struct dl_phdr_info *info, char *out)
{
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (ph->p_type == PT_NOTE && p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            if (build_id_note(n, out))
                return;
            p += sizeof *n + ((n->n_namesz + 3) & ~3u) + ((n->n_descsz + 3) & ~3u);
        }
    }
}

typedef struct module_query {
    uintptr_t ip;
    lt_module *out;
} module_query;

static int module_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    module_query *q = arg;
    (void)size;
    if (!load_segment(info, q->ip))
        return 0;
    q->out->base = info->dlpi_addr;
    if (info->dlpi_name && info->dlpi_name[0])
        lt_fmt_str(q->out->path, sizeof q->out->path, 0, info->dlpi_name);
    else
        lt_platform_exe_path(q->out->path, sizeof q->out->path);
    note_build_id(info, q->out->build_id);
    return 1;
}

void lt_platform_modules_unloaded(const lt_module_span *m, size_t n)
{
    unloaded = m;
    nunloaded = n;
    unloaded_list = n ? atomic_fetch_add(&unloaded_lists, 1) + 1 : 0;
}

/* The pages of [lo, hi). */
static size_t hole_pages(uintptr_t *lo, uintptr_t hi)
{
    uintptr_t page = (uintptr_t)getpagesize();
    *lo &= ~(page - 1);
    return ((hi + page - 1) & ~(page - 1)) - *lo;
}

int lt_platform_hold_hole(uintptr_t lo, uintptr_t hi)
{
    size_t size = hole_pages(&lo, hi);
    void *p = mmap((void *)lo, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    if (p != (void *)lo) { /* a kernel before 4.17 took the address for a hint */
        lt_platform_munmap_direct(p, size);
        return -1;
    }
    return 0;
}

void lt_platform_release_hole(uintptr_t lo, uintptr_t hi)
{
    size_t size = hole_pages(&lo, hi);
    lt_platform_munmap_direct((void *)lo, size);
}

int lt_platform_module(uintptr_t ip, lt_module *out)
{
    module_query q = {ip, out};
    if (dl_iterate_phdr(module_of, &q) == 1)
        return 1;
    for (size_t i = 0; i < nunloaded; i++)
        if (ip - unloaded[i].lo < unloaded[i].hi - unloaded[i].lo) {
            *out = unloaded[i].module;
            return 1;
        }
    return 0;
}

typedef struct module_span_query {
    module_query module;
    span_query span;
} module_span_query;

static int module_span_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    module_span_query *q = arg;
    return module_of(info, size, &q->module) && span_find(info, size, &q->span);
}

int lt_platform_module_span(uintptr_t addr, lt_module_span *out)
{
    module_span_query q = {{addr, &out->module}, {addr, 0, 0}};
    if (dl_iterate_phdr(module_span_of, &q) != 1)
        return 0;
    out->lo = q.span.lo;
    out->hi = q.span.hi;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * The same answer from a signal handler: dl_iterate_phdr takes the loader's lock, so the
 * mapping is found in /proc/self/maps (open/read only, parsed as it streams by, so it is
 * never stale) and the ELF headers and build-id note are read from memory with
 * lt_platform_peek.
 * ---------------------------------------------------------------------------------------- */
typedef struct maps_line {
    uintptr_t start, end, offset;
    const char *path; /* NULL for anonymous mappings */
} maps_line;

static uintptr_t hex_field(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (uintptr_t)d;
    }
}

/* "start-end perms offset dev inode   path" */
static void parse_maps_line(const char *s, maps_line *l)
{
    l->start = hex_field(&s);
    s += *s == '-';
    l->end = hex_field(&s);
    for (int field = 0; field < 2 && *s; field++) { /* to the offset */
        while (*s && *s != ' ')
            s++;
        while (*s == ' ')
            s++;
    }
    l->offset = hex_field(&s);
    l->path = strchr(s, '/');
}

/* Load bias and build-id of the ELF object whose first page is mapped at base. */
static int elf_at(uintptr_t base, lt_module *out)
{
    ElfW(Ehdr) eh;
    if (lt_platform_read(&eh, (const void *)base, sizeof eh) != 0 ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        return 0;
    out->base = eh.e_type == ET_EXEC ? 0 : base;
    out->build_id[0] = 0;
    /* the headers 16 at a time (a system call each was a dozen at a first lock call), one at
     * a time where that fails */
    ElfW(Phdr) phs[16];
    for (int i = 0, got = 0; i < eh.e_phnum && i < 64; i++) {
        const char *at = (const char *)base + eh.e_phoff + (size_t)i * sizeof *phs;
        if (i % 16 == 0)
            got = lt_platform_read(phs, at, (eh.e_phnum - i < 16 ? eh.e_phnum - i : 16) *
                                                sizeof *phs) == 0;
        ElfW(Phdr) *ph = &phs[i % 16];
        if ((!got && lt_platform_read(ph, at, sizeof *ph) != 0) || ph->p_type != PT_NOTE)
            continue;
        char notes[512];
        size_t n = ph->p_memsz < sizeof notes ? ph->p_memsz : sizeof notes;
        if (lt_platform_read(notes, (const void *)(out->base + ph->p_vaddr), n) != 0)
            continue;
        for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= n;) {
            const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)(notes + at);
            size_t whole = sizeof *note + ((note->n_namesz + 3) & ~3u) + ((note->n_descsz + 3) & ~3u);
            if (at + whole > n)
                break;
            if (build_id_note(note, out->build_id))
                return 1;
            at += whole;
        }
    }
    return 1;
}

/* Calls fn for each line of /proc/self/maps (NUL-terminated, cut at 4 KiB) until it returns
 * nonzero; returns that value, 0 when none did. open/read only, parsed as it streams by: a
 * line whole in the buffer is handed over in place (memchr finds its end), only one that a
 * read cut in two is copied (a byte-by-byte copy of every line was 44 K instructions of a
 * traced process's start, for 3 KiB of maps). */
static int maps_scan(int (*fn)(const char *line, void *arg), void *arg)
{
    char buf[4096], line[4352];
    size_t len = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), done = 0, first = 1;
    ssize_t n;
    while (fd >= 0 && !done && ((n = read(fd, buf, sizeof buf)) > 0 || first)) {
        /* Once the main thread has left (pthread_exit), the process's maps read empty (its
         * leader has no memory): the calling thread's own view then, the same mappings. */
        if (first && n <= 0) {
            close(fd);
            fd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
            first = 0;
            continue;
        }
        first = 0;
        for (char *at = buf, *end = buf + n; at < end && !done;) {
            char *nl = memchr(at, '\n', (size_t)(end - at));
            size_t piece = (size_t)((nl ? nl : end) - at), room = sizeof line - 1 - len;
            if (len == 0 && nl) { /* a whole line */
                *nl = 0;
                done = fn(at, arg);
            } else {
                memcpy(line + len, at, piece < room ? piece : room);
                len += piece < room ? piece : room;
                if (nl) {
                    line[len] = 0;
                    len = 0;
                    done = fn(line, arg);
                }
            }
            at += piece + (nl != NULL);
        }
    }
    if (fd >= 0)
        close(fd);
    return done;
}

/* The main thread's stack as glibc's pthread_getattr_np gives it: it ends at the page above
 * __libc_stack_end and reaches RLIMIT_STACK down from the end of the stack's mapping, but no
 * lower than the end of the mapping below. glibc reads /proc/self/maps for that with stdio and
 * sscanf: 128 K instructions, a malloc and a sched_getaffinity at the start of every traced
 * process (a fifth of the instructions of a traced /bin/true), which maps_scan's one pass does
 * without. */
extern void *__libc_stack_end;

typedef struct stack_scan {
    uintptr_t in, from, to, below; /* in: an address of the stack; its mapping; the one below */
} stack_scan;

static int stack_line(const char *line, void *arg)
{
    stack_scan *s = arg;
    maps_line l;
    parse_maps_line(line, &l);
    if (l.start <= s->in && s->in < l.end) {
        s->from = l.start;
        s->to = l.end;
        return 1;
    }
    s->below = l.end;
    return 0;
}

/* The end of the main stack as lt_platform_main_stack last read it: lt_platform_stack_low
 * knows a stack whose low end is a reach by it. */
static _Atomic uintptr_t main_stack_end;

/* From any thread: what it reads is the process's. */
int lt_platform_main_stack(uintptr_t *lo, uintptr_t *hi)
{
    struct rlimit r;
    uintptr_t page = (uintptr_t)getpagesize();
    stack_scan s = {(uintptr_t)__libc_stack_end, 0, 0, 0};
    if (getrlimit(RLIMIT_STACK, &r) != 0 || !maps_scan(stack_line, &s))
        return -1;
    uintptr_t end = (s.in & ~(page - 1)) + page;
    uintptr_t size = ((uintptr_t)r.rlim_cur - (s.to - end)) & ~(page - 1);
    if (size > end - s.below)
        size = end - s.below;
    *lo = end - size;
    *hi = end;
    atomic_store_explicit(&main_stack_end, end, memory_order_relaxed);
    return 0;
}

/* The kernel grows the stack's mapping down and never shrinks it: whatever of the stack was
 * ever used lies in the mapping now, and what lies below it is not the stack (in the legacy
 * layout, the brk heap grown since the bounds were read: Apache Traffic Server's
 * traffic_manager raises the limit to unlimited for traffic_server, whose heap locks were
 * named "stack of T0" and forgotten when its main thread left). */
uintptr_t lt_platform_stack_low(uintptr_t lo, uintptr_t hi)
{
    stack_scan s = {hi - 1, 0, 0, 0};
    if (hi != atomic_load_explicit(&main_stack_end, memory_order_relaxed) ||
        !maps_scan(stack_line, &s))
        return lo;
    return s.from > lo ? s.from : lo;
}

/* The main thread runs its constructors within a few KiB of __libc_stack_end, and nothing
 * else is mapped within a megabyte below a stack (the kernel's guard gap): a thread's stack,
 * in a fork child of that thread, is never this near. */
#define MAIN_STACK_NEAR (64u * 1024)

int lt_platform_main_stack_later(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), end = (uintptr_t)__libc_stack_end;
    return sp < end && end - sp < MAIN_STACK_NEAR && gettid() == getpid();
}

/* A thread pthread_create made is not asked whether it leads the process: two system calls
 * at each start, which a thread started natively does not make. */
int lt_platform_stack_bounds(int made, uintptr_t *lo, uintptr_t *hi)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    /* not on the main stack: a fork child of a thread */
    if (!made && gettid() == getpid() && lt_platform_main_stack(lo, hi) == 0 && sp >= *lo &&
        sp < *hi)
        return 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return -1;
    int rc = pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_destroy(&a);
    if (rc != 0)
        return -1;
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
    return 0;
}

/* The futex operations that sleep, all with their deadline (NULL: none) as the 4th argument. */
static int futex_sleeps(unsigned long op)
{
    switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT: case FUTEX_WAIT_BITSET: case FUTEX_LOCK_PI: case FUTEX_WAIT_REQUEUE_PI:
        return 1;
    default:
        return 0;
    }
}

/* 1 for the line whose mapping holds *arg, 2 when that mapping is shared ('s' in its perms). */
static int shared_line(const char *line, void *arg)
{
    maps_line l;
    parse_maps_line(line, &l);
    uintptr_t addr = *(const uintptr_t *)arg;
    if (addr < l.start || addr >= l.end)
        return 0;
    const char *perms = strchr(line, ' ');
    return perms && strlen(perms) > 4 && perms[4] == 's' ? 2 : 1;
}

/* /proc/self/task/<tid>/syscall reads "nr arg0 .. arg5 sp pc" while the thread sleeps in a
 * call: whether it is an untimed futex wait that no other process can end. A wait without
 * the private flag (glibc's join waits on the thread's tid word so, for the kernel's wake at
 * exit) is one when its word lies in a private mapping. */
static int stuck_in(const char *call)
{
    long nr;
    unsigned long arg[4];
    if (syscall_of(call, &nr, arg, 4) < 4 || nr != SYS_futex)
        return 0;
    if (!futex_sleeps(arg[1]) || arg[3] != 0)
        return 0;
    uintptr_t word = arg[0];
    return (arg[1] & FUTEX_PRIVATE_FLAG) || maps_scan(shared_line, &word) == 1;
}

/* Whether the program has a handler for sig (the tracer's wrapper of one counts). */
static int handled(int sig)
{
    struct sigaction a;
    return sig > 0 && sig < NSIG && sigaction(sig, NULL, &a) == 0 && a.sa_handler != SIG_DFL &&
           a.sa_handler != SIG_IGN;
}

/* Whether a timer of the process is armed to send a signal the program handles: the handler
 * may end a futex wait that no thread of the process would end (an alarm whose handler
 * posts a semaphore). The real-time interval timer (alarm, setitimer) and the POSIX timers
 * that notify by a signal, listed in /proc/self/timers (its first 4 KB, some 50 timers; a
 * kernel without that file shows none). The CPU-time interval timers do not advance while the program's threads sleep; a
 * timer that starts a thread (SIGEV_THREAD) has a glibc thread waiting for its signal in
 * sigtimedwait, which no stall counts as stuck. Under a seccomp filter one may be: the calls
 * that would say are not made. */
static int timer_coming(void)
{
    struct itimerval real;
    if (lt_platform_filtered()) /* Chromium's filter kills for getitimer and timer_gettime */
        return 1;
    if (getitimer(ITIMER_REAL, &real) == 0 &&
        (real.it_value.tv_sec || real.it_value.tv_usec) && handled(SIGALRM))
        return 1;
    char list[4096];
    proc_file("/proc/self/timers", list, sizeof list);
    /* each timer: "ID: <id>\nsignal: <signo>/<value>\nnotify: <how>/<pid|tid>.<n>\n..." */
    for (const char *at = strstr(list, "ID: "); at; at = strstr(at + 1, "ID: ")) {
        char *end;
        long id = strtol(at + 4, &end, 10);
        const char *sig = strstr(end, "\nsignal: ");
        const char *how = strstr(end, "\nnotify: ");
        struct itimerspec left;
        if (end == at + 4 || !sig || !how || strncmp(how + 9, "signal/", 7) != 0)
            continue;
        if (syscall(SYS_timer_gettime, (int)id, &left) == 0 &&
            (left.it_value.tv_sec || left.it_value.tv_nsec) &&
            handled((int)strtol(sig + 9, NULL, 10)))
            return 1;
    }
    return 0;
}

/* Whether a child process's exit will send a SIGCHLD the program handles: its handler may
 * end a futex wait (a semaphore it posts) as a timer's does. waitid's WNOWAIT leaves every
 * child waitable for the program, and the system call itself is no cancellation point, as
 * glibc's waitid is; it answers for the children of every thread of the process. */
static int child_coming(void)
{
    siginfo_t info;
    int saved = errno;
    int some = handled(SIGCHLD) &&
               syscall(SYS_waitid, P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT, NULL) == 0;
    errno = saved;
    return some;
}

uint64_t lt_platform_others_stuck(const int *skip, size_t n)
{
    union {
        char bytes[4096];
        struct dirent64 align;
    } buf;
    uint64_t print = 1;
    int state;
    if (timer_coming() || child_coming())
        return 0;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state); /* open is a cancellation point */
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    pthread_setcancelstate(state, NULL);
    if (fd < 0)
        return 1; /* no /proc: as without the check */
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf.bytes, sizeof buf.bytes);
        if (got <= 0) {
            print = got < 0 ? 1 : print;
            break;
        }
        for (long at = 0; at < got && print;) {
            const struct dirent64 *d = (const struct dirent64 *)(buf.bytes + at);
            at += d->d_reclen;
            char *end;
            long tid = strtol(d->d_name, &end, 10);
            size_t i = 0;
            while (i < n && skip[i] != tid)
                i++;
            if (end == d->d_name || *end || i < n)
                continue;
            char call[256];
            task_file((int)tid, "syscall", call, sizeof call);
            if (!stuck_in(call)) {
                print = 0;
                break;
            }
            for (const char *c = call; *c; c++)
                print = (print ^ (unsigned char)*c) * 0x100000001b3ull;
            print = (print ^ (uint64_t)tid) * 0x100000001b3ull;
        }
        if (!print)
            break;
    }
    close(fd);
    return print ? print | 1 : 0;
}

typedef struct module_scan {
    uintptr_t ip, first; /* first: start of the current file's first mapping */
    lt_module *out;
    uintptr_t *lo, *hi;
    int found;
} module_scan;

static int module_line(const char *line, void *arg)
{
    module_scan *m = arg;
    maps_line l;
    parse_maps_line(line, &l);
    if (!l.path)
        return 0;
    int same = m->found ? strcmp(l.path, m->out->path) == 0 : 0;
    if (m->found && !same)
        return 1; /* past the file that holds ip */
    if (m->found) {
        *m->hi = l.end;
        return 0;
    }
    if (l.offset == 0)
        m->first = l.start;
    if (m->ip >= l.start && m->ip < l.end) {
        m->found = 1;
        lt_fmt_str(m->out->path, sizeof m->out->path, 0, l.path);
        *m->lo = m->first;
        *m->hi = l.end;
    }
    return 0;
}

int lt_platform_module_safe(uintptr_t ip, lt_module *out, uintptr_t *lo, uintptr_t *hi)
{
    module_scan m = {.ip = ip, .out = out, .lo = lo, .hi = hi};
    out->path[0] = 0;
    maps_scan(module_line, &m);
    return m.found && elf_at(*lo, out);
}

typedef struct mapping_scan {
    uintptr_t addr;
    lt_mapping *out;
} mapping_scan;

static int mapping_line(const char *line, void *arg)
{
    mapping_scan *m = arg;
    maps_line l;
    parse_maps_line(line, &l);
    if (m->addr < l.start || m->addr >= l.end)
        return 0;
    const char *name = l.path ? l.path : strchr(line, '[');
    *m->out = (lt_mapping){.start = l.start, .end = l.end, .offset = l.offset};
    lt_fmt_str(m->out->path, sizeof m->out->path, 0, name ? name : "");
    return 1;
}

int lt_platform_mapping(uintptr_t addr, lt_mapping *out)
{
    mapping_scan m = {addr, out};
    return maps_scan(mapping_line, &m);
}

int lt_platform_shared_memory(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    return maps_scan(shared_line, &a) == 2;
}
