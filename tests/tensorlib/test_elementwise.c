/*
 * test_elementwise.c - unary, parameterised, binary, comparison and where ops against values
 * worked out by hand (transcendental ones with Python's math module), for each dtype class
 * (f32/f64, f16/bf16, integers) and for contiguous, strided, offset and broadcast inputs.
 */
#include "tl_test.h"

#define F32_TOL 1e-6
#define F64_TOL 1e-14
#define HALF_TOL 1e-2 /* f16 has 11 significant bits, bf16 8 */

static void test_unary_float(tl_dtype dt, double tol)
{
    tl_tensor *x = MAKE(dt, SHAPE(5), -1.5, -0.5, 0, 0.5, 2);
    tl_tensor *p = MAKE(dt, SHAPE(3), 0.5, 1, 4);
    tl_tensor *g = MAKE(dt, SHAPE(3), -1, 1, 2);
    EXPECT_VALS(tl_unary(TL_EXP, x), tol, 0.22313016014842982, 0.6065306597126334, 1,
                1.6487212707001282, 7.38905609893065);
    EXPECT_VALS(tl_unary(TL_LOG, p), tol, -0.6931471805599453, 0, 1.3862943611198906);
    EXPECT_VALS(tl_unary(TL_SIN, g), tol, -0.8414709848078965, 0.8414709848078965,
                0.9092974268256817);
    EXPECT_VALS(tl_unary(TL_COS, g), tol, 0.5403023058681398, 0.5403023058681398,
                -0.4161468365471424);
    EXPECT_VALS(tl_unary(TL_TANH, x), tol, -0.9051482536448664, -0.46211715726000974, 0,
                0.46211715726000974, 0.9640275800758169);
    EXPECT_VALS(tl_unary(TL_ABS, x), tol, 1.5, 0.5, 0, 0.5, 2);
    EXPECT_VALS(tl_unary(TL_NEG, x), tol, 1.5, 0.5, 0, -0.5, -2);
    EXPECT_VALS(tl_unary(TL_RECIP, p), tol, 2, 1, 0.25);
    EXPECT_VALS(tl_unary(TL_SQR, x), tol, 2.25, 0.25, 0, 0.25, 4);
    EXPECT_VALS(tl_unary(TL_SQRT, p), tol, 0.7071067811865476, 1, 2);
    EXPECT_VALS(tl_unary(TL_RELU, x), tol, 0, 0, 0, 0.5, 2);
    EXPECT_VALS(tl_unary(TL_GELU, g), tol, -0.15880800939172324, 0.8411919906082768,
                1.954597694087775);
    EXPECT_VALS(tl_unary(TL_GELU_ERF, g), tol, -0.15865525393145707, 0.8413447460685429,
                1.9544997361036416);
    EXPECT_VALS(tl_unary(TL_SILU, g), tol, -0.2689414213699951, 0.7310585786300049,
                1.7615941559557646);
    EXPECT_VALS(tl_unary(TL_FLOOR, x), tol, -2, -1, 0, 0, 2);
    EXPECT_VALS(tl_unary(TL_CEIL, x), tol, -1, -0.0, 0, 1, 2);
    EXPECT_VALS(tl_unary(TL_ROUND, x), tol, -2, -1, 0, 1, 2); /* halves away from zero */
    EXPECT_VALS(tl_unary(TL_SIGN, x), tol, -1, -1, 0, 1, 1);
    tl_release(x);
    tl_release(p);
    tl_release(g);
}

