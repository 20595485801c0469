/*
 * ops_shape.c - candle's ops that rearrange or extend a tensor, built from other ops as candle
 * builds them (so every device with those ops has these): tril2/triu2/eye, roll, flip, repeat,
 * pad_with_zeros/pad_with_same, upsample_nearest1d/2d and the out-of-place
 * scatter/slice_scatter; and cumsum/cumprod, which have a kernel of their own. Each stops at
 * the first failing step, whose message becomes the thread's last error with the op's own
 * name in front (tl_within).
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Releases in and returns out: one step of a chain of ops. */
static tl_tensor *then(tl_tensor *in, tl_tensor *out)
{
    tl_release(in);
    return out;
}

/* n x n of dtype: cmp(column index, row index) ? 1 : 0. */
static tl_tensor *square_mask(const char *op, tl_cmp_op cmp, size_t n, tl_dtype dtype,
                              tl_device device)
{
    if (n > UINT32_MAX)
        return tl_fail(TL_ERR_RANGE, "%s: n = %zu is too large", op, n), NULL;
    size_t sq[2] = {n, n};
    tl_tensor *idx = tl_arange(0, (double)n, 1, TL_U32, device);
    tl_tensor *row = idx ? tl_reshape(idx, (size_t[]){1, n}, 2) : NULL;
    tl_tensor *col = idx ? tl_reshape(idx, (size_t[]){n, 1}, 2) : NULL;
    tl_tensor *j = row ? tl_broadcast_as(row, sq, 2) : NULL;
    tl_tensor *i = col ? tl_broadcast_as(col, sq, 2) : NULL;
    tl_tensor *m = i && j ? tl_cmp(cmp, j, i) : NULL;
    if (m)
        m = then(m, tl_to_dtype(m, dtype));
    tl_release(idx);
    tl_release(row);
    tl_release(col);
    tl_release(j);
    tl_release(i);
    return tl_within(op, m);
}

tl_tensor *tl_tril2(size_t n, tl_dtype dtype, tl_device device)
{
    return square_mask("tril2", TL_LE, n, dtype, device);
}

tl_tensor *tl_triu2(size_t n, tl_dtype dtype, tl_device device)
{
    return square_mask("triu2", TL_GE, n, dtype, device);
}

tl_tensor *tl_eye(size_t n, tl_dtype dtype, tl_device device)
{
    return square_mask("eye", TL_EQ, n, dtype, device);
}

typedef struct scan_args {
    size_t dim;
    bool product;
} scan_args;

static tl_tensor *scan(const char *op, const tl_tensor *t, size_t dim, bool product);

static tl_status scan_kernel(const tl_backend_i *b, const tl_operand *dst, const tl_operand *in,
                             const void *ctx)
{
    const scan_args *a = ctx;
    return b->scan(dst, &in[0], a->dim, a->product);
}

/* A device without a scan kernel sends the tensor through the cpu's: the same values to the
 * bit on every device, where a kernel composed of that device's ops would round differently. */
static tl_tensor *scan_on_cpu(const char *op, const tl_tensor *t, size_t dim, bool product)
{
    tl_tensor *host = tl_to_device(t, TL_CPU);
    tl_tensor *r = host ? scan(op, host, dim, product) : NULL;
    tl_release(host);
    return r ? then(r, tl_to_device(r, t->device)) : NULL;
}

/* numpy's cumsum/cumprod in t's dtype (f16 and bf16 in f32, each result rounded once): one
 * term at a time along dim, each partial result rounded (the backend's scan member). candle's cumsum multiplies by triu2(n)
 * instead, which costs n^2 (20 000 elements took 46 s, 10^5 wanted 40 GB) and lets a NaN or
 * inf reach the positions before it (0 * inf is NaN); on finite values its matmul adds the
 * same terms in the same order. A product tree would multiply blocks that over- or underflow
 * on their own (f32 [0, 1e20, 1e20] gave NaN where every prefix product is 0). */
static tl_tensor *scan(const char *op, const tl_tensor *t, size_t dim, bool product)
{
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    if (!t->storage->backend->scan)
        return tl_within(op, scan_on_cpu(op, t, dim, product));
    scan_args a = {dim, product};
    return tl_run_op(op, &t, NULL, 1, t->layout.shape, t->layout.ndim, t->dtype, scan_kernel, &a);
}

tl_tensor *tl_cumsum(const tl_tensor *t, size_t dim)
{
    return scan("cumsum", t, dim, false);
}

tl_tensor *tl_cumprod(const tl_tensor *t, size_t dim)
{
    return scan("cumprod", t, dim, true);
}

/* candle's roll: the last shift (mod the dim's size, so negative shifts roll the other way)
 * slices along dim moved to the front, as one cat of two narrows; a shift of 0 mod the size
 * (or an empty dim) gives t itself, retained. */
