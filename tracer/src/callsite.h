/*
 * callsite.h - the callers of a lock call site, read from the stack with frame sizes learnt
 * once per call site (callsite.c), for lazily captured acquisitions.
 */
#ifndef LT_CALLSITE_H
#define LT_CALLSITE_H

#include "lt_internal.h"

/* Takes the calling thread's stack bounds; where the thread holds none of the program's
 * locks (at load, when a thread starts: made, one pthread_create made). */
void lt_callsite_thread_init(int made);

/* Bytes of stack left below the caller's frame (callsite.c). An unwind takes up to
 * LT_UNWIND_ROOM of them below the frame that asks for it (libunwind's cursor and its walk of
 * the loaded objects): with less, the tracer does without. */
#define LT_UNWIND_ROOM (10u * 1024)
size_t lt_callsite_room(const lt_thread *t);
/* Whether the tracer may unwind at the program's call ra: with LT_UNWIND_ROOM of stack left,
 * and not in a call libunwind itself makes (the program's own unwind, which holds libunwind's
 * locks: the tracer's unwind, with the same libunwind, waited for them, and every program
 * calling unw_step hung: `harm-unwind.1`). Where it may not, the call site stands alone.
 * The locks the thread holds already are the platform's to ask (lt_held_unwinder, before
 * every call into libunwind); ra is asked here for the call being made: the lock it takes
 * joins the held set only after its order edges are recorded, which unwind where the site
 * table does not know the frames (with LOCKTRACE_STACKS=full that unwind waited for the cache
 * lock libc had just granted: `harm-unwind.4`). */
int lt_callsite_may_unwind(const lt_thread *t, uintptr_t ra);

size_t lt_callsite_walk(lt_thread *t, lt_walk *w, size_t from, uintptr_t ra, uintptr_t cfa,
                        uintptr_t *out);

/* Whether pc is a return address in the frame where an unwind ended (the thread's outermost
 * frame, as the site table learnt it): recorded frames that reach it are a whole stack. */
int lt_callsite_outermost(uintptr_t pc);

/* The walks a thread may remember from call site ra. The call sites of one loop lie a few
 * bytes apart, so the set comes from ra's low bits (a multiplicative hash's top bits put
 * nearby addresses together), and a set holds LT_WALK_WAYS walks: a lock helper called from
 * several places (memcached's item_lock) starts walks at one (ra, cfa) that differ in the
 * callers, and each eviction costs a walk with table lookups. */
static inline lt_walk *lt_callsite_set(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    return &t->walks[((ra ^ (cfa >> 4)) & ((1u << LT_WALK_SET_BITS) - 1)) * LT_WALK_WAYS];
}

size_t lt_callsite_stack(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out, size_t max);

lt_walk *lt_callsite_new_walk(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out,
                              size_t *n);

/* Offers t's walk w, with its interned stack, to the process's other threads (callsite.c:
 * shared walks); a walk taken from them has its stack already. */
void lt_callsite_share(lt_thread *t, const lt_walk *w);

/* The frames of the thread's remembered walk from (ra, cfa) that found callers out[0 .. n),
 * as lt_callsite_callers has just returned them (their stack pointers); NULL if none. */
const lt_walk_frames *lt_callsite_walk_of(lt_thread *t, uintptr_t ra, uintptr_t cfa,
                                          const uintptr_t *out, size_t n);

/* The frames of t's walk w, one that was made (callsite.c: lt_callsite_new_walk). */
static inline lt_walk_frames *lt_callsite_frames(lt_thread *t, const lt_walk *w)
{
    return &t->walk_frames[w->frames - 1];
}

/* The word of a near walk's check i (lt_walk), in the frames above cfa. */
static inline uintptr_t lt_callsite_near_word(const lt_walk *w, uintptr_t cfa, int i)
{
    return *(const uintptr_t *)(cfa + (uintptr_t)w->near_off[i] * sizeof(uintptr_t));
}

/* Whether the words at the slots of t's walk w (a walk from cfa) still hold its callers, each
 * word read into out[i] when out is given (room for LT_WALK_NEAR at least); a near walk
 * reads only its own line (lt_walk), and makes all its LT_WALK_NEAR checks, without a branch
 * each: those past its callers repeat the first (callsite.c: walk_near). */
static inline int lt_callsite_holds(lt_thread *t, const lt_walk *w, uintptr_t cfa,
                                    uintptr_t *out)
{
    uint32_t n = w->n;
    if (lt_likely(w->near)) {
        uintptr_t c0 = lt_callsite_near_word(w, cfa, 0), c1 = lt_callsite_near_word(w, cfa, 1),
                  c2 = lt_callsite_near_word(w, cfa, 2), c3 = lt_callsite_near_word(w, cfa, 3);
        _Static_assert(LT_WALK_NEAR == 4, "the checks above are a near walk's");
        if (out) {
            out[0] = c0;
            out[1] = c1;
            out[2] = c2;
            out[3] = c3;
        }
        return ((c0 ^ w->near_caller[0]) | (c1 ^ w->near_caller[1]) |
                (c2 ^ w->near_caller[2]) | (c3 ^ w->near_caller[3])) == 0;
    }
    const lt_walk_frame *f = lt_callsite_frames(t, w)->frame;
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t c = *(const uintptr_t *)f[i].slot;
        if (out)
            out[i] = c;
        if (c != f[i].caller)
            return 0;
    }
    return 1;
}

/* The thread's remembered walk from (ra, cfa) that still holds, without the callers; NULL
 * when none does. */
static inline lt_walk *lt_callsite_holding(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    lt_walk *w = lt_callsite_set(t, ra, cfa);
    for (size_t i = 0; i < LT_WALK_WAYS; i++, w++)
        if (w->ra == ra && w->cfa == cfa && lt_likely(lt_callsite_holds(t, w, cfa, NULL)))
            return w;
    return NULL;
}

/* The return addresses of the callers beyond call site ra (calling frame's stack pointer
 * cfa), innermost first, into out: LT_CALLERS beyond the first frame that is not a lock
 * wrapper, at most LT_CALLERS_MAX; *n is the count. Returns the thread's remembered walk that
 * found them: one that still holds, which it nearly always does (callsite.c: inline for that
 * reason), else the new walk; NULL when the new walk is not kept. */
static inline lt_walk *lt_callsite_held_walk(lt_thread *t, uintptr_t ra, uintptr_t cfa,
                                             uintptr_t *out, size_t *n)
{
    lt_walk *w = lt_callsite_set(t, ra, cfa);
    for (size_t i = 0; i < LT_WALK_WAYS; i++, w++) {
        if (w->ra == ra && w->cfa == cfa && lt_likely(lt_callsite_holds(t, w, cfa, out))) {
            *n = w->n;
            return w;
        }
    }
    return lt_callsite_new_walk(t, ra, cfa, out, n);
}

/* The callers alone (lt_callsite_held_walk). */
static inline size_t lt_callsite_callers(lt_thread *t, uintptr_t ra, uintptr_t cfa, uintptr_t *out)
{
    size_t n;
    lt_callsite_held_walk(t, ra, cfa, out, &n);
    return n;
}

#endif
