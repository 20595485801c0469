/*
 * helper_order.cpp - helper_order.c with std::mutex: at -O0 std::mutex::lock and
 * __gthread_mutex_lock are frames of their own between the helper and pthread_mutex_lock.
 * The comments marked with @ name lines fidelity_test.py checks.
 */
#include <cstdio>
#include <mutex>

namespace {
std::mutex m0, m1;
}

void acquire(std::mutex &m)
{
    m.lock(); // @acquire
}

void release(std::mutex &m)
{
    m.unlock();
}

void Acquire0()
{
    acquire(m0); // @Acquire0
}

void Acquire1()
{
    acquire(m1); // @Acquire1
}

void Acquire_0_then_1()
{
    Acquire0(); // @Acquire_0_then_1:0
    Acquire1(); // @Acquire_0_then_1:1
    release(m1);
    release(m0);
}

void Acquire_1_then_0()
{
    Acquire1(); // @Acquire_1_then_0:1
    Acquire0(); // @Acquire_1_then_0:0
    release(m0);
    release(m1);
}

int main()
{
    Acquire_0_then_1(); // @main:01
    Acquire_1_then_0(); // @main:10
    std::puts("done");
    return 0;
}
