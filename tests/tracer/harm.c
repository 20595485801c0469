/*
 * harm.c - correct programs, each the smallest form of one that the tracer once harmed
 * (found by running Debian's multi-threaded programs and test suites under it), and the real
 * bugs next to them that must still be reported.
 *   harm stack-reuse         two functions called one after the other, each with a mutex in
 *                            its frame at the same address, take it and a global one in
 *                            opposite orders: no inversion (the first lock is gone)
 *   harm stack-reuse-helper  the same with the locks taken by a helper a frame further in
 *   harm stack-live          a mutex in main's frame, alive all along, taken with a global
 *                            one in both orders by two threads one after the other: the
 *                            inversion is real and is reported
 *   harm stack-same-frame    one frame takes its own mutex and a global one in both orders:
 *                            reported
 *   harm cancel-pending      a thread cancelled before its first locks (deferred: lock calls are
 *                            no cancellation points) takes a rwlock and a mutex, pushing a
 *                            cleanup handler after each, then reaches pause(): the handlers
 *                            release both, so the main thread can take them after the join
 *   harm cancel-async        threads with asynchronous cancellation on make and destroy a mutex
 *                            and an rwlock of their own frame without end (and take them with
 *                            cancellation deferred); each
 *                            is cancelled once it has gone round, and joined; 100 rounds of 4:
 *                            the cancellation may come inside the tracer, which must neither
 *                            crash nor keep a tracer lock or a half-written held set
 *   harm cancel-async-wait   a thread with asynchronous cancellation on blocks on a mutex main
 *                            holds and is cancelled there: it ends at once (the wait is libc's,
 *                            asynchronous), main then takes and frees the mutex; and the
 *                            thread's cancellation type reads back as it set it
 *   harm cancel-async-queue  300 rounds: a thread with asynchronous cancellation on says it
 *                            is about to request a mutex main holds; main cancels it then and
 *                            joins it. A cancellation that finds the thread inside the tracer
 *                            acts as it leaves, so its wait for main's mutex while main joins
 *                            it is no deadlock (it was reported in 10 of 10 runs)
 *   harm cancel-async-pool   200 rounds: 8 threads with asynchronous cancellation on make and
 *                            destroy a mutex, then request one main holds, again and again;
 *                            main cancels them in turn and joins them. Unwinding a cancelled
 *                            thread takes a lock of the unwinder's (a wait the thread makes
 *                            inside its lock wait): its lock wait, ended by the cancellation,
 *                            must not count again then (a false deadlock in 1 of ~30 runs)
 *   harm cancel-join         a thread holding a lock, whose cleanup handler releases it, is
 *                            cancelled (deferred), then joins a thread blocked on that lock:
 *                            the join, a cancellation point, ends there and the handler lets
 *                            the other thread go on; no deadlock (reported and aborted)
 *   harm cancel-join-disabled  the same with the joiner's cancellation disabled: the join
 *                            waits for good (native: hung); reported and aborted
 *   harm cancel-lock-deferred  a thread with deferred cancellation blocks on a mutex main
 *                            holds; main cancels and joins it: a lock request is no
 *                            cancellation point, so both wait for good (native: hung);
 *                            reported and aborted
 *   harm cancel-cond         a thread holding a lock waits on a condition variable; it is
 *                            cancelled there (deferred) and joined, its cleanup handlers
 *                            release the lock and the wait's mutex: silent
 *   harm cancel-cond-mutex   the same, but main holds the wait's mutex while it joins: the
 *                            cancelled wait retakes its mutex before its handlers run, so both
 *                            wait for good (native: hung); reported and aborted
 *   harm cancel-orphan       a thread cancelled holding a mutex leaves it locked (exit-held);
 *                            a thread with asynchronous cancellation on then requests it and
 *                            is cancelled as it waits: natively it ends there; traced, the
 *                            request is reported (self-deadlock, a gone thread holds the
 *                            lock) and goes on, cancelled as natively (it was aborted)
 *   harm cancel-orphan-late  the same, but main cancels the requester only once it sleeps in
 *                            libc's wait for the mutex (a canceller may take its time: stop
 *                            other threads first, or be descheduled): natively it waits there
 *                            until then; traced, reported and goes on (it was aborted when no
 *                            cancellation had come within 50 ms)
 *   harm cancel-grace        a thread with deferred cancellation holding mutex A asks to read a
 *                            writer-preferring rwlock behind a queued writer, which waits for
 *                            a reader that waits for A with a 1 s deadline: a cycle the wait-for
 *                            check looks at again after a grace, and a warning (the timed wait
 *                            ends it). The thread is cancelled meanwhile; a lock request is no
 *                            cancellation point, so it gets its read lock once the deadline
 *                            has passed and is cancelled at its next cancellation point (it
 *                            was cancelled inside the tracer's grace, its wait left behind)
 *   harm cancel-destroy      a thread with deferred cancellation, cancelled, destroys a
 *                            condition variable a thread waits on: the destroy is no
 *                            cancellation point and waits for the waiter (native: hung);
 *                            reported and aborted (the destroying thread was cancelled inside
 *                            the tracer as it looked whether libc still counted the waiter)
 *   harm cancel-cleanup-join  a thread holding a lock is cancelled; its cleanup handler joins
 *                            a thread blocked on that lock before it releases it: no
 *                            cancellation acts in a cleanup handler, so both wait for good
 *                            (native: hung); reported and aborted (the join was taken for one
 *                            the cancellation ends, and the hang was silent)
 *   harm cancel-cleanup-lock  a thread with asynchronous cancellation on is cancelled; its
 *                            cleanup handler asks for a mutex main holds while main joins it:
 *                            the same (native: hung); reported and aborted
 *   harm cancel-rdlock-deferred  a thread with deferred cancellation blocks on a read lock of
 *                            an rwlock main holds for write; main cancels and joins it: an
 *                            rwlock request is no cancellation point either, so both wait for
 *                            good (native: hung); reported and aborted
 *   harm cancel-wrlock-deferred  the same with a write request and main's read lock
 *   harm cancel-rdlock-async  the read request of a thread with asynchronous cancellation on:
 *                            the cancellation ends it at once, main joins, then unlocks: silent
 *   harm cancel-cond-timed   cancel-cond with a timed wait, its deadline far off: silent
 *   harm cancel-testcancel   a thread takes and releases a mutex in a loop with a
 *                            pthread_testcancel after each round; main cancels it holding the
 *                            mutex (the thread may be blocked on it), releases it, joins: silent
 *   harm cancel-sem          a thread holding a mutex (its cleanup handler releases it) waits in
 *                            sem_wait, a cancellation point, while another thread waits for
 *                            the mutex; main cancels and joins the first, then the second: silent
 *   harm fd-reuse            a daemon's start: after its first locks it closes every descriptor
 *                            from 3 on, makes a pipe of its own (3 and 4 again), and threads
 *                            take locks at new call sites: what it reads back from its pipe is
 *                            what it wrote (libunwind's own pipe once had those numbers)
 *   harm fd-reuse-many       fd-reuse 200 times, each in a new fork child: every run's bytes
 *                            intact, none killed (libunwind's pipe once sent SIGPIPE)
 *   harm pipe-pending        the program blocks SIGPIPE and writes into a pipe it closed the
 *                            read end of: its SIGPIPE is pending; then it takes locks at new
 *                            call sites (the tracer unwinds, guarding libunwind's pipe
 *                            against SIGPIPE): the program's signal is still pending after
 *   harm mask-unwind         the program keeps SIGUSR2 blocked and a thread keeps sending it
 *                            SIGUSR1 while it takes locks from 16 new call sites (each one an
 *                            unwind of the tracer's, with every signal blocked): after each,
 *                            its mask is its own, its sigprocmask unblocks and blocks SIGUSR2
 *                            for a raise() the handler takes at once, and SIGUSR1 arrives
 *   harm fork-faults         after a lock order, 50 fork children that exit at once: each
 *                            makes fewer than 28 page faults (17 native; 81 when the tracer's
 *                            fork handlers cleared a 32-page table in every child, 40 when
 *                            each module's handler wrote or first read a page of its own),
 *                            and each fork fewer than 6 in the parent (2 native; 10 when the
 *                            handlers took every tracer lock and read /proc/self/stat)
 *   harm cond-new-worker     a queue's owner starts a second worker while holding the queue
 *                            lock and waits on the pool's condition variable for it to say
 *                            it is ready; the first worker, the last to signal that variable,
 *                            blocks on the queue lock meanwhile, and the new one takes a while
 *                            (its setup, 300 ms) to signal: no deadlock, no warning (rsyslog)
 *   harm cond-woken          the same owner waits, holding the queue, for a worker it just
 *                            started; the worker says it is ready with a broadcast while
 *                            another thread holds the pool mutex, so the woken owner waits
 *                            for that mutex, then blocks on the queue lock: no deadlock, no
 *                            warning (rsyslog under load: the broadcast's sender looked like
 *                            the owner's next hope)
 *   harm pshared-fork        a thread holds a process-shared mutex and rwlock (write) in
 *                            shared memory when main forks; the child takes both, blocking
 *                            until that thread, alive in the parent, releases them: the child
 *                            gets them, no report (a fork once orphaned them in the child)
 *   harm pshared-private-fork  a thread holds a process-shared mutex in private memory (a
 *                            global) when main forks; the child locks it: its copy's holder
 *                            is gone and the parent's unlock never reaches it, so the child
 *                            hangs natively ("child hung"); traced, the child's lock is
 *                            reported and aborted ("child aborted"; it once hung silently)
 *   harm robust-fork         the same with a robust mutex (not process-shared): its holder
 *                            never exits in the child, so no EOWNERDEAD comes there either
 *   harm atfork-rwlock       atfork handlers: prepare takes an rwlock for write, the child's
 *                            handler unlocks it, which glibc takes for a read unlock (the
 *                            fork changed the writer's id): the child's wrlock hangs natively
 *                            ("child hung"); traced, reported and aborted ("child aborted")
 *   harm spin-fork           the same with a spinlock in shared memory (its word has no
 *                            process-shared mark): the child spins in libc's
 *                            pthread_spin_lock until the parent's thread unlocks it. The
 *                            parent unlocks once a signal caught the child's thread there
 *                            (a spinning thread never sleeps in the kernel to be seen)
 *   harm timed-cycle         two threads, each holding one of two mutexes, ask for the other
 *                            with a 1 ms timeout, 1000 times: every round both give up, as
 *                            natively (about 1 ms a round); the tracer once held each round's
 *                            cycle for a 50 ms grace before either thread began its wait
 *   harm timed-cycle-exit    8 pairs of new threads at once, each thread holding one of its
 *                            pair's mutexes and asking for the other with a 5-60 ms timeout,
 *                            then exiting; 20 rounds: the watchdog looks at such cycles (each
 *                            lasts a grace, a warning) while their threads time out and exit.
 *                            It once searched from an exited thread's cleared record: SIGSEGV
 *   harm timed-cond-exit     8 groups of new threads at once: one holds n and waits 5-60 ms
 *                            on a condition variable whose last signaller, the group's other
 *                            thread, then waits for n (a cycle through the signaller hint and
 *                            a timed wait); both then exit; 60 rounds: SIGSEGV as
 *                            timed-cycle-exit's, once
 *   harm cond-busy-sleep     an owner holding the queue lock waits on a condition variable;
 *                            the thread that signalled it last now blocks on the queue lock,
 *                            and a third thread, alive before that signal, will signal once
 *                            its work (300 ms asleep) is done: no deadlock, no warning
 *   harm cond-busy-io        the same, the third thread blocked in a read of a pipe that a
 *                            fourth fills after 300 ms
 *   harm cond-busy-lock      the same, the third thread blocked on a mutex a fourth holds for
 *                            300 ms
 *   harm cond-stalled        the same, but the third thread waits forever on a condition
 *                            variable nobody signals: the whole process sleeps, reported
 *   harm cond-stalled-late   the same, the third thread at work (300 ms asleep) when the
 *                            cycle closes and only then waiting forever: reported
 *   harm cond-busy-timed     the same as cond-busy-sleep, the third thread's work a
 *                            condition wait with a 300 ms deadline nobody signals
 *   harm cond-busy-mutex     the same, but the last signaller blocks on the queue lock and
 *                            the third thread on the condition variable's own mutex before
 *                            the owner's wait begins (libgc's collector and its free-list
 *                            builders): when the owner's wait closes the cycle, every other
 *                            thread sleeps in a futex wait, but the third one only until
 *                            the wait releases the mutex: no deadlock, no warning
 *   harm cond-busy-alarm     the same as cond-stalled, but the third thread waits on a
 *                            semaphore that a SIGALRM handler posts in 2 s (setitimer), then
 *                            signals: every thread sleeps, yet a handler will wake one: no
 *                            deadlock, no warning
 *   harm cond-busy-timer     the same with a POSIX timer (timer_create) notifying by SIGUSR2
 *   harm cond-busy-child     the same, the semaphore posted by a SIGCHLD handler when a fork
 *                            child exits, 1 s after the cycle closed: every thread sleeps and
 *                            no timer is armed, yet another process will wake one: no
 *                            deadlock, no warning
 *   harm cond-stalled-child  the same as cond-busy-child, but SIGCHLD is not handled: nothing
 *                            will post the semaphore, reported (alive or a zombie, the child
 *                            wakes nobody)
 *   harm cond-stalled-alarm  the same as cond-busy-alarm, but SIGALRM is ignored: nothing
 *                            will post the semaphore, reported
 *   harm cond-stalled-early  the same as cond-stalled, but the last signaller is asleep on the
 *                            queue lock before the owner's wait begins: the wait closes the
 *                            cycle (and is judged once it has released its mutex), reported
 *   harm cond-busy-process   an owner holding the queue lock waits on a process-shared
 *                            condition variable; this process's last signaller of it then
 *                            blocks on the queue lock, and a fork child signals it 1 s later:
 *                            the whole process sleeps, but another one will wake it: no
 *                            deadlock, no warning
 *   harm stats-exit          20 fork children, each: 40 mutexes taken, a thread that holds one
 *                            and leaves when the child's exit() releases it from an atexit
 *                            handler (its exit-held report then runs while the exit prints
 *                            LOCKTRACE_STATS's table): every child exits 0 (the table's stacks
 *                            and the report once shared unlocked storage: killed by SIGSEGV)
 *   harm against-first       200 rounds: 40 new rwlocks read-locked in address order, one more
 *                            read and one written above them, then a new one below the last
 *                            written (its first edge against the address order, which the
 *                            gate gives up); another thread destroys each round's locks, so the
 *                            freed edges fill the pool the next round takes from. The edge's
 *                            run of below keys went back to the shared pool outside the graph
 *                            lock when the thread's own list was full: a race that handed an
 *                            index out twice under `lazy` (with LT_CHECKS, as development
 *                            builds and CI have, the unguarded use aborts at once)
 * Prints "done" (and exits 3 when the two frames' mutexes did not share an address, which
 * would make the stack-reuse cases prove nothing).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../blocked.h"
#include "../pc.h"

static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
static const void *first_addr, *second_addr;

static __attribute__((noinline)) void take(pthread_mutex_t *a, pthread_mutex_t *b)
{
    pthread_mutex_lock(a);
    pthread_mutex_lock(b);
    pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
}

/* Each frame holds one mutex by a static initializer: no init or destroy call tells the
 * tracer where its life starts or ends. */
