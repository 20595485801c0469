/*
 * test_create.c - creation ops, dtypes, handles and reference counting.
 */
#include "tl_test.h"

static void test_constants(void)
{
    EXPECT_FMT(tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU), "[[0.0, 0.0], [0.0, 0.0]]");
    EXPECT_FMT(tl_ones(SHAPE(3), TL_I64, TL_CPU), "[1, 1, 1]");
    EXPECT_FMT(tl_full(2.5, SHAPE(2), TL_BF16, TL_CPU), "[2.5, 2.5]");
    EXPECT_FMT(tl_full(300, SHAPE(2), TL_U8, TL_CPU), "[255, 255]"); /* saturates like `as` */
    EXPECT_FMT(tl_full(-1.5, SHAPE(1), TL_U32, TL_CPU), "[0]");
    EXPECT_FMT(tl_full(7, NULL, 0, TL_F64, TL_CPU), "7.0"); /* a scalar */
    EXPECT_FMT(tl_zeros(SHAPE(0), TL_F32, TL_CPU), "[]");
    EXPECT_FMT(tl_zeros(SHAPE(2, 0), TL_F32, TL_CPU), "[[], []]");
}

/* The view t[start, start + len) of a 1-D t, which it releases. */
static tl_tensor *narrowed(tl_tensor *t, size_t start, size_t len)
{
    tl_tensor *n = t ? tl_narrow(t, 0, start, len) : NULL;
    tl_release(t);
    return n;
}

static void test_arange(void)
{
    EXPECT_FMT(tl_arange(0, 5, 1, TL_I64, TL_CPU), "[0, 1, 2, 3, 4]");
    EXPECT_FMT(tl_arange(1, 2, 0.25, TL_F32, TL_CPU), "[1.0, 1.25, 1.5, 1.75]");
    EXPECT_FMT(tl_arange(3, 0, -1, TL_F16, TL_CPU), "[3.0, 2.0, 1.0]");
    EXPECT_FMT(tl_arange(2, 2, 1, TL_U8, TL_CPU), "[]");
    EXPECT_FAIL(tl_arange(0, 1, 0, TL_F32, TL_CPU), TL_ERR_ARG, "arange");
    /* a whole start and step count in int64 and wrap into the dtype, as torch's and numpy's
     * aranges do (they were computed in double and saturated: 255 six times, 0, 0, 1, and
     * 2^53 twice) */
    EXPECT_FMT(narrowed(tl_arange(0, 300, 7, TL_U8, TL_CPU), 37, 6),
               "[3, 10, 17, 24, 31, 38]");
    EXPECT_FMT(tl_arange(-3, 3, 2, TL_U8, TL_CPU), "[253, 255, 1]");
    EXPECT_FMT(tl_arange(-3, 3, 2, TL_I16, TL_CPU), "[-3, -1, 1]");
    EXPECT_FMT(tl_arange(0x1p53, 0x1p53 + 4, 1, TL_I64, TL_CPU),
               "[9007199254740992, 9007199254740993, 9007199254740994, 9007199254740995]");
    EXPECT_FMT(tl_arange(4294967290.0, 4294967300.0, 3, TL_U32, TL_CPU),
               "[4294967290, 4294967293, 0, 3]");
    /* a fractional start or step keeps the double values, truncated (Rust's `as`) */
    EXPECT_FMT(tl_arange(0.5, 4, 1.5, TL_I32, TL_CPU), "[0, 2, 3]");
    EXPECT_FMT(tl_arange(10, -10, -7.5, TL_I64, TL_CPU), "[10, 2, -5]");
}

static void test_from_data(void)
{
    const uint8_t u8[] = {0, 7, 255};
    const uint32_t u32[] = {1, 4000000000u};
    const int64_t i64[] = {-9007199254740993LL, 42};
    const uint16_t f16[] = {0x3c00, 0xc000, 0x7c00}; /* 1, -2, inf */
    const uint16_t bf16[] = {0x3f80, 0x4049};         /* 1, 3.140625 */
    const float f32[] = {0.1f, -1e20f};
    const double f64[] = {0.1, 1e-7};
    EXPECT_FMT(tl_from_data(u8, SHAPE(3), TL_U8, TL_CPU), "[0, 7, 255]");
    EXPECT_FMT(tl_from_data(u32, SHAPE(2), TL_U32, TL_CPU), "[1, 4000000000]");
    EXPECT_FMT(tl_from_data(i64, SHAPE(2), TL_I64, TL_CPU), "[-9007199254740993, 42]");
    EXPECT_FMT(tl_from_data(f16, SHAPE(3), TL_F16, TL_CPU), "[1.0, -2.0, inf]");
    EXPECT_FMT(tl_from_data(bf16, SHAPE(2), TL_BF16, TL_CPU), "[1.0, 3.14]");
    EXPECT_FMT(tl_from_data(f32, SHAPE(2), TL_F32, TL_CPU), "[0.1, -1e20]");
    EXPECT_FMT(tl_from_data(f64, SHAPE(2), TL_F64, TL_CPU), "[0.1, 1e-7]");
    EXPECT_FAIL(tl_from_data(NULL, SHAPE(2), TL_F32, TL_CPU), TL_ERR_ARG, "from_data");
}

