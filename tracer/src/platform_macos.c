/*
 * platform_macos.c - platform.h for macOS (libsystem), but for lt_platform_real, which lives
 * with the interpose table in interpose_macos.c: pthread_threadid_np and pthread_getname_np,
 * backtrace() for stacks, libsystem's libunwind where the stack pointer of each frame is
 * needed, dladdr for names at report time (no file:line: macOS keeps debug info in .dSYM
 * bundles this library does not read).
 *
 * Calls from this library to pthread functions reach libsystem directly: dyld does not apply
 * the interpose table to the image that carries it.
 */
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <libunwind.h>
#include <mach-o/dyld.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <mach/mach_vm.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lt_internal.h"
#include "sigdefer.h"

/* Thread ids are 64-bit on macOS; reports show them, small values fit an int. */
int lt_platform_tid(void)
{
    uint64_t tid = 0;
    pthread_threadid_np(NULL, &tid);
    return (int)tid;
}

/* The tracer unwinds with backtrace(), which takes no lock the program's unwinding holds. */
int lt_platform_in_unwinder(uintptr_t ip)
{
    (void)ip;
    return 0;
}

/* Nothing is loaded on macOS (backtrace() and dladdr are libc's). */
void lt_platform_loads_wait(int wait)
{
    (void)wait;
}

/* A Mach wait: nanosleep is a cancellation point. */
void lt_platform_nap(unsigned us)
{
    mach_timebase_info_data_t base;
    mach_timebase_info(&base);
    mach_wait_until(mach_absolute_time() + (uint64_t)us * 1000 * base.denom / base.numer);
}

/* No futex here, so nothing wakes the sleeper: a nap of at most a millisecond, the longest of
 * lt_spin_backoff's, so that a free lock is seen as soon as before. */
void lt_platform_sleep_on(_Atomic int *word, int value, unsigned us)
{
    (void)word, (void)value;
    lt_platform_nap(us < 1000 ? us : 1000);
}

void lt_platform_wake_one(_Atomic int *word)
{
    (void)word;
}

int lt_platform_secure(void)
{
    return issetugid();
}

/* Another thread's name needs its pthread_t here, not its id: names stay as kept. */
int lt_platform_thread_name_of(int tid, char *buf, size_t size)
{
    (void)tid;
    (void)buf;
    (void)size;
    return -1;
}

int lt_platform_signal_coming(int tid)
{
    (void)tid;
    return 0;
}

int lt_platform_futex_word(int tid, uintptr_t *word)
{
    (void)tid;
    (void)word;
    return -1;
}

void lt_platform_thread_doing(int tid, char *buf, size_t size)
{
    (void)tid;
    if (size)
        buf[0] = 0;
}

/* Another thread's system call cannot be read here: the cycle stands as the hint makes it. */
uint64_t lt_platform_others_stuck(const int *skip, size_t n)
{
    (void)skip;
    (void)n;
    return 1;
}

void lt_platform_thread_name(char *buf, size_t size)
{
    if (size == 0)
        return;
    if (pthread_getname_np(pthread_self(), buf, size) != 0)
        buf[0] = 0;
}

/*
 * macOS keeps a mutex's type in private fields, so it is found by behaviour: a second
 * trylock by the thread that already holds the mutex succeeds only on a recursive one.
 * Errorcheck and normal mutexes cannot be told apart this way; both are reported as normal.
 * A mutex another thread holds is reported as normal too (the relock check that depends on
 * the answer only asks about mutexes the calling thread holds).
 */
int lt_platform_mutex_type(const void *mutex)
{
    pthread_mutex_t *m = (pthread_mutex_t *)mutex;
    if (pthread_mutex_trylock(m) != 0)
        return LT_MUTEX_NORMAL;
    int recursive = pthread_mutex_trylock(m) == 0;
    if (recursive)
        pthread_mutex_unlock(m);
    pthread_mutex_unlock(m);
    return recursive ? LT_MUTEX_RECURSIVE : LT_MUTEX_NORMAL;
}

