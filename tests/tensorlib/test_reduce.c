/*
 * test_reduce.c - reductions over one, several or all dims, with and without keepdim, on
 * strided inputs and across dtype classes, plus their error paths.
 */
#include "tl_test.h"

#define DIMS(...) (const size_t[]){__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)

static void test_basic(tl_dtype dt)
{
    tl_tensor *m = MAKE(dt, SHAPE(2, 3), 1, 5, 3, 4, 2, 6);
    EXPECT_VALS(tl_reduce(TL_SUM, m, DIMS(0), false), 0, 5, 7, 9);
    EXPECT_VALS(tl_reduce(TL_SUM, m, DIMS(1), false), 0, 9, 12);
    EXPECT_VALS(tl_reduce(TL_SUM, m, NULL, 0, false), 0, 21);
    EXPECT_VALS(tl_reduce(TL_MEAN, m, DIMS(1), false), 0, 3, 4);
    EXPECT_VALS(tl_reduce(TL_MAX, m, DIMS(0), false), 0, 4, 5, 6);
    EXPECT_VALS(tl_reduce(TL_MIN, m, DIMS(1), false), 0, 1, 2);
    EXPECT_FMT(tl_reduce(TL_ARGMAX, m, DIMS(1), false), "[1, 2]");
    EXPECT_FMT(tl_reduce(TL_ARGMIN, m, DIMS(0), true), "[[0, 1, 0]]");
    tl_tensor *t = tl_transpose(m, 0, 1); /* [[1, 4], [5, 2], [3, 6]] */
    EXPECT_VALS(tl_reduce(TL_SUM, t, DIMS(0), false), 0, 9, 12);
    EXPECT_FMT(tl_reduce(TL_ARGMAX, t, DIMS(0), false), "[1, 2]");
    tl_tensor *r = tl_reduce(TL_SUM, m, DIMS(1), true);
    CHECK(r && tl_ndim(r) == 2 && tl_shape(r)[0] == 2 && tl_shape(r)[1] == 1);
    EXPECT_VALS(r, 0, 9, 12);
    tl_release(t);
    tl_release(m);
}

static void test_several_dims(void)
{
    tl_tensor *a = tl_arange(0, 24, 1, TL_F64, TL_CPU);
    tl_tensor *t = tl_reshape(a, SHAPE(2, 3, 4));
    /* sum over i, k of 12i + 4j + k = 60 + 32j */
    EXPECT_VALS(tl_reduce(TL_SUM, t, DIMS(0, 2), false), 0, 60, 92, 124);
    EXPECT_FMT(tl_reduce(TL_MAX, t, DIMS(2, 0), true), "[[[15.0], [19.0], [23.0]]]");
    tl_tensor *p = tl_permute(t, (const size_t[]){2, 0, 1}, 3);
    EXPECT_VALS(tl_reduce(TL_MEAN, p, DIMS(1, 2), false), 0, 10, 11, 12, 13);
    tl_tensor *n = tl_narrow(t, 2, 1, 2); /* offset and strided: k in {1, 2} */
    EXPECT_VALS(tl_reduce(TL_SUM, n, DIMS(2), false), 0, 3, 11, 19, 27, 35, 43);
    tl_release(n);
    tl_release(p);
    tl_release(t);
    tl_release(a);
}

/* Long runs take the typed f32/f64 loops: folds along a reduced dim (eight partials plus a
 * remainder) and row updates along a kept dim. */