static void test_exp_edges(void)
{
    /* the vectorized f32 exp: overflow, underflow to subnormals and zero, NaN */
    tl_tensor *x = MAKE(TL_F32, SHAPE(6), 89, 88.5, -90, -104, -200, NAN);
    /* expected: the exact values rounded to f32 (exp(-104) is below half the least subnormal) */
    EXPECT_VALS(tl_unary(TL_EXP, x), 1e-5, INFINITY, 2.723087918012828e38, 8.194008692231508e-40, 0,
                0, NAN);
    tl_release(x);
    tl_tensor *big = tl_arange(-80, 80, 0.37, TL_F32, TL_CPU); /* 433 elements, several runs */
    tl_tensor *e32 = tl_unary(TL_EXP, big);
    tl_tensor *big64 = tl_to_dtype(big, TL_F64);
    tl_tensor *e64 = tl_unary(TL_EXP, big64);
    tl_tensor *e32w = tl_to_dtype(e32, TL_F64);
    tl_tensor *ratio = tl_div(e32w, e64);
    float worst = 0;
    double r[433];
    if (CHECK(ratio && tl_elem_count(ratio) == 433 && tl_to_vec(ratio, r, sizeof r) == TL_OK))
        for (size_t i = 0; i < 433; i++)
            worst = fmaxf(worst, (float)fabs(r[i] - 1));
    CHECKF(worst < 3e-7, "worst relative error %g", worst);
    /* a strided view goes through the same f32 kernel as its contiguous copy */
    tl_tensor *head = tl_narrow(big, 0, 0, 432);
    tl_tensor *grid = tl_reshape(head, SHAPE(24, 18));
    tl_tensor *col = tl_transpose(grid, 0, 1), *colc = tl_contiguous(col);
    tl_tensor *es = tl_unary(TL_EXP, col), *ec = tl_unary(TL_EXP, colc);
    tl_tensor *same = tl_cmp(TL_EQ, es, ec);
    EXPECT_VALS(tl_reduce(TL_MIN, same, NULL, 0, false), 0, 1);
    tl_release(same);
    tl_release(es);
    tl_release(ec);
    tl_release(colc);
    tl_release(col);
    tl_release(grid);
    tl_release(head);
    tl_release(ratio);
    tl_release(e32w);
    tl_release(e64);
    tl_release(big64);
    tl_release(e32);
    tl_release(big);
}

static void test_unary_layouts(tl_dtype dt, double tol)
{
    tl_tensor *m = MAKE(dt, SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    tl_tensor *t = tl_transpose(m, 0, 1);          /* strided */
    tl_tensor *n = tl_narrow(m, 1, 1, 2);          /* offset 1, rows of 2 in rows of 3 */
    tl_tensor *col = tl_narrow(m, 1, 2, 1);
    tl_tensor *b = tl_broadcast_as(col, SHAPE(2, 3)); /* stride 0 */
    EXPECT_VALS(tl_unary(TL_SQR, t), tol, 0, 9, 1, 16, 4, 25);
    EXPECT_VALS(tl_unary(TL_EXP, n), tol, 2.718281828459045, 7.38905609893065,
                54.598150033144236, 148.4131591025766);
    EXPECT_VALS(tl_unary(TL_NEG, b), tol, -2, -2, -2, -5, -5, -5);
    EXPECT_VALS(tl_affine(b, 2, 1), tol, 5, 5, 5, 11, 11, 11);
    tl_release(b);
    tl_release(col);
    tl_release(n);
    tl_release(t);
    tl_release(m);
}

static void test_unary_ints(void)
{
    tl_tensor *x = MAKE(TL_I64, SHAPE(3), -3, 0, 5);
    EXPECT_FMT(tl_unary(TL_ABS, x), "[3, 0, 5]");
    EXPECT_FMT(tl_unary(TL_NEG, x), "[3, 0, -5]");
    EXPECT_FMT(tl_unary(TL_SQR, x), "[9, 0, 25]");
    EXPECT_FMT(tl_unary(TL_RELU, x), "[0, 0, 5]");
    EXPECT_FMT(tl_unary(TL_SIGN, x), "[-1, 0, 1]");
    tl_tensor *u = MAKE(TL_U8, SHAPE(2), 3, 200);
    EXPECT_FMT(tl_unary(TL_NEG, u), "[253, 56]"); /* wraps, as in candle and numpy */
    EXPECT_FMT(tl_unary(TL_SQR, u), "[9, 64]");
    EXPECT_FAIL(tl_unary(TL_EXP, u), TL_ERR_DTYPE, "exp: needs a float dtype, got u8[2]");
    EXPECT_FAIL(tl_unary(TL_UNARY_COUNT, u), TL_ERR_ARG, "invalid op");
    EXPECT_FAIL(tl_unary(TL_EXP, NULL), TL_ERR_ARG, "exp: tensor argument is NULL");
    tl_release(x);
    tl_release(u);
}

static void test_scalar_ops(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(2, 2), -1, 0, 1.5, 2);
    EXPECT_VALS(tl_affine(x, 2, 1), F32_TOL, -1, 1, 4, 5);
    tl_tensor *x1 = tl_get(x, 1);
    EXPECT_VALS(tl_powf(x1, 2.5), F32_TOL, 2.7556759606310752, 5.656854249492381);
    EXPECT_VALS(tl_clamp(x, -0.5, 1.75), F32_TOL, -0.5, 0, 1.5, 1.75);
    EXPECT_VALS(tl_elu(x, 0.5), F32_TOL, -0.31606027941427883, 0, 1.5, 2);
    tl_tensor *t = tl_transpose(x, 0, 1);
    EXPECT_VALS(tl_affine(t, -1, 0), F32_TOL, 1, -1.5, -0, -2);
    tl_tensor *h = tl_to_dtype(x, TL_BF16);
    EXPECT_FMT(tl_affine(h, 0.5, 0), "[[-0.5, 0.0], [0.75, 1.0]]");
    tl_tensor *i = MAKE(TL_U32, SHAPE(3), 1, 5, 9);
    EXPECT_FMT(tl_affine(i, 3, -4), "[3, 15, 27]"); /* -4 becomes u32 0 first (candle's `as`) */
    EXPECT_FMT(tl_clamp(i, 2, 6), "[2, 5, 6]");
    EXPECT_FAIL(tl_powf(i, 2), TL_ERR_DTYPE, "powf");
    EXPECT_FAIL(tl_elu(i, 1), TL_ERR_DTYPE, "elu");
    EXPECT_VALS(tl_clamp(x, 2, 1), F32_TOL, 1, 1, 1, 1); /* lo > hi: hi, as numpy's clip */
    tl_release(i);
    tl_release(h);
    tl_release(t);
    tl_release(x1);
    tl_release(x);
}

