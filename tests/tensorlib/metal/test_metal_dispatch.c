/*
 * test_metal_dispatch.c - threadgroup sizes and counts for the three dispatch shapes, at the
 * limits a pipeline can report.
 */
#include "check.h"
#include "dispatch.h"
#include "kernels.h"

static const tlm_limits m2 = {1024, 32}; /* a plain kernel on Apple silicon */

static void test_elementwise(void)
{
    tlm_grid g;
    CHECK(tlm_grid_elementwise(10, m2, &g) && g.threads[0] == 10 && g.groups[0] == 1);
    CHECK(tlm_grid_elementwise(1024, m2, &g) && g.threads[0] == 1024 && g.groups[0] == 1);
    CHECK(tlm_grid_elementwise(1025, m2, &g) && g.threads[0] == 1024 && g.groups[0] == 2);
    CHECK(g.groups[1] == 1 && g.groups[2] == 1 && g.threads[1] == 1 && g.threads[2] == 1);
    /* 1000 allowed threads: whole SIMD groups only, 31 x 32 = 992. */
    CHECK(tlm_grid_elementwise(5000, (tlm_limits){1000, 32}, &g) && g.threads[0] == 992 && g.groups[0] == 6);
    CHECK(tlm_grid_elementwise(0, m2, &g) && tlm_grid_empty(&g));
    CHECK(!tlm_grid_elementwise((size_t)UINT32_MAX + 1, m2, &g));
    CHECK(!tlm_grid_elementwise(10, (tlm_limits){0, 32}, &g));
}

static void test_rows(void)
{
    tlm_grid g;
    CHECK(tlm_grid_rows(7, 5, m2, &g) && g.groups[0] == 7 && g.threads[0] == 8);
    CHECK(tlm_grid_rows(3, 100000, m2, &g) && g.threads[0] == 1024);
    /* A pipeline limited to 600 threads gets the power of two below it. */
    CHECK(tlm_grid_rows(1, 100000, (tlm_limits){600, 32}, &g) && g.threads[0] == 512);
    /* A pipeline allowing more than the kernels' threadgroup arrays hold is capped. */
    CHECK(tlm_grid_rows(1, 100000, (tlm_limits){4096, 32}, &g) && g.threads[0] == TLK_ROW_THREADS_MAX);
    CHECK(tlm_grid_rows(1, 1, m2, &g) && g.threads[0] == 1);
    CHECK(tlm_grid_rows(0, 4, m2, &g) && tlm_grid_empty(&g));
}

static void test_matmul(void)
{
    tlm_grid g;
    const uint32_t t = TLK_MATMUL_TILE;
    CHECK(tlm_grid_matmul(3, 2 * t + 1, t, m2, &g));
    CHECK(g.groups[0] == 1 && g.groups[1] == 3 && g.groups[2] == 3);
    CHECK(g.threads[0] == t && g.threads[1] == t && g.threads[2] == 1);
    CHECK(!tlm_grid_matmul(1, 4, 4, (tlm_limits){t * t - 1, 32}, &g));
}

int main(void)
{
    test_elementwise();
    test_rows();
    test_matmul();
    return check_summary();
}
