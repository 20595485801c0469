/*
 * ownheap.c - a program with its own malloc, in the brk heap (sbrk), whose blocks the tracer
 * cannot find: a lock in one is named by its mapping, "heap (block start unknown)", never by
 * a block glibc's layout would suggest (heap_test.py). Each block is preceded by its size,
 * so a reader taking it for glibc's chunk headers would find "blocks" that are not there.
 *   ownheap relock
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_flag busy = ATOMIC_FLAG_INIT;

/* Bump allocation from sbrk; each block remembers its size in the word before it. */
static void *take(size_t size, size_t align)
{
    while (atomic_flag_test_and_set(&busy))
        ;
    char *top = sbrk(0), *p = (char *)(((uintptr_t)top + sizeof(size_t) + align - 1) & ~(align - 1));
    size = (size + 15) & ~(size_t)15;
    if (sbrk((intptr_t)(p + size - top)) == (void *)-1)
        p = NULL;
    else
        ((size_t *)p)[-1] = size | 1;
    atomic_flag_clear(&busy);
    if (p)
        memset(p, 0, size);
    return p;
}

#include "../take_alloc.h"

size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] & ~(size_t)1 : 0; }

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "relock") != 0) {
        fprintf(stderr, "usage: ownheap relock\n");
        return 2;
    }
    char *b = malloc(96);
    pthread_mutex_t *m = (pthread_mutex_t *)(b + 48);
    pthread_mutex_init(m, NULL);
    printf("lock %p in block %p\n", (void *)m, (void *)b);
    fflush(stdout);
    pthread_mutex_lock(m);
    int rc = pthread_mutex_lock(m);
    printf("relock -> %s\n", rc == 0 ? "0" : strerror(rc));
    pthread_mutex_unlock(m);
    return 0;
}