/* macOS rwlocks have no writer-preference attribute. */
int lt_platform_rwlock_prefers_writer(const void *rwlock)
{
    (void)rwlock;
    return 0;
}

/* libsystem's lock words are private: they cannot contradict the held set. */
int lt_platform_lock_held(const void *lock, int kind, int mode, int tid)
{
    (void)lock, (void)kind, (void)mode, (void)tid;
    return 1;
}

int lt_platform_lock_owned_by(const void *lock, int kind, int tid)
{
    (void)lock, (void)kind, (void)tid;
    return 0;
}

int lt_platform_rwlock_writer_kept(const void *rwlock)
{
    (void)rwlock;
    return 0;
}

int lt_platform_rwlock_writer_queued(const void *rwlock)
{
    (void)rwlock;
    return 1;
}

int lt_platform_rwlock_read_held(const void *rwlock)
{
    (void)rwlock;
    return 0;
}

size_t lt_platform_unwind(lt_frame *frames, size_t max)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    size_t n = 0;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    while (n < max) {
        unw_word_t ip, sp;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw_get_reg(&cur, UNW_REG_SP, &sp);
        frames[n].ip = ip;
        frames[n].sp = sp;
        n++;
        if (unw_step(&cur) <= 0)
            break;
    }
    return n;
}

/* Not known here: a fork takes every tracer lock as it does with threads. */
int lt_platform_alone(void)
{
    return 0;
}

/* No process-wide barrier is offered: the gate keeps its locked instruction. */
int lt_platform_barrier_ready(void)
{
    return 0;
}

int lt_platform_barrier_all(void)
{
    return -1;
}

/* The system unwinder's locks are libSystem's, which fork() itself makes safe. */
void lt_platform_fork(lt_fork_phase phase)
{
    (void)phase;
}

/* libgc on macOS finds data segments through dyld, not tried here. */
void lt_platform_gc_roots(void)
{
}

/* backtrace() keeps no per-thread state that needs preparing. */
void lt_platform_thread_init(void)
{
}

/* Not told: the unwinder needs no loading here. */
int lt_platform_locks_linked(void)
{
    return 1;
}

static void stack_of(pthread_t thread, uintptr_t *lo, uintptr_t *hi)
{
    *hi = (uintptr_t)pthread_get_stackaddr_np(thread); /* the top: stacks grow down */
    *lo = *hi - pthread_get_stacksize_np(thread);
}

int lt_platform_stack_bounds(int made, uintptr_t *lo, uintptr_t *hi)
{
    (void)made;
    stack_of(pthread_self(), lo, hi);
    return 0;
}

int lt_platform_main_stack_later(void)
{
    return 0;
}

int lt_platform_main_stack(uintptr_t *lo, uintptr_t *hi)
{
    stack_of(pthread_main_thread_np(), lo, hi);
    return 0;
}

/* The main thread's stack is a mapping of its own size: its bounds are exact. */
uintptr_t lt_platform_stack_low(uintptr_t lo, uintptr_t hi)
{
    (void)hi;
    return lo;
}

/* ucontext is deprecated on macOS (and never run here): callers stay on their own stack. */
int lt_platform_on_stack(void (*fn)(void *), void *arg, void *stack, size_t size)
{
    (void)fn;
    (void)arg;
    (void)stack;
    (void)size;
    return -1;
}

size_t lt_platform_backtrace(uintptr_t *ips, size_t max)
{
    int n = backtrace((void **)ips, (int)max);
    return n > 0 ? (size_t)n : 0;
}

/* The nearest exported symbol at or below ip: enough to tell two frames' functions apart. */
uintptr_t lt_platform_proc_start(uintptr_t ip)
{
    Dl_info info;
    return dladdr((void *)ip, &info) && info.dli_saddr ? (uintptr_t)info.dli_saddr : 0;
}

/* backtrace(3) follows frame pointers and says nothing of where it stopped. */
int lt_platform_unwind_info(uintptr_t ip)
{
    (void)ip;
    return -1;
}

