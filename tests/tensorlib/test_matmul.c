/*
 * test_matmul.c - tl_matmul against numpy (fixtures/matmul.txt) on every float dtype and on
 * contiguous, transposed (column-major, read by BLAS in place) and offset operands; integer
 * dtypes; broadcast batch operands; empty and k = 0 products; and the error paths.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static void run_variant(const fx_case *c, tl_dtype dtype, fx_variant va, fx_variant vb)
{
    char label[192];
    snprintf(label, sizeof label, "%s a=%s b=%s", c->name, fx_variant_name(va),
             fx_variant_name(vb));
    tl_tensor *a = fx_make(fx_get(c, "a"), dtype, va);
    tl_tensor *b = fx_make(fx_get(c, "b"), dtype, vb);
    tl_tensor *out = a && b ? tl_matmul(a, b) : NULL;
    CHECKF(fx_expect(out, fx_get(c, "out"), dtype, label), "%s on %s", label,
           tl_dtype_name(dtype));
    FX_RELEASE(a, b, out);
}

/* a in layout va with b in every layout; the case with small non-negative integer inputs also
 * on the integer dtypes. */
static void run_case(const fx_case *c, tl_dtype dtype, fx_variant va)
{
    static const tl_dtype ints[] = {TL_U8, TL_U32, TL_I64};
    for (int vb = 0; vb < FX_VARIANT_COUNT; vb++) {
        run_variant(c, dtype, va, vb);
        for (size_t i = 0; dtype == TL_F32 && strcmp(c->name, "mm_int") == 0 && i < 3; i++)
            run_variant(c, ints[i], va, vb);
    }
}

static tl_tensor *from_f32(const float *v, const size_t *shape, size_t ndim)
{
    return tl_from_data(v, shape, ndim, TL_F32, TL_CPU);
}

static void test_by_hand(void)
{
    const float av[] = {1, 2, 3, 4}, bv[] = {5, 6, 7, 8};
    size_t s22[] = {2, 2};
    tl_tensor *a = from_f32(av, s22, 2), *b = from_f32(bv, s22, 2);
    tl_tensor *ab = tl_matmul(a, b);
    float got[4] = {0};
    CHECK(ab && tl_to_vec(ab, got, sizeof got) == TL_OK);
    CHECK(got[0] == 19 && got[1] == 22 && got[2] == 43 && got[3] == 50);
    /* a @ a holds two read locks on one storage: fine */
    tl_tensor *aa = tl_matmul(a, a);
    CHECK(aa && tl_to_vec(aa, got, sizeof got) == TL_OK && got[0] == 7 && got[3] == 22);
    /* a batch of 3 that all reads one broadcast matrix (batch stride 0) */
    size_t s322[] = {3, 2, 2};
    tl_tensor *ba = tl_broadcast_as(a, s322, 3), *bb = tl_broadcast_as(b, s322, 3);
    tl_tensor *bab = ba && bb ? tl_matmul(ba, bb) : NULL;
    float batch[12] = {0};
    CHECK(bab && tl_to_vec(bab, batch, sizeof batch) == TL_OK);
    CHECK(batch[8] == 19 && batch[11] == 50);
    FX_RELEASE(a, b, ab, aa, ba, bb, bab);
}

/* Integer products sum in int64 and wrap into u8: 16 * 16 + 1 * 1 = 257 is 1. */
static void test_integer_wrap(void)
{
    const uint8_t av[] = {16, 1}, bv[] = {16, 1};
    size_t s12[] = {1, 2}, s21[] = {2, 1};
    tl_tensor *a = tl_from_data(av, s12, 2, TL_U8, TL_CPU);
    tl_tensor *b = tl_from_data(bv, s21, 2, TL_U8, TL_CPU);
    tl_tensor *ab = tl_matmul(a, b);
    uint8_t got = 0;
    CHECK(ab && tl_to_vec(ab, &got, 1) == TL_OK && got == 1);
    FX_RELEASE(a, b, ab);
}

static void test_empty(void)
{
    size_t s20[] = {2, 0}, s03[] = {0, 3}, s04[] = {0, 4}, s42[] = {4, 2};
    tl_tensor *a = tl_zeros(s20, 2, TL_F32, TL_CPU), *b = tl_zeros(s03, 2, TL_F32, TL_CPU);
    tl_tensor *ab = tl_matmul(a, b); /* k = 0: an empty sum, all zeros */
    float got[6] = {1, 1, 1, 1, 1, 1};
    CHECK(ab && tl_ndim(ab) == 2 && tl_shape(ab)[0] == 2 && tl_shape(ab)[1] == 3);
    CHECK(ab && tl_to_vec(ab, got, sizeof got) == TL_OK && got[0] == 0 && got[5] == 0);
    tl_tensor *c = tl_ones(s04, 2, TL_F64, TL_CPU), *d = tl_ones(s42, 2, TL_F64, TL_CPU);
    tl_tensor *cd = tl_matmul(c, d); /* m = 0 */
    CHECK(cd && tl_elem_count(cd) == 0 && tl_shape(cd)[1] == 2);
    FX_RELEASE(a, b, ab, c, d, cd);
}

static void test_errors(void)
{
    size_t s3[] = {3}, s23[] = {2, 3}, s43[] = {4, 3}, s223[] = {2, 2, 3}, s334[] = {3, 3, 4};
    tl_tensor *v = tl_zeros(s3, 1, TL_F32, TL_CPU), *m23 = tl_zeros(s23, 2, TL_F32, TL_CPU);
    tl_tensor *m43 = tl_zeros(s43, 2, TL_F32, TL_CPU), *d43 = tl_zeros(s43, 2, TL_F64, TL_CPU);
    tl_tensor *b223 = tl_zeros(s223, 3, TL_F32, TL_CPU), *b334 = tl_zeros(s334, 3, TL_F32, TL_CPU);
    FX_FAILS(tl_matmul(v, m23), TL_ERR_SHAPE,
             "matmul: needs two operands of one rank >= 2, got f32[3] @ f32[2, 3]");
    FX_FAILS(tl_matmul(m23, m43), TL_ERR_SHAPE,
             "matmul: inner dims differ (3 vs 4) in f32[2, 3] @ f32[4, 3]");
    FX_FAILS(tl_matmul(b223, b334), TL_ERR_SHAPE,
             "matmul: batch dims differ in f32[2, 2, 3] @ f32[3, 3, 4]");
    FX_FAILS(tl_matmul(m23, d43), TL_ERR_DTYPE, "matmul: dtype mismatch (f32[2, 3] and f64[4, 3])");
    FX_FAILS(tl_matmul(NULL, m23), TL_ERR_ARG, "matmul: tensor argument is NULL");
    FX_RELEASE(v, m23, m43, d43, b223, b334);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "matmul", run_case));
    test_by_hand();
    test_integer_wrap();
    test_empty();
    test_errors();
    return check_summary();
}
