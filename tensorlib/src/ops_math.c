/*
 * ops_math.c - candle's composite maths: pow with a tensor exponent, var, log_sum_exp, norm. Each
 * is built from other ops (as candle builds them), so it runs on every device that has those;
 * it stops at the first failing step, whose message becomes the thread's last error with the
 * op's own name in front (tl_within).
 */
#include <math.h>

#include "backend.h"

/* Releases in and returns out: one step of a chain of ops. */
static tl_tensor *then(tl_tensor *in, tl_tensor *out)
{
    tl_release(in);
    return out;
}

/* One precision up for pow: f16 and bf16 in f32, f32 in f64 where the device has it (the
 * cpu; Metal has no f64). */
static tl_tensor *pow_operand(const tl_tensor *t)
{
    return t->dtype == TL_F32 && t->device == TL_CPU ? tl_to_dtype(t, TL_F64) : tl_widen_half(t);
}

static tl_status pow_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                            const void *ctx)
{
    (void)ctx;
    return b->pow(dst, &in[0], &in[1]);
}

/* candle's pow: exp(b * log(a)); a and b of one shape (a <= 0 gives NaN, as in candle). A
 * device with a pow kernel rounds libm's pow once (f16 and bf16 from f32); otherwise the
 * composite runs one precision up and is rounded once: log(a)'s rounding grows by |b log a|
 * through the exp (f16 2^10 was 1026, f32 1.5^20 3325.255 against 3325.2568). */
tl_tensor *tl_pow(const tl_tensor *a, const tl_tensor *b)
{
    char da[TL_DESC_STR], db[TL_DESC_STR];
    if (tl_check_same("pow", a, b) != TL_OK || tl_check_float("pow", a) != TL_OK)
        return NULL;
    if (!tl_same_shape(&a->layout, &b->layout))
        return tl_fail(TL_ERR_SHAPE, "pow: shape mismatch, lhs %s, rhs %s", tl_describe(a, da),
                       tl_describe(b, db)), NULL;
    if (a->storage->backend->pow) {
        tl_tensor *wa = tl_widen_half(a), *wb = wa ? tl_widen_half(b) : NULL, *t = NULL;
        if (wb) {
            const tl_tensor *in[2] = {wa, wb};
            const tl_layout *ls[2] = {&wa->layout, &wb->layout};
            t = tl_run_elementwise("pow", in, ls, 2, wa->layout.shape, wa->layout.ndim,
                                   wa->dtype, pow_kernel, NULL);
        }
        if (t && t->dtype != a->dtype)
            t = then(t, tl_to_dtype(t, a->dtype));
        tl_release(wa);
        tl_release(wb);
        return tl_within("pow", t);
    }
    tl_tensor *wa = pow_operand(a), *wb = wa ? pow_operand(b) : NULL;
    tl_tensor *t = wb ? tl_unary(TL_LOG, wa) : NULL;
    if (t)
        t = then(t, tl_mul(wb, t));
    if (t)
        t = then(t, tl_unary(TL_EXP, t));
    if (t && t->dtype != a->dtype)
        t = then(t, tl_to_dtype(t, a->dtype));
    tl_release(wa);
    tl_release(wb);
    return tl_within("pow", t);
}

/* The shape of t without the dims in mask. */
static size_t kept_shape(const tl_tensor *t, uint32_t mask, size_t *shape)
{
    size_t n = 0;
    for (size_t d = 0; d < t->layout.ndim; d++)
        if (!(mask & (1u << d)))
            shape[n++] = t->layout.shape[d];
    return n;
}

/* dims resolved into a mask (ndims 0: every dim), and into a list of positive dims. */
static tl_status dims_mask(const char *op, const tl_tensor *t, const size_t *dims, size_t ndims,
                           uint32_t *mask, size_t *list, size_t *nlist)
{
    *mask = 0;
    if (ndims > TL_MAX_DIMS || (ndims && !dims))
        return tl_fail(TL_ERR_ARG, "%s: bad dims (%zu given)", op, ndims);
    for (size_t i = 0; i < ndims; i++) {
        size_t d = dims[i];
        if (tl_check_dim(op, t, &d) != TL_OK)
            return TL_ERR_RANGE;
        if (*mask & (1u << d))
            return tl_fail(TL_ERR_ARG, "%s: dim %zu given twice", op, d);
        *mask |= 1u << d;
    }
    if (ndims == 0)
        *mask = (uint32_t)((1u << t->layout.ndim) - 1);
    *nlist = 0;
    for (size_t d = 0; d < t->layout.ndim; d++)
        if (*mask & (1u << d))
            list[(*nlist)++] = d;
    return TL_OK;
}

/* The elements of t that are finite; 0 where t is NaN or infinite. */
static tl_tensor *finite_or_zero(tl_tensor *t)
{
    tl_tensor *finite = tl_unary(TL_ABS, t), *zero = tl_zeros_like(t), *r = NULL;
    if (finite)
        finite = then(finite, tl_cmp_scalar(TL_LT, finite, INFINITY));
    if (finite && zero)
        r = tl_where_cond(finite, t, zero);
    tl_release(finite);
    tl_release(zero);
    return r;
}

/* candle's var_keepdim: sum((t - mean)^2) / (n - 1) along dim (unbiased), as the corrected
 * two-pass sum (sum(d^2) - sum(d)^2 / n) / (n - 1) with d = t - mean, in w's dtype: the mean
 * rounded to w's dtype is off by up to half an ulp of the values, which alone adds n * err^2
 * to the sum (f32 values near 1e6 with variance 1: 1e-3 relative); sum(d)^2 / n takes it out
 * again. It is squared as (sum(d) / sqrt(n))^2, and one that still overflows the dtype counts
 * as 0: a variance past the dtype's range is inf (as numpy and candle give), not
 * inf - inf = NaN. */
