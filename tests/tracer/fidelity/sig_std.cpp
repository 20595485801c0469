/*
 * sig_std.cpp - one self-deadlock through libstdc++'s lock wrappers, for the signature check
 * of fidelity_test.py: built at -O0 (the wrappers are calls of their own) and -O2 (they are
 * inlined), with GUARD std::lock_guard or std::unique_lock, the bug must have one signature.
 * With the argument "other" the bug is reached through one more function: another bug; with
 * "twice", the same bug twice. Run with LOCKTRACE_ACTION=edeadlk: std::mutex::lock then
 * throws, and the program goes on. The comment marked with @ names the line fidelity_test.py
 * checks as the bug's place.
 */
#include <cstdio>
#include <cstring>
#include <mutex>
#include <system_error>

#ifndef GUARD
#define GUARD std::lock_guard
#endif

static std::mutex m;

__attribute__((noinline)) void relock_guarded()
{
    GUARD<std::mutex> outer(m);
    try {
        GUARD<std::mutex> inner(m); // @inner
    } catch (const std::system_error &e) {
        std::printf("relock: %s\n", e.code() == std::errc::resource_deadlock_would_occur
                                        ? "EDEADLK" : e.what());
    }
}

__attribute__((noinline)) void caller()
{
    relock_guarded();
    std::puts("back");
}

__attribute__((noinline)) void other_caller()
{
    caller();
    std::puts("back from the other");
}

int main(int argc, char **argv)
{
    int times = argc == 2 && std::strcmp(argv[1], "twice") == 0 ? 2 : 1;
    if (argc == 2 && std::strcmp(argv[1], "other") == 0)
        other_caller();
    else
        for (int i = 0; i < times; i++)
            caller();
    return 0;
}
