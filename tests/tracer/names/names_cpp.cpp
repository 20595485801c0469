// names_cpp.cpp - names.c compiled as C++, where its variables have mangled symbols that
// reports demangle (a function-static is "function_static()::fn_mu"), plus std::mutex in a
// namespace and as a static class member: "bank::ledger_mu", "Cache::mu".
#include <mutex>

#define main names_main
#include "names.c"
#undef main

namespace bank {
std::mutex ledger_mu;
}
struct Cache {
    static std::mutex mu;
};
std::mutex Cache::mu;

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "cpp-members")) {
        {
            std::lock_guard<std::mutex> a(bank::ledger_mu);
            std::lock_guard<std::mutex> b(Cache::mu);
        }
        {
            std::lock_guard<std::mutex> b(Cache::mu);
            std::lock_guard<std::mutex> a(bank::ledger_mu);
        }
        printf("cpp members\n");
        return 0;
    }
    return names_main(argc, argv);
}
