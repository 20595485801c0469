/*
 * unit_wrappers.c - lock wrappers by name (wrappers.c) and function names from ELF symbol
 * tables (platform_elfsym.c), without the interposed entry points.
 *   unit_wrappers names    symbol names on stdin, one a line: the name patterns are compared
 *                          with, or "-" where the reader does not follow the form
 *                          (wrappers_names.py compares them with c++filt)
 *   unit_wrappers decide   which functions are wrappers: this program's own (named as
 *                          LOCKTRACE_WRAPPERS would), libstdc++'s and GLib's when loadable,
 *                          and code outside any file; and that deciding, reading each
 *                          object's symbols the first time included, never calls malloc (the
 *                          first walk through a site may be inside the program's malloc)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "lt_internal.h"

static int failures;

/* malloc, counted while `counting`: this program's definitions serve the tracer's code (linked
 * in) and libc alike. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static int counting, allocations;

void *malloc(size_t size)
{
    allocations += counting;
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    allocations += counting;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    allocations += counting;
    return __libc_realloc(p, size);
}

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

__attribute__((noinline)) void lock_cache(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void unlock_cache(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void fill_cache(void)
{
    __asm__ volatile("" ::: "memory");
}

static int names(void)
{
    char line[4096], name[256];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        puts(lt_wrapper_name(line, name, sizeof name) ? name : "-");
    }
    return 0;
}

/* A return address into fn: one byte past its entry. */
static uintptr_t into(const void *fn)
{
    return (uintptr_t)fn + 1;
}

/* Whether the function at fn is a wrapper, counting allocations meanwhile. */
static int wrapper_at(const void *fn)
{
    counting = 1;
    int w = lt_wrapper_at(into(fn));
    counting = 0;
    return w;
}

static void decide_in(const char *lib, const char *const *yes, const char *const *no)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL), *fn[16];
    size_t n = 0;
    if (!h) {
        printf("skipped %s: not loadable\n", lib);
        return;
    }
    for (const char *const *s = yes; *s; s++) /* resolved before counting: dlsym allocates */
        fn[n++] = dlsym(h, *s);
    for (const char *const *s = no; *s; s++)
        fn[n++] = dlsym(h, *s);
    n = 0;
    for (; *yes; yes++, n++)
        CHECK(fn[n] && wrapper_at(fn[n]) == 1, "%s in %s is a wrapper", *yes, lib);
    for (; *no; no++, n++)
        CHECK(fn[n] && wrapper_at(fn[n]) == 0, "%s in %s is no wrapper", *no, lib);
    printf("checked %s\n", lib);
}

static int decide(void)
{
    static const char *const std_yes[] = {
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE", /* condition_variable::wait */
        "_ZNSt18condition_variable10notify_oneEv", "_ZNSt10_Sp_lockerC1EPKv",
        "_ZNSt6thread4joinEv", /* std::thread::join, a wrapper since deadlock-9.9 */ NULL};
    static const char *const std_no[] = {"_ZNSt6thread6detachEv", "_ZSt9terminatev", NULL};
    static const char *const glib_yes[] = {"g_rw_lock_writer_lock", "g_rw_lock_reader_lock",
                                           "g_rec_mutex_lock", "g_mutex_lock", NULL};
    static const char *const glib_no[] = {"g_strdup", "g_thread_new", NULL};
    lt_wrappers_load("lock_cache, unlock_cache(struct cache *)");
    CHECK(wrapper_at((const void *)lock_cache) == 1, "lock_cache is listed");
    CHECK(wrapper_at((const void *)unlock_cache) == 1, "unlock_cache(...) is listed");
    CHECK(wrapper_at((const void *)fill_cache) == 0, "fill_cache is not listed");
    CHECK(wrapper_at((const void *)decide) == 0, "decide (a static function) is not");
    void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED && wrapper_at(anon) == 0, "code outside files: no wrapper");
    decide_in("libstdc++.so.6", std_yes, std_no);
    decide_in("libglib-2.0.so.0", glib_yes, glib_no);
    CHECK(allocations == 0, "deciding called malloc %d times", allocations);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "names") == 0)
        return names();
    if (argc == 2 && strcmp(argv[1], "decide") == 0) {
        decide();
        printf(failures ? "%d failed\n" : "ok\n", failures);
        return failures != 0;
    }
    fprintf(stderr, "usage: unit_wrappers names|decide\n");
    return 2;
}
