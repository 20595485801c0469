/*
 * cpu_matmul.c - batched matmul on the cpu. f32 and f64 go to BLAS (OpenBLAS's cblas on
 * Linux, Accelerate on macOS), which reads row-major and transposed (column-major) trailing
 * matrices in place, so a tl_transpose'd operand costs no copy; other strides are packed
 * first. f16/bf16 compute in f32 through the same path. Integer dtypes use a plain loop in
 * int64 that wraps into the narrower integers.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef TL_BLAS_ACCELERATE
#include <Accelerate/Accelerate.h>
#else
#include <cblas.h>
#endif

#include "cpu_heavy.h"

#define OP "matmul"

typedef struct mm_dims {
    size_t batch, m, n, k;
} mm_dims;

/* How BLAS reads one trailing rows x cols matrix: as stored (row-major) or as the transpose
 * of a row-major matrix, with its leading dimension in elements. */
typedef struct blas_mat {
    bool trans;
    size_t ld;
} blas_mat;

/* False when the strides are neither (ld, 1) nor (1, ld) with ld big enough, e.g. a
 * broadcast matrix: the operand then has to be packed. Size-1 dims may carry any stride. */
static bool blas_view(size_t rows, size_t cols, size_t rs, size_t cs, blas_mat *bm)
{
    if (cols == 1 || cs == 1) {
        size_t ld = rows == 1 ? cols : rs;
        if (ld >= cols && ld <= INT_MAX) {
            *bm = (blas_mat){false, ld};
            return true;
        }
    }
    if (rows == 1 || rs == 1) {
        size_t ld = cols == 1 ? rows : cs;
        if (ld >= rows && ld <= INT_MAX) {
            *bm = (blas_mat){true, ld};
            return true;
        }
    }
    return false;
}

/* Element offset of batch item i: the leading dims walked in row-major order. */
static size_t batch_offset(const tl_layout *l, size_t i)
{
    size_t off = l->offset;
    for (size_t d = l->ndim - 2; d-- > 0;) {
        off += (i % l->shape[d]) * l->stride[d];
        i /= l->shape[d];
    }
    return off;
}

void tl_cpu_gemm(tl_dtype dtype, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                 const void *a, size_t lda, const void *b, size_t ldb, void *c, size_t ldc)
{
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    if (dtype == TL_F64)
        cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b,
                    (int)ldb, 0.0, c, (int)ldc);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b,
                    (int)ldb, 0.0f, c, (int)ldc);
}

/* One BLAS operand: o itself when BLAS can read its trailing matrices, else a packed
 * row-major copy described by *packed_layout (*owned is then to be freed). */
static tl_status blas_operand(const tl_operand *o, tl_layout *packed_layout, tl_operand *out,
                              blas_mat *bm, void **owned)
{
    const tl_layout *l = o->layout;
    size_t nd = l->ndim, rows = l->shape[nd - 2], cols = l->shape[nd - 1];
    *out = *o;
    *owned = NULL;
    if (blas_view(rows, cols, l->stride[nd - 2], l->stride[nd - 1], bm))
        return TL_OK;
    const void *data;
    tl_status st = tl_cpu_contiguous(OP, o, o->dtype, &data, owned);
    if (st != TL_OK)
        return st;
    tl_layout_contiguous(packed_layout, l->shape, nd, 0);
    *out = (tl_operand){*owned, packed_layout, o->dtype};
    *bm = (blas_mat){false, cols};
    return TL_OK;
}

/* dst = a @ b where all three are f32 or all f64; dst contiguous. */
static tl_status blas_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b,
                             const mm_dims *d)
{
    tl_layout la, lb;
    tl_operand pa, pb;
    blas_mat ma, mb;
    void *owned_a, *owned_b = NULL;
    tl_status st = blas_operand(a, &la, &pa, &ma, &owned_a);
    if (st == TL_OK)
        st = blas_operand(b, &lb, &pb, &mb, &owned_b);
    if (st == TL_OK) {
        size_t es = tl_dtype_size(dst->dtype);
        char *c = (char *)dst->buf + dst->layout->offset * es;
        for (size_t i = 0; i < d->batch; i++)
            tl_cpu_gemm(dst->dtype, ma.trans, mb.trans, d->m, d->n, d->k,
                        (const char *)pa.buf + batch_offset(pa.layout, i) * es, ma.ld,
                        (const char *)pb.buf + batch_offset(pb.layout, i) * es, mb.ld,
                        c + i * d->m * d->n * es, d->n);
    }
    free(owned_a);
    free(owned_b);
    return st;
}

