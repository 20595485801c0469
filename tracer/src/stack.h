/*
 * stack.h - the stack depot (stack.c): stacks interned once, named by a 32-bit id
 * (0 = none), and lazily taken stacks completed (lt_stack_lazy).
 */
#ifndef LT_STACK_H
#define LT_STACK_H

#include "lt_internal.h"

uint32_t lt_stack_here(uintptr_t from_ra);
uint32_t lt_stack_whole(lt_thread *t, uintptr_t ra, uintptr_t cfa);
uint32_t lt_stack_intern(const uintptr_t *ips, size_t n);
const uintptr_t *lt_stack_get(uint32_t id, size_t *n);
#define LT_STACK_MAX 256 /* frames of a stack at most: LOCKTRACE_STACK_DEPTH's upper bound */
size_t lt_stack_depth(void); /* frames a stack keeps: LOCKTRACE_STACK_DEPTH */

uint32_t lt_stack_lazy(const lt_held *h, uint32_t under, int *partial);
size_t lt_stack_join(const lt_held *h, uint32_t under, uintptr_t *out, int *partial);
uint32_t lt_stack_site_new(lt_thread *t, uintptr_t ra, uintptr_t cfa);
/* lt_stack_site_new where none of the thread's walks from (ra, cfa) holds (lt_callsite_holding
 * found none, and the walks have not changed since): the new walk at once, without looking at
 * them again. */
uint32_t lt_stack_site_unheld(lt_thread *t, uintptr_t ra, uintptr_t cfa);

/* The call site (ra, cfa) and the callers callsite.c finds beyond it, interned: what a lazily
 * taken acquisition records. The thread's walk that found the callers keeps the id while it
 * holds (the same frames at the same call site), which it nearly always does: an acquisition
 * pays a few loads, and a loop that takes locks (or makes them, or edges) at one call site
 * interns its stack once. 0 when the depot has no room. */
static inline uint32_t lt_stack_site_held(lt_thread *t, uintptr_t ra, uintptr_t cfa);
static inline uint32_t lt_stack_site_lazy(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    uint32_t id = lt_stack_site_held(t, ra, cfa);
    if (lt_likely(id))
        return id;
    return lt_stack_site_new(t, ra, cfa);
}

/* lt_stack_site_lazy's answer when a walk of the thread's holds with an id, else 0 (nothing
 * walked, nothing interned). */
static inline uint32_t lt_stack_site_held(lt_thread *t, uintptr_t ra, uintptr_t cfa)
{
    lt_walk *w = lt_callsite_holding(t, ra, cfa);
    return w ? w->stack : 0;
}

/* Where the call at (ra, cfa) is made, as LOCKTRACE_STACKS records it: the whole stack
 * (full); else the call site and the callers callsite.c finds beyond it, wrappers included
 * (lt_stack_site_lazy), which costs a few loads where an unwind costs microseconds
 * (*partial = 1: the frames beyond are not known). Inline: every init asks it (shadow.c's
 * first sighting), and its call was ~10 of the 40 instructions. */
static inline uint32_t lt_stack_site(lt_thread *t, uintptr_t ra, uintptr_t cfa, int *partial)
{
    *partial = lt_cfg.stacks != LT_STACKS_FULL;
    return *partial ? lt_stack_site_lazy(t, ra, cfa) : lt_stack_here(ra);
}

void lt_stack_fork(lt_fork_phase phase);

#endif
