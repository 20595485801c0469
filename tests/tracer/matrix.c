/*
 * matrix.c - the false-positive matrix, in the spirit of lockdep's locking selftest:
 * generated scenarios x lock types x orders, each with the verdict it must get under the
 * tracer (clean, or which kinds of report), so a false positive fails it as surely as a
 * missed detection.
 *
 *   matrix [--list] [SUBSTRING]     run every scenario (whose name contains SUBSTRING)
 *
 * Run under liblocktrace with LOCKTRACE_ACTION=edeadlk: a self-deadlock or a deadlock then
 * makes the closing call return EDEADLK instead of ending the program, and each scenario
 * unwinds from there. Every scenario runs in a child process of its own (stderr into a pipe,
 * a 20 s alarm); its verdict is the set of report kinds that child printed, and it must equal
 * the expected set exactly. The expected sets come from the rules written here, not from the
 * tracer. Nothing sleeps to let a thread get somewhere: blocked threads are polled
 * (blocked.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apis/poll.h"
#include "lockmem.h"
#include "verdicts.h"

/* ------------------------------------------------------------------------------------------
 * Lock types with the mode they are taken in.
 * ---------------------------------------------------------------------------------------- */
typedef enum { MN, MR, ME, SP, RDR, RDW, RPR, RPW, NV } variant;
static const char *const vname[NV] = {"mutex", "recursive", "errorcheck", "spin",
                                      "rw-R",  "rw-W",      "wprw-R",     "wprw-W"};

static int is_rw(variant v) { return v >= RDR; }
static int is_read(variant v) { return v == RDR || v == RPR; }
static int is_wp(variant v) { return v == RPR || v == RPW; }

/* The kind of lock a variant is. */
static lm_kind lk_kind(variant v)
{
    static const lm_kind kind[NV] = {[MN] = LM_NORMAL, [MR] = LM_RECURSIVE, [ME] = LM_ERRORCHECK,
                                     [SP] = LM_SPIN,   [RDR] = LM_RW,       [RDW] = LM_RW,
                                     [RPR] = LM_RW_WP, [RPW] = LM_RW_WP};
    return kind[v];
}

static void lk_init(lockmem *l, variant v)
{
    lockmem_init(l, lk_kind(v));
}

/* A new lock by assignment of a static initializer, without any init call (no spinlock). */
static void lk_assign(lockmem *l, variant v)
{
    static const pthread_mutex_t mn = PTHREAD_MUTEX_INITIALIZER;
    static const pthread_mutex_t mr = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    static const pthread_mutex_t me = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static const pthread_rwlock_t rd = PTHREAD_RWLOCK_INITIALIZER;
    static const pthread_rwlock_t rp = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    if (is_rw(v))
        l->rw = is_wp(v) ? rp : rd;
    else
        l->m = v == MR ? mr : v == ME ? me : mn;
}

static int lk_lock(lockmem *l, variant v)
{
    if (v == SP)
        return pthread_spin_lock(&l->s);
    if (is_rw(v))
        return is_read(v) ? pthread_rwlock_rdlock(&l->rw) : pthread_rwlock_wrlock(&l->rw);
    return pthread_mutex_lock(&l->m);
}

static int lk_try(lockmem *l, variant v)
{
    if (v == SP)
        return pthread_spin_trylock(&l->s);
    if (is_rw(v))
        return is_read(v) ? pthread_rwlock_tryrdlock(&l->rw) : pthread_rwlock_trywrlock(&l->rw);
    return pthread_mutex_trylock(&l->m);
}

static int lk_timed(lockmem *l, variant v, long ms)
{
    struct timespec t = ms_from_now(ms);
    if (is_rw(v))
        return is_read(v) ? pthread_rwlock_timedrdlock(&l->rw, &t)
                          : pthread_rwlock_timedwrlock(&l->rw, &t);
    return pthread_mutex_timedlock(&l->m, &t);
}

