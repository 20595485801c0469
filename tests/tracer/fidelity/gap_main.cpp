/*
 * gap_main.cpp - frames in code no unit's address ranges hold: at -O2 main sits in
 * .text.startup, and the startup code (_start) and mixed_nodebug.c (built without -g, linked
 * first) lie between it and this unit's other functions. libdw gives such an address the unit
 * before it, and g++ 12's line table here a row at its sequence's end, so _start was shown at
 * a line of stl_tree.h. fidelity_test.py `gaps` checks every frame against addr2line.
 *
 *   gap_main upgrade   a read lock of a cache's shared_mutex, then its write lock
 *   gap_main nodebug   a self-deadlock inside mixed_nodebug.c's lock_twice
 */
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>

extern "C" void lock_twice(void);

struct Cache {
    std::shared_mutex lock;
    std::map<std::string, int> items;

    int get(const std::string &key)
    {
        std::shared_lock<std::shared_mutex> reading(lock);
        auto it = items.find(key);
        if (it == items.end())
            return put(key, 1); // @get
        return it->second;
    }

    int put(const std::string &key, int value)
    {
        std::unique_lock<std::shared_mutex> writing(lock); // @put
        items[key] = value;
        return value;
    }
};

__attribute__((noinline)) static void through(void)
{
    lock_twice(); // @through
    std::puts("unreachable");
}

int main(int argc, char **argv)
{
    Cache cache;
    if (argc > 1 && std::strcmp(argv[1], "nodebug") == 0)
        through();
    else
        std::printf("%d\n", cache.get("key"));
    return 0;
}
