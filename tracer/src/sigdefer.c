/*
 * sigdefer.c - the program's handlers of asynchronous signals never run inside the tracer.
 * A handler may park its thread wherever the signal found it: a stop-the-world collector's
 * (Boehm GC, Mono) acknowledges, then waits in sigsuspend until the collector resumes the
 * thread. Parked inside the tracer - holding one of its spinlocks, or in the order graph's
 * gate - it made the next thread that needed them wait for ever, the collector among them.
 * Signals cannot be blocked around each lock call (a system call each), so, as
 * ThreadSanitizer does, the tracer installs its own handler (the wrapper) with the mask and
 * flags of every handler function the program sets for an asynchronous signal, and keeps the
 * program's action here. The wrapper runs the program's handler at once when its thread is
 * outside the tracer (lt_busy_defers(lt_tls.busy) is 0). Inside, it records the signal, blocks
 * it - and every signal the wrapper (or dumpsig.c's handler) handles - in the mask the
 * interrupted code gets back (further instances stay pending in the kernel: standard signals
 * coalesce as they would, real-time ones queue in order) and returns; the thread's way out of
 * the tracer, lt_leave, runs it (lt_sig_flush), with errno kept, and gives the mask back. So
 * does a signal that finds its thread in the tracer's own code while a deferred handler waits
 * (on its way out: lt_leave between its store of busy and its test of sigpend; or in a
 * flush): run at once, a handler that took a lock would flush the waiting ones from its own
 * context, and the mask its return restores would keep their signals blocked for good. The
 * tracer's real blocking calls (a busy lock's wait, a condition wait, a join) run outside
 * it, so a thread blocked on a lock answers a stop request at once, as without the tracer;
 * and nothing the tracer waits for inside (a tracer lock, the gate) waits for a handler.
 *
 * sigaction() answers the program's own action as the old one. Not wrapped: the synchronous
 * signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGPIPE), whose handler
 * must run where the fault is (a write into a page the program protected, the tracer's own
 * abort()); SIG_DFL and SIG_IGN; the tracer's own handlers; what a vfork child sets (vmchild.c,
 * as in dumpsig.c); a handler set by the system call itself (the Go runtime).
 *
 * A deferred handler gets the siginfo it was sent with and, as its context, the flush point's
 * (getcontext): the thread's registers and stack there hold all of the program's frames, for a
 * collector's conservative scan; a handler that edits its context to send the thread elsewhere
 * (Go's preemption) has no effect, and one that resumes it (setcontext) resumes the flush.
 *
 * The wrapper takes no lock and allocates nothing but the thread's records (NSIG of them), the
 * first time it defers: records a thread that ended left (spare), else by mmap; when that
 * fails the handler runs at once, as before. Linux
 * only: interpose_signal.c installs the wrapper, and macOS builds neither.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#include "lt_internal.h"
#include "platform.h"
#include "sigdefer.h"
#include "vmchild.h"

#define SLOTS 4 /* the program's last actions for a signal: a handler reads one not rewritten */

/* The program's action for each signal the wrapper is installed for, as it set it. */
static struct {
    struct sigaction slot[SLOTS];
    _Atomic unsigned current;
} kept[NSIG];

/* The thread that sets an action (its TLS block's address: no system call to know it), or
 * NULL: one at a time. A handler that interrupts it there and sets an action itself goes on
 * without waiting for its own thread. (Blocking every signal instead cost two system calls a
 * sigaction: ThreadSanitizer's signal_reset, 2,000,000 of them, went from 20 s to 83 s and
 * past the 60 s its runner allows.) Such a nested call for the signal the interrupted one sets
 * leaves the kept handler the nested call's and the kernel's flags and mask the interrupted
 * one's. */
static void *_Atomic writer LT_START_DATA;

/* The signals whose kernel handler is the wrapper, or dumpsig.c's (by the writer; a handler
 * in another thread may read it as the writer sets or clears a bit: either answer only moves
 * when that signal comes, see defer). */
