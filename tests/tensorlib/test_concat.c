/*
 * test_concat.c - tl_cat / tl_stack against numpy (fixtures/concat.txt) along every dim, on
 * every float dtype with the parts in different layouts; an integer cat of one tensor with
 * itself (two read locks on one storage); the error paths.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture.h"

static void run_case(const fx_case *c, tl_dtype dtype, fx_variant rotate)
{
    char label[192];
    snprintf(label, sizeof label, "%s layouts from %s", c->name, fx_variant_name(rotate));
    const char *names[] = {"t0", "t1", "t2"};
    tl_tensor *parts[3];
    bool ok = true;
    for (int i = 0; i < 3; i++)
        ok &= (parts[i] = fx_make(fx_get(c, names[i]), dtype, (rotate + i) % FX_VARIANT_COUNT)) !=
              NULL;
    size_t dim = (size_t)fx_param(c, "dim");
    const tl_tensor *const *ps = (const tl_tensor *const *)parts;
    tl_tensor *out = NULL;
    if (ok)
        out = strncmp(c->name, "cat", 3) == 0 ? tl_cat(ps, 3, dim) : tl_stack(ps, 3, dim);
    CHECKF(fx_expect(out, fx_get(c, "out"), dtype, label), "%s on %s", label,
           tl_dtype_name(dtype));
    FX_RELEASE(parts[0], parts[1], parts[2], out);
}

static void test_self_cat(void)
{
    const int64_t v[] = {1, 2, 3, 4};
    size_t shape[] = {2, 2};
    tl_tensor *x = tl_from_data(v, shape, 2, TL_I64, TL_CPU);
    tl_tensor *xt = tl_transpose(x, 0, 1);
    const tl_tensor *parts[] = {x, xt};
    tl_tensor *c = tl_cat(parts, 2, 1);
    int64_t got[8] = {0};
    CHECK(c && tl_shape(c)[0] == 2 && tl_shape(c)[1] == 4);
    CHECK(c && tl_to_vec(c, got, sizeof got) == TL_OK);
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 1 && got[3] == 3 && got[6] == 2 && got[7] == 4);
    tl_tensor *s = tl_stack(parts, 2, 2);
    CHECK(s && tl_ndim(s) == 3 && tl_shape(s)[2] == 2 && tl_to_vec(s, got, sizeof got) == TL_OK);
    CHECK(got[0] == 1 && got[1] == 1 && got[2] == 2 && got[3] == 3);
    FX_RELEASE(x, xt, c, s);
}

/* A broadcast part (stride 0) is copied like any other layout. */
static void test_broadcast_part(void)
{
    const double m[] = {1, 2, 3, 4}, row[] = {5, 6};
    size_t s22[] = {2, 2}, s12[] = {1, 2};
    tl_tensor *x = tl_from_data(m, s22, 2, TL_F64, TL_CPU);
    tl_tensor *r = tl_from_data(row, s12, 2, TL_F64, TL_CPU);
    tl_tensor *rr = tl_broadcast_as(r, s22, 2);
    const tl_tensor *parts[] = {x, rr};
    tl_tensor *c = rr ? tl_cat(parts, 2, 1) : NULL;
    double got[8] = {0};
    CHECK(c && tl_to_vec(c, got, sizeof got) == TL_OK);
    CHECK(got[0] == 1 && got[2] == 5 && got[3] == 6 && got[4] == 3 && got[6] == 5 && got[7] == 6);
    FX_RELEASE(x, r, rr, c);
}

static void test_errors(void)
{
    size_t s23[] = {2, 3}, s33[] = {3, 3}, s24[] = {2, 4};
    tl_tensor *a = tl_zeros(s23, 2, TL_F32, TL_CPU), *b = tl_zeros(s33, 2, TL_F32, TL_CPU);
    tl_tensor *c = tl_zeros(s24, 2, TL_F32, TL_CPU), *d = tl_zeros(s23, 2, TL_U8, TL_CPU);
    const tl_tensor *ab[] = {a, b}, *ac[] = {a, c}, *ad[] = {a, d}, *anull[] = {a, NULL};
    FX_FAILS(tl_cat(ab, 2, 1), TL_ERR_SHAPE, "cat: f32[2, 3] and f32[3, 3] differ outside dim 1");
    tl_tensor *ok = tl_cat(ac, 2, 1);
    CHECK(ok && tl_shape(ok)[1] == 7);
    tl_release(ok);
    FX_FAILS(tl_cat(ad, 2, 0), TL_ERR_DTYPE, "u8[2, 3]");
    FX_FAILS(tl_cat(ab, 2, 2), TL_ERR_RANGE, "dim 2");
    FX_FAILS(tl_cat(ab, 0, 0), TL_ERR_ARG, "cat");
    FX_FAILS(tl_cat(anull, 2, 0), TL_ERR_ARG, "cat");
    FX_FAILS(tl_stack(ab, 2, 0), TL_ERR_SHAPE, "stack: f32[1, 2, 3] and f32[1, 3, 3]");
    FX_FAILS(tl_stack(ab, 2, 3), TL_ERR_RANGE, "stack: dim 3");
    FX_RELEASE(a, b, c, d);
}

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_each_case(dir, "concat", run_case));
    test_self_cat();
    test_broadcast_part();
    test_errors();
    return check_summary();
}