static void test_typed_runs(tl_dtype dt)
{
    tl_tensor *a = tl_arange(0, 1000, 1, dt, TL_CPU);
    tl_tensor *m = tl_reshape(a, SHAPE(10, 100)); /* m[i][j] = 100 i + j */
    EXPECT_VALS(tl_reduce(TL_SUM, m, DIMS(1), false), 0, 4950, 14950, 24950, 34950, 44950, 54950,
                64950, 74950, 84950, 94950);
    EXPECT_VALS(tl_reduce(TL_MIN, m, DIMS(1), false), 0, 0, 100, 200, 300, 400, 500, 600, 700,
                800, 900);
    tl_tensor *colmax = tl_reduce(TL_MAX, m, DIMS(0), false); /* 900 + j */
    EXPECT_VALS(tl_reduce(TL_SUM, colmax, NULL, 0, false), 0, 94950);
    EXPECT_VALS(tl_reduce(TL_MEAN, m, NULL, 0, false), 0, 499.5);
    tl_tensor *t = tl_transpose(m, 0, 1); /* folds with a stride of 100 */
    EXPECT_VALS(tl_reduce(TL_MAX, t, DIMS(0), false), 0, 99, 199, 299, 399, 499, 599, 699, 799,
                899, 999);
    tl_tensor *r = tl_narrow(m, 1, 3, 13); /* offset, a remainder after 8 */
    EXPECT_VALS(tl_reduce(TL_SUM, r, DIMS(1), false), 0, 117, 1417, 2717, 4017, 5317, 6617, 7917,
                9217, 10517, 11817);
    tl_release(r);
    tl_release(t);
    tl_release(colmax);
    tl_release(m);
    tl_release(a);
    /* NaN inside a long run is skipped; a run of NaN stays NaN */
    double v[20], nan20[20];
    for (int i = 0; i < 20; i++)
        v[i] = i == 3 || i == 17 ? NAN : i, nan20[i] = NAN;
    tl_tensor *x = tt_make(dt, v, SHAPE(20)), *n = tt_make(dt, nan20, SHAPE(20));
    EXPECT_VALS(tl_reduce(TL_MAX, x, NULL, 0, false), 0, 19);
    EXPECT_VALS(tl_reduce(TL_MIN, x, NULL, 0, false), 0, 0);
    EXPECT_VALS(tl_reduce(TL_MAX, n, NULL, 0, false), 0, NAN);
    EXPECT_VALS(tl_reduce(TL_ARGMAX, x, DIMS(0), false), 0, 19);
    tl_release(x);
    tl_release(n);
}

/* Whether t (one element) is a zero with the sign asked for. */
static int zero_signed(tl_tensor *t, bool negative)
{
    double v = 1;
    tl_tensor *d = t ? tl_to_dtype(t, TL_F64) : NULL;
    int ok = d && tl_to_vec(d, &v, sizeof v) == TL_OK && v == 0 && !signbit(v) == !negative;
    RELEASE(d, t);
    return ok;
}

/* Max/min of a run holding 0 and -0 is the zero met first: candle's fold moves only to a
 * strictly greater or smaller value, and -0 == 0. A run of 17 has eight partial results; the
 * zero met later sits in an earlier lane (index 8, lane 0) than the first (index 1, lane 1).
 * Neighbours: the first zero in the earlier lane, a run too short for lanes, a strided run,
 * f16 (the generic path), and the same rows reduced over several dims. */
