/*
 * cpu_elementwise.c - unary, parameterised, binary, comparison and where kernels.
 *
 * Each op is written once as an expression over `x` (and `y`) of type T and instantiated for
 * f32 and f64 as a plain loop over contiguous arrays, which the compiler vectorizes. One
 * driver (ew_run) walks the operands' layouts run by run: a run that is contiguous in every
 * operand with one f32/f64 dtype goes straight to the typed loop; anything else (strided,
 * broadcast, f16/bf16, mixed dtypes) is packed into chunks, computed by the f64 loop and
 * stored back converted. When every operand is an integer the chunks are int64 and integer
 * kernels compute in int64 (wrapping there and when stored into a narrower integer).
 * <tgmath.h> makes exp(x) expf for floats and exp for doubles.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "cpu.h"

#define CHUNK 256 /* elements per packed chunk */

#define EXP(x) _Generic((x), float: tl_exp_f32(x), default: exp(x))

/* ------------------------------------------------------------------------------------------
 * Typed loops. Every op, whatever its arity, gets one signature: x comes from a, y from b,
 * p0 and p1 are parameters; an op uses what it needs (one-input ops are called with b = a).
 * DEFINE_KERNEL instantiates an op list entry for f32 and f64; KERNEL_TABLES indexes the
 * instances by the op enum, checked against its count.
 * ---------------------------------------------------------------------------------------- */
#define DEFINE_KERNEL_T(NAME, SUFFIX, TYPE, EXPR)                                                 \
    SIMD_CLONES                                                                                   \
    static void NAME##SUFFIX(TYPE *restrict d, const TYPE *restrict a, const TYPE *restrict b,    \
                             size_t n, TYPE p0, TYPE p1)                                          \
    {                                                                                             \
        typedef TYPE T;                                                                           \
        (void)p0, (void)p1;                                                                       \
        for (size_t i = 0; i < n; i++) {                                                          \
            T x = a[i], y = b[i];                                                                 \
            (void)y;                                                                              \
            d[i] = (EXPR);                                                                        \
        }                                                                                         \
    }
#define DEFINE_KERNEL(OP, NAME, EXPR)                                                             \
    DEFINE_KERNEL_T(NAME, _f32, float, EXPR) DEFINE_KERNEL_T(NAME, _f64, double, EXPR)

typedef void (*kernel_f32_fn)(float *restrict, const float *restrict, const float *restrict,
                              size_t, float, float);
typedef void (*kernel_f64_fn)(double *restrict, const double *restrict, const double *restrict,
                              size_t, double, double);
