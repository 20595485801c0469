// harm_cpp.cpp - correct C++ programs the tracer once harmed (harm.c has the C ones).
//   harm_cpp vm-exit          the JVM's end, as HotSpot does it: the VM thread takes the
//                             threads lock in SafepointSynchronize::begin() and returns
//                             holding it, after telling the exiting thread it is done; that
//                             thread joins it and exits: silent (a built-in suppression)
//   harm_cpp vm-exit-other    the same lock taken in another function: the thread's exit
//                             holding it is reported, so the rule is no wider than HotSpot's
// Prints "done".
#include <pthread.h>
#include <cstdio>
#include <cstring>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t terminator_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t terminated_cv = PTHREAD_COND_INITIALIZER;
static bool terminated;

struct SafepointSynchronize {
    NOINLINE static void begin() { pthread_mutex_lock(&threads_lock); }
    NOINLINE static void block() { pthread_mutex_lock(&threads_lock); }
};

static bool other_function;

static void *vm_thread(void *)
{
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