static void test_zero_extremes(tl_dtype dt)
{
    double lo[17], hi[17];
    for (int i = 0; i < 17; i++)
        lo[i] = 3 + i, hi[i] = -3 - i;
    lo[1] = 0, lo[8] = -0.0, hi[1] = -0.0, hi[8] = 0; /* min: +0 first; max: -0 first */
    tl_tensor *a = tt_make(dt, lo, SHAPE(1, 17)), *b = tt_make(dt, hi, SHAPE(1, 17));
    CHECK(zero_signed(tl_reduce(TL_MIN, a, DIMS(1), false), false));
    CHECK(zero_signed(tl_reduce(TL_MAX, b, DIMS(1), false), true));
    CHECK(zero_signed(tl_reduce(TL_MIN, a, NULL, 0, false), false));
    CHECK(zero_signed(tl_reduce(TL_MAX, b, DIMS(0, 1), false), true));
    lo[1] = -0.0, lo[8] = 0, hi[1] = 0, hi[8] = -0.0; /* the signs the other way round */
    tl_tensor *c = tt_make(dt, lo, SHAPE(1, 17)), *d = tt_make(dt, hi, SHAPE(1, 17));
    CHECK(zero_signed(tl_reduce(TL_MIN, c, DIMS(1), false), true));
    CHECK(zero_signed(tl_reduce(TL_MAX, d, DIMS(1), false), false));
    lo[1] = 4, lo[8] = -0.0, lo[9] = 0; /* the first zero in the earlier lane */
    tl_tensor *h = tt_make(dt, lo, SHAPE(1, 17));
    CHECK(zero_signed(tl_reduce(TL_MIN, h, DIMS(1), false), true));
    double wide[34];
    for (int i = 0; i < 17; i++)
        wide[2 * i] = hi[i], wide[2 * i + 1] = 99;
    wide[2] = -0.0, wide[16] = 0; /* hi's first case again, every other element */
    tl_tensor *g = tt_make(dt, wide, SHAPE(17, 2)), *col = tl_narrow(g, 1, 0, 1);
    tl_tensor *e = tl_narrow(a, 1, 0, 7), *f = tl_transpose(col, 0, 1); /* [1, 17], stride 2 */
    CHECK(zero_signed(tl_reduce(TL_MIN, e, DIMS(1), false), false));
    CHECK(zero_signed(tl_reduce(TL_MAX, f, DIMS(1), false), true));
    RELEASE(a, b, c, d, e, f, g, col, h);
}

/* A sum over an outer dim adds source rows in groups of eight, then the rest one by one. */
static void test_row_groups(tl_dtype dt)
{
    tl_tensor *a = tl_arange(0, 19 * 5 * 37, 1, dt, TL_CPU);
    tl_tensor *m = tl_reshape(a, SHAPE(19, 5 * 37)), *c = tl_reshape(a, SHAPE(19, 5, 37));
    tl_tensor *s = tl_reduce(TL_SUM, m, DIMS(0), false); /* sum_i 185 i + j = 31635 + 19 j */
    tl_tensor *s3 = tl_reduce(TL_MEAN, c, DIMS(0), true), *s64 = tl_to_dtype(s, TL_F64);
    tl_tensor *m64 = tl_to_dtype(s3, TL_F64);
    double got[185], mean[185];
    CHECK(s64 && m64 && tl_to_vec(s64, got, sizeof got) == TL_OK &&
          tl_to_vec(m64, mean, sizeof mean) == TL_OK);
    size_t bad = 0;
    for (size_t j = 0; j < 185; j++)
        bad += got[j] != 31635 + 19.0 * (double)j || mean[j] != (31635 + 19.0 * (double)j) / 19;
    CHECKF(bad == 0, "%zu sums differ", bad);
    RELEASE(a, m, c, s, s3, s64, m64);
}

/* A group of eight rows whose pairs overflow the dtype: f32 columns 3e38, 3e38, -3e38, -3e38,
 * 0... sum to 0 in double, as a sum over the other dim of the transpose does, and f64 columns
 * of 1e308s to inf, as adding one row at a time does (and numpy, PyTorch and candle); the
 * grouped path gave NaN for both (inf - inf). A column with an inf sums to inf, a column
 * with a NaN to NaN; a column beside them that needs no help is summed as before. */
static void test_row_group_overflow(tl_dtype dt, double big, const char *want_sum,
                                    const char *want_mean)
{
    double v[8 * 4];
    for (size_t r = 0; r < 8; r++) {
        v[r * 4] = r < 2 ? big : r < 4 ? -big : 0;
        v[r * 4 + 1] = r == 3 ? INFINITY : 1;
        v[r * 4 + 2] = r == 5 ? NAN : 1;
        v[r * 4 + 3] = (double)r;
    }
    tl_tensor *m = tt_make(dt, v, SHAPE(8, 4)), *mt = tl_t(m), *c = tl_copy(mt);
    EXPECT_FMT(tl_reduce(TL_SUM, m, DIMS(0), false), want_sum);
    EXPECT_FMT(tl_reduce(TL_MEAN, m, DIMS(0), false), want_mean);
    EXPECT_FMT(tl_reduce(TL_SUM, c, DIMS(1), false), want_sum); /* the same sums along rows */
    RELEASE(m, mt, c);
}

