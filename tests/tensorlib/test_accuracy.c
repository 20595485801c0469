/*
 * test_accuracy.c - results an independent numeric reference would reject, found by tens12's
 * sweep (every f16/bf16 value, random f32 bit patterns, f64 against 60-digit decimal). The
 * expected values are worked out by hand, or were computed at test-writing time with Python's
 * decimal module at 60+ digits (the formulas beside each case) and rounded once to the dtype;
 * none comes from tensorlib. Errors are counted in ulps of the result's dtype.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tl_test.h"

/* Distance in ulps of dt (f32 or f64) between a and b, on their ordered bit patterns (keys
 * of one sign subtract exactly; of opposite signs the distance is huge anyway). */
static double ulps_apart(double a, double b, tl_dtype dt)
{
    double v[2] = {a, b};
    int64_t k[2];
    for (int i = 0; i < 2; i++) {
        if (dt == TL_F32) {
            float f = (float)v[i];
            int32_t bits;
            memcpy(&bits, &f, sizeof bits);
            k[i] = bits < 0 ? -(int64_t)(bits & INT32_MAX) : bits;
        } else {
            int64_t bits;
            memcpy(&bits, &v[i], sizeof bits);
            k[i] = bits < 0 ? -(bits & INT64_MAX) : bits;
        }
    }
    if ((k[0] < 0) != (k[1] < 0))
        return fabs((double)k[0] - (double)k[1]);
    return (double)(k[0] > k[1] ? k[0] - k[1] : k[1] - k[0]);
}

/* t (owned, f32 or f64) holds want[i] within max_ulps each. */
static int expect_ulps(tl_tensor *t, const double *want, size_t n, double max_ulps,
                       const char *what, const char *file, int line)
{
    double got[64];
    tl_dtype dt = t ? tl_dtype_of(t) : TL_F64;
    tl_tensor *f = t ? tl_to_dtype(t, TL_F64) : NULL;
    int ok = f && n <= 64 && tl_elem_count(f) == n && tl_to_vec(f, got, sizeof got) == TL_OK;
    for (size_t i = 0; ok && i < n; i++) {
        double d = ulps_apart(got[i], want[i], dt);
        if (!(d <= max_ulps)) {
            printf("    element %zu: got %.17g, want %.17g (%g ulps)\n", i, got[i], want[i], d);
            ok = 0;
        }
    }
    if (!f)
        printf("    failed: %s\n", tl_last_error());
    check_record(ok, what, file, line);
    RELEASE(f, t);
    return ok;
}
#define EXPECT_ULPS(t, max_ulps, ...)                                                             \
    expect_ulps((t), (const double[]){__VA_ARGS__},                                               \
                sizeof((double[]){__VA_ARGS__}) / sizeof(double), (max_ulps), #t, __FILE__,      \
                __LINE__)

/* The logistic ops where exp(-x) overflows: 1 / (1 + exp(-x)) gave 0 (and x / (1 + exp(-x))
 * -0) from x = -88.7 (f32) / -709.8 (f64) on, where the true values are still normal or
 * subnormal numbers: sigmoid(x) = 1 / (1 + e^-x), silu(x) = x sigmoid(x), gelu(x) = x
 * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)). Within 4 ulps (the dtype's subnormal ulps below
 * its smallest normal). */
