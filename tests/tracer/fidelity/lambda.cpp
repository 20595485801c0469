/*
 * lambda.cpp - a lock taken in a lambda inlined into another lambda's operator(), which stays
 * a function of its own. gcc describes that operator()'s code under main, the function that
 * defines the lambda's class, not at the top of the unit: a walk that skips the functions
 * that do not hold the address missed the calls inlined into it, and the frame named the
 * outer lambda at the lock_guard's line in <mutex>. The comments marked with @ name lines
 * fidelity_test.py checks.
 * The inner lambda relocks the mutex the outer one holds (self-deadlock).
 */
#include <mutex>

std::mutex table, other;

int main(int argc, char **argv)
{
    int hits = 0;
    auto with = [&](std::mutex &m, auto &&body) __attribute__((noinline)) {
        std::lock_guard<std::mutex> held(m); // @with:lock
        hits++;
        body(); // @with:body
    };
    auto again = [&] {
        std::lock_guard<std::mutex> relock(table); // @again
        hits++;
    };
    if (argc > 1) // two callers with two mutexes: no copy of `with` specialised for one
        with(other, again);
    with(table, again); // @main
    (void)argv;
    return hits;
}