static void test_dtypes(void)
{
    tl_tensor *u = MAKE(TL_U8, SHAPE(3), 200, 100, 7);
    EXPECT_FMT(tl_reduce(TL_SUM, u, NULL, 0, false), "51"); /* 307 wraps in u8, as in candle */
    EXPECT_FMT(tl_reduce(TL_MEAN, u, NULL, 0, false), "102");
    EXPECT_FMT(tl_reduce(TL_MAX, u, NULL, 0, false), "200");
    tl_tensor *i = MAKE(TL_I64, SHAPE(4), -5, 3, 3, -5);
    EXPECT_FMT(tl_reduce(TL_SUM, i, NULL, 0, false), "-4");
    EXPECT_FMT(tl_reduce(TL_ARGMAX, i, DIMS(0), false), "1"); /* first of equal maxima */
    EXPECT_FMT(tl_reduce(TL_ARGMIN, i, DIMS(0), false), "0");
    tl_tensor *h = MAKE(TL_F16, SHAPE(2, 2), 0.5, 1.5, -2, 4);
    EXPECT_FMT(tl_reduce(TL_MEAN, h, DIMS(0), false), "[-0.75, 2.75]");
    tl_tensor *b = MAKE(TL_BF16, SHAPE(3), 1, -1, 0.25);
    EXPECT_FMT(tl_reduce(TL_SUM, b, NULL, 0, false), "0.25");
    tl_tensor *e = tl_zeros(SHAPE(2, 0), TL_F32, TL_CPU);
    EXPECT_FMT(tl_reduce(TL_SUM, e, DIMS(1), false), "[0.0, 0.0]");
    EXPECT_FMT(tl_reduce(TL_MEAN, e, DIMS(1), false), "[NaN, NaN]");
    /* candle's cpu max/argmin start from the first element and move only to a strictly
     * greater / smaller one: a NaN first stays (it was skipped), a NaN later is skipped */
    tl_tensor *n = MAKE(TL_F32, SHAPE(3), NAN, 2, 1), *n2 = MAKE(TL_F32, SHAPE(3), 2, NAN, 1);
    EXPECT_FMT(tl_reduce(TL_MAX, n, NULL, 0, false), "NaN");
    EXPECT_FMT(tl_reduce(TL_ARGMIN, n, DIMS(0), false), "0");
    EXPECT_FMT(tl_reduce(TL_MAX, n2, NULL, 0, false), "2.0");
    EXPECT_FMT(tl_reduce(TL_ARGMIN, n2, DIMS(0), false), "2");
    tl_release(n);
    tl_release(n2);
    EXPECT_FAIL(tl_reduce(TL_MAX, e, DIMS(1), false), TL_ERR_SHAPE, "max: empty dim 1 of f32[2, 0]");
    tl_release(e);
    tl_release(b);
    tl_release(h);
    tl_release(i);
    tl_release(u);
}

/* An integer mean is the exact mean truncated toward 0 (tl.h), also where the run's sum would
 * wrap in int64: INT64_MIN and -11 sum to INT64_MAX - 10, whose half has the wrong sign. */