static __attribute__((noinline)) void global_then_local(int helper)
{
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    first_addr = &local;
    if (helper) {
        take(&global, &local);
        return;
    }
    pthread_mutex_lock(&global);
    pthread_mutex_lock(&local);
    pthread_mutex_unlock(&local);
    pthread_mutex_unlock(&global);
}

static __attribute__((noinline)) void local_then_global(int helper)
{
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    second_addr = &local;
    if (helper) {
        take(&local, &global);
        return;
    }
    pthread_mutex_lock(&local);
    pthread_mutex_lock(&global);
    pthread_mutex_unlock(&global);
    pthread_mutex_unlock(&local);
}

static int stack_reuse(int helper)
{
    for (int i = 0; i < 3; i++) {
        global_then_local(helper);
        local_then_global(helper);
    }
    return first_addr == second_addr ? 0 : 3;
}

static pthread_mutex_t *shared_local;

static void *local_then_global_thread(void *arg)
{
    take(shared_local, &global);
    return arg;
}

static int stack_live(void)
{
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    pthread_t th;
    shared_local = &local;
    take(&global, &local);
    if (pthread_create(&th, NULL, local_then_global_thread, NULL) != 0)
        return 1;
    pthread_join(th, NULL);
    return 0;
}

static __attribute__((noinline)) int stack_same_frame(void)
{
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    take(&global, &local);
    take(&local, &global);
    return 0;
}

static void *new_sites_thread(void *arg)
{
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    take(&m, &global);
    pthread_mutex_destroy(&m);
    return arg;
}

static int fd_reuse(void)
{
    static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
    take(&global, &first); /* the tracer's first unwind: libunwind sets up its checks */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int p[2];
    pthread_t th[4];
    char buf[64] = {0};
    if (pipe(p) != 0 || write(p[1], "the program's own bytes", 23) != 23)
        return 1;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&th[i], NULL, new_sites_thread, NULL) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    close(p[1]);
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    printf("descriptors %d %d, read back %zd bytes: %s\n", p[0], p[1], n, n > 0 ? buf : "");
    return strcmp(buf, "the program's own bytes") == 0 ? 0 : 4;
}

/* child `runs` times, each in a new fork child, which ends by exiting: 0 when every one
 * exited 0, else 1 with the first that did not named. */
static int in_children(int runs, void (*child)(void))
{
    for (int i = 0; i < runs; i++) {
        int status;
        pid_t pid = fork();
        if (pid == 0)
            child();
        if (pid < 0 || waitpid(pid, &status, 0) != pid)
            return 1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("run %d: %s %d\n", i, WIFSIGNALED(status) ? "killed by signal" : "status",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            return 1;
        }
    }
    return 0;
}

/* fd-reuse again and again, each time in a new fork child (whose call sites are all new to
 * the tracer): libunwind's pipe, opened again by several threads at once, once killed about
 * 3 runs in 100 with SIGPIPE. */
static void fd_reuse_child(void)
{
    _exit(fd_reuse()); /* _exit: the child's buffered output is not the test's */
}

static int fd_reuse_many(void)
{
    return in_children(200, fd_reuse_child);
}

/* A SIGPIPE of the program's own, blocked and pending, is not taken by the tracer's guard
 * of libunwind's pipe (which takes only one that became pending during an unwind). */
static int pipe_pending(void)
{
    sigset_t pipe_only, pending;
    int p[2];
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe_only, NULL) != 0 || pipe(p) != 0)
        return 1;
    close(p[0]);
    if (write(p[1], "x", 1) != -1)
        return 1;
    for (int i = 0; i < 3; i++) {
        pthread_mutex_t m;
        pthread_mutex_init(&m, NULL);
        take(&m, &global);
        pthread_mutex_destroy(&m);
    }
    pthread_t th;
    if (pthread_create(&th, NULL, new_sites_thread, NULL) != 0 || pthread_join(th, NULL) != 0)
        return 1;
    int still = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    int taken = sigtimedwait(&pipe_only, NULL, &(struct timespec){0, 0}) == SIGPIPE;
    printf("SIGPIPE pending after the locks: %s, taken by the program: %s\n", still ? "yes" : "no",
           taken ? "yes" : "no");
    return still && taken ? 0 : 4;
}

static volatile sig_atomic_t usr1_taken, usr2_taken;
static atomic_int usr1_stop;
static pthread_t usr1_target;

static void count_usr1(int sig)
{
    (void)sig;
    usr1_taken++;
}

static void count_usr2(int sig)
{
    (void)sig;
    usr2_taken++;
}

static void *send_usr1(void *arg)
{
    while (!atomic_load(&usr1_stop)) {
        pthread_kill(usr1_target, SIGUSR1);
        sched_yield();
    }
    return arg;
}

/* After a lock call at a new site: the mask is the program's (SIGUSR2 alone of the two
 * blocked), and its own sigprocmask calls change it: SIGUSR2, unblocked and raised, is taken
 * before raise returns. 0 when all holds. */
static int mask_is_own(void)
{
    sigset_t now, usr2;
    sig_atomic_t before = usr2_taken;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, NULL, &now) != 0 || sigismember(&now, SIGUSR2) != 1 ||
        sigismember(&now, SIGUSR1) != 0)
        return 1;
    if (sigprocmask(SIG_UNBLOCK, &usr2, NULL) != 0 || raise(SIGUSR2) != 0 ||
        sigprocmask(SIG_BLOCK, &usr2, NULL) != 0)
        return 1;
    return usr2_taken == before + 1 ? 0 : 1;
}

/* Each expansion calls take() from a call site of its own: a new site the tracer unwinds at. */
#define NEW_SITE(m) (take(&(m), &global), bad |= mask_is_own(), sites++)
#define NEW_SITES4(m) (NEW_SITE(m), NEW_SITE(m), NEW_SITE(m), NEW_SITE(m))