static void test_binary(tl_dtype dt, double tol)
{
    tl_tensor *a = MAKE(dt, SHAPE(2, 2), 1, 2, 3, 4);
    tl_tensor *b = MAKE(dt, SHAPE(2, 2), 3, 4, 0, 0);
    EXPECT_VALS(tl_add(a, b), tol, 4, 6, 3, 4);
    EXPECT_VALS(tl_sub(a, b), tol, -2, -2, 3, 4);
    EXPECT_VALS(tl_mul(a, b), tol, 3, 8, 0, 0);
    EXPECT_VALS(tl_div(b, a), tol, 3, 2, 0, 0);
    EXPECT_VALS(tl_binary(TL_MAXIMUM, a, b), tol, 3, 4, 3, 4);
    EXPECT_VALS(tl_binary(TL_MINIMUM, a, b), tol, 1, 2, 0, 0);
    /* strided: a^T + b */
    tl_tensor *at = tl_transpose(a, 0, 1);
    EXPECT_VALS(tl_add(at, b), tol, 4, 7, 2, 4);
    /* offset: row 1 of a times row 0 of b */
    tl_tensor *a1 = tl_get(a, 1), *b0 = tl_get(b, 0);
    EXPECT_VALS(tl_mul(a1, b0), tol, 9, 16);
    /* broadcast (explicit, candle's contract): [2,2] + [2] (rows), [2,1] * [1,2] (outer
     * product), scalar; the plain ops refuse the same operands naming both shapes */
    EXPECT_VALS(tl_broadcast_add(a, b0), tol, 4, 6, 6, 8);
    EXPECT_FAIL(tl_add(a, b0), TL_ERR_SHAPE, "shape mismatch, lhs [2, 2], rhs [2]");
    tl_tensor *col = tl_reshape(a1, SHAPE(2, 1));
    tl_tensor *row = tl_reshape(b0, SHAPE(1, 2));
    EXPECT_VALS(tl_broadcast_mul(col, row), tol, 9, 12, 12, 16);
    EXPECT_FAIL(tl_mul(col, row), TL_ERR_SHAPE, "lhs [2, 1], rhs [1, 2]");
    tl_tensor *s = MAKE(dt, SCALAR, 10);
    EXPECT_VALS(tl_broadcast_sub(s, a), tol, 9, 8, 7, 6);
    tl_tensor *three = MAKE(dt, SHAPE(3), 1, 2, 3);
    EXPECT_FAIL(tl_broadcast_sub(a1, three), TL_ERR_SHAPE,
                "broadcast_sub: shapes [2] and [3] do not broadcast");
    tl_release(three);
    tl_release(s);
    tl_release(row);
    tl_release(col);
    tl_release(a1);
    tl_release(b0);
    tl_release(at);
    tl_release(a);
    tl_release(b);
}

static void test_binary_fast_paths(void)
{
    /* long contiguous runs take the typed loops; compare with the packed strided path */
    tl_tensor *a = tl_arange(0, 1000, 1, TL_F32, TL_CPU);
    tl_tensor *b = tl_affine(a, 0.5, 3);
    tl_tensor *sum = tl_add(a, b);
    tl_tensor *a2 = tl_reshape(a, SHAPE(10, 100)), *b2 = tl_reshape(b, SHAPE(100, 10));
    tl_tensor *b2t = tl_transpose(b2, 0, 1); /* strided */
    tl_tensor *bt = tl_contiguous(b2t);
    tl_tensor *s1 = tl_add(a2, b2t), *s2 = tl_add(a2, bt);
    tl_tensor *diff = tl_sub(s1, s2);
    EXPECT_VALS(tl_reduce(TL_MAX, diff, NULL, 0, false), 0, 0);
    EXPECT_VALS(tl_reduce(TL_SUM, sum, NULL, 0, false), 1e-6, 1.5 * 499500 + 3000);
    tl_release(diff);
    tl_release(s1);
    tl_release(s2);
    tl_release(bt);
    tl_release(b2t);
    tl_release(a2);
    tl_release(b2);
    tl_release(sum);
    tl_release(b);
    tl_release(a);
}

