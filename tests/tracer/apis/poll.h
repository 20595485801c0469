/*
 * poll.h - what the tracer's test programs share: waiting until another thread is
 * blocked (tests/blocked.h, polling the kernel's view of it), and deadlines.
 */
#ifndef APIS_POLL_H
#define APIS_POLL_H

#include <time.h>

#include "../../blocked.h"

/* A deadline on `clock` ms from now. */
static inline struct timespec clock_ms_from_now(clockid_t clock, long ms)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

/* CLOCK_REALTIME (TIME_UTC) deadline ms from now. */
static inline struct timespec ms_from_now(long ms)
{
    return clock_ms_from_now(CLOCK_REALTIME, ms);
}

#endif