/* dladdr only: no inlined calls, no lines. */
void lt_platform_symbolize_init(void)
{
}

size_t lt_platform_symbolize(uintptr_t ip, lt_symbol *out, size_t max)
{
    Dl_info info;
    if (max == 0)
        return 0;
    *out = (lt_symbol){0};
    if (!dladdr((void *)ip, &info))
        return 1;
    out->module = info.dli_fname;
    out->module_offset = ip - (uintptr_t)info.dli_fbase;
    if (info.dli_sname) {
        out->function = info.dli_sname;
        out->function_offset = ip - (uintptr_t)info.dli_saddr;
    }
    return 1;
}

/* dladdr knows exported symbols only: a static variable is not named. */
int lt_platform_data_symbol(uintptr_t addr, char *buf, size_t size)
{
    Dl_info info;
    if (!dladdr((void *)addr, &info) || !info.dli_sname || !info.dli_saddr)
        return 0;
    size_t n = lt_fmt_str(buf, size, 0, info.dli_sname);
    if (addr != (uintptr_t)info.dli_saddr) {
        n = lt_fmt_str(buf, size, n, "+");
        lt_fmt_hex(buf, size, n, addr - (uintptr_t)info.dli_saddr);
    }
    return 1;
}

/* libsystem's destroyed mutex is not told apart here: no use-after-destroy reports. */
int lt_platform_mutex_destroyed(const void *mutex)
{
    (void)mutex;
    return 0;
}

/* libsystem has no robust mutexes: an owner's death never turns into EOWNERDEAD. */
int lt_platform_mutex_robust(const void *mutex)
{
    (void)mutex;
    return 0;
}

/* libsystem's refusal of a locked mutex's destroy is not told apart here: the destroy ends
 * the tracer's view of the mutex, as before. */
int lt_platform_mutex_destroy_refused(const void *mutex)
{
    (void)mutex;
    return 0;
}

int lt_platform_cond_waited(const void *cv)
{
    (void)cv;
    return 1;
}

/* No thread of another process is looked at here (lt_platform_others_stuck): the hint stands. */
int lt_platform_cond_shared(const void *cv)
{
    (void)cv;
    return 0;
}

/* libsystem has no robust mutexes to be left unrecoverable. */
void lt_platform_mutex_untry(void *mutex, int tid)
{
    (void)mutex;
    (void)tid;
}

/* libsystem's lock words are not read for it: a fork child orphans what the parent's other
 * threads held, process-shared or not. */
int lt_platform_lock_pshared(const void *lock, int kind)
{
    (void)lock;
    (void)kind;
    return 0;
}

/* Only spinlocks, which libsystem has none of, and process-shared locks, which
 * lt_platform_lock_pshared never finds here, ask. */
int lt_platform_shared_memory(const void *addr)
{
    (void)addr;
    return 0;
}

/* The kernel copies the bytes and reports an unmapped page as an error instead of a fault. */
int lt_platform_peek(void *dst, const void *src, size_t n)
{
    mach_vm_size_t got = 0;
    kern_return_t kr = mach_vm_read_overwrite(mach_task_self(), (mach_vm_address_t)src, n,
                                              (mach_vm_address_t)dst, &got);
    return kr == KERN_SUCCESS && got == n ? 0 : -1;
}

int lt_platform_read(void *dst, const void *src, size_t n)
{
    return lt_platform_peek(dst, src, n);
}

/* No seccomp here: mach_vm_read_overwrite is the task's own. */
int lt_platform_filtered(void)
{
    return 0;
}

/* A path that does not fit leaves buf empty rather than cut (the call says how much it needs). */
void lt_platform_exe_path(char *buf, size_t size)
{
    uint32_t n = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    if (size && _NSGetExecutablePath(buf, &n) != 0)
        buf[0] = 0;
}

/* No abstract socket namespace: the launcher offers no socket here (report files only). */
int lt_platform_datagram(const char *name, const char *msg, size_t len)
{
    (void)name;
    (void)msg;
    (void)len;
    return -1;
}

