/*
 * test_alloc_failure.c - fault injection, SQLite style: each scenario runs again and again
 * with the 1st, 2nd, 3rd, ... allocation failing, until it runs through without reaching the
 * failure. Every run must end in success or a clean TL_ERR_NOMEM: no crash, and (under ASan)
 * no leak.
 */
#include "tl_test.h"

/* Records the first failure of a scenario; later calls see NULL arguments and fail too. */
typedef struct run {
    tl_status first;
} run;

static tl_tensor *step(run *r, tl_tensor *t)
{
    if (!t && r->first == TL_OK)
        r->first = tl_last_status();
    return t;
}

static void step_status(run *r, tl_status st)
{
    if (st != TL_OK && r->first == TL_OK)
        r->first = st;
}

static void elementwise(run *r)
{
    tl_tensor *a = step(r, tl_arange(0, 6, 1, TL_F32, TL_CPU));
    tl_tensor *m = step(r, tl_reshape(a, SHAPE(2, 3)));
    tl_tensor *t = step(r, tl_transpose(m, 0, 1));
    tl_tensor *row = step(r, tl_get(m, 1));
    tl_tensor *s = step(r, tl_broadcast_add(m, row));
    tl_tensor *e = step(r, tl_unary(TL_EXP, t));
    tl_tensor *c = step(r, tl_broadcast_cmp(TL_LT, m, row));
    tl_tensor *w = step(r, tl_where_cond(c, m, s));
    tl_tensor *h = step(r, tl_to_dtype(e, TL_F16));
    char buf[256];
    if (h && tl_format(h, buf, sizeof buf) < 0)
        step_status(r, tl_last_status());
    tl_release(a), tl_release(m), tl_release(t), tl_release(row), tl_release(s);
    tl_release(e), tl_release(c), tl_release(w), tl_release(h);
}

static void reductions_and_copies(run *r)
{
    tl_tensor *x = step(r, tl_rand(0, 1, SHAPE(3, 4), TL_F64, TL_CPU, 3));
    tl_tensor *t = step(r, tl_transpose(x, 0, 1));
    tl_tensor *f = step(r, tl_flatten_all(t)); /* strided: copies */
    tl_tensor *sum = step(r, tl_reduce(TL_SUM, t, (const size_t[]){1}, 1, false));
    tl_tensor *arg = step(r, tl_reduce(TL_ARGMAX, x, (const size_t[]){0}, 1, true));
    tl_tensor *cp = step(r, tl_copy(t));
    tl_tensor *dev = step(r, tl_to_device(t, TL_CPU));
    tl_tensor *parts[3] = {NULL};
    size_t n = 0;
    if (f)
        step_status(r, tl_chunk(f, 3, 0, parts, &n));
    double out[12];
    if (t)
        step_status(r, tl_to_vec(t, out, sizeof out));
    for (size_t i = 0; i < n; i++)
        tl_release(parts[i]);
    tl_release(x), tl_release(t), tl_release(f), tl_release(sum), tl_release(arg);
    tl_release(cp), tl_release(dev);
}

static tl_status add_into_fwd(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx, (void)dst, (void)args, (void)nargs;
    return TL_OK;
}

static void in_place(run *r)
{
    static const tl_inplace_op add_into = {"add-into", add_into_fwd, NULL, NULL};
    tl_tensor *x = step(r, tl_ones(SHAPE(2, 2), TL_F32, TL_CPU));
    tl_tensor *row = step(r, tl_get(x, 0));
    if (x)
        step_status(r, tl_inplace_op2_safe(x, row, &add_into));
    tl_tensor *y = step(r, tl_zeros(SHAPE(1, 2), TL_F32, TL_CPU));
    if (x && y)
        step_status(r, tl_slice_set(x, y, 0, 1));
    tl_release(x), tl_release(row), tl_release(y);
}

