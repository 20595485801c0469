/*
 * test_dtypes.c - the half-precision conversions, exhaustively where it is cheap: every f16
 * and every bf16 bit pattern survives a trip through f32 and f64 (NaN stays NaN), and f32 ->
 * f16/bf16 rounds to nearest even at the edges (ties, subnormals, overflow).
 */
#include <stdint.h>

#include "tl_test.h"

/* Every 16-bit pattern as dtype, to wide and back: the bits must come back (NaN as NaN). */
static void roundtrip_all(tl_dtype half, tl_dtype wide)
{
    static uint16_t bits[65536], back[65536];
    for (uint32_t i = 0; i < 65536; i++)
        bits[i] = (uint16_t)i;
    tl_tensor *h = tl_from_data(bits, SHAPE(65536), half, TL_CPU);
    tl_tensor *w = tl_to_dtype(h, wide);
    tl_tensor *h2 = tl_to_dtype(w, half);
    tl_tensor *nan = tl_cmp(TL_NE, h, h); /* 1 where NaN */
    static uint8_t isnan_[65536];
    if (!CHECK(h2 && nan && tl_to_vec(h2, back, sizeof back) == TL_OK &&
               tl_to_vec(nan, isnan_, sizeof isnan_) == TL_OK))
        goto out;
    size_t bad = 0, nans = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        nans += isnan_[i];
        if (!isnan_[i] && back[i] != bits[i] && bad++ == 0)
            printf("    %s 0x%04x came back as 0x%04x via %s\n", tl_dtype_name(half), i, back[i],
                   tl_dtype_name(wide));
    }
    CHECKF(bad == 0, "%zu patterns changed", bad);
    /* f16: exponent all ones and a nonzero mantissa; bf16 likewise with 7 mantissa bits */
    CHECK(nans == (half == TL_F16 ? 2 * 1023 : 2 * 127));
out:
    tl_release(nan);
    tl_release(h2);
    tl_release(w);
    tl_release(h);
}

static void rounding_edges(void)
{
    const float in[] = {
        65504.0f,            /* largest f16 */
        65519.99f,           /* still rounds down to it */
        65520.0f,            /* the tie above rounds to even: infinity */
        0x1p-24f,            /* least subnormal */
        0x1p-25f,            /* tie between 0 and 2^-24: even is 0 */
        0x1.8p-24f,          /* tie between 2^-24 and 2^-23: even is 2^-23 */
        1.0f + 0x1p-11f,     /* tie between 1 and 1 + 2^-10: even is 1 */
        1.0f + 0x1.8p-10f,   /* tie between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9 */
        -0.0f,
        0x1.ff8p-15f,        /* largest subnormal, 1023 * 2^-24 */
        0x1.ffcp-15f,        /* tie with the least normal 2^-14, which is even */
    };
    const uint16_t want[] = {0x7bff, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002,
                             0x3c00, 0x3c02, 0x8000, 0x03ff, 0x0400};
    uint16_t got[11];
    tl_tensor *f = tl_from_data(in, SHAPE(11), TL_F32, TL_CPU);
    tl_tensor *h = tl_to_dtype(f, TL_F16);
    if (CHECK(h && tl_to_vec(h, got, sizeof got) == TL_OK))
        for (int i = 0; i < 11; i++)
            CHECKF(got[i] == want[i], "f16 of %a: 0x%04x, want 0x%04x", in[i], got[i], want[i]);
    tl_release(h);
    tl_release(f);

    const float bin[] = {1.0f + 0x1p-8f, 1.0f + 0x1.8p-7f, 3.4e38f, -1.0f / 3};
    const uint16_t bwant[] = {0x3f80, 0x3f82, 0x7f80, 0xbeab};
    uint16_t bgot[4];
    tl_tensor *fb = tl_from_data(bin, SHAPE(4), TL_F32, TL_CPU);
    tl_tensor *b = tl_to_dtype(fb, TL_BF16);
    if (CHECK(b && tl_to_vec(b, bgot, sizeof bgot) == TL_OK))
        for (int i = 0; i < 4; i++)
            CHECKF(bgot[i] == bwant[i], "bf16 of %a: 0x%04x, want 0x%04x", bin[i], bgot[i],
                   bwant[i]);
    tl_release(b);
    tl_release(fb);
}

/* f64 -> half in one rounding: a value just above a tie must not become the tie on the way
 * through f32 and then round to even. */
static void no_double_rounding(void)
{
    const double in[] = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11 - 0x1p-40, 1 + 0x1p-8 + 0x1p-40};
    const tl_dtype to[] = {TL_F16, TL_F16, TL_BF16};
    const uint16_t want[] = {0x3c01, 0x3c00, 0x3f81};
    for (int i = 0; i < 3; i++) {
        uint16_t got = 0;
        tl_tensor *d = tl_from_data(&in[i], SHAPE(1), TL_F64, TL_CPU);
        tl_tensor *h = tl_to_dtype(d, to[i]);
        CHECKF(h && tl_to_vec(h, &got, sizeof got) == TL_OK && got == want[i],
               "%s of %a: 0x%04x, want 0x%04x", tl_dtype_name(to[i]), in[i], got, want[i]);
        tl_release(h);
        tl_release(d);
    }
}

int main(void)
{
    roundtrip_all(TL_F16, TL_F32);
    roundtrip_all(TL_F16, TL_F64);
    roundtrip_all(TL_BF16, TL_F32);
    roundtrip_all(TL_BF16, TL_F64);
    rounding_edges();
    no_double_rounding();
    return check_summary();
}
