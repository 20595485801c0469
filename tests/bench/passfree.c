/*
 * passfree.c - the floor of bench-churn's free() rows: a preloaded free() that only passes
 * the call on to the next definition, as any interposer must. What liblocktrace's free()
 * costs beyond this is its lock-map check.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

static void (*next_free)(void *);

__attribute__((constructor)) static void resolve(void)
{
    next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

void free(void *p)
{
    if (next_free) /* NULL only while dlsym runs: its block is left behind */
        next_free(p);
}
