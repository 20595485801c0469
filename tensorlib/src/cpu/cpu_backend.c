/*
 * cpu_backend.c - the cpu device: buffers are host memory from malloc, and the backend table
 * that the generic layer dispatches through.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static void *cpu_alloc(size_t nbytes)
{
    return malloc(nbytes ? nbytes : 1); /* a zero-size storage still needs a distinct buffer */
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
    .cmp = tl_cpu_cmp,
    .where = tl_cpu_where,
    .reduce = tl_cpu_reduce,
    .matmul = NULL,               /* ops engineer */
    .conv1d = NULL,               /* ops engineer */
    .conv2d = NULL,               /* ops engineer */
    .index_select = NULL,         /* ops engineer */
    .gather = NULL,               /* ops engineer */
    .scatter = NULL,              /* ops engineer */
    .index_add = NULL,            /* ops engineer */
    .softmax = NULL,              /* ops engineer */
};
