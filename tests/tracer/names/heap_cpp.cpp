// heap_cpp.cpp - C++ objects `new`ed with a std::mutex member, taken in both orders: the
// inversion's table names each lock by its object's heap block (heap_test.py). Prints, like
// heap.c, the name each lock must have, from its own pointers and malloc_usable_size:
//   expect 0x<lock> heap block 0x<object> (<usable size> bytes), offset <lock - object>
#include <malloc.h>

#include <cstdio>
#include <mutex>

struct Account {
    long id;
    double balance;
    std::mutex mu;
};

static void expect(const Account *a)
{
    std::printf("expect %p heap block %p (%zu bytes), offset %zu\n", static_cast<const void *>(&a->mu),
                static_cast<const void *>(a), malloc_usable_size(const_cast<Account *>(a)),
                static_cast<size_t>(reinterpret_cast<const char *>(&a->mu) -
                                    reinterpret_cast<const char *>(a)));
    std::fflush(stdout);
}

int main()
{
    Account *a = new Account{1, 0, {}};
    Account *b = new Account{2, 0, {}};
    expect(a);
    expect(b);
    {
        std::lock_guard<std::mutex> first(a->mu);
        std::lock_guard<std::mutex> second(b->mu);
    }
    {
        std::lock_guard<std::mutex> first(b->mu);
        std::lock_guard<std::mutex> second(a->mu);
    }
    std::printf("inversion\n");
    delete a;
    delete b;
    return 0;
}
