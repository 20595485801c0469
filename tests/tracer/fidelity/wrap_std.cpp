/*
 * wrap_std.cpp - locks taken through libstdc++'s wrappers: std::unique_lock and std::shared_lock
 * on a std::shared_mutex, std::lock_guard on a std::mutex. At -O0 each wrapper is a frame of
 * its own (five between unique_lock's user and pthread_rwlock_wrlock), so the earlier
 * acquisition of a report reaches the program's function only when capture skips them. The
 * comments marked with @ name lines fidelity_test.py checks.
 *   upgrade: a read lock held, then the write lock of the same std::shared_mutex (self-deadlock)
 *   order:   the registry lock and the cache lock taken in both orders (lock-order inversion)
 */
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace {
std::shared_mutex registry;
std::mutex cache;
}

#define NOINLINE __attribute__((noinline))

NOINLINE void Write_registry()
{
    std::unique_lock<std::shared_mutex> w(registry); // @Write_registry
}

NOINLINE void Read_then_write()
{
    std::shared_lock<std::shared_mutex> r(registry); // @Read_then_write:read
    Write_registry(); // @Read_then_write:write
}

NOINLINE void Registry_then_cache()
{
    std::unique_lock<std::shared_mutex> w(registry); // @Registry_then_cache:registry
    std::lock_guard<std::mutex> c(cache); // @Registry_then_cache:cache
}

NOINLINE void Cache_then_registry()
{
    std::lock_guard<std::mutex> c(cache); // @Cache_then_registry:cache
    std::unique_lock<std::shared_mutex> w(registry); // @Cache_then_registry:registry
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::strcmp(argv[1], "upgrade") == 0) {
        Read_then_write(); // @main:upgrade
    } else {
        Registry_then_cache(); // @main:rc
        Cache_then_registry(); // @main:cr
    }
    std::puts("done");
    return 0;
}
