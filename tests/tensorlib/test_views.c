/*
 * test_views.c - views share storage (and so write through to their base), copies do not;
 * layouts of narrow/transpose/permute/broadcast views; views outliving their base.
 */
#include "tl_test.h"

/* [[0, 1, 2], [3, 4, 5]] as f32 */
static tl_tensor *m23(void)
{
    return MAKE(TL_F32, SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
}

static void test_narrow_get(void)
{
    tl_tensor *m = m23();
    tl_tensor *col = tl_narrow(m, 1, 1, 2);
    CHECK(tl_shares_storage(col, m) && tl_offset(col) == 1 && !tl_is_contiguous(col));
    EXPECT_FMT(tl_retain(col), "[[1.0, 2.0], [4.0, 5.0]]");
    EXPECT_FMT(tl_get(m, 1), "[3.0, 4.0, 5.0]");
    EXPECT_FMT(tl_get(col, 1), "[4.0, 5.0]");
    EXPECT_FMT(tl_narrow(m, 0, 2, 0), "[]");
    EXPECT_FAIL(tl_narrow(m, 1, 2, 2), TL_ERR_RANGE, "narrow");
    EXPECT_FAIL(tl_narrow(m, 2, 0, 1), TL_ERR_RANGE, "dim 2 out of range");
    EXPECT_FAIL(tl_get(m, 2), TL_ERR_RANGE, "get");
    tl_release(col);
    tl_release(m);
}

static void test_write_through(void)
{
    tl_tensor *m = m23();
    tl_tensor *row0 = tl_get(m, 0);
    CHECK(tl_const_set(row0, 9) == TL_OK);
    EXPECT_FMT(tl_retain(m), "[[9.0, 9.0, 9.0], [3.0, 4.0, 5.0]]");
    tl_tensor *colT = tl_transpose(m, 0, 1);
    tl_tensor *last = tl_get(colT, 2); /* column 2 of m, stride 3 */
    CHECK(tl_const_set(last, -1) == TL_OK);
    EXPECT_FMT(tl_retain(m), "[[9.0, 9.0, -1.0], [3.0, 4.0, -1.0]]");
    tl_tensor *cp = tl_copy(m);
    CHECK(tl_const_set(cp, 0) == TL_OK);
    EXPECT_FMT(tl_retain(m), "[[9.0, 9.0, -1.0], [3.0, 4.0, -1.0]]");
    tl_tensor *det = tl_detach(m);
    CHECK(det != m && tl_shares_storage(det, m));
    tl_release(det);
    tl_release(cp);
    tl_release(last);
    tl_release(colT);
    tl_release(row0);
    tl_release(m);
}

static void test_views_outlive_base(void)
{
    tl_tensor *m = m23();
    tl_tensor *v = tl_narrow(m, 0, 1, 1);
    tl_tensor *t = tl_transpose(m, 0, 1);
    tl_release(m);
    EXPECT_FMT(v, "[[3.0, 4.0, 5.0]]");
    EXPECT_FMT(t, "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]");
}

static void test_shape_views(void)
{
    tl_tensor *m = m23();
    tl_tensor *u = tl_unsqueeze(m, 0);
    CHECK(tl_ndim(u) == 3 && tl_shape(u)[0] == 1 && tl_is_contiguous(u));
    EXPECT_FMT(tl_squeeze(u, 0), "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]");
    EXPECT_FMT(tl_squeeze(m, 0), "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"); /* size 2: unchanged */
    EXPECT_FMT(tl_unsqueeze(m, 2), "[[[0.0], [1.0], [2.0]], [[3.0], [4.0], [5.0]]]");
    EXPECT_FAIL(tl_unsqueeze(m, 3), TL_ERR_RANGE, "unsqueeze");
    EXPECT_FMT(tl_permute(u, (const size_t[]){2, 0, 1}, 3),
               "[[[0.0, 3.0]], [[1.0, 4.0]], [[2.0, 5.0]]]");
    EXPECT_FAIL(tl_permute(u, (const size_t[]){0, 0, 1}, 3), TL_ERR_RANGE, "permutation");
    EXPECT_FAIL(tl_permute(u, (const size_t[]){0, 1}, 2), TL_ERR_SHAPE, "permute");
    EXPECT_FAIL(tl_transpose(m, 0, 5), TL_ERR_RANGE, "transpose");
    tl_release(u);
    tl_release(m);
}

static void test_reshape(void)
{
    tl_tensor *m = m23();
    tl_tensor *r = tl_reshape(m, SHAPE(3, TL_INFER));
    CHECK(tl_shares_storage(r, m)); /* contiguous: a view */
    EXPECT_FMT(r, "[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]");
    tl_tensor *t = tl_transpose(m, 0, 1);
    tl_tensor *rt = tl_reshape(t, SHAPE(6));
    CHECK(!tl_shares_storage(rt, m)); /* strided: a copy */
    EXPECT_FMT(rt, "[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]");
    EXPECT_FMT(tl_flatten_all(t), "[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]");
    tl_tensor *three = tl_zeros(SHAPE(2, 3, 4), TL_U8, TL_CPU);
    tl_tensor *f = tl_flatten(three, 1, 2);
    CHECK(tl_ndim(f) == 2 && tl_shape(f)[1] == 12);
    tl_release(f);
    f = tl_flatten(three, 2, 1); /* candle: start after end leaves the tensor as it is */
    CHECK(f == three);
    tl_release(f);
    EXPECT_FAIL(tl_reshape(m, SHAPE(4, TL_INFER)), TL_ERR_SHAPE, "cannot reshape f32[2, 3]");
    EXPECT_FAIL(tl_reshape(m, SHAPE(TL_INFER, TL_INFER)), TL_ERR_SHAPE, "TL_INFER");
    EXPECT_FAIL(tl_reshape(m, SHAPE(7)), TL_ERR_SHAPE, "reshape");
    tl_tensor *c = tl_contiguous(m);
    CHECK(c == m);
    tl_release(c);
    c = tl_contiguous(t);
    CHECK(c != t && tl_is_contiguous(c) && !tl_shares_storage(c, t));
    tl_release(c);
    tl_release(three);
    tl_release(t);
    tl_release(m);
}

static void test_broadcast(void)
{
    tl_tensor *row = MAKE(TL_I64, SHAPE(3), 1, 2, 3);
    tl_tensor *b = tl_broadcast_as(row, SHAPE(2, 3));
    CHECK(tl_shares_storage(b, row) && tl_strides(b)[0] == 0);
    EXPECT_FMT(b, "[[1, 2, 3], [1, 2, 3]]");
    EXPECT_FAIL(tl_broadcast_as(row, SHAPE(2, 4)), TL_ERR_SHAPE, "cannot broadcast shape [3]");
    EXPECT_FAIL(tl_broadcast_as(row, SHAPE(1)), TL_ERR_SHAPE, "broadcast_as");
    tl_release(row);
}

static void test_chunk(void)
{
    tl_tensor *r = tl_arange(0, 5, 1, TL_U32, TL_CPU);
    tl_tensor *out[4];
    size_t n = 0;
    CHECK(tl_chunk(r, 3, 0, out, &n) == TL_OK && n == 3);
    const char *want[] = {"[0, 1]", "[2, 3]", "[4]"};
    for (size_t i = 0; i < n && i < 3; i++)
        EXPECT_FMT(out[i], want[i]);
    CHECK(tl_chunk(r, 4, 0, out, &n) == TL_OK && n == 4); /* candle's 2 + 1 + 1 + 1 */
    const char *want4[] = {"[0, 1]", "[2]", "[3]", "[4]"};
    for (size_t i = 0; i < n && i < 4; i++)
        EXPECT_FMT(out[i], want4[i]);
    EXPECT_STATUS(tl_chunk(r, 0, 0, out, &n), TL_ERR_ARG, "chunk");
    EXPECT_STATUS(tl_chunk(r, 2, 1, out, &n), TL_ERR_RANGE, "chunk");
    tl_release(r);
}

int main(void)
{
    test_narrow_get();
    test_write_through();
    test_views_outlive_base();
    test_shape_views();
    test_reshape();
    test_broadcast();
    test_chunk();
    return check_summary();
}
