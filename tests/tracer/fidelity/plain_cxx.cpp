/*
 * plain_cxx.cpp - C++ that needs nothing from libstdc++ (namespaces, classes, templates,
 * pthread only): linked with --as-needed it does not load libstdc++, yet its reports must
 * name functions demangled. The comments marked with @ name lines fidelity_test.py checks.
 */
#include <pthread.h>

namespace cache {

template <typename T> struct Guarded {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    T value{};
    void lock() { pthread_mutex_lock(&mu); } // @lock
};

struct Table {
    Guarded<int> rows[2];
    __attribute__((noinline)) void relock(int i)
    {
        rows[i].lock(); // @relock
    }
};

} // namespace cache

int main()
{
    static cache::Table t;
    t.relock(1); // @main:first
    t.relock(1); // @main:again
    return 0;
}
