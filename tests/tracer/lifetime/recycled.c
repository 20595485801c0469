/*
 * recycled.c - a pool that recycles its objects' memory itself, the locks in it made anew by
 * memset (as placement new of a std::mutex, or an assigned PTHREAD_MUTEX_INITIALIZER, does):
 * no pthread call says they are new locks, locktrace_memory_recycled does.
 *   recycled pool             objects nested a then b, recycled with the annotation, then
 *                             nested b then a: new locks, no order between them (silent)
 *   recycled pool-unannotated the same without the annotation: the old orders stay, a false
 *                             lock-order-inversion (the limit the annotation is for)
 *   recycled held             a lock still held when its memory is recycled: free-held
 * Each prints what it did and ends with "done".
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "locktrace.h"

#define NOINLINE __attribute__((noinline))

typedef struct object {
    pthread_mutex_t lock;
    int value;
} object;

static object pool[2];

/* The pool hands its objects out again: cleared, a zeroed mutex being an unlocked one. */
static void pool_recycle(int annotate)
{
    memset(pool, 0, sizeof pool);
    if (annotate)
        locktrace_memory_recycled(pool, sizeof pool);
}

NOINLINE static void nest(object *outer, object *inner)
{
    pthread_mutex_lock(&outer->lock);
    pthread_mutex_lock(&inner->lock);
    inner->value = outer->value + 1;
    pthread_mutex_unlock(&inner->lock);
    pthread_mutex_unlock(&outer->lock);
}

static void reuse(int annotate)
{
    nest(&pool[0], &pool[1]);
    pool_recycle(annotate);
    nest(&pool[1], &pool[0]);
    printf("nested both ways, recycled between%s\n", annotate ? " (annotated)" : "");
}

NOINLINE static void recycle_held(void)
{
    pthread_mutex_lock(&pool[0].lock);
    locktrace_memory_recycled(pool, sizeof pool);
    printf("recycled while held\n");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "pool"))
        reuse(1);
    else if (!strcmp(s, "pool-unannotated"))
        reuse(0);
    else if (!strcmp(s, "held"))
        recycle_held();
    else {
        fprintf(stderr, "usage: recycled pool|pool-unannotated|held\n");
        return 64;
    }
    printf("done\n");
    return 0;
}
