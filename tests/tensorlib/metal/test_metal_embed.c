/*
 * test_metal_embed.c - the kernel source compiled into the library is kernels.h followed by
 * kernels.metal, byte for byte, and it instantiates every kernel the selector can ask for
 * (a missing host_name would otherwise surface only on a Mac, at pipeline creation).
 *
 * usage: test_metal_embed KERNELS_H KERNELS_METAL
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel_select.h"
#include "kernels_source.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

static void check_name(const char *name, void *ctx)
{
    (void)ctx;
    char needle[TLM_KERNEL_NAME_MAX + 16];
    snprintf(needle, sizeof needle, "host_name(\"%s\")", name);
    CHECKF(strstr(tl_metal_kernels_source, needle) != NULL, "kernels.metal lacks %s", needle);
}

int main(int argc, char **argv)
{
    size_t hlen = 0, mlen = 0;
    char *h = argc == 3 ? read_file(argv[1], &hlen) : NULL;
    char *m = argc == 3 ? read_file(argv[2], &mlen) : NULL;
    if (!CHECKF(h && m, "usage: %s KERNELS_H KERNELS_METAL (files readable)", argv[0]))
        return check_summary();
    CHECK(strlen(tl_metal_kernels_source) == tl_metal_kernels_source_len);
    if (CHECK(tl_metal_kernels_source_len == hlen + mlen)) {
        CHECK(memcmp(tl_metal_kernels_source, h, hlen) == 0);
        CHECK(memcmp(tl_metal_kernels_source + hlen, m, mlen) == 0);
    }
    tlm_for_each_kernel_name(check_name, NULL);
    free(h);
    free(m);
    return check_summary();
}