#define KERNEL_ENTRY_F32(OP, NAME, EXPR) [OP] = NAME##_f32,
#define KERNEL_ENTRY_F64(OP, NAME, EXPR) [OP] = NAME##_f64,
#define KERNEL_TABLES(OPS, TABLE, COUNT)                                                          \
    static const kernel_f32_fn TABLE##_f32[] = {OPS(KERNEL_ENTRY_F32)};                           \
    static const kernel_f64_fn TABLE##_f64[] = {OPS(KERNEL_ENTRY_F64)};                           \
    _Static_assert(sizeof TABLE##_f32 / sizeof TABLE##_f32[0] == COUNT, #TABLE " f32 table");     \
    _Static_assert(sizeof TABLE##_f64 / sizeof TABLE##_f64[0] == COUNT, #TABLE " f64 table")

/* Dekker's exact product without fma (the baseline target has none): a b = p + two_prod_err.
 * Veltkamp's split halves each factor (26 bits), so the partial products are exact; finite
 * for |a|, |b| below 2^995. */
static inline double two_prod_err(double a, double b, double p)
{
    double ta = 134217729.0 * a, a1 = ta - (ta - a), a2 = a - a1;
    double tb = 134217729.0 * b, b1 = tb - (tb - b), b2 = b - b1;
    return ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2;
}

/* x times the logistic function of z + dz, x / (1 + e^-(z + dz)), for every z (sigmoid, silu,
 * gelu): h = e^(-|z| / 2) never overflows, and where z < 0 the value is x h h / (1 + h h) -
 * x h first, so a result in the subnormal range is rounded there once. 1 / (1 + e^-z) gave 0
 * from the point e^-z overflowed (f32 z < -88.7) although sigmoid(-88.75) is still 2.86e-39,
 * and e^z itself goes subnormal (losing bits) before x e^z does. dz to first order: the
 * logistic s has ds/dz = s (1 - s), so x s(z + dz) = x s (1 + dz (1 - s)). */
#define DEFINE_X_LOGISTIC(T, U, SUFFIX)                                                           \
    /* c ? a : b on the bits: the compiler turns a plain select on z's sign into a branch in    \
     * the scalar f64 loop, and random signs mispredict (sigmoid f64 ran 4 times slower) */    \
    static inline T pick##SUFFIX(bool c, T a, T b)                                                \
    {                                                                                             \
        U ua, ub, m = (U)0 - (U)c;                                                                \
        memcpy(&ua, &a, sizeof a);                                                                \
        memcpy(&ub, &b, sizeof b);                                                                \
        ua = (ua & m) | (ub & ~m);                                                                \
        memcpy(&a, &ua, sizeof a);                                                                \
        return a;                                                                                 \
    }                                                                                             \
    static inline T x_logistic##SUFFIX(T x, T z)                                                  \
    {                                                                                             \
        T h = EXP((T)-0.5 * fabs(z)), w = pick##SUFFIX(z >= 0, 1, h);                             \
        return x * w * w / ((T)1 + h * h);                                                        \
    }                                                                                             \
    static inline T x_logistic_dz##SUFFIX(T x, T z, T dz)                                         \
    {                                                                                             \
        T s = x_logistic##SUFFIX(x, z), h = EXP((T)-0.5 * fabs(z)), e = h * h;                    \
        T c = dz * pick##SUFFIX(z >= 0, e, 1) / ((T)1 + e); /* dz (1 - s / x) */                  \
        /* s * 0 would make gelu(inf) NaN, and a zero s keeps its sign: -0 + -0 * c is +0 for     \
         * a negative c (f64 gelu(-22) was +0) */                                                 \
        return c != 0 && s != 0 ? s + s * c : s;                                                  \
    }
DEFINE_X_LOGISTIC(float, uint32_t, _f32)
DEFINE_X_LOGISTIC(double, uint64_t, _f64)

/* f32 sigmoid and silu: e = e^-|z| from the f32 polynomial (within an ulp) and the rest in
 * double, rounded once: x / (1 + e) for z >= 0, x e / (1 + e) below. x_logistic_f32 squares h
 * and rounds four times in f32: up to 4.3 ulps (sigmoid(-4.1506281) was 0.015510167 for
 * 0.015510163), past the 3 and 4 the README gives; here e's error counts once, within 1.5
 * ulps. Where e^-|z| leaves f32's normal range (|z| >= 87) it is e^(64 - |z|) e^-64 in double
 * (64 - |z| is exact up to |z| = 128, past which every result is 0 in f32), so a subnormal
 * result is rounded once; -inf gives e = 0 (silu(-inf) stays -inf * 0 = NaN). */
static inline float x_logistic_fine_f32(float x, float z)
{
    float a = fabsf(z);
    bool normal = a < 87;
    double e = tl_exp_f32(pick_f32(normal, -a, 64 - a)) * pick_f64(normal, 1, 1.6038108905486378e-28);
    return (float)((double)x * pick_f64(z >= 0, 1, e) / (1 + e));
}
#define X_LOGISTIC(x, z)                                                                          \
    _Generic((x), float: x_logistic_fine_f32(x, z), default: x_logistic_f64(x, z))

/* gelu (tanh form) is x times the logistic function of z = 2 sqrt(2/pi) (x + 0.044715 x^3),
 * whose relative error is |z| times z's: z rounded to the dtype cost 176 ulps at f32 x = -9.6
 * and 1362 at f64 x = -19.6. So z is carried with its rounding error dz and the logistic
 * corrected to first order: f32 takes z in double; f64 in double-double (exact products and
 * sums, the constants in two parts each). Past |x| = 32 the result is x or 0 to every digit,
 * and dz is 0 there (z may be inf, and the products would overflow). */
static inline float gelu_f32(float x)
{
    double xd = x, zd = 1.59576912160573071176 * (xd + 0.044715 * xd * xd * xd);
    float z = (float)zd, dz = fabs(x) < 32 ? (float)(zd - z) : 0.0f;
    return x_logistic_dz_f32(x, z, dz);
}

static inline double gelu_f64(double x)
{
    const double k = 1.5957691216057308, k_lo = -9.96930880911092e-17; /* 2 sqrt(2/pi) */
    const double a = 0.044715, a_lo = 2.1960211427085595e-18;
    double xs = fabs(x) < 32 ? x : 0;
    double x2 = xs * xs, x2e = two_prod_err(xs, xs, x2);
    double x3 = x2 * xs, x3e = two_prod_err(x2, xs, x3) + x2e * xs;
    double t = a * x3, te = two_prod_err(a, x3, t) + a * x3e + a_lo * x3;
    double u = xs + t, ub = u - xs, ue = (xs - (u - ub)) + (t - ub) + te; /* two_sum */
    double zh = k * u, ze = two_prod_err(k, u, zh) + k * ue + k_lo * u;
    double z = fabs(x) < 32 ? zh + ze : k * (x + a * x * x * x);
    double dz = fabs(x) < 32 ? ze - (z - zh) : 0;
    return x_logistic_dz_f64(x, z, dz);
}
#define GELU(x) _Generic((x), float: gelu_f32(x), default: gelu_f64(x))

/* 0.5 x erfc(-x / sqrt 2). erfc(z) falls as e^(-z^2), so a relative error d in z becomes
 * 2 z^2 d in the result: z rounded to the dtype cost 188 ulps at f32 x = -12.9 and 1232 at
 * f64 x = -36. f32 computes in double (erfc is a call per element either way); f64 takes the
 * rounding error of z = x * (-1 / sqrt 2) exactly and corrects erfc to first order,
 * erfc(z + dz) = erfc(z) - dz 2 / sqrt(pi) e^(-z^2). Past |x| = 64 erfc is 0 or 2 to every
 * digit and the split could overflow, so dz is 0 there. */
static inline float gelu_erf_f32(float x)
{
    return (float)(0.5 * x * erfc(x * -0.70710678118654752440));
}

/* Below x = -37 erfc(-x / sqrt 2) is itself subnormal (its last bits gone) and 0.5 * x
 * multiplied that loss by up to 19 (17 subnormal steps off, x = -37.63): there erfcl's wider
 * exponent keeps every bit and the result rounds once (x87 long double; where long double is
 * double this is the same as the formula below). */
static inline double gelu_erf_f64(double x)
{
    const double c = 0.7071067811865476, c_lo = -4.833646656726457e-17; /* 1/sqrt 2 = c + c_lo */
    if (x < -37)
        return (double)(0.5L * x * erfcl(x * -0.707106781186547524400844362104849039L));
    double xs = fabs(x) < 64 ? x : 0, p = xs * c;
    double z = -(x * c), dz = -(two_prod_err(xs, c, p) + xs * c_lo);
    return 0.5 * x * (erfc(z) - dz * 1.1283791670955126 * exp(-z * z));
}
#define GELU_ERF(x) _Generic((x), float: gelu_erf_f32(x), default: gelu_erf_f64(x))

/* ------------------------------------------------------------------------------------------
 * Unary ops: (enum, kernel name, expression in x of type T). The gelus avoid 1 + tanh(u) and
 * 1 + erf(z), which cancel to nothing in f32 for x below about -4: 0.5 * (1 + tanh(u)) is
 * the logistic function of 2u and 1 + erf(z) is erfc(-z).
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
    X(TL_GELU, u_gelu, GELU(x))                                                                   \
    X(TL_GELU_ERF, u_gelu_erf, GELU_ERF(x))                                                       \
    X(TL_SILU, u_silu, X_LOGISTIC(x, x))                                                          \
    X(TL_FLOOR, u_floor, floor(x))                                                                \
    X(TL_CEIL, u_ceil, ceil(x))                                                                   \
    X(TL_ROUND, u_round, round(x))                                                                \
    X(TL_SIGN, u_sign, (T)((x > 0) - (x < 0)))                                                    \
    X(TL_SIGMOID, u_sigmoid, X_LOGISTIC((T)1, x))                                                 \
    X(TL_ERF, u_erf, erf(x))

UNARY_OPS(DEFINE_KERNEL)
KERNEL_TABLES(UNARY_OPS, unary, TL_UNARY_COUNT);

/* ------------------------------------------------------------------------------------------
 * Parameterised ops: expression in x, p0, p1
 * ---------------------------------------------------------------------------------------- */
/* candle's elu, x when x's sign is positive, else alpha (e^x - 1), with expm1 (e^x - 1 cancels
 * near 0). So -0 gives alpha * +0, as candle's (1 - 1) * alpha and PyTorch's do: x >= 0 ? x
 * kept -0. */
#define ELU(x, alpha) (signbit(x) ? (alpha) * (expm1(x) + 0) : (x))
#define SCALAR_OPS(X)                                                                             \
    X(TL_SCALAR_AFFINE, s_affine, x * p0 + p1)                                                    \
    X(TL_SCALAR_POWF, s_powf, pow(x, p0))                                                         \
    X(TL_SCALAR_CLAMP, s_clamp, x < p0 ? p0 : x > p1 ? p1 : x)                                    \
    X(TL_SCALAR_ELU, s_elu, ELU(x, p0))

SCALAR_OPS(DEFINE_KERNEL)
KERNEL_TABLES(SCALAR_OPS, scalar, TL_SCALAR_COUNT);

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

BINARY_OPS(DEFINE_KERNEL)
KERNEL_TABLES(BINARY_OPS, binary, TL_BINARY_COUNT);

/* ------------------------------------------------------------------------------------------
 * Integer kernels (int64, wrapping; the generic layer only sends ops that make sense on ints)
 * ---------------------------------------------------------------------------------------- */
static inline int64_t wrap_neg(int64_t x)
{
    return (int64_t)(0 - (uint64_t)x);
}

static inline int64_t wrap_mul(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x * (uint64_t)y);
}

#define UNARY_INT_OPS(X)                                                                          \
    X(TL_ABS, ui_abs, x < 0 ? wrap_neg(x) : x)                                                    \
    X(TL_NEG, ui_neg, wrap_neg(x))                                                                \
    X(TL_SQR, ui_sqr, wrap_mul(x, x))                                                             \
    X(TL_RELU, ui_relu, x > 0 ? x : 0)                                                            \
    X(TL_SIGN, ui_sign, (x > 0) - (x < 0))                                                        \
    X(TL_FLOOR, ui_floor, x)                                                                      \
    X(TL_CEIL, ui_ceil, x)                                                                        \
    X(TL_ROUND, ui_round, x)

#define DEFINE_UNARY_INT(OP, NAME, EXPR)                                                          \
    static void NAME(int64_t *restrict d, const int64_t *restrict s, size_t n)                    \
    {                                                                                             \
        for (size_t i = 0; i < n; i++) {                                                          \
            int64_t x = s[i];                                                                     \
            d[i] = (EXPR);                                                                        \
        }                                                                                         \
    }
UNARY_INT_OPS(DEFINE_UNARY_INT)

typedef void (*unary_i64_fn)(int64_t *restrict, const int64_t *restrict, size_t);
#define UNARY_ENTRY_I64(OP, NAME, EXPR) [OP] = NAME,
/* NULL for the float-only ops */
static const unary_i64_fn unary_i64[TL_UNARY_COUNT] = {UNARY_INT_OPS(UNARY_ENTRY_I64)};

static tl_status binary_i64(tl_binary_op op, int64_t *d, const int64_t *a, const int64_t *b,
                            size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t x = a[i], y = b[i];
        switch (op) {
        case TL_ADD: d[i] = (int64_t)((uint64_t)x + (uint64_t)y); break;
        case TL_SUB: d[i] = (int64_t)((uint64_t)x - (uint64_t)y); break;
        case TL_MUL: d[i] = wrap_mul(x, y); break;
        case TL_DIV:
            if (y == 0)
                return tl_fail(TL_ERR_RANGE, "div: integer division by zero");
            d[i] = y == -1 ? wrap_neg(x) : x / y; /* INT64_MIN / -1 overflows */
            break;
        case TL_MAXIMUM: d[i] = x < y ? y : x; break;
        case TL_MINIMUM: d[i] = y < x ? y : x; break;
        case TL_BINARY_COUNT: break;
        }
    }
    return TL_OK;
}

