/*
 * storage.c - a backend buffer under one rwlock, reference-counted and shared by every view.
 * Each new storage annotates its lock for locktrace so reports name the storage, and names
 * its class, so the tracer can predict deadlocks between storages that never met.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "locktrace.h"

/* Called by the tracer while it reports, possibly with any lock held: snprintf only. */
void tl_storage_describe(const void *storage, char *buf, size_t size)
{
    const tl_storage *s = storage;
    size_t len = (size_t)snprintf(buf, size, "tensorlib storage %s[", tl_dtype_name(s->dtype));
    for (size_t i = 0; i < s->desc_ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, i ? ",%zu" : "%zu", s->desc_shape[i]);
    if (len < size)
        snprintf(buf + len, size - len, "] %s %zu B", tl_device_name(s->device), s->nbytes);
}

tl_storage *tl_storage_new(const char *op, tl_device device, tl_dtype dtype, const size_t *shape,
                           size_t ndim)
{
    const tl_backend_i *backend = tl_backend_of(device);
    size_t nbytes;
    if (device != TL_CPU && device != TL_METAL) {
        tl_fail(TL_ERR_DEVICE, "%s: invalid device %d", op, (int)device);
        return NULL;
    }
    if (!backend || (backend->available && !backend->available())) {
        tl_fail(TL_ERR_DEVICE, "%s: %s: not available on this platform (%s)", op,
                tl_device_name(device), backend ? "no device found" : "built without Metal");
        return NULL;
    }
    if (!tl_dtype_valid(dtype)) {
        tl_fail(TL_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
        return NULL;
    }
    if (tl_shape_check(op, shape, ndim, tl_dtype_size(dtype), &nbytes) != TL_OK)
        return NULL;
    tl_storage *s = tl_calloc(1, sizeof *s);
    if (!s) {
        tl_fail_nomem(op, sizeof *s);
        return NULL;
    }
    s->buf = tl_backend_alloc(backend, nbytes);
    if (!s->buf) {
        free(s);
        tl_fail_nomem(op, nbytes);
        return NULL;
    }
    int rc = pthread_rwlock_init(&s->lock, NULL);
    if (rc != 0) {
        backend->free(s->buf);
        free(s);
        tl_fail(TL_ERR_LOCK, "%s: pthread_rwlock_init failed (error %d)", op, rc);
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    s->backend = backend;
    s->device = device;
    s->dtype = dtype;
    s->nbytes = nbytes;
    s->desc_ndim = ndim;
    if (ndim)
        memcpy(s->desc_shape, shape, ndim * sizeof *shape);
    locktrace_annotate_lock(&s->lock, s, tl_storage_describe);
    locktrace_annotate_class(&s->lock, "tensorlib storage");
    return s;
}

void tl_storage_retain(tl_storage *s)
{
    atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
}

void tl_storage_release(tl_storage *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1)
        return;
    pthread_rwlock_destroy(&s->lock);
    s->backend->free(s->buf);
    free(s);
}
