// scenarios_cpp.cpp - the same-thread rules through libstdc++: std::shared_mutex and
// std::mutex never call pthread_*_init, so the tracer meets their locks on first use.
//   scenarios_cpp NAME
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <thread>

#define NOINLINE __attribute__((noinline))

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
    else
        return 64;
    return 0;
}
