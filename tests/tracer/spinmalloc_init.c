/*
 * spinmalloc_init.c - a library that allocates from its constructor, as libstdc++ does
 * (its emergency exception pool): libspinmalloc.so needs it, so this runs before the
 * constructors of the libraries preloaded with libspinmalloc.so, the tracer's among them.
 */
#include <stdlib.h>

void *spinmalloc_init_block;

__attribute__((constructor)) static void allocate_early(void)
{
    spinmalloc_init_block = malloc(64);
}