tl_tensor *tl_roll(const tl_tensor *t, ptrdiff_t shift, size_t dim)
{
    const char *op = "roll";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    size_t n = t->layout.shape[dim];
    size_t s = 0;
    if (n) {
        size_t m = (size_t)(shift < 0 ? -(shift + 1) : shift) % n; /* no overflow at PTRDIFF_MIN */
        s = shift < 0 ? n - 1 - m : m;
    }
    if (s == 0)
        return tl_retain((tl_tensor *)t);
    tl_tensor *tail = tl_narrow(t, dim, n - s, s), *head = tl_narrow(t, dim, 0, n - s);
    const tl_tensor *parts[2] = {tail, head};
    tl_tensor *r = tail && head ? tl_cat(parts, 2, dim) : NULL;
    tl_release(tail);
    tl_release(head);
    return tl_within(op, r);
}

/* t's elements along dim taken at ids[0..n) (host values), through index_select. */
static tl_tensor *select_host(const tl_tensor *t, size_t dim, const uint32_t *ids, size_t n)
{
    tl_tensor *it = tl_from_data(ids, &n, 1, TL_U32, t->device);
    tl_tensor *r = it ? tl_index_select(t, it, dim) : NULL;
    tl_release(it);
    return r;
}

/* Along dim: index i of the result reads index pick(i) of t, for n result indexes. */
static tl_tensor *remap(const char *op, const tl_tensor *t, size_t dim, size_t n,
                        uint32_t (*pick)(size_t i, size_t in, size_t out))
{
    size_t in = t->layout.shape[dim];
    if (in > UINT32_MAX) /* the indexes are u32 */
        return tl_fail(TL_ERR_RANGE, "%s: dim %zu has %zu elements, more than u32 indexes reach",
                       op, dim, in), NULL;
    if (n > SIZE_MAX / sizeof(uint32_t))
        return tl_fail(TL_ERR_RANGE, "%s: size %zu along dim %zu is too large", op, n, dim), NULL;
    uint32_t *ids = tl_malloc(n * sizeof *ids);
    if (!ids)
        return tl_fail_nomem(op, n * sizeof *ids), NULL;
    for (size_t i = 0; i < n; i++)
        ids[i] = pick(i, in, n);
    tl_tensor *r = select_host(t, dim, ids, n);
    free(ids);
    return r;
}

static uint32_t reversed(size_t i, size_t in, size_t out)
{
    (void)out;
    return (uint32_t)(in - 1 - i);
}

tl_tensor *tl_flip(const tl_tensor *t, const size_t *dims, size_t ndims)
{
    const char *op = "flip";
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (ndims > TL_MAX_DIMS || (ndims && !dims))
        return tl_fail(TL_ERR_ARG, "flip: bad dims (%zu given)", ndims), NULL;
    tl_tensor *r = tl_retain((tl_tensor *)t);
    for (size_t i = 0; r && i < ndims; i++) {
        size_t d = dims[i];
        if (tl_check_dim(op, t, &d) != TL_OK)
            return tl_release(r), NULL;
        r = then(r, remap(op, r, d, t->layout.shape[d], reversed));
    }
    return tl_within(op, r);
}

/* candle's upsample_nearest: result index i reads floor(i * in / out), at most in - 1. */
static uint32_t nearest(size_t i, size_t in, size_t out)
{
    size_t src = (size_t)((double)i * ((double)in / (double)out));
    return (uint32_t)(src < in ? src : in - 1);
}

static tl_tensor *upsample(const char *op, const tl_tensor *t, size_t rank, const size_t *size)
{
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (t->layout.ndim != rank)
        return tl_fail(TL_ERR_SHAPE, "%s: needs a tensor of rank %zu, got %s", op, rank,
                       tl_describe(t, d)), NULL;
    tl_tensor *r = tl_retain((tl_tensor *)t);
    for (size_t i = 2; r && i < rank; i++) {
        if (t->layout.shape[i] == 0 && size[i - 2] > 0)
            return tl_release(r), tl_fail(TL_ERR_SHAPE, "%s: cannot upsample the empty %s", op,
                                          tl_describe(t, d)), NULL;
        r = then(r, remap(op, r, i, size[i - 2], nearest));
    }
    return tl_within(op, r);
}

tl_tensor *tl_upsample_nearest1d(const tl_tensor *t, size_t size)
{
    return upsample("upsample_nearest1d", t, 3, &size);
}

tl_tensor *tl_upsample_nearest2d(const tl_tensor *t, size_t h, size_t w)
{
    return upsample("upsample_nearest2d", t, 4, (size_t[]){h, w});
}

/* n copies of t concatenated along dim. */
static tl_tensor *copies(const char *op, const tl_tensor *t, size_t n, size_t dim)
{
    const tl_tensor **parts = tl_malloc(n * sizeof *parts);
    if (!parts)
        return tl_fail_nomem(op, n * sizeof *parts), NULL;
    for (size_t i = 0; i < n; i++)
        parts[i] = t;
    tl_tensor *r = tl_cat(parts, n, dim);
    free(parts);
    return r;
}

