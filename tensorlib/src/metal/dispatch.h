/*
 * dispatch.h - how many threads a Metal kernel runs with: threadgroup size and count from
 * the element count and the pipeline's limits. Plain C, unit-tested on every platform.
 */
#ifndef TL_METAL_DISPATCH_H
#define TL_METAL_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a compute pipeline allows (MTLComputePipelineState maxTotalThreadsPerThreadgroup and
 * threadExecutionWidth). */
typedef struct tlm_limits {
    uint32_t max_threads; /* threads per threadgroup */
    uint32_t simd_width;  /* threads that run in lockstep */
} tlm_limits;

typedef struct tlm_grid {
    uint32_t groups[3];    /* threadgroups in the grid (x, y, z) */
    uint32_t threads[3];   /* threads per threadgroup (x, y, z) */
} tlm_grid;

/* One thread per element, x only. n == 0 gives zero groups: nothing to dispatch. */
bool tlm_grid_elementwise(size_t n, tlm_limits lim, tlm_grid *g);

/* One threadgroup per row for reductions and softmax: a power-of-two thread count (the tree
 * reduction halves it) no larger than the row needs, the pipeline allows, or the kernels'
 * threadgroup arrays hold (TLK_ROW_THREADS_MAX). */
bool tlm_grid_rows(size_t rows, size_t row_len, tlm_limits lim, tlm_grid *g);

/* TLK_MATMUL_TILE x TLK_MATMUL_TILE threads per group, one group per output tile and batch. */
bool tlm_grid_matmul(uint32_t batch, uint32_t m, uint32_t n, tlm_limits lim, tlm_grid *g);

static inline bool tlm_grid_empty(const tlm_grid *g)
{
    return g->groups[0] == 0 || g->groups[1] == 0 || g->groups[2] == 0;
}

#endif
