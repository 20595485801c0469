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
        if (dst->dtype != src->dtype) {
            for (size_t i = 0; i < it.inner; i++)
                tl_store(dst->dtype, d, i * it.step[0], tl_load(src->dtype, s, i * it.step[1]));
        } else if (it.step[0] == 1 && it.step[1] == 1) {
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
