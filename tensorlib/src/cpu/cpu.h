/*
 * cpu.h - the cpu backend's kernels, shared between its files. cpu_backend.c lists them in
 * the backend table; nothing outside cpu/ calls them directly.
 */
#ifndef TL_CPU_H
#define TL_CPU_H

#include <string.h>

#include "../backend.h"

/* Marks a typed loop to be built once per vector width and picked at load time (an ifunc),
 * so a machine with AVX2 or AVX-512 uses it without a -march that would shut out older ones.
 * Not under ThreadSanitizer: its instrumented ifunc resolvers run before it is initialised. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&      \
    !defined(__SANITIZE_THREAD__)
#define TL_X86_CLONES 1
#define SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD_CLONES
#endif

/* ------------------------------------------------------------------------------------------
 * exp for f32 in a form the compiler vectorizes (libm's expf is a call per element):
 * x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-7 polynomial (Cephes' coefficients),
 * 2^n applied in two halves so results that underflow to subnormals or overflow to infinity
 * come out right. Error about 1 ulp.
 * ---------------------------------------------------------------------------------------- */
static inline float tl_pow2i(int32_t e)
{
    uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float tl_exp_f32(float x)
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
    float y = p * tl_pow2i(e1) * tl_pow2i(e - e1);
    return x != x ? x : y;
}

/* cpu_copy.c */
/* Moves n cells of size bytes (1, 2, 4 or 8) from src to dst; steps count cells. */
void tl_cpu_move_cells(void *dst, size_t dstep, const void *src, size_t sstep, size_t n,
                       size_t size);
tl_status tl_cpu_copy(const tl_operand *dst, const tl_operand *src);
tl_status tl_cpu_fill(const tl_operand *dst, double value);

/* cpu_elementwise.c */
tl_status tl_cpu_unary(tl_unary_op op, const tl_operand *dst, const tl_operand *src);
tl_status tl_cpu_scalar(tl_scalar_op op, const tl_operand *dst, const tl_operand *src, double p0,
                        double p1);
tl_status tl_cpu_binary(tl_binary_op op, const tl_operand *dst, const tl_operand *a,
                        const tl_operand *b);
tl_status tl_cpu_pow(const tl_operand *dst, const tl_operand *a, const tl_operand *b);
tl_status tl_cpu_cmp(tl_cmp_op op, const tl_operand *dst, const tl_operand *a, const tl_operand *b);
tl_status tl_cpu_where(const tl_operand *dst, const tl_operand *cond, const tl_operand *t,
                       const tl_operand *f);

/* cpu_reduce.c */
tl_status tl_cpu_reduce(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                        uint32_t reduced);

/* Element i of a cpu buffer of dtype (byte address). */
static inline void *tl_cpu_at(void *buf, tl_dtype dtype, size_t i)
{
    return (char *)buf + i * tl_dtype_size(dtype);
}

#endif
