/*
 * dtype.c - element types: names, sizes, f16/bf16 conversions, and loading/storing one
 * element of any dtype as a double (the generic path of the cpu kernels and of read-out).
 */
#include <math.h>
#include <string.h>

#include "tl_internal.h"

static const char *const dtype_names[] = {
    [TL_U8] = "u8", [TL_U32] = "u32", [TL_I64] = "i64", [TL_F16] = "f16",
    [TL_BF16] = "bf16", [TL_F32] = "f32", [TL_F64] = "f64", [TL_I16] = "i16", [TL_I32] = "i32",
};
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == TL_DTYPE_COUNT, "dtype name table");

static const size_t dtype_sizes[] = {
    [TL_U8] = 1, [TL_U32] = 4, [TL_I64] = 8, [TL_F16] = 2,
    [TL_BF16] = 2, [TL_F32] = 4, [TL_F64] = 8, [TL_I16] = 2, [TL_I32] = 4,
};
_Static_assert(sizeof dtype_sizes / sizeof dtype_sizes[0] == TL_DTYPE_COUNT, "dtype size table");

bool tl_dtype_valid(tl_dtype dtype)
{
    return (unsigned)dtype < TL_DTYPE_COUNT;
}

const char *tl_dtype_name(tl_dtype dtype)
{
    return tl_dtype_valid(dtype) ? dtype_names[dtype] : "invalid-dtype";
}

size_t tl_dtype_size(tl_dtype dtype)
{
    return tl_dtype_valid(dtype) ? dtype_sizes[dtype] : 0;
}

bool tl_dtype_is_float(tl_dtype dtype)
{
    return dtype == TL_F16 || dtype == TL_BF16 || dtype == TL_F32 || dtype == TL_F64;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tl_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN */
        return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tl_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f))
        return sign | 0x7e00u;
    if (a >= 65520.0f) /* rounds to infinity */
        return sign | 0x7c00u;
    if (a < 0x1p-14f) /* subnormal range: multiples of 2^-24, rounded to nearest even */
        return sign | (uint16_t)nearbyintf(a * 0x1p24f);
    uint32_t ua = f32_bits(a);
    uint32_t exp = (ua >> 23) - 112;
    uint32_t man = ua & 0x7fffffu;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the correct rounding */
    return sign | (uint16_t)h;
}

/* v as f32 rounded to odd: when inexact, the neighbour toward zero with its lowest bit set.
 * Rounding that on to f16/bf16 (13 or 16 bits fewer) then equals rounding v directly, where
 * plain double -> float -> half rounding can land on a false tie. */
static float f32_round_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || isnan(v) || isinf(f))
        return f;
    uint32_t u = f32_bits(f);
    if (fabs((double)f) > fabs(v))
        u--; /* the magnitude just below, same sign */
    return bits_f32(u | 1u);
}

double tl_load(tl_dtype dtype, const void *base, size_t i)
{
    switch (dtype) {
    case TL_U8: return ((const uint8_t *)base)[i];
    case TL_U32: return ((const uint32_t *)base)[i];
    case TL_I64: return (double)((const int64_t *)base)[i];
    case TL_I16: return ((const int16_t *)base)[i];
    case TL_I32: return ((const int32_t *)base)[i];
    case TL_F16: return tl_f16_to_f32(((const uint16_t *)base)[i]);
    case TL_BF16: return tl_bf16_to_f32(((const uint16_t *)base)[i]);
    case TL_F32: return ((const float *)base)[i];
    case TL_F64: return ((const double *)base)[i];
    case TL_DTYPE_COUNT: break;
    }
    return 0.0;
}

/* Truncates toward zero into [lo, hi]; NaN gives 0 (Rust's `as`). */
static double saturate(double v, double lo, double hi)
{
    if (isnan(v))
        return 0.0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Rust's `as` into int64: 2^63 and above give INT64_MAX exactly (2^63 itself is no int64,
 * so the bound cannot be a double). */
static int64_t f64_to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 0x1p63)
        return INT64_MAX;
    if (v < -0x1p63)
        return INT64_MIN;
    return (int64_t)trunc(v);
}

