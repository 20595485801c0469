/*
 * test_edges.c - the edges an independent check against numpy found (issue #16): sizes from
 * user input that overflow, and the header's integer rules (int64, wrapping into the
 * narrower integers, Rust's `as` for float -> integer) on every op that takes integers;
 * f16/bf16 rand staying inside [lo, hi).
 */
#include <math.h>
#include <stdint.h>

#include "tl_test.h"

#define BIG ((size_t)1 << 62)

static void reshape_overflow(void)
{
    tl_tensor *t = tl_zeros(SHAPE(4), TL_F32, TL_CPU);
    /* 4 elements as [2^62 + 1, 4]: the count wraps to 4 in size_t */
    EXPECT_FAIL(tl_reshape(t, SHAPE(BIG + 1, 4)), TL_ERR_SHAPE, "overflows");
    EXPECT_FAIL(tl_reshape(t, SHAPE(BIG, 4, 1)), TL_ERR_SHAPE, "overflows");
    EXPECT_FAIL(tl_reshape(t, SHAPE(TL_INFER, BIG, 8)), TL_ERR_SHAPE, "overflows");
    EXPECT_FMT(tl_reshape(t, SHAPE(2, TL_INFER)), "[[0.0, 0.0], [0.0, 0.0]]");
    /* the hole and a negative size read as written, not as 2^64 - 1 and 2^64 - 3 */
    EXPECT_FAIL(tl_reshape(t, SHAPE(3, TL_INFER)), TL_ERR_SHAPE, "cannot reshape f32[4] to [3, -1]");
    EXPECT_FAIL(tl_zeros(SHAPE(2, (size_t)-3), TL_F32, TL_CPU), TL_ERR_RANGE, "shape [2, -3] is too large");
    /* sizes from 2^63 up are the numbers they are (they printed as negative) */
    EXPECT_FAIL(tl_zeros(SHAPE((size_t)1 << 63), TL_F32, TL_CPU), TL_ERR_RANGE,
                "shape [9223372036854775808] is too large");
    EXPECT_FAIL(tl_zeros(SHAPE(3, SIZE_MAX - ((size_t)1 << 31)), TL_U8, TL_CPU), TL_ERR_RANGE,
                "shape [3, 18446744071562067967] is too large");
    EXPECT_FAIL(tl_reshape(t, SHAPE((size_t)1 << 63, 0)), TL_ERR_SHAPE, "[9223372036854775808, 0]");
    EXPECT_FAIL(tl_reshape(t, SHAPE(-(size_t)1 << 31, 4)), TL_ERR_SHAPE, "[-2147483648, 4]");
    tl_release(t);
}

static void conv_padding_overflow(void)
{
    tl_tensor *x = tl_ones(SHAPE(1, 1, 5), TL_F32, TL_CPU);
    tl_tensor *k = tl_ones(SHAPE(1, 1, 3), TL_F32, TL_CPU);
    tl_tensor *x2 = tl_ones(SHAPE(1, 1, 4, 4), TL_F32, TL_CPU);
    tl_tensor *k2 = tl_ones(SHAPE(1, 1, 2, 2), TL_F32, TL_CPU);
    const size_t pads[] = {SIZE_MAX, SIZE_MAX / 2, (size_t)1 << 63, BIG, (size_t)PTRDIFF_MAX / 2};
    for (size_t i = 0; i < sizeof pads / sizeof pads[0]; i++) {
        EXPECT_FAIL(tl_conv1d(x, k, pads[i], 1, 1, 1), TL_ERR_RANGE, "padding");
        EXPECT_FAIL(tl_conv2d(x2, k2, pads[i], 1, 1, 1), TL_ERR_RANGE, "padding");
    }
    /* a dilation whose window overflows */
    EXPECT_FAIL(tl_conv1d(x, k, 0, 1, SIZE_MAX / 2 + 1, 1), TL_ERR_SHAPE, "does not fit");
    EXPECT_VALS(tl_conv1d(x, k, 1, 1, 1, 1), 0, 2, 3, 3, 3, 2);
    EXPECT_VALS(tl_conv1d(x, k, 1, 3, 1, 1), 0, 2, 3);
    tl_release(x);
    tl_release(k);
    tl_release(x2);
    tl_release(k2);
}

/* cat's result dim is a sum that can overflow with broadcast (stride 0) arguments. */
static void cat_overflow(void)
{
    tl_tensor *one = tl_zeros(SHAPE(1), TL_U8, TL_CPU);
    tl_tensor *huge = tl_broadcast_as(one, SHAPE((size_t)1 << 63));
    const tl_tensor *args[] = {huge, huge};
    CHECK(huge != NULL);
    EXPECT_FAIL(tl_cat(args, 2, 0), TL_ERR_RANGE, "overflows");
    tl_release(huge);
    tl_release(one);
}

/* to_vec's byte count of a large broadcast view overflows size_t. */
static void to_vec_overflow(void)
{
    tl_tensor *one = tl_zeros(SHAPE(1), TL_F32, TL_CPU);
    tl_tensor *huge = tl_broadcast_as(one, SHAPE(BIG));
    float cell;
    EXPECT_STATUS(tl_to_vec(huge, &cell, sizeof cell), TL_ERR_RANGE, "bytes");
    EXPECT_FAIL(tl_to_device(huge, TL_CPU), TL_ERR_RANGE, "too large");
    tl_release(huge);
    tl_release(one);
}

/* chunk with a huge n: ceil(size / n) must not wrap to a step of 0 (an endless loop). */
static void chunk_huge_n(void)
{
    tl_tensor *t = tl_zeros(SHAPE(3), TL_F32, TL_CPU), *out[3];
    size_t count = 0;
    CHECK(tl_chunk(t, SIZE_MAX, 0, out, &count) == TL_OK && count == 3);
    for (size_t i = 0; i < count; i++) {
        CHECK(tl_shape(out[i])[0] == 1);
        tl_release(out[i]);
    }
    tl_release(t);
}