static int lk_unlock(lockmem *l, variant v)
{
    if (v == SP)
        return pthread_spin_unlock(&l->s);
    return is_rw(v) ? pthread_rwlock_unlock(&l->rw) : pthread_mutex_unlock(&l->m);
}

static void lk_destroy(lockmem *l, variant v)
{
    lockmem_destroy(l, lk_kind(v));
}

/* The same lock taken in another variant's mode (rwlocks: R or W). */
static variant as_mode(variant lock, int write)
{
    if (!is_rw(lock))
        return lock;
    return is_wp(lock) ? (write ? RPW : RPR) : (write ? RDW : RDR);
}

/* ------------------------------------------------------------------------------------------
 * Verdicts: sets of report kinds.
 * ---------------------------------------------------------------------------------------- */
enum { K_SELF = 1, K_BAD_UNLOCK = 2, K_DESTROY = 4, K_EXIT = 8, K_DEADLOCK = 16, K_INVERSION = 32,
       K_LONG_WAIT = 64 };
static const char *const kname[] = {"self-deadlock", "bad-unlock", "destroy-held", "exit-held",
                                    "deadlock",      "lock-order-inversion", "long-wait"};

/* Can two threads holding/requesting this lock in this variant's mode block each other, by
 * the tracer's order rule? Only reads of a default (reader-preferring) rwlock cannot. */
static int order_conflict(variant v)
{
    return v != RDR;
}

/* Does a request in v's mode block now while another thread holds it in v's mode? */
static int blocks_now(variant v)
{
    return !is_read(v);
}

typedef struct scenario scenario;
struct scenario {
    char name[80];
    void (*run)(const scenario *);
    variant a, b;
    int c;
    unsigned expect;
};

#define MAX_SCENARIOS 1024
static scenario table[MAX_SCENARIOS];
static int nscenarios;