/* ------------------------------------------------------------------------------------------
 * The driver. A chunk function computes n elements from contiguous inputs of type t: float
 * (TL_F32), double (TL_F64) or int64_t (TL_I64).
 * ---------------------------------------------------------------------------------------- */
typedef tl_status (*chunk_fn)(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                              size_t n);

/* A chunk holds elements of the work type: f32 or f64 when every operand has that dtype
 * (moved as raw cells), int64 for all-integer operands, double for everything else. */
typedef union chunk {
    double f[CHUNK];
    int64_t i[CHUNK];
} chunk;

/* m elements of op from element `at` on, `step` apart, into cells (work type) `cstep` apart. */
static void gather(const tl_operand *op, size_t at, size_t step, size_t m, tl_dtype work,
                   void *cells, size_t cstep)
{
    double *f = cells;
    int64_t *i64 = cells;
    if (work == op->dtype && work != TL_I64)
        tl_cpu_move_cells(cells, cstep, tl_cpu_at(op->buf, op->dtype, at), step, m,
                          tl_dtype_size(work));
    else if (work == TL_I64)
        for (size_t i = 0; i < m; i++)
            i64[i * cstep] = tl_load_i64(op->dtype, op->buf, at + i * step);
    else
        for (size_t i = 0; i < m; i++)
            f[i * cstep] = tl_load(op->dtype, op->buf, at + i * step);
}