/* float -> i64 saturates to INT64_MAX / INT64_MIN exactly; NaN gives 0. */
static void float_to_i64(void)
{
    const double in[] = {1e19, 0x1p63, 0x1p63 - 1024, -1e19, -0x1p63, NAN, INFINITY, -INFINITY,
                         -2.9, 2.9};
    const int64_t want[] = {INT64_MAX, INT64_MAX, INT64_MAX - 1023, INT64_MIN, INT64_MIN, 0,
                            INT64_MAX, INT64_MIN, -2, 2};
    const size_t n = sizeof in / sizeof in[0];
    tl_dtype srcs[] = {TL_F64, TL_F32};
    for (size_t s = 0; s < 2; s++) {
        tl_tensor *f = tl_from_data(in, &n, 1, TL_F64, TL_CPU);
        tl_tensor *g = tl_to_dtype(f, srcs[s]);
        tl_tensor *i = tl_to_dtype(g, TL_I64);
        int64_t got[10] = {0};
        CHECK(i && tl_to_vec(i, got, sizeof got) == TL_OK);
        for (size_t k = 0; k < n; k++) {
            /* f32 cannot hold 2^63 - 1024: it reads 2^63 */
            int64_t w = srcs[s] == TL_F32 && k == 2 ? INT64_MAX : want[k];
            CHECKF(got[k] == w, "%s %g -> %lld, want %lld", tl_dtype_name(srcs[s]), in[k],
                   (long long)got[k], (long long)w);
        }
        tl_release(f);
        tl_release(g);
        tl_release(i);
    }
    EXPECT_FMT(tl_full(1e300, SHAPE(2), TL_I64, TL_CPU),
               "[9223372036854775807, 9223372036854775807]");
    EXPECT_FMT(tl_full(-1e300, SCALAR, TL_I64, TL_CPU), "-9223372036854775808");
    EXPECT_FMT(tl_full(NAN, SCALAR, TL_I64, TL_CPU), "0");
    tl_tensor *t = tl_zeros(SHAPE(2), TL_I64, TL_CPU);
    CHECK(tl_const_set(t, 0x1p70) == TL_OK);
    EXPECT_FMT(tl_retain(t), "[9223372036854775807, 9223372036854775807]");
    CHECK(tl_const_set(t, -0x1p63) == TL_OK);
    EXPECT_FMT(t, "[-9223372036854775808, -9223372036854775808]");
    /* u8/u32 saturate too */
    tl_tensor *u = MAKE(TL_F64, SHAPE(5), 300.7, -1, NAN, 254.9, 1e10);
    tl_tensor *w = MAKE(TL_F64, SHAPE(3), 5e9, -1, 4294967295.5);
    EXPECT_FMT(tl_to_dtype(u, TL_U8), "[255, 0, 0, 254, 255]");
    EXPECT_FMT(tl_to_dtype(w, TL_U32), "[4294967295, 0, 4294967295]");
    RELEASE(u, w);
}

/* Large i64 -> f32/bf16/f16 rounds once (to nearest even), not through a double first. */
static void i64_to_float(void)
{
    const int64_t in[] = {
        ((int64_t)1 << 60) + ((int64_t)1 << 52) + 1, /* just above a bf16 tie: rounds up */
        ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, /* just above an f32 tie: rounds up */
        -(((int64_t)1 << 60) + ((int64_t)1 << 36) + 1),
        INT64_MAX, INT64_MIN,
    };
    tl_tensor *t = tl_from_data(in, SHAPE(5), TL_I64, TL_CPU);
    tl_tensor *bf = tl_to_dtype(t, TL_BF16), *f = tl_to_dtype(t, TL_F32);
    tl_tensor *bf64 = tl_to_dtype(bf, TL_F64), *f64 = tl_to_dtype(f, TL_F64);
    double gb[5], gf[5];
    CHECK(tl_to_vec(bf64, gb, sizeof gb) == TL_OK && tl_to_vec(f64, gf, sizeof gf) == TL_OK);
    CHECKF(gb[0] == 0x1p60 + 0x1p53, "bf16 %.17g", gb[0]);
    CHECKF(gf[1] == 0x1p60 + 0x1p37, "f32 %.17g", gf[1]);
    CHECKF(gf[2] == -(0x1p60 + 0x1p37), "f32 %.17g", gf[2]);
    CHECK(gf[3] == 0x1p63 && gf[4] == -0x1p63 && gb[3] == 0x1p63);
    tl_release(t);
    tl_release(bf);
    tl_release(f);
    tl_release(bf64);
    tl_release(f64);
}

/* u8/u32 index_add, scatter_add, scatter_add_set: 250 + 10 + 1 wraps to 5. */
static void index_adds_wrap(void)
{
    const uint8_t xv[] = {250, 3}, sv[] = {10, 1}, idv[] = {0, 0};
    tl_tensor *x = tl_from_data(xv, SHAPE(2), TL_U8, TL_CPU);
    tl_tensor *src = tl_from_data(sv, SHAPE(2), TL_U8, TL_CPU);
    tl_tensor *ids = tl_from_data(idv, SHAPE(2), TL_U8, TL_CPU);
    EXPECT_FMT(tl_index_add(x, ids, src, 0), "[5, 3]");
    EXPECT_FMT(tl_scatter_add(x, ids, src, 0), "[5, 3]");
    CHECK(tl_scatter_add_set(x, ids, src, 0) == TL_OK);
    EXPECT_FMT(tl_retain(x), "[5, 3]");
    tl_release(x);
    tl_release(src);
    tl_release(ids);

    const uint32_t xu[] = {4000000000u, 0}, su[] = {300000000u, 300000000u};
    tl_tensor *xw = tl_from_data(xu, SHAPE(2), TL_U32, TL_CPU);
    tl_tensor *sw = tl_from_data(su, SHAPE(2), TL_U32, TL_CPU);
    tl_tensor *iw = tl_from_data((const uint32_t[]){0, 1}, SHAPE(2), TL_U32, TL_CPU);
    EXPECT_FMT(tl_index_add(xw, iw, sw, 0), "[5032704, 300000000]");
    EXPECT_FMT(tl_scatter_add(xw, iw, sw, 0), "[5032704, 300000000]");
    CHECK(tl_scatter_add_set(xw, iw, sw, 0) == TL_OK);
    EXPECT_FMT(tl_retain(xw), "[5032704, 300000000]");
    tl_release(xw);
    tl_release(sw);
    tl_release(iw);

    /* i64 wraps in int64 (the rule's "wrapping there") */
    const int64_t xl[] = {INT64_MAX}, sl[] = {1}, il[] = {0};
    tl_tensor *a = tl_from_data(xl, SHAPE(1), TL_I64, TL_CPU);
    tl_tensor *b = tl_from_data(sl, SHAPE(1), TL_I64, TL_CPU);
    tl_tensor *c = tl_from_data(il, SHAPE(1), TL_I64, TL_CPU);
    EXPECT_FMT(tl_index_add(a, c, b, 0), "[-9223372036854775808]");
    tl_release(a);
    tl_release(b);
    tl_release(c);
}