static int mask_unwind(void)
{
    struct sigaction a1 = {.sa_handler = count_usr1}, a2 = {.sa_handler = count_usr2};
    sigset_t usr2;
    pthread_mutex_t m;
    pthread_t sender;
    int bad = 0, sites = 0;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    if (sigaction(SIGUSR1, &a1, NULL) != 0 || sigaction(SIGUSR2, &a2, NULL) != 0 ||
        sigprocmask(SIG_BLOCK, &usr2, NULL) != 0 || pthread_mutex_init(&m, NULL) != 0)
        return 1;
    usr1_target = pthread_self();
    if (pthread_create(&sender, NULL, send_usr1, NULL) != 0)
        return 1;
    NEW_SITES4(m), NEW_SITES4(m), NEW_SITES4(m), NEW_SITES4(m);
    for (int i = 0; i < 10000 && !usr1_taken; i++) /* a loaded machine may not have sent yet */
        usleep(1000);
    atomic_store(&usr1_stop, 1);
    pthread_join(sender, NULL);
    pthread_mutex_destroy(&m);
    printf("mask kept over %d new call sites: %s, SIGUSR2 taken %d times, SIGUSR1 taken: %s\n",
           sites, bad ? "no" : "yes", (int)usr2_taken, usr1_taken ? "yes" : "no");
    return bad || !usr1_taken ? 4 : 0;
}

/* What a fork child that exits at once costs: its page faults, from the children's usage. */
static int fork_faults(void)
{
    struct rusage before, after, self_before, self_after;
    enum { CHILDREN = 50 };
    static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
    take(&global, &inner); /* the tracer's tables now hold a lock order */
    if (getrusage(RUSAGE_CHILDREN, &before) != 0 || getrusage(RUSAGE_SELF, &self_before) != 0)
        return 1;
    for (int i = 0; i < CHILDREN; i++) {
        int status;
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
            return 1;
    }
    if (getrusage(RUSAGE_CHILDREN, &after) != 0 || getrusage(RUSAGE_SELF, &self_after) != 0)
        return 1;
    long each = (after.ru_minflt - before.ru_minflt) / CHILDREN;
    long parent = (self_after.ru_minflt - self_before.ru_minflt) / CHILDREN;
    printf("page faults per fork child under 28: %s\n", each < 28 ? "yes" : "no");
    printf("page faults per fork in the parent under 6: %s\n", parent < 6 ? "yes" : "no");
    return each < 28 && parent < 6 ? 0 : 4;
}

static pthread_mutex_t leaver_holds = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t leaver_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t leaver_go_cv = PTHREAD_COND_INITIALIZER;
static int leaver_go;
static atomic_int leaver_leaving;

static void *leaver(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&leaver_holds);
    pthread_mutex_lock(&leaver_gate);
    while (!leaver_go)
        pthread_cond_wait(&leaver_go_cv, &leaver_gate);
    pthread_mutex_unlock(&leaver_gate);
    atomic_store(&leaver_leaving, 1);
    return NULL; /* leaves holding leaver_holds: an exit-held report */
}

/* Runs first among the exit handlers (registered last): the tracer's table comes after,
 * while the thread leaves (whether its report begins before the process ends is a race). */
static void release_leaver(void)
{
    pthread_mutex_lock(&leaver_gate);
    leaver_go = 1;
    pthread_cond_signal(&leaver_go_cv);
    pthread_mutex_unlock(&leaver_gate);
    while (!atomic_load(&leaver_leaving))
        sched_yield();
}

static void stats_exit_child(void)
{
    static pthread_mutex_t rows[40];
    for (int i = 0; i < 40; i++) {
        pthread_mutex_init(&rows[i], NULL);
        for (int k = 0; k <= i; k++) {
            pthread_mutex_lock(&rows[i]);
            pthread_mutex_unlock(&rows[i]);
        }
    }
    pthread_t t;
    if (pthread_create(&t, NULL, leaver, NULL) != 0 || pthread_detach(t) != 0 ||
        atexit(release_leaver) != 0)
        _exit(1);
    exit(0);
}

static int stats_exit(void)
{
    return in_children(20, stats_exit_child);
}

static pthread_rwlock_t cancel_rw;
static pthread_mutex_t cancel_mutex;
static atomic_int cancel_go;

static void unlock_rw(void *rw)
{
    pthread_rwlock_unlock(rw);
}

static void unlock_mutex(void *m)
{
    pthread_mutex_unlock(m);
}

static void *cancelled_thread(void *arg)
{
    while (!atomic_load(&cancel_go))
        sched_yield();
    pthread_rwlock_rdlock(&cancel_rw);
    pthread_cleanup_push(unlock_rw, &cancel_rw);
    pthread_mutex_lock(&cancel_mutex);
    pthread_cleanup_push(unlock_mutex, &cancel_mutex);
    pause(); /* the first cancellation point: the pending cancel acts here */
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    return arg;
}

static int cancel_pending(void)
{
    for (int i = 0; i < 20; i++) {
        pthread_t th;
        pthread_rwlock_init(&cancel_rw, NULL);
        pthread_mutex_init(&cancel_mutex, NULL);
        atomic_store(&cancel_go, 0);
        if (pthread_create(&th, NULL, cancelled_thread, NULL) != 0)
            return 1;
        pthread_cancel(th);
        atomic_store(&cancel_go, 1);
        pthread_join(th, NULL);
        if (pthread_rwlock_trywrlock(&cancel_rw) != 0 || pthread_mutex_trylock(&cancel_mutex) != 0) {
            printf("round %d: the cancelled thread left its locks taken\n", i);
            return 1;
        }
        pthread_mutex_unlock(&cancel_mutex);
        pthread_rwlock_unlock(&cancel_rw);
        pthread_mutex_destroy(&cancel_mutex);
        pthread_rwlock_destroy(&cancel_rw);
    }
    return 0;
}

#define ASYNC_THREADS 4
static _Atomic long async_rounds[ASYNC_THREADS];

static void *async_churn(void *arg)
{
    _Atomic long *rounds = arg;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    for (;;) {
        pthread_mutex_t m;
        pthread_rwlock_t rw;
        pthread_mutex_init(&m, NULL);
        pthread_rwlock_init(&rw, NULL);
        /* deferred while they are held: a thread that ends holding a lock is reported
         * (exit-held), and disabling cancellation does not stop a cancellation signal already
         * sent (glibc 2.36) */
        pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
        pthread_rwlock_rdlock(&rw);
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        pthread_rwlock_unlock(&rw);
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
        pthread_rwlock_destroy(&rw);
        pthread_mutex_destroy(&m);
        atomic_fetch_add(rounds, 1);
    }
    return NULL;
}

/* Each thread cancelled once it has gone round a few times, wherever it is then. */
static int cancel_async(void)
{
    for (int round = 0; round < 100; round++) {
        pthread_t th[ASYNC_THREADS];
        for (int i = 0; i < ASYNC_THREADS; i++) {
            atomic_store(&async_rounds[i], 0);
            if (pthread_create(&th[i], NULL, async_churn, &async_rounds[i]) != 0)
                return 1;
        }
        for (int i = 0; i < ASYNC_THREADS; i++) {
            while (atomic_load(&async_rounds[i]) < 3 + round % 7)
                sched_yield();
            pthread_cancel(th[i]);
        }
        for (int i = 0; i < ASYNC_THREADS; i++)
            pthread_join(th[i], NULL);
    }
    return 0;
}

static pthread_mutex_t async_held = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe async_waits;
static int async_types[2];

static void *async_waiter(void *arg)
{
    (void)arg;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &async_types[0]);
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    pthread_mutex_lock(&m); /* the tracer in between: the type must come back as set */
    pthread_mutex_unlock(&m);
    pthread_mutex_destroy(&m);
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &async_types[1]);
    blocked_announce(&async_waits);
    pthread_mutex_lock(&async_held);
    pthread_mutex_unlock(&async_held);
    return NULL;
}

