/*
 * gc_roots.c - the tracer seen by a conservative garbage collector (harm-gc.1). Boehm's libgc
 * (Guile, w3m, ECL, Gauche...) takes every loaded object's writable segments for roots and
 * reads them at each collection: the tracer's 16 MB of tables too, which cost each collection
 * milliseconds and kept collected objects holding locks allocated through the lock addresses
 * recorded there. The tracer tells libgc, through GC_exclude_static_roots, that its writable
 * segments hold no reference to the program's memory. This program stands in for libgc: it
 * defines that function (exported: -rdynamic) and records the ranges it is given, then
 * checks them against the writable segments of the object whose pthread_mutex_lock the
 * program calls (the tracer, when preloaded): every one of them excluded, nothing else.
 *   gc_roots excluded   prints "tracer's writable segments excluded: yes" (natively:
 *                       "no tracer"), then "done"
 *   gc_roots scan       what LeakSanitizer reads (harm-gc.2): 100 malloc'd mutexes, each
 *                       locked and unlocked, then the tracer's writable segments read a word
 *                       at a time as a scanner does: no word points into any of them (the
 *                       homes kept their addresses, so LeakSanitizer reported no leak of a
 *                       block holding a lock); prints "words pointing at the locks: 0"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANGES 16
static struct {
    uintptr_t lo, hi;
} excluded[MAX_RANGES];
static int nexcluded, overflow;

/* libgc's declaration: a section of static memory that holds no pointer to collected memory. */
void GC_exclude_static_roots(void *lo, void *hi);
void GC_exclude_static_roots(void *lo, void *hi)
{
    if (nexcluded == MAX_RANGES) {
        overflow = 1;
        return;
    }
    excluded[nexcluded].lo = (uintptr_t)lo;
    excluded[nexcluded].hi = (uintptr_t)hi;
    nexcluded++;
}

typedef struct check {
    uintptr_t base;
    int found, segments, matched;
} check;

static int segments_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    check *c = arg;
    (void)size;
    if (info->dlpi_addr != c->base)
        return 0;
    c->found = 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        c->segments++;
        for (int k = 0; k < nexcluded; k++)
            if (excluded[k].lo == lo && excluded[k].hi == lo + ph->p_memsz)
                c->matched++;
    }
    return 1;
}

#define NLOCKS 100
static pthread_mutex_t *locks[NLOCKS];

typedef struct scan {
    uintptr_t base;
    int found;
    long pointing;
} scan;

static int scan_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan *sc = arg;
    (void)size;
    if (info->dlpi_addr != sc->base)
        return 0;
    sc->found = 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        const uintptr_t *w = (const uintptr_t *)(info->dlpi_addr + ph->p_vaddr);
        const uintptr_t *end = (const uintptr_t *)((const char *)w + ph->p_memsz);
        for (; w < end; w++)
            for (int k = 0; k < NLOCKS; k++)
                if (*w >= (uintptr_t)locks[k] && *w < (uintptr_t)(locks[k] + 1))
                    sc->pointing++;
    }
    return 1;
}

/* The tracer's static memory, read as LeakSanitizer reads it. */
static int scan_tracer(uintptr_t base)
{
    for (int k = 0; k < NLOCKS; k++) {
        locks[k] = malloc(sizeof *locks[k]);
        if (!locks[k] || pthread_mutex_init(locks[k], NULL) || pthread_mutex_lock(locks[k]) ||
            pthread_mutex_unlock(locks[k]))
            return 1;
    }
    scan sc = {base, 0, 0};
    dl_iterate_phdr(scan_segments, &sc);
    printf("words pointing at the locks: %ld\ndone\n", sc.found ? sc.pointing : -1L);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "excluded") && strcmp(argv[1], "scan"))) {
        fprintf(stderr, "usage: gc_roots excluded|scan\n");
        return 2;
    }
    Dl_info lock_at, libc_at;
    if (!dladdr(dlsym(RTLD_DEFAULT, "pthread_mutex_lock"), &lock_at) ||
        !dladdr(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"), &libc_at))
        return 1;
    if (lock_at.dli_fbase != libc_at.dli_fbase && !strcmp(argv[1], "scan"))
        return scan_tracer((uintptr_t)lock_at.dli_fbase);
    if (lock_at.dli_fbase == libc_at.dli_fbase) {
        printf("no tracer: %d ranges excluded\ndone\n", nexcluded);
        return 0;
    }
    check c = {(uintptr_t)lock_at.dli_fbase, 0, 0, 0};
    dl_iterate_phdr(segments_of, &c);
    printf("tracer's writable segments excluded: %s\ndone\n",
           c.found && c.segments && !overflow && c.matched == c.segments &&
                   nexcluded == c.segments
               ? "yes"
               : "no");
    return 0;
}