static void matmul_wraps(void)
{
    const uint8_t av[] = {250, 250, 2, 3}, bv[] = {1, 1, 1, 1};
    tl_tensor *a = tl_from_data(av, SHAPE(2, 2), TL_U8, TL_CPU);
    tl_tensor *b = tl_from_data(bv, SHAPE(2, 2), TL_U8, TL_CPU);
    EXPECT_FMT(tl_matmul(a, b), "[[244, 244], [5, 5]]");
    tl_release(a);
    tl_release(b);
    const uint32_t au[] = {4000000000u, 4000000000u}, bu[] = {1, 1};
    tl_tensor *c = tl_from_data(au, SHAPE(1, 2), TL_U32, TL_CPU);
    tl_tensor *d = tl_from_data(bu, SHAPE(2, 1), TL_U32, TL_CPU);
    EXPECT_FMT(tl_matmul(c, d), "[[3705032704]]");
    tl_release(c);
    tl_release(d);
    const int64_t al[] = {(int64_t)1 << 53, 1}, bl[] = {1, 1};
    tl_tensor *e = tl_from_data(al, SHAPE(1, 2), TL_I64, TL_CPU);
    tl_tensor *f = tl_from_data(bl, SHAPE(2, 1), TL_I64, TL_CPU);
    EXPECT_FMT(tl_matmul(e, f), "[[9007199254740993]]"); /* exact past 2^53 */
    tl_release(e);
    tl_release(f);
}

/* The rest of the integer rule, op by op. */
static void integer_rules(void)
{
    tl_tensor *u = MAKE(TL_U8, SHAPE(3), 250, 5, 20), *v = MAKE(TL_U8, SHAPE(3), 10, 10, 0);
    EXPECT_FMT(tl_add(u, v), "[4, 15, 20]");
    EXPECT_FMT(tl_sub(u, v), "[240, 251, 20]");
    EXPECT_FMT(tl_mul(u, v), "[196, 50, 0]");
    EXPECT_FAIL(tl_div(u, v), TL_ERR_RANGE, "division by zero");
    EXPECT_FMT(tl_unary(TL_NEG, u), "[6, 251, 236]");
    EXPECT_FMT(tl_unary(TL_SQR, u), "[36, 25, 144]");
    /* affine is candle's map in the dtype: mul and add become u8 first (`as`: -100 is 0, 0.5
     * is 0), then x * mul + add wraps: 250 * 2 = 500 is 244 */
    EXPECT_FMT(tl_affine(u, 2, -100), "[244, 10, 40]");
    EXPECT_FMT(tl_affine(u, 0.5, 0), "[0, 0, 0]");
    EXPECT_FMT(tl_reduce(TL_SUM, u, NULL, 0, false), "19");
    EXPECT_FMT(tl_reduce(TL_MEAN, u, NULL, 0, false), "91"); /* from the int64 sum 275 */
    tl_release(u);
    tl_release(v);
    /* i64 is exact past 2^53, where a double would round */
    const int64_t big[] = {((int64_t)1 << 53) + 1, INT64_MIN};
    tl_tensor *b = tl_from_data(big, SHAPE(2), TL_I64, TL_CPU);
    EXPECT_FMT(tl_clamp(b, 0, 0x1p62), "[9007199254740993, 0]");
    /* bounds past the dtype or not integral saturate and truncate into it first (candle's
     * `as`), so they never cost the values their exactness (numpy's clip agrees) */
    EXPECT_FMT(tl_clamp(b, -1e300, 1e300), "[9007199254740993, -9223372036854775808]");
    EXPECT_FMT(tl_clamp(b, -0.5, 0x1p63), "[9007199254740993, 0]");
    EXPECT_FMT(tl_affine(b, 1, 2), "[9007199254740995, -9223372036854775806]");
    /* x * mul past int64 wraps, as candle's i64 `v * mul + add` does in a release build:
     * 2 * -(2^62 + 3) + 100 is -2^63 - 6 + 100 + 2^64 */
    const int64_t edge[] = {-(((int64_t)1 << 62) + 3), ((int64_t)1 << 62) + 3};
    tl_tensor *e = tl_from_data(edge, SHAPE(2), TL_I64, TL_CPU);
    EXPECT_FMT(tl_affine(e, 2, 100), "[-9223372036854775714, -9223372036854775702]");
    EXPECT_FMT(tl_affine(e, 2, -100), "[9223372036854775702, 9223372036854775714]");
    EXPECT_FMT(tl_affine(e, -2, 100), "[-9223372036854775702, -9223372036854775714]");
    tl_release(e);
    EXPECT_FMT(tl_unary(TL_ABS, b), "[9007199254740993, -9223372036854775808]");
    const int64_t m1[] = {-1, -1};
    tl_tensor *neg = tl_from_data(m1, SHAPE(2), TL_I64, TL_CPU);
    EXPECT_FMT(tl_div(b, neg), "[-9007199254740993, -9223372036854775808]");
    EXPECT_FMT(tl_to_dtype(b, TL_U32), "[1, 0]"); /* the low bits, as Rust's `as` */
    EXPECT_FMT(tl_to_dtype(b, TL_U8), "[1, 0]");
    tl_release(b);
    tl_release(neg);
}