static void test_random(void)
{
    tl_tensor *a = tl_rand(-1, 1, SHAPE(1000), TL_F32, TL_CPU, 42);
    tl_tensor *b = tl_rand(-1, 1, SHAPE(1000), TL_F32, TL_CPU, 42);
    tl_tensor *c = tl_rand(-1, 1, SHAPE(1000), TL_F32, TL_CPU, 43);
    float va[1000], vb[1000], vc[1000];
    CHECK(tl_to_vec(a, va, sizeof va) == TL_OK && tl_to_vec(b, vb, sizeof vb) == TL_OK &&
          tl_to_vec(c, vc, sizeof vc) == TL_OK);
    CHECK(memcmp(va, vb, sizeof va) == 0);
    CHECK(memcmp(va, vc, sizeof va) != 0);
    int in_range = 1;
    for (size_t i = 0; i < 1000; i++)
        in_range &= va[i] >= -1 && va[i] < 1;
    CHECK(in_range);
    /* mean and spread of 1000 uniform values: within a few standard errors */
    EXPECT_VALS(tl_reduce(TL_MEAN, a, NULL, 0, false), 0.1, 0.0);

    tl_tensor *n = tl_randn(3, 2, SHAPE(4000), TL_F64, TL_CPU, 7);
    EXPECT_VALS(tl_reduce(TL_MEAN, n, NULL, 0, false), 0.05, 3.0);
    tl_tensor *centred = tl_affine(n, 1, -3);
    tl_tensor *sq = tl_unary(TL_SQR, centred);
    EXPECT_VALS(tl_reduce(TL_MEAN, sq, NULL, 0, false), 0.1, 4.0);
    EXPECT_FAIL(tl_rand(0, 1, SHAPE(2), TL_I64, TL_CPU, 1), TL_ERR_DTYPE, "rand");
    EXPECT_FAIL(tl_randn(0, -1, SHAPE(2), TL_F32, TL_CPU, 1), TL_ERR_ARG, "randn");
    tl_release(a);
    tl_release(b);
    tl_release(c);
    tl_release(n);
    tl_release(centred);
    tl_release(sq);
}

static void test_queries(void)
{
    tl_tensor *t = tl_zeros(SHAPE(2, 3), TL_F16, TL_CPU);
    CHECK(tl_ndim(t) == 2 && tl_shape(t)[0] == 2 && tl_shape(t)[1] == 3);
    CHECK(tl_strides(t)[0] == 3 && tl_strides(t)[1] == 1 && tl_offset(t) == 0);
    CHECK(tl_elem_count(t) == 6 && tl_dtype_of(t) == TL_F16 && tl_device_of(t) == TL_CPU);
    CHECK(tl_is_contiguous(t));
    CHECK(strcmp(tl_dtype_name(TL_BF16), "bf16") == 0 && tl_dtype_size(TL_I64) == 8);
    CHECK(strcmp(tl_device_name(TL_METAL), "metal") == 0);
    CHECK(tl_device_available(TL_CPU));
    CHECK(strcmp(tl_unary_name(TL_GELU_ERF), "gelu_erf") == 0);
    /* NULL is answered, never dereferenced */
    CHECK(tl_ndim(NULL) == 0 && tl_shape(NULL) == NULL && !tl_is_contiguous(NULL));
    CHECK(!tl_shares_storage(t, NULL));
    tl_release(NULL);
    tl_release(t);
}

static void test_refcount(void)
{
    tl_tensor *t = tl_ones(SHAPE(4), TL_F32, TL_CPU);
    tl_tensor *c = tl_clone(t);
    CHECK(c == t && tl_shares_storage(c, t));
    tl_release(c);
    tl_tensor *r = tl_retain(t);
    tl_release(r);
    tl_tensor *cp = tl_copy(t);
    CHECK(cp != t && !tl_shares_storage(cp, t));
    tl_release(t); /* the copy keeps its own storage */
    EXPECT_FMT(cp, "[1.0, 1.0, 1.0, 1.0]");
}

static void test_errors(void)
{
    EXPECT_FAIL(tl_zeros(SHAPE(2), TL_DTYPE_COUNT, TL_CPU), TL_ERR_DTYPE, "zeros: invalid dtype");
    EXPECT_FAIL(tl_zeros(SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1), TL_F32, TL_CPU), TL_ERR_SHAPE,
                "at most 8");
    EXPECT_FAIL(tl_zeros(SHAPE(SIZE_MAX / 2, 4), TL_F32, TL_CPU), TL_ERR_RANGE, "too large");
    EXPECT_FAIL(tl_zeros(NULL, 2, TL_F32, TL_CPU), TL_ERR_ARG, "shape is NULL");
    EXPECT_FAIL(tl_clone(NULL), TL_ERR_ARG, "clone");
    if (!tl_device_available(TL_METAL))
        EXPECT_FAIL(tl_zeros(SHAPE(2), TL_F32, TL_METAL), TL_ERR_DEVICE, "metal");
    EXPECT_STATUS(tl_fail(TL_ERR_BACKEND, "user %d", 7), TL_ERR_BACKEND, "user 7");
}

int main(void)
{
    test_constants();
    test_arange();
    test_from_data();
    test_random();
    test_queries();
    test_refcount();
    test_errors();
    return check_summary();
}
