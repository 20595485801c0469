/*
 * cpu_conv.c - conv1d and conv2d on the cpu by im2col + gemm. For each batch item the input
 * windows are unrolled into a [c_in*kh*kw, oh*ow] matrix, and each group's slice of the
 * kernel [c_out/groups, c_in/groups*kh*kw] multiplies its slice of that matrix (one BLAS call
 * per group). conv1d is conv2d with height 1. Floats only; f16/bf16 compute in f32.
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#include "cpu_heavy.h"

/* One convolution seen as 2-D (conv1d: h = kh = oh = 1, no padding along the height). */
typedef struct conv_geom {
    const char *op;
    size_t batch, c_in, c_out, groups;
    size_t h, w, kh, kw, oh, ow;
    size_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
} conv_geom;

/* cols[(c, ky, kx), (oy, ox)] = x[c, oy*stride + ky*dil - pad, ox*...], zero outside x. */
#define DEFINE_IM2COL(NAME, T)                                                                   \
    static void NAME(const T *x, const conv_geom *g, T *cols)                                   \
    {                                                                                            \
        T *row = cols;                                                                           \
        for (size_t c = 0; c < g->c_in; c++)                                                     \
            for (size_t ky = 0; ky < g->kh; ky++)                                                \
                for (size_t kx = 0; kx < g->kw; kx++)                                            \
                    for (size_t oy = 0; oy < g->oh; oy++) {                                      \
                        ptrdiff_t iy = (ptrdiff_t)(oy * g->stride_h + ky * g->dil_h) -           \
                                       (ptrdiff_t)g->pad_h;                                      \
                        bool row_in = iy >= 0 && iy < (ptrdiff_t)g->h;                           \
                        const T *line = row_in ? x + (c * g->h + (size_t)iy) * g->w : x;         \
                        for (size_t ox = 0; ox < g->ow; ox++) {                                  \
                            ptrdiff_t ix = (ptrdiff_t)(ox * g->stride_w + kx * g->dil_w) -       \
                                           (ptrdiff_t)g->pad_w;                                  \
                            bool in = row_in && ix >= 0 && ix < (ptrdiff_t)g->w;                 \
                            *row++ = in ? line[ix] : 0;                                          \
                        }                                                                        \
                    }                                                                            \
    }
DEFINE_IM2COL(im2col_f32, float)
DEFINE_IM2COL(im2col_f64, double)

static void im2col(tl_dtype dtype, const void *x, const conv_geom *g, void *cols)
{
    if (dtype == TL_F64)
        im2col_f64(x, g, cols);
    else
        im2col_f32(x, g, cols);
}

/* out[b, c_out, oh*ow] = per group: kernel slice @ cols slice; all contiguous, of dtype. */
static void conv_gemms(tl_dtype dtype, const void *x, const void *k, void *cols, void *out,
                       const conv_geom *g)
{
    size_t es = tl_dtype_size(dtype), ohw = g->oh * g->ow;
    size_t cin_g = g->c_in / g->groups, cout_g = g->c_out / g->groups;
    size_t depth = cin_g * g->kh * g->kw; /* the gemm's k: one group's window */
    for (size_t b = 0; b < g->batch; b++) {
        im2col(dtype, (const char *)x + b * g->c_in * g->h * g->w * es, g, cols);
        for (size_t grp = 0; grp < g->groups; grp++)
            tl_cpu_gemm(dtype, false, false, cout_g, ohw, depth,
                        (const char *)k + grp * cout_g * depth * es, depth,
                        (const char *)cols + grp * depth * ohw * es, ohw,
                        (char *)out + (b * g->c_out + grp * cout_g) * ohw * es, ohw);
    }
}

static tl_status conv_run(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                          const conv_geom *g)
{
    size_t ohw = g->oh * g->ow, depth = g->c_in / g->groups * g->kh * g->kw;
    if (g->batch == 0 || g->c_out == 0 || ohw == 0)
        return TL_OK;
    if (ohw > INT_MAX || depth > INT_MAX || g->c_out > INT_MAX)
        return tl_fail(TL_ERR_RANGE, "%s: output %zux%zu or window %zu exceeds BLAS's int range",
                       g->op, g->c_out, ohw, depth);
    tl_dtype ct = tl_cpu_compute_dtype(dst->dtype);
    size_t es = tl_dtype_size(ct);
    bool direct = dst->dtype == ct; /* dst is fresh and contiguous: write into it */
    size_t out_bytes = g->batch * g->c_out * ohw * es; /* at most twice dst's bytes */
    size_t cols_bytes;                                 /* can outgrow both tensors */
    if (__builtin_mul_overflow(g->c_in * g->kh * g->kw, ohw * es, &cols_bytes))
        return tl_fail(TL_ERR_NOMEM, "%s: im2col buffer of %zu x %zu elements is too large",
                       g->op, g->c_in * g->kh * g->kw, ohw);
    const void *xd, *kd;
    void *xo = NULL, *ko = NULL;
    void *cols = tl_malloc(cols_bytes);
    void *out = direct ? (char *)dst->buf + dst->layout->offset * es : tl_malloc(out_bytes);
    tl_status st = cols && out ? TL_OK : tl_fail_nomem(g->op, cols_bytes + out_bytes);
    if (st == TL_OK)
        st = tl_cpu_contiguous(g->op, x, ct, &xd, &xo);
    if (st == TL_OK)
        st = tl_cpu_contiguous(g->op, k, ct, &kd, &ko);
    if (st == TL_OK) {
        conv_gemms(ct, xd, kd, cols, out, g);
        if (!direct)
            st = tl_cpu_store_contiguous(dst, out, ct);
    }
    if (!direct)
        free(out);
    free(cols);
    free(xo);
    free(ko);
    return st;
}