static tl_tensor *var_in(const tl_tensor *w, size_t dim, bool keepdim)
{
    double n = (double)w->layout.shape[dim];
    tl_tensor *mean = tl_reduce(TL_MEAN, w, &dim, 1, true);
    tl_tensor *d = mean ? tl_broadcast_sub(w, mean) : NULL;
    tl_tensor *sum_d = d ? tl_reduce(TL_SUM, d, &dim, 1, keepdim) : NULL;
    tl_tensor *sum_d2 = d ? tl_unary(TL_SQR, d) : NULL;
    if (sum_d2)
        sum_d2 = then(sum_d2, tl_reduce(TL_SUM, sum_d2, &dim, 1, keepdim));
    if (sum_d)
        sum_d = then(sum_d, tl_affine(sum_d, 1.0 / sqrt(n), 0.0));
    if (sum_d)
        sum_d = then(sum_d, tl_unary(TL_SQR, sum_d));
    if (sum_d)
        sum_d = then(sum_d, finite_or_zero(sum_d));
    if (sum_d)
        sum_d = then(sum_d, tl_affine(sum_d, -1.0, 0.0));
    tl_tensor *r = sum_d && sum_d2 ? tl_add(sum_d2, sum_d) : NULL;
    if (r) /* an empty dim has no variance: NaN, as numpy's (the scale 1 / -1 gave -0) */
        r = then(r, tl_affine(r, n > 0 ? 1.0 / (n - 1.0) : NAN, 0.0));
    tl_release(mean);
    tl_release(d);
    tl_release(sum_d);
    tl_release(sum_d2);
    return r;
}

/* var_in in t's dtype; a variance that came out inf is computed again where the squares cannot
 * overflow (tl_widen_squares) and rounded to t's dtype once: in f16, 99 zeros and a 600
 * squared 594 to inf and had a variance of inf for 3600 (f32 99 zeros and a 2e19: inf for
 * 4e36). */
tl_tensor *tl_var(const tl_tensor *t, size_t dim, bool keepdim)
{
    const char *op = "var";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_float(op, t) != TL_OK ||
        tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    tl_tensor *r = var_in(t, dim, keepdim);
    int overflow = r ? tl_has_inf(r) : 0;
    if (overflow < 0)
        r = then(r, NULL);
    if (r && overflow) {
        tl_tensor *w = tl_widen_squares(t);
        if (w && w->dtype != t->dtype)
            r = then(r, var_in(w, dim, keepdim));
        else if (!w)
            r = then(r, NULL);
        tl_release(w);
    }
    if (r && r->dtype != t->dtype)
        r = then(r, tl_to_dtype(r, t->dtype));
    return tl_within(op, r);
}

/* log(sum(exp(t))) over dims, shifted by the maximum so large values do not overflow; a slice
 * whose maximum is infinite (all -inf, or a +inf) is not shifted, giving -inf / +inf. f16 and
 * bf16 compute in f32 and round once: 70000 terms near the maximum sum past f16's range while
 * their log is 11.16. */
tl_tensor *tl_log_sum_exp(const tl_tensor *t, const size_t *dims, size_t ndims, bool keepdim)
{
    const char *op = "log_sum_exp";
    uint32_t mask;
    size_t list[TL_MAX_DIMS], nlist = 0, shape[TL_MAX_DIMS];
    if (tl_check_tensor(op, t) != TL_OK || tl_check_float(op, t) != TL_OK ||
        dims_mask(op, t, dims, ndims, &mask, list, &nlist) != TL_OK)
        return NULL;
    /* the maximum is exact in t's dtype, and its errors name the caller's tensor */
    tl_tensor *m = tl_reduce(TL_MAX, t, list, nlist, true), *x = m ? tl_widen_half(t) : NULL;
    tl_tensor *finite = NULL, *zero = NULL, *shift = NULL, *r = NULL;
    if (m)
        m = then(m, x ? tl_widen_half(m) : NULL);
    if (m && (finite = tl_unary(TL_ABS, m)))
        finite = then(finite, tl_cmp_scalar(TL_LT, finite, INFINITY));
    if (finite && (zero = tl_zeros(m->layout.shape, m->layout.ndim, m->dtype, m->device)))
        shift = tl_where_cond(finite, m, zero);
    if (shift && (r = tl_broadcast_sub(x, shift)))
        r = then(r, tl_unary(TL_EXP, r));
    if (r)
        r = then(r, tl_reduce(TL_SUM, r, list, nlist, true));
    if (r)
        r = then(r, tl_unary(TL_LOG, r));
    if (r)
        r = then(r, tl_add(r, shift));
    if (r && r->dtype != t->dtype)
        r = then(r, tl_to_dtype(r, t->dtype));
    if (r && !keepdim)
        r = then(r, tl_reshape(r, shape, kept_shape(t, mask, shape)));
    tl_release(x);
    tl_release(m);
    tl_release(finite);
    tl_release(zero);
    tl_release(shift);
    return tl_within(op, r);
}

/* candle's norm: sqrt(sum(t^2)) over every element, a 0-d tensor of t's float dtype. Unscaled,
 * as candle and numpy's norm of a float32 array: squares past the dtype's range give inf. */
tl_tensor *tl_norm(const tl_tensor *t)
{
    const char *op = "norm";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_float(op, t) != TL_OK)
        return NULL;
    tl_tensor *r = tl_unary(TL_SQR, t);
    if (r)
        r = then(r, tl_reduce(TL_SUM, r, NULL, 0, false));
    if (r)
        r = then(r, tl_unary(TL_SQRT, r));
    return tl_within(op, r);
}