static void test_binary_ints_and_errors(void)
{
    tl_tensor *a = MAKE(TL_I64, SHAPE(3), -7, 8, 9000000000);
    tl_tensor *b = MAKE(TL_I64, SHAPE(3), 2, -3, 2);
    EXPECT_FMT(tl_add(a, b), "[-5, 5, 9000000002]");
    EXPECT_FMT(tl_div(a, b), "[-3, -2, 4500000000]"); /* truncates toward zero */
    EXPECT_FMT(tl_binary(TL_MAXIMUM, a, b), "[2, 8, 9000000000]");
    /* integers are computed exactly, beyond the 2^53 a double holds */
    const int64_t big[] = {INT64_MAX - 1, (1LL << 53) + 1}, one[] = {1, 1};
    tl_tensor *bi = tl_from_data(big, SHAPE(2), TL_I64, TL_CPU);
    tl_tensor *on = tl_from_data(one, SHAPE(2), TL_I64, TL_CPU);
    EXPECT_FMT(tl_add(bi, on), "[9223372036854775807, 9007199254740994]");
    tl_tensor *less = tl_sub(bi, on), *zero = tl_sub(on, on);
    EXPECT_FMT(tl_retain(less), "[9223372036854775805, 9007199254740992]");
    EXPECT_FMT(tl_cmp(TL_GT, bi, less), "[1, 1]");
    EXPECT_FMT(tl_where_cond(on, less, bi), "[9223372036854775805, 9007199254740992]");
    EXPECT_FMT(tl_reduce(TL_SUM, less, NULL, 0, false), "-9214364837600034819"); /* wraps */
    EXPECT_FAIL(tl_div(on, zero), TL_ERR_RANGE, "div: integer division by zero");
    tl_release(less);
    tl_release(zero);
    tl_release(bi);
    tl_release(on);
    tl_tensor *u = MAKE(TL_U8, SHAPE(2), 250, 3), *v = MAKE(TL_U8, SHAPE(2), 10, 5);
    EXPECT_FMT(tl_add(u, v), "[4, 8]"); /* wraps */
    EXPECT_FMT(tl_sub(u, v), "[240, 254]");
    tl_tensor *f = MAKE(TL_F32, SHAPE(3), 1, 2, 3);
    tl_tensor *f4 = MAKE(TL_F32, SHAPE(4), 1, 2, 3, 4);
    EXPECT_FAIL(tl_add(a, f), TL_ERR_DTYPE, "add: dtype mismatch (i64[3] and f32[3])");
    EXPECT_FAIL(tl_mul(f, f4), TL_ERR_SHAPE, "mul: shape mismatch, lhs [3], rhs [4]");
    EXPECT_FAIL(tl_sub(NULL, f), TL_ERR_ARG, "sub");
    EXPECT_FAIL(tl_binary(TL_BINARY_COUNT, f, f), TL_ERR_ARG, "invalid op");
    tl_release(f4);
    tl_release(f);
    tl_release(u);
    tl_release(v);
    tl_release(a);
    tl_release(b);
}

