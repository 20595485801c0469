/*
 * test_dims.c - dims counted from the end (candle's D::Minus1), op by op: each call with
 * TL_DIM(-k) must give what the call with the dim counted from the start gives, and a dim
 * past either end fails naming it. Also t(), the transpose of the last two dims.
 */
#include "tl_test.h"

#define M1 TL_DIM(-1)
#define M2 TL_DIM(-2)
#define M3 TL_DIM(-3)

/* Checks that a and b (both owned) print the same. */
static void same(tl_tensor *a, tl_tensor *b, const char *what)
{
    char sa[4096] = "", sb[4096] = "";
    int ok = a && b && tl_format(a, sa, sizeof sa) >= 0 && tl_format(b, sb, sizeof sb) >= 0 &&
             strcmp(sa, sb) == 0 && tl_ndim(a) == tl_ndim(b);
    CHECKF(ok, "%s: %s vs %s (%s)", what, sa, sb, a && b ? "" : tl_last_error());
    tl_release(a);
    tl_release(b);
}
#define SAME(a, b) same((a), (b), #a)

static void views(const tl_tensor *x) /* x: [2, 3, 4] */
{
    SAME(tl_narrow(x, M1, 1, 2), tl_narrow(x, 2, 1, 2));
    SAME(tl_transpose(x, M1, 0), tl_transpose(x, 2, 0));
    SAME(tl_t(x), tl_transpose(x, 1, 2));
    SAME(tl_permute(x, (const size_t[]){M1, 0, M2}, 3),
         tl_permute(x, (const size_t[]){2, 0, 1}, 3));
    SAME(tl_flatten(x, M2, M1), tl_flatten(x, 1, 2));
    SAME(tl_unsqueeze(x, M1), tl_unsqueeze(x, 3));
    CHECK(tl_ndim(x) == 3);
    tl_tensor *u = tl_unsqueeze(x, M1);
    CHECK(u && tl_ndim(u) == 4 && tl_shape(u)[3] == 1);
    SAME(tl_squeeze(u, M1), tl_squeeze(u, 3));
    tl_release(u);
    tl_tensor *parts[3], *pos[3];
    size_t n = 0, m = 0;
    CHECK(tl_chunk(x, 2, M1, parts, &n) == TL_OK && tl_chunk(x, 2, 2, pos, &m) == TL_OK && n == m);
    for (size_t i = 0; i < n && i < m; i++)
        SAME(parts[i], pos[i]);
    const tl_tensor *two[] = {x, x};
    SAME(tl_cat(two, 2, M2), tl_cat(two, 2, 1));
    SAME(tl_stack(two, 2, M1), tl_stack(two, 2, 3));
    SAME(tl_stack(two, 2, M3), tl_stack(two, 2, 1));
    /* past either end */
    EXPECT_FAIL(tl_narrow(x, TL_DIM(-4), 0, 1), TL_ERR_RANGE, "dim -4");
    EXPECT_FAIL(tl_unsqueeze(x, TL_DIM(-5)), TL_ERR_RANGE, "dim -5");
    EXPECT_FAIL(tl_transpose(x, 3, 0), TL_ERR_RANGE, "dim 3");
    EXPECT_FAIL(tl_stack(two, 2, TL_DIM(-5)), TL_ERR_RANGE, "dim -5");
    tl_tensor *v = tl_zeros(SHAPE(3), TL_F32, TL_CPU);
    EXPECT_FAIL(tl_t(v), TL_ERR_SHAPE, "2 dims");
    tl_release(v);
}

static void reductions(const tl_tensor *x)
{
    SAME(tl_reduce(TL_SUM, x, (const size_t[]){M1, 0}, 2, true),
         tl_reduce(TL_SUM, x, (const size_t[]){2, 0}, 2, true));
    SAME(tl_reduce(TL_ARGMAX, x, (const size_t[]){M2}, 1, false),
         tl_reduce(TL_ARGMAX, x, (const size_t[]){1}, 1, false));
    EXPECT_FAIL(tl_reduce(TL_SUM, x, (const size_t[]){M1, 2}, 2, false), TL_ERR_ARG, "twice");
    SAME(tl_softmax(x, M1), tl_softmax(x, 2));
    SAME(tl_log_softmax(x, M3), tl_log_softmax(x, 0));
}

static void indexing(const tl_tensor *x)
{
    tl_tensor *ids = MAKE(TL_U32, SHAPE(2), 3, 0);
    SAME(tl_index_select(x, ids, M1), tl_index_select(x, ids, 2));
    tl_tensor *g = tl_zeros(SHAPE(2, 3, 2), TL_I64, TL_CPU);
    SAME(tl_gather(x, g, M1), tl_gather(x, g, 2));
    tl_tensor *src = tl_ones(SHAPE(2, 3, 2), TL_F32, TL_CPU);
    SAME(tl_scatter_add(x, g, src, M1), tl_scatter_add(x, g, src, 2));
    SAME(tl_index_add(x, ids, src, M1), tl_index_add(x, ids, src, 2));
    tl_tensor *a = tl_copy(x), *b = tl_copy(x);
    CHECK(tl_scatter_add_set(a, g, src, M1) == TL_OK && tl_scatter_add_set(b, g, src, 2) == TL_OK);
    CHECK(tl_scatter_set(a, g, src, M1) == TL_OK && tl_scatter_set(b, g, src, 2) == TL_OK);
    tl_tensor *row = tl_full(7, SHAPE(2, 3, 1), TL_F32, TL_CPU);
    CHECK(tl_slice_set(a, row, M1, 3) == TL_OK && tl_slice_set(b, row, 2, 3) == TL_OK);
    SAME(a, b);
    RELEASE(ids, g, src, row);
}

int main(void)
{
    tl_tensor *a = tl_arange(0, 24, 1, TL_F32, TL_CPU);
    tl_tensor *x = tl_reshape(a, SHAPE(2, 3, 4));
    views(x);
    reductions(x);
    indexing(x);
    RELEASE(a, x);
    return check_summary();
}