/* The reverse of gather, converting into op's dtype. */
static void scatter(const tl_operand *op, size_t at, size_t step, size_t m, tl_dtype work,
                    const void *cells, size_t cstep)
{
    const double *f = cells;
    const int64_t *i64 = cells;
    if (work == op->dtype && work != TL_I64)
        tl_cpu_move_cells(tl_cpu_at(op->buf, op->dtype, at), step, cells, cstep, m,
                          tl_dtype_size(work));
    else if (work == TL_I64)
        for (size_t i = 0; i < m; i++)
            tl_store_i64(op->dtype, op->buf, at + i * step, i64[i * cstep]);
    else
        for (size_t i = 0; i < m; i++)
            tl_store(op->dtype, op->buf, at + i * step, f[i * cstep]);
}

/* One run of the iterator through chunk buffers: gather, compute, scatter. */
static tl_status packed_run(const tl_operand *dst, const tl_operand *const *src, size_t nsrc,
                            const tl_iter *it, tl_dtype work, chunk_fn fn, const void *ctx)
{
    chunk in[TL_ITER_MAX - 1], out;
    const void *ins[TL_ITER_MAX - 1];
    for (size_t done = 0; done < it->inner; done += CHUNK) {
        size_t m = it->inner - done < CHUNK ? it->inner - done : CHUNK;
        for (size_t k = 0; k < nsrc; k++) {
            gather(src[k], it->off[k + 1] + done * it->step[k + 1], it->step[k + 1], m, work,
                   &in[k], 1);
            ins[k] = &in[k];
        }
        tl_status st = fn(ctx, work, &out, ins, m);
        if (st != TL_OK)
            return st;
        scatter(dst, it->off[0] + done * it->step[0], it->step[0], m, work, &out, 1);
    }
    return TL_OK;
}

