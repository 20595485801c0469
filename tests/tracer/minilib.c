/*
 * minilib.c - a tiny "storage under one rwlock" library, built twice: linked normally (to show
 * that annotations from a shared library reach the preloaded tracer through the weak
 * reference) and as a module the host program dlopens.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "locktrace.h"

typedef struct mini_storage {
    pthread_rwlock_t lock;
    float data[4];
} mini_storage;

static void describe(const void *object, char *buf, size_t size)
{
    const mini_storage *s = object;
    snprintf(buf, size, "mini storage f32[%zu]", sizeof s->data / sizeof s->data[0]);
}

mini_storage *mini_new(void)
{
    mini_storage *s = calloc(1, sizeof *s);
    pthread_rwlock_init(&s->lock, NULL);
    locktrace_annotate_lock(&s->lock, s, describe);
    return s;
}

/* dst += src under the storage locks, candle-style: write the target, then read the operand. */
__attribute__((noinline)) int mini_add_inplace(mini_storage *dst, mini_storage *src)
{
    pthread_rwlock_wrlock(&dst->lock);
    int rc = pthread_rwlock_rdlock(&src->lock);
    for (int i = 0; i < 4; i++)
        dst->data[i] += src->data[i];
    if (rc == 0)
        pthread_rwlock_unlock(&src->lock);
    pthread_rwlock_unlock(&dst->lock);
    return rc;
}