static int cancel_async_wait(void)
{
    pthread_t th;
    void *ret = NULL;
    pthread_mutex_lock(&async_held);
    if (pthread_create(&th, NULL, async_waiter, NULL) != 0)
        return 1;
    blocked_until(&async_waits);
    pthread_cancel(th);
    pthread_join(th, &ret);
    pthread_mutex_unlock(&async_held);
    int rc = pthread_mutex_lock(&async_held);
    if (rc == 0)
        pthread_mutex_unlock(&async_held);
    printf("types %s, %s; waiter %s; lock -> %d\n",
           async_types[0] == PTHREAD_CANCEL_DEFERRED ? "deferred" : "asynchronous",
           async_types[1] == PTHREAD_CANCEL_DEFERRED ? "deferred" : "asynchronous",
           ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled", rc);
    return 0;
}

static pthread_mutex_t queue_held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int queue_about;

static void *queue_waiter(void *arg)
{
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    atomic_store(&queue_about, 1);
    pthread_mutex_lock(&queue_held); /* cancelled before, inside the tracer or in the wait */
    return arg;
}

static int cancel_async_queue(void)
{
    pthread_mutex_lock(&queue_held);
    for (int round = 0; round < 300; round++) {
        pthread_t th;
        void *ret = NULL;
        atomic_store(&queue_about, 0);
        if (pthread_create(&th, NULL, queue_waiter, NULL) != 0)
            return 1;
        while (!atomic_load(&queue_about))
            sched_yield();
        pthread_cancel(th);
        pthread_join(th, &ret);
        if (ret != PTHREAD_CANCELED)
            return 1;
    }
    pthread_mutex_unlock(&queue_held);
    return 0;
}

static atomic_int pool_started;

static void *pool_waiter(void *arg)
{
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    atomic_fetch_add(&pool_started, 1);
    for (;;) {
        pthread_mutex_t own;
        pthread_mutex_init(&own, NULL); /* the tracer's work before each wait */
        pthread_mutex_destroy(&own);
        pthread_mutex_lock(&queue_held); /* cancelled in the wait or before */
    }
    return arg;
}

static int cancel_async_pool(void)
{
    pthread_mutex_lock(&queue_held);
    for (int round = 0; round < 200; round++) {
        pthread_t th[8];
        atomic_store(&pool_started, 0);
        for (int i = 0; i < 8; i++)
            if (pthread_create(&th[i], NULL, pool_waiter, NULL) != 0)
                return 1;
        while (atomic_load(&pool_started) < 8)
            sched_yield();
        for (int i = 0; i < 8; i++)
            pthread_cancel(th[i]);
        for (int i = 0; i < 8; i++)
            pthread_join(th[i], NULL);
    }
    pthread_mutex_unlock(&queue_held);
    return 0;
}

static pthread_mutex_t join_held = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe join_waits;
static atomic_int joiner_ready, joiner_cancelled;
static pthread_t join_waiter_th;

static void *join_waiter(void *arg)
{
    blocked_announce_on(&join_waits, &join_held, sizeof join_held);
    pthread_mutex_lock(&join_held);
    pthread_mutex_unlock(&join_held);
    return arg;
}

/* Holds join_held (released by its handler) and joins join_waiter, which waits for it, once
 * main has cancelled it: with cancellation enabled (arg NULL) the join ends there. */
static void *joiner(void *arg)
{
    if (arg)
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_mutex_lock(&join_held);
    pthread_cleanup_push(unlock_mutex, &join_held);
    if (pthread_create(&join_waiter_th, NULL, join_waiter, NULL) != 0)
        abort();
    blocked_until(&join_waits);
    atomic_store(&joiner_ready, 1);
    while (!atomic_load(&joiner_cancelled)) /* (no cancellation point) */
        sched_yield();
    pthread_join(join_waiter_th, NULL);
    pthread_cleanup_pop(1);
    return NULL;
}

static int cancel_join(int disabled)
{
    pthread_t th;
    void *ret = NULL;
    if (pthread_create(&th, NULL, joiner, disabled ? &th : NULL) != 0)
        return 1;
    while (!atomic_load(&joiner_ready))
        sched_yield();
    pthread_cancel(th);
    atomic_store(&joiner_cancelled, 1);
    pthread_join(th, &ret);
    pthread_join(join_waiter_th, NULL);
    printf("joiner %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t deferred_held = PTHREAD_MUTEX_INITIALIZER;
static blocked_probe deferred_waits;

static void *deferred_waiter(void *arg)
{
    blocked_announce_on(&deferred_waits, &deferred_held, sizeof deferred_held);
    pthread_mutex_lock(&deferred_held);
    pthread_mutex_unlock(&deferred_held);
    return arg;
}

static int cancel_lock_deferred(void)
{
    pthread_t th;
    pthread_mutex_lock(&deferred_held);
    if (pthread_create(&th, NULL, deferred_waiter, NULL) != 0)
        return 1;
    blocked_until(&deferred_waits);
    pthread_cancel(th);
    pthread_join(th, NULL);
    pthread_mutex_unlock(&deferred_held);
    return 0;
}

static pthread_mutex_t cond_held = PTHREAD_MUTEX_INITIALIZER, cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cancel_cv = PTHREAD_COND_INITIALIZER;
static blocked_probe cond_waits;

/* arg not NULL: a timed wait, its deadline far off. */
static void *cond_waiter(void *arg)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 600;
    pthread_mutex_lock(&cond_held);
    pthread_cleanup_push(unlock_mutex, &cond_held);
    pthread_mutex_lock(&cond_mutex);
    pthread_cleanup_push(unlock_mutex, &cond_mutex);
    blocked_announce_on(&cond_waits, &cancel_cv, sizeof cancel_cv);
    for (;;) /* only the cancellation ends it */
        if (arg)
            pthread_cond_timedwait(&cancel_cv, &cond_mutex, &deadline);
        else
            pthread_cond_wait(&cancel_cv, &cond_mutex);
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    return arg;
}

/* mutex_held: main holds the wait's mutex while it joins; timed: the wait has a deadline. */
static int cancel_cond(int mutex_held, int timed)
{
    pthread_t th;
    void *ret = NULL;
    if (pthread_create(&th, NULL, cond_waiter, timed ? &th : NULL) != 0)
        return 1;
    blocked_until(&cond_waits);
    if (mutex_held)
        pthread_mutex_lock(&cond_mutex);
    pthread_cancel(th);
    pthread_join(th, &ret);
    if (mutex_held)
        pthread_mutex_unlock(&cond_mutex);
    int rc = pthread_mutex_trylock(&cond_held);
    if (rc == 0)
        pthread_mutex_unlock(&cond_held);
    printf("waiter %s; its lock -> %d\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled",
           rc);
    return 0;
}

static pthread_mutex_t orphaned = PTHREAD_MUTEX_INITIALIZER;
static atomic_int orphan_taken;
static _Atomic int orphan_requester;
static blocked_probe orphan_waits;

static void *orphan_holder(void *arg)
{
    pthread_mutex_lock(&orphaned);
    atomic_store(&orphan_taken, 1);
    pause(); /* cancelled here, the mutex still locked */
    return arg;
}

static void *orphan_request(void *arg)
{
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    atomic_store(&orphan_requester, blocked_tid());
    blocked_announce_on(&orphan_waits, &orphaned, sizeof orphaned);
    pthread_mutex_lock(&orphaned);
    return arg;
}

/* Whether thread tid sleeps in a system call (its request: natively libc's futex wait). */
static int asleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return blocked_syscall_line(path, buf, sizeof buf) && strncmp(buf, "running", 7) != 0;
}

/* late: main cancels the requester once it sleeps in libc's futex wait for the mutex, not
 * in any system call. */
static int cancel_orphan(int late)
{
    pthread_t holder, th;
    void *ret = NULL;
    int tid;
    if (pthread_create(&holder, NULL, orphan_holder, NULL) != 0)
        return 1;
    while (!atomic_load(&orphan_taken))
        sched_yield();
    pthread_cancel(holder);
    pthread_join(holder, NULL);
    if (pthread_create(&th, NULL, orphan_request, NULL) != 0)
        return 1;
    if (late)
        blocked_until(&orphan_waits);
    else
        while ((tid = atomic_load(&orphan_requester)) == 0 || !asleep(tid))
            sched_yield();
    pthread_cancel(th);
    pthread_join(th, &ret);
    printf("requester %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_rwlock_t grace_rw;
static pthread_mutex_t grace_a = PTHREAD_MUTEX_INITIALIZER;
static atomic_int grace_a_held, grace_read;
static _Atomic int grace_reader_tid;
static blocked_probe grace_timed, grace_writer;

static void *grace_reader(void *arg)
{
    pthread_mutex_lock(&grace_a);
    atomic_store(&grace_a_held, 1);
    blocked_until(&grace_writer);
    atomic_store(&grace_reader_tid, blocked_tid());
    pthread_rwlock_rdlock(&grace_rw); /* behind the writer; no cancellation point */
    atomic_store(&grace_read, 1);
    pthread_rwlock_unlock(&grace_rw);
    pthread_mutex_unlock(&grace_a);
    pthread_testcancel();
    return arg;
}

static void *grace_timed_reader(void *arg)
{
    struct timespec deadline;
    while (!atomic_load(&grace_a_held))
        sched_yield();
    pthread_rwlock_rdlock(&grace_rw);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    blocked_announce_on(&grace_timed, &grace_a, sizeof grace_a);
    if (pthread_mutex_timedlock(&grace_a, &deadline) == 0)
        pthread_mutex_unlock(&grace_a);
    pthread_rwlock_unlock(&grace_rw);
    return arg;
}

static void *grace_queued_writer(void *arg)
{
    blocked_until(&grace_timed);
    blocked_announce_on(&grace_writer, &grace_rw, sizeof grace_rw);
    pthread_rwlock_wrlock(&grace_rw);
    pthread_rwlock_unlock(&grace_rw);
    return arg;
}

static int cancel_grace(void)
{
    pthread_t th[3];
    void *ret = NULL;
    int tid;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&grace_rw, &attr);
    if (pthread_create(&th[0], NULL, grace_reader, NULL) != 0 ||
        pthread_create(&th[1], NULL, grace_timed_reader, NULL) != 0 ||
        pthread_create(&th[2], NULL, grace_queued_writer, NULL) != 0)
        return 1;
    while ((tid = atomic_load(&grace_reader_tid)) == 0 || !asleep(tid))
        sched_yield();
    pthread_cancel(th[0]);
    pthread_join(th[0], &ret);
    pthread_join(th[1], NULL);
    pthread_join(th[2], NULL);
    printf("reader %s, %s\n", atomic_load(&grace_read) ? "got its lock" : "did not get its lock",
           ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t destroyed_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t destroyed_cv = PTHREAD_COND_INITIALIZER;
static blocked_probe destroyed_waits;
static atomic_int destroy_go;

static void *destroyed_waiter(void *arg)
{
    pthread_mutex_lock(&destroyed_mutex);
    blocked_announce_on(&destroyed_waits, &destroyed_cv, sizeof destroyed_cv);
    for (;;) /* nothing signals it */
        pthread_cond_wait(&destroyed_cv, &destroyed_mutex);
    return arg;
}

static void *destroyer(void *arg)
{
    while (!atomic_load(&destroy_go)) /* (no cancellation point) */
        sched_yield();
    pthread_cond_destroy(&destroyed_cv);
    return arg;
}

static int cancel_destroy(void)
{
    pthread_t waiter, th;
    void *ret = NULL;
    if (pthread_create(&waiter, NULL, destroyed_waiter, NULL) != 0 ||
        pthread_create(&th, NULL, destroyer, NULL) != 0)
        return 1;
    blocked_until(&destroyed_waits);
    pthread_cancel(th);
    atomic_store(&destroy_go, 1);
    pthread_join(th, &ret);
    printf("destroyer %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t cleanup_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_t cleanup_blocked_th;
static blocked_probe cleanup_waits;
static atomic_int cleanup_ready;

static void *cleanup_blocked(void *arg)
{
    blocked_announce_on(&cleanup_waits, &cleanup_held, sizeof cleanup_held);
    pthread_mutex_lock(&cleanup_held);
    pthread_mutex_unlock(&cleanup_held);
    return arg;
}

/* Joins the thread blocked on cleanup_held before releasing it: for good. */
static void join_blocked(void *arg)
{
    (void)arg;
    pthread_join(cleanup_blocked_th, NULL);
    pthread_mutex_unlock(&cleanup_held);
}

static void *cleanup_joiner(void *arg)
{
    pthread_mutex_lock(&cleanup_held);
    pthread_cleanup_push(join_blocked, NULL);
    if (pthread_create(&cleanup_blocked_th, NULL, cleanup_blocked, NULL) != 0)
        abort();
    blocked_until(&cleanup_waits);
    atomic_store(&cleanup_ready, 1);
    for (;;) /* cancelled here */
        pause();
    pthread_cleanup_pop(0);
    return arg;
}

static int cancel_cleanup_join(void)
{
    pthread_t th;
    if (pthread_create(&th, NULL, cleanup_joiner, NULL) != 0)
        return 1;
    while (!atomic_load(&cleanup_ready))
        sched_yield();
    pthread_cancel(th);
    pthread_join(th, NULL);
    return 0;
}

static pthread_mutex_t async_cleanup_held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int async_cleanup_ready;
static volatile long async_cleanup_spins;

static void lock_held(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&async_cleanup_held);
    pthread_mutex_unlock(&async_cleanup_held);
}

static void *async_cleanup_locker(void *arg)
{
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    pthread_cleanup_push(lock_held, NULL);
    atomic_store(&async_cleanup_ready, 1);
    for (;;) /* cancelled at any of these instructions */
        async_cleanup_spins++;
    pthread_cleanup_pop(0);
    return arg;
}

static int cancel_cleanup_lock(void)
{
    pthread_t th;
    pthread_mutex_lock(&async_cleanup_held);
    if (pthread_create(&th, NULL, async_cleanup_locker, NULL) != 0)
        return 1;
    while (!atomic_load(&async_cleanup_ready))
        sched_yield();
    pthread_cancel(th);
    pthread_join(th, NULL);
    pthread_mutex_unlock(&async_cleanup_held);
    return 0;
}

static pthread_rwlock_t cancel_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static blocked_probe rwlock_waits;
static int rwlock_async;

static void *rwlock_waiter(void *arg)
{
    if (rwlock_async)
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    blocked_announce_on(&rwlock_waits, &cancel_rwlock, sizeof cancel_rwlock);
    if (arg)
        pthread_rwlock_wrlock(&cancel_rwlock);
    else
        pthread_rwlock_rdlock(&cancel_rwlock);
    pthread_rwlock_unlock(&cancel_rwlock);
    return NULL;
}

/* write: the thread asks to write (main reads); async: its cancellation is asynchronous, and
 * main joins it before it unlocks. */
static int cancel_rwlock_wait(int write, int async)
{
    pthread_t th;
    void *ret = NULL;
    rwlock_async = async;
    if (write)
        pthread_rwlock_rdlock(&cancel_rwlock);
    else
        pthread_rwlock_wrlock(&cancel_rwlock);
    if (pthread_create(&th, NULL, rwlock_waiter, write ? &th : NULL) != 0)
        return 1;
    blocked_until(&rwlock_waits);
    pthread_cancel(th);
    pthread_join(th, &ret);
    pthread_rwlock_unlock(&cancel_rwlock);
    printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t testcancel_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_long testcancel_rounds;

static void *testcancel_loop(void *arg)
{
    for (;;) {
        pthread_mutex_lock(&testcancel_mutex);
        atomic_fetch_add(&testcancel_rounds, 1);
        pthread_mutex_unlock(&testcancel_mutex);
        pthread_testcancel();
    }
    return arg;
}

static int cancel_testcancel(void)
{
    pthread_t th;
    void *ret = NULL;
    if (pthread_create(&th, NULL, testcancel_loop, NULL) != 0)
        return 1;
    while (atomic_load(&testcancel_rounds) < 1000)
        sched_yield();
    pthread_mutex_lock(&testcancel_mutex);
    pthread_cancel(th);
    pthread_mutex_unlock(&testcancel_mutex);
    pthread_join(th, &ret);
    printf("loop %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t sem_held = PTHREAD_MUTEX_INITIALIZER;
static sem_t never_posted;
static blocked_probe sem_waits, sem_held_waits;

static void *sem_waiter(void *arg)
{
    pthread_mutex_lock(&sem_held);
    pthread_cleanup_push(unlock_mutex, &sem_held);
    blocked_announce_on(&sem_waits, &never_posted, sizeof never_posted);
    for (;;) /* only the cancellation ends it */
        sem_wait(&never_posted);
    pthread_cleanup_pop(1);
    return arg;
}

static void *sem_held_waiter(void *arg)
{
    blocked_announce_on(&sem_held_waits, &sem_held, sizeof sem_held);
    pthread_mutex_lock(&sem_held);
    pthread_mutex_unlock(&sem_held);
    return arg;
}

static int cancel_sem(void)
{
    pthread_t th, other;
    void *ret = NULL;
    sem_init(&never_posted, 0, 0);
    if (pthread_create(&th, NULL, sem_waiter, NULL) != 0)
        return 1;
    blocked_until(&sem_waits);
    if (pthread_create(&other, NULL, sem_held_waiter, NULL) != 0)
        return 1;
    blocked_until(&sem_held_waits);
    pthread_cancel(th);
    pthread_join(th, &ret);
    pthread_join(other, NULL);
    printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static pthread_mutex_t queue = PTHREAD_MUTEX_INITIALIZER, pool = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int ready;
static blocked_probe owner_waits, first_waits;

static void say_ready(void)
{
    pthread_mutex_lock(&pool);
    ready++;
    pthread_cond_signal(&ready_cv);
    pthread_mutex_unlock(&pool);
}

static void *first_worker(void *arg)
{
    say_ready();
    blocked_until(&owner_waits); /* the owner waits for the second worker, holding the queue */
    blocked_announce(&first_waits);
    pthread_mutex_lock(&queue);
    pthread_mutex_unlock(&queue);
    return arg;
}

static void *second_worker(void *arg)
{
    blocked_until(&first_waits);
    /* Its setup: a worker may take its time before it says it is ready. Nothing here
     * depends on how long; it gives an unfounded cycle report the time to be made. */
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    say_ready();
    return arg;
}

static int cond_new_worker(void)
{
    pthread_t first, second;
    if (pthread_create(&first, NULL, first_worker, NULL) != 0)
        return 1;
    pthread_mutex_lock(&pool);
    while (ready < 1)
        pthread_cond_wait(&ready_cv, &pool);
    pthread_mutex_unlock(&pool);
    pthread_mutex_lock(&queue);
    if (pthread_create(&second, NULL, second_worker, NULL) != 0)
        return 1;
    pthread_mutex_lock(&pool);
    blocked_announce(&owner_waits);
    while (ready < 2)
        pthread_cond_wait(&ready_cv, &pool);
    pthread_mutex_unlock(&pool);
    pthread_mutex_unlock(&queue);
    pthread_join(first, NULL);
    pthread_join(second, NULL);
    return 0;
}

static pthread_mutex_t woken_queue = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t woken_pool = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t woken_cv = PTHREAD_COND_INITIALIZER;
static _Atomic int woken_started, woken_pool_taken;
static blocked_probe woken_owner_waits, woken_worker_queues;

static void *woken_worker(void *arg)
{
    while (!atomic_load(&woken_pool_taken))
        sched_yield();
    atomic_store(&woken_started, 1);
    pthread_cond_broadcast(&woken_cv); /* without the pool mutex: the main thread has it */
    blocked_announce(&woken_worker_queues);
    pthread_mutex_lock(&woken_queue);
    pthread_mutex_unlock(&woken_queue);
    return arg;
}

static void *woken_owner(void *arg)
{
    pthread_t worker;
    pthread_mutex_lock(&woken_queue);
    pthread_mutex_lock(&woken_pool);
    if (pthread_create(&worker, NULL, woken_worker, NULL) != 0)
        return NULL;
    blocked_announce(&woken_owner_waits);
    while (!atomic_load(&woken_started))
        pthread_cond_wait(&woken_cv, &woken_pool);
    pthread_mutex_unlock(&woken_pool);
    pthread_mutex_unlock(&woken_queue);
    pthread_join(worker, NULL);
    return arg;
}

static int cond_woken(void)
{
    pthread_t owner;
    void *ok = NULL;
    if (pthread_create(&owner, NULL, woken_owner, &woken_started) != 0)
        return 1;
    blocked_until(&woken_owner_waits); /* in its condition wait: the pool mutex is free */
    pthread_mutex_lock(&woken_pool);
    atomic_store(&woken_pool_taken, 1);
    blocked_until(&woken_worker_queues); /* broadcast sent, blocked on the owner's queue */
    pthread_mutex_unlock(&woken_pool);
    pthread_join(owner, &ok);
    return ok ? 0 : 1;
}

/* Shared with the fork child: the locks and how far the child got. */
static struct shared_locks {
    pthread_mutex_t m;
    pthread_rwlock_t rw;
    pthread_spinlock_t spin;
    _Atomic int held, step, release, samples;
    _Atomic uintptr_t pc; /* where the child's thread was at its last SIGUSR1 */
} *shl;

static int map_shared_locks(void)
{
    shl = mmap(NULL, sizeof *shl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return shl == MAP_FAILED ? -1 : 0;
}

static void *pshared_holder(void *arg)
{
    pthread_mutex_lock(&shl->m);
    pthread_rwlock_wrlock(&shl->rw);
    atomic_store(&shl->held, 1);
    while (atomic_load(&shl->release) < 1)
        sched_yield();
    pthread_mutex_unlock(&shl->m);
    while (atomic_load(&shl->release) < 2)
        sched_yield();
    pthread_rwlock_unlock(&shl->rw);
    return arg;
}

/* Whether process pid (single-threaded) sleeps in a futex wait. */
static int proc_in_futex(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    return blocked_in_futex_at(path);
}

/* The parent releases each lock once the child has announced its request and sleeps in it;
 * 0 when the child ended before that (the tracer stopped it). */
static int release_when_child_blocks(pid_t child, int step, int *status)
{
    while (atomic_load(&shl->step) < step || !proc_in_futex(child)) {
        if (waitpid(child, status, WNOHANG) == child)
            return 0;
        sched_yield();
    }
    atomic_store(&shl->release, step);
    return 1;
}

/* Starts `holder`, which takes the shared locks and says so, then forks once they are held:
 * the child runs `child` and exits 0. The child's pid (-1 when a step failed). */
static pid_t fork_while_held(void *(*holder)(void *), pthread_t *th, void (*child)(void))
{
    if (pthread_create(th, NULL, holder, NULL) != 0)
        return -1;
    while (!atomic_load(&shl->held))
        sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        atomic_store(&shl->step, 1);
        child();
        _exit(0);
    }
    return pid;
}

static void pshared_child(void)
{
    pthread_mutex_lock(&shl->m);
    atomic_store(&shl->step, 2);
    pthread_rwlock_wrlock(&shl->rw);
    pthread_rwlock_unlock(&shl->rw);
    pthread_mutex_unlock(&shl->m);
}

/* Prints what became of fork child `child` once it announced its request (step 1) for the
 * lock at [lock, lock + size): "child hung" when it sleeps on a futex word in the lock (killed
 * then), "child aborted" (the tracer's report), or "child exited". */
static void say_child_fate(pid_t child, const void *lock, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)child);
    uintptr_t word = 0, lo = (uintptr_t)lock;
    int status = 0, hung = 0;
    while (waitpid(child, &status, WNOHANG) != child) {
        if (atomic_load(&shl->step) >= 1 && blocked_futex_word_at(path, &word) && word >= lo &&
            word < lo + size) {
            hung = 1;
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            break;
        }
        sched_yield();
    }
    puts(hung ? "child hung"
              : WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? "child aborted" : "child exited");
}

/* A process-shared mutex in private memory (a global): the fork child's copy is held by a
 * thread the child does not have, and the holder's unlock in the parent reaches the parent's
 * copy only. The child's lock hangs natively (it sleeps on its copy's word, seen in /proc);
 * traced, it is reported and aborted. Says which. With `robust`, a robust mutex instead: its
 * holder never exits in the child, so nothing marks it for EOWNERDEAD there. */
static pthread_mutex_t private_pshared;

static void *private_holder(void *arg)
{
    pthread_mutex_lock(&private_pshared);
    atomic_store(&shl->held, 1);
    while (atomic_load(&shl->release) < 1)
        sched_yield();
    pthread_mutex_unlock(&private_pshared);
    return arg;
}

static void private_child(void)
{
    pthread_mutex_lock(&private_pshared);
    pthread_mutex_unlock(&private_pshared);
}

static int pshared_private_fork(int robust)
{
    pthread_mutexattr_t ma;
    pthread_t holder;
    if (map_shared_locks() != 0 || pthread_mutexattr_init(&ma) != 0 ||
        (robust ? pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST)
                : pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED)) != 0 ||
        pthread_mutex_init(&private_pshared, &ma) != 0)
        return 1;
    pid_t child = fork_while_held(private_holder, &holder, private_child);
    if (child < 0)
        return 1;
    say_child_fate(child, &private_pshared, sizeof private_pshared);
    atomic_store(&shl->release, 1);
    pthread_join(holder, NULL);
    return 0;
}

/* An atfork discipline with an rwlock: the prepare handler takes it for write, the parent
 * and child handlers unlock it. In the child glibc takes that unlock for a read unlock (the
 * writer is named by its kernel id, which the fork changed), so the child's next wrlock hangs
 * natively; traced, it is reported and aborted (it once hung silently). Says which. */
static pthread_rwlock_t atfork_rw = PTHREAD_RWLOCK_INITIALIZER;
static void atfork_wrlock(void) { pthread_rwlock_wrlock(&atfork_rw); }
static void atfork_unlock(void) { pthread_rwlock_unlock(&atfork_rw); }

static int atfork_rwlock(void)
{
    if (map_shared_locks() != 0 || pthread_atfork(atfork_wrlock, atfork_unlock, atfork_unlock) != 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        atomic_store(&shl->step, 1);
        pthread_rwlock_wrlock(&atfork_rw);
        _exit(0);
    }
    if (child < 0)
        return 1;
    say_child_fate(child, &atfork_rw, sizeof atfork_rw);
    return 0;
}

static int pshared_fork(void)
{
    if (map_shared_locks() != 0)
        return 1;
    pthread_mutexattr_t ma;
    pthread_rwlockattr_t ra;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
    if (pthread_mutex_init(&shl->m, &ma) != 0 || pthread_rwlock_init(&shl->rw, &ra) != 0)
        return 1;
    pthread_t holder;
    pid_t child = fork_while_held(pshared_holder, &holder, pshared_child);
    if (child < 0)
        return 1;
    int status = 0;
    if (!release_when_child_blocks(child, 1, &status) ||
        !release_when_child_blocks(child, 2, &status) || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "harm: the fork child did not get the locks (status 0x%x)\n", status);
        return 1;
    }
    pthread_join(holder, NULL);
    return 0;
}

static void *spin_holder(void *arg)
{
    pthread_spin_lock(&shl->spin);
    atomic_store(&shl->held, 1);
    while (atomic_load(&shl->release) < 1)
        sched_yield();
    pthread_spin_unlock(&shl->spin);
    return arg;
}

static void note_pc(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)info;
    atomic_store(&shl->pc, pc_interrupted(uc));
    atomic_fetch_add(&shl->samples, 1);
}

/* Interrupts the child until a signal finds it in [lo, hi); 0 when it ended first. */
static int child_reaches(pid_t child, uintptr_t lo, uintptr_t hi, int *status)
{
    for (;;) {
        int before = atomic_load(&shl->samples);
        kill(child, SIGUSR1);
        while (atomic_load(&shl->samples) == before) {
            if (waitpid(child, status, WNOHANG) == child)
                return 0;
            sched_yield();
        }
        uintptr_t pc = atomic_load(&shl->pc);
        if (pc >= lo && pc < hi)
            return 1;
    }
}

static void spin_child(void)
{
    pthread_spin_lock(&shl->spin);
    pthread_spin_unlock(&shl->spin);
}

static int spin_fork(void)
{
    uintptr_t lo, hi;
    if (map_shared_locks() != 0 || pthread_spin_init(&shl->spin, PTHREAD_PROCESS_SHARED) != 0 ||
        pc_libc_function("pthread_spin_lock", &lo, &hi) != 0)
        return 1;
    struct sigaction sa = {.sa_sigaction = note_pc, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    pthread_t holder;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    pid_t child = fork_while_held(spin_holder, &holder, spin_child);
    if (child < 0)
        return 1;
    int status = 0;
    while (atomic_load(&shl->step) < 1)
        sched_yield();
    int reached = child_reaches(child, lo, hi, &status);
    atomic_store(&shl->release, 1);
    if (!reached || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "harm: the fork child did not get the spinlock (status 0x%x)\n", status);
        return 1;
    }
    pthread_join(holder, NULL);
    return 0;
}

static pthread_mutex_t cycle_mu[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static _Atomic int cycle_arrived[2];

/* Both threads hold their first mutex before either asks for the other. */
static void cycle_meet(int round, int me)
{
    atomic_store(&cycle_arrived[me], round);
    while (atomic_load(&cycle_arrived[!me]) < round)
        sched_yield();
}

static void *cycle_side(void *arg)
{
    int me = arg != NULL;
    for (int round = 1; round <= 1000; round++) {
        pthread_mutex_lock(&cycle_mu[me]);
        cycle_meet(2 * round - 1, me);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        if (pthread_mutex_timedlock(&cycle_mu[!me], &until) == 0)
            pthread_mutex_unlock(&cycle_mu[!me]);
        pthread_mutex_unlock(&cycle_mu[me]);
        cycle_meet(2 * round, me);
    }
    return NULL;
}

static int timed_cycle(void)
{
    pthread_t other;
    if (pthread_create(&other, NULL, cycle_side, cycle_mu) != 0)
        return 1;
    cycle_side(NULL);
    pthread_join(other, NULL);
    return 0;
}

/* timed-cycle-exit: pairs of threads whose timed cycles the watchdog looks at while the
 * threads time out and exit, their records cleared for the next threads. */
#define EXIT_PAIRS 8

typedef struct exit_pair {
    pthread_mutex_t mu[2];
    _Atomic int arrived;
    long ms;
} exit_pair;

typedef struct exit_side {
    exit_pair *pair;
    int me;
} exit_side;

/* CLOCK_REALTIME ms from now, a deadline for the timed calls below. */
static struct timespec realtime_in_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += ms % 1000 * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void *exit_side_run(void *arg)
{
    exit_side *s = arg;
    exit_pair *p = s->pair;
    pthread_mutex_lock(&p->mu[s->me]);
    atomic_fetch_add(&p->arrived, 1);
    while (atomic_load(&p->arrived) < 2)
        sched_yield();
    struct timespec until = realtime_in_ms(p->ms);
    if (pthread_mutex_timedlock(&p->mu[!s->me], &until) == 0)
        pthread_mutex_unlock(&p->mu[!s->me]);
    pthread_mutex_unlock(&p->mu[s->me]);
    return NULL;
}

static int timed_cycle_exit(void)
{
    static exit_pair pairs[EXIT_PAIRS];
    static exit_side sides[EXIT_PAIRS][2];
    pthread_t t[EXIT_PAIRS][2];
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < EXIT_PAIRS; i++) {
            pthread_mutex_init(&pairs[i].mu[0], NULL);
            pthread_mutex_init(&pairs[i].mu[1], NULL);
            atomic_store(&pairs[i].arrived, 0);
            /* deadlines spread over the watchdog's 50 ms rounds, so some end as it looks */
            pairs[i].ms = 5 + (round * EXIT_PAIRS + i) * 7 % 60;
            for (int k = 0; k < 2; k++) {
                sides[i][k] = (exit_side){&pairs[i], k};
                if (pthread_create(&t[i][k], NULL, exit_side_run, &sides[i][k]) != 0)
                    return 1;
            }
        }
        for (int i = 0; i < EXIT_PAIRS; i++)
            for (int k = 0; k < 2; k++)
                pthread_join(t[i][k], NULL);
    }
    return 0;
}

/* timed-cond-exit: the waiter holds n through a timed condition wait; the condition's last
 * signaller then asks for n. */
typedef struct cond_group {
    pthread_mutex_t m, n;
    pthread_cond_t c;
    _Atomic int stage;
    long ms;
} cond_group;

static void *cond_group_waiter(void *arg)
{
    cond_group *g = arg;
    while (atomic_load(&g->stage) < 1)
        sched_yield();
    pthread_mutex_lock(&g->n);
    pthread_mutex_lock(&g->m);
    atomic_store(&g->stage, 2);
    struct timespec until = realtime_in_ms(g->ms);
    pthread_cond_timedwait(&g->c, &g->m, &until);
    pthread_mutex_unlock(&g->m);
    pthread_mutex_unlock(&g->n);
    return NULL;
}

static void *cond_group_signaller(void *arg)
{
    cond_group *g = arg;
    pthread_mutex_lock(&g->m);
    pthread_cond_signal(&g->c);
    pthread_mutex_unlock(&g->m);
    atomic_store(&g->stage, 1);
    while (atomic_load(&g->stage) < 2)
        sched_yield();
    pthread_mutex_lock(&g->n);
    pthread_mutex_unlock(&g->n);
    return NULL;
}

static int timed_cond_exit(void)
{
    static cond_group groups[EXIT_PAIRS];
    pthread_t t[EXIT_PAIRS][2];
    for (int round = 0; round < 60; round++) {
        for (int i = 0; i < EXIT_PAIRS; i++) {
            cond_group *g = &groups[i];
            pthread_mutex_init(&g->m, NULL);
            pthread_mutex_init(&g->n, NULL);
            pthread_cond_init(&g->c, NULL);
            atomic_store(&g->stage, 0);
            g->ms = 5 + (round * EXIT_PAIRS + i) * 7 % 60;
            if (pthread_create(&t[i][0], NULL, cond_group_waiter, g) != 0 ||
                pthread_create(&t[i][1], NULL, cond_group_signaller, g) != 0)
                return 1;
        }
        for (int i = 0; i < EXIT_PAIRS; i++)
            for (int k = 0; k < 2; k++)
                pthread_join(t[i][k], NULL);
    }
    return 0;
}

/* cond-busy-*: the condition variable's last signaller is not the thread that will signal. */
static pthread_mutex_t busy_queue = PTHREAD_MUTEX_INITIALIZER, busy_pool = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy_gate = PTHREAD_MUTEX_INITIALIZER, busy_never_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cv = PTHREAD_COND_INITIALIZER, busy_never_cv = PTHREAD_COND_INITIALIZER;
static int busy_state, busy_pipe[2];
static _Atomic int busy_gate_taken, busy_owner_holds;
static blocked_probe busy_owner_waits, busy_first_queues, busy_third_waits;

enum {
    BUSY_SLEEP, BUSY_IO, BUSY_LOCK, BUSY_STALLED, BUSY_STALLED_LATE, BUSY_TIMED, BUSY_MUTEX,
    BUSY_ALARM, BUSY_TIMER, BUSY_ALARM_IGNORED, BUSY_STALLED_EARLY, BUSY_CHILD,
    BUSY_CHILD_UNHANDLED
};

/* BUSY_CHILD: the last signaller's tid, shared with the fork child that waits for it */
static _Atomic int *busy_first_tid;
static int busy_child_ok;

static void busy_signal(int state)
{
    pthread_mutex_lock(&busy_pool);
    busy_state = state;
    pthread_cond_signal(&busy_cv);
    pthread_mutex_unlock(&busy_pool);
}

static void busy_nap(void)
{
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
}

/* The last signaller: signals, then needs the queue lock the owner holds in its wait (with
 * BUSY_MUTEX and BUSY_STALLED_EARLY, already before the owner's wait begins). */
static void *busy_first(void *arg)
{
    int mode = (int)(intptr_t)arg;
    busy_signal(1);
    if (mode != BUSY_MUTEX && mode != BUSY_STALLED_EARLY)
        blocked_until(&busy_owner_waits);
    if (mode == BUSY_CHILD || mode == BUSY_CHILD_UNHANDLED)
        atomic_store(busy_first_tid, blocked_tid());
    blocked_announce_on(&busy_first_queues, &busy_queue, sizeof busy_queue);
    pthread_mutex_lock(&busy_queue);
    pthread_mutex_unlock(&busy_queue);
    return arg;
}

/* A wait on a condition variable nobody signals, for ever or until the deadline. */
static void busy_never(const struct timespec *until)
{
    pthread_mutex_lock(&busy_never_mu);
    if (!until) {
        blocked_announce_on(&busy_third_waits, &busy_never_cv, sizeof busy_never_cv);
        for (;;)
            pthread_cond_wait(&busy_never_cv, &busy_never_mu);
    }
    while (pthread_cond_timedwait(&busy_never_cv, &busy_never_mu, until) != ETIMEDOUT)
        continue;
    pthread_mutex_unlock(&busy_never_mu);
}

static sem_t busy_sem;

static void busy_post(int sig)
{
    (void)sig;
    sem_post(&busy_sem);
}

/* A semaphore only a signal handler posts, 2 s from now: an alarm (setitimer), a POSIX timer
 * that notifies by SIGUSR2, or an alarm whose signal is ignored (nothing posts it). */
static void busy_alarmed(int mode)
{
    struct sigaction sa = {.sa_handler = mode == BUSY_ALARM_IGNORED ? SIG_IGN : busy_post};
    struct itimerspec in2s = {.it_value = {2, 0}};
    timer_t id;
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2};
    sem_init(&busy_sem, 0, 0);
    sigaction(mode == BUSY_TIMER ? SIGUSR2 : SIGALRM, &sa, NULL);
    if (mode == BUSY_TIMER) {
        if (timer_create(CLOCK_MONOTONIC, &ev, &id) != 0 || timer_settime(id, 0, &in2s, NULL) != 0)
            abort();
    } else if (setitimer(ITIMER_REAL, &(struct itimerval){.it_value = {2, 0}}, NULL) != 0) {
        abort();
    }
    blocked_announce_on(&busy_third_waits, &busy_sem, sizeof busy_sem);
    while (sem_wait(&busy_sem) != 0) /* EINTR: a handler ran in this thread */
        continue;
}

/* BUSY_CHILD's fork child: once the parent's last signaller sleeps on the queue lock (the
 * cycle closed, every thread of the parent asleep), its work (1 s), then its exit, whose
 * SIGCHLD the parent handles. */
static void busy_child(pid_t parent)
{
    char path[96];
    int tid;
    uintptr_t word;
    while ((tid = atomic_load(busy_first_tid)) == 0)
        sched_yield();
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)parent, tid);
    while (!blocked_futex_word_at(path, &word) || word != (uintptr_t)&busy_queue)
        sched_yield();
    nanosleep(&(struct timespec){1, 0}, NULL);
    _exit(0);
}

