/*
 * test_audit_index.c - indexing, combining and views against numpy
 * (fixtures/audit_index.txt, from gen_audit.py), on every dtype and layout variant:
 * index_select, gather, scatter_add and index_add along each dim of a 3-D tensor with index
 * tensors of every integer dtype (repeats included, so adds accumulate), an empty index
 * list, cat and stack with empty parts and on a dim counted from the end, and views (narrow,
 * permute, broadcast_as, get, flip, chunk, flatten) read out against numpy slicing, and
 * upsample_nearest1d where candle's f64 ratio and exact arithmetic part. Integer
 * value dtypes use the fixture's values times 8 (multiples of 1/8 become integers; the ops
 * only move and add values, so the reference scales with them), shifted above 0 for u8/u32.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, v) CHECK(fx_check(c, name, got, dt, fx_rtol(dt), fx_rtol(dt), v))

static const tl_dtype all_dtypes[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_U8,
                                      TL_U32, TL_I16, TL_I32, TL_I64};

/* The adds run on the signed dtypes only (a sum of negative values would leave u8/u32). */
static const tl_dtype signed_dtypes[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_I16, TL_I32, TL_I64};

static bool is_float(tl_dtype dt)
{
    return dt == TL_F32 || dt == TL_F64 || dt == TL_F16 || dt == TL_BF16;
}

/* A copy of the case with every tensor but "ids" times 8 for an integer dt (the fixture's
 * multiples of 1/8 in [-2, 2] become integers), plus shift. */
static fx_case scaled_case(const fx_case *c, tl_dtype dt, double shift)
{
    fx_case s = *c;
    double k = is_float(dt) ? 1 : 8;
    for (size_t i = 0; i < s.ntensors; i++) {
        fx_tensor *t = &s.tensors[i];
        double *d = malloc((t->count ? t->count : 1) * sizeof *d);
        bool ids = !strcmp(t->name, "ids");
        for (size_t j = 0; d && j < t->count; j++)
            d[j] = ids ? t->data[j] : t->data[j] * k + shift;
        t->data = d;
    }
    return s;
}

static void free_case(fx_case *s)
{
    for (size_t i = 0; i < s->ntensors; i++)
        free(s->tensors[i].data);
}

/* Unsigned dtypes see the values shifted up by 32 (so they stay above 0); an op that only
 * moves values turns the shifted input into the shifted output. */
static double shift_of(tl_dtype dt)
{
    return dt == TL_U8 || dt == TL_U32 ? 32 : 0;
}

/* index_select and gather. */
static void run_move(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_case s = scaled_case(c, dt, shift_of(dt));
    size_t dim = fx_dim(c, "dim");
    tl_tensor *x = fx_make(fx_get(&s, "x"), dt, v);
    for (size_t i = 0; i < sizeof fx_int_dtypes / sizeof fx_int_dtypes[0]; i++) {
        tl_tensor *ids = fx_make(fx_get(&s, "ids"), fx_int_dtypes[i], (v + 1) % FX_VARIANT_COUNT);
        tl_tensor *out = !strncmp(c->name, "gather", 6) ? tl_gather(x, ids, dim)
                                                        : tl_index_select(x, ids, dim);
        EXPECT(&s, "out", out, dt, v);
        tl_release(ids);
    }
    tl_release(x);
    free_case(&s);
}

/* scatter_add and index_add. */
static void run_add(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_case s = scaled_case(c, dt, 0);
    size_t dim = fx_dim(c, "dim");
    tl_tensor *x = fx_make(fx_get(&s, "x"), dt, v);
    tl_tensor *src = fx_make(fx_get(&s, "src"), dt, (v + 2) % FX_VARIANT_COUNT);
    for (size_t i = 0; i < sizeof fx_int_dtypes / sizeof fx_int_dtypes[0]; i++) {
        tl_tensor *ids = fx_make(fx_get(&s, "ids"), fx_int_dtypes[i], (v + 1) % FX_VARIANT_COUNT);
        tl_tensor *out = !strncmp(c->name, "scatter_add", 11) ? tl_scatter_add(x, ids, src, dim)
                                                              : tl_index_add(x, ids, src, dim);
        EXPECT(&s, "out", out, dt, v);
        tl_release(ids);
    }
    tl_release(x);
    tl_release(src);
    free_case(&s);
}

static void run_combine(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_case s = scaled_case(c, dt, shift_of(dt));
    const tl_tensor *parts[3];
    tl_tensor *made[3] = {NULL, NULL, NULL};
    size_t n = 0;
    const char *names[] = {"t0", "t1", "t2"};
    for (; n < 3 && fx_get(&s, names[n]); n++)
        parts[n] = made[n] = fx_make(fx_get(&s, names[n]), dt, (v + n) % FX_VARIANT_COUNT);
    size_t dim = fx_dim(c, "dim");
    tl_tensor *out = !strncmp(c->name, "cat", 3) ? tl_cat(parts, n, dim) : tl_stack(parts, n, dim);
    EXPECT(&s, "out", out, dt, v);
    for (size_t i = 0; i < n; i++)
        tl_release(made[i]);
    free_case(&s);
}

static void run_views(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_case s = scaled_case(c, dt, shift_of(dt));
    tl_tensor *x = fx_make(fx_get(&s, "x"), dt, v), *chunks[2] = {NULL, NULL};
    size_t count = 0, flip[] = {0, TL_DIM(-1)};
    EXPECT(&s, "narrow", tl_narrow(x, 1, 1, 2), dt, v);
    EXPECT(&s, "permute", tl_permute(x, (const size_t[]){2, 0, 1}, 3), dt, v);
    tl_tensor *col = tl_narrow(x, 1, 0, 1);
    EXPECT(&s, "bcast", col ? tl_broadcast_as(col, (const size_t[]){2, 3, 4, 5}, 4) : NULL, dt, v);
    tl_release(col);
    EXPECT(&s, "get", tl_get(x, 2), dt, v);
    EXPECT(&s, "flip02", tl_flip(x, flip, 2), dt, v);
    CHECK(tl_chunk(x, 2, 1, chunks, &count) == TL_OK && count == 2);
    EXPECT(&s, "chunk1", count == 2 ? tl_retain(chunks[1]) : NULL, dt, v);
    EXPECT(&s, "flat12", tl_flatten(x, 1, 2), dt, v);
    tl_release(chunks[0]);
    tl_release(chunks[1]);
    tl_release(x);
    free_case(&s);
}

static void run_upsample(const fx_case *c, tl_dtype dt, fx_variant v)
{
    fx_case s = scaled_case(c, dt, shift_of(dt));
    tl_tensor *x = fx_make(fx_get(&s, "x"), dt, v);
    EXPECT(&s, "out", tl_upsample_nearest1d(x, (size_t)fx_param(c, "size")), dt, v);
    tl_release(x);
    free_case(&s);
}

#define ALL all_dtypes, sizeof all_dtypes / sizeof all_dtypes[0]
static const fx_runner runners[] = {
    {"index_select", run_move, ALL},
    {"gather", run_move, ALL},
    {"scatter_add", run_add, signed_dtypes, sizeof signed_dtypes / sizeof signed_dtypes[0]},
    {"index_add", run_add, signed_dtypes, sizeof signed_dtypes / sizeof signed_dtypes[0]},
    {"cat_", run_combine, ALL},
    {"stack_", run_combine, ALL},
    {"views", run_views, ALL},
    {"upsample", run_upsample, ALL},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_index", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
