/*
 * command_queue.h - the Metal command-buffer state machine, without Metal.
 *
 * Ops encode into one current command buffer through one lazily opened compute encoder; the
 * buffer is committed every `per_buffer` encodes, and after `max_in_flight` commits without a
 * wait the queue waits, so neither the GPU queue nor the hazard list grows without bound.
 * The queue remembers which buffers committed-but-unfinished GPU work reads and writes, so a
 * host access waits only when it must:
 *
 *   host read of B   waits when the GPU has pending writes to B;
 *   host write of B  waits when the GPU has pending reads or writes of B.
 *
 * Any wait completes everything committed so far and forgets every pending access. The
 * Objective-C backend supplies a tlm_driver that does the Metal calls; the unit tests drive
 * the same state machine with a fake one.
 *
 * Locking: the queue has one mutex, taken by tlm_queue_begin and released by tlm_queue_end
 * (so an op's encoding is atomic), and taken inside the other calls. Callers hold their
 * tensors' storage locks around all of this (storage lock, then queue lock). Never call the
 * queue between begin and end.
 */
#ifndef TL_METAL_COMMAND_QUEUE_H
#define TL_METAL_COMMAND_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The Metal side. Each call runs with the queue mutex held. */
typedef struct tlm_driver {
    bool (*begin_buffer)(void *ctx);   /* make a new current command buffer */
    bool (*open_encoder)(void *ctx);   /* open a compute encoder on it */
    void (*close_encoder)(void *ctx);  /* end the open compute encoder */
    void (*commit)(void *ctx);         /* commit the current buffer (FIFO after earlier ones) */
    bool (*wait_committed)(void *ctx); /* block until every committed buffer completed; false
                                          when one failed (the driver records why) */
} tlm_driver;

typedef enum tlm_qstatus {
    TLM_Q_OK,
    TLM_Q_NOMEM,  /* the hazard list could not grow */
    TLM_Q_DEVICE, /* a driver call failed; the driver recorded the reason */
} tlm_qstatus;

typedef struct tlm_access {
    const void *buffer; /* the MTLBuffer, as an opaque key */
    bool written;       /* pending GPU write (else only reads) */
} tlm_access;

typedef struct tlm_queue {
    const tlm_driver *drv;
    void *ctx;
    pthread_mutex_t lock;
    unsigned per_buffer;    /* encodes per command buffer before it is committed */
    unsigned max_in_flight; /* committed, unwaited buffers before a forced wait */
    unsigned encodes;       /* encodes in the current buffer */
    unsigned in_flight;     /* committed since the last wait */
    bool have_buffer;
    bool encoder_open;
    tlm_access *pending;    /* GPU accesses not yet waited for */
    size_t npending, cap;
} tlm_queue;

void tlm_queue_init(tlm_queue *q, const tlm_driver *drv, void *ctx, unsigned per_buffer,
                    unsigned max_in_flight);
/* Waits for all committed work, then frees the queue's memory. */
tlm_qstatus tlm_queue_destroy(tlm_queue *q);

/* Locks the queue, opens the current buffer and encoder if needed and records the op's
 * buffer accesses. On TLM_Q_OK the caller encodes, then calls tlm_queue_end; on failure the
 * queue is unlocked and nothing was recorded. */
tlm_qstatus tlm_queue_begin(tlm_queue *q, const void *const *reads, size_t nreads,
                            const void *const *writes, size_t nwrites);
/* Counts the encode, commits at per_buffer encodes (and waits at max_in_flight), unlocks. */
tlm_qstatus tlm_queue_end(tlm_queue *q);

tlm_qstatus tlm_queue_before_host_read(tlm_queue *q, const void *buffer);
tlm_qstatus tlm_queue_before_host_write(tlm_queue *q, const void *buffer);
/* Commits the current buffer and waits for everything. */
tlm_qstatus tlm_queue_synchronize(tlm_queue *q);

#endif