/* Uniform values rounded to f16/bf16 stay in [lo, hi), also where the range holds one value. */
static void rand_half_range(void)
{
    enum { N = 1 << 16 };
    static double got[N];
    tl_dtype dts[] = {TL_F16, TL_BF16, TL_F32};
    for (size_t d = 0; d < 3; d++) {
        tl_tensor *r = tl_rand(0, 1, SHAPE(N), dts[d], TL_CPU, 7);
        tl_tensor *r64 = tl_to_dtype(r, TL_F64);
        size_t bad = 0;
        CHECK(r64 && tl_to_vec(r64, got, sizeof got) == TL_OK);
        for (size_t i = 0; i < N; i++)
            bad += !(got[i] >= 0 && got[i] < 1);
        CHECKF(bad == 0, "%s: %zu values outside [0, 1)", tl_dtype_name(dts[d]), bad);
        tl_release(r);
        tl_release(r64);
    }
    /* [0.9995, 0.99999) holds only 1 - 2^-11 in f16 */
    tl_tensor *r = tl_rand(0.9995, 0.99999, SHAPE(64), TL_F16, TL_CPU, 3);
    tl_tensor *r64 = tl_to_dtype(r, TL_F64);
    size_t bad = 0;
    CHECK(r64 && tl_to_vec(r64, got, 64 * sizeof got[0]) == TL_OK);
    for (size_t i = 0; i < 64; i++)
        bad += got[i] != 1 - 0x1p-11;
    CHECK(bad == 0);
    tl_release(r);
    tl_release(r64);
    EXPECT_FAIL(tl_rand(1.0001, 1.0002, SHAPE(2), TL_F16, TL_CPU, 1), TL_ERR_ARG, "no f16 value");
    EXPECT_FAIL(tl_rand(0, INFINITY, SHAPE(2), TL_F32, TL_CPU, 1), TL_ERR_ARG, "finite");
    /* the widest finite range does not overflow into NaN */
    r = tl_rand(-1e308, 1e308, SHAPE(64), TL_F64, TL_CPU, 5);
    CHECK(r && tl_to_vec(r, got, 64 * sizeof got[0]) == TL_OK);
    for (size_t i = 0; r && i < 64; i++)
        CHECK(isfinite(got[i]));
    tl_release(r);
}

/* i16 and i32 keep the same rules: int64, wrapped when stored, Rust's `as` from floats (which
 * saturates); they serve as indexes and conditions, and every integer op takes them. */
static void small_ints(void)
{
    tl_dtype dts[] = {TL_I16, TL_I32};
    const char *maxs[] = {"32767", "2147483647"}, *mins[] = {"-32768", "-2147483648"};
    for (size_t k = 0; k < 2; k++) {
        tl_dtype dt = dts[k];
        char want[128];
        CHECK(tl_dtype_size(dt) == 2 * (k + 1) && !strcmp(tl_dtype_name(dt), k ? "i32" : "i16"));
        tl_tensor *f = MAKE(TL_F64, SHAPE(5), 1e12, -1e12, NAN, -7.9, 7.9);
        snprintf(want, sizeof want, "[%s, %s, 0, -7, 7]", maxs[k], mins[k]);
        EXPECT_FMT(tl_to_dtype(f, dt), want);
        const int64_t big[] = {INT64_MAX, INT64_MIN, 5};
        tl_tensor *b = tl_from_data(big, SHAPE(3), TL_I64, TL_CPU);
        EXPECT_FMT(tl_to_dtype(b, dt), "[-1, 0, 5]"); /* the low bits */
        tl_tensor *x = tl_to_dtype(b, dt), *y = tl_full(k ? 2e9 : 30000, SHAPE(3), dt, TL_CPU);
        EXPECT_FMT(tl_add(x, y), k ? "[1999999999, 2000000000, 2000000005]"
                                   : "[29999, 30000, 30005]");
        EXPECT_FMT(tl_add(y, y), k ? "[-294967296, -294967296, -294967296]"
                                   : "[-5536, -5536, -5536]");
        const char *sum = k ? "1705032704" : "24464"; /* 3 * y wrapped */
        EXPECT_FMT(tl_reduce(TL_SUM, y, NULL, 0, false), sum);
        tl_tensor *m = tl_reshape(y, SHAPE(1, 3)), *mt = tl_ones(SHAPE(3, 1), dt, TL_CPU);
        snprintf(want, sizeof want, "[[%s]]", sum);
        EXPECT_FMT(tl_matmul(m, mt), want);
        EXPECT_FMT(tl_cmp(TL_GT, x, y), "[0, 0, 0]");
        RELEASE(f, b, x, y, m, mt);
    }
    /* an i32 index, an i16 condition, sort and cumsum on i32 */
    tl_tensor *a = tl_arange(10, 15, 1, TL_I32, TL_CPU);
    EXPECT_FMT(tl_retain(a), "[10, 11, 12, 13, 14]");
    const int32_t iv[] = {4, 0};
    tl_tensor *ids = tl_from_data(iv, SHAPE(2), TL_I32, TL_CPU);
    EXPECT_FMT(tl_index_select(a, ids, 0), "[14, 10]");
    const int16_t cv[] = {1, 0, -3, 0, 2};
    tl_tensor *c = tl_from_data(cv, SHAPE(5), TL_I16, TL_CPU);
    tl_tensor *z = tl_zeros(SHAPE(5), TL_I32, TL_CPU);
    EXPECT_FMT(tl_where_cond(c, a, z), "[10, 0, 12, 0, 14]");
    EXPECT_FMT(tl_arg_sort_last_dim(c, true), "[2, 1, 3, 0, 4]");
    EXPECT_FMT(tl_cumsum(c, 0), "[1, 1, -2, -2, 0]");
    const int16_t hv[] = {32000, 1000};
    tl_tensor *h = tl_from_data(hv, SHAPE(2), TL_I16, TL_CPU);
    tl_tensor *hi = tl_from_data((const uint8_t[]){0, 0}, SHAPE(2), TL_U8, TL_CPU);
    EXPECT_FMT(tl_index_add(h, hi, h, 0), "[-536, 1000]"); /* 65000 wraps */
    EXPECT_FMT(tl_to_dtype(h, TL_F16), "[32000.0, 1000.0]");
    RELEASE(a, ids, c, z, h, hi);
}

