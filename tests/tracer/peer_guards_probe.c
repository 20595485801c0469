/*
 * peer_guards_probe.c - blocked.h for the C++ programs peer_guards.cpp and scenarios_cpp.cpp
 * (blocked.h is C11: its probe has an _Atomic field): a thread announces it is about to block, another waits until
 * the kernel shows it asleep in a futex wait.
 */
#define _GNU_SOURCE
#include <string.h>

#include "../blocked.h"

static blocked_probe probes[4];

void probe_announce(int i)
{
    blocked_announce(&probes[i]);
}

void probe_until(int i)
{
    blocked_until(&probes[i]);
}
