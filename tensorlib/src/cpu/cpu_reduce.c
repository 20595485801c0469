/*
 * cpu_reduce.c - reductions over a set of dims. One pass over the source with the iterator
 * pairing each source element with its accumulator: the accumulator layout is the output's,
 * with stride 0 on the reduced dims. For argmax/argmin a third, synthetic layout (stride 1 on
 * the reduced dim, 0 elsewhere) yields the element's index along that dim.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

typedef struct acc {
    double value;
    size_t index; /* argmax/argmin: where value was found */
} acc;

static void acc_init(tl_reduce_op op, acc *a, size_t n)
{
    double start = op == TL_MAX || op == TL_ARGMAX ? -INFINITY
                   : op == TL_MIN || op == TL_ARGMIN ? INFINITY : 0.0;
    for (size_t i = 0; i < n; i++)
        a[i] = (acc){start, 0};
}

/* Folds one value in; the first of equal extremes wins, NaN never does. */
static void acc_add(tl_reduce_op op, acc *a, double v, size_t index)
{
    switch (op) {
    case TL_SUM:
    case TL_MEAN: a->value += v; break;
    case TL_MAX: if (v > a->value) a->value = v; break;
    case TL_MIN: if (v < a->value) a->value = v; break;
    case TL_ARGMAX: if (v > a->value) *a = (acc){v, index}; break;
    case TL_ARGMIN: if (v < a->value) *a = (acc){v, index}; break;
    case TL_REDUCE_COUNT: break;
    }
}

tl_status tl_cpu_reduce(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                        uint32_t reduced)
{
    const tl_layout *sl = src->layout;
    size_t nout = tl_layout_elems(dst->layout), count = 1;
    acc *accs = malloc((nout ? nout : 1) * sizeof *accs);
    if (!accs)
        return tl_fail_nomem("reduce", nout * sizeof *accs);
    acc_init(op, accs, nout);

    tl_layout out = *dst->layout, index = {.ndim = sl->ndim};
    for (size_t d = 0; d < sl->ndim; d++) {
        bool r = reduced & (1u << d);
        out.shape[d] = sl->shape[d];
        out.stride[d] = r ? 0 : dst->layout->stride[d];
        out.offset = 0;
        index.shape[d] = sl->shape[d];
        index.stride[d] = r ? 1 : 0;
        count *= r ? sl->shape[d] : 1;
    }
    const tl_layout *ls[3] = {sl, &out, &index};
    tl_iter it;
    if (tl_iter_init(&it, sl->shape, sl->ndim, ls, 3)) {
        do {
            for (size_t i = 0; i < it.inner; i++)
                acc_add(op, &accs[it.off[1] + i * it.step[1]],
                        tl_load(src->dtype, src->buf, it.off[0] + i * it.step[0]),
                        it.off[2] + i * it.step[2]);
        } while (tl_iter_next(&it));
    }
    for (size_t i = 0; i < nout; i++) {
        double v = op == TL_ARGMAX || op == TL_ARGMIN ? (double)accs[i].index
                   : op == TL_MEAN ? accs[i].value / (double)count : accs[i].value;
        tl_store(dst->dtype, dst->buf, dst->layout->offset + i, v);
    }
    free(accs);
    return TL_OK;
}
