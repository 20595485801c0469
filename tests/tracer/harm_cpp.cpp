// harm_cpp.cpp - correct C++ programs the tracer once harmed (harm.c has the C ones).
//   harm_cpp vm-exit          the JVM's end, as HotSpot does it: the VM thread takes the
//                             threads lock in SafepointSynchronize::begin() through
//                             HotSpot's Mutex::lock() and returns holding it, after telling
//                             the exiting thread it is done; that thread joins it and exits:
//                             silent (a built-in suppression)
//   harm_cpp vm-exit-other    the same lock taken in another function: the thread's exit
//                             holding it is reported, so the rule is no wider than HotSpot's
// Prints "done".
#include <pthread.h>
#include <cstdio>
#include <cstring>

#define NOINLINE __attribute__((noinline))

// HotSpot's lock class: the pthread call is made in Mutex::lock(), so a lazily recorded
// acquisition's call site is there and SafepointSynchronize::begin() is its caller (only
// the call site was in the exit-held report until 2026-12-02: the suppression never matched
// a real JVM, whose every run under the launcher then got the report).
struct Mutex {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int locks = 0;
    NOINLINE void lock()
    {
        pthread_mutex_lock(&m);
        locks++; // no tail call: the pthread call's return address stays in this function
    }
    NOINLINE void unlock() { pthread_mutex_unlock(&m); }
};

static Mutex threads_lock;
static pthread_mutex_t terminator_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t terminated_cv = PTHREAD_COND_INITIALIZER;
static bool terminated;
static volatile int safepoints;

struct SafepointSynchronize {
    NOINLINE static void begin()
    {
        threads_lock.lock();
        safepoints = safepoints + 1;
    }
    NOINLINE static void block()
    {
        threads_lock.lock();
        safepoints = safepoints + 1;
    }
    NOINLINE static void end() { threads_lock.unlock(); }
};

static bool other_function;

static void *vm_thread(void *)
{
    // An earlier safepoint, as a running JVM makes thousands: the last one then makes no new
    // order edge out of the threads lock (a new edge's stack work can complete the held
    // entry's stack, which the real exit never gets)
    SafepointSynchronize::begin();
    pthread_mutex_lock(&terminator_lock);
    pthread_mutex_unlock(&terminator_lock);
    SafepointSynchronize::end();
    if (other_function)
        SafepointSynchronize::block();
    else
        SafepointSynchronize::begin();
    pthread_mutex_lock(&terminator_lock);
    terminated = true;
    pthread_cond_signal(&terminated_cv);
    pthread_mutex_unlock(&terminator_lock);
    return nullptr; // at the safepoint for good: threads_lock stays held
}

static int vm_exit()
{
    pthread_t t;
    if (pthread_create(&t, nullptr, vm_thread, nullptr) != 0)
        return 1;
    pthread_mutex_lock(&terminator_lock);
    while (!terminated)
        pthread_cond_wait(&terminated_cv, &terminator_lock);
    pthread_mutex_unlock(&terminator_lock);
    pthread_join(t, nullptr); // HotSpot races here; the join makes the thread's exit certain
    std::puts("done");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && std::strcmp(argv[1], "vm-exit") == 0)
        return vm_exit();
    if (argc == 2 && std::strcmp(argv[1], "vm-exit-other") == 0) {
        other_function = true;
        return vm_exit();
    }
    std::fprintf(stderr, "usage: harm_cpp vm-exit|vm-exit-other\n");
    return 64;
}
