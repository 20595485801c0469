/*
 * metal_device.h - the Objective-C side of the Metal backend, seen from C: the device,
 * shared-storage buffers, and one call that encodes a kernel launch. Buffers are opaque
 * `void *` handles (each is a retained id<MTLBuffer>, the `data` a custom op's tl_view sees).
 *
 * Implemented in metal_device.m (macOS only). metal_ops.c builds every launch in plain C.
 */
#ifndef TL_METAL_DEVICE_H
#define TL_METAL_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel_select.h"

/* How a launch is spread over threads (see dispatch.h). */
typedef enum tlm_grid_kind {
    TLM_GRID_ELEMENTWISE, /* one thread per element of n */
    TLM_GRID_ROWS,        /* one threadgroup per row: rows = n, each row_len long */
    TLM_GRID_MATMUL,      /* batch x (m x cols) output tiles */
} tlm_grid_kind;

#define TLM_LAUNCH_BUFFERS 4

typedef struct tlm_launch {
    const char *op;         /* the tensorlib op, for messages */
    tlm_request req;        /* which kernel */
    const void *args;       /* a kernels.h argument struct, bound at index 0 */
    size_t args_size;
    void *bufs[TLM_LAUNCH_BUFFERS]; /* bound at indices 1.. in this order */
    size_t nbufs;
    size_t nreads;          /* bufs[0..nreads) are read, the rest written */
    tlm_grid_kind grid;
    size_t n, row_len;      /* ELEMENTWISE: n; ROWS: n rows of row_len */
    uint32_t batch, m, cols; /* MATMUL */
} tlm_launch;

/* True when this process has a Metal device; creates it, its queue and its command-queue
 * state on first call. */
bool tlm_metal_available(void);

/* A shared-storage buffer of nbytes (0 allowed); NULL when there is no device or memory. */
void *tlm_metal_alloc(size_t nbytes);
void tlm_metal_free(void *buf);
/* Host copies in and out of a buffer; each first waits for GPU work that conflicts. */
tl_status tlm_metal_write(void *buf, size_t offset, const void *src, size_t nbytes);
tl_status tlm_metal_read(const void *buf, size_t offset, void *dst, size_t nbytes);

/* Selects the kernel, gets its pipeline (compiling the embedded library on first use),
 * sizes the grid and encodes the launch into the current command buffer. Nothing waits. */
tl_status tlm_metal_encode(const tlm_launch *l);

#endif
