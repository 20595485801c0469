/*
 * test_strided.c - elementwise ops on transposed and permuted views give the same bits as on
 * row-major copies of them: the result that follows its input's memory order, and the tiled
 * path for operands whose orders differ (sizes chosen so tiles are partial at both edges).
 */
#include <stdint.h>

#include "tl_test.h"

/* Checks that got and want (both owned) hold the same elements, bit for bit. */
static void same_bits(tl_tensor *got, tl_tensor *want, const char *what)
{
    size_t n = tl_elem_count(want) * tl_dtype_size(tl_dtype_of(want));
    unsigned char *g = malloc(n ? n : 1), *w = malloc(n ? n : 1);
    int ok = got && want && tl_elem_count(got) == tl_elem_count(want) &&
             tl_to_vec(got, g, n) == TL_OK && tl_to_vec(want, w, n) == TL_OK &&
             memcmp(g, w, n) == 0;
    CHECKF(ok, "%s: %s", what, got && want ? "values differ" : tl_last_error());
    free(g);
    free(w);
    tl_release(got);
    tl_release(want);
}

static void unary_on_transposed(tl_dtype dtype)
{
    tl_tensor *r = tl_rand(-3, 3, SHAPE(130, 67), TL_F32, TL_CPU, 11);
    tl_tensor *a = tl_to_dtype(r, dtype);
    tl_tensor *t = tl_transpose(a, 0, 1), *tc = tl_contiguous(t);
    tl_unary_op op = dtype == TL_I64 || dtype == TL_U8 ? TL_NEG : TL_EXP;
    tl_tensor *e = tl_unary(op, t);
    /* the result follows t's memory order: column-major strides, no copy of t */
    CHECK(e && tl_strides(e)[0] == 1 && tl_strides(e)[1] == 67 && tl_offset(e) == 0);
    same_bits(e, tl_unary(op, tc), tl_dtype_name(dtype));
    same_bits(tl_affine(t, 2, 1), tl_affine(tc, 2, 1), "affine");
    tl_release(r);
    tl_release(a);
    tl_release(t);
    tl_release(tc);
}

/* a.T + b with b row-major: the two operands walk different orders, so the kernel tiles. */
static void mixed_orders(tl_dtype dtype)
{
    tl_tensor *ra = tl_rand(-3, 3, SHAPE(131, 70), TL_F32, TL_CPU, 1);
    tl_tensor *rb = tl_rand(-3, 3, SHAPE(70, 131), TL_F32, TL_CPU, 2);
    tl_tensor *a = tl_to_dtype(ra, dtype), *b = tl_to_dtype(rb, dtype);
    tl_tensor *t = tl_transpose(a, 0, 1), *tc = tl_contiguous(t);
    tl_tensor *s = tl_add(t, b);
    CHECK(s && tl_is_contiguous(s));
    same_bits(s, tl_add(tc, b), "add");
    same_bits(tl_mul(b, t), tl_mul(b, tc), "mul");
    same_bits(tl_cmp(TL_LT, t, b), tl_cmp(TL_LT, tc, b), "cmp");
    tl_tensor *c = tl_cmp(TL_GT, b, tc);
    same_bits(tl_where_cond(c, t, b), tl_where_cond(c, tc, b), "where");
    /* a narrow of the transposed view: offset and a gap between columns */
    tl_tensor *n = tl_narrow(t, 1, 3, 100), *nb = tl_narrow(b, 1, 5, 100), *nc = tl_contiguous(n);
    same_bits(tl_sub(n, nb), tl_sub(nc, nb), "narrowed");
    tl_release(c);
    tl_release(n);
    tl_release(nb);
    tl_release(nc);
    tl_release(ra);
    tl_release(rb);
    tl_release(a);
    tl_release(b);
    tl_release(t);
    tl_release(tc);
}

/* A 3-D permutation, and two operands that share it: the result keeps their order. */
static void permuted(void)
{
    tl_tensor *a = tl_rand(-1, 1, SHAPE(5, 70, 66), TL_F32, TL_CPU, 4);
    tl_tensor *b = tl_rand(-1, 1, SHAPE(5, 70, 66), TL_F32, TL_CPU, 5);
    const size_t perm[] = {2, 0, 1};
    tl_tensor *pa = tl_permute(a, perm, 3), *pb = tl_permute(b, perm, 3);
    tl_tensor *ca = tl_contiguous(pa), *cb = tl_contiguous(pb);
    tl_tensor *s = tl_binary(TL_MAXIMUM, pa, pb);
    CHECK(s && tl_strides(s)[0] == 1 && tl_strides(s)[1] == 70 * 66 && tl_strides(s)[2] == 66);
    same_bits(s, tl_binary(TL_MAXIMUM, ca, cb), "maximum");
    same_bits(tl_unary(TL_TANH, pa), tl_unary(TL_TANH, ca), "tanh");
    /* a result in a permuted order feeds the next op like any view */
    tl_tensor *e = tl_unary(TL_EXP, pa), *ec = tl_unary(TL_EXP, ca);
    same_bits(tl_reduce(TL_SUM, e, (const size_t[]){1}, 1, false),
              tl_reduce(TL_SUM, ec, (const size_t[]){1}, 1, false), "sum of a permuted result");
    same_bits(tl_reshape(e, SHAPE(66 * 5, 70)), tl_reshape(ec, SHAPE(66 * 5, 70)), "reshape");
    tl_release(e);
    tl_release(ec);
    tl_release(a);
    tl_release(b);
    tl_release(pa);
    tl_release(pb);
    tl_release(ca);
    tl_release(cb);
}

int main(void)
{
    tl_dtype dts[] = {TL_F32, TL_F64, TL_F16, TL_BF16, TL_I64, TL_U8};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        unary_on_transposed(dts[i]);
        mixed_orders(dts[i]);
    }
    permuted();
    return check_summary();
}
