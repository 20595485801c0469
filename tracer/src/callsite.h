/*
 * callsite.h - the callers of a lock call site, read from the stack with frame sizes learnt
 * once per call site (callsite.c), for lazily captured acquisitions.
 */
#ifndef LT_CALLSITE_H
#define LT_CALLSITE_H

#include "lt_internal.h"

/* Takes the calling thread's stack bounds; where the thread holds none of the program's
 * locks (at load, when a thread starts). */
void lt_callsite_thread_init(void);

size_t lt_callsite_walk(lt_thread *t, lt_walk *w, size_t from, uintptr_t ra, uintptr_t cfa,
                        uintptr_t *out);

/* The return addresses of the callers beyond call site ra (calling frame's stack pointer
 * cfa), innermost first, at most LT_CALLERS into out; returns the count. Inline: the thread's
 * last walk from this site nearly always still holds (callsite.c). */
static inline size_t lt_callsite_callers(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out)
{
    lt_walk *w = &t->walks[((ra ^ cfa) * 0x9E3779B97F4A7C15ull) >> (64 - LT_WALK_BITS)];
    if (lt_unlikely(w->ra != ra || w->cfa != cfa))
        return lt_callsite_walk(t, w, 0, ra, cfa, out);
    for (size_t n = 0; n < w->n; n++)
        if (lt_unlikely((out[n] = *(const uintptr_t *)w->slot[n]) != w->caller[n]))
            return lt_callsite_walk(t, w, n + 1, ra, cfa, out);
    return w->n;
}

#endif
