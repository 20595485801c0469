/*
 * cpu_backend.c - the cpu device: buffers are host memory from malloc, and the backend table
 * that the generic layer dispatches through.
 */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"
#include "cpu_heavy.h"

/* Buffers of two huge pages (4 MiB) and more are 2 MiB aligned and asked for transparent huge
 * pages, as numpy does: every op returns fresh storage, and with 4 KiB pages the page faults
 * of a 64 MiB result cost more than the elementwise op that fills it. */
#define CPU_HUGE_PAGE ((size_t)2 << 20)

static void *cpu_alloc(size_t nbytes)
{
    if (nbytes < 2 * CPU_HUGE_PAGE)
        return malloc(nbytes ? nbytes : 1); /* a zero-size storage still needs a distinct buffer */
    void *buf;
    if (posix_memalign(&buf, CPU_HUGE_PAGE, nbytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(buf, nbytes & ~(CPU_HUGE_PAGE - 1), MADV_HUGEPAGE); /* only a hint: ignore failure */
#endif
    return buf;
}

static void cpu_free(void *buf)
{
    free(buf);
}

static tl_status cpu_write(void *buf, size_t offset, const void *src, size_t nbytes)
{
    memcpy((char *)buf + offset, src, nbytes);
    return TL_OK;
}

static tl_status cpu_read(const void *buf, size_t offset, void *dst, size_t nbytes)
{
    memcpy(dst, (const char *)buf + offset, nbytes);
    return TL_OK;
}

const tl_backend_i tl_cpu_backend = {
    .name = "cpu",
    .strided_dst = true,
    .available = NULL,            /* always */
    .alloc = cpu_alloc,
    .free = cpu_free,
    .write = cpu_write,
    .read = cpu_read,
    .copy = tl_cpu_copy,
    .fill = tl_cpu_fill,
    .unary = tl_cpu_unary,
    .scalar = tl_cpu_scalar,
    .binary = tl_cpu_binary,
    .pow = tl_cpu_pow,
    .cmp = tl_cpu_cmp,
    .where = tl_cpu_where,
    .reduce = tl_cpu_reduce,
    .matmul = tl_cpu_matmul,
    .conv1d = tl_cpu_conv1d,
    .conv2d = tl_cpu_conv2d,
    .conv_transpose = tl_cpu_conv_transpose,
    .pool2d = tl_cpu_pool2d,
    .index_select = tl_cpu_index_select,
    .gather = tl_cpu_gather,
    .scatter = tl_cpu_scatter,
    .index_add = tl_cpu_index_add,
    .softmax = tl_cpu_softmax,
    .arg_sort = tl_cpu_arg_sort,
    .scan = tl_cpu_scan,
};
