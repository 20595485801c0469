/*
 * io.h - helpers the file formats share (io.c): npy/npz in io_npy.c, safetensors in
 * io_safetensors.c.
 */
#ifndef TL_IO_H
#define TL_IO_H

#include "tl_internal.h"

/* A file mapped read-only (data NULL for an empty file). */
typedef struct tl_io_map_t {
    const unsigned char *data;
    size_t size;
} tl_io_map_t;

tl_status tl_io_map(const char *op, const char *path, tl_io_map_t *m);
void tl_io_unmap(tl_io_map_t *m);

/* Writes the pieces, in order, to a new file at path. */
typedef struct tl_io_piece {
    const void *data;
    size_t size;
} tl_io_piece;
tl_status tl_io_write(const char *op, const char *path, const tl_io_piece *pieces, size_t n);

/* Little-endian unsigned fields of 1 to 8 bytes. */
uint64_t tl_io_le(const unsigned char *p, size_t bytes);
void tl_io_put_le(unsigned char *p, uint64_t v, size_t bytes);

/* t's elements in row-major order, little-endian, in a new buffer (free it). */
tl_status tl_io_tensor_bytes(const char *op, const tl_tensor *t, void **bytes, size_t *size);
/* A tensor from size bytes of row-major data, which must be exactly what shape needs. */
tl_tensor *tl_io_tensor(const char *op, const void *data, size_t size, const size_t *shape,
                        size_t ndim, tl_dtype dtype, tl_device device);

/* Appends (a copy of name[0..name_len), t) to a growing list; takes t even on failure. */
tl_status tl_io_named_add(const char *op, tl_named **list, size_t *n, size_t *cap,
                          const char *name, size_t name_len, tl_tensor *t);
/* Every entry has a nonempty name, a tensor, and a name of its own. */
tl_status tl_io_check_named(const char *op, const tl_named *list, size_t n);

#endif