static void test_int_mean_exact(void)
{
    const int64_t v[] = {INT64_MIN, -11,        INT64_MAX, INT64_MAX, INT64_MAX, 1,
                         7,         -2,         -7,        2,         5,         -6};
    tl_tensor *x = tl_from_data(v, SHAPE(12), TL_I64, TL_CPU);
    tl_tensor *pairs = tl_reshape(x, SHAPE(6, 2));
    tl_tensor *threes = tl_reshape(x, SHAPE(4, 3));
    int64_t got[6] = {0};
    tl_tensor *m = tl_reduce(TL_MEAN, pairs, DIMS(1), false);
    CHECK(m && tl_to_vec(m, got, sizeof got) == TL_OK);
    /* -4611686018427387909.5, INT64_MAX, 4611686018427387904, 2.5, -2.5, -0.5 */
    CHECK(got[0] == -4611686018427387909 && got[1] == INT64_MAX &&
          got[2] == 4611686018427387904 && got[3] == 2 && got[4] == -2 && got[5] == 0);
    tl_release(m);
    /* (INT64_MIN - 11 + INT64_MAX) / 3 = -4, (2 INT64_MAX + 1) / 3 = 6148914691236517205,
     * -2 / 3 and 1 / 3 are 0 */
    m = tl_reduce(TL_MEAN, threes, DIMS(1), false);
    CHECK(m && tl_to_vec(m, got, 4 * sizeof got[0]) == TL_OK);
    CHECK(got[0] == -4 && got[1] == 6148914691236517205 && got[2] == 0 && got[3] == 0);
    tl_release(m);
    /* the same over dim 0 of the transpose, and over everything */
    tl_tensor *t = tl_t(pairs);
    m = tl_reduce(TL_MEAN, t, DIMS(0), false);
    CHECK(m && tl_to_vec(m, got, sizeof got) == TL_OK && got[0] == -4611686018427387909 &&
          got[1] == INT64_MAX && got[5] == 0);
    tl_release(m);
    m = tl_reduce(TL_MEAN, x, NULL, 0, false);
    /* the twelve sum to 2^64 - 14 (0 - 14 once wrapped): the mean is 1537228672809129300 */
    CHECK(m && tl_to_vec(m, got, sizeof got[0]) == TL_OK && got[0] == 1537228672809129300);
    tl_release(m);
    RELEASE(t, threes, pairs, x);
}

static void test_errors(void)
{
    tl_tensor *m = tl_zeros(SHAPE(2, 3), TL_F32, TL_CPU);
    EXPECT_FAIL(tl_reduce(TL_ARGMAX, m, DIMS(0, 1), false), TL_ERR_ARG, "argmax: takes exactly one dim");
    EXPECT_FAIL(tl_reduce(TL_ARGMIN, m, NULL, 0, false), TL_ERR_ARG, "argmin");
    EXPECT_FAIL(tl_reduce(TL_SUM, m, DIMS(2), false), TL_ERR_RANGE, "sum: dim 2 out of range for f32[2, 3]");
    EXPECT_FAIL(tl_reduce(TL_MEAN, m, DIMS(1, 1), false), TL_ERR_ARG, "mean: dim 1 given twice");
    EXPECT_FAIL(tl_reduce(TL_SUM, m, NULL, 1, false), TL_ERR_ARG, "dims is NULL");
    EXPECT_FAIL(tl_reduce(TL_REDUCE_COUNT, m, NULL, 0, false), TL_ERR_ARG, "invalid op");
    EXPECT_FAIL(tl_reduce(TL_SUM, NULL, NULL, 0, false), TL_ERR_ARG, "sum");
    tl_release(m);
}

int main(void)
{
    test_row_groups(TL_F32);
    test_row_groups(TL_F64);
    test_row_group_overflow(TL_F32, 3e38, "[0.0, inf, NaN, 28.0]", "[0.0, inf, NaN, 3.5]");
    test_row_group_overflow(TL_F64, 1e308, "[inf, inf, NaN, 28.0]", "[inf, inf, NaN, 3.5]");
    test_basic(TL_F32);
    test_basic(TL_F64);
    test_basic(TL_BF16);
    test_basic(TL_U32);
    test_several_dims();
    test_typed_runs(TL_F32);
    test_typed_runs(TL_F64);
    test_zero_extremes(TL_F32);
    test_zero_extremes(TL_F64);
    test_zero_extremes(TL_F16);
    test_dtypes();
    test_int_mean_exact();
    test_errors();
    return check_summary();
}