static void logistic_tails(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(3), -88.75, -95, -100);
    EXPECT_ULPS(tl_unary(TL_SIGMOID, x), 4, 2.859991e-39, 5.521e-42, 3.8e-44);
    tl_tensor *xs = MAKE(TL_F32, SHAPE(2), -90, -95);
    EXPECT_ULPS(tl_unary(TL_SILU, xs), 4, -7.374611e-38, -5.24503e-40);
    tl_tensor *xg = MAKE(TL_F32, SHAPE(2), -10.0625, -10.25);
    EXPECT_ULPS(tl_unary(TL_GELU, xg), 4, -2.8534363e-38, -3.43053e-40);
    tl_tensor *y = MAKE(TL_F64, SHAPE(2), -710.5, -720);
    EXPECT_ULPS(tl_unary(TL_SIGMOID, y), 4, 2.71500483752131e-309, 2.0322308024e-313);
    tl_tensor *ys = MAKE(TL_F64, SHAPE(1), -715);
    EXPECT_ULPS(tl_unary(TL_SILU, ys), 4, -2.1565100229054776e-308);
    tl_tensor *yg = MAKE(TL_F64, SHAPE(2), -21.25, -20.5);
    EXPECT_ULPS(tl_unary(TL_GELU, yg), 4, -1.7342819942984e-311, -1.3502940601643467e-280);
    /* gelu's argument z = 2 sqrt(2/pi) (x + 0.044715 x^3) rounded to the dtype cost |z| times
     * its rounding error: 176 ulps at f32 -9.571993, 1362 at f64 -19.6265, 20 at f32 -3.3 */
    tl_tensor *xm = MAKE(TL_F32, SHAPE(2), -9.571992874145508, -3.299999952316284);
    EXPECT_ULPS(tl_unary(TL_GELU, xm), 4, -1.4772811e-33, -0.0013112284);
    tl_tensor *ym = MAKE(TL_F64, SHAPE(2), -19.62653340129421, -5.5);
    EXPECT_ULPS(tl_unary(TL_GELU, ym), 4, -2.5661253414573296e-247, -5.9276402638802624e-09);
    /* the other side stays exact: sigmoid(-inf) 0, silu(-inf) NaN (-inf * 0, candle's
     * v / (1 + exp(-v)) and torch's too) */
    tl_tensor *inf = MAKE(TL_F32, SHAPE(3), -INFINITY, INFINITY, NAN);
    EXPECT_FMT(tl_unary(TL_SIGMOID, inf), "[0.0, 1.0, NaN]");
    EXPECT_FMT(tl_unary(TL_SILU, inf), "[NaN, inf, NaN]");
    EXPECT_FMT(tl_unary(TL_GELU, inf), "[NaN, inf, NaN]"); /* -inf: -inf * 0, as candle's */
    /* past the subnormals gelu of a negative x is -0, as x times a vanishing positive factor
     * (candle's 0.5 x (1 + tanh(..)) and torch's give -0 too); the first-order correction
     * turned it into +0 (f32 from -11, f64 -21.7 to -29) */
    tl_tensor *gz = MAKE(TL_F32, SHAPE(3), -11, -12, -20);
    tl_tensor *gz64 = MAKE(TL_F64, SHAPE(3), -21.7, -22, -25);
    EXPECT_FMT(tl_unary(TL_GELU, gz), "[-0.0, -0.0, -0.0]");
    EXPECT_FMT(tl_unary(TL_GELU, gz64), "[-0.0, -0.0, -0.0]");
    RELEASE(x, xs, xg, y, ys, yg, xm, ym, inf, gz, gz64);
}

/* f32 sigmoid and silu away from the tails: h = e^(-|x|/2) squared and four f32 roundings
 * were 4.31 ulps off at sigmoid(-4.150628) (3.97 at -3.45351 and at -4.848262) and 4.14 at
 * silu(-3.2175558) (4.13 at -7.578228, 4.10 at -9.15404), beyond the 4 the fuzzers allow;
 * e^-|x| once with the rest in double keeps them within 1.5. Reference: 1 / (1 + e^-x) and
 * x / (1 + e^-x) at 40 digits (mpmath). */
static void logistic_f32(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(3), -4.150628089904785, -3.453510046005249,
                        -4.848261833190918);
    EXPECT_ULPS(tl_unary(TL_SIGMOID, x), 1.5, 0.015510162979118493, 0.030664354514691168,
                0.0077809780061727688);
    tl_tensor *xs = MAKE(TL_F32, SHAPE(3), -3.2175557613372803, -7.57822847366333,
                         -9.154040336608887);
    EXPECT_ULPS(tl_unary(TL_SILU, xs), 1.5, -0.12390931799289879, -0.0038740285372765043,
                -0.00096831726251883668);
    RELEASE(x, xs);
}