static sigset_t wrapped;

/* A signal deferred in its thread. */
typedef struct deferred {
    int armed;
    siginfo_t info;
    struct sigaction act; /* the program's action when the signal came */
} deferred;

/* The thread's records (lt_tls.sigrec): one per signal number, and the signals the deferrals
 * since the last flush blocked in the masks they hand back (defer), which the flush gives
 * back. */
typedef struct records {
    deferred d[NSIG];
    sigset_t blocked;
} records;

#define RECORDS_SIZE sizeof(records)

/* Records threads that ended gave back, clean (none armed, none blocked), for the next thread
 * that defers: a mapping made and unmapped at each thread's start and end under a signal
 * storm (most of 1,100 threads, 100 each starting 10 under a 10 us timer) cost two system
 * calls, a page fault and, unmapped by a process with other threads, a flush of the other
 * CPUs' TLBs. A slot is taken and given with one atomic exchange or compare-and-swap, which a
 * signal handler may do (no lock, no ABA: a slot holds one pointer, taken whole). */
#define SPARE 64
static void *_Atomic spare[SPARE];

static void *spare_take(void)
{
    for (int i = 0; i < SPARE; i++)
        if (atomic_load_explicit(&spare[i], memory_order_relaxed)) {
            void *r = atomic_exchange_explicit(&spare[i], NULL, memory_order_acquire);
            if (r)
                return r;
        }
    return NULL;
}

static void spare_give(void *r)
{
    for (int i = 0; i < SPARE; i++) {
        void *none = NULL;
        if (!atomic_load_explicit(&spare[i], memory_order_relaxed) &&
            atomic_compare_exchange_strong_explicit(&spare[i], &none, r, memory_order_release,
                                                    memory_order_relaxed))
            return;
    }
    lt_platform_unmap(r, RECORDS_SIZE);
}

void lt_sig_init(void)
{
    lt_vm_init();
    lt_platform_in_tracer(0); /* its bounds found now, not in a handler's sigaction */
}

static int asynchronous(int sig)
{
    switch (sig) {
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
    case SIGABRT: case SIGPIPE: case SIGKILL: case SIGSTOP:
        return 0;
    default:
        return sig > 0 && sig < NSIG;
    }
}

int lt_sig_ours(int sig)
{
    return asynchronous(sig);
}

static const struct sigaction *program(int sig)
{
    return &kept[sig].slot[atomic_load_explicit(&kept[sig].current, memory_order_acquire)];
}

/* By the writer. */
static void publish(int sig, const struct sigaction *a)
{
    unsigned next = (atomic_load_explicit(&kept[sig].current, memory_order_relaxed) + 1) % SLOTS;
    kept[sig].slot[next] = *a;
    atomic_store_explicit(&kept[sig].current, next, memory_order_release);
}

/* The program counter the signal interrupted; 0 where not known. */
static uintptr_t interrupted_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

/* Whether the handler of a signal that came with uctx waits for lt_leave (see the top). */
static int waits(const void *uctx)
{
    int busy = lt_tls.busy;
    return lt_busy_defers(busy) || (busy == LT_BUSY_OUT && lt_tls.sigpend &&
                                    lt_platform_in_tracer(interrupted_pc(uctx)));
}

static void call(int sig, siginfo_t *info, void *uctx, const struct sigaction *a)
{
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, info, uctx);
    else
        a->sa_handler(sig);
}

/* The thread's records, mapped now if it has none; NULL when that fails. */
static records *mine(void)
{
    void *r = atomic_load_explicit(&lt_tls.sigrec, memory_order_relaxed);
    if (lt_likely(r != NULL))
        return r;
    int saved = errno;
    void *none = NULL, *p = spare_take();
    if (!p)
        p = lt_platform_map(RECORDS_SIZE);
    /* a handler of another signal that came meanwhile may have taken some */
    if (p && !atomic_compare_exchange_strong(&lt_tls.sigrec, &none, p)) {
        spare_give(p);
        p = none;
    }
    errno = saved;
    return p;
}

