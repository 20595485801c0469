/*
 * test_indexing.c - index_select, gather, index_add, scatter_add and the in-place
 * scatter_set / scatter_add_set against numpy (fixtures/indexing.txt) on every float dtype,
 * every index dtype and the layout variants (the in-place ops write through transposed and
 * offset views); integer data; out-of-range and negative indexes; the candle guards: src
 * sharing self's storage is refused, ids that are a view of self are not and meet the write
 * lock (EDEADLK on glibc -> TL_ERR_LOCK); the error paths.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static const tl_dtype index_dtypes[] = {TL_U8, TL_U32, TL_I64};

typedef struct run {
    const fx_case *c;
    tl_dtype dtype, ids_dtype;
    fx_variant variant;
    char label[192];
} run;

/* The new-tensor ops; the case name's prefix says which. */
static tl_tensor *apply(const run *r, tl_tensor *x, tl_tensor *ids, tl_tensor *src, size_t dim)
{
    const char *n = r->c->name;
    if (strncmp(n, "is_", 3) == 0)
        return tl_index_select(x, ids, dim);
    if (strncmp(n, "ga_", 3) == 0)
        return tl_gather(x, ids, dim);
    if (strncmp(n, "ia_", 3) == 0)
        return tl_index_add(x, ids, src, dim);
    return tl_scatter_add(x, ids, src, dim);
}

/* The in-place ops write into x itself (in r's layout variant); the result is x. */
static tl_tensor *apply_in_place(const run *r, tl_tensor *x, tl_tensor *ids, tl_tensor *src,
                                 size_t dim)
{
    bool set = strncmp(r->c->name, "ss_", 3) == 0;
    tl_status st = set ? tl_scatter_set(x, ids, src, dim) : tl_scatter_add_set(x, ids, src, dim);
    return st == TL_OK ? tl_retain(x) : NULL;
}

static void run_one(const run *r, bool in_place)
{
    const fx_tensor *fsrc = fx_get(r->c, "src");
    size_t dim = (size_t)fx_param(r->c, "dim");
    tl_tensor *x = fx_make(fx_get(r->c, "x"), r->dtype, r->variant);
    fx_variant vi = (r->variant + 1) % FX_VARIANT_COUNT, vs = (r->variant + 2) % FX_VARIANT_COUNT;
    tl_tensor *ids = fx_make(fx_get(r->c, "ids"), r->ids_dtype, vi);
    tl_tensor *src = fsrc ? fx_make(fsrc, r->dtype, vs) : NULL;
    tl_tensor *out = NULL;
    if (x && ids && (src || !fsrc))
        out = in_place ? apply_in_place(r, x, ids, src, dim) : apply(r, x, ids, src, dim);
    CHECKF(fx_expect(out, fx_get(r->c, "out"), r->dtype, r->label), "%s%s on %s ids %s",
           in_place ? "in place " : "", r->label, tl_dtype_name(r->dtype),
           tl_dtype_name(r->ids_dtype));
    FX_RELEASE(x, ids, src, out);
}

/* One case on every index dtype; the scatter_set cases only in place (they are its reference),
 * the scatter_add cases both ways. */
static void run_case(const fx_case *c, tl_dtype dtype, fx_variant v)
{
    for (size_t k = 0; k < sizeof index_dtypes / sizeof index_dtypes[0]; k++) {
        run r = {c, dtype, index_dtypes[k], v, ""};
        snprintf(r.label, sizeof r.label, "%s x=%s", c->name, fx_variant_name(v));
        bool set = strncmp(c->name, "ss_", 3) == 0;
        if (!set)
            run_one(&r, false);
        if (set || strncmp(c->name, "sa_", 3) == 0)
            run_one(&r, true);
    }
}

static tl_tensor *u32_tensor(const uint32_t *v, const size_t *shape, size_t ndim)
{
    return tl_from_data(v, shape, ndim, TL_U32, TL_CPU);
}

static void test_integers(void)
{
    const uint32_t xv[] = {10, 11, 12, 13, 14, 15}, idv[] = {2, 0, 2};
    size_t s23[] = {2, 3}, s3[] = {3};
    tl_tensor *x = u32_tensor(xv, s23, 2), *ids = u32_tensor(idv, s3, 1);
    tl_tensor *sel = tl_index_select(x, ids, 1);
    uint32_t got[6] = {0};
    CHECK(sel && tl_to_vec(sel, got, sizeof got) == TL_OK);
    CHECK(got[0] == 12 && got[1] == 10 && got[2] == 12 && got[3] == 15 && got[5] == 15);
    tl_tensor *sum = tl_index_add(x, ids, sel, 1); /* column 2 gets 12+12, 15+15 added */
    CHECK(sum && tl_to_vec(sum, got, sizeof got) == TL_OK);
    CHECK(got[0] == 20 && got[1] == 11 && got[2] == 36 && got[5] == 45);
    FX_RELEASE(x, ids, sel, sum);
}

