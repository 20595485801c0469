/*
 * cpu_reduce.c - reductions over a set of dims. One pass over the source with the iterator
 * pairing each source element with its accumulator: the accumulator layout is the output's,
 * with stride 0 on the reduced dims. For argmax/argmin a third, synthetic layout (stride 1 on
 * the reduced dim, 0 elsewhere) yields the element's index along that dim.
 *
 * Floats accumulate in double, integers in int64 (sums wrap there and when stored into a
 * narrower integer). max/min fold with NaN skipped (a NaN accumulator takes the next number),
 * then a run whose first element is NaN gets NaN back (keep_leading_nan: candle's rule).
 * f32/f64 sum/mean/max/min have typed run loops: a run along a reduced dim folds into one
 * accumulator with eight partial results (so the compiler can vectorize without reassociating
 * one long chain), a run along a kept dim updates a row of accumulators, eight source rows at a
 * time when the dim outside the run is reduced (a sum over dim 0 of a matrix).
 */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

typedef struct accs {
    double *f;     /* float accumulators */
    int64_t *i;    /* integer accumulators (a split mean: the sum of the quotients) */
    int64_t *rem;  /* a split mean: the sum of the remainders, kept within (-count, count) */
    size_t *index; /* argmax/argmin: where the extreme was found */
    size_t count;  /* elements per output */
    bool split;    /* an integer mean whose int64 sum could wrap (below) */
} accs;

#define MAX_OF(m, v) ((v) > (m) || (m) != (m) ? (v) : (m))
#define MIN_OF(m, v) ((v) < (m) || (m) != (m) ? (v) : (m))

static bool is_arg(tl_reduce_op op)
{
    return op == TL_ARGMAX || op == TL_ARGMIN;
}

/* ------------------------------------------------------------------------------------------
 * Typed runs (f32/f64; sum, mean, max, min)
 * ---------------------------------------------------------------------------------------- */
#define FOLD_RUN(T, NAME, COMBINE, INIT)                                                          \
    SIMD_CLONES                                                                                   \
    static double NAME(const T *s, size_t step, size_t n, double acc)                             \
    {                                                                                             \
        double part[8];                                                                           \
        size_t i = 0;                                                                             \
        for (int k = 0; k < 8; k++)                                                               \
            part[k] = INIT;                                                                       \
        if (step == 1)                                                                            \
            for (; i + 8 <= n; i += 8)                                                            \
                for (int k = 0; k < 8; k++)                                                       \
                    part[k] = COMBINE(part[k], (double)s[i + k]);                                 \
        for (; i < n; i++)                                                                        \
            part[0] = COMBINE(part[0], (double)s[i * step]);                                      \
        for (int k = 1; k < 8; k++)                                                               \
            part[0] = COMBINE(part[0], part[k]);                                                  \
        return COMBINE(acc, part[0]);                                                             \
    }

#define ADD(a, b) ((a) + (b))
FOLD_RUN(float, fold_sum_f32, ADD, 0.0)
FOLD_RUN(double, fold_sum_f64, ADD, 0.0)
FOLD_RUN(float, fold_max_f32, MAX_OF, NAN)
FOLD_RUN(double, fold_max_f64, MAX_OF, NAN)
FOLD_RUN(float, fold_min_f32, MIN_OF, NAN)
FOLD_RUN(double, fold_min_f64, MIN_OF, NAN)

#define ROW_RUN(T, NAME, COMBINE)                                                                 \
    SIMD_CLONES                                                                                   \
    static void NAME(double *acc, size_t astep, const T *s, size_t step, size_t n)                \
    {                                                                                             \
        if (astep == 1 && step == 1)                                                              \
            for (size_t i = 0; i < n; i++)                                                        \
                acc[i] = COMBINE(acc[i], (double)s[i]);                                           \
        else                                                                                      \
            for (size_t i = 0; i < n; i++)                                                        \
                acc[i * astep] = COMBINE(acc[i * astep], (double)s[i * step]);                    \
    }

ROW_RUN(float, row_sum_f32, ADD)
ROW_RUN(double, row_sum_f64, ADD)
ROW_RUN(float, row_max_f32, MAX_OF)
ROW_RUN(double, row_max_f64, MAX_OF)
ROW_RUN(float, row_min_f32, MIN_OF)
ROW_RUN(double, row_min_f64, MIN_OF)

/* Eight source rows (rs apart) added into one row of accumulators: pairwise in the source
 * type, then once into the double accumulator - a sum over an outer dim reads eight streams at
 * once and converts once per eight elements, and stays within a few ulps of the source type
 * before the double sum. A pair that overflows the source type (f32 3e38 + 3e38) would give
 * inf - inf = NaN for a column that sums to 0 in double (an f64 column to inf, as adding one
 * row at a time does): such a column's eight elements, and those of one holding an inf or a
 * NaN, are left out here, and the call returns true so that sum8_spilled adds them one row at
 * a time, as the ungrouped path would. */
