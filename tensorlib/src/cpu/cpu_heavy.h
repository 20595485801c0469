/*
 * cpu_heavy.h - the cpu kernels of the heavy ops: matmul and gemm (BLAS), conv1d/conv2d
 * (im2col + gemm), the index ops, softmax, sort and the scans (cumsum, cumprod). cpu_backend.c lists the tl_backend_i members in
 * its table; the other declarations are helpers shared between these files.
 * Prototypes are grouped by the file that defines them.
 */
#ifndef TL_CPU_HEAVY_H
#define TL_CPU_HEAVY_H

#include "cpu.h"

/* ------------------------------------------------------------------------------------------
 * cpu_scratch.c
 * ---------------------------------------------------------------------------------------- */
/* Row-major elements of o in dtype: o's own memory when it already is that (*owned = NULL),
 * else a copy made by the cpu copy member that the caller frees (*owned). */
tl_status tl_cpu_contiguous(const char *op, const tl_operand *o, tl_dtype dtype,
                            const void **data, void **owned);
/* The dtype a float kernel computes in: f64 for f64, f32 for f32, f16 and bf16. */
tl_dtype tl_cpu_compute_dtype(tl_dtype dtype);
/* dst (any layout and dtype) = the contiguous elements of src, which have dtype and dst's
 * shape. The last step of kernels that compute in a wider dtype than they return. */
tl_status tl_cpu_store_contiguous(const tl_operand *dst, const void *src, tl_dtype dtype);

/* ------------------------------------------------------------------------------------------
 * cpu_matmul.c
 * ---------------------------------------------------------------------------------------- */
/* c[m, n] (row stride ldc) = op(a) @ op(b) for f32 or f64 row-major buffers, op = transpose
 * when the trans flag is set. Dims must be nonzero and fit in an int (callers check). */
void tl_cpu_gemm(tl_dtype dtype, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                 const void *a, size_t lda, const void *b, size_t ldb, void *c, size_t ldc);
tl_status tl_cpu_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b);

/* ------------------------------------------------------------------------------------------
 * cpu_conv.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_conv1d(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p);
tl_status tl_cpu_conv2d(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p);
tl_status tl_cpu_conv_transpose(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                                const tl_conv_params *p);

/* ------------------------------------------------------------------------------------------
 * cpu_pool.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_pool2d(const tl_operand *dst, const tl_operand *src, const size_t *window,
                        const size_t *stride, bool max);

/* ------------------------------------------------------------------------------------------
 * cpu_indexing.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_index_select(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                              size_t dim);
tl_status tl_cpu_gather(const tl_operand *dst, const tl_operand *src, const tl_operand *ids,
                        size_t dim);
tl_status tl_cpu_scatter(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                         size_t dim, bool add);
tl_status tl_cpu_index_add(const tl_operand *dst, const tl_operand *ids, const tl_operand *src,
                           size_t dim);

/* ------------------------------------------------------------------------------------------
 * cpu_softmax.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_softmax(const tl_operand *dst, const tl_operand *src, size_t dim, bool log);

/* ------------------------------------------------------------------------------------------
 * cpu_sort.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_arg_sort(const tl_operand *dst, const tl_operand *src, bool ascending);

/* ------------------------------------------------------------------------------------------
 * cpu_scan.c
 * ---------------------------------------------------------------------------------------- */
tl_status tl_cpu_scan(const tl_operand *dst, const tl_operand *src, size_t dim, bool product);

#endif