/* A variance past the dtype's range is inf, as numpy gives (f16 0..9999: 8.3e6 > 65504), not
 * the NaN of inf - inf from the rounding correction; values in range keep their variance. */
static void var_overflow(void)
{
    tl_tensor *r = tl_arange(0, 10000, 1, TL_F32, TL_CPU);
    tl_tensor *h = r ? tl_to_dtype(r, TL_F16) : NULL;
    tl_tensor *v = h ? tl_var(h, 0, false) : NULL;
    tl_tensor *v64 = v ? tl_to_dtype(v, TL_F64) : NULL;
    double got = 0;
    CHECK(v64 && tl_to_vec(v64, &got, sizeof got) == TL_OK && isinf(got) && got > 0);
    tl_release(v64);
    tl_release(v);
    tl_release(h);
    EXPECT_VALS(tl_var(r, 0, false), 1e-6, 8334166.666666667); /* numpy var(ddof=1) */
    tl_release(r);
}

/* A variance inside the dtype's range whose squared deviations are not: 99 zeros and one v
 * have mean v / 100 and squared deviations summing to 99 v^2 / 100, so the unbiased variance
 * is v^2 / 100. f16 squared 594 to inf, f32 and bf16 squared 2e19 to inf: var was inf for
 * 3600 and 4e36 (numpy's and torch's values). */
static void var_big_deviation(tl_dtype dt, double v, double want, double tol)
{
    double x[100] = {0};
    x[99] = v;
    tl_tensor *t = tt_make(dt, x, SHAPE(100));
    EXPECT_VALS(tl_var(t, 0, false), tol, want);
    /* the same down the column of a [100, 1] view, and a neighbour of ordinary size */
    tl_tensor *col = tl_unsqueeze(t, 1);
    EXPECT_VALS(tl_var(col, 0, true), tol, want);
    tl_tensor *small = MAKE(dt, SHAPE(4), 1, 2, 3, 4);
    EXPECT_VALS(tl_var(small, 0, false), tol, 5.0 / 3);
    RELEASE(t, col, small);
}

/* cumprod is the running product in numpy's order: a block product that overflows (1e20 *
 * 1e20 in f32) or underflows must not meet a 0 or an inf of the prefix (NaN). */
static void cumprod_blocks(void)
{
    tl_tensor *zero = MAKE(TL_F32, SHAPE(4), 0, 1e20, 1e20, 1e20);
    tl_tensor *inf = MAKE(TL_F32, SHAPE(3), INFINITY, 1e-30, 1e-30);
    EXPECT_FMT(tl_cumprod(zero, 0), "[0.0, 0.0, 0.0, 0.0]");
    EXPECT_FMT(tl_cumprod(inf, 0), "[inf, inf, inf]");
    tl_release(inf);
    tl_release(zero);
}

/* elu is candle's: x when its sign is positive, else alpha (e^x - 1), so -0 gives alpha * +0
 * (+0, and NaN for an infinite alpha), as candle's and PyTorch's; x >= 0 ? x kept -0. */
static void elu_negative_zero(void)
{
    tl_tensor *f32 = MAKE(TL_F32, SHAPE(4), -0.0, 0.0, -1e-30, -INFINITY);
    tl_tensor *f16 = MAKE(TL_F16, SHAPE(2), -0.0, 0.0);
    EXPECT_FMT(tl_elu(f32, 1), "[0.0, 0.0, -1e-30, -1.0]");
    EXPECT_FMT(tl_elu(f32, -2), "[-0.0, 0.0, 2e-30, 2.0]");
    EXPECT_FMT(tl_elu(f16, 1), "[0.0, 0.0]");
    EXPECT_FMT(tl_elu(f16, INFINITY), "[NaN, 0.0]");
    RELEASE(f32, f16);
}

/* cumsum adds one term at a time in the dtype, as numpy's cumsum in that dtype (and candle's
 * matmul by triu2 on finite values): f32 1e8 + 1 rounds back to 1e8 at every step, where a
 * tree scan added 8 ones first and reached 1e8 + 8. f16 and bf16 run in f32 and round each
 * result once, as PyTorch's float accumulator and candle's f16 matmul do: f16 2048 + 1 is
 * 2048 but + 1 + 1 is 2050 (it stayed 2048 when every step rounded to f16), bf16 256 + 1 + 1
 * is 258, and a row of 4096 f16 ones ends at 4096 (it ended at 2048), as its sum does. */
