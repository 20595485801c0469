/*
 * platform_elfsym.c - lt_platform_function_safe for Linux: the symbol name of the function
 * that contains a code address, read from the ELF symbol table of the file it was loaded from.
 *
 * callsite.c asks the first time it walks through a lock call site, which may be inside the
 * program's own malloc (one that takes a pthread mutex) or in a signal handler. So nothing
 * here allocates or locks: the object comes from /proc/self/maps (lt_platform_module_safe),
 * its file is read with pread into mapped memory, and its function symbols are sorted once
 * (heapsort) for a binary search. The table of objects is lock-free: the thread that
 * claims an entry builds it; a thread asking meanwhile is told "not known yet" and asks again
 * at a later call (a fork child skips the entries its parent's threads were building). Past
 * OBJECTS objects, names are unknown. `.symtab` is preferred (a local or hidden function, such
 * as std::mutex::lock in a program built at -O0, is only there); for a stripped file the debug
 * file named by its build-id under /usr/lib/debug, else the one its `.gnu_debuglink` names
 * (found where libdw's local lookup finds it, holding the file's build-id), else `.dynsym`.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"

#define OBJECTS 512
#if UINTPTR_MAX > 0xffffffffu
#define ELF_CLASS ELFCLASS64
#define SYM_TYPE ELF64_ST_TYPE
#else
#define ELF_CLASS ELFCLASS32
#define SYM_TYPE ELF32_ST_TYPE
#endif

enum { FREE, BUILDING, READY, FAILED };

typedef struct fn_sym {
    uintptr_t start, size;
    uint32_t name; /* offset in the string table */
} fn_sym;

/* One loaded object: its mapped range [lo, hi) and its functions, sorted by address. */
typedef struct object {
    _Atomic int state;
    _Atomic pid_t builder;    /* the process that claimed it: a fork child finds BUILDING
                                 entries of its parent's threads, which will never finish */
    _Atomic uintptr_t lo, hi; /* set by the builder before READY/FAILED; 0 while unknown */
    uintptr_t bias;           /* run-time address = bias + st_value */
    const fn_sym *syms;
    size_t nsyms;
    const char *names; /* the string table, in mapped memory kept for good */
    size_t names_size;
} object;

static object objects[OBJECTS];

/* An ELF file open for reading: its header and section headers (in mapped memory). Files are
 * read, never mapped: a mapping would show in /proc/self/maps as a second piece of the
 * object, which libdw's module list (report time) and the thread dump read. */
typedef struct elf_file {
    int fd;
    size_t size;
    ElfW(Ehdr) eh;
    ElfW(Shdr) *sh;
    size_t nsh;
} elf_file;

static int read_at(int fd, void *buf, size_t n, size_t off)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void close_elf(elf_file *f)
{
    if (f->sh)
        lt_platform_unmap(f->sh, f->nsh * sizeof *f->sh);
    close(f->fd);
}

static int open_elf(const char *path, elf_file *f)
{
    struct stat st;
    const ElfW(Ehdr) *eh = &f->eh;
    *f = (elf_file){.fd = open(path, O_RDONLY | O_CLOEXEC)};
    if (f->fd < 0)
        return 0;
    if (fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode) &&
        read_at(f->fd, &f->eh, sizeof f->eh, 0) == 0 && (f->size = (size_t)st.st_size) &&
        memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELF_CLASS &&
        eh->e_shentsize == sizeof(ElfW(Shdr)) && eh->e_shnum && eh->e_shoff < f->size &&
        eh->e_shnum <= (f->size - eh->e_shoff) / sizeof(ElfW(Shdr)) &&
        (f->sh = lt_platform_map(eh->e_shnum * sizeof *f->sh)) != NULL) {
        f->nsh = eh->e_shnum;
        if (read_at(f->fd, f->sh, f->nsh * sizeof *f->sh, eh->e_shoff) == 0)
            return 1;
    }
    close_elf(f);
    return 0;
}

