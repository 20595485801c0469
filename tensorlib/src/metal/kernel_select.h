/*
 * kernel_select.h - which Metal kernel runs an op: the kernel's name (by family and dtype)
 * and the function constants that specialise it (op, contiguous or strided, index dtype).
 * Plain C with no Metal in it, so it is compiled and unit-tested on every platform; the
 * names it produces are checked against the embedded kernels.metal on Linux too.
 */
#ifndef TL_METAL_KERNEL_SELECT_H
#define TL_METAL_KERNEL_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "tl.h"

typedef enum tlm_family {
    TLM_FILL,
    TLM_COPY,
    TLM_UNARY,        /* op: tl_unary_op */
    TLM_SCALAR,       /* op: tl_scalar_op (affine, powf, clamp, elu) */
    TLM_BINARY,       /* op: tl_binary_op */
    TLM_CMP,          /* op: tl_cmp_op */
    TLM_WHERE,        /* aux: dtype of the condition */
    TLM_REDUCE,       /* op: tl_reduce_op */
    TLM_CAST,         /* aux: target dtype */
    TLM_MATMUL,
    TLM_INDEX_SELECT, /* aux: dtype of the ids */
    TLM_GATHER,       /* aux: dtype of the ids */
    TLM_SOFTMAX,      /* op: TLK_SOFTMAX or TLK_LOG_SOFTMAX */
    TLM_FAMILY_COUNT
} tlm_family;

typedef struct tlm_request {
    tlm_family family;
    uint32_t op;     /* see tlm_family; 0 where the family has one op */
    tl_dtype dtype;  /* dtype of the data operand (the source, for a cast) */
    tl_dtype aux;    /* see tlm_family; ignored elsewhere */
    bool contiguous; /* every operand contiguous */
} tlm_request;

#define TLM_KERNEL_NAME_MAX 32

typedef struct tlm_kernel {
    char name[TLM_KERNEL_NAME_MAX]; /* MSL host_name, e.g. "unary_f32", "cast_f16_u8" */
    uint32_t op;                    /* value for TLK_FC_OP (a TLK_* code) */
    bool contiguous;                /* value for TLK_FC_CONTIGUOUS */
    uint32_t aux_dtype;             /* value for TLK_FC_AUX_DTYPE (TLK_AUX_*) */
} tlm_kernel;

/* Fills *k and returns true, or returns false when Metal has no kernel for the request (f64,
 * an integer dtype for a float-only op, an op code out of range). */
bool tlm_select(const tlm_request *req, tlm_kernel *k);

/* The op's name for error messages: "exp", "affine", "add", "argmax", "to_dtype", ... */
const char *tlm_op_name(tlm_family family, uint32_t op);

/* Calls fn once for every kernel name tlm_select can produce. */
void tlm_for_each_kernel_name(void (*fn)(const char *name, void *ctx), void *ctx);

#endif