/* A semaphore the SIGCHLD handler posts when a fork child exits: no thread of the process,
 * no timer, wakes the thread that waits on it, another process does. */
static pid_t busy_forked(int mode)
{
    struct sigaction sa = {.sa_handler = mode == BUSY_CHILD ? busy_post : SIG_DFL};
    pid_t parent = getpid(), child;
    sem_init(&busy_sem, 0, 0);
    sigaction(SIGCHLD, &sa, NULL);
    if ((child = fork()) == 0)
        busy_child(parent);
    if (child < 0)
        abort();
    blocked_announce_on(&busy_third_waits, &busy_sem, sizeof busy_sem);
    while (sem_wait(&busy_sem) != 0) /* EINTR: a handler ran in this thread */
        continue;
    return child;
}

/* The thread that will signal, once it is through its work. */
static void *busy_third(void *arg)
{
    int mode = (int)(intptr_t)arg;
    char byte;
    struct timespec until;
    if (mode == BUSY_STALLED || mode == BUSY_STALLED_EARLY)
        busy_never(NULL);
    if (mode == BUSY_ALARM || mode == BUSY_TIMER || mode == BUSY_ALARM_IGNORED)
        busy_alarmed(mode);
    if (mode == BUSY_CHILD || mode == BUSY_CHILD_UNHANDLED) {
        int status;
        pid_t child = busy_forked(mode);
        busy_signal(2);
        busy_child_ok = waitpid(child, &status, 0) == child && status == 0;
        return arg;
    }
    blocked_until(&busy_first_queues);
    if (mode == BUSY_STALLED_LATE) {
        busy_nap();
        busy_never(NULL);
    }
    if (mode == BUSY_SLEEP)
        busy_nap();
    else if (mode == BUSY_TIMED) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 300 * 1000 * 1000;
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        busy_never(&until);
    }
    else if (mode == BUSY_IO && read(busy_pipe[0], &byte, 1) != 1)
        return NULL;
    else if (mode == BUSY_LOCK) {
        while (!atomic_load(&busy_gate_taken))
            sched_yield();
        pthread_mutex_lock(&busy_gate);
        pthread_mutex_unlock(&busy_gate);
    } else if (mode == BUSY_MUTEX) {
        /* the signal's own mutex, which the owner holds until its wait begins */
        while (!atomic_load(&busy_owner_holds))
            sched_yield();
        blocked_announce_on(&busy_third_waits, &busy_pool, sizeof busy_pool);
    }
    busy_signal(2);
    return arg;
}