/* ------------------------------------------------------------------------------------------
 * Tiles. When an operand's run is strided but the dim just outside the run steps through its
 * memory more finely (a transposed view: the run walks a column), run by run would touch a new
 * cache line for every element. Instead TILE runs are done together, TILE elements at a time:
 * each operand's TILE x TILE block is moved along whichever direction is closer in its memory,
 * then computed as one contiguous chunk.
 * ---------------------------------------------------------------------------------------- */
#define TILE_ROWS 64
#define TILE_COLS 64

typedef struct tiles {
    _Alignas(64) unsigned char in[TL_ITER_MAX - 1][TILE_ROWS * TILE_COLS * 8];
    _Alignas(64) unsigned char out[TILE_ROWS * TILE_COLS * 8];
} tiles;

/* Should the run at `it` go through tiles: some operand is finer across runs than along. */
static bool wants_tiles(const tl_iter *it)
{
    if (it->outer == 0)
        return false;
    for (size_t k = 0; k < it->n; k++)
        if (it->stride[k][it->outer - 1] < it->step[k])
            return true;
    return false;
}

/* Moves a rows x cols block (rows rstep apart, columns cstep apart in op) to or from cells
 * laid out row-major, in op's memory order. */
static void move_block(const tl_operand *op, bool to_cells, size_t at, size_t rstep, size_t cstep,
                       size_t rows, size_t cols, tl_dtype work, unsigned char *cells)
{
    size_t es = work == TL_F32 ? 4 : 8;
    bool by_column = rstep < cstep;
    size_t lines = by_column ? cols : rows, len = by_column ? rows : cols;
    size_t line_step = by_column ? cstep : rstep, elem_step = by_column ? rstep : cstep;
    size_t cell_line = by_column ? 1 : cols, cell_step = by_column ? cols : 1;
    for (size_t l = 0; l < lines; l++) {
        unsigned char *c = cells + l * cell_line * es;
        if (to_cells)
            gather(op, at + l * line_step, elem_step, len, work, c, cell_step);
        else
            scatter(op, at + l * line_step, elem_step, len, work, c, cell_step);
    }
}

