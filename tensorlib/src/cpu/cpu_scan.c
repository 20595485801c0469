/*
 * cpu_scan.c - running sums and products along one dim (cumsum, cumprod).
 *
 * Position i along dim of the result is position i - 1 of the result combined with position
 * i of the source, each element rounded to the dtype as it is stored, so every prefix is summed or
 * multiplied one term at a time in the dtype: numpy's cumsum/cumprod in that dtype, to the
 * bit. (A double add or multiply of two f32, f16 or bf16 values rounded once to the dtype is
 * the correctly rounded operation in that dtype.) Integers wrap; the arithmetic runs on
 * uint64, whose low bits are what the narrower dtype keeps.
 *
 * Each run of the iterator over the other dims is carried along dim as a whole (not one line
 * along dim at a time), so a scan over dim 0 of a tall matrix streams through memory row by
 * row; over the last dim, consecutive steps touch neighbouring elements.
 */
#include "cpu_heavy.h"

/* Element i of a run at position `at` along dim: the running value so far (at dst index
 * prev) combined with src's element, stored at dst index di. */
static inline void step(const tl_operand *dst, const tl_operand *src, bool is_float, bool product,
                        bool first, size_t di, size_t prev, size_t si)
{
    if (is_float) {
        double x = tl_load(src->dtype, src->buf, si);
        if (!first) {
            double p = tl_load(dst->dtype, dst->buf, prev);
            x = product ? p * x : p + x;
        }
        tl_store(dst->dtype, dst->buf, di, x);
    } else {
        uint64_t x = (uint64_t)tl_load_i64(src->dtype, src->buf, si);
        if (!first) {
            uint64_t p = (uint64_t)tl_load_i64(dst->dtype, dst->buf, prev);
            x = product ? p * x : p + x;
        }
        tl_store_i64(dst->dtype, dst->buf, di, (int64_t)x);
    }
}

tl_status tl_cpu_scan(const tl_operand *dst, const tl_operand *src, size_t dim, bool product)
{
    /* the iterator walks the other dims (dim seen as size 1); each of its runs is then
     * carried along dim slice by slice */
    tl_layout d = *dst->layout, s = *src->layout;
    size_t n = s.shape[dim], dstride = d.stride[dim], sstride = s.stride[dim];
    d.shape[dim] = s.shape[dim] = 1;
    const tl_layout *ls[2] = {&d, &s};
    bool is_float = tl_dtype_is_float(src->dtype);
    tl_iter it;
    if (n == 0 || !tl_iter_init(&it, d.shape, d.ndim, ls, 2))
        return TL_OK; /* an empty dim: nothing to write */
    do {
        for (size_t at = 0; at < n; at++) {
            size_t d0 = it.off[0] + at * dstride, s0 = it.off[1] + at * sstride;
            for (size_t i = 0; i < it.inner; i++) {
                size_t di = d0 + i * it.step[0];
                step(dst, src, is_float, product, at == 0, di, di - (at ? dstride : 0),
                     s0 + i * it.step[1]);
            }
        }
    } while (tl_iter_next(&it));
    return TL_OK;
}
