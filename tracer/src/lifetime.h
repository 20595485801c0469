/*
 * lifetime.h - a lock's identity ends with its memory: the lock map (lockmap.c) says where
 * known locks live, lifetime.c forgets the locks of memory that is freed, reallocated,
 * unmapped or popped off an exiting thread's stack, and reports memory freed while a lock in
 * it is held (free-held).
 */
#ifndef LT_LIFETIME_H
#define LT_LIFETIME_H

#include "lt_internal.h"

/* lockmap.c ------------------------------------------------------------------------------ */
#define LT_LOCKMAP_REGION_SHIFT 30
#define LT_LOCKMAP_REGIONS (1u << (47 - LT_LOCKMAP_REGION_SHIFT)) /* 1 GiB each */

struct region;
extern struct region *_Atomic lt_lockmap_regions[LT_LOCKMAP_REGIONS];

int lt_lockmap_add(const void *addr);
void lt_lockmap_remove(const void *addr);
int lt_lockmap_any_slow(uintptr_t lo, uintptr_t hi);
/* Slot addresses (4-byte aligned) in [lo, hi) where known locks start, at most max; a caller
 * that got max asks again from the last one + 4. */
size_t lt_lockmap_list(uintptr_t lo, uintptr_t hi, uintptr_t *out, size_t max);

/* Whether [lo, hi) may hold a known lock. Inline: every free() asks. The common answer, "no
 * lock in this 1 GiB region", is one load. */
static inline int lt_lockmap_any(uintptr_t lo, uintptr_t hi)
{
    uintptr_t r = lo >> LT_LOCKMAP_REGION_SHIFT;
    if (lt_likely(r == (hi - 1) >> LT_LOCKMAP_REGION_SHIFT && r < LT_LOCKMAP_REGIONS) &&
        !atomic_load_explicit(&lt_lockmap_regions[r], memory_order_relaxed))
        return 0;
    return lt_lockmap_any_slow(lo, hi);
}

/* lifetime.c ----------------------------------------------------------------------------- */
typedef enum { LT_RELEASE_FREE, LT_RELEASE_REALLOC, LT_RELEASE_MUNMAP } lt_release;

/* [lo, hi) stops holding locks (the caller is about to free or unmap it): every known lock
 * in it is forgotten, and one that some thread holds is reported first (free-held). ra is
 * the program's call site. The thread is inside the tracer. */
void lt_memory_released(lt_thread *t, uintptr_t lo, uintptr_t hi, lt_release how, uintptr_t ra);

/* The exiting thread's stack is going away: its locks are forgotten (no report: its frames
 * have all returned). */
void lt_stack_released(lt_thread *t);

#endif