/* `rows` runs from the iterator's position (rows along dim outer - 1) through tiles. */
static tl_status tiled_runs(const tl_operand *dst, const tl_operand *const *src, size_t nsrc,
                            const tl_iter *it, size_t rows, tl_dtype work, chunk_fn fn,
                            const void *ctx, tiles *t)
{
    const void *ins[TL_ITER_MAX - 1];
    size_t d = it->outer - 1;
    for (size_t c0 = 0; c0 < it->inner; c0 += TILE_COLS) {
        size_t cols = it->inner - c0 < TILE_COLS ? it->inner - c0 : TILE_COLS;
        for (size_t k = 0; k < nsrc; k++) {
            move_block(src[k], true, it->off[k + 1] + c0 * it->step[k + 1], it->stride[k + 1][d],
                       it->step[k + 1], rows, cols, work, t->in[k]);
            ins[k] = t->in[k];
        }
        tl_status st = fn(ctx, work, t->out, ins, rows * cols);
        if (st != TL_OK)
            return st;
        move_block(dst, false, it->off[0] + c0 * it->step[0], it->stride[0][d], it->step[0],
                   rows, cols, work, t->out);
    }
    return TL_OK;
}

/* int_kernels: the op has integer kernels, used when every operand is an integer dtype. */
static tl_status ew_run(const tl_operand *dst, const tl_operand *const *src, size_t nsrc,
                        bool int_kernels, chunk_fn fn, const void *ctx)
{
    const tl_layout *ls[TL_ITER_MAX] = {dst->layout};
    bool typed = dst->dtype == TL_F32 || dst->dtype == TL_F64;
    bool ints = int_kernels && !tl_dtype_is_float(dst->dtype);
    for (size_t k = 0; k < nsrc; k++) {
        ls[k + 1] = src[k]->layout;
        typed = typed && src[k]->dtype == dst->dtype;
        ints = ints && !tl_dtype_is_float(src[k]->dtype);
    }
    tl_dtype work = typed ? dst->dtype : ints ? TL_I64 : TL_F64;
    tl_iter it;
    if (!tl_iter_init_dst_order(&it, dst->layout->shape, dst->layout->ndim, ls, nsrc + 1))
        return TL_OK;
    tiles *t = NULL;
    tl_status st = TL_OK;
    do {
        bool unit = typed;
        for (size_t k = 0; k <= nsrc; k++)
            unit = unit && (it.step[k] == 1 || it.inner == 1);
        if (unit) {
            const void *ins[TL_ITER_MAX - 1];
            for (size_t k = 0; k < nsrc; k++)
                ins[k] = tl_cpu_at(src[k]->buf, src[k]->dtype, it.off[k + 1]);
            st = fn(ctx, dst->dtype, tl_cpu_at(dst->buf, dst->dtype, it.off[0]), ins, it.inner);
        } else if (wants_tiles(&it)) {
            if (!t && !(t = tl_malloc_aligned(_Alignof(tiles), sizeof *t))) {
                st = tl_fail_nomem("elementwise tiles", sizeof *t);
                break;
            }
            size_t d = it.outer - 1, rows = it.shape[d] - it.idx[d];
            rows = rows < TILE_ROWS ? rows : TILE_ROWS;
            st = tiled_runs(dst, src, nsrc, &it, rows, work, fn, ctx, t);
            for (size_t r = 1; r < rows; r++) /* the loop steps past the last one */
                tl_iter_next(&it);
        } else {
            st = packed_run(dst, src, nsrc, &it, work, fn, ctx);
        }
    } while (st == TL_OK && tl_iter_next(&it));
    free(t);
    return st;
}