/* dladdr names the image and its load address. Mach-O has no GNU build-id (its LC_UUID is
 * another kind of identity, which `locktrace report` does not compare), so build_id stays "". */
int lt_platform_module(uintptr_t ip, lt_module *out)
{
    Dl_info info;
    if (!dladdr((void *)ip, &info) || !info.dli_fbase)
        return 0;
    out->base = (uintptr_t)info.dli_fbase;
    out->build_id[0] = 0;
    if (info.dli_fname && info.dli_fname[0])
        lt_fmt_str(out->path, sizeof out->path, 0, info.dli_fname);
    else
        lt_platform_exe_path(out->path, sizeof out->path);
    return 1;
}

/* No /proc here, and dyld's image list is not safe to walk from a signal handler: a dump made
 * in one keeps raw addresses. */
int lt_platform_module_safe(uintptr_t ip, lt_module *out, uintptr_t *lo, uintptr_t *hi)
{
    (void)ip;
    (void)out;
    (void)lo;
    (void)hi;
    return 0;
}

/* No /proc: the mapping around a lock is not named. */
int lt_platform_mapping(uintptr_t addr, lt_mapping *out)
{
    (void)addr;
    (void)out;
    return 0;
}

/* Not implemented on macOS (mappings are not read): heap locks have no block name. */
int lt_platform_heap_block(uintptr_t addr, const lt_mapping *m, uintptr_t *start, size_t *size)
{
    (void)addr;
    (void)m;
    (void)start;
    (void)size;
    return 0;
}

/* Not read on macOS: no lock wrapper is recognised (callsite.c records call sites as if none
 * were). */
int lt_platform_function_safe(uintptr_t ip, char *name, size_t size)
{
    (void)ip;
    (void)name;
    (void)size;
    return 0;
}

/* A new mapping over the range: madvise(MADV_DONTNEED) here leaves the pages' contents. */
void lt_platform_discard(void *p, size_t size)
{
    int saved = errno;
    mmap(p, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON | MAP_FIXED, -1, 0);
    errno = saved;
}

/* No mremap here: a new mapping and a copy. */
void *lt_platform_remap(void *p, size_t old, size_t size)
{
    return lt_platform_copy_over(p, old, lt_platform_map(size), size);
}

void lt_platform_collapse(void *p, size_t size)
{
    lt_platform_map_huge(p, size);
}

void *lt_platform_remap_aligned(void *p, size_t old, size_t size, size_t align)
{
    return lt_platform_copy_over(p, old, lt_platform_map_aligned(size, align), size);
}

/* _sigtramp has a symbol here, which names the frame. */
int lt_platform_is_sigreturn(uintptr_t ip)
{
    (void)ip;
    return 0;
}

/* Not here: whether this thread holds a stream's lock (a signal handler that interrupted
 * printf) cannot be told from outside libc, and a stream written in the middle of an
 * operation garbles it. */
void lt_platform_flush_stdio(void)
{
}

void lt_platform_abort(void)
{
    abort();
}

/* sigdefer.h: no handler is deferred on macOS, where the tracer does not interpose sigaction
 * (interpose_signal.c and sigdefer.c are Linux only): a handler of the program's runs at
 * once, as it did before. */
void lt_sig_flush(void)
{
}

void lt_sig_dispatch(int sig, siginfo_t *info, void *uctx, const struct sigaction *a)
{
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, info, uctx);
    else
        a->sa_handler(sig);
}

void lt_sig_dispatches(int sig)
{
    (void)sig;
}

void lt_sig_thread_exit(void)
{
}

void lt_sig_fork(lt_fork_phase phase)
{
    (void)phase;
}

int lt_platform_in_tracer(uintptr_t ip)
{
    static void *self_base;
    Dl_info me, it;
    if (!self_base && dladdr((void *)lt_platform_in_tracer, &me))
        self_base = me.dli_fbase;
    return dladdr((void *)ip, &it) && it.dli_fbase == self_base;
}
