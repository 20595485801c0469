/*
 * cpu_elementwise.c - unary, parameterised, binary, comparison and where kernels.
 *
 * Each op is written once as an expression over `x` (and `y`) of type T and instantiated for
 * f32 and f64 as a plain loop over contiguous arrays, which the compiler vectorizes. One
 * driver (ew_run) walks the operands' layouts run by run: a run that is contiguous in every
 * operand with one f32/f64 dtype goes straight to the typed loop; anything else (strided,
 * broadcast, other dtypes) is packed into double chunks, computed by the f64 loop and stored
 * back converted. <tgmath.h> makes exp(x) expf for floats and exp for doubles.
 */
#include <stdint.h>
#include <string.h>
#include <tgmath.h>

#include "cpu.h"

#define CHUNK 256 /* elements per packed chunk */

/* ------------------------------------------------------------------------------------------
 * exp for f32 in a form the compiler vectorizes (libm's expf is a call per element):
 * x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-7 polynomial (Cephes' coefficients),
 * 2^n applied in two halves so results that underflow to subnormals or overflow to infinity
 * come out right. Error about 1 ulp.
 * ---------------------------------------------------------------------------------------- */
static inline float pow2i(int32_t e)
{
    uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float exp_f32(float x)
{
    float xc = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
    /* round to nearest integer by adding and removing 1.5 * 2^23 */
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = (int32_t)n, e1 = e >> 1;
    float y = p * pow2i(e1) * pow2i(e - e1);
    return x != x ? x : y;
}

#define EXP(x) _Generic((x), float: exp_f32(x), default: exp(x))

/* ------------------------------------------------------------------------------------------
 * Unary ops: (enum, kernel name, expression in x of type T)
 * ---------------------------------------------------------------------------------------- */
#define UNARY_OPS(X)                                                                              \
    X(TL_EXP, u_exp, EXP(x))                                                                      \
    X(TL_LOG, u_log, log(x))                                                                      \
    X(TL_SIN, u_sin, sin(x))                                                                      \
    X(TL_COS, u_cos, cos(x))                                                                      \
    X(TL_TANH, u_tanh, tanh(x))                                                                   \
    X(TL_ABS, u_abs, fabs(x))                                                                     \
    X(TL_NEG, u_neg, -x)                                                                          \
    X(TL_RECIP, u_recip, (T)1 / x)                                                                \
    X(TL_SQR, u_sqr, x * x)                                                                       \
    X(TL_SQRT, u_sqrt, sqrt(x))                                                                   \
    X(TL_RELU, u_relu, x > 0 ? x : (T)0)                                                          \
    X(TL_GELU, u_gelu,                                                                            \
      (T)0.5 * x * ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x))))      \
    X(TL_GELU_ERF, u_gelu_erf, (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440)))           \
    X(TL_SILU, u_silu, x / ((T)1 + EXP(-x)))                                                      \
    X(TL_FLOOR, u_floor, floor(x))                                                                \
    X(TL_CEIL, u_ceil, ceil(x))                                                                   \
    X(TL_ROUND, u_round, round(x))                                                                \
    X(TL_SIGN, u_sign, (T)((x > 0) - (x < 0)))

/* The unary loops are compute bound (exp, tanh, ...): gcc also builds an AVX2 copy of each,
 * picked at load time on CPUs that have it (target_clones: an ifunc, so ELF x86-64 only). */
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define UNARY_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define UNARY_CLONES
#endif

#define DEFINE_UNARY_T(NAME, SUFFIX, TYPE, EXPR)                                                  \
    UNARY_CLONES static void NAME##SUFFIX(TYPE *restrict d, const TYPE *restrict s, size_t n)                  \
    {                                                                                             \
        typedef TYPE T;                                                                           \
        for (size_t i = 0; i < n; i++) {                                                          \
            T x = s[i];                                                                           \
            d[i] = (EXPR);                                                                        \
        }                                                                                         \
    }