static void cumsum_sequential(void)
{
    tl_tensor *f32 = MAKE(TL_F32, SHAPE(9), 1e8, 1, 1, 1, 1, 1, 1, 1, 1);
    tl_tensor *f16 = MAKE(TL_F16, SHAPE(3), 2048, 1, 1);
    tl_tensor *bf16 = MAKE(TL_BF16, SHAPE(3), 256, 1, 1);
    tl_tensor *neg0 = MAKE(TL_F32, SHAPE(2), -0.0, -0.0);
    tl_tensor *neg0_16 = MAKE(TL_F16, SHAPE(2), -0.0, -0.0);
    EXPECT_VALS(tl_cumsum(f32, 0), 0, 1e8, 1e8, 1e8, 1e8, 1e8, 1e8, 1e8, 1e8, 1e8);
    EXPECT_FMT(tl_cumsum(f16, 0), "[2048.0, 2048.0, 2050.0]");
    EXPECT_FMT(tl_cumsum(bf16, 0), "[256.0, 256.0, 258.0]");
    EXPECT_FMT(tl_cumsum(neg0, 0), "[-0.0, -0.0]");
    EXPECT_FMT(tl_cumsum(neg0_16, 0), "[-0.0, -0.0]");
    /* 1.001 is f16 1.0009765625; its 1000th power 2.6540..., which f16 rounds to 2.654296875
     * (step by step in f16 it was 2.453125) */
    tl_tensor *grow = tl_full(1.001, SHAPE(1000), TL_F16, TL_CPU);
    tl_tensor *ones = tl_ones(SHAPE(2, 4096), TL_F16, TL_CPU);
    tl_tensor *prod = grow ? tl_cumprod(grow, 0) : NULL, *sum = ones ? tl_cumsum(ones, 1) : NULL;
    tl_tensor *last = prod ? tl_narrow(prod, 0, 999, 1) : NULL;
    EXPECT_VALS(last, 0, 2.654296875);
    last = sum ? tl_narrow(sum, 1, 4095, 1) : NULL;
    EXPECT_VALS(last, 0, 4096.0, 4096.0);
    RELEASE(bf16, neg0_16, grow, ones, prod, sum);
    /* u8 in its own dtype: 3 * 100 = 300 wraps to 44, 44 * 100 = 4400 to 48 */
    tl_tensor *u8 = MAKE(TL_U8, SHAPE(4), 3, 100, 100, 2);
    EXPECT_FMT(tl_cumprod(u8, 0), "[3, 44, 48, 96]");
    EXPECT_FMT(tl_cumsum(u8, 0), "[3, 103, 203, 205]");
    RELEASE(f32, f16, neg0, u8);
}

/* A long scan runs as one kernel (cumprod was one narrow and one mul per position: 1 s for
 * 10^5); the values at the end show every position was visited once. */
static void scan_long(void)
{
    enum { N = 100000 };
    tl_tensor *ones = tl_ones(SHAPE(N), TL_I64, TL_CPU);
    tl_tensor *sum = tl_cumsum(ones, 0), *prod = tl_cumprod(ones, 0);
    int64_t last = 0;
    tl_tensor *tail = sum ? tl_narrow(sum, 0, N - 1, 1) : NULL;
    CHECK(tail && tl_to_vec(tail, &last, sizeof last) == TL_OK && last == N);
    tl_release(tail);
    tail = prod ? tl_narrow(prod, 0, N - 1, 1) : NULL;
    CHECK(tail && tl_to_vec(tail, &last, sizeof last) == TL_OK && last == 1);
    RELEASE(tail, sum, prod, ones);
}

/* A repeat count of 0 empties its dim, as numpy's tile (it was refused; candle leaves the dim
 * whole). */
