/*
 * ops_norm.c - candle-nn's rms_norm and layer_norm over the last dim, built from other ops as
 * candle-nn's rms_norm_slow / layer_norm_slow are, normalised one precision up (below) and
 * converted back before alpha (and beta) apply, as candle-nn does for f16 and bf16. Each stops
 * at the first failing step, whose message becomes the thread's last error with the op's own
 * name in front (tl_within).
 */
#include <math.h>

#include "backend.h"

/* Releases in and returns out: one step of a chain of ops. */
static tl_tensor *then(tl_tensor *in, tl_tensor *out)
{
    tl_release(in);
    return out;
}

/* x is a float tensor of rank >= 1; p (alpha or beta) is 1-D of x's last dim, dtype and
 * device. */
static tl_status check_param(const char *op, const char *name, const tl_tensor *x,
                             const tl_tensor *p)
{
    char dx[TL_DESC_STR], dp[TL_DESC_STR];
    size_t last = TL_DIM(-1);
    if (tl_check_same(op, x, p) != TL_OK || tl_check_float(op, x) != TL_OK ||
        tl_check_dim(op, x, &last) != TL_OK)
        return tl_last_status();
    if (p->layout.ndim != 1 || p->layout.shape[0] != x->layout.shape[last])
        return tl_fail(TL_ERR_SHAPE, "%s: %s must be [%zu] (the last dim of %s), got %s", op,
                       name, x->layout.shape[last], tl_describe(x, dx), tl_describe(p, dp));
    return TL_OK;
}

/* xi (x in the dtype it is normalised in; released here) over the root of its mean square
 * along the last dim plus eps, centred first for layer_norm; *overflow tells whether a mean
 * square came out inf. */
static tl_tensor *normalise_in(tl_tensor *xi, double eps, bool center, int *overflow)
{
    if (!xi)
        return NULL;
    size_t last = xi->layout.ndim - 1;
    double h = (double)xi->layout.shape[last];
    tl_tensor *m = NULL;
    if (center) { /* a failed mean ends the chain too, not just skips the centring */
        m = tl_reduce(TL_MEAN, xi, &last, 1, true);
        xi = then(xi, m ? tl_broadcast_sub(xi, m) : NULL);
    }
    tl_tensor *ms = xi ? tl_unary(TL_SQR, xi) : NULL;
    if (ms)
        ms = then(ms, tl_reduce(TL_SUM, ms, &last, 1, true));
    if (ms)
        ms = then(ms, tl_affine(ms, 1.0 / h, eps));
    if (ms && (*overflow = tl_has_inf(ms)) < 0)
        ms = then(ms, NULL);
    if (ms)
        ms = then(ms, tl_unary(TL_SQRT, ms));
    tl_tensor *r = ms ? tl_broadcast_div(xi, ms) : NULL;
    tl_release(xi);
    tl_release(m);
    tl_release(ms);
    return r;
}

/* x / sqrt(mean(x^2 over the last dim) + eps), back in x's dtype: in f32 for f16 and bf16, as
 * candle-nn's, and again where the squares cannot overflow (tl_widen_squares) when they did:
 * a row holding -3e38 squared to inf and normalised every element to 0 or NaN, where torch
 * (which accumulates f32 in double on the cpu) gives finite values. */
static tl_tensor *normalised(const tl_tensor *x, double eps, bool center)
{
    int overflow = 0;
    tl_tensor *r = normalise_in(tl_widen_half(x), eps, center, &overflow);
    if (r && overflow) {
        tl_tensor *w = tl_widen_squares(x);
        if (w && w->dtype != r->dtype)
            r = then(r, normalise_in(tl_retain(w), eps, center, &overflow));
        else if (!w)
            r = then(r, NULL);
        tl_release(w);
    }
    if (r && r->dtype != x->dtype)
        r = then(r, tl_to_dtype(r, x->dtype));
    return r;
}

tl_tensor *tl_rms_norm(const tl_tensor *x, const tl_tensor *alpha, double eps)
{
    const char *op = "rms_norm";
    if (check_param(op, "alpha", x, alpha) != TL_OK)
        return NULL;
    tl_tensor *r = normalised(x, eps, false);
    if (r)
        r = then(r, tl_broadcast_mul(r, alpha));
    return tl_within(op, r);
}

tl_tensor *tl_layer_norm(const tl_tensor *x, const tl_tensor *alpha, const tl_tensor *beta,
                         double eps)
{
    const char *op = "layer_norm";
    if (check_param(op, "alpha", x, alpha) != TL_OK || check_param(op, "beta", x, beta) != TL_OK)
        return NULL;
    tl_tensor *r = normalised(x, eps, true);
    if (r)
        r = then(r, tl_broadcast_mul(r, alpha));
    if (r)
        r = then(r, tl_broadcast_add(r, beta));
    return tl_within(op, r);
}
