/*
 * cpu_copy.c - strided copies (with dtype conversion) and fills. A run that is contiguous on
 * both sides with one dtype is a memcpy; other same-dtype runs move fixed-size cells.
 */
#include <string.h>

#include "cpu.h"

void tl_cpu_move_cells(void *dst, size_t dstep, const void *src, size_t sstep, size_t n,
                       size_t size)
{
#define MOVE(T)                                                                                   \
    for (size_t i = 0; i < n; i++)                                                                \
        ((T *)dst)[i * dstep] = ((const T *)src)[i * sstep];                                      \
    break
    switch (size) {
    case 1: MOVE(uint8_t);
    case 2: MOVE(uint16_t);
    case 4: MOVE(uint32_t);
    case 8: MOVE(uint64_t);
    default: break;
    }
#undef MOVE
}

/* f32 <-> f16 runs. On x86-64 with gcc and a CPU with F16C, _Float16 conversions compile to
 * vcvtps2ph/vcvtph2ps; elsewhere the portable converters in dtype.c. Both round to nearest
 * even. (F16C cannot be a target_clones choice, so this dispatches at run time.) */
#ifdef TL_X86_CLONES
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(uint16_t *restrict d,
                                                                const float *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        _Float16 h = (_Float16)s[i];
        memcpy(&d[i], &h, sizeof h);
    }
}

__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(float *restrict d,
                                                                const uint16_t *restrict s,
                                                                size_t n)
{
    for (size_t i = 0; i < n; i++) {
        _Float16 h;
        memcpy(&h, &s[i], sizeof h);
        d[i] = (float)h;
    }
}
#endif

static void f32_to_f16_run(uint16_t *restrict d, const float *restrict s, size_t n)
{
#ifdef TL_X86_CLONES
    if (__builtin_cpu_supports("f16c")) {
        f32_to_f16_f16c(d, s, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        d[i] = tl_f32_to_f16(s[i]);
}

static void f16_to_f32_run(float *restrict d, const uint16_t *restrict s, size_t n)
{
#ifdef TL_X86_CLONES
    if (__builtin_cpu_supports("f16c")) {
        f16_to_f32_f16c(d, s, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        d[i] = tl_f16_to_f32(s[i]);
}

/* A contiguous run between f32 and f16/bf16, converted directly (one rounding, no double
 * in between); false for other pairs. */
static bool convert_half_run(void *d, tl_dtype dd, const void *s, tl_dtype sd, size_t n)
{
    uint16_t *h = d;
    const uint16_t *hs = s;
    float *f = d;
    const float *fs = s;
    if (sd == TL_F32 && dd == TL_F16)
        f32_to_f16_run(h, fs, n);
    else if (sd == TL_F16 && dd == TL_F32)
        f16_to_f32_run(f, hs, n);
    else if (sd == TL_F32 && dd == TL_BF16)
        for (size_t i = 0; i < n; i++)
            h[i] = tl_f32_to_bf16(fs[i]);
    else if (sd == TL_BF16 && dd == TL_F32)
        for (size_t i = 0; i < n; i++)
            f[i] = tl_bf16_to_f32(hs[i]);
    else
        return false;
    return true;
}

tl_status tl_cpu_copy(const tl_operand *dst, const tl_operand *src)
{
    const tl_layout *ls[2] = {dst->layout, src->layout};
    size_t size = tl_dtype_size(dst->dtype);
    tl_iter it;
    if (!tl_iter_init(&it, dst->layout->shape, dst->layout->ndim, ls, 2))
        return TL_OK;
    do {
        void *d = tl_cpu_at(dst->buf, dst->dtype, it.off[0]);
        const void *s = tl_cpu_at(src->buf, src->dtype, it.off[1]);
        bool unit = it.step[0] == 1 && it.step[1] == 1;
        if (dst->dtype != src->dtype) {
            if (unit && convert_half_run(d, dst->dtype, s, src->dtype, it.inner))
                continue;
            else if (!tl_dtype_is_float(src->dtype)) /* exact, one rounding into a float */
                for (size_t i = 0; i < it.inner; i++)
                    tl_store_i64(dst->dtype, d, i * it.step[0],
                                 tl_load_i64(src->dtype, s, i * it.step[1]));
            else
                for (size_t i = 0; i < it.inner; i++)
                    tl_store(dst->dtype, d, i * it.step[0],
                             tl_load(src->dtype, s, i * it.step[1]));
        } else if (unit) {
            memcpy(d, s, it.inner * size);
        } else {
            tl_cpu_move_cells(d, it.step[0], s, it.step[1], it.inner, size);
        }
    } while (tl_iter_next(&it));
    return TL_OK;
}

tl_status tl_cpu_fill(const tl_operand *dst, double value)
{
    _Alignas(8) unsigned char cell[8];
    tl_store(dst->dtype, cell, 0, value);
    const tl_layout *ls[1] = {dst->layout};
    tl_iter it;
    if (!tl_iter_init(&it, dst->layout->shape, dst->layout->ndim, ls, 1))
        return TL_OK;
    do {
        /* a source step of 0 repeats the one converted cell */
        tl_cpu_move_cells(tl_cpu_at(dst->buf, dst->dtype, it.off[0]), it.step[0], cell, 0, it.inner,
                   tl_dtype_size(dst->dtype));
    } while (tl_iter_next(&it));
    return TL_OK;
}