/* v as a double rounded to odd (see f32_round_odd): exact up to 2^53, else the 53 leading
 * bits with the lowest set when any bit below was, so a second rounding to f32, f16 or bf16
 * equals rounding v directly. */
static double i64_round_odd(int64_t v)
{
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag < (1ull << 53))
        return (double)v;
    int drop = 64 - __builtin_clzll(mag) - 53;
    uint64_t kept = mag >> drop;
    if (mag & ((1ull << drop) - 1))
        kept |= 1;
    double d = ldexp((double)kept, drop);
    return v < 0 ? -d : d;
}

void tl_store(tl_dtype dtype, void *base, size_t i, double v)
{
    switch (dtype) {
    case TL_U8: ((uint8_t *)base)[i] = (uint8_t)saturate(v, 0, UINT8_MAX); break;
    case TL_U32: ((uint32_t *)base)[i] = (uint32_t)saturate(v, 0, UINT32_MAX); break;
    case TL_I64: ((int64_t *)base)[i] = f64_to_i64(v); break;
    case TL_I16: ((int16_t *)base)[i] = (int16_t)saturate(v, INT16_MIN, INT16_MAX); break;
    case TL_I32: ((int32_t *)base)[i] = (int32_t)saturate(v, INT32_MIN, INT32_MAX); break;
    case TL_F16: ((uint16_t *)base)[i] = tl_f32_to_f16(f32_round_odd(v)); break;
    case TL_BF16: ((uint16_t *)base)[i] = tl_f32_to_bf16(f32_round_odd(v)); break;
    case TL_F32: ((float *)base)[i] = (float)v; break;
    case TL_F64: ((double *)base)[i] = v; break;
    case TL_DTYPE_COUNT: break;
    }
}

int64_t tl_load_i64(tl_dtype dtype, const void *base, size_t i)
{
    switch (dtype) {
    case TL_U8: return ((const uint8_t *)base)[i];
    case TL_U32: return ((const uint32_t *)base)[i];
    case TL_I64: return ((const int64_t *)base)[i];
    case TL_I16: return ((const int16_t *)base)[i];
    case TL_I32: return ((const int32_t *)base)[i];
    default: { /* a float: truncated and saturated like every float -> integer conversion */
        int64_t v;
        tl_store(TL_I64, &v, 0, tl_load(dtype, base, i));
        return v;
    }
    }
}

/* An integer into a narrower integer keeps its low bits (two's complement), as Rust's `as`
 * between integers and numpy's astype do, and as candle's u8/u32 arithmetic wraps. */
void tl_store_i64(tl_dtype dtype, void *base, size_t i, int64_t v)
{
    uint64_t bits = (uint64_t)v;
    switch (dtype) {
    case TL_U8: ((uint8_t *)base)[i] = (uint8_t)bits; break;
    case TL_U32: ((uint32_t *)base)[i] = (uint32_t)bits; break;
    case TL_I64: ((int64_t *)base)[i] = v; break;
    case TL_I16: {
        uint16_t low = (uint16_t)bits;
        memcpy((int16_t *)base + i, &low, sizeof low);
        break;
    }
    case TL_I32: {
        uint32_t low = (uint32_t)bits;
        memcpy((int32_t *)base + i, &low, sizeof low);
        break;
    }
    case TL_F64: ((double *)base)[i] = (double)v; break;
    default: tl_store(dtype, base, i, i64_round_odd(v)); break;
    }
}

double tl_round_to_dtype(tl_dtype dtype, double v)
{
    _Alignas(8) unsigned char cell[8];
    tl_store(dtype, cell, 0, v);
    return tl_load(dtype, cell, 0);
}

void tl_int_range(tl_dtype dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case TL_U8: *lo = 0, *hi = UINT8_MAX; break;
    case TL_U32: *lo = 0, *hi = UINT32_MAX; break;
    case TL_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case TL_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TL_I64: *lo = INT64_MIN, *hi = INT64_MAX; break;
    default: break;
    }
}
