/*
 * test_metal_layout.c - kernel arguments from views: 32-bit limits, broadcasting, the
 * kept/reduced split of reductions and softmax, matmul strides and index ops.
 */
#include <stdint.h>

#include "check.h"
#include "layout_args.h"

static tl_view view(size_t ndim, const size_t *shape, const size_t *strides, size_t offset)
{
    return (tl_view){NULL, TL_F32, ndim, shape, strides, offset};
}

static void test_plain_and_limits(void)
{
    size_t shape[] = {2, 3}, strides[] = {1, 2}, big[] = {70000, 70000}, bigs[] = {70000, 1};
    tlk_layout l;
    tl_view v = view(2, shape, strides, 5);
    CHECK(tlm_layout(&v, &l) && l.ndim == 2 && l.offset == 5 && l.shape[1] == 3 && l.stride[1] == 2);
    v = view(2, big, bigs, 0); /* 4.9e9 elements */
    CHECK(!tlm_layout(&v, &l));
    size_t one[] = {1}, far[] = {(size_t)UINT32_MAX + 1};
    v = view(1, one, far, 0); /* a size-1 dim never steps, whatever its stride says */
    CHECK(!tlm_layout(&v, &l)); /* but the stride itself must still fit */
    v = view(0, NULL, NULL, 0);
    CHECK(tlm_layout(&v, &l) && l.ndim == 0);
    size_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    v = view(9, nine, nine, 0);
    CHECK(!tlm_layout(&v, &l));
}

static void test_contiguous(void)
{
    size_t shape[] = {2, 1, 4};
    tlk_layout l;
    CHECK(tlm_layout_contiguous(shape, 3, &l) && l.stride[0] == 4 && l.stride[1] == 4 && l.stride[2] == 1);
    CHECK(l.offset == 0 && l.ndim == 3);
}

static void test_broadcast(void)
{
    size_t out[] = {4, 2, 3};
    size_t s1[] = {2, 1}, st1[] = {1, 1};
    tlk_layout l;
    tl_view v = view(2, s1, st1, 7);
    CHECK(tlm_layout_broadcast(&v, out, 3, &l));
    CHECK(l.ndim == 3 && l.offset == 7 && l.stride[0] == 0 && l.stride[1] == 1 && l.stride[2] == 0);
    CHECK(l.shape[0] == 4 && l.shape[2] == 3);
    size_t s2[] = {3, 3}, st2[] = {3, 1};
    v = view(2, s2, st2, 0);
    CHECK(!tlm_layout_broadcast(&v, out, 3, &l)); /* 3 vs 2 */
    size_t s3[] = {1, 4, 2, 3}, st3[] = {24, 6, 3, 1};
    v = view(4, s3, st3, 0);
    CHECK(!tlm_layout_broadcast(&v, out, 3, &l)); /* more dims than the output */
}

static void test_reduce(void)
{
    size_t shape[] = {2, 3, 4}, strides[] = {12, 4, 1};
    bool dims[] = {false, true, true};
    tlk_reduce_args a;
    tl_view v = view(3, shape, strides, 10);
    CHECK(tlm_reduce_args(&v, dims, &a));
    CHECK(a.out_n == 2 && a.reduced_n == 12);
    CHECK(a.kept.ndim == 1 && a.kept.shape[0] == 2 && a.kept.stride[0] == 12 && a.kept.offset == 10);
    CHECK(a.reduced.ndim == 2 && a.reduced.stride[0] == 4 && a.reduced.stride[1] == 1 && a.reduced.offset == 0);
    bool middle[] = {false, true, false};
    CHECK(tlm_reduce_args(&v, middle, &a) && a.out_n == 8 && a.reduced_n == 3);
    CHECK(a.kept.ndim == 2 && a.kept.stride[0] == 12 && a.kept.stride[1] == 1);
}

static void test_softmax(void)
{
    /* A transposed 3x2 view of a 2x3 buffer, softmax along dim 0. */
    size_t shape[] = {3, 2}, strides[] = {1, 3};
    tlk_softmax_args a;
    tl_view v = view(2, shape, strides, 0);
    CHECK(tlm_softmax_args(&v, 0, &a));
    CHECK(a.rows == 2 && a.len == 3 && a.src_stride == 1 && a.dst_stride == 2);
    CHECK(a.kept_src.ndim == 1 && a.kept_src.stride[0] == 3 && a.kept_dst.stride[0] == 1);
    CHECK(!tlm_softmax_args(&v, 2, &a));
}

static void test_matmul(void)
{
    size_t as[] = {2, 3, 4}, ast[] = {12, 4, 1};
    size_t bs[] = {2, 4, 5}, bst[] = {1, 2, 8}; /* strided: b[batch][k][n] at batch + 2k + 8n */
    tlk_matmul_args m;
    tl_view a = view(3, as, ast, 0), b = view(3, bs, bst, 1);
    CHECK(tlm_matmul_args(&a, &b, &m));
    CHECK(m.batch == 2 && m.m == 3 && m.k == 4 && m.n == 5);
    CHECK(m.a_row_stride == 4 && m.a_col_stride == 1 && m.b_row_stride == 2 && m.b_col_stride == 8);
    CHECK(m.a_batch.stride[0] == 12 && m.b_batch.stride[0] == 1 && m.b_batch.offset == 1);
    size_t bad[] = {2, 5, 5};
    b = view(3, bad, bst, 0);
    CHECK(!tlm_matmul_args(&a, &b, &m)); /* k differs */
}

static void test_index(void)
{
    size_t ss[] = {4, 3}, sst[] = {3, 1}, is[] = {5}, ist[] = {1};
    tlk_index_args a;
    tl_view src = view(2, ss, sst, 0), ids = view(1, is, ist, 2);
    CHECK(tlm_index_select_args(&src, &ids, 0, &a));
    CHECK(a.n == 15 && a.dim == 0 && a.dim_size == 4 && a.out.shape[0] == 5 && a.out.stride[0] == 3);
    CHECK(a.ids.offset == 2);
    size_t gs[] = {4, 2}, gst[] = {2, 1};
    tl_view g = view(2, gs, gst, 0);
    CHECK(tlm_gather_args(&src, &g, 1, &a) && a.n == 8 && a.dim_size == 3);
    /* along dim 0, ids' dim 1 (2) is within src's (3): candle's rule, torch's meaning */
    CHECK(tlm_gather_args(&src, &g, 0, &a) && a.n == 8 && a.dim_size == 4);
    size_t ws[] = {2, 4}, wst[] = {4, 1};
    tl_view w = view(2, ws, wst, 0);
    CHECK(!tlm_gather_args(&src, &w, 0, &a)); /* dim 1 larger: 4 vs 3 */
    CHECK(!tlm_index_select_args(&src, &g, 0, &a)); /* ids must be 1-D */
}

int main(void)
{
    test_plain_and_limits();
    test_contiguous();
    test_broadcast();
    test_reduce();
    test_softmax();
    test_matmul();
    test_index();
    return check_summary();
}
