/*
 * command_queue.c - the encoder/commit/wait state machine described in command_queue.h.
 * States of the current buffer: none -> open (have_buffer) -> encoder open -> committed
 * (back to none). A wait (flush) closes, commits and completes everything.
 */
#include "command_queue.h"

#include <stdlib.h>

void tlm_queue_init(tlm_queue *q, const tlm_driver *drv, void *ctx, unsigned per_buffer,
                    unsigned max_in_flight)
{
    *q = (tlm_queue){.drv = drv, .ctx = ctx, .per_buffer = per_buffer ? per_buffer : 1,
                     .max_in_flight = max_in_flight ? max_in_flight : 1};
    pthread_mutex_init(&q->lock, NULL);
}

static void commit_current(tlm_queue *q)
{
    if (q->encoder_open)
        q->drv->close_encoder(q->ctx);
    if (q->have_buffer) {
        q->drv->commit(q->ctx);
        q->in_flight++;
    }
    q->encoder_open = q->have_buffer = false;
    q->encodes = 0;
}

/* Commits what is open and waits for all of it: afterwards nothing is pending. */
static tlm_qstatus flush_locked(tlm_queue *q)
{
    commit_current(q);
    if (q->in_flight == 0)
        return TLM_Q_OK;
    bool ok = q->drv->wait_committed(q->ctx);
    q->in_flight = 0;
    q->npending = 0;
    return ok ? TLM_Q_OK : TLM_Q_DEVICE;
}

tlm_qstatus tlm_queue_destroy(tlm_queue *q)
{
    pthread_mutex_lock(&q->lock);
    tlm_qstatus st = flush_locked(q);
    pthread_mutex_unlock(&q->lock);
    pthread_mutex_destroy(&q->lock);
    free(q->pending);
    q->pending = NULL;
    return st;
}

static tlm_access *find(tlm_queue *q, const void *buffer)
{
    for (size_t i = 0; i < q->npending; i++)
        if (q->pending[i].buffer == buffer)
            return &q->pending[i];
    return NULL;
}

static bool reserve(tlm_queue *q, size_t extra)
{
    if (q->npending + extra <= q->cap)
        return true;
    size_t cap = q->cap ? q->cap : 16;
    while (cap < q->npending + extra)
        cap *= 2;
    tlm_access *p = realloc(q->pending, cap * sizeof *p);
    if (!p)
        return false;
    q->pending = p;
    q->cap = cap;
    return true;
}

static void record(tlm_queue *q, const void *buffer, bool written)
{
    tlm_access *a = find(q, buffer);
    if (a)
        a->written |= written;
    else
        q->pending[q->npending++] = (tlm_access){buffer, written};
}

static tlm_qstatus open_encoder(tlm_queue *q)
{
    if (!q->have_buffer) {
        if (!q->drv->begin_buffer(q->ctx))
            return TLM_Q_DEVICE;
        q->have_buffer = true;
    }
    if (!q->encoder_open) {
        if (!q->drv->open_encoder(q->ctx))
            return TLM_Q_DEVICE;
        q->encoder_open = true;
    }
    return TLM_Q_OK;
}

tlm_qstatus tlm_queue_begin(tlm_queue *q, const void *const *reads, size_t nreads,
                            const void *const *writes, size_t nwrites)
{
    pthread_mutex_lock(&q->lock);
    tlm_qstatus st = reserve(q, nreads + nwrites) ? open_encoder(q) : TLM_Q_NOMEM;
    if (st != TLM_Q_OK) {
        pthread_mutex_unlock(&q->lock);
        return st;
    }
    for (size_t i = 0; i < nreads; i++)
        record(q, reads[i], false);
    for (size_t i = 0; i < nwrites; i++)
        record(q, writes[i], true);
    return TLM_Q_OK;
}

tlm_qstatus tlm_queue_end(tlm_queue *q)
{
    tlm_qstatus st = TLM_Q_OK;
    if (++q->encodes >= q->per_buffer) {
        commit_current(q);
        if (q->in_flight >= q->max_in_flight)
            st = flush_locked(q);
    }
    pthread_mutex_unlock(&q->lock);
    return st;
}

/* Waits when the GPU still has a pending access to buffer that conflicts with the host's. */
static tlm_qstatus before_host_access(tlm_queue *q, const void *buffer, bool host_writes)
{
    pthread_mutex_lock(&q->lock);
    tlm_access *a = find(q, buffer);
    tlm_qstatus st = TLM_Q_OK;
    if (a && (a->written || host_writes))
        st = flush_locked(q);
    pthread_mutex_unlock(&q->lock);
    return st;
}

tlm_qstatus tlm_queue_before_host_read(tlm_queue *q, const void *buffer)
{
    return before_host_access(q, buffer, false);
}

tlm_qstatus tlm_queue_before_host_write(tlm_queue *q, const void *buffer)
{
    return before_host_access(q, buffer, true);
}

tlm_qstatus tlm_queue_synchronize(tlm_queue *q)
{
    pthread_mutex_lock(&q->lock);
    tlm_qstatus st = flush_locked(q);
    pthread_mutex_unlock(&q->lock);
    return st;
}