/* The fourth thread: fills the pipe, or releases the gate, after its own work; else it
 * leaves at once. */
static void *busy_fourth(void *arg)
{
    int mode = (int)(intptr_t)arg;
    if (mode != BUSY_SLEEP && mode != BUSY_IO && mode != BUSY_LOCK)
        return arg;
    if (mode == BUSY_LOCK) {
        pthread_mutex_lock(&busy_gate);
        atomic_store(&busy_gate_taken, 1);
    }
    blocked_until(&busy_first_queues);
    busy_nap();
    if (mode == BUSY_IO && write(busy_pipe[1], "x", 1) != 1)
        return NULL;
    if (mode == BUSY_LOCK)
        pthread_mutex_unlock(&busy_gate);
    return arg;
}

static int cond_busy(int mode)
{
    pthread_t first, third, fourth;
    if (pipe(busy_pipe) != 0)
        return 1;
    busy_first_tid = mmap(NULL, sizeof *busy_first_tid, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (busy_first_tid == MAP_FAILED)
        return 1;
    /* every thread starts before the first signal: a thread started since a signal makes
     * the tracer drop the signaller hint, and the program would prove nothing */
    if (pthread_create(&third, NULL, busy_third, (void *)(intptr_t)mode) != 0 ||
        pthread_create(&fourth, NULL, busy_fourth, (void *)(intptr_t)mode) != 0)
        return 1;
    if (mode == BUSY_STALLED || mode == BUSY_ALARM || mode == BUSY_TIMER ||
        mode == BUSY_ALARM_IGNORED || mode == BUSY_STALLED_EARLY || mode == BUSY_CHILD ||
        mode == BUSY_CHILD_UNHANDLED)
        blocked_until(&busy_third_waits);
    pthread_mutex_lock(&busy_queue);
    if (pthread_create(&first, NULL, busy_first, (void *)(intptr_t)mode) != 0)
        return 1;
    pthread_mutex_lock(&busy_pool);
    while (busy_state < 1)
        pthread_cond_wait(&busy_cv, &busy_pool);
    if (mode == BUSY_MUTEX || mode == BUSY_STALLED_EARLY)
        blocked_until(&busy_first_queues); /* the wait below closes the cycle */
    if (mode == BUSY_MUTEX) {
        /* the next signaller asleep on busy_pool: until the wait below begins, every thread
         * but this one sleeps in an untimed futex wait */
        atomic_store(&busy_owner_holds, 1);
        blocked_until(&busy_third_waits);
    }
    blocked_announce_on(&busy_owner_waits, &busy_cv, sizeof busy_cv);
    while (busy_state < 2)
        pthread_cond_wait(&busy_cv, &busy_pool);
    pthread_mutex_unlock(&busy_pool);
    pthread_mutex_unlock(&busy_queue);
    pthread_join(first, NULL);
    pthread_join(third, NULL);
    pthread_join(fourth, NULL);
    return mode != BUSY_CHILD || busy_child_ok ? 0 : 1;
}

/* cond-busy-process: the next signaller is a thread of another process. */
typedef struct xproc {
    pthread_mutex_t pool;
    pthread_cond_t cv;
    int state;
    _Atomic int first_tid;
} xproc;

static xproc *xp;
static pthread_mutex_t xp_queue = PTHREAD_MUTEX_INITIALIZER;

static void xp_signal(int state)
{
    pthread_mutex_lock(&xp->pool);
    xp->state = state;
    pthread_cond_signal(&xp->cv);
    pthread_mutex_unlock(&xp->pool);
}

/* The last signaller of this process, then on the queue lock the owner holds in its wait. */
static void *xp_first(void *arg)
{
    atomic_store(&xp->first_tid, blocked_tid());
    xp_signal(1);
    pthread_mutex_lock(&xp_queue);
    pthread_mutex_unlock(&xp_queue);
    return arg;
}

/* The child: once the parent's first thread sleeps on the queue lock (the cycle closed), its
 * work (1 s), then the signal the owner waits for. */
static void xp_child(pid_t parent)
{
    char path[96];
    int tid;
    while ((tid = atomic_load(&xp->first_tid)) == 0)
        sched_yield();
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)parent, tid);
    uintptr_t word;
    while (!blocked_futex_word_at(path, &word) || word != (uintptr_t)&xp_queue)
        sched_yield();
    nanosleep(&(struct timespec){1, 0}, NULL);
    xp_signal(2);
    _exit(0);
}