tl_status tl_cpu_conv1d(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p)
{
    const size_t *xs = x->layout->shape, *ks = k->layout->shape;
    conv_geom g = {
        .op = "conv1d", .batch = xs[0], .c_in = xs[1], .c_out = ks[0], .groups = p->groups,
        .h = 1, .w = xs[2], .kh = 1, .kw = ks[2], .oh = 1, .ow = dst->layout->shape[2],
        .pad_h = 0, .pad_w = p->padding, .stride_h = 1, .stride_w = p->stride,
        .dil_h = 1, .dil_w = p->dilation,
    };
    return conv_run(dst, x, k, &g);
}

tl_status tl_cpu_conv2d(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                        const tl_conv_params *p)
{
    const size_t *xs = x->layout->shape, *ks = k->layout->shape;
    conv_geom g = {
        .op = "conv2d", .batch = xs[0], .c_in = xs[1], .c_out = ks[0], .groups = p->groups,
        .h = xs[2], .w = xs[3], .kh = ks[2], .kw = ks[3],
        .oh = dst->layout->shape[2], .ow = dst->layout->shape[3],
        .pad_h = p->padding, .pad_w = p->padding, .stride_h = p->stride, .stride_w = p->stride,
        .dil_h = p->dilation, .dil_w = p->dilation,
    };
    return conv_run(dst, x, k, &g);
}

/* ------------------------------------------------------------------------------------------
 * conv_transpose: every input element scatters its products with the kernel into the output
 * (the adjoint of conv), accumulated in double, then stored in dst's dtype. conv_transpose1d
 * is the 2-D walk with height 1.
 * ---------------------------------------------------------------------------------------- */
typedef struct tconv_geom {
    size_t batch, c_in, cout_g, groups, h, w, kh, kw, oh, ow;
} tconv_geom;

static void tconv_walk(const double *x, const double *k, double *out, const tconv_geom *g,
                       const tl_conv_params *p, bool two_d)
{
    size_t cin_g = g->c_in / g->groups, c_out = g->cout_g * g->groups;
    size_t pad_h = two_d ? p->padding : 0, s_h = two_d ? p->stride : 1;
    size_t d_h = two_d ? p->dilation : 1;
    for (size_t b = 0; b < g->batch; b++)
        for (size_t ci = 0; ci < g->c_in; ci++) {
            size_t grp = ci / cin_g;
            const double *xp = x + (b * g->c_in + ci) * g->h * g->w;
            for (size_t co = 0; co < g->cout_g; co++) {
                const double *kp = k + (ci * g->cout_g + co) * g->kh * g->kw;
                double *op = out + (b * c_out + grp * g->cout_g + co) * g->oh * g->ow;
                for (size_t y = 0; y < g->h; y++)
                    for (size_t ky = 0; ky < g->kh; ky++) {
                        ptrdiff_t oy = (ptrdiff_t)(y * s_h + ky * d_h) - (ptrdiff_t)pad_h;
                        if (oy < 0 || oy >= (ptrdiff_t)g->oh)
                            continue;
                        for (size_t xx = 0; xx < g->w; xx++)
                            for (size_t kx = 0; kx < g->kw; kx++) {
                                ptrdiff_t ox = (ptrdiff_t)(xx * p->stride + kx * p->dilation) -
                                               (ptrdiff_t)p->padding;
                                if (ox >= 0 && ox < (ptrdiff_t)g->ow)
                                    op[(size_t)oy * g->ow + (size_t)ox] +=
                                        xp[y * g->w + xx] * kp[ky * g->kw + kx];
                            }
                    }
            }
        }
}

tl_status tl_cpu_conv_transpose(const tl_operand *dst, const tl_operand *x, const tl_operand *k,
                                const tl_conv_params *p)
{
    const char *op = "conv_transpose";
    const size_t *xs = x->layout->shape, *ks = k->layout->shape, *os = dst->layout->shape;
    bool two_d = x->layout->ndim == 4;
    tconv_geom g = {
        .batch = xs[0], .c_in = xs[1], .cout_g = ks[1], .groups = p->groups,
        .h = two_d ? xs[2] : 1, .w = xs[two_d ? 3 : 2], .kh = two_d ? ks[2] : 1,
        .kw = ks[two_d ? 3 : 2], .oh = two_d ? os[2] : 1, .ow = os[two_d ? 3 : 2],
    };
    size_t n = tl_layout_elems(dst->layout);
    const void *xd, *kd;
    void *xo = NULL, *ko = NULL;
    double *out = tl_calloc(n, sizeof *out);
    tl_status st = out ? TL_OK : tl_fail_nomem(op, n * sizeof *out);
    if (st == TL_OK)
        st = tl_cpu_contiguous(op, x, TL_F64, &xd, &xo);
    if (st == TL_OK)
        st = tl_cpu_contiguous(op, k, TL_F64, &kd, &ko);
    if (st == TL_OK) {
        tconv_walk(xd, kd, out, &g, p, two_d);
        st = tl_cpu_store_contiguous(dst, out, TL_F64);
    }
    free(out);
    free(xo);
    free(ko);
    return st;
}
