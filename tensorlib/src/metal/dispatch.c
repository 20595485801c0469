/*
 * dispatch.c - threadgroup sizes and counts. Each function checks the limits it depends on
 * and returns false when the pipeline cannot run the kernel as written (a pipeline that uses
 * much threadgroup memory may allow fewer threads than the kernel needs).
 */
#include "dispatch.h"

#include "kernels.h"

static void set_grid(tlm_grid *g, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t tx, uint32_t ty)
{
    *g = (tlm_grid){{gx, gy, gz}, {tx, ty, 1}};
}

static uint32_t floor_pow2(uint32_t x)
{
    uint32_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}

static bool limits_ok(tlm_limits lim)
{
    return lim.max_threads > 0 && lim.simd_width > 0;
}

bool tlm_grid_elementwise(size_t n, tlm_limits lim, tlm_grid *g)
{
    if (!limits_ok(lim) || n > UINT32_MAX)
        return false;
    /* Whole SIMD groups only: a partial one wastes lanes in every threadgroup. */
    uint32_t width = lim.max_threads >= lim.simd_width ? lim.max_threads / lim.simd_width * lim.simd_width
                                                       : lim.max_threads;
    uint32_t threads = n < width ? (uint32_t)n : width;
    if (threads == 0)
        threads = 1;
    set_grid(g, (uint32_t)((n + threads - 1) / threads), 1, 1, threads, 1);
    return true;
}

bool tlm_grid_rows(size_t rows, size_t row_len, tlm_limits lim, tlm_grid *g)
{
    if (!limits_ok(lim) || rows > UINT32_MAX || row_len > UINT32_MAX)
        return false;
    uint32_t cap = floor_pow2(lim.max_threads < TLK_ROW_THREADS_MAX ? lim.max_threads : TLK_ROW_THREADS_MAX);
    uint32_t threads = 1;
    while (threads < row_len && threads < cap)
        threads *= 2;
    set_grid(g, (uint32_t)rows, 1, 1, threads, 1);
    return true;
}

bool tlm_grid_matmul(uint32_t batch, uint32_t m, uint32_t n, tlm_limits lim, tlm_grid *g)
{
    const uint32_t t = TLK_MATMUL_TILE;
    if (!limits_ok(lim) || lim.max_threads < t * t)
        return false;
    set_grid(g, (n + t - 1) / t, (m + t - 1) / t, batch, t, t);
    return true;
}
