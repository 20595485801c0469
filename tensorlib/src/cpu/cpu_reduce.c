/*
 * cpu_reduce.c - reductions over a set of dims. One pass over the source with the iterator
 * pairing each source element with its accumulator: the accumulator layout is the output's,
 * with stride 0 on the reduced dims. For argmax/argmin a third, synthetic layout (stride 1 on
 * the reduced dim, 0 elsewhere) yields the element's index along that dim. Floats accumulate
 * in double; integers in int64 (exact; sums wrap in int64 and saturate into u8/u32).
 */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

typedef struct acc {
    double f;
    int64_t i;
    size_t index; /* argmax/argmin: where the extreme was found */
    bool seen;    /* max/min: f/i hold a value */
} acc;

/* Folds in one value (as double v or int64 iv); the first of equal extremes wins, a NaN never
 * replaces a number. */
static void acc_add(tl_reduce_op op, bool ints, acc *a, double v, int64_t iv, size_t index)
{
    if (op == TL_SUM || op == TL_MEAN) {
        if (ints)
            a->i = (int64_t)((uint64_t)a->i + (uint64_t)iv);
        else
            a->f += v;
        return;
    }
    bool want_max = op == TL_MAX || op == TL_ARGMAX;
    bool better = !a->seen || (ints ? (want_max ? iv > a->i : iv < a->i)
                                    : (want_max ? v > a->f : v < a->f) || isnan(a->f));
    if (better && !(a->seen && isnan(v))) {
        *a = (acc){.f = v, .i = iv, .index = index, .seen = true};
    }
}

static void store_result(tl_reduce_op op, bool ints, const tl_operand *dst, size_t i,
                         const acc *a, size_t count)
{
    size_t at = dst->layout->offset + i;
    if (op == TL_ARGMAX || op == TL_ARGMIN)
        tl_store_i64(dst->dtype, dst->buf, at, (int64_t)a->index);
    else if (ints) /* an empty integer mean is 0 rather than a division by zero */
        tl_store_i64(dst->dtype, dst->buf, at,
                     op == TL_MEAN ? (count ? a->i / (int64_t)count : 0) : a->i);
    else
        tl_store(dst->dtype, dst->buf, at, op == TL_MEAN ? a->f / (double)count : a->f);
}

tl_status tl_cpu_reduce(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                        uint32_t reduced)
{
    const tl_layout *sl = src->layout;
    bool ints = !tl_dtype_is_float(src->dtype);
    size_t nout = tl_layout_elems(dst->layout), count = 1;
    acc *accs = tl_calloc(nout, sizeof *accs);
    if (!accs)
        return tl_fail_nomem("reduce", nout * sizeof *accs);

    tl_layout out = {.ndim = sl->ndim}, index = {.ndim = sl->ndim};
    for (size_t d = 0; d < sl->ndim; d++) {
        bool r = reduced & (1u << d);
        out.shape[d] = index.shape[d] = sl->shape[d];
        out.stride[d] = r ? 0 : dst->layout->stride[d];
        index.stride[d] = r ? 1 : 0;
        count *= r ? sl->shape[d] : 1;
    }
    const tl_layout *ls[3] = {sl, &out, &index};
    tl_iter it;
    if (tl_iter_init(&it, sl->shape, sl->ndim, ls, 3)) {
        do {
            for (size_t k = 0; k < it.inner; k++) {
                size_t at = it.off[0] + k * it.step[0];
                double v = ints ? 0 : tl_load(src->dtype, src->buf, at);
                int64_t iv = ints ? tl_load_i64(src->dtype, src->buf, at) : 0;
                acc_add(op, ints, &accs[it.off[1] + k * it.step[1]], v, iv,
                        it.off[2] + k * it.step[2]);
            }
        } while (tl_iter_next(&it));
    }
    for (size_t i = 0; i < nout; i++)
        store_result(op, ints, dst, i, &accs[i], count);
    free(accs);
    return TL_OK;
}