/* scatter_add on i64 (negative values) and u8 (wraps, the header's integer rule:
 * 200 + 100 + 100 = 400 is 144). */
static void test_integer_adds(void)
{
    const int64_t xv[] = {-5, 7}, sv[] = {-3, 4, 10}, idv[] = {1, 0, 1};
    const uint8_t bv[] = {200, 1}, bs[] = {100, 100}, bid[] = {0, 0};
    size_t s2[] = {2}, s3[] = {3};
    tl_tensor *x = tl_from_data(xv, s2, 1, TL_I64, TL_CPU);
    tl_tensor *src = tl_from_data(sv, s3, 1, TL_I64, TL_CPU);
    tl_tensor *ids = tl_from_data(idv, s3, 1, TL_I64, TL_CPU);
    tl_tensor *sum = tl_scatter_add(x, ids, src, 0);
    int64_t got[2] = {0};
    CHECK(sum && tl_to_vec(sum, got, sizeof got) == TL_OK && got[0] == -1 && got[1] == 14);
    tl_tensor *b = tl_from_data(bv, s2, 1, TL_U8, TL_CPU);
    tl_tensor *bsrc = tl_from_data(bs, s2, 1, TL_U8, TL_CPU);
    tl_tensor *bids = tl_from_data(bid, s2, 1, TL_U8, TL_CPU);
    uint8_t bgot[2] = {0};
    CHECK(tl_scatter_add_set(b, bids, bsrc, 0) == TL_OK);
    CHECK(tl_to_vec(b, bgot, sizeof bgot) == TL_OK && bgot[0] == 144 && bgot[1] == 1);
    FX_RELEASE(x, src, ids, sum, b, bsrc, bids);
}

/* Sources that are broadcast views (stride 0) are read like any other layout. */
static void test_broadcast_source(void)
{
    const uint32_t row[] = {7, 8, 9}, idv[] = {3, 0};
    size_t s13[] = {1, 3}, s43[] = {4, 3}, s2[] = {2};
    tl_tensor *r = u32_tensor(row, s13, 2), *ids = u32_tensor(idv, s2, 1);
    tl_tensor *x = tl_broadcast_as(r, s43, 2);
    tl_tensor *sel = x ? tl_index_select(x, ids, 0) : NULL;
    uint32_t got[6] = {0};
    CHECK(sel && tl_to_vec(sel, got, sizeof got) == TL_OK);
    CHECK(got[0] == 7 && got[2] == 9 && got[3] == 7 && got[5] == 9);
    FX_RELEASE(r, ids, x, sel);
}

static void test_out_of_range(void)
{
    const float xv[] = {1, 2, 3, 4, 5, 6};
    const int64_t bad[] = {1, -1}, far[] = {0, 1, 2, 3};
    size_t s23[] = {2, 3}, s2[] = {2}, s22[] = {2, 2};
    tl_tensor *x = tl_from_data(xv, s23, 2, TL_F32, TL_CPU);
    tl_tensor *neg = tl_from_data(bad, s2, 1, TL_I64, TL_CPU);
    tl_tensor *big = tl_from_data(far, s22, 2, TL_I64, TL_CPU);
    tl_tensor *src = tl_ones(s22, 2, TL_F32, TL_CPU);
    CHECK(!tl_index_select(x, neg, 1) && tl_last_status() == TL_ERR_RANGE);
    CHECKF(strstr(tl_last_error(), "index_select: index -1 out of range for dim 1 of [2, 3]"),
           "%s", tl_last_error());
    CHECK(tl_scatter_set(x, big, src, 1) == TL_ERR_RANGE);
    CHECKF(strstr(tl_last_error(), "scatter_set: index 3 out of range for dim 1 of [2, 3]"), "%s",
           tl_last_error());
    float after[6] = {0};
    CHECK(tl_to_vec(x, after, sizeof after) == TL_OK);
    CHECK(memcmp(after, xv, sizeof xv) == 0); /* a failed in-place op leaves x alone */
    FX_RELEASE(x, neg, big, src);
}