static tl_status unary_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                             size_t n)
{
    tl_unary_op op = *(const tl_unary_op *)ctx;
    if (t == TL_F32)
        unary_f32[op](dst, src[0], src[0], n, 0, 0);
    else if (t == TL_F64)
        unary_f64[op](dst, src[0], src[0], n, 0, 0);
    else
        unary_i64[op](dst, src[0], n);
    return TL_OK;
}

tl_status tl_cpu_unary(tl_unary_op op, const tl_operand *dst, const tl_operand *src)
{
    const tl_operand *srcs[1] = {src};
    if (!tl_dtype_is_float(src->dtype) && !unary_i64[op])
        return tl_fail(TL_ERR_DTYPE, "%s: no integer kernel", tl_unary_name(op));
    return ew_run(dst, srcs, 1, true, unary_chunk, &op);
}

typedef struct scalar_ctx {
    tl_scalar_op op;
    double p0, p1;
    int64_t i0, i1; /* the integer kernel's parameters */
    int64_t lo, hi; /* the range of the result's integer dtype */
} scalar_ctx;

/* x * m + a in the dtype, wrapping: candle's affine on an integer tensor converts mul and add
 * to the dtype first (T::from_f64, Rust's `as`) and computes `v * mul + add` there, which
 * wraps in a release build; the low bits of the int64 result are that. */
static int64_t affine_wrap(int64_t x, int64_t m, int64_t a)
{
    return (int64_t)((uint64_t)x * (uint64_t)m + (uint64_t)a);
}

/* Integer affine and clamp, with the parameters i0, i1 already in the dtype. */
static void scalar_i64(const scalar_ctx *c, int64_t *restrict d, const int64_t *restrict s,
                       size_t n)
{
    int64_t i0 = c->i0, i1 = c->i1;
    for (size_t i = 0; i < n; i++) {
        int64_t x = s[i];
        d[i] = c->op == TL_SCALAR_CLAMP ? (x < i0 ? i0 : x > i1 ? i1 : x)
                                        : affine_wrap(x, i0, i1);
    }
}

static tl_status scalar_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                              size_t n)
{
    const scalar_ctx *c = ctx;
    if (t == TL_F32)
        scalar_f32[c->op](dst, src[0], src[0], n, (float)c->p0, (float)c->p1);
    else if (t == TL_F64)
        scalar_f64[c->op](dst, src[0], src[0], n, c->p0, c->p1);
    else
        scalar_i64(c, dst, src[0], n);
    return TL_OK;
}

/* v as the integer dtype of range [lo, hi] holds it: Rust's `as` (truncated, saturated, NaN
 * 0). */
static int64_t as_int(double v, int64_t lo, int64_t hi)
{
    int64_t i;
    tl_store(TL_I64, &i, 0, v);
    return i < lo ? lo : i > hi ? hi : i;
}

/* On an integer tensor both parameters become the dtype's values first, as candle's affine
 * (T::from_f64) and clamp (its bounds converted with to_dtype) do, and the op stays in int64:
 * u8 3 * 0.5 is 3 * 0, u8 1 + -2 is 1 + 0, u8 200 + 100 wraps to 44. */
tl_status tl_cpu_scalar(tl_scalar_op op, const tl_operand *dst, const tl_operand *src, double p0,
                        double p1)
{
    const tl_operand *srcs[1] = {src};
    scalar_ctx c = {op, p0, p1, 0, 0, INT64_MIN, INT64_MAX};
    tl_int_range(dst->dtype, &c.lo, &c.hi);
    c.i0 = as_int(p0, c.lo, c.hi);
    c.i1 = as_int(p1, c.lo, c.hi);
    bool ints = op == TL_SCALAR_AFFINE || op == TL_SCALAR_CLAMP;
    return ew_run(dst, srcs, 1, ints, scalar_chunk, &c);
}