/* The heavy ops on f16 and strided operands, so their scratch copies allocate too. */
static void heavy_ops(run *r)
{
    tl_tensor *a = step(r, tl_rand(-1, 1, SHAPE(2, 3, 4), TL_F16, TL_CPU, 5));
    tl_tensor *at = step(r, tl_transpose(a, 1, 2));
    tl_tensor *mm = step(r, tl_matmul(a, at));
    tl_tensor *x = step(r, tl_rand(-1, 1, SHAPE(1, 2, 5, 5), TL_F16, TL_CPU, 6));
    tl_tensor *k = step(r, tl_rand(-1, 1, SHAPE(2, 1, 3, 3), TL_F16, TL_CPU, 7));
    tl_tensor *cv = step(r, tl_conv2d(x, k, 1, 1, 1, 2));
    tl_tensor *sm = step(r, tl_log_softmax(at, 1));
    tl_tensor *ids = step(r, tl_arange(0, 2, 1, TL_U32, TL_CPU));
    tl_tensor *sel = step(r, tl_index_select(at, ids, 2));
    tl_tensor *sum = step(r, tl_index_add(at, ids, sel, 2));
    tl_tensor *gids = step(r, tl_zeros(SHAPE(2, 3, 2), TL_I64, TL_CPU));
    tl_tensor *g = step(r, tl_gather(a, gids, 2));
    tl_tensor *sa = step(r, tl_scatter_add(a, gids, g, 2));
    if (sa && gids && g)
        step_status(r, tl_scatter_set(sa, gids, g, 2));
    const tl_tensor *parts[] = {a, a};
    tl_tensor *c = step(r, a ? tl_cat(parts, 2, 1) : NULL);
    tl_tensor *st = step(r, a ? tl_stack(parts, 2, 0) : NULL);
    tl_release(a), tl_release(at), tl_release(mm), tl_release(x), tl_release(k);
    tl_release(cv), tl_release(sm), tl_release(ids), tl_release(sel), tl_release(sum);
    tl_release(gids), tl_release(g), tl_release(sa), tl_release(c), tl_release(st);
}

/* The ops built from other ops (each step allocates) on an f16 view, so their f32 detours
 * allocate too. */
static void composites(run *r)
{
    tl_tensor *x = step(r, tl_rand(-1, 1, SHAPE(3, 4, 5), TL_F16, TL_CPU, 8));
    tl_tensor *xt = step(r, tl_transpose(x, 0, 2));
    tl_tensor *alpha = step(r, tl_ones(SHAPE(3), TL_F16, TL_CPU));
    tl_tensor *beta = step(r, tl_zeros(SHAPE(3), TL_F16, TL_CPU));
    tl_tensor *ln = step(r, tl_layer_norm(xt, alpha, beta, 1e-5));
    tl_tensor *rms = step(r, tl_rms_norm(xt, alpha, 1e-5));
    tl_tensor *var = step(r, tl_var(xt, 1, false));
    tl_tensor *lse = step(r, tl_log_sum_exp(xt, (const size_t[]){0, 2}, 2, false));
    tl_tensor *norm = step(r, tl_norm(xt));
    tl_tensor *pw = step(r, tl_pow(xt, xt));
    tl_tensor *cs = step(r, tl_cumsum(xt, 1));
    tl_tensor *pad = step(r, tl_pad_with_same(xt, 2, 1, 2));
    tl_tensor *rep = step(r, tl_repeat(xt, SHAPE(2, 1, 2)));
    tl_tensor *ids = NULL, *sorted = step(r, tl_sort_last_dim(xt, true, &ids));
    tl_release(x), tl_release(xt), tl_release(alpha), tl_release(beta), tl_release(ln);
    tl_release(rms), tl_release(var), tl_release(lse), tl_release(norm), tl_release(pw);
    tl_release(cs), tl_release(pad), tl_release(rep), tl_release(ids), tl_release(sorted);
}

/* Runs scenario with failure points 1, 2, ... until it completes untouched. */
static void fault_sweep(const char *name, void (*scenario)(run *))
{
    long points = 0;
    for (long nth = 1; nth < 10000; nth++) {
        run r = {TL_OK};
        tl_debug_fail_alloc(nth);
        scenario(&r);
        long left = tl_debug_fail_alloc(0);
        if (left > 0) { /* never reached the failure: the scenario is covered */
            CHECKF(r.first == TL_OK, "%s: clean run failed: %s", name, tl_last_error());
            break;
        }
        points++;
        CHECKF(r.first == TL_ERR_NOMEM, "%s, allocation %ld: status %d (%s)", name, nth,
               (int)r.first, tl_last_error());
    }
    CHECKF(points > 5, "%s: only %ld allocation points", name, points);
}

int main(void)
{
    fault_sweep("elementwise", elementwise);
    fault_sweep("reductions_and_copies", reductions_and_copies);
    fault_sweep("in_place", in_place);
    fault_sweep("heavy_ops", heavy_ops);
    fault_sweep("composites", composites);
    return check_summary();
}