#define DEFINE_UNARY(OP, NAME, EXPR)                                                              \
    DEFINE_UNARY_T(NAME, _f32, float, EXPR) DEFINE_UNARY_T(NAME, _f64, double, EXPR)
UNARY_OPS(DEFINE_UNARY)

typedef void (*unary_f32_fn)(float *restrict, const float *restrict, size_t);
typedef void (*unary_f64_fn)(double *restrict, const double *restrict, size_t);
#define UNARY_ENTRY_F32(OP, NAME, EXPR) [OP] = NAME##_f32,
#define UNARY_ENTRY_F64(OP, NAME, EXPR) [OP] = NAME##_f64,
static const unary_f32_fn unary_f32[] = {UNARY_OPS(UNARY_ENTRY_F32)};
static const unary_f64_fn unary_f64[] = {UNARY_OPS(UNARY_ENTRY_F64)};
_Static_assert(sizeof unary_f32 / sizeof unary_f32[0] == TL_UNARY_COUNT, "unary f32 table");
_Static_assert(sizeof unary_f64 / sizeof unary_f64[0] == TL_UNARY_COUNT, "unary f64 table");

/* ------------------------------------------------------------------------------------------
 * Parameterised ops: expression in x, p0, p1
 * ---------------------------------------------------------------------------------------- */
#define SCALAR_OPS(X)                                                                             \
    X(TL_SCALAR_AFFINE, s_affine, x * p0 + p1)                                                    \
    X(TL_SCALAR_POWF, s_powf, pow(x, p0))                                                         \
    X(TL_SCALAR_CLAMP, s_clamp, x < p0 ? p0 : x > p1 ? p1 : x)                                    \
    X(TL_SCALAR_ELU, s_elu, x >= 0 ? x : p0 * (EXP(x) - (T)1))

#define DEFINE_SCALAR_T(NAME, SUFFIX, TYPE, EXPR)                                                 \
    static void NAME##SUFFIX(TYPE *restrict d, const TYPE *restrict s, size_t n, TYPE p0,         \
                             TYPE p1)                                                             \
    {                                                                                             \
        typedef TYPE T;                                                                           \
        (void)p1;                                                                                 \
        for (size_t i = 0; i < n; i++) {                                                          \
            T x = s[i];                                                                           \
            d[i] = (EXPR);                                                                        \
        }                                                                                         \
    }
#define DEFINE_SCALAR(OP, NAME, EXPR)                                                             \
    DEFINE_SCALAR_T(NAME, _f32, float, EXPR) DEFINE_SCALAR_T(NAME, _f64, double, EXPR)
SCALAR_OPS(DEFINE_SCALAR)

typedef void (*scalar_f32_fn)(float *restrict, const float *restrict, size_t, float, float);
typedef void (*scalar_f64_fn)(double *restrict, const double *restrict, size_t, double, double);
#define SCALAR_ENTRY_F32(OP, NAME, EXPR) [OP] = NAME##_f32,
#define SCALAR_ENTRY_F64(OP, NAME, EXPR) [OP] = NAME##_f64,
static const scalar_f32_fn scalar_f32[] = {SCALAR_OPS(SCALAR_ENTRY_F32)};
static const scalar_f64_fn scalar_f64[] = {SCALAR_OPS(SCALAR_ENTRY_F64)};
_Static_assert(sizeof scalar_f32 / sizeof scalar_f32[0] == TL_SCALAR_COUNT, "scalar f32 table");
_Static_assert(sizeof scalar_f64 / sizeof scalar_f64[0] == TL_SCALAR_COUNT, "scalar f64 table");

/* ------------------------------------------------------------------------------------------
 * Binary ops: expression in x, y
 * ---------------------------------------------------------------------------------------- */
#define BINARY_OPS(X)                                                                             \
    X(TL_ADD, b_add, x + y)                                                                       \
    X(TL_SUB, b_sub, x - y)                                                                       \
    X(TL_MUL, b_mul, x * y)                                                                       \
    X(TL_DIV, b_div, x / y)                                                                       \
    X(TL_MAXIMUM, b_maximum, x < y ? y : x)                                                       \
    X(TL_MINIMUM, b_minimum, y < x ? y : x)