/* f16/bf16: both operands converted to f32, multiplied by BLAS, rounded into dst. */
static tl_status half_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b,
                             const mm_dims *d)
{
    const void *da, *db;
    void *owned_a = NULL, *owned_b = NULL;
    float *c = tl_malloc(d->batch * d->m * d->n * sizeof *c);
    tl_status st = c ? TL_OK : tl_fail_nomem(OP, d->batch * d->m * d->n * sizeof *c);
    if (st == TL_OK)
        st = tl_cpu_contiguous(OP, a, TL_F32, &da, &owned_a);
    if (st == TL_OK)
        st = tl_cpu_contiguous(OP, b, TL_F32, &db, &owned_b);
    if (st == TL_OK) {
        tl_layout la, lb, lc;
        tl_layout_contiguous(&la, a->layout->shape, a->layout->ndim, 0);
        tl_layout_contiguous(&lb, b->layout->shape, b->layout->ndim, 0);
        tl_layout_contiguous(&lc, dst->layout->shape, dst->layout->ndim, 0);
        tl_operand fa = {(void *)da, &la, TL_F32}, fb = {(void *)db, &lb, TL_F32};
        tl_operand fc = {c, &lc, TL_F32};
        st = blas_matmul(&fc, &fa, &fb, d);
        if (st == TL_OK)
            st = tl_cpu_store_contiguous(dst, c, TL_F32);
    }
    free(owned_a);
    free(owned_b);
    free(c);
    return st;
}

/* Integer dtypes compute by the header's integer rule: products and sums in int64 (wrapping
 * there, done in uint64 where it is well defined), wrapped when stored into a narrower one. */
static void int_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b,
                       const mm_dims *d)
{
    const tl_layout *la = a->layout, *lb = b->layout;
    size_t nd = la->ndim;
    size_t ars = la->stride[nd - 2], acs = la->stride[nd - 1];
    size_t brs = lb->stride[nd - 2], bcs = lb->stride[nd - 1];
    size_t out = dst->layout->offset;
    for (size_t bi = 0; bi < d->batch; bi++) {
        size_t oa = batch_offset(la, bi), ob = batch_offset(lb, bi);
        for (size_t i = 0; i < d->m; i++)
            for (size_t j = 0; j < d->n; j++) {
                uint64_t acc = 0;
                for (size_t p = 0; p < d->k; p++)
                    acc += (uint64_t)tl_load_i64(a->dtype, a->buf, oa + i * ars + p * acs) *
                           (uint64_t)tl_load_i64(b->dtype, b->buf, ob + p * brs + j * bcs);
                tl_store_i64(dst->dtype, dst->buf, out++, (int64_t)acc);
            }
    }
}

tl_status tl_cpu_matmul(const tl_operand *dst, const tl_operand *a, const tl_operand *b)
{
    const tl_layout *la = a->layout, *lb = b->layout;
    size_t nd = la->ndim;
    mm_dims d = {1, la->shape[nd - 2], lb->shape[nd - 1], la->shape[nd - 1]};
    for (size_t i = 0; i + 2 < nd; i++)
        d.batch *= la->shape[i];
    if (d.batch == 0 || d.m == 0 || d.n == 0)
        return TL_OK;
    if (d.m > INT_MAX || d.n > INT_MAX || d.k > INT_MAX)
        return tl_fail(TL_ERR_RANGE, "%s: m=%zu, n=%zu, k=%zu exceed BLAS's int range", OP, d.m,
                       d.n, d.k);
    if (d.k == 0) { /* an empty sum: zeros, which BLAS may not write for k = 0 */
        memset((char *)dst->buf + dst->layout->offset * tl_dtype_size(dst->dtype), 0,
               d.batch * d.m * d.n * tl_dtype_size(dst->dtype));
        return TL_OK;
    }
    switch (dst->dtype) {
    case TL_F32:
    case TL_F64: return blas_matmul(dst, a, b, &d);
    case TL_F16:
    case TL_BF16: return half_matmul(dst, a, b, &d);
    default: int_matmul(dst, a, b, &d); return TL_OK;
    }
}