/* The contents of section s in mapped memory; NULL when unreadable. */
static void *read_section(const elf_file *f, const ElfW(Shdr) *s)
{
    void *p = s->sh_size ? lt_platform_map(s->sh_size) : NULL;
    if (p && read_at(f->fd, p, s->sh_size, s->sh_offset) != 0) {
        lt_platform_unmap(p, s->sh_size);
        return NULL;
    }
    return p;
}

/* The file's first section of type `type` whose contents and string table lie in the file. */
static const ElfW(Shdr) *symbol_section(const elf_file *f, unsigned type, const ElfW(Shdr) **str)
{
    const ElfW(Shdr) *sh = f->sh;
    for (size_t i = 0; i < f->nsh; i++) {
        if (sh[i].sh_type != type || sh[i].sh_link >= f->nsh ||
            sh[i].sh_entsize != sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *s = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > f->size || sh[i].sh_size > f->size - sh[i].sh_offset ||
            s->sh_offset > f->size || s->sh_size > f->size - s->sh_offset)
            return NULL;
        *str = s;
        return &sh[i];
    }
    return NULL;
}

/* Run-time address minus link-time address: the object's first mapping holds its first
 * PT_LOAD segment (page-aligned); an ET_EXEC object is loaded where it was linked. */
static uintptr_t load_bias(const elf_file *f, uintptr_t lo)
{
    const ElfW(Ehdr) *eh = &f->eh;
    ElfW(Phdr) ph;
    if (eh->e_type == ET_EXEC)
        return 0;
    for (size_t i = 0; eh->e_phentsize == sizeof ph && i < eh->e_phnum; i++) {
        if (read_at(f->fd, &ph, sizeof ph, eh->e_phoff + i * sizeof ph) != 0)
            break;
        if (ph.p_type == PT_LOAD)
            return lo - (ph.p_vaddr & ~(uintptr_t)(getpagesize() - 1));
    }
    return lo;
}

static void sift_down(fn_sym *a, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && a[child + 1].start > a[child].start)
            child++;
        if (a[root].start >= a[child].start)
            return;
        fn_sym t = a[root];
        a[root] = a[child];
        a[child] = t;
    }
}