/* Every recorded signal, and with also_wrapped every wrapped one, added to mask; those it
 * did not hold noted for the flush. Whether one was added. */
static int block(records *r, sigset_t *mask, int also_wrapped)
{
    int added = 0;
    for (int s = 1; s < NSIG; s++)
        if ((r->d[s].armed || (also_wrapped && sigismember(&wrapped, s))) &&
            !sigismember(mask, s)) {
            sigaddset(mask, s);
            sigaddset(&r->blocked, s);
            added = 1;
        }
    return added;
}

/* Records sig for lt_leave and blocks it until then; 0 when it cannot (then it runs now).
 * Every wrapped signal is blocked in the mask the interrupted code gets back, not only sig,
 * until the flush gives back the mask it had. A deferral that interrupted another signal's
 * wrapper blocked its signal in that wrapper's mask alone, which the wrapper's return threw
 * away: before the wrapper's first step; or after it had deferred its own signal (this
 * session's `nest` failures, read in an event ring: SIGALRM deferred inside a lock call,
 * SIGUSR1 deferred in SIGALRM's wrapper on its way back, SIGUSR1 left unblocked; its next
 * instance came on the thread's way out of the tracer, found the record armed and ran at
 * once; its lock call's way out ran the records from inside that handler - SIGUSR1's own
 * handler nested in itself, a false self-deadlock report, or the signals that handler's
 * return blocked again (mind_armed) left blocked for good). With every wrapped signal
 * blocked from the first deferral on, no wrapper runs in that context until the flush. */
static int defer(int sig, const siginfo_t *info, void *uctx, const struct sigaction *a)
{
    records *r = mine();
    /* armed: a second instance of a SA_NODEFER handler's signal, come while the first is
     * recorded */
    if (!r || r->d[sig].armed)
        return 0;
    r->d[sig].armed = 1;
    r->d[sig].info = *info;
    r->d[sig].act = *a;
    block(r, &((ucontext_t *)uctx)->uc_sigmask, 1);
    atomic_signal_fence(memory_order_seq_cst);
    lt_tls.sigpend = 1;
    return 1;
}

/* A handler run at once while records wait: their signals blocked in the mask its return
 * restores (defer), so that none is lost to a wrapper's mask that sigreturn throws away. */
static void mind_armed(void *uctx)
{
    records *r = atomic_load_explicit(&lt_tls.sigrec, memory_order_relaxed);
    if (lt_unlikely(lt_tls.sigpend) && r)
        block(r, &((ucontext_t *)uctx)->uc_sigmask, 0);
}

void lt_sig_dispatch(int sig, siginfo_t *info, void *uctx, const struct sigaction *a)
{
    if (waits(uctx) && defer(sig, info, uctx, a))
        return;
    mind_armed(uctx);
    call(sig, info, uctx, a);
}

/* The program's handler is its tail call: the stacks reports show go from the handler to the
 * signal's frame, as without the tracer. */
static void wrapper(int sig, siginfo_t *info, void *uctx)
{
    const struct sigaction *a = program(sig);
    if (waits(uctx) && defer(sig, info, uctx, a))
        return;
    mind_armed(uctx);
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, info, uctx);
    else
        a->sa_handler(sig);
}

/* The lowest signal deferred; 0 when none. */
static int first_armed(const records *r)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (r->d[sig].armed)
            return sig;
    return 0;
}

/* Each deferred handler, lowest signal first, with the mask it would have had: the
 * interrupted code's, the action's, and its own signal unless SA_NODEFER; the records still
 * waiting stay blocked (one deferred after getcontext read the mask, unblocked for another
 * one's handler, came again there, found its record armed and ran at once: a handler of its
 * own signal's run nested in it - harm-signal.14). Then the interrupted mask comes back, and
 * the instances kept pending meanwhile are delivered (at once: the thread is outside the
 * tracer). A handler that calls into the tracer and leaves it flushes the records still
 * armed itself. */
