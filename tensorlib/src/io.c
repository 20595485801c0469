/*
 * io.c - what the file formats share: mapping a file to read it, writing one from pieces,
 * little-endian fields, the dtype of a tensor's bytes, and named-tensor lists.
 */
#define _DEFAULT_SOURCE /* MAP_* */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the file formats are little-endian and read in place");

tl_status tl_io_map(const char *op, const char *path, tl_io_map_t *m)
{
    m->data = NULL;
    m->size = 0;
    if (!path)
        return tl_fail(TL_ERR_ARG, "%s: path is NULL", op);
    /* O_NONBLOCK: a FIFO opens at once (to be refused below) instead of waiting for a writer;
     * a regular file ignores it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tl_fail(TL_ERR_ARG, "%s: cannot open %s: %s", op, path, strerror(errno));
    struct stat st;
    tl_status s = TL_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        s = tl_fail(TL_ERR_ARG, "%s: %s is not a regular file", op, path);
    else if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            s = tl_fail(TL_ERR_NOMEM, "%s: cannot map %s: %s", op, path, strerror(errno));
        else
            m->data = p, m->size = (size_t)st.st_size;
    }
    close(fd);
    return s;
}

void tl_io_unmap(tl_io_map_t *m)
{
    if (m->data)
        munmap((void *)m->data, m->size);
    m->data = NULL;
}

tl_status tl_io_write(const char *op, const char *path, const tl_io_piece *pieces, size_t n)
{
    if (!path)
        return tl_fail(TL_ERR_ARG, "%s: path is NULL", op);
    FILE *f = fopen(path, "wb");
    if (!f)
        return tl_fail(TL_ERR_ARG, "%s: cannot create %s: %s", op, path, strerror(errno));
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = pieces[i].size == 0 || fwrite(pieces[i].data, 1, pieces[i].size, f) == pieces[i].size;
    int err = errno;
    ok = fclose(f) == 0 && ok;
    if (!ok)
        return tl_fail(TL_ERR_ARG, "%s: cannot write %s: %s", op, path, strerror(err ? err : EIO));
    return TL_OK;
}

uint64_t tl_io_le(const unsigned char *p, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = bytes; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

void tl_io_put_le(unsigned char *p, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

tl_status tl_io_tensor_bytes(const char *op, const tl_tensor *t, void **bytes, size_t *size)
{
    *bytes = NULL;
    if (tl_check_tensor(op, t) != TL_OK)
        return TL_ERR_ARG;
    if (tl_shape_check(op, t->layout.shape, t->layout.ndim, tl_dtype_size(t->dtype), size))
        return tl_last_status();
    *bytes = tl_malloc(*size);
    if (!*bytes)
        return tl_fail_nomem(op, *size);
    tl_status st = tl_to_vec(t, *bytes, *size);
    if (st != TL_OK) {
        free(*bytes);
        *bytes = NULL;
        st = tl_fail_within(op);
    }
    return st;
}

tl_tensor *tl_io_tensor(const char *op, const void *data, size_t size, const size_t *shape,
                        size_t ndim, tl_dtype dtype, tl_device device)
{
    size_t need;
    if (tl_shape_check(op, shape, ndim, tl_dtype_size(dtype), &need) != TL_OK)
        return NULL;
    if (need != size)
        return tl_fail(TL_ERR_SHAPE, "%s: %zu data bytes for a tensor of %zu", op, size, need),
               NULL;
    if (size == 0)
        return tl_zeros(shape, ndim, dtype, device);
    return tl_from_data(data, shape, ndim, dtype, device);
}

void tl_named_free(tl_named *list, size_t n)
{
    for (size_t i = 0; list && i < n; i++) {
        free(list[i].name);
        tl_release(list[i].tensor);
    }
    free(list);
}

tl_status tl_io_named_add(const char *op, tl_named **list, size_t *n, size_t *cap,
                          const char *name, size_t name_len, tl_tensor *t)
{
    if (*n == *cap) {
        size_t cap2 = *cap ? 2 * *cap : 8;
        tl_named *grown = tl_malloc(cap2 * sizeof *grown);
        if (!grown) {
            tl_release(t);
            return tl_fail_nomem(op, cap2 * sizeof *grown);
        }
        if (*n)
            memcpy(grown, *list, *n * sizeof *grown);
        free(*list);
        *list = grown;
        *cap = cap2;
    }
    char *copy = tl_malloc(name_len + 1);
    if (!copy) {
        tl_release(t);
        return tl_fail_nomem(op, name_len + 1);
    }
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    (*list)[(*n)++] = (tl_named){copy, t};
    return TL_OK;
}

tl_status tl_io_check_named(const char *op, const tl_named *list, size_t n)
{
    if (n && !list)
        return tl_fail(TL_ERR_ARG, "%s: the list is NULL", op);
    for (size_t i = 0; i < n; i++) {
        if (!list[i].name || !list[i].name[0] || tl_check_tensor(op, list[i].tensor) != TL_OK)
            return tl_fail(TL_ERR_ARG, "%s: entry %zu has no name or no tensor", op, i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(list[i].name, list[j].name) == 0)
                return tl_fail(TL_ERR_ARG, "%s: the name %s appears twice", op, list[i].name);
    }
    return TL_OK;
}