#define DEFINE_BINARY_T(NAME, SUFFIX, TYPE, EXPR)                                                 \
    static void NAME##SUFFIX(TYPE *restrict d, const TYPE *restrict a, const TYPE *restrict b,    \
                             size_t n)                                                            \
    {                                                                                             \
        for (size_t i = 0; i < n; i++) {                                                          \
            TYPE x = a[i], y = b[i];                                                              \
            d[i] = (EXPR);                                                                        \
        }                                                                                         \
    }
#define DEFINE_BINARY(OP, NAME, EXPR)                                                             \
    DEFINE_BINARY_T(NAME, _f32, float, EXPR) DEFINE_BINARY_T(NAME, _f64, double, EXPR)
BINARY_OPS(DEFINE_BINARY)

typedef void (*binary_f32_fn)(float *restrict, const float *restrict, const float *restrict, size_t);
typedef void (*binary_f64_fn)(double *restrict, const double *restrict, const double *restrict,
                              size_t);
#define BINARY_ENTRY_F32(OP, NAME, EXPR) [OP] = NAME##_f32,
#define BINARY_ENTRY_F64(OP, NAME, EXPR) [OP] = NAME##_f64,
static const binary_f32_fn binary_f32[] = {BINARY_OPS(BINARY_ENTRY_F32)};
static const binary_f64_fn binary_f64[] = {BINARY_OPS(BINARY_ENTRY_F64)};
_Static_assert(sizeof binary_f32 / sizeof binary_f32[0] == TL_BINARY_COUNT, "binary f32 table");
_Static_assert(sizeof binary_f64 / sizeof binary_f64[0] == TL_BINARY_COUNT, "binary f64 table");

/* ------------------------------------------------------------------------------------------
 * The driver. A chunk function computes n elements from contiguous typed inputs: as float
 * when t is TL_F32, as double otherwise.
 * ---------------------------------------------------------------------------------------- */
typedef void (*chunk_fn)(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n);

/* One run of the iterator through double buffers: load, compute in f64, store converted. */
static void packed_run(const tl_operand *dst, const tl_operand *const *src, size_t nsrc,
                       const tl_iter *it, chunk_fn fn, const void *ctx)
{
    double in[TL_ITER_MAX - 1][CHUNK], out[CHUNK];
    const void *ins[TL_ITER_MAX - 1];
    for (size_t done = 0; done < it->inner; done += CHUNK) {
        size_t m = it->inner - done < CHUNK ? it->inner - done : CHUNK;
        for (size_t k = 0; k < nsrc; k++) {
            for (size_t i = 0; i < m; i++)
                in[k][i] = tl_load(src[k]->dtype, src[k]->buf,
                                   it->off[k + 1] + (done + i) * it->step[k + 1]);
            ins[k] = in[k];
        }
        fn(ctx, TL_F64, out, ins, m);
        for (size_t i = 0; i < m; i++)
            tl_store(dst->dtype, dst->buf, it->off[0] + (done + i) * it->step[0], out[i]);
    }
}

static tl_status ew_run(const tl_operand *dst, const tl_operand *const *src, size_t nsrc,
                        chunk_fn fn, const void *ctx)
{
    const tl_layout *ls[TL_ITER_MAX] = {dst->layout};
    bool typed = dst->dtype == TL_F32 || dst->dtype == TL_F64;
    for (size_t k = 0; k < nsrc; k++) {
        ls[k + 1] = src[k]->layout;
        typed = typed && src[k]->dtype == dst->dtype;
    }
    tl_iter it;
    if (!tl_iter_init(&it, dst->layout->shape, dst->layout->ndim, ls, nsrc + 1))
        return TL_OK;
    do {
        bool unit = typed;
        for (size_t k = 0; k <= nsrc; k++)
            unit = unit && (it.step[k] == 1 || it.inner == 1);
        if (!unit) {
            packed_run(dst, src, nsrc, &it, fn, ctx);
            continue;
        }
        const void *ins[TL_ITER_MAX - 1];
        for (size_t k = 0; k < nsrc; k++)
            ins[k] = tl_cpu_at(src[k]->buf, src[k]->dtype, it.off[k + 1]);
        fn(ctx, dst->dtype, tl_cpu_at(dst->buf, dst->dtype, it.off[0]), ins, it.inner);
    } while (tl_iter_next(&it));
    return TL_OK;
}

