/*
 * elf_probe.h - what the launcher must know about a program before it runs it under the
 * tracer: whether the dynamic linker will load a preload into it at all, and which sanitizer
 * runtime it carries (ASan must come first in the preload list; ThreadSanitizer and the
 * tracer cannot share pthread's locks).
 */
#ifndef LT_ELF_PROBE_H
#define LT_ELF_PROBE_H

typedef enum { LT_ELF_NOT_ELF, LT_ELF_STATIC, LT_ELF_DYNAMIC } lt_elf_linkage;

typedef struct lt_elf_info {
    lt_elf_linkage linkage;
    int setuid;            /* set-user/group-ID to someone else: a secure exec, where the
                            * loader ignores a preload path */
    int asan, tsan;        /* linked with that sanitizer's runtime (shared or static) */
    char asan_needed[64];  /* the DT_NEEDED name of a shared ASan runtime, "" when static */
    char interp[128];      /* its PT_INTERP, the dynamic loader the kernel runs it with */
} lt_elf_info;

/* Probes the file at path (a 64-bit ELF of this machine's byte order; anything else, such
 * as a script, is LT_ELF_NOT_ELF). 0, or -1 when the file cannot be read. */
int lt_elf_probe(const char *path, lt_elf_info *out);

#endif
