/*
 * test_audit_convert.c - tl_to_dtype between every pair of dtypes against numpy
 * (fixtures/audit_convert.txt, from gen_audit.py), in every layout variant: from f64 values
 * no target holds (fractions, halves, the ends of each integer range and beyond, 1e19, NaN,
 * inf, f16's and bf16's largest values and halfway points, subnormals), from the ends of
 * every integer dtype, and from f16 and bf16. Float -> integer is Rust's `as` (truncate,
 * saturate, NaN -> 0, as candle's cpu to_dtype), integer -> integer keeps the low bits, a
 * narrower float rounds to nearest even. Also tl_arange against numpy's arange.
 */
#include <string.h>

#include "check.h"
#include "fixture.h"

#define EXPECT(c, name, got, dt, rtol, v) CHECK(fx_check(c, name, got, dt, rtol, rtol, v))

static const tl_dtype all_dtypes[] = {TL_U8,  TL_U32, TL_I16, TL_I32, TL_I64,
                                      TL_F16, TL_BF16, TL_F32, TL_F64};

/* The source dtype is the case name's suffix ("from_bf16"); the fixture's x holds values that
 * dtype represents exactly, so making the input rounds nothing. */
static void run_convert(const fx_case *c, tl_dtype src, fx_variant v)
{
    tl_tensor *x = fx_make(fx_get(c, "x"), src, v);
    for (size_t i = 0; i < sizeof all_dtypes / sizeof all_dtypes[0]; i++) {
        tl_dtype to = all_dtypes[i];
        if (fx_get(c, tl_dtype_name(to)))
            EXPECT(c, tl_dtype_name(to), tl_to_dtype(x, to), to, 0, v);
    }
    tl_release(x);
}

/* Runs once per dtype; the variant does not apply (a fresh tensor). */
static void run_arange(const fx_case *c, tl_dtype dt, fx_variant v)
{
    if (v != FX_CONTIGUOUS)
        return;
    EXPECT(c, "out", tl_arange(fx_p(c, 0), fx_p(c, 1), fx_p(c, 2), dt, TL_CPU), dt, fx_rtol(dt),
           v);
}

static const fx_runner runners[] = {
    {"from_", run_convert, FX_OWN},
    {"arange", run_arange, FX_FLOATS},
};

int main(int argc, char **argv)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, "audit_convert", runners, sizeof runners / sizeof runners[0]));
    return check_summary();
}