/* candle's repeat: t (with leading 1s up to nrep dims) repeated rep[d] times along each dim.
 * A 0 count empties its dim, as numpy's tile and PyTorch's repeat (which candle's says it
 * follows) do; candle itself copies only counts above 1, so it leaves that dim whole. */
tl_tensor *tl_repeat(const tl_tensor *t, const size_t *rep, size_t nrep)
{
    const char *op = "repeat";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    if (nrep > TL_MAX_DIMS || nrep < t->layout.ndim || (nrep && !rep))
        return tl_fail(TL_ERR_SHAPE, "%s: %zu repeats for %s", op, nrep, tl_describe(t, d)),
               NULL;
    size_t shape[TL_MAX_DIMS], lead = nrep - t->layout.ndim;
    for (size_t i = 0; i < nrep; i++)
        shape[i] = i < lead ? 1 : t->layout.shape[i - lead];
    tl_tensor *r = tl_reshape(t, shape, nrep);
    for (size_t i = 0; r && i < nrep; i++) {
        if (rep[i] > SIZE_MAX / sizeof(void *))
            return tl_release(r), tl_fail(TL_ERR_RANGE, "%s: %zu repeats of dim %zu", op, rep[i],
                                          i), NULL;
        if (rep[i] == 0)
            r = then(r, tl_narrow(r, i, 0, 0));
        else if (rep[i] > 1)
            r = then(r, copies(op, r, rep[i], i));
    }
    return tl_within(op, r);
}

/* cat(left part, t, right part) along dim. */
static tl_tensor *pad(const tl_tensor *t, size_t dim, tl_tensor *l, tl_tensor *r)
{
    const tl_tensor *parts[3] = {l, t, r};
    tl_tensor *out = l && r ? tl_cat(parts, 3, dim) : NULL;
    tl_release(l);
    tl_release(r);
    return out;
}

tl_tensor *tl_pad_with_zeros(const tl_tensor *t, size_t dim, size_t left, size_t right)
{
    const char *op = "pad_with_zeros";
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    if (left == 0 && right == 0) /* candle: t itself (its clone) */
        return tl_retain((tl_tensor *)t);
    size_t shape[TL_MAX_DIMS];
    memcpy(shape, t->layout.shape, sizeof shape);
    shape[dim] = left;
    tl_tensor *l = tl_zeros(shape, t->layout.ndim, t->dtype, t->device);
    shape[dim] = right;
    tl_tensor *r = l ? tl_zeros(shape, t->layout.ndim, t->dtype, t->device) : NULL;
    return tl_within(op, pad(t, dim, l, r));
}

/* The edge slices of t along dim repeated left and right times (candle's pad_with_same). */
tl_tensor *tl_pad_with_same(const tl_tensor *t, size_t dim, size_t left, size_t right)
{
    const char *op = "pad_with_same";
    char d[TL_DESC_STR];
    if (tl_check_tensor(op, t) != TL_OK || tl_check_dim(op, t, &dim) != TL_OK)
        return NULL;
    size_t n = t->layout.shape[dim], shape[TL_MAX_DIMS];
    if (left == 0 && right == 0) /* candle: t itself (its clone) */
        return tl_retain((tl_tensor *)t);
    if (n == 0)
        return tl_fail(TL_ERR_SHAPE, "%s: dim %zu of %s is empty", op, dim, tl_describe(t, d)),
               NULL;
    memcpy(shape, t->layout.shape, sizeof shape);
    tl_tensor *first = tl_narrow(t, dim, 0, 1), *l = NULL, *r = NULL;
    tl_tensor *last = first ? tl_narrow(t, dim, n - 1, 1) : NULL;
    shape[dim] = left;
    if (last)
        l = tl_broadcast_as(first, shape, t->layout.ndim);
    shape[dim] = right;
    if (l)
        r = tl_broadcast_as(last, shape, t->layout.ndim);
    tl_release(first);
    tl_release(last);
    if (!r)
        return tl_release(l), tl_within(op, NULL);
    return tl_within(op, pad(t, dim, l, r));
}

/* Out of place: a copy of t with the in-place op applied. */
tl_tensor *tl_scatter(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim)
{
    tl_tensor *r = tl_copy(t);
    if (r && tl_scatter_set(r, ids, src, dim) != TL_OK)
        tl_release(r), r = NULL;
    return tl_within("scatter", r);
}

tl_tensor *tl_slice_scatter(const tl_tensor *t, const tl_tensor *src, size_t dim, size_t start)
{
    tl_tensor *r = tl_copy(t);
    if (r && tl_slice_set(r, src, dim, start) != TL_OK)
        tl_release(r), r = NULL;
    return tl_within("slice_scatter", r);
}
