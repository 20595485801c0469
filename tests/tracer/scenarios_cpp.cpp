// scenarios_cpp.cpp - the same-thread rules through libstdc++, and legal neighbours of the
// order rule (std::lock's back-off) and of condition waits (condition_variable_any's own
// mutex): std::shared_mutex and std::mutex never call pthread_*_init, so the tracer meets
// their locks on first use. And deadlocks through std::thread::join and std::async.
//   scenarios_cpp NAME
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#define NOINLINE __attribute__((noinline))

extern "C" void probe_announce(int i); // peer_guards_probe.c
extern "C" void probe_until(int i);

static std::shared_mutex shared;
static std::mutex plain;

NOINLINE void cxx_write_then_read()
{
    shared.lock();
    shared.lock_shared();
}

NOINLINE void cxx_read_then_write()
{
    shared.lock_shared();
    shared.lock();
}

NOINLINE void cxx_read_twice()
{
    std::shared_lock<std::shared_mutex> a(shared);
    std::shared_lock<std::shared_mutex> b(shared);
    std::puts("read twice");
}

NOINLINE void cxx_mutex_relock()
{
    plain.lock();
    plain.lock();
}

// Ping-pong through a condition variable: waits release and retake the mutex inside libc.
NOINLINE void cxx_condvar()
{
    std::condition_variable cv;
    int turn = 0;
    std::thread other([&] {
        for (int i = 0; i < 1000; i++) {
            std::unique_lock<std::mutex> l(plain);
            cv.wait(l, [&] { return turn == 1; });
            turn = 0;
            cv.notify_one();
        }
    });
    for (int i = 0; i < 1000; i++) {
        std::unique_lock<std::mutex> l(plain);
        turn = 1;
        cv.notify_one();
        cv.wait(l, [&] { return turn == 0; });
    }
    other.join();
    std::puts("ping-pong done");
}

// Exceptions unwind through lock guards; the tracer must not change which unwinder runs.
NOINLINE void cxx_exceptions()
{
    int caught = 0;
    for (int i = 0; i < 1000; i++) {
        try {
            std::lock_guard<std::mutex> g(plain);
            std::shared_lock<std::shared_mutex> r(shared);
            throw i;
        } catch (int v) {
            caught += v == i;
        }
    }
    std::printf("caught %d\n", caught);
}

// std::scoped_lock and std::lock in opposite orders by three threads: libstdc++'s std::lock
// blocks only on its first lock and try-locks the others, backing off when one is taken, so
// no thread ever waits for a lock while holding another: no order, no inversion.
NOINLINE void cxx_scoped_lock_orders()
{
    static std::mutex a, b;
    std::thread t1([] {
        for (int i = 0; i < 2000; i++)
            std::scoped_lock<std::mutex, std::mutex> l(a, b);
    });
    std::thread t2([] {
        for (int i = 0; i < 2000; i++)
            std::scoped_lock<std::mutex, std::mutex> l(b, a);
    });
    std::thread t3([] {
        for (int i = 0; i < 2000; i++) {
            std::unique_lock<std::mutex> la(a, std::defer_lock), lb(b, std::defer_lock);
            std::lock(lb, la);
        }
    });
    t1.join();
    t2.join();
    t3.join();
    std::puts("scoped locks done");
}

// std::condition_variable_any over a std::shared_mutex: readers wait in shared mode, the
// writer notifies holding the lock exclusively. libstdc++ waits on an internal mutex of the
// condition variable, taken under the caller's lock, and retakes the caller's lock only after
// releasing it: no inversion between the two.
NOINLINE void cxx_condvar_any()
{
    std::condition_variable_any cv;
    std::atomic<int> entered{0};
    int ready = 0, woken = 0;
    std::thread readers[3];
    for (auto &r : readers)
        r = std::thread([&] {
            std::shared_lock<std::shared_mutex> l(shared);
            entered++;
            cv.wait(l, [&] { return ready != 0; });
            std::lock_guard<std::mutex> g(plain);
            woken++;
        });
    while (entered.load() < 3)
        std::this_thread::yield();
    {
        // granted once every reader, having counted itself under its shared lock, released
        // it in its wait
        std::unique_lock<std::shared_mutex> w(shared);
        ready = 1;
        cv.notify_all();
    }
    for (auto &r : readers)
        r.join();
    std::printf("woken %d\n", woken);
}

// A pool's shutdown joins its worker while holding the mutex the worker takes next: a
// deadlock through std::thread::join, which libstdc++ runs out of line (no debug info there
// on a stock system), so the report's own frame must be this function's line of the join.
NOINLINE void cxx_join_holding()
{
    std::unique_lock<std::mutex> l(plain);
    std::thread worker([] {
        probe_announce(0);
        std::lock_guard<std::mutex> g(plain);
    });
    // the worker waits first, so the join closes the cycle and its stack is the report's own
    probe_until(0);
    worker.join();
}

// The same through std::async: get() joins the task's thread from libstdc++'s headers inlined
// here (<future>, <mutex>) and libc's pthread_once, holding the mutex the task needs.
NOINLINE void cxx_async_holding()
{
    std::unique_lock<std::mutex> l(plain);
    auto f = std::async(std::launch::async, [] {
        probe_announce(1);
        std::lock_guard<std::mutex> g(plain);
    });
    probe_until(1);
    f.get();
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!std::strcmp(s, "shared-write-read"))
        cxx_write_then_read();
    else if (!std::strcmp(s, "shared-read-write"))
        cxx_read_then_write();
    else if (!std::strcmp(s, "shared-read-read"))
        cxx_read_twice();
    else if (!std::strcmp(s, "mutex-relock"))
        cxx_mutex_relock();
    else if (!std::strcmp(s, "exceptions"))
        cxx_exceptions();
    else if (!std::strcmp(s, "condvar"))
        cxx_condvar();
    else if (!std::strcmp(s, "scoped-lock-orders"))
        cxx_scoped_lock_orders();
    else if (!std::strcmp(s, "condvar-any"))
        cxx_condvar_any();
    else if (!std::strcmp(s, "join-holding"))
        cxx_join_holding();
    else if (!std::strcmp(s, "async-holding"))
        cxx_async_holding();
    else
        return 64;
    return 0;
}