static void test_cmp_where(void)
{
    tl_tensor *a = MAKE(TL_F32, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tl_tensor *b = MAKE(TL_F32, SHAPE(3), 2, 2, 7);
    EXPECT_FMT(tl_broadcast_cmp(TL_EQ, a, b), "[[0, 1, 0], [0, 0, 0]]");
    EXPECT_FMT(tl_broadcast_cmp(TL_NE, a, b), "[[1, 0, 1], [1, 1, 1]]");
    EXPECT_FMT(tl_broadcast_cmp(TL_LT, a, b), "[[1, 0, 1], [0, 0, 1]]");
    EXPECT_FMT(tl_broadcast_cmp(TL_LE, a, b), "[[1, 1, 1], [0, 0, 1]]");
    EXPECT_FMT(tl_broadcast_cmp(TL_GT, a, b), "[[0, 0, 0], [1, 1, 0]]");
    EXPECT_FMT(tl_broadcast_cmp(TL_GE, a, b), "[[0, 1, 0], [1, 1, 0]]");
    EXPECT_FAIL(tl_cmp(TL_GE, a, b), TL_ERR_SHAPE, "ge: shape mismatch, lhs [2, 3], rhs [3]");
    tl_tensor *h = tl_to_dtype(a, TL_F16), *hb = tl_to_dtype(b, TL_F16);
    EXPECT_FMT(tl_broadcast_cmp(TL_GE, h, hb), "[[0, 1, 0], [1, 1, 0]]");
    tl_tensor *mask = tl_broadcast_cmp(TL_GT, a, b);
    tl_tensor *zero = tl_zeros(SHAPE(2, 3), TL_F32, TL_CPU);
    EXPECT_FMT(tl_where_cond(mask, a, zero), "[[0.0, 0.0, 0.0], [4.0, 5.0, 0.0]]");
    tl_tensor *cond = MAKE(TL_I64, SHAPE(2, 3), 1, 1, 1, 0, 0, 0);
    tl_tensor *bb = tl_broadcast_as(b, SHAPE(2, 3));
    EXPECT_FMT(tl_where_cond(cond, bb, a), "[[2.0, 2.0, 7.0], [4.0, 5.0, 6.0]]");
    EXPECT_FAIL(tl_where_cond(cond, b, a), TL_ERR_SHAPE,
                "where_cond: shape mismatch, cond [2, 3], on_true [3], on_false [2, 3] "
                "(tl_broadcast_as them to one shape first)");
    EXPECT_FAIL(tl_where_cond(a, a, a), TL_ERR_DTYPE, "where_cond: condition must be");
    EXPECT_FAIL(tl_where_cond(mask, a, h), TL_ERR_DTYPE, "where_cond");
    EXPECT_FAIL(tl_cmp(TL_EQ, a, h), TL_ERR_DTYPE, "eq");
    RELEASE(cond, bb, zero, mask, h, hb, a, b);
}

static void test_to_dtype(void)
{
    /* every pair, through values every dtype holds exactly */
    for (int from = 0; from < TL_DTYPE_COUNT; from++) {
        tl_tensor *src = MAKE((tl_dtype)from, SHAPE(3), 0, 3, 100);
        for (int to = 0; to < TL_DTYPE_COUNT; to++)
            CHECKF(EXPECT_VALS(tl_to_dtype(src, (tl_dtype)to), 0, 0, 3, 100), "%s -> %s",
                   tl_dtype_name((tl_dtype)from), tl_dtype_name((tl_dtype)to));
        tl_release(src);
    }
    tl_tensor *f = MAKE(TL_F64, SHAPE(5), -2.7, 2.7, 70000, NAN, 1.0009765625);
    EXPECT_FMT(tl_to_dtype(f, TL_U8), "[0, 2, 255, 0, 1]");
    EXPECT_FMT(tl_to_dtype(f, TL_I64), "[-2, 2, 70000, 0, 1]");
    EXPECT_FMT(tl_to_dtype(f, TL_F16), "[-2.7, 2.7, inf, NaN, 1.001]");
    /* bf16 holds 70144; "70000.0" is the shortest text that reads back to it */
    EXPECT_FMT(tl_to_dtype(f, TL_BF16), "[-2.7, 2.7, 70000.0, NaN, 1.0]");
    tl_tensor *u = MAKE(TL_U32, SHAPE(2, 2), 1, 2, 3, 4);
    tl_tensor *t = tl_transpose(u, 0, 1);
    EXPECT_FMT(tl_to_dtype(t, TL_F32), "[[1.0, 3.0], [2.0, 4.0]]");
    EXPECT_FAIL(tl_to_dtype(f, TL_DTYPE_COUNT), TL_ERR_DTYPE, "to_dtype");
    tl_release(t);
    tl_release(u);
    tl_release(f);
}

int main(void)
{
    test_unary_float(TL_F32, F32_TOL);
    test_unary_float(TL_F64, F64_TOL);
    test_unary_float(TL_F16, HALF_TOL);
    test_unary_float(TL_BF16, HALF_TOL);
    test_unary_layouts(TL_F32, F32_TOL);
    test_unary_layouts(TL_F64, F64_TOL);
    test_unary_layouts(TL_F16, HALF_TOL);
    test_exp_edges();
    test_unary_ints();
    test_scalar_ops();
    test_binary(TL_F32, F32_TOL);
    test_binary(TL_F64, F64_TOL);
    test_binary(TL_BF16, 0);
    test_binary(TL_I64, 0);
    test_binary_fast_paths();
    test_binary_ints_and_errors();
    test_cmp_where();
    test_to_dtype();
    return check_summary();
}