#define ROW_SUM8(T, NAME)                                                                         \
    SIMD_CLONES                                                                                   \
    static bool NAME(double *restrict acc, const T *restrict s, size_t rs, size_t n)              \
    {                                                                                             \
        const T *s0 = s, *s1 = s + rs, *s2 = s + 2 * rs, *s3 = s + 3 * rs;                       \
        const T *s4 = s + 4 * rs, *s5 = s + 5 * rs, *s6 = s + 6 * rs, *s7 = s + 7 * rs;           \
        int spilled = 0;                                                                          \
        for (size_t i = 0; i < n; i++) {                                                          \
            T p = ((s0[i] + s1[i]) + (s2[i] + s3[i])) + ((s4[i] + s5[i]) + (s6[i] + s7[i]));     \
            int finite = p - p == 0; /* inf - inf and NaN - NaN are NaN */                        \
            acc[i] += finite ? (double)p : 0.0;                                                   \
            spilled |= !finite;                                                                   \
        }                                                                                         \
        return spilled;                                                                           \
    }
ROW_SUM8(float, row_sum8_f32)
ROW_SUM8(double, row_sum8_f64)

/* The columns row_sum8 left out, added one source row at a time in double. */
#define SUM8_SPILLED(T, NAME)                                                                     \
    static void NAME(double *acc, const T *s, size_t rs, size_t n)                                \
    {                                                                                             \
        for (size_t i = 0; i < n; i++) {                                                          \
            T p = ((s[i] + s[rs + i]) + (s[2 * rs + i] + s[3 * rs + i])) +                        \
                  ((s[4 * rs + i] + s[5 * rs + i]) + (s[6 * rs + i] + s[7 * rs + i]));            \
            if (p - p != 0)                                                                       \
                for (size_t r = 0; r < 8; r++)                                                    \
                    acc[i] += (double)s[r * rs + i];                                              \
        }                                                                                         \
    }
SUM8_SPILLED(float, sum8_spilled_f32)
SUM8_SPILLED(double, sum8_spilled_f64)
#define SUM_GROUP 8

/* Can the next SUM_GROUP runs be summed as a group: a sum whose run walks kept dims with unit
 * steps while the dim outside it is reduced (all those runs share one row of accumulators). */
static bool sum_group(tl_reduce_op op, const tl_iter *it)
{
    if ((op != TL_SUM && op != TL_MEAN) || it->outer == 0 || it->step[0] != 1 ||
        it->step[1] != 1)
        return false;
    size_t d = it->outer - 1;
    return it->stride[1][d] == 0 && it->shape[d] - it->idx[d] >= SUM_GROUP;
}

/* The first zero of a run (0 when there is none), keeping its sign. */
#define FIRST_ZERO(T, NAME)                                                                       \
    static double NAME(const T *s, size_t step, size_t n)                                         \
    {                                                                                             \
        for (size_t i = 0; i < n; i++)                                                            \
            if (s[i * step] == 0)                                                                 \
                return (double)s[i * step];                                                       \
        return 0;                                                                                 \
    }
FIRST_ZERO(float, first_zero_f32)
FIRST_ZERO(double, first_zero_f64)

/* One iterator run: src elements from s_off (step s_step) into accumulators from a_off. */
static void typed_run(tl_reduce_op op, const tl_operand *src, size_t s_off, size_t s_step,
                      double *acc, size_t a_step, size_t n)
{
    bool f32 = src->dtype == TL_F32;
    const void *s = tl_cpu_at(src->buf, src->dtype, s_off);
    int kind = op == TL_MAX ? 1 : op == TL_MIN ? 2 : 0; /* sum and mean add */
    if (a_step == 0) {
        static double (*const fold_f32[])(const float *, size_t, size_t, double) = {
            fold_sum_f32, fold_max_f32, fold_min_f32};
        static double (*const fold_f64[])(const double *, size_t, size_t, double) = {
            fold_sum_f64, fold_max_f64, fold_min_f64};
        double before = *acc;
        *acc = f32 ? fold_f32[kind](s, s_step, n, *acc) : fold_f64[kind](s, s_step, n, *acc);
        /* The eight partial extremes (a unit-step run of 8 or more) merge in lane order, not
         * the run's, so of equal extremes a later one can win. Equal doubles differ only in a
         * zero's sign, and candle's fold keeps the zero it met first: take the run's first
         * zero when the run set a zero (an earlier run's zero is kept, as it should be). At
         * worst, a zero only at the end, this reads the run twice. */
        if (kind != 0 && *acc == 0 && before != 0 && s_step == 1 && n >= 8)
            *acc = f32 ? first_zero_f32(s, s_step, n) : first_zero_f64(s, s_step, n);
        return;
    }
    static void (*const row_f32[])(double *, size_t, const float *, size_t, size_t) = {
        row_sum_f32, row_max_f32, row_min_f32};
    static void (*const row_f64[])(double *, size_t, const double *, size_t, size_t) = {
        row_sum_f64, row_max_f64, row_min_f64};
    if (f32)
        row_f32[kind](acc, a_step, s, s_step, n);
    else
        row_f64[kind](acc, a_step, s, s_step, n);
}

