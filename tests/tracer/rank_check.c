/*
 * rank_check.c - the rank order of the tracer's own locks (spin.h) is checked in builds with
 * -Dtracer_checks: `rank_check in-order` takes locks outermost first, leaves the tracer
 * (lt_leave) once it holds none, and exits 0; `rank_check out-of-order` takes an outer one
 * while holding an inner one, which is an internal error (a message, then abort); so is
 * `rank_check leave-held`, which leaves the tracer still holding one of two locks of a rank
 * (the held ranks are lt_tls.crit's bits: a rank's bit stays while any lock of it is held).
 */
#include <string.h>

#include "lt_internal.h"

int main(int argc, char **argv)
{
    lt_spin report = LT_SPIN_INIT(LT_RANK_REPORT), arena = LT_SPIN_INIT(LT_RANK_ARENA);
    lt_spin stripes[2] = {LT_SPIN_INIT(LT_RANK_STACK), LT_SPIN_INIT(LT_RANK_STACK)};
    int in_order = argc > 1 && strcmp(argv[1], "in-order") == 0;
    if (argc > 1 && strcmp(argv[1], "leave-held") == 0) {
        lt_spin_lock(&stripes[0]);
        lt_spin_lock(&stripes[1]);
        lt_spin_unlock(&stripes[1]);
        lt_leave(&lt_tls); /* stripes[0] still held */
        return 0;
    }
    lt_spin *first = in_order ? &report : &arena, *second = in_order ? &arena : &report;
    lt_spin_lock(&stripes[0]); /* same-rank locks in address order, as fork takes them */
    lt_spin_lock(&stripes[1]);
    lt_spin_unlock(&stripes[1]);
    lt_spin_unlock(&stripes[0]);
    lt_spin_lock(first);
    lt_spin_lock(second);
    lt_spin_unlock(second);
    lt_spin_unlock(first);
    lt_leave(&lt_tls); /* holding none: no internal error */
    return 0;
}