void lt_sig_flush(void)
{
    records *r = atomic_load_explicit(&lt_tls.sigrec, memory_order_relaxed);
    int was = lt_tls.busy;
    /* Inside, but while a handler runs: a signal that comes meanwhile (in libc's code too:
     * errno's address, getcontext, pthread_sigmask) is armed for the loop below, so none of
     * these records is run, and its signal unblocked, from another context than this one. */
    lt_busy_set(&lt_tls, LT_BUSY_IN);
    int saved = errno;
    ucontext_t uc;
    getcontext(&uc);
    /* the interrupted mask: without the signals deferred and those their deferrals blocked
     * (the ones blocked since in this context only, not in it) */
    for (int sig = 1; sig < NSIG; sig++)
        if (r->d[sig].armed || sigismember(&r->blocked, sig)) {
            sigdelset(&uc.uc_sigmask, sig);
            sigdelset(&r->blocked, sig);
        }
    for (;;) {
        int sig = first_armed(r);
        if (!sig) {
            lt_busy_set(&lt_tls, was);
            lt_tls.sigpend = 0;
            atomic_signal_fence(memory_order_seq_cst);
            if (!first_armed(r))
                break;
            /* deferred after the look (busy, or waits): blocked in this context only, since
             * the mask getcontext read, so not in it */
            lt_busy_set(&lt_tls, LT_BUSY_IN);
            continue;
        }
        deferred d = r->d[sig];
        r->d[sig].armed = 0;
        /* as the kernel: SA_NODEFER only leaves out the signal it adds, one the action's
         * sa_mask names stays blocked (SBCL's stop-for-GC handler checks that it is) */
        sigset_t mask;
        sigorset(&mask, &uc.uc_sigmask, &d.act.sa_mask);
        if (!(d.act.sa_flags & SA_NODEFER))
            sigaddset(&mask, sig);
        /* again while a signal deferred meanwhile was not in it */
        block(r, &mask, 0);
        do
            pthread_sigmask(SIG_SETMASK, &mask, NULL);
        while (block(r, &mask, 0));
        lt_busy_set(&lt_tls, was);
        errno = saved;
        /* What deferrals in this flush blocked is not for a flush inside the handler to give
         * back: it went to this context's masks, and the handler's is the one just set (a
         * signal blocked there, its own, came unblocked in the handler and ran nested in it).
         * One deferred from here on blocks in the handler's mask: given back by the flush of
         * its lock call, or by this one's end. */
        sigemptyset(&r->blocked);
        call(sig, &d.info, &uc, &d.act);
        lt_busy_set(&lt_tls, LT_BUSY_IN);
    }
    sigemptyset(&r->blocked); /* what deferrals since blocked, in this context only */
    pthread_sigmask(SIG_SETMASK, &uc.uc_sigmask, NULL);
    errno = saved;
}

/* With busy LT_BUSY_PASS none is deferred any more: the flush leaves the records clean. */
void lt_sig_thread_exit(void)
{
    if (lt_tls.sigpend)
        lt_sig_flush();
    void *r = atomic_exchange_explicit(&lt_tls.sigrec, NULL, memory_order_relaxed);
    if (r)
        spare_give(r);
}

LT_FORK_PATH void lt_sig_fork(lt_fork_phase phase)
{
    if (phase != LT_FORK_CHILD)
        return;
    atomic_store(&writer, NULL); /* a thread the child has not may have held it */
    records *r = atomic_load_explicit(&lt_tls.sigrec, memory_order_relaxed);
    if (!r)
        return; /* none ever deferred: no system call, no page of libc's code in the child */
    sigset_t dropped = r->blocked;
    sigemptyset(&r->blocked);
    for (int sig = 1; sig < NSIG; sig++)
        if (r->d[sig].armed) {
            r->d[sig].armed = 0;
            sigaddset(&dropped, sig);
        }
    lt_tls.sigpend = 0;
    pthread_sigmask(SIG_UNBLOCK, &dropped, NULL);
}