/* ------------------------------------------------------------------------------------------
 * Generic element path (integers, f16/bf16, argmax/argmin)
 * ---------------------------------------------------------------------------------------- */
/* An integer mean is the exact mean truncated, even where the run's sum would wrap in int64
 * (an i64 run holding INT64_MIN and -11 sums to INT64_MAX - 10). Such a mean is split: each
 * v adds v / count to the accumulator and v % count to the remainder, which moves whole counts
 * into the accumulator to stay within (-count, count). The quotients add up to the mean's
 * integer part or one off it, which is in range, so their running total may wrap on the way
 * (it is kept unsigned) and still ends right. The divisions cost a third more than a sum, so
 * only a mean whose sum could wrap is split: an i64 one, or a run of 2^31 elements or more
 * (below that, values of 32 bits or fewer sum inside int64). */
static void add_to_mean(const accs *a, size_t k, int64_t v)
{
    int64_t n = (int64_t)a->count, r = a->rem[k] + v % n;
    uint64_t q = (uint64_t)a->i[k] + (uint64_t)(v / n);
    if (r >= n) {
        r -= n;
        q++;
    } else if (r <= -n) {
        r += n;
        q--;
    }
    a->i[k] = (int64_t)q;
    a->rem[k] = r;
}

/* The exact mean q + rem / count truncated toward 0, |rem| < count. */
static int64_t mean_of(int64_t q, int64_t rem)
{
    return q > 0 && rem < 0 ? q - 1 : q < 0 && rem > 0 ? q + 1 : q;
}

static void add_element(tl_reduce_op op, bool ints, const accs *a, size_t k,
                        const tl_operand *src, size_t at, size_t index)
{
    if (ints) {
        int64_t v = tl_load_i64(src->dtype, src->buf, at), *m = &a->i[k];
        bool better = op == TL_MAX || op == TL_ARGMAX ? v > *m : v < *m;
        if (op == TL_MEAN && a->split)
            add_to_mean(a, k, v);
        else if (op == TL_SUM || op == TL_MEAN)
            *m = (int64_t)((uint64_t)*m + (uint64_t)v);
        else if (better || (is_arg(op) && a->index[k] == SIZE_MAX)) {
            *m = v;
            a->index[k] = index;
        }
        return;
    }
    double v = tl_load(src->dtype, src->buf, at), m = a->f[k];
    switch (op) {
    case TL_SUM:
    case TL_MEAN: a->f[k] = m + v; break;
    case TL_MAX: a->f[k] = MAX_OF(m, v); break;
    case TL_MIN: a->f[k] = MIN_OF(m, v); break;
    case TL_ARGMAX:
    case TL_ARGMIN:
        /* strictly better only, so the first of equal extremes keeps the index; a NaN is
         * never better (an all-NaN run keeps its first index) */
        if (a->index[k] == SIZE_MAX ||
            (v == v && (op == TL_ARGMAX ? MAX_OF(m, v) : MIN_OF(m, v)) != m)) {
            a->f[k] = v;
            a->index[k] = index;
        }
        break;
    case TL_REDUCE_COUNT: break;
    }
}

/* ------------------------------------------------------------------------------------------ */

static void init_accs(tl_reduce_op op, const accs *a, size_t n)
{
    bool fold = op == TL_SUM || op == TL_MEAN;
    for (size_t k = 0; k < n; k++) {
        a->f[k] = fold ? 0.0 : NAN;
        a->i[k] = fold ? 0 : op == TL_MAX || op == TL_ARGMAX ? INT64_MIN : INT64_MAX;
        a->rem[k] = 0;
        a->index[k] = SIZE_MAX; /* nothing seen yet */
    }
}

static void store_results(tl_reduce_op op, bool ints, const tl_operand *dst, const accs *a,
                          size_t n, size_t count)
{
    for (size_t k = 0; k < n; k++) {
        size_t at = dst->layout->offset + k;
        if (is_arg(op)) /* SIZE_MAX only for an empty dim, which the generic layer refuses */
            tl_store_i64(dst->dtype, dst->buf, at,
                         a->index[k] == SIZE_MAX ? 0 : (int64_t)a->index[k]);
        else if (ints && op == TL_MEAN) /* an empty integer mean is 0 (nothing was added) */
            tl_store_i64(dst->dtype, dst->buf, at,
                         a->split ? mean_of(a->i[k], a->rem[k])
                                  : count ? a->i[k] / (int64_t)count : 0);
        else if (ints)
            tl_store_i64(dst->dtype, dst->buf, at, a->i[k]);
        else
            tl_store(dst->dtype, dst->buf, at, op == TL_MEAN ? a->f[k] / (double)count : a->f[k]);
    }
}