static int cond_busy_process(void)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_t first;
    int status;
    pid_t parent = getpid(), child;
    xp = mmap(NULL, sizeof *xp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (xp == MAP_FAILED)
        return 1;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    if (pthread_mutex_init(&xp->pool, &ma) != 0 || pthread_cond_init(&xp->cv, &ca) != 0)
        return 1;
    if ((child = fork()) < 0)
        return 1;
    if (child == 0)
        xp_child(parent);
    pthread_mutex_lock(&xp_queue);
    if (pthread_create(&first, NULL, xp_first, NULL) != 0)
        return 1;
    pthread_mutex_lock(&xp->pool);
    while (xp->state < 2)
        pthread_cond_wait(&xp->cv, &xp->pool);
    pthread_mutex_unlock(&xp->pool);
    pthread_mutex_unlock(&xp_queue);
    pthread_join(first, NULL);
    return waitpid(child, &status, 0) == child && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}

#define AGAINST_READ 40
#define AGAINST_LOCKS (AGAINST_READ + 3)

static void *against_destroy(void *p)
{
    pthread_rwlock_t *a = p;
    for (int i = 0; i < AGAINST_LOCKS; i++)
        pthread_rwlock_destroy(&a[i]);
    free(a);
    return NULL;
}

static int against_first(void)
{
    for (int r = 0; r < 200; r++) {
        pthread_rwlock_t *a = malloc(AGAINST_LOCKS * sizeof *a);
        pthread_t t;
        if (!a)
            return 1;
        for (int i = 0; i < AGAINST_LOCKS; i++)
            pthread_rwlock_init(&a[i], NULL);
        for (int i = 1; i <= AGAINST_READ + 1; i++)
            pthread_rwlock_rdlock(&a[i]);
        pthread_rwlock_wrlock(&a[AGAINST_READ + 2]);
        pthread_rwlock_wrlock(&a[0]);
        for (int i = AGAINST_LOCKS; i--;)
            pthread_rwlock_unlock(&a[i]);
        if (pthread_create(&t, NULL, against_destroy, a) || pthread_join(t, NULL))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(s, "stack-reuse"))
        rc = stack_reuse(0);
    else if (!strcmp(s, "stack-reuse-helper"))
        rc = stack_reuse(1);
    else if (!strcmp(s, "stack-live"))
        rc = stack_live();
    else if (!strcmp(s, "stack-same-frame"))
        rc = stack_same_frame();
    else if (!strcmp(s, "cancel-pending"))
        rc = cancel_pending();
    else if (!strcmp(s, "cancel-async"))
        rc = cancel_async();
    else if (!strcmp(s, "cancel-async-wait"))
        rc = cancel_async_wait();
    else if (!strcmp(s, "cancel-async-queue"))
        rc = cancel_async_queue();
    else if (!strcmp(s, "cancel-async-pool"))
        rc = cancel_async_pool();
    else if (!strcmp(s, "cancel-join"))
        rc = cancel_join(0);
    else if (!strcmp(s, "cancel-join-disabled"))
        rc = cancel_join(1);
    else if (!strcmp(s, "cancel-lock-deferred"))
        rc = cancel_lock_deferred();
    else if (!strcmp(s, "cancel-cond"))
        rc = cancel_cond(0, 0);
    else if (!strcmp(s, "cancel-cond-mutex"))
        rc = cancel_cond(1, 0);
    else if (!strcmp(s, "cancel-orphan"))
        rc = cancel_orphan(0);
    else if (!strcmp(s, "cancel-orphan-late"))
        rc = cancel_orphan(1);
    else if (!strcmp(s, "cancel-grace"))
        rc = cancel_grace();
    else if (!strcmp(s, "cancel-destroy"))
        rc = cancel_destroy();
    else if (!strcmp(s, "cancel-rdlock-deferred"))
        rc = cancel_rwlock_wait(0, 0);
    else if (!strcmp(s, "cancel-wrlock-deferred"))
        rc = cancel_rwlock_wait(1, 0);
    else if (!strcmp(s, "cancel-rdlock-async"))
        rc = cancel_rwlock_wait(0, 1);
    else if (!strcmp(s, "cancel-cond-timed"))
        rc = cancel_cond(0, 1);
    else if (!strcmp(s, "cancel-testcancel"))
        rc = cancel_testcancel();
    else if (!strcmp(s, "cancel-sem"))
        rc = cancel_sem();
    else if (!strcmp(s, "cancel-cleanup-join"))
        rc = cancel_cleanup_join();
    else if (!strcmp(s, "cancel-cleanup-lock"))
        rc = cancel_cleanup_lock();
    else if (!strcmp(s, "fd-reuse"))
        rc = fd_reuse();
    else if (!strcmp(s, "fd-reuse-many"))
        rc = fd_reuse_many();
    else if (!strcmp(s, "pipe-pending"))
        rc = pipe_pending();
    else if (!strcmp(s, "mask-unwind"))
        rc = mask_unwind();
    else if (!strcmp(s, "fork-faults"))
        rc = fork_faults();
    else if (!strcmp(s, "cond-new-worker"))
        rc = cond_new_worker();
    else if (!strcmp(s, "cond-woken"))
        rc = cond_woken();
    else if (!strcmp(s, "cond-busy-sleep"))
        rc = cond_busy(BUSY_SLEEP);
    else if (!strcmp(s, "cond-busy-io"))
        rc = cond_busy(BUSY_IO);
    else if (!strcmp(s, "cond-busy-lock"))
        rc = cond_busy(BUSY_LOCK);
    else if (!strcmp(s, "cond-stalled"))
        rc = cond_busy(BUSY_STALLED);
    else if (!strcmp(s, "cond-stalled-late"))
        rc = cond_busy(BUSY_STALLED_LATE);
    else if (!strcmp(s, "cond-busy-timed"))
        rc = cond_busy(BUSY_TIMED);
    else if (!strcmp(s, "cond-busy-mutex"))
        rc = cond_busy(BUSY_MUTEX);
    else if (!strcmp(s, "cond-busy-alarm"))
        rc = cond_busy(BUSY_ALARM);
    else if (!strcmp(s, "cond-busy-child"))
        rc = cond_busy(BUSY_CHILD);
    else if (!strcmp(s, "cond-stalled-child"))
        rc = cond_busy(BUSY_CHILD_UNHANDLED);
    else if (!strcmp(s, "cond-busy-timer"))
        rc = cond_busy(BUSY_TIMER);
    else if (!strcmp(s, "cond-stalled-alarm"))
        rc = cond_busy(BUSY_ALARM_IGNORED);
    else if (!strcmp(s, "cond-stalled-early"))
        rc = cond_busy(BUSY_STALLED_EARLY);
    else if (!strcmp(s, "cond-busy-process"))
        rc = cond_busy_process();
    else if (!strcmp(s, "pshared-fork"))
        rc = pshared_fork();
    else if (!strcmp(s, "pshared-private-fork"))
        rc = pshared_private_fork(0);
    else if (!strcmp(s, "robust-fork"))
        rc = pshared_private_fork(1);
    else if (!strcmp(s, "atfork-rwlock"))
        rc = atfork_rwlock();
    else if (!strcmp(s, "spin-fork"))
        rc = spin_fork();
    else if (!strcmp(s, "timed-cycle"))
        rc = timed_cycle();
    else if (!strcmp(s, "timed-cycle-exit"))
        rc = timed_cycle_exit();
    else if (!strcmp(s, "timed-cond-exit"))
        rc = timed_cond_exit();
    else if (!strcmp(s, "stats-exit"))
        rc = stats_exit();
    else if (!strcmp(s, "against-first"))
        rc = against_first();
    else {
        fprintf(stderr, "usage: harm stack-reuse|stack-reuse-helper|stack-live|"
                        "stack-same-frame|cancel-pending|cancel-async|cancel-async-wait|cancel-async-queue|"
                        "cancel-async-pool|"
                        "cancel-join|cancel-join-disabled|cancel-lock-deferred|cancel-cond|"
                        "cancel-cond-mutex|cancel-orphan|cancel-orphan-late|cancel-grace|cancel-destroy|cancel-cleanup-join|"
                        "cancel-cleanup-lock|cancel-rdlock-deferred|cancel-wrlock-deferred|"
                        "cancel-rdlock-async|cancel-cond-timed|cancel-testcancel|cancel-sem|fd-reuse|fd-reuse-many|pipe-pending|"
                        "mask-unwind|fork-faults|cond-new-worker|cond-woken|cond-busy-sleep|cond-busy-io|"
                        "cond-busy-lock|cond-stalled|cond-stalled-late|cond-busy-timed|cond-busy-mutex|"
                        "cond-busy-alarm|cond-busy-timer|cond-stalled-alarm|cond-stalled-early|"
                        "cond-busy-process|pshared-fork|"
                        "pshared-private-fork|robust-fork|atfork-rwlock|spin-fork|timed-cycle|timed-cycle-exit|timed-cond-exit|"
                        "stats-exit|against-first\n");
        return 2;
    }
    if (rc == 3)
        fprintf(stderr, "harm: the two frames' mutexes did not share an address\n");
    else if (rc == 0)
        puts("done");
    return rc;
}
