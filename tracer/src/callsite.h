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

/* The two walks a thread may remember from call site ra. The call sites of one loop lie a few
 * bytes apart, so the set comes from ra's low bits (a multiplicative hash's top bits put
 * nearby addresses together), and a set holds two walks: sites rarely evict each other, and
 * each eviction costs a walk with table lookups. */
static inline lt_walk *lt_callsite_set(lt_thread *t, uintptr_t ra)
{
    return &t->walks[((ra ^ (ra >> LT_WALK_SET_BITS)) & ((1u << LT_WALK_SET_BITS) - 1)) * 2];
}

/* The thread's remembered walk from (ra, cfa), or NULL. */
static inline lt_walk *lt_callsite_cached(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    lt_walk *w = lt_callsite_set(t, ra);
    if (lt_likely(w->ra == ra && w->cfa == cfa))
        return w;
    w++;
    return lt_likely(w->ra == ra && w->cfa == cfa) ? w : NULL;
}

size_t lt_callsite_new_walk(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out);

/* The return addresses of the callers beyond call site ra (calling frame's stack pointer
 * cfa), innermost first, into out: LT_CALLERS beyond the first frame that is not a lock
 * wrapper, at most LT_CALLERS_MAX; returns the count. Inline: the thread's
 * last walk from this site nearly always still holds (callsite.c). */
static inline size_t lt_callsite_callers(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out)
{
    lt_walk *w = lt_callsite_cached(t, ra, cfa);
    if (lt_unlikely(!w))
        return lt_callsite_new_walk(t, ra, cfa, out);
    for (size_t n = 0; n < w->n; n++)
        if (lt_unlikely((out[n] = *(const uintptr_t *)w->slot[n]) != w->caller[n]))
            return lt_callsite_walk(t, w, n + 1, ra, cfa, out);
    return w->n;
}

#endif