static void repeat_zero(void)
{
    tl_tensor *t = MAKE(TL_I32, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tl_tensor *r = tl_repeat(t, SHAPE(0, 2));
    CHECK(r && tl_ndim(r) == 2 && tl_shape(r)[0] == 0 && tl_shape(r)[1] == 6);
    tl_release(r);
    r = tl_repeat(t, SHAPE(2, 0, 1));
    CHECK(r && tl_ndim(r) == 3 && tl_shape(r)[0] == 2 && tl_shape(r)[1] == 0 &&
          tl_shape(r)[2] == 3);
    EXPECT_FMT(r, "[[], []]");
    EXPECT_FMT(tl_repeat(t, SHAPE(1, 2)), "[[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]]");
    tl_release(t);
}

/* Layouts as candle's Layout computes them: narrow moves the offset by start * stride also
 * for a length of 0 (it stayed put), and is_contiguous asks row-major strides only of dims of
 * 2 and more, so an empty view of a strided tensor is contiguous (it was not). */
static void candle_layouts(void)
{
    tl_tensor *x = tl_zeros(SHAPE(5, 4), TL_F32, TL_CPU);
    tl_tensor *none = tl_narrow(x, 0, 3, 0);
    CHECK(none && tl_offset(none) == 12 && tl_is_contiguous(none));
    tl_tensor *cols = tl_narrow(x, 1, 1, 3); /* strides [4, 1], not contiguous */
    tl_tensor *empty = cols ? tl_narrow(cols, 0, 2, 0) : NULL; /* [0, 3], strides [4, 1] */
    CHECK(cols && !tl_is_contiguous(cols));
    CHECK(empty && tl_offset(empty) == 9 && tl_is_contiguous(empty));
    tl_tensor *col = tl_narrow(x, 1, 2, 1), *flat = col ? tl_squeeze(col, 1) : NULL; /* [5], stride 4 */
    tl_tensor *flat0 = flat ? tl_narrow(flat, 0, 5, 0) : NULL;
    CHECK(flat && !tl_is_contiguous(flat) && flat0 && tl_is_contiguous(flat0));
    CHECK(flat0 && tl_offset(flat0) == 22);
    RELEASE(x, none, cols, empty, col, flat, flat0);
}

/* Where candle returns the tensor itself (its clone, so the result shares the storage and a
 * guarded in-place op between the two is refused): get of a 0-d tensor (any index), flatten
 * with start >= end, cat and stack of one tensor, pads of 0 and 0. Each made a copy or
 * failed before. */
static void candle_clones(void)
{
    tl_tensor *s = MAKE(TL_F32, SCALAR, 7);
    tl_tensor *m = MAKE(TL_I32, SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *mt = tl_t(m);
    const tl_tensor *one[1] = {mt};
    tl_tensor *got[7] = {tl_get(s, 0), tl_get(s, 5), tl_flatten(mt, 1, 0), tl_flatten(mt, 1, 1),
                         tl_cat(one, 1, 1), tl_pad_with_zeros(mt, 0, 0, 0),
                         tl_pad_with_same(mt, 1, 0, 0)};
    const tl_tensor *want[7] = {s, s, mt, mt, mt, mt, mt};
    for (int i = 0; i < 7; i++)
        CHECK(got[i] == want[i]);
    tl_tensor *st = tl_stack(one, 1, 0);
    CHECK(st && tl_shares_storage(st, m) && tl_ndim(st) == 3 && tl_shape(st)[0] == 1);
    EXPECT_FMT(st, "[[[1, 4], [2, 5], [3, 6]]]");
    CHECK(tl_slice_set(got[4], m, 0, 0) == TL_ERR_SHARED_STORAGE);
    for (int i = 0; i < 7; i++)
        tl_release(got[i]);
    RELEASE(s, m, mt);
}

/* clamp with a NaN bound, as candle's maximum/minimum take it: no bound on a float tensor (it
 * failed), 0 on an integer one (NaN as an integer). */
static void clamp_nan_bound(void)
{
    tl_tensor *f = MAKE(TL_F32, SHAPE(4), -3, 0.5, 9, NAN);
    tl_tensor *i = MAKE(TL_I32, SHAPE(3), -3, 1, 9);
    EXPECT_FMT(tl_clamp(f, NAN, 1), "[-3.0, 0.5, 1.0, NaN]");
    EXPECT_FMT(tl_clamp(f, 0, NAN), "[0.0, 0.5, 9.0, NaN]");
    EXPECT_FMT(tl_clamp(i, NAN, 5), "[0, 1, 5]");
    EXPECT_FMT(tl_clamp(i, -1, NAN), "[-1, 0, 0]");
    RELEASE(f, i);
}

/* clamp's bounds become the tensor's dtype first (candle's to_dtype before its maximum and
 * minimum): 1e-30 is f16's +0 (bf16 holds 1e-30: 1e-45 for it), which does not
 * replace an x of -0 (-0 < +0 is false), and -1e-30 a -0 that does not replace +0. Before,
 * f16 and bf16 compared with the bound itself and gave +0 and -0 (f32 rounded it already). */
static void clamp_rounded_bound(void)
{
    const tl_dtype dts[] = {TL_F16, TL_BF16, TL_F32};
    const double tiny[] = {1e-30, 1e-45, 1e-60};
    for (size_t k = 0; k < 3; k++) {
        tl_tensor *x = MAKE(dts[k], SHAPE(3), -0.0, 0.0, 2);
        EXPECT_FMT(tl_clamp(x, tiny[k], 1), "[-0.0, 0.0, 1.0]");
        EXPECT_FMT(tl_clamp(x, -1, -tiny[k]), "[-0.0, 0.0, -0.0]");
        EXPECT_FMT(tl_clamp(x, tiny[k], tiny[k]), "[-0.0, 0.0, 0.0]");
        tl_release(x);
    }
}

/* log_sum_exp over more terms near the maximum than f16 holds (70000 zeros: the shifted exps
 * sum to 70000 > 65504) is log(70000) = 11.156 (numpy: np.log(70000), f16 11.156), a value
 * every half dtype holds: within an ulp of the dtype (2^-7 for f16, 2^-4 for bf16 at 11). */
static void log_sum_exp_wide_half(void)
{
    const tl_dtype dts[] = {TL_F16, TL_BF16};
    for (size_t k = 0; k < 2; k++) {
        tl_tensor *z = tl_zeros(SHAPE(1), dts[k], TL_CPU), *wide = NULL, *r = NULL, *w = NULL;
        size_t n = 70000;
        double got = NAN, ulp = dts[k] == TL_F16 ? 0x1p-7 : 0x1p-4;
        if (z && (wide = tl_broadcast_as(z, &n, 1)) &&
            (r = tl_log_sum_exp(wide, NULL, 0, false)) && (w = tl_to_dtype(r, TL_F64)))
            CHECK(tl_to_vec(w, &got, sizeof got) == TL_OK);
        CHECKF(fabs(got - log(70000.0)) <= ulp, "%s log_sum_exp of 70000 zeros: %g",
               tl_dtype_name(dts[k]), got);
        RELEASE(z, wide, r, w);
    }
}

/* pow on f16 is candle's exp(b * log(a)), rounded to f16 once: numpy's np.power of these
 * f16 pairs is [1024, 243, 10000, 0.0002441, 343], each exact in f16 (rounding log(a), then
 * b * log(a), to f16 on the way gave 1026, 242.75, 10008, 0.0002435, 343.75). */
static void pow_rounds_once(void)
{
    tl_tensor *a = MAKE(TL_F16, SHAPE(5), 2, 3, 10, 0.5, 7);
    tl_tensor *b = MAKE(TL_F16, SHAPE(5), 10, 5, 4, 12, 3);
    EXPECT_FMT(tl_pow(a, b), "[1024.0, 243.0, 10000.0, 0.0002441, 343.0]");
    RELEASE(a, b);
    /* f32 on the cpu likewise (numpy: 3325.2568, 243.0, 1.5943239e-07; the f32 composite
     * carried log's rounding times |b log a|: 3325.255, 243.00003, 1.5943228e-7) */
    a = MAKE(TL_F32, SHAPE(3), 1.5, 3, 0.3);
    b = MAKE(TL_F32, SHAPE(3), 20, 5, 13);
    EXPECT_FMT(tl_pow(a, b), "[3325.2568, 243.0, 1.5943239e-7]");
    RELEASE(a, b);
}

/* f64 pow is libm's, correctly rounded here: the composite exp(b * log(a)) was up to 512 ulps
 * off where |b log a| is large (0.999 ^ -5e5, 2.5 ^ 300). The wants are the exact powers
 * (80 digits) rounded once, as glibc's pow gives them; numpy's np.power agrees with each within
 * an ulp (its AVX-512 loop is 1 ulp below on #1 and #6). candle's domain stays: a < 0 and
 * 0 ^ 0 give NaN, 0 ^ -1 inf. */
static void pow_f64_libm(void)
{
    static const double want[] = {0x1.9fa8372200000p+11, 0x1.5bf0a790ce6f2p+1,
                                  0x1.7e43c8800759cp+396, 0x1.a24fd12ab6c46p+721,
                                  0x1.52a7fa9d2f8eap+1, 0x1.0e7c9eebc4401p-897,
                                  0x1.2c3fe31a13ba2p-952};
    tl_tensor *a = MAKE(TL_F64, SHAPE(11), 1.5, 1.0000001, 2.5, 0.999, 7, 1e-300, 3, -2, 0, 0, 0);
    tl_tensor *b = MAKE(TL_F64, SHAPE(11), 20, 1e7, 300, -5e5, 0.5, 0.9, -600.5, 2, 2, -1, 0);
    tl_tensor *p = tl_pow(a, b);
    double got[11] = {0};
    CHECK(p && tl_to_vec(p, got, sizeof got) == TL_OK);
    for (size_t i = 0; i < 7; i++)
        CHECKF(memcmp(&got[i], &want[i], sizeof got[i]) == 0, "pow #%zu: %a, want %a", i, got[i],
               want[i]);
    CHECK(isnan(got[7]) && got[8] == 0 && isinf(got[9]) && got[9] > 0 && isnan(got[10]));
    RELEASE(a, b, p);
}

/* argmax/argmin return u32, as candle's: over a dim of more than 2^32 elements (a broadcast
 * view here) the index would wrap (2^32 + 1 elements whose last is the largest gave 0), so
 * the call fails; the index of the last of 2^32 elements, 2^32 - 1, still fits. */
static void arg_index_range(void)
{
    size_t big = ((size_t)1 << 32) + 1;
    tl_tensor *one = tl_ones(SHAPE(1), TL_F32, TL_CPU);
    tl_tensor *wide = tl_broadcast_as(one, SHAPE(big));
    tl_tensor *rows = tl_broadcast_as(one, SHAPE(2, big));
    EXPECT_FAIL(tl_reduce(TL_ARGMAX, wide, SHAPE(0), false), TL_ERR_RANGE,
                "argmax: dim 0 of f32[4294967297]");
    EXPECT_FAIL(tl_reduce(TL_ARGMIN, rows, SHAPE(1), true), TL_ERR_RANGE,
                "more than a u32 index reaches");
    tl_tensor *m = MAKE(TL_F32, SHAPE(2, 3), 1, 7, 3, 9, 2, 8);
    EXPECT_VALS(tl_reduce(TL_ARGMAX, m, SHAPE(1), false), 0, 1, 0);
    EXPECT_VALS(tl_reduce(TL_ARGMIN, m, SHAPE(0), false), 0, 0, 1, 0);
    RELEASE(one, wide, rows, m);
}

/* rms_norm and layer_norm of rows whose squares pass f32's range: normalised in f64, they
 * are finite (torch's too); in f32 the sum of squares was inf and every element 0 (or beta).
 * [3e38, -3e38] has mean 0 and root mean square 3e38; [1e20, 1] has root mean square
 * 1e20 / sqrt 2 and mean (1e20 + 1) / 2. */
static void nn_norm_big(tl_dtype dt)
{
    tl_tensor *x = MAKE(dt, SHAPE(2, 2), 3e38, -3e38, 1e20, 1);
    tl_tensor *alpha = MAKE(dt, SHAPE(2), 2, 3), *beta = MAKE(dt, SHAPE(2), 0.5, 0.5);
    double r = sqrt(2.0), tol = dt == TL_F32 ? 1e-6 : 1e-2;
    EXPECT_VALS(tl_rms_norm(x, alpha, 1e-5), tol, 2, -3, 2 * r, 3 * r * 1e-20);
    EXPECT_VALS(tl_layer_norm(x, alpha, beta, 1e-5), tol, 2.5, -2.5, 2.5, -2.5);
    /* the transposed view: the same rows read down the columns */
    tl_tensor *xt = tl_t(x), *xtt = xt ? tl_contiguous(xt) : NULL, *back = xtt ? tl_t(xtt) : NULL;
    EXPECT_VALS(tl_rms_norm(back, alpha, 1e-5), tol, 2, -3, 2 * r, 3 * r * 1e-20);
    /* a row of ordinary values is unchanged: [1, 3] normalises to [1, 3] / sqrt 5, [-1, 1] */
    tl_tensor *y = MAKE(dt, SHAPE(1, 2), 1, 3);
    EXPECT_VALS(tl_rms_norm(y, alpha, 0), tol, 2 / sqrt(5.0), 9 / sqrt(5.0));
    EXPECT_VALS(tl_layer_norm(y, alpha, beta, 0), tol, -1.5, 3.5);
    RELEASE(x, alpha, beta, xt, xtt, back, y);
}

int main(void)
{
    reshape_overflow();
    conv_padding_overflow();
    cat_overflow();
    to_vec_overflow();
    chunk_huge_n();
    float_to_i64();
    i64_to_float();
    index_adds_wrap();
    matmul_wraps();
    integer_rules();
    rand_half_range();
    small_ints();
    var_overflow();
    cumprod_blocks();
    elu_negative_zero();
    cumsum_sequential();
    scan_long();
    repeat_zero();
    candle_layouts();
    candle_clones();
    clamp_nan_bound();
    clamp_rounded_bound();
    log_sum_exp_wide_half();
    pow_rounds_once();
    pow_f64_libm();
    arg_index_range();
    nn_norm_big(TL_F32);
    nn_norm_big(TL_BF16);
    var_big_deviation(TL_F16, 600, 3600, 1e-3);
    var_big_deviation(TL_F32, 2e19, 4e36, 1e-6);
    var_big_deviation(TL_BF16, 2e19, 4e36, 1e-2);
    return check_summary();
}
