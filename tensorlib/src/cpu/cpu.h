/*
 * cpu.h - the cpu backend's kernels, shared between its files. cpu_backend.c lists them in
 * the backend table; nothing outside cpu/ calls them directly.
 */
#ifndef TL_CPU_H
#define TL_CPU_H

#include "../backend.h"

/* Marks a typed loop to be built once per vector width and picked at load time (an ifunc),
 * so a machine with AVX2 or AVX-512 uses it without a -march that would shut out older ones.
 * Not under ThreadSanitizer: its instrumented ifunc resolvers run before it is initialised. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&      \
    !defined(__SANITIZE_THREAD__)
#define SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD_CLONES
#endif

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