static void test_guards(void)
{
    const uint32_t xv[] = {0, 1, 2, 3, 4, 5}, idv[] = {1, 0, 1};
    size_t s23[] = {2, 3}, s13[] = {1, 3};
    tl_tensor *x = u32_tensor(xv, s23, 2), *fresh_ids = u32_tensor(idv, s13, 2);
    tl_tensor *row0 = tl_narrow(x, 0, 0, 1); /* a view of x: same storage, same lock */
    tl_tensor *other = tl_zeros(s13, 2, TL_U32, TL_CPU);
    /* src sharing x's storage: refused before any lock, like candle */
    CHECK(tl_scatter_set(x, fresh_ids, row0, 0) == TL_ERR_SHARED_STORAGE);
    CHECKF(strstr(tl_last_error(), "scatter_set") && strstr(tl_last_error(), "u32[2, 3]"), "%s",
           tl_last_error());
    CHECK(tl_scatter_add_set(x, fresh_ids, row0, 0) == TL_ERR_SHARED_STORAGE);
    CHECK(strstr(tl_last_error(), "scatter_add_set") != NULL);
    /* ids a view of x: not guarded; W x then R ids on one lock. glibc answers EDEADLK */
    tl_status st = tl_scatter_set(x, row0, other, 0);
    CHECKF(st == TL_ERR_LOCK, "status %d: %s", (int)st, tl_last_error());
    CHECKF(strstr(tl_last_error(), "EDEADLK") && strstr(tl_last_error(), "scatter_set"), "%s",
           tl_last_error());
    /* and the write lock was released: the same call with separate ids now works */
    CHECKF(tl_scatter_set(x, fresh_ids, other, 0) == TL_OK, "%s", tl_last_error());
    uint32_t got[6] = {9, 9, 9, 9, 9, 9};
    CHECK(tl_to_vec(x, got, sizeof got) == TL_OK);
    CHECK(got[0] == 0 && got[1] == 0 && got[2] == 2 && got[3] == 0 && got[4] == 4 && got[5] == 0);
    FX_RELEASE(x, fresh_ids, row0, other);
}

static void test_errors(void)
{
    size_t s23[] = {2, 3}, s2[] = {2}, s22[] = {2, 2}, s33[] = {3, 3};
    tl_tensor *x = tl_zeros(s23, 2, TL_F32, TL_CPU), *fids = tl_zeros(s2, 1, TL_F32, TL_CPU);
    tl_tensor *ids = tl_zeros(s2, 1, TL_U32, TL_CPU), *ids2 = tl_zeros(s22, 2, TL_U32, TL_CPU);
    tl_tensor *ids33 = tl_zeros(s33, 2, TL_U32, TL_CPU), *src64 = tl_zeros(s22, 2, TL_F64, TL_CPU);
    tl_tensor *src22 = tl_zeros(s22, 2, TL_F32, TL_CPU);
    FX_FAILS(tl_index_select(x, fids, 0), TL_ERR_DTYPE,
             "index_select: indexes must be an integer dtype, got f32[2]");
    FX_FAILS(tl_index_select(x, ids2, 0), TL_ERR_SHAPE, "u32[2, 2]");
    FX_FAILS(tl_index_select(x, ids, 2), TL_ERR_RANGE, "dim 2");
    /* larger than x outside dim 1 (3 rows for 2); smaller would do (candle's rule) */
    FX_FAILS(tl_gather(x, ids33, 1), TL_ERR_SHAPE,
             "gather: indexes u32[3, 3] must have the rank of f32[2, 3]");
    FX_FAILS(tl_scatter_add(x, ids2, src64, 1), TL_ERR_DTYPE, "f64[2, 2]");
    FX_FAILS(tl_index_add(x, ids, src22, 0), TL_ERR_SHAPE, "index_add");
    FX_FAILS_ST(tl_scatter_set(x, ids33, src22, 1), TL_ERR_SHAPE, "scatter_set");
    FX_FAILS_ST(tl_scatter_add_set(x, ids2, src22, 5), TL_ERR_RANGE, "scatter_add_set");
    CHECK(tl_scatter_add_set(x, ids2, src22, 1) == TL_OK);
    FX_RELEASE(x, fids, ids, ids2, ids33, src64, src22);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "indexing", run_case));
    test_integers();
    test_integer_adds();
    test_broadcast_source();
    test_out_of_range();
    test_guards();
    test_errors();
    return check_summary();
}
