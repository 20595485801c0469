// peer_guards.cpp - deadlocks through C++ function-local statics (ThreadSanitizer's and
// Helgrind's static-initialisation cases), and the legal uses beside them:
//   - a thread in a static's initialiser asks for a mutex that another thread holds while it
//     waits for the same static: both wait forever;
//   - the same with the holder reaching the static after the initialiser asked for the mutex;
//   - an initialiser that reaches its own static again (libstdc++ throws
//     recursive_init_error, which ends in std::terminate);
// and silent: two threads reaching a static at once (one waits for the other's initialiser,
// which needs nothing the waiter holds), an initialiser that throws and a later call that
// succeeds, nested statics, a static first reached under a mutex.
//   peer_guards NAME
// Each scenario prints what it saw and ends with "done".
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

extern "C" void probe_announce(int i);
extern "C" void probe_until(int i);

#define NOINLINE __attribute__((noinline))

enum { HOLDER, WAITER };

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static std::atomic<int> in_init;

static void result(const char *what, int rc)
{
    std::printf("%s -> %s\n", what, rc == 0 ? "0" : rc == EDEADLK ? "EDEADLK" : std::strerror(rc));
    std::fflush(stdout);
}

// ---- an initialiser asks for a mutex the thread waiting for its static holds ----

// Runs in the main thread, inside the static's initialiser, once the other thread holds the
// mutex and sleeps waiting for the static.
NOINLINE static int lock_in_init()
{
    in_init = 1;
    probe_until(HOLDER);
    int rc = pthread_mutex_lock(&mutex);
    result("lock in init", rc);
    if (rc == 0)
        pthread_mutex_unlock(&mutex);
    return 42;
}

NOINLINE static int locking_static()
{
    static int value = lock_in_init();
    return value;
}

static void *hold_then_reach(void *)
{
    while (!in_init)
        sched_yield();
    pthread_mutex_lock(&mutex);
    probe_announce(HOLDER);
    int v = locking_static();
    pthread_mutex_unlock(&mutex);
    return reinterpret_cast<void *>(static_cast<long>(v));
}

NOINLINE static void init_deadlock()
{
    pthread_t t;
    void *other;
    pthread_create(&t, nullptr, hold_then_reach, nullptr);
    int mine = locking_static();
    pthread_join(t, &other);
    std::printf("values %d %ld\n", mine, reinterpret_cast<long>(other));
}

// The same wait closed the other way round: the initialiser already waits for the mutex
// when the holder reaches the static, so the holder's wait for the guard closes the cycle.
enum { IN_INIT = 2 };
static std::atomic<int> holding;

NOINLINE static int lock_in_init_late()
{
    probe_announce(IN_INIT);
    int rc = pthread_mutex_lock(&mutex);
    result("lock in init", rc);
    if (rc == 0)
        pthread_mutex_unlock(&mutex);
    return 43;
}

NOINLINE static int late_static()
{
    static int value = lock_in_init_late();
    return value;
}

static void *hold_then_reach_late(void *)
{
    pthread_mutex_lock(&mutex);
    holding = 1;
    probe_until(IN_INIT);
    int v = late_static();
    pthread_mutex_unlock(&mutex);
    return reinterpret_cast<void *>(static_cast<long>(v));
}

NOINLINE static void init_deadlock_guard_last()
{
    pthread_t t;
    pthread_create(&t, nullptr, hold_then_reach_late, nullptr);
    while (!holding)
        sched_yield();
    std::printf("value %d\n", late_static());
    pthread_join(t, nullptr);
}

// ---- an initialiser that reaches its own static ----

static int recursive_static();

NOINLINE static int reach_again()
{
    return recursive_static() + 1;
}

NOINLINE static int recursive_static()
{
    static int value = reach_again();
    return value;
}

// ---- legal ----

// Two threads reach a static at once: the second waits for the first's initialiser, which
// needs nothing the second holds (it holds a mutex the initialiser does not use).
static pthread_mutex_t unrelated = PTHREAD_MUTEX_INITIALIZER;

NOINLINE static int slow_init()
{
    in_init = 1;
    probe_until(WAITER); // the other thread sleeps waiting for this static
    return 7;
}

NOINLINE static int shared_static()
{
    static int value = slow_init();
    return value;
}

static void *reach_holding_unrelated(void *)
{
    while (!in_init)
        sched_yield();
    pthread_mutex_lock(&unrelated);
    probe_announce(WAITER);
    int v = shared_static();
    pthread_mutex_unlock(&unrelated);
    return reinterpret_cast<void *>(static_cast<long>(v));
}

NOINLINE static void concurrent_first_use()
{
    pthread_t t;
    void *other;
    pthread_create(&t, nullptr, reach_holding_unrelated, nullptr);
    int mine = shared_static();
    pthread_join(t, &other);
    std::printf("values %d %ld\n", mine, reinterpret_cast<long>(other));
}

// An initialiser that throws the first time (the guard is given back: __cxa_guard_abort),
// then succeeds; it takes the mutex both times, and the caller holds nothing.
static int attempts;

NOINLINE static int flaky_init()
{
    pthread_mutex_lock(&mutex);
    int n = ++attempts;
    pthread_mutex_unlock(&mutex);
    if (n == 1)
        throw std::runtime_error("first attempt");
    return n;
}

NOINLINE static int flaky_static()
{
    static int value = flaky_init();
    return value;
}

// Nested statics, the inner one reached from the outer's initialiser, first reached under a
// mutex that neither initialiser takes.
NOINLINE static int three()
{
    return 3;
}

NOINLINE static int inner_static()
{
    static int value = three();
    return value;
}

NOINLINE static int outer_static()
{
    static int value = inner_static() * 2;
    return value;
}

NOINLINE static void legal_uses()
{
    try {
        flaky_static();
        std::puts("no throw");
    } catch (const std::runtime_error &e) {
        std::printf("threw: %s\n", e.what());
    }
    std::printf("flaky %d\n", flaky_static());
    pthread_mutex_lock(&unrelated);
    std::printf("nested %d\n", outer_static());
    pthread_mutex_unlock(&unrelated);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!std::strcmp(s, "init-deadlock"))
        init_deadlock();
    else if (!std::strcmp(s, "init-deadlock-guard-last"))
        init_deadlock_guard_last();
    else if (!std::strcmp(s, "recursive-init"))
        std::printf("value %d\n", recursive_static());
    else if (!std::strcmp(s, "concurrent-first-use"))
        concurrent_first_use();
    else if (!std::strcmp(s, "legal-uses"))
        legal_uses();
    else {
        std::fprintf(stderr, "peer_guards: unknown scenario '%s'\n", s);
        return 64;
    }
    std::puts("done");
    return 0;
}