static void unary_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n)
{
    tl_unary_op op = *(const tl_unary_op *)ctx;
    if (t == TL_F32)
        unary_f32[op](dst, src[0], n);
    else
        unary_f64[op](dst, src[0], n);
}

tl_status tl_cpu_unary(tl_unary_op op, const tl_operand *dst, const tl_operand *src)
{
    const tl_operand *srcs[1] = {src};
    return ew_run(dst, srcs, 1, unary_chunk, &op);
}

typedef struct scalar_ctx {
    tl_scalar_op op;
    double p0, p1;
} scalar_ctx;

static void scalar_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n)
{
    const scalar_ctx *c = ctx;
    if (t == TL_F32)
        scalar_f32[c->op](dst, src[0], n, (float)c->p0, (float)c->p1);
    else
        scalar_f64[c->op](dst, src[0], n, c->p0, c->p1);
}

tl_status tl_cpu_scalar(tl_scalar_op op, const tl_operand *dst, const tl_operand *src, double p0,
                        double p1)
{
    const tl_operand *srcs[1] = {src};
    scalar_ctx c = {op, p0, p1};
    return ew_run(dst, srcs, 1, scalar_chunk, &c);
}

static void binary_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n)
{
    tl_binary_op op = *(const tl_binary_op *)ctx;
    if (t == TL_F32)
        binary_f32[op](dst, src[0], src[1], n);
    else
        binary_f64[op](dst, src[0], src[1], n);
}

tl_status tl_cpu_binary(tl_binary_op op, const tl_operand *dst, const tl_operand *a,
                        const tl_operand *b)
{
    const tl_operand *srcs[2] = {a, b};
    return ew_run(dst, srcs, 2, binary_chunk, &op);
}

/* Comparisons and where always take the packed path: their dtypes differ from dst's. */
static void cmp_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n)
{
    tl_cmp_op op = *(const tl_cmp_op *)ctx;
    const double *a = src[0], *b = src[1];
    double *d = dst;
    (void)t;
    for (size_t i = 0; i < n; i++) {
        switch (op) {
        case TL_EQ: d[i] = a[i] == b[i]; break;
        case TL_NE: d[i] = a[i] != b[i]; break;
        case TL_LT: d[i] = a[i] < b[i]; break;
        case TL_LE: d[i] = a[i] <= b[i]; break;
        case TL_GT: d[i] = a[i] > b[i]; break;
        case TL_GE: d[i] = a[i] >= b[i]; break;
        case TL_CMP_COUNT: d[i] = 0; break;
        }
    }
}

tl_status tl_cpu_cmp(tl_cmp_op op, const tl_operand *dst, const tl_operand *a, const tl_operand *b)
{
    const tl_operand *srcs[2] = {a, b};
    return ew_run(dst, srcs, 2, cmp_chunk, &op);
}

static void where_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src, size_t n)
{
    const double *c = src[0], *on_true = src[1], *on_false = src[2];
    double *d = dst;
    (void)ctx;
    (void)t;
    for (size_t i = 0; i < n; i++)
        d[i] = c[i] != 0 ? on_true[i] : on_false[i];
}

tl_status tl_cpu_where(const tl_operand *dst, const tl_operand *cond, const tl_operand *t,
                       const tl_operand *f)
{
    const tl_operand *srcs[3] = {cond, t, f};
    return ew_run(dst, srcs, 3, where_chunk, NULL);
}
