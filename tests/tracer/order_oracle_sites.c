/*
 * order_oracle_sites.c - a call site of its own for every step of a program (up to 1024), so
 * that no two acquisitions have the same first frames. The tracer de-duplicates reports by
 * the first three calls of each acquisition's stack ("Report files" in the README): with one
 * call site for every acquisition, a second, different cycle would print only "again (2nd
 * time)" and could not be compared. Frames #1 and #2 of each acquisition are a line of
 * site_low and of site_high picked by the step's number. Built without optimisation, so each
 * line stays a call of its own.
 */
#include "order_oracle.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline, optnone))
#else
#pragma GCC optimize("O0")
#define NOINLINE __attribute__((noinline, noclone))
#endif

typedef int (*site_fn)(void *);

NOINLINE static int site_low(int k, site_fn f, void *a)
{
    switch (k) {
    case 0: return f(a);
    case 1: return f(a);
    case 2: return f(a);
    case 3: return f(a);
    case 4: return f(a);
    case 5: return f(a);
    case 6: return f(a);
    case 7: return f(a);
    case 8: return f(a);
    case 9: return f(a);
    case 10: return f(a);
    case 11: return f(a);
    case 12: return f(a);
    case 13: return f(a);
    case 14: return f(a);
    case 15: return f(a);
    case 16: return f(a);
    case 17: return f(a);
    case 18: return f(a);
    case 19: return f(a);
    case 20: return f(a);
    case 21: return f(a);
    case 22: return f(a);
    case 23: return f(a);
    case 24: return f(a);
    case 25: return f(a);
    case 26: return f(a);
    case 27: return f(a);
    case 28: return f(a);
    case 29: return f(a);
    case 30: return f(a);
    case 31: return f(a);
    default: return f(a);
    }
}

NOINLINE static int site_high(int k, int low, site_fn f, void *a)
{
    switch (k) {
    case 0: return site_low(low, f, a);
    case 1: return site_low(low, f, a);
    case 2: return site_low(low, f, a);
    case 3: return site_low(low, f, a);
    case 4: return site_low(low, f, a);
    case 5: return site_low(low, f, a);
    case 6: return site_low(low, f, a);
    case 7: return site_low(low, f, a);
    case 8: return site_low(low, f, a);
    case 9: return site_low(low, f, a);
    case 10: return site_low(low, f, a);
    case 11: return site_low(low, f, a);
    case 12: return site_low(low, f, a);
    case 13: return site_low(low, f, a);
    case 14: return site_low(low, f, a);
    case 15: return site_low(low, f, a);
    case 16: return site_low(low, f, a);
    case 17: return site_low(low, f, a);
    case 18: return site_low(low, f, a);
    case 19: return site_low(low, f, a);
    case 20: return site_low(low, f, a);
    case 21: return site_low(low, f, a);
    case 22: return site_low(low, f, a);
    case 23: return site_low(low, f, a);
    case 24: return site_low(low, f, a);
    case 25: return site_low(low, f, a);
    case 26: return site_low(low, f, a);
    case 27: return site_low(low, f, a);
    case 28: return site_low(low, f, a);
    case 29: return site_low(low, f, a);
    case 30: return site_low(low, f, a);
    case 31: return site_low(low, f, a);
    default: return site_low(low, f, a);
    }
}

int oracle_at_site(int step, int (*f)(void *), void *arg)
{
    return site_high(step / 32 % 32, step % 32, f, arg);
}
