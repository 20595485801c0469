/*
 * take_alloc.h - malloc's entry points over the includer's take(size, align): a bump
 * allocator of zeroed blocks that keep their size just before them, the low bit free for the
 * includer's use (ownmalloc.c, tls_refused.c, names/ownheap.c). free keeps everything.
 */
#ifndef TAKE_ALLOC_H
#define TAKE_ALLOC_H

#include <stddef.h>
#include <string.h>

static void *take(size_t size, size_t align);

void *malloc(size_t size) { return take(size, 16); }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t size) { return take(n * size, 16); } /* blocks come zeroed */
void *memalign(size_t align, size_t size) { return take(size, align < 16 ? 16 : align); }
void *aligned_alloc(size_t align, size_t size) { return memalign(align, size); }

int posix_memalign(void **out, size_t align, size_t size)
{
    *out = memalign(align, size);
    return *out ? 0 : 12;
}

void *realloc(void *old, size_t size)
{
    void *p = malloc(size);
    if (p && old) {
        size_t was = ((size_t *)old)[-1] & ~(size_t)1;
        memcpy(p, old, was < size ? was : size);
    }
    return p;
}

#endif
