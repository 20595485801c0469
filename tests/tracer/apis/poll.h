/*
 * poll.h - what the tracer's test programs share: waiting until another thread is
 * blocked (tests/blocked.h, polling the kernel's view of it), and deadlines.
 */
#ifndef APIS_POLL_H
#define APIS_POLL_H

#include <time.h>

#include "../../blocked.h"

/* CLOCK_REALTIME (TIME_UTC) deadline ms from now. */
static inline struct timespec ms_from_now(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

#endif
