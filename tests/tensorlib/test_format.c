/*
 * test_format.c - read-out: tl_to_vec in logical order from any layout, and tl_format's text
 * (candle's float style, integers plainly, snprintf-style truncation).
 */
#include "tl_test.h"

static void test_candle_style(void)
{
    /* the demo prints exactly these */
    EXPECT_FMT(MAKE(TL_F32, SHAPE(4), 11, 22, 33, 44), "[11.0, 22.0, 33.0, 44.0]");
    EXPECT_FMT(MAKE(TL_F32, SHAPE(2, 2), 4, 6, 3, 4), "[[4.0, 6.0], [3.0, 4.0]]");
    EXPECT_FMT(MAKE(TL_F64, SHAPE(2, 1, 2), 1, 2, 3, 4), "[[[1.0, 2.0]], [[3.0, 4.0]]]");
}

static void test_numbers(void)
{
    /* shortest text that reads back to the same f32 / f64 */
    EXPECT_FMT(MAKE(TL_F32, SHAPE(4), 0.1, 1.0 / 3, -2.5, 100.25), "[0.1, 0.33333334, -2.5, 100.25]");
    EXPECT_FMT(MAKE(TL_F64, SHAPE(2), 0.1, 1.0 / 3), "[0.1, 0.3333333333333333]");
    /* exponent form outside [1e-4, 1e16), like Rust's {:?} */
    EXPECT_FMT(MAKE(TL_F64, SHAPE(5), 1e-4, 1e-5, 1.5e16, 1e15, 123456789012.5),
               "[0.0001, 1e-5, 1.5e16, 1000000000000000.0, 123456789012.5]");
    EXPECT_FMT(MAKE(TL_F32, SHAPE(5), -0.0, INFINITY, -INFINITY, NAN, 2.5e-7),
               "[-0.0, inf, -inf, NaN, 2.5e-7]");
    EXPECT_FMT(MAKE(TL_F16, SHAPE(3), 0.1, 65504, 6e-8), "[0.1, 65500.0, 6e-8]");
    EXPECT_FMT(MAKE(TL_I64, SHAPE(2), -3, 1234567), "[-3, 1234567]");
    EXPECT_FMT(MAKE(TL_U8, SCALAR, 9), "9");
}

static void test_truncation(void)
{
    tl_tensor *t = MAKE(TL_F32, SHAPE(2), 1, 2);
    char small[6];
    CHECK(tl_format(t, small, sizeof small) == 10 && strcmp(small, "[1.0,") == 0);
    CHECK(tl_format(t, NULL, 0) == 10);
    CHECK(tl_format(t, NULL, 5) == -1 && tl_last_status() == TL_ERR_ARG);
    CHECK(tl_format(NULL, small, sizeof small) == -1 && tl_last_status() == TL_ERR_ARG);
    tl_release(t);
}

static void test_to_vec(void)
{
    tl_tensor *m = MAKE(TL_I64, SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    tl_tensor *t = tl_transpose(m, 0, 1);
    tl_tensor *n = tl_narrow(t, 0, 1, 2); /* [[1, 4], [2, 5]]: strided and offset */
    int64_t got[4] = {0};
    CHECK(tl_to_vec(n, got, sizeof got) == TL_OK);
    CHECK(got[0] == 1 && got[1] == 4 && got[2] == 2 && got[3] == 5);
    EXPECT_STATUS(tl_to_vec(n, got, sizeof got - 1), TL_ERR_RANGE, "to_vec: i64[2, 2] needs 32 bytes");
    EXPECT_STATUS(tl_to_vec(n, NULL, 64), TL_ERR_ARG, "to_vec");
    EXPECT_STATUS(tl_to_vec(NULL, got, 64), TL_ERR_ARG, "to_vec");
    tl_tensor *row = tl_get(m, 1);
    EXPECT_FMT(tl_broadcast_as(row, SHAPE(2, 3)), "[[3, 4, 5], [3, 4, 5]]");
    tl_release(row);
    tl_release(n);
    tl_release(t);
    tl_release(m);
}

int main(void)
{
    test_candle_style();
    test_numbers();
    test_truncation();
    test_to_vec();
    return check_summary();
}
