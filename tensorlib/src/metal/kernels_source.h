/*
 * kernels_source.h - the Metal kernels as embedded at build time: kernels.h followed by
 * kernels.metal, byte for byte (embed_msl.py), compiled by the backend on first use.
 */
#ifndef TL_METAL_KERNELS_SOURCE_H
#define TL_METAL_KERNELS_SOURCE_H

#include <stddef.h>

extern const char tl_metal_kernels_source[];   /* NUL-terminated */
extern const size_t tl_metal_kernels_source_len; /* without the NUL */

#endif