/* old, the kernel's action, made the program's own where the kernel's handler is the
 * wrapper: the kept handler and whether it takes a siginfo, with the mask and the other flags
 * as the kernel keeps them (as libc answers without the tracer). Where SA_RESETHAND reset the
 * wrapper's action, the kernel keeps its flags, and the wrapper's SA_SIGINFO goes. */
static void answer(struct sigaction *old, const struct sigaction *a)
{
    if (old->sa_sigaction == wrapper)
        old->sa_sigaction = a->sa_sigaction;
    else if (old->sa_handler != SIG_DFL || !(old->sa_flags & a->sa_flags & SA_RESETHAND))
        return;
    old->sa_flags = (old->sa_flags & ~SA_SIGINFO) | (a->sa_flags & SA_SIGINFO);
}

/* By the writer, act and old in its own memory. wrap: act is a handler of the program's. The
 * program's action is kept before the wrapper is installed, which so always finds one;
 * the wrapper goes before an action without it does. */
static int set(int sig, const struct sigaction *act, struct sigaction *old, int wrap,
               lt_sigaction_fn real)
{
    struct sigaction before = *program(sig), k;
    int rc;
    if (!wrap) {
        rc = real(sig, act, old);
        if (rc == 0)
            sigdelset(&wrapped, sig);
    } else {
        sigaddset(&wrapped, sig); /* before the wrapper can come */
        publish(sig, act);
        k = *act;
        k.sa_sigaction = wrapper;
        k.sa_flags |= SA_SIGINFO;
        rc = real(sig, &k, old);
        if (rc != 0)
            publish(sig, &before);
    }
    if (rc == 0 && old)
        answer(old, &before);
    return rc;
}

/* The calling thread becomes the writer; 1 when it was already (a handler of its own that
 * interrupted it there). */
static int become_writer(void)
{
    void *me = &lt_tls, *none = NULL;
    int nested = atomic_load_explicit(&writer, memory_order_relaxed) == me;
    for (unsigned round = 0;
         !nested && !atomic_compare_exchange_weak_explicit(&writer, &none, me, memory_order_acquire,
                                                           memory_order_relaxed);) {
        none = NULL;
        lt_spin_backoff(&round);
    }
    return nested;
}

static void leave_writer(int nested)
{
    if (!nested)
        atomic_store_explicit(&writer, NULL, memory_order_release);
}

/* dumpsig.c's handler stays the kernel's for good and runs the program's through
 * lt_sig_dispatch: its signal is blocked from a deferral to the flush as the wrapper's are.
 * Left out, it came inside a wrapper that had deferred its own signal, was deferred there
 * and blocked in that wrapper's mask alone, which the wrapper's return threw away; its next
 * instance found its record waiting and ran the program's handler at once, inside the lock
 * call and before the first one (harm-signal.17). */
void lt_sig_dispatches(int sig)
{
    int nested = become_writer();
    sigaddset(&wrapped, sig);
    leave_writer(nested);
}

int lt_sig_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                     lt_sigaction_fn real)
{
    /* a query, or a vfork child's action (libc sets it; this memory is its parent's too) */
    if (!act || lt_vm_child()) {
        int rc = real(sig, act, old);
        if (rc == 0 && old)
            answer(old, program(sig));
        return rc;
    }
    /* The program's memory is read and written outside: a fault there (a bad act or old,
     * which faults in libc too) runs the program's handler where no writer waits. */
    struct sigaction a = *act, was;
    int wrap = a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN &&
               !lt_platform_in_tracer((uintptr_t)a.sa_handler);
    int nested = become_writer();
    int rc = set(sig, &a, old ? &was : NULL, wrap, real);
    leave_writer(nested);
    if (rc == 0 && old)
        *old = was;
    return rc;
}
