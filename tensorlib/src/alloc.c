/*
 * alloc.c - every allocation tensorlib makes goes through here, so a test can make the n-th
 * one fail (SQLite-style fault injection) and check each allocation point fails cleanly.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "backend.h"

/* Allocations left before the injected failure; 0: no failure armed. */
static atomic_long fail_countdown;

long tl_debug_fail_alloc(long nth)
{
    return atomic_exchange(&fail_countdown, nth > 0 ? nth : 0);
}

static bool injected_failure(void)
{
    if (atomic_load_explicit(&fail_countdown, memory_order_relaxed) <= 0)
        return false; /* the normal case: one relaxed load */
    return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

void *tl_malloc(size_t nbytes)
{
    return injected_failure() ? NULL : malloc(nbytes ? nbytes : 1);
}

void *tl_malloc_aligned(size_t align, size_t nbytes)
{
    /* aligned_alloc wants a size that is a multiple of the alignment (C11 7.22.3.1). */
    size_t size = nbytes ? (nbytes + align - 1) / align * align : align;
    if (size < nbytes)
        return NULL;
    return injected_failure() ? NULL : aligned_alloc(align, size);
}

void *tl_calloc(size_t n, size_t size)
{
    return injected_failure() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *tl_backend_alloc(const tl_backend_i *b, size_t nbytes)
{
    return injected_failure() ? NULL : b->alloc(nbytes);
}