/* candle's max/min/argmax/argmin (ReduceIndex in its cpu backend) start from the first
 * element of the reduced run and move only to a strictly greater (smaller) one: a NaN after
 * a number never wins, but a NaN first is never left (NaN, index 0). The folds above skip
 * every NaN; this puts back the runs whose first element is NaN. acc_layout is the
 * accumulators' view of src's shape (stride 0 on the reduced dims). */
static void keep_leading_nan(const tl_operand *src, const tl_layout *acc_layout,
                             uint32_t reduced, const accs *a)
{
    tl_layout first = *src->layout, acc = *acc_layout;
    for (size_t d = 0; d < first.ndim; d++)
        if (reduced & (1u << d))
            first.shape[d] = acc.shape[d] = 1;
    const tl_layout *ls[2] = {&first, &acc};
    tl_iter it;
    if (!tl_iter_init(&it, first.shape, first.ndim, ls, 2))
        return;
    do {
        for (size_t k = 0; k < it.inner; k++) {
            double v = tl_load(src->dtype, src->buf, it.off[0] + k * it.step[0]);
            if (v != v) {
                a->f[it.off[1] + k * it.step[1]] = NAN;
                a->index[it.off[1] + k * it.step[1]] = 0;
            }
        }
    } while (tl_iter_next(&it));
}

tl_status tl_cpu_reduce(tl_reduce_op op, const tl_operand *dst, const tl_operand *src,
                        uint32_t reduced)
{
    const tl_layout *sl = src->layout;
    bool ints = !tl_dtype_is_float(src->dtype);
    bool typed = (src->dtype == TL_F32 || src->dtype == TL_F64) && !is_arg(op);
    size_t nout = tl_layout_elems(dst->layout), count = 1;
    size_t per_output = sizeof(double) + 2 * sizeof(int64_t) + sizeof(size_t);
    void *block = tl_calloc(nout, per_output);
    if (!block)
        return tl_fail_nomem("reduce", nout * per_output);
    accs a = {block, (int64_t *)((double *)block + nout), NULL, NULL, 0, false};
    a.rem = a.i + nout;
    a.index = (size_t *)(a.rem + nout);
    init_accs(op, &a, nout);

    tl_layout out = {.ndim = sl->ndim}, index = {.ndim = sl->ndim};
    for (size_t d = 0; d < sl->ndim; d++) {
        bool r = reduced & (1u << d);
        out.shape[d] = index.shape[d] = sl->shape[d];
        out.stride[d] = r ? 0 : dst->layout->stride[d];
        index.stride[d] = r ? 1 : 0;
        count *= r ? sl->shape[d] : 1;
    }
    a.count = count;
    a.split = op == TL_MEAN && (src->dtype == TL_I64 || count > (size_t)INT32_MAX);
    const tl_layout *ls[3] = {sl, &out, &index};
    tl_iter it;
    if (tl_iter_init(&it, sl->shape, sl->ndim, ls, is_arg(op) ? 3 : 2)) {
        do {
            if (typed && sum_group(op, &it)) {
                const void *s = tl_cpu_at(src->buf, src->dtype, it.off[0]);
                size_t rs = it.stride[0][it.outer - 1];
                double *acc = &a.f[it.off[1]];
                if (src->dtype == TL_F32) {
                    if (row_sum8_f32(acc, s, rs, it.inner))
                        sum8_spilled_f32(acc, s, rs, it.inner);
                } else if (row_sum8_f64(acc, s, rs, it.inner)) {
                    sum8_spilled_f64(acc, s, rs, it.inner);
                }
                for (size_t r = 1; r < SUM_GROUP; r++) /* the loop steps past the last */
                    tl_iter_next(&it);
                continue;
            }
            if (typed) {
                typed_run(op, src, it.off[0], it.step[0], &a.f[it.off[1]], it.step[1], it.inner);
                continue;
            }
            for (size_t k = 0; k < it.inner; k++) {
                size_t pos = is_arg(op) ? it.off[2] + k * it.step[2] : 0;
                add_element(op, ints, &a, it.off[1] + k * it.step[1], src,
                            it.off[0] + k * it.step[0], pos);
            }
        } while (tl_iter_next(&it));
    }
    if (!ints && op != TL_SUM && op != TL_MEAN)
        keep_leading_nan(src, &out, reduced, &a);
    store_results(op, ints, dst, &a, nout, count);
    free(block);
    return TL_OK;
}