static void sort_syms(fn_sym *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        fn_sym t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

/* The defined functions of section sym (string table str) into o, sorted. */
static int index_functions(object *o, const elf_file *f, const ElfW(Shdr) *sym,
                           const ElfW(Shdr) *str)
{
    const ElfW(Sym) *s = read_section(f, sym);
    char *names = s ? read_section(f, str) : NULL;
    size_t n = sym->sh_size / sizeof *s, count = 0;
    for (int pass = 0; names && pass < 2; pass++) {
        fn_sym *out = pass ? (fn_sym *)o->syms : NULL;
        for (size_t i = 0, k = 0; i < n; i++) {
            int type = SYM_TYPE(s[i].st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s[i].st_shndx == SHN_UNDEF ||
                s[i].st_value == 0 || s[i].st_name >= str->sh_size)
                continue;
            if (out)
                out[k] = (fn_sym){o->bias + s[i].st_value, s[i].st_size, s[i].st_name};
            k++;
            count = k;
        }
        if (!pass && (count == 0 || !(o->syms = lt_platform_map(count * sizeof(fn_sym)))))
            count = 0;
        if (count == 0)
            break;
    }
    if (s)
        lt_platform_unmap((void *)s, sym->sh_size);
    if (count == 0) {
        if (names)
            lt_platform_unmap(names, str->sh_size);
        return 0;
    }
    sort_syms((fn_sym *)o->syms, count);
    o->nsyms = count;
    o->names = names;
    o->names_size = str->sh_size;
    return 1;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug for build-id `id` (hex). */
static int debug_file(const char *id, elf_file *f)
{
    char path[256];
    size_t n = strlen(id);
    if (n < 4 || n > 128)
        return 0;
    size_t at = lt_fmt_str(path, sizeof path, 0, "/usr/lib/debug/.build-id/");
    path[at++] = id[0];
    path[at++] = id[1];
    path[at++] = '/';
    at = lt_fmt_str(path, sizeof path, at, id + 2);
    lt_fmt_str(path, sizeof path, at, ".debug");
    return open_elf(path, f);
}

int lt_platform_debuglink_path(char *path, size_t size, const char *file, const char *link,
                               size_t i)
{
    static const char *const place[LT_DEBUGLINK_PLACES][2] = {
        {"", "/"}, {"", "/.debug/"}, {"/usr/lib/debug", "/"}};
    const char *slash = strrchr(file, '/');
    if (i >= LT_DEBUGLINK_PLACES || !slash || !link[0] || strchr(link, '/'))
        return 0;
    size_t dir = (size_t)(slash - file);
    size_t at = lt_fmt_str(path, size, 0, place[i][0]);
    if (at + dir >= size)
        return 0;
    memcpy(path + at, file, dir);
    at = lt_fmt_str(path, size, at + dir, place[i][1]);
    at = lt_fmt_str(path, size, at, link);
    return at + 1 < size && strcmp(path, file) != 0;
}

/* Whether a note section of f holds the GNU build-id `id` (hex, as lt_module has it); any file
 * does for an object without one (id ""), as for libdw's lookup. */
static int has_build_id(const elf_file *f, const char *id)
{
    if (!id[0])
        return 1;
    for (size_t i = 0; i < f->nsh; i++) {
        const ElfW(Shdr) *s = &f->sh[i];
        union {
            ElfW(Nhdr) n;
            unsigned char b[256];
        } note;
        if (s->sh_type != SHT_NOTE || s->sh_size < sizeof note.n || s->sh_size > sizeof note ||
            s->sh_offset > f->size || read_at(f->fd, note.b, s->sh_size, s->sh_offset) != 0)
            continue;
        const unsigned char *desc = note.b + sizeof note.n + ((note.n.n_namesz + 3) & ~3u);
        if (note.n.n_type != NT_GNU_BUILD_ID || note.n.n_namesz != 4 ||
            memcmp(note.b + sizeof note.n, "GNU", 4) != 0 ||
            note.n.n_descsz > s->sh_size - (size_t)(desc - note.b) ||
            strlen(id) != 2 * note.n.n_descsz)
            continue;
        size_t k = 0;
        while (k < note.n.n_descsz && id[2 * k] == "0123456789abcdef"[desc[k] >> 4] &&
               id[2 * k + 1] == "0123456789abcdef"[desc[k] & 15])
            k++;
        return k == note.n.n_descsz;
    }
    return 0;
}

/* The debug file that f's .gnu_debuglink section names, opened into dbg: a stripped program
 * whose debug file sits beside it (objcopy --add-gnu-debuglink) has its function names there
 * only. Out of line: its buffers are on the stack only on this rare path. */
static __attribute__((noinline)) int debuglink_file(const elf_file *f, const lt_module *m,
                                                    elf_file *dbg)
{
    const ElfW(Shdr) *names = f->eh.e_shstrndx < f->nsh ? &f->sh[f->eh.e_shstrndx] : NULL;
    char *strtab = names && names->sh_offset <= f->size &&
                           names->sh_size <= f->size - names->sh_offset
                       ? read_section(f, names)
                       : NULL;
    char link[256] = "", path[1024];
    for (size_t i = 0; strtab && i < f->nsh; i++) {
        const ElfW(Shdr) *s = &f->sh[i];
        if (s->sh_name < names->sh_size && s->sh_size > 4 &&
            strncmp(strtab + s->sh_name, ".gnu_debuglink", names->sh_size - s->sh_name) == 0) {
            size_t n = s->sh_size < sizeof link ? s->sh_size : sizeof link;
            if (s->sh_offset > f->size || read_at(f->fd, link, n, s->sh_offset) != 0)
                link[0] = 0;
            link[n - 1] = 0;
            break;
        }
    }
    if (strtab)
        lt_platform_unmap(strtab, names->sh_size);
    for (size_t i = 0; link[0] && i < LT_DEBUGLINK_PLACES; i++) {
        if (!lt_platform_debuglink_path(path, sizeof path, m->path, link, i) ||
            !open_elf(path, dbg))
            continue;
        if (has_build_id(dbg, m->build_id))
            return 1;
        close_elf(dbg);
    }
    return 0;
}

static int build(object *o, const lt_module *m, uintptr_t lo)
{
    elf_file f, dbg;
    const ElfW(Shdr) *sym, *str;
    int ok = 0;
    if (!open_elf(m->path, &f))
        return 0;
    o->bias = load_bias(&f, lo);
    if ((sym = symbol_section(&f, SHT_SYMTAB, &str)) != NULL) {
        ok = index_functions(o, &f, sym, str);
    } else {
        if (debug_file(m->build_id, &dbg) || debuglink_file(&f, m, &dbg)) {
            sym = symbol_section(&dbg, SHT_SYMTAB, &str);
            ok = sym && index_functions(o, &dbg, sym, str);
            close_elf(&dbg);
        }
        if (!ok && (sym = symbol_section(&f, SHT_DYNSYM, &str)) != NULL)
            ok = index_functions(o, &f, sym, str);
    }
    close_elf(&f);
    return ok;
}

/* The object covering ip; NULL when none is known (yet). *busy: one covering ip, or one
 * whose range is not known yet, is being built by another thread. */
static object *known_object(uintptr_t ip, int *busy)
{
    *busy = 0;
    for (size_t i = 0; i < OBJECTS; i++) {
        object *o = &objects[i];
        int state = atomic_load_explicit(&o->state, memory_order_acquire);
        if (state == FREE)
            return NULL;
        uintptr_t lo = atomic_load_explicit(&o->lo, memory_order_relaxed);
        if (state == BUILDING &&
            atomic_load_explicit(&o->builder, memory_order_relaxed) != getpid())
            continue; /* left unfinished by a fork */
        if (state == BUILDING && lo == 0)
            *busy = 1;
        if (lo && ip >= lo && ip < atomic_load_explicit(&o->hi, memory_order_relaxed)) {
            *busy = state == BUILDING;
            return *busy ? NULL : o;
        }
    }
    return NULL;
}

/* Builds the entry of the object at ip in the first free one; NULL when ip is in no object
 * (a code address outside the files: generated code) or the table is full. */
static object *add_object(uintptr_t ip)
{
    lt_module m;
    uintptr_t lo, hi;
    if (!lt_platform_module_safe(ip, &m, &lo, &hi))
        return NULL;
    for (size_t i = 0; i < OBJECTS; i++) {
        object *o = &objects[i];
        int state = FREE;
        if (!atomic_compare_exchange_strong(&o->state, &state, BUILDING))
            continue;
        atomic_store_explicit(&o->builder, getpid(), memory_order_relaxed);
        atomic_store_explicit(&o->hi, hi, memory_order_relaxed);
        atomic_store_explicit(&o->lo, lo, memory_order_relaxed);
        atomic_store_explicit(&o->state, build(o, &m, lo) ? READY : FAILED, memory_order_release);
        return o;
    }
    return NULL;
}

int lt_platform_function_safe(uintptr_t ip, char *name, size_t size)
{
    int busy, saved = errno;
    object *o = known_object(ip, &busy);
    if (!o && !busy)
        o = add_object(ip);
    errno = saved;
    if (busy)
        return -1;
    if (!o || atomic_load_explicit(&o->state, memory_order_acquire) != READY || size == 0)
        return 0;
    size_t lo = 0, hi = o->nsyms; /* the last symbol starting at or before ip */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->syms[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const fn_sym *s = &o->syms[lo - 1];
    if (s->size && ip >= s->start + s->size)
        return 0; /* in no function (a size of 0 is unknown: taken as reaching ip) */
    const char *n = o->names + s->name;
    size_t len = strnlen(n, o->names_size - s->name);
    if (len >= size)
        len = size - 1;
    memcpy(name, n, len);
    name[len] = 0;
    return 1;
}
