/*
 * test_audit_inplace.c - in-place ops writing through views, against numpy writing through
 * the same views (fixtures/audit_inplace.txt, from gen_audit.py), on every dtype: const_set,
 * slice_set along each dim, scatter_set, scatter_add_set (repeated indexes accumulate) with
 * index tensors of every integer dtype, and var_set, each into the whole tensor, its
 * transpose, a narrowed block, every other column and that transposed; the whole storage is
 * checked afterwards, so a write outside the view shows. The base is contiguous, at offset 0
 * or not; integer dtypes see the values times 8 (plus 32 for u8/u32; the adds run on the
 * signed ones), which these ops move and add unchanged. Writing through a broadcast view (one element under
 * several indexes) is refused by all but const_set.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tl_test.h"
#include "fixture.h"

static const tl_dtype all_dtypes[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_U8,
                                      TL_U32, TL_I16, TL_I32, TL_I64};
/* scatter_add_set adds the (shifted) source: signed dtypes only. */
static const tl_dtype signed_dtypes[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_I16, TL_I32, TL_I64};

static bool is_float(tl_dtype dt)
{
    return dt == TL_F32 || dt == TL_F64 || dt == TL_F16 || dt == TL_BF16;
}

/* t's values made fit for dt: times 8 for integers, plus 32 for u8/u32; "ids" unchanged. */
static fx_tensor scaled(const fx_tensor *t, tl_dtype dt)
{
    fx_tensor s = *t;
    bool ids = !strcmp(t->name, "ids");
    double k = is_float(dt) || ids ? 1 : 8, shift = !ids && (dt == TL_U8 || dt == TL_U32) ? 32 : 0;
    s.data = malloc((t->count ? t->count : 1) * sizeof *s.data);
    for (size_t i = 0; s.data && i < t->count; i++)
        s.data[i] = t->data[i] * k + shift;
    return s;
}

/* gen_audit.py's view_of: the whole 4 x 6 base, its transpose, [1:3, 2:5], [:, ::2] and
 * [:, ::2].T. */
static tl_tensor *view_of(tl_tensor *base, long kind)
{
    if (kind == 0)
        return tl_retain(base);
    if (kind == 1)
        return tl_t(base);
    if (kind == 2) {
        tl_tensor *rows = tl_narrow(base, 0, 1, 2);
        tl_tensor *block = rows ? tl_narrow(rows, 1, 2, 3) : NULL;
        tl_release(rows);
        return block;
    }
    tl_tensor *pairs = tl_reshape(base, (const size_t[]){4, 3, 2}, 3);
    tl_tensor *even = pairs ? tl_narrow(pairs, 2, 0, 1) : NULL;
    tl_tensor *cols = even ? tl_squeeze(even, 2) : NULL;
    tl_tensor *out = cols && kind == 4 ? tl_t(cols) : tl_retain(cols);
    tl_release(pairs);
    tl_release(even);
    tl_release(cols);
    return out;
}

static void run_inplace(const fx_case *c, tl_dtype dt, fx_variant v)
{
    /* view_of reshapes the base, which must stay a view: contiguous layouts only */
    if (v != FX_CONTIGUOUS && v != FX_OFFSET)
        return;
    fx_tensor base_s = scaled(fx_get(c, "base"), dt), out_s = scaled(fx_get(c, "out"), dt);
    const fx_tensor *src_t = fx_get(c, "src");
    fx_tensor src_s = src_t ? scaled(src_t, dt) : (fx_tensor){.data = NULL};
    tl_tensor *src = src_t ? fx_make(&src_s, dt, (v + 1) % FX_VARIANT_COUNT) : NULL;
    size_t dim = (size_t)fx_param(c, "dim"), nids = fx_get(c, "ids") ? 5 : 1;
    for (size_t i = 0; i < nids; i++) {
        tl_tensor *b = fx_make(&base_s, dt, v), *w = b ? view_of(b, fx_param(c, "view")) : NULL;
        tl_tensor *ids = nids > 1 ? fx_make(fx_get(c, "ids"), fx_int_dtypes[i], v) : NULL;
        tl_status st = TL_ERR_ARG;
        if (!w)
            ;
        else if (!strcmp(c->name, "const_set"))
            st = tl_const_set(w, is_float(dt) ? 2.5 : dt == TL_U8 || dt == TL_U32 ? 52 : 20);
        else if (!strcmp(c->name, "slice_set"))
            st = tl_slice_set(w, src, dim, (size_t)fx_param(c, "offset"));
        else if (!strcmp(c->name, "scatter_set"))
            st = tl_scatter_set(w, ids, src, dim);
        else if (!strcmp(c->name, "scatter_add_set"))
            st = tl_scatter_add_set(w, ids, src, dim);
        else
            st = tl_var_set(w, src);
        CHECKF(st == TL_OK, "%s on %s: %s", c->name, tl_dtype_name(dt), tl_last_error());
        tl_tensor *after = st == TL_OK ? tl_retain(b) : NULL;
        out_s.name[0] = 0;
        CHECK(fx_expect_tol(after, &out_s, dt, fx_rtol(dt), 0, c->name));
        tl_release(after);
        tl_release(ids);
        tl_release(w);
        tl_release(b);
    }
    tl_release(src);
    free(base_s.data);
    free(out_s.data);
    free(src_s.data);
}

/* Several indexes of a broadcast view name one element: writing through it is refused. */
static void test_broadcast_target(void)
{
    tl_tensor *row = MAKE(TL_F32, SHAPE(1, 3), 1, 2, 3);
    tl_tensor *wide = tl_broadcast_as(row, SHAPE(4, 3));
    tl_tensor *src = tl_ones(SHAPE(4, 3), TL_F32, TL_CPU), *ids = tl_zeros(SHAPE(4, 3), TL_I64, TL_CPU);
    EXPECT_STATUS(tl_var_set(wide, src), TL_ERR_ARG, "var_set: ");
    EXPECT_STATUS(tl_slice_set(wide, src, 0, 0), TL_ERR_ARG, "slice_set: ");
    EXPECT_STATUS(tl_scatter_set(wide, ids, src, 0), TL_ERR_ARG, "scatter_set: ");
    EXPECT_STATUS(tl_scatter_add_set(wide, ids, src, 0), TL_ERR_ARG, "scatter_add_set: ");
    EXPECT_VALS(tl_copy(row), 0, 1, 2, 3);
    CHECK(tl_const_set(wide, 7) == TL_OK); /* one value for every index: well defined */
    EXPECT_VALS(tl_copy(row), 0, 7, 7, 7);
    RELEASE(row, wide, src, ids);
}

#define ALL all_dtypes, sizeof all_dtypes / sizeof all_dtypes[0]
static const fx_runner runners[] = {
    {"const_set", run_inplace, ALL},   {"slice_set", run_inplace, ALL},
    {"scatter_set", run_inplace, ALL},
    {"scatter_add_set", run_inplace, signed_dtypes, sizeof signed_dtypes / sizeof signed_dtypes[0]},
    {"var_set", run_inplace, ALL},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    test_broadcast_target();
    CHECK(fx_run_table(dir, "audit_inplace", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