static tl_status binary_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                              size_t n)
{
    tl_binary_op op = *(const tl_binary_op *)ctx;
    if (t == TL_F32)
        binary_f32[op](dst, src[0], src[1], n, 0, 0);
    else if (t == TL_F64)
        binary_f64[op](dst, src[0], src[1], n, 0, 0);
    else
        return binary_i64(op, dst, src[0], src[1], n);
    return TL_OK;
}

tl_status tl_cpu_binary(tl_binary_op op, const tl_operand *dst, const tl_operand *a,
                        const tl_operand *b)
{
    const tl_operand *srcs[2] = {a, b};
    return ew_run(dst, srcs, 2, true, binary_chunk, &op);
}

/* pow in double (an f32's pow rounded once from it): libm's pow keeps within an ulp, where
 * exp(b * log(a)) carries log's rounding times |b log a| (some 30 ulps in f64). Outside
 * positive finite bases and finite exponents the composite stays, for candle's results there
 * (NaN for a < 0, and for 0 ^ 0, 1 ^ inf, inf ^ 0, which libm's pow makes 1). */
static double pow_one(double x, double y)
{
    return x > 0 && isfinite(x) && isfinite(y) ? pow(x, y) : exp(y * log(x));
}

static tl_status pow_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                           size_t n)
{
    (void)ctx;
    if (t == TL_F32) {
        float *d = dst;
        const float *a = src[0], *b = src[1];
        for (size_t i = 0; i < n; i++)
            d[i] = (float)pow_one(a[i], b[i]);
    } else {
        double *d = dst;
        const double *a = src[0], *b = src[1];
        for (size_t i = 0; i < n; i++)
            d[i] = pow_one(a[i], b[i]);
    }
    return TL_OK;
}

tl_status tl_cpu_pow(const tl_operand *dst, const tl_operand *a, const tl_operand *b)
{
    const tl_operand *srcs[2] = {a, b};
    return ew_run(dst, srcs, 2, false, pow_chunk, NULL);
}

/* Comparisons and where take the packed path (their dtypes differ from dst's), as double or
 * as int64; the same loop serves both. */
#define CMP_LOOP(T)                                                                               \
    do {                                                                                          \
        const T *a = src[0], *b = src[1];                                                         \
        T *d = dst;                                                                               \
        for (size_t i = 0; i < n; i++) {                                                          \
            switch (op) {                                                                         \
            case TL_EQ: d[i] = a[i] == b[i]; break;                                               \
            case TL_NE: d[i] = a[i] != b[i]; break;                                               \
            case TL_LT: d[i] = a[i] < b[i]; break;                                                \
            case TL_LE: d[i] = a[i] <= b[i]; break;                                               \
            case TL_GT: d[i] = a[i] > b[i]; break;                                                \
            case TL_GE: d[i] = a[i] >= b[i]; break;                                               \
            case TL_CMP_COUNT: d[i] = 0; break;                                                   \
            }                                                                                     \
        }                                                                                         \
    } while (0)

static tl_status cmp_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                           size_t n)
{
    tl_cmp_op op = *(const tl_cmp_op *)ctx;
    if (t == TL_I64)
        CMP_LOOP(int64_t);
    else
        CMP_LOOP(double);
    return TL_OK;
}

tl_status tl_cpu_cmp(tl_cmp_op op, const tl_operand *dst, const tl_operand *a, const tl_operand *b)
{
    const tl_operand *srcs[2] = {a, b};
    return ew_run(dst, srcs, 2, true, cmp_chunk, &op);
}

#define WHERE_LOOP(T)                                                                             \
    do {                                                                                          \
        const T *c = src[0], *on_true = src[1], *on_false = src[2];                               \
        T *d = dst;                                                                               \
        for (size_t i = 0; i < n; i++)                                                            \
            d[i] = c[i] != 0 ? on_true[i] : on_false[i];                                          \
    } while (0)

static tl_status where_chunk(const void *ctx, tl_dtype t, void *dst, const void *const *src,
                             size_t n)
{
    (void)ctx;
    if (t == TL_I64)
        WHERE_LOOP(int64_t);
    else
        WHERE_LOOP(double);
    return TL_OK;
}

tl_status tl_cpu_where(const tl_operand *dst, const tl_operand *cond, const tl_operand *t,
                       const tl_operand *f)
{
    const tl_operand *srcs[3] = {cond, t, f};
    return ew_run(dst, srcs, 3, true, where_chunk, NULL);
}