static void add(void (*run)(const scenario *), variant a, variant b, int c, unsigned expect,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void add(void (*run)(const scenario *), variant a, variant b, int c, unsigned expect,
                const char *fmt, ...)
{
    if (nscenarios == MAX_SCENARIOS)
        abort();
    scenario *s = &table[nscenarios++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->run = run;
    s->a = a;
    s->b = b;
    s->c = c;
    s->expect = expect;
}

/* ------------------------------------------------------------------------------------------
 * Small thread helpers.
 * ---------------------------------------------------------------------------------------- */
static pthread_t spawn(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    if (pthread_create(&th, NULL, fn, arg) != 0)
        abort();
    return th;
}

static void until(_Atomic int *flag)
{
    while (!atomic_load(flag))
        sched_yield();
}

/* ------------------------------------------------------------------------------------------
 * Same thread, same lock twice: blocking, trylock, timed (c = 0, 1, 2).
 * ---------------------------------------------------------------------------------------- */
static void relock(const scenario *s)
{
    lockmem l;
    lk_init(&l, s->a);
    lk_lock(&l, s->a);
    int rc = s->c == 0 ? lk_lock(&l, s->b) : s->c == 1 ? lk_try(&l, s->b) : lk_timed(&l, s->b, 100);
    if (rc == 0)
        lk_unlock(&l, s->b);
    lk_unlock(&l, s->a);
}

static unsigned relock_rule(variant a, variant b)
{
    if (a == MR)
        return 0;
    if (is_read(a) && is_read(b))
        return a == RPR ? K_SELF : 0; /* writer-preferring: a potential self-deadlock */
    return K_SELF;
}

/* ------------------------------------------------------------------------------------------
 * Address reuse: a lock held, its memory made a new lock without destroy - by a static
 * initializer (c = 0) or by init (c = 1) - and taken again.
 * ---------------------------------------------------------------------------------------- */
static void reuse(const scenario *s)
{
    lockmem *l = malloc(sizeof *l);
    lk_init(l, s->a);
    lk_lock(l, s->a);
    if (s->c == 0)
        lk_assign(l, s->b);
    else
        lk_init(l, s->b);
    if (lk_lock(l, s->b) == 0)
        lk_unlock(l, s->b);
    lk_destroy(l, s->b);
    free(l);
}

/* ------------------------------------------------------------------------------------------
 * Lock order, sequentially (no real deadlock): A then B, later B then A by another thread
 * (c = 0) or the same one (c = 1); B then trylock A, backing off (c = 2); A then B again
 * (c = 3).
 * ---------------------------------------------------------------------------------------- */
typedef struct pair {
    lockmem A, B;
    variant a, b;
    int c;
} pair;

static void *take_ab(void *arg)
{
    pair *p = arg;
    lk_lock(&p->A, p->a);
    lk_lock(&p->B, p->b);
    lk_unlock(&p->B, p->b);
    lk_unlock(&p->A, p->a);
    return NULL;
}

static void *take_second_order(void *arg)
{
    pair *p = arg;
    if (p->c == 3)
        return take_ab(p);
    lk_lock(&p->B, p->b);
    int rc = p->c == 2 ? lk_try(&p->A, p->a) : lk_lock(&p->A, p->a);
    if (rc == 0)
        lk_unlock(&p->A, p->a);
    lk_unlock(&p->B, p->b);
    return NULL;
}

static void order_seq(const scenario *s)
{
    pair p = {.a = s->a, .b = s->b, .c = s->c};
    lk_init(&p.A, s->a);
    lk_init(&p.B, s->b);
    pthread_join(spawn(take_ab, &p), NULL);
    if (s->c == 1)
        take_second_order(&p);
    else
        pthread_join(spawn(take_second_order, &p), NULL);
}

/* ------------------------------------------------------------------------------------------
 * Lock order, concurrently: both threads hold their first lock, then request the other's
 * (behind a barrier). The second thread's request is timed when c = 1.
 * ---------------------------------------------------------------------------------------- */
static pthread_barrier_t both_hold;

static void *conc_first(void *arg)
{
    pair *p = arg;
    lk_lock(&p->A, p->a);
    pthread_barrier_wait(&both_hold);
    if (lk_lock(&p->B, p->b) == 0)
        lk_unlock(&p->B, p->b);
    lk_unlock(&p->A, p->a);
    return NULL;
}

static void *conc_second(void *arg)
{
    pair *p = arg;
    lk_lock(&p->B, p->b);
    pthread_barrier_wait(&both_hold);
    if ((p->c ? lk_timed(&p->A, p->a, 1000) : lk_lock(&p->A, p->a)) == 0)
        lk_unlock(&p->A, p->a);
    lk_unlock(&p->B, p->b);
    return NULL;
}

static void order_conc(const scenario *s)
{
    pair p = {.a = s->a, .b = s->b, .c = s->c};
    lk_init(&p.A, s->a);
    lk_init(&p.B, s->b);
    pthread_barrier_init(&both_hold, NULL, 2);
    pthread_t t1 = spawn(conc_first, &p), t2 = spawn(conc_second, &p);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
}

static unsigned conc_rule(variant a, variant b)
{
    if (blocks_now(a) && blocks_now(b))
        return K_DEADLOCK;
    return order_conflict(a) && order_conflict(b) ? K_INVERSION : 0;
}

/* ------------------------------------------------------------------------------------------
 * Condition waits on a mutex of type a, holding another lock of variant b (NV: none), until
 * signalled (c = 0) or through timeouts (c = 1).
 * ---------------------------------------------------------------------------------------- */
typedef struct condcase {
    const scenario *s;
    lockmem m, other;
    pthread_cond_t cv;
    _Atomic int tid, go, timed_out;
} condcase;

static void *cond_waiter(void *arg)
{
    condcase *k = arg;
    const scenario *s = k->s;
    if (s->b != NV)
        lk_lock(&k->other, s->b);
    pthread_mutex_lock(&k->m.m);
    atomic_store(&k->tid, blocked_tid());
    while (!atomic_load(&k->go)) {
        if (s->c == 0) {
            pthread_cond_wait(&k->cv, &k->m.m);
        } else {
            struct timespec t = ms_from_now(5);
            if (pthread_cond_timedwait(&k->cv, &k->m.m, &t) == ETIMEDOUT)
                atomic_store(&k->timed_out, 1);
        }
    }
    pthread_mutex_unlock(&k->m.m);
    if (s->b != NV)
        lk_unlock(&k->other, s->b);
    return NULL;
}

static void cond_case(const scenario *s)
{
    condcase k = {.s = s};
    lk_init(&k.m, s->a);
    if (s->b != NV)
        lk_init(&k.other, s->b);
    pthread_cond_init(&k.cv, NULL);
    pthread_t th = spawn(cond_waiter, &k);
    until(&k.tid);
    if (s->c == 0)
        blocked_wait_tid(atomic_load(&k.tid));
    else
        until(&k.timed_out);
    pthread_mutex_lock(&k.m.m);
    atomic_store(&k.go, 1);
    pthread_cond_signal(&k.cv);
    pthread_mutex_unlock(&k.m.m);
    pthread_join(th, NULL);
}

/* ------------------------------------------------------------------------------------------
 * fork: another thread holds the lock, the child requests it (c = 0) or tries it (c = 1);
 * the forking thread holds it and the child unlocks and relocks it (c = 2); an atfork
 * prepare handler takes it while another thread holds it and meets a new lock (c = 3).
 * ---------------------------------------------------------------------------------------- */
static lockmem fork_lock, fresh_lock;
static variant fork_v;
static _Atomic int holding, release_holder, preparing;

static void *hold_for_fork(void *arg)
{
    (void)arg;
    lk_lock(&fork_lock, fork_v);
    atomic_store(&holding, 1);
    if (atomic_load(&release_holder) == 2) { /* c = 3: until the prepare handler runs */
        until(&preparing);
        pthread_mutex_lock(&fresh_lock.m);
        pthread_mutex_unlock(&fresh_lock.m);
    } else {
        while (atomic_load(&release_holder) == 0)
            sched_yield();
    }
    lk_unlock(&fork_lock, fork_v);
    return NULL;
}

static void prepare_takes(void)
{
    atomic_store(&preparing, 1);
    lk_lock(&fork_lock, fork_v);
}

static void after_fork_releases(void)
{
    lk_unlock(&fork_lock, fork_v);
}

static void fork_case(const scenario *s)
{
    pthread_t th = 0;
    fork_v = s->a;
    lk_init(&fork_lock, s->a);
    if (s->c == 3) {
        pthread_mutex_init(&fresh_lock.m, NULL);
        pthread_atfork(prepare_takes, after_fork_releases, after_fork_releases);
        atomic_store(&release_holder, 2);
    }
    if (s->c != 2) {
        th = spawn(hold_for_fork, NULL);
        until(&holding);
    } else {
        lk_lock(&fork_lock, s->a);
    }
    pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        if (s->c == 0)
            rc = lk_lock(&fork_lock, s->a);
        else if (s->c == 1)
            rc = lk_try(&fork_lock, s->a);
        else if (s->c == 2 && lk_unlock(&fork_lock, s->a) == 0)
            rc = lk_lock(&fork_lock, s->a);
        if (rc == 0 && s->c != 3)
            lk_unlock(&fork_lock, s->a);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    if (s->c == 2)
        lk_unlock(&fork_lock, s->a);
    else if (s->c != 3)
        atomic_store(&release_holder, 1);
    if (th)
        pthread_join(th, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Signals: a thread blocked in a traced lock (outer: a mutex when c & 2 is 0, else an
 * rwlock for write) runs a handler that takes a lock of variant a, free (c & 1 = 0) or held
 * by the main thread (c & 1 = 1).
 * ---------------------------------------------------------------------------------------- */
static lockmem sig_outer, sig_inner;
static variant sig_v, sig_outer_v;
static _Atomic int sig_tid, sig_in_handler;

static void sig_handler(int sig)
{
    (void)sig;
    atomic_store(&sig_in_handler, 1);
    if (lk_lock(&sig_inner, sig_v) == 0)
        lk_unlock(&sig_inner, sig_v);
}

static void *sig_blocked(void *arg)
{
    (void)arg;
    atomic_store(&sig_tid, blocked_tid());
    if (lk_lock(&sig_outer, sig_outer_v) == 0)
        lk_unlock(&sig_outer, sig_outer_v);
    return NULL;
}

static void signal_case(const scenario *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig_handler;
    sigaction(SIGUSR1, &sa, NULL);
    sig_v = s->a;
    sig_outer_v = s->c & 2 ? RDW : MN;
    lk_init(&sig_outer, sig_outer_v);
    lk_init(&sig_inner, s->a);
    variant hold_v = as_mode(s->a, 1);
    lk_lock(&sig_outer, sig_outer_v);
    if (s->c & 1)
        lk_lock(&sig_inner, hold_v);
    pthread_t th = spawn(sig_blocked, NULL);
    until(&sig_tid);
    blocked_wait_tid(atomic_load(&sig_tid));
    pthread_kill(th, SIGUSR1);
    until(&sig_in_handler);
    if (s->c & 1) {
        blocked_wait_tid(atomic_load(&sig_tid));
        lk_unlock(&sig_inner, hold_v);
    }
    lk_unlock(&sig_outer, sig_outer_v);
    pthread_join(th, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Cancellation: a join cancelled while holding a lock of variant a (c = 0), a condition
 * wait (c = 1) or timed condition wait (c = 2) on a mutex of type a cancelled; then another
 * thread waits for a lock, which must not meet the cancelled wait's record.
 * ---------------------------------------------------------------------------------------- */
static lockmem cancel_lock;
static variant cancel_v;
static pthread_cond_t cancel_cv = PTHREAD_COND_INITIALIZER;
static _Atomic int cancel_tid;
static int cancel_pipe[2];

static void *wait_pipe(void *arg)
{
    char c;
    return read(cancel_pipe[0], &c, 1) == 1 ? NULL : arg;
}

static void unlock_cancel_lock(void *arg)
{
    (void)arg;
    lk_unlock(&cancel_lock, cancel_v);
}

static lockmem later_lock;
static _Atomic int later_tid;

static void *lock_later(void *arg)
{
    (void)arg;
    atomic_store(&later_tid, blocked_tid());
    pthread_mutex_lock(&later_lock.m);
    pthread_mutex_unlock(&later_lock.m);
    return NULL;
}

static void then_another_wait(void)
{
    pthread_mutex_init(&later_lock.m, NULL);
    pthread_mutex_lock(&later_lock.m);
    pthread_t th = spawn(lock_later, NULL);
    until(&later_tid);
    blocked_wait_tid(atomic_load(&later_tid));
    pthread_mutex_unlock(&later_lock.m);
    pthread_join(th, NULL);
}

static pthread_t join_target;

static void *join_holding(void *arg)
{
    (void)arg;
    lk_lock(&cancel_lock, cancel_v);
    pthread_cleanup_push(unlock_cancel_lock, NULL);
    atomic_store(&cancel_tid, blocked_tid());
    pthread_join(join_target, NULL);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *cond_cancelled(void *arg)
{
    const scenario *s = arg;
    lk_lock(&cancel_lock, cancel_v);
    pthread_cleanup_push(unlock_cancel_lock, NULL);
    atomic_store(&cancel_tid, blocked_tid());
    for (;;) {
        struct timespec t = ms_from_now(20000);
        if (s->c == 1)
            pthread_cond_wait(&cancel_cv, &cancel_lock.m);
        else
            pthread_cond_timedwait(&cancel_cv, &cancel_lock.m, &t);
    }
    pthread_cleanup_pop(1);
    return NULL;
}

static void cancel_case(const scenario *s)
{
    cancel_v = s->a;
    lk_init(&cancel_lock, s->a);
    if (s->c == 0 && pipe(cancel_pipe) == 0)
        join_target = spawn(wait_pipe, NULL);
    pthread_t th = spawn(s->c == 0 ? join_holding : cond_cancelled, (void *)s);
    until(&cancel_tid);
    blocked_wait_tid(atomic_load(&cancel_tid));
    pthread_cancel(th);
    pthread_join(th, NULL);
    then_another_wait();
    if (lk_lock(&cancel_lock, cancel_v) == 0)
        lk_unlock(&cancel_lock, cancel_v);
    if (s->c == 0 && write(cancel_pipe[1], "x", 1) == 1)
        pthread_join(join_target, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Queued writers: the main thread reads, a writer queues (timed when c & 1), the main thread
 * reads again; rwlock default (a = RDR) or writer-preferring (a = RPR). c = 4: a timed mutex
 * request times out behind the main thread's hold.
 * ---------------------------------------------------------------------------------------- */
static lockmem queued;
static _Atomic int writer_tid, writer_done;

/* The timed writer of c = 1 gives up after 3 s: the main thread must see it queued before
 * then, which on a machine at load 50 took longer than the 600 ms it had (the scenario then
 * saw no writer and made no report). */
static void *queued_writer(void *arg)
{
    const scenario *s = arg;
    atomic_store(&writer_tid, blocked_tid());
    int rc = s->c == 4 ? lk_timed(&queued, MN, 100)
             : s->c & 1 ? lk_timed(&queued, as_mode(s->a, 1), 3000)
                        : lk_lock(&queued, as_mode(s->a, 1));
    if (rc == 0)
        lk_unlock(&queued, s->c == 4 ? MN : as_mode(s->a, 1));
    atomic_store(&writer_done, 1);
    return NULL;
}

/* Until the writer waits, or its timed request has already given up (then it waits no more,
 * and a poll for its wait alone went on until the scenario's alarm). */
static void writer_waits_or_done(void)
{
    int tid = atomic_load(&writer_tid);
    while (!blocked_in_futex(tid) && !atomic_load(&writer_done))
        sched_yield();
}

static void queued_case(const scenario *s)
{
    variant v = s->c == 4 ? MN : s->a;
    lk_init(&queued, v);
    lk_lock(&queued, v);
    pthread_t th = spawn(queued_writer, (void *)s);
    until(&writer_tid);
    writer_waits_or_done();
    if (s->c != 4 && lk_lock(&queued, v) == 0)
        lk_unlock(&queued, v);
    lk_unlock(&queued, v);
    pthread_join(th, NULL);
}

/* ------------------------------------------------------------------------------------------
 * Unlock by a thread that does not hold the lock; then the owner unlocks (c = 0) or relocks
 * and unlocks (c = 1), or (c = 2), holding another lock from before, takes a new one (a new
 * order edge: its held entry, made before the grant, joins the set while the stale entry
 * leaves it) and requests it again, which must be seen as held.
 * ---------------------------------------------------------------------------------------- */
static lockmem foreign, foreign_outer, foreign_next;
static variant foreign_v;

static void *unlock_foreign(void *arg)
{
    (void)arg;
    lk_unlock(&foreign, foreign_v);
    return NULL;
}

/* c = 2, once the other thread has unlocked: a relock of a mutex taken with a new edge. */
static void foreign_next_lock(void)
{
    lk_init(&foreign_next, MN);
    lk_lock(&foreign_next, MN);
    if (lk_lock(&foreign_next, MN) == 0)
        lk_unlock(&foreign_next, MN);
    lk_unlock(&foreign_next, MN);
    lk_unlock(&foreign_outer, MN);
}

static void foreign_case(const scenario *s)
{
    foreign_v = s->a;
    if (s->c == 2) {
        lk_init(&foreign_outer, MN);
        lk_lock(&foreign_outer, MN);
    }
    lk_init(&foreign, s->a);
    lk_lock(&foreign, s->a);
    pthread_join(spawn(unlock_foreign, NULL), NULL);
    if (s->c == 2) {
        foreign_next_lock();
        return;
    }
    if (s->c == 1 && lk_lock(&foreign, s->a) == 0)
        lk_unlock(&foreign, s->a);
    lk_unlock(&foreign, s->a);
}

/* ------------------------------------------------------------------------------------------
 * A thread exits holding a lock; then the main thread tries it (c = 0) or requests it (1).
 * ---------------------------------------------------------------------------------------- */
static lockmem left;
static variant left_v;

static void *exit_holding(void *arg)
{
    (void)arg;
    lk_lock(&left, left_v);
    return NULL;
}

static void exit_case(const scenario *s)
{
    left_v = s->a;
    lk_init(&left, s->a);
    pthread_join(spawn(exit_holding, NULL), NULL);
    if ((s->c ? lk_lock(&left, s->a) : lk_try(&left, s->a)) == 0)
        lk_unlock(&left, s->a);
}

/* ------------------------------------------------------------------------------------------
 * The generator: scenarios x lock types x orders, with the expected verdicts.
 * ---------------------------------------------------------------------------------------- */
static void generate(void)
{
    static const char *const how[] = {"block", "try", "timed"};
    for (variant a = 0; a < NV; a++)
        for (variant b = 0; b < NV; b++) {
            int same_lock = is_rw(a) ? is_rw(b) && is_wp(a) == is_wp(b) : a == b;
            for (int c = 0; c < 3 && same_lock; c++)
                if (!(c == 2 && a == SP))
                    add(relock, a, b, c, c == 1 ? 0 : relock_rule(a, b), "relock %s then %s %s",
                        vname[a], vname[b], how[c]);
        }
    for (variant a = 0; a < NV; a++)
        for (variant b = 0; b < NV; b++)
            for (int c = 0; c < 2; c++)
                if (!(c == 0 && (a == SP || b == SP)))
                    add(reuse, a, b, c, 0, "reuse held %s as %s by %s", vname[a], vname[b],
                        c ? "init" : "initializer");
    static const char *const seq[] = {"two threads", "one thread", "trylock back-off",
                                      "same order"};
    for (variant a = 0; a < NV; a++)
        for (variant b = 0; b < NV; b++)
            for (int c = 0; c < 4; c++)
                add(order_seq, a, b, c,
                    c < 2 && order_conflict(a) && order_conflict(b) ? K_INVERSION : 0,
                    "order %s/%s, %s", vname[a], vname[b], seq[c]);
    for (variant a = 0; a < NV; a++)
        for (variant b = 0; b < NV; b++)
            add(order_conc, a, b, 0, conc_rule(a, b), "abba %s/%s concurrently", vname[a],
                vname[b]);
    static const variant timed_a[] = {MN, RDW}, timed_b[] = {MN, SP, RPW};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 3; j++)
            add(order_conc, timed_a[i], timed_b[j], 1, K_DEADLOCK, "abba %s/%s, one wait timed",
                vname[timed_a[i]], vname[timed_b[j]]);
    for (variant a = MN; a <= ME; a++)
        for (variant b = 0; b <= NV; b++)
            for (int c = 0; c < 2; c++)
                add(cond_case, a, b, c, 0, "cond wait on %s holding %s, %s", vname[a],
                    b == NV ? "nothing" : vname[b], c ? "timeouts" : "signalled");
    static const char *const forks[] = {"child requests a lock held by a lost thread",
                                        "child tries a lock held by a lost thread",
                                        "child unlocks what the forking thread held",
                                        "atfork prepare waits for a thread meeting a new lock"};
    /* In the child the forking thread has a new tid: glibc lets it unlock only what records
     * no owner (normal mutexes, spinlocks, read holds). */
    for (variant a = 0; a < NV; a++)
        for (int c = 0; c < 4; c++)
            if (c != 2 || a == MN || a == SP || is_read(a))
                add(fork_case, a, NV, c, c == 0 && !is_read(a) ? K_SELF : 0, "fork %s: %s",
                    vname[a], forks[c]);
    for (variant a = 0; a < NV; a++)
        for (int c = 0; c < 4; c++)
            if (!(c & 1 && a == SP))
                add(signal_case, a, NV, c, 0, "signal handler locks %s %s while blocked in %s",
                    vname[a], c & 1 ? "(contended)" : "(free)", c & 2 ? "a wrlock" : "a lock");
    for (variant a = 0; a < NV; a++)
        add(cancel_case, a, NV, 0, 0, "pthread_join cancelled holding %s", vname[a]);
    for (variant a = MN; a <= ME; a++)
        for (int c = 1; c < 3; c++)
            add(cancel_case, a, NV, c, 0, "%s cancelled on %s", c == 1 ? "cond wait" : "timed cond wait",
                vname[a]);
    add(queued_case, RPR, NV, 0, K_SELF, "wprw read again, a writer queued");
    add(queued_case, RPR, NV, 1, K_DEADLOCK, "wprw read again, a timed writer queued");
    add(queued_case, RDR, NV, 0, 0, "rw read again, a writer queued");
    add(queued_case, RDR, NV, 1, 0, "rw read again, a timed writer queued");
    add(queued_case, MN, NV, 4, 0, "timed mutex request times out behind a holder");
    static const variant foreign_types[] = {MN, MR, ME, SP};
    for (size_t i = 0; i < 4; i++)
        for (int c = 0; c < 2; c++) {
            variant a = foreign_types[i];
            add(foreign_case, a, NV, c, K_BAD_UNLOCK | (c == 1 && a == ME ? K_SELF : 0),
                "%s unlocked by another thread, owner %s", vname[a],
                c ? "relocks" : "unlocks");
        }
    add(foreign_case, MN, NV, 2, K_BAD_UNLOCK | K_SELF,
        "mutex unlocked by another thread, owner takes a new lock and relocks it");
    for (variant a = 0; a < NV; a++)
        for (int c = 0; c < 2; c++)
            add(exit_case, a, NV, c, K_EXIT | (c == 1 && !is_read(a) ? K_SELF : 0),
                "thread exits holding %s, then it is %s", vname[a], c ? "requested" : "tried");
}

/* ------------------------------------------------------------------------------------------
 * The runner.
 * ---------------------------------------------------------------------------------------- */
#define NKINDS (sizeof kname / sizeof kname[0])

static char out[1 << 16];

static void run_scenario(const void *arg)
{
    const scenario *s = arg;
    s->run(s);
}

/* Runs s in a child; 1 when its verdict and ending are the expected ones. */
static int run(const scenario *s)
{
    int status = verdict_child(run_scenario, s, out, sizeof out);
    unsigned got = verdict_kinds(out, kname, NKINDS);
    int ok = status == 0 && got == s->expect;
    if (!ok) {
        printf("FAIL %s: expected ", s->name);
        verdict_print(s->expect, kname, NKINDS);
        printf(", got ");
        verdict_print(got, kname, NKINDS);
        verdict_print_ending(status);
        printf("\n%.2000s\n", out);
    }
    return ok;
}

static const char *scenario_name(int i)
{
    return table[i].name;
}

static void print_expected(int i)
{
    verdict_print(table[i].expect, kname, NKINDS);
}

static int run_one(int i)
{
    return run(&table[i]);
}

int main(int argc, char **argv)
{
    generate();
    return verdict_main(argc, argv,
                        &(verdict_suite){"matrix", nscenarios, scenario_name, print_expected, run_one});
}
