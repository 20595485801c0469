// lifetime_cpp.cpp - std::mutex and std::shared_mutex members of objects that are new'ed and
// delete'd in a loop (operator delete reaches free), in two threads, each object's lock taken
// before a registry mutex in one iteration and after it in the next. Each object lives alone,
// so there is no inversion; the next object usually gets the same address, which without the
// tracer following delete would look like one lock taken in both orders.
//   lifetime_cpp [rounds]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>

#define NOINLINE __attribute__((noinline))

namespace {

struct account {
    std::mutex mu;
    std::shared_mutex rw;
    long balance = 0;
};

std::mutex registry;
std::atomic<long> reused{0};

NOINLINE void account_then_registry(account *a)
{
    std::lock_guard<std::mutex> own(a->mu);
    std::shared_lock<std::shared_mutex> view(a->rw);
    std::lock_guard<std::mutex> reg(registry);
    a->balance++;
}

NOINLINE void registry_then_account(account *a)
{
    std::lock_guard<std::mutex> reg(registry);
    std::unique_lock<std::shared_mutex> edit(a->rw);
    std::lock_guard<std::mutex> own(a->mu);
    a->balance--;
}

void worker(long rounds)
{
    const void *last = nullptr;
    for (long i = 0; i < rounds; i++) {
        account *a = new account;
        if (a == last)
            reused++;
        if (i % 2)
            registry_then_account(a);
        else
            account_then_registry(a);
        last = a;
        delete a;
    }
}

} // namespace

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? std::atol(argv[1]) : 2000;
    std::thread t1(worker, rounds), t2(worker, rounds);
    t1.join();
    t2.join();
    std::printf("%s\n", reused > 0 ? "addresses reused" : "no address reused");
    return 0;
}