/* gelu_erf is 0.5 x erfc(-x / sqrt 2); erfc's relative error grows as 2 z^2 times that of its
 * argument, so rounding x / sqrt 2 once costs 2 z^2 / 2 ulps: 188 ulps at f32 x = -12.875,
 * 1232 at f64 x = -36 before. Reference: 0.5 x erfc(-x / sqrt 2) at 60 digits. */
static void gelu_erf_tail(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(2), -12.875, -12);
    EXPECT_ULPS(tl_unary(TL_GELU_ERF, x), 4, -4.0066405e-37, -2.1317785e-32);
    tl_tensor *y = MAKE(TL_F64, SHAPE(2), -36, -30);
    EXPECT_ULPS(tl_unary(TL_GELU_ERF, y), 4, -1.505744663687022e-282, -1.472014178144456e-196);
    /* below x = -37 erfc(-x / sqrt 2) is subnormal: main multiplied its lost bits by 0.5 x
     * (-3.538981280086475e-309: 17 subnormal steps; -9.4e-323 for -5.4e-323). Reference:
     * the same decimal erfc, 60 digits, tens13 */
    tl_tensor *s = MAKE(TL_F64, SHAPE(3), -37.664713263823344, -37.62804645427882, -38.5);
    EXPECT_ULPS(tl_unary(TL_GELU_ERF, s), 1, -3.53898128008656e-309, -1.4072326122385203e-308,
                -5.4e-323);
    RELEASE(x, y, s);
}

/* log_softmax is (x - max) - log(sum), and the sum holds exp(0) = 1 for the maximum: adding
 * the small terms to that 1 rounds them to 2^-53 absolute, so the largest element's log
 * probability, -log(1 + small), came out 1e-16 off where it is -7.5e-6 (about 1e4 ulps, 33492
 * at -2.1e-5 in the sweep). log1p of the other terms keeps it. Reference: x - max -
 * ln(sum exp(x - max)) at 60 digits (log1p's series where the rest is below 1e-30). Along the
 * last dim (rows) and along dim 0 (columns). */
static void log_softmax_near_zero(void)
{
    static const double rows[3][4] = {{0, -12, -13.5, -20}, {3, -9, -9, 1.0e-3 - 10},
                                      {5, 5, -30, -31}};
    static const double want[3][4] = {
        {-7.5172043390833976e-06, -12.00000751720434, -13.50000751720434, -20.000007517204338},
        {-1.4550909708585823e-05, -12.00001455090971, -12.00001455090971, -12.99901455090971},
        {-0.6931471805599457, -0.6931471805599457, -35.69314718055995, -36.69314718055995}};
    double cols[4][3];
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 4; j++)
            cols[j][i] = rows[i][j];
    tl_tensor *r = tl_from_data(rows, SHAPE(3, 4), TL_F64, TL_CPU);
    tl_tensor *c = tl_from_data(cols, SHAPE(4, 3), TL_F64, TL_CPU);
    tl_tensor *lr = tl_log_softmax(r, 1), *lc = tl_log_softmax(c, 0);
    for (size_t i = 0; i < 3; i++) {
        tl_tensor *gr = tl_get(lr, i), *cn = tl_narrow(lc, 1, i, 1);
        EXPECT_ULPS(gr, 2, want[i][0], want[i][1], want[i][2], want[i][3]);
        EXPECT_ULPS(cn, 2, want[i][0], want[i][1], want[i][2], want[i][3]);
    }
    /* f32 too: one class 30 above the rest, its log probability -1.28e-13 (main gave
     * -1.27898e-13, 14000 ulps off: the double sum's 2^-53 against a result of 2^-43) */
    tl_tensor *f = MAKE(TL_F32, SHAPE(4), 0, -30, -31, -40);
    EXPECT_ULPS(tl_log_softmax(f, 0), 2, -1.2800525e-13, -30, -31, -40);
    RELEASE(r, c, lr, lc, f);
}

int main(void)
{
    logistic_tails();
    logistic_f32();
    gelu_erf_tail();
    log_softmax_near_zero();
    return check_summary();
}
