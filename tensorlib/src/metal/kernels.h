/*
 * kernels.h - what the host code and the Metal kernels agree on: argument structs, the
 * function-constant slots, the op codes each kernel family switches on, and the tile size of
 * the matmul kernel.
 *
 * This one file is compiled twice: as C11 by the host (kernel_select.c, layout_args.c,
 * metal_backend.m) and as Metal Shading Language, where the build embeds it in front of
 * kernels.metal (see embed_msl.py). So it may use only what both languages share: fixed-width
 * integers, float, plain structs and #define. Every struct is made of 4-byte fields so the C
 * and MSL layouts agree without packing rules.
 */
#ifndef TLK_KERNELS_H
#define TLK_KERNELS_H

#ifdef __METAL_VERSION__
#include <metal_stdlib>
#else
#include <stdint.h>
#endif

#define TLK_MAX_DIMS 8
#define TLK_MATMUL_TILE 16       /* matmul threadgroups are TILE x TILE threads */
#define TLK_ROW_THREADS_MAX 1024 /* threads per row in reduce and softmax (threadgroup arrays) */

/* Function-constant slots. Every pipeline is specialised with all three; a kernel reads the
 * ones it needs (Metal ignores values for constants a function does not declare). */
#define TLK_FC_OP 0         /* uint: op code within the kernel's family */
#define TLK_FC_CONTIGUOUS 1 /* bool: every operand is contiguous, index arithmetic skipped */
#define TLK_FC_AUX_DTYPE 2  /* uint: dtype of an index or condition operand (TLK_AUX_*) */

/* Dtypes of index (index_select, gather) and condition (where_cond) operands. */
#define TLK_AUX_U8 0
#define TLK_AUX_U32 1
#define TLK_AUX_I64 2

/* Unary family, same order as tl_unary_op (kernel_select.c asserts the mapping). */
#define TLK_UNARY_EXP 0
#define TLK_UNARY_LOG 1
#define TLK_UNARY_SIN 2
#define TLK_UNARY_COS 3
#define TLK_UNARY_TANH 4
#define TLK_UNARY_ABS 5
#define TLK_UNARY_NEG 6
#define TLK_UNARY_RECIP 7
#define TLK_UNARY_SQR 8
#define TLK_UNARY_SQRT 9
#define TLK_UNARY_RELU 10
#define TLK_UNARY_GELU 11
#define TLK_UNARY_GELU_ERF 12
#define TLK_UNARY_SILU 13
#define TLK_UNARY_FLOOR 14
#define TLK_UNARY_CEIL 15
#define TLK_UNARY_ROUND 16
#define TLK_UNARY_SIGN 17
#define TLK_UNARY_SIGMOID 18
#define TLK_UNARY_ERF 19

/* Scalar-parameter family: out = f(x, p0, p1). */
#define TLK_SCALAR_AFFINE 0 /* x * p0 + p1 */
#define TLK_SCALAR_POWF 1   /* x ^ p0 */
#define TLK_SCALAR_CLAMP 2  /* min(max(x, p0), p1) */
#define TLK_SCALAR_ELU 3    /* x >= 0 ? x : p0 * (exp(x) - 1) */

#define TLK_BINARY_ADD 0
#define TLK_BINARY_SUB 1
#define TLK_BINARY_MUL 2
#define TLK_BINARY_DIV 3
#define TLK_BINARY_MAXIMUM 4
#define TLK_BINARY_MINIMUM 5

#define TLK_CMP_EQ 0
#define TLK_CMP_NE 1
#define TLK_CMP_LT 2
#define TLK_CMP_LE 3
#define TLK_CMP_GT 4
#define TLK_CMP_GE 5

#define TLK_REDUCE_SUM 0
#define TLK_REDUCE_MEAN 1
#define TLK_REDUCE_MAX 2
#define TLK_REDUCE_MIN 3
#define TLK_REDUCE_ARGMAX 4
#define TLK_REDUCE_ARGMIN 5

#define TLK_SOFTMAX 0
#define TLK_LOG_SOFTMAX 1

/* An operand's view of its buffer, in elements. Dims beyond ndim are ignored. A broadcast dim
 * has stride 0. */
typedef struct tlk_layout {
    uint32_t ndim;
    uint32_t offset;               /* elements from the start of the bound buffer */
    uint32_t shape[TLK_MAX_DIMS];
    uint32_t stride[TLK_MAX_DIMS]; /* elements */
} tlk_layout;

/* fill: dst[i] = value over dst's layout. Float dtypes read fvalue, integer dtypes ivalue
 * (split in two 32-bit halves because i64 values must survive exactly). */
typedef struct tlk_fill_args {
    uint32_t n;
    float fvalue;
    uint32_t ivalue_lo, ivalue_hi;
    tlk_layout dst;
} tlk_fill_args;

/* copy: dst (strided) <- src (strided), same dtype. Also used for slice_set and tl_copy. */
typedef struct tlk_copy_args {
    uint32_t n;
    tlk_layout src;
    tlk_layout dst;
} tlk_copy_args;

/* unary, scalar-parameter and cast families: contiguous out[i] <- f(src at logical i). */
typedef struct tlk_map_args {
    uint32_t n;
    float p0, p1;
    tlk_layout src;
} tlk_map_args;

/* binary and cmp: a and b are already broadcast to the output shape (stride 0 where
 * broadcast); out is contiguous in that shape. */
typedef struct tlk_binary_args {
    uint32_t n;
    tlk_layout a, b;
} tlk_binary_args;

/* where_cond: cond, on_true and on_false broadcast to the output shape. */
typedef struct tlk_where_args {
    uint32_t n;
    tlk_layout cond, on_true, on_false;
} tlk_where_args;

/* reduce: one threadgroup per output element. kept walks the output elements' starting
 * points in src (its shape is the output shape without the reduced dims); reduced walks the
 * reduced dims from there (offset 0). */
typedef struct tlk_reduce_args {
    uint32_t out_n;
    uint32_t reduced_n;
    tlk_layout kept;
    tlk_layout reduced;
} tlk_reduce_args;

/* softmax over one dim: one threadgroup per row. kept_src/kept_dst give each row's start in
 * src and in the contiguous dst; the row itself steps by src_stride/dst_stride. */
typedef struct tlk_softmax_args {
    uint32_t rows;
    uint32_t len;
    uint32_t src_stride, dst_stride;
    tlk_layout kept_src, kept_dst;
} tlk_softmax_args;

/* matmul: out[batch][m][n] (contiguous) = a[batch] (m x k) @ b[batch] (k x n). a_batch and
 * b_batch walk the leading dims (shape = batch dims, offset = the operand's start). */
typedef struct tlk_matmul_args {
    uint32_t batch, m, n, k;
    uint32_t a_row_stride, a_col_stride;
    uint32_t b_row_stride, b_col_stride;
    tlk_layout a_batch, b_batch;
} tlk_matmul_args;

/* index_select: out has src's shape with dim replaced by ids' length; ids is 1-D.
 * gather: out has ids' shape; ids has src's rank. An index outside src yields 0 (a kernel
 * cannot fail; the generic layer validates what it can on the host). */
typedef struct tlk_index_args {
    uint32_t n;
    uint32_t dim;
    uint32_t dim_size; /* src's extent along dim */
    tlk_layout src;
    tlk_layout ids;
    tlk_layout out;    /* shape of the output, contiguous strides */
} tlk_index_args;

#endif
