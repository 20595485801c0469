/*
 * platform_linux.c - platform.h for Linux and glibc: dlsym/dlvsym, gettid, prctl names,
 * glibc lock internals (mutex kind, rwlock preference), libunwind for stacks and libdw for
 * function names and file:line at report time.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "platform.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "lt_internal.h"

void *lt_platform_real(const char *name, const char *version)
{
    return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

int lt_platform_tid(void)
{
    return gettid();
}

void lt_platform_write(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

void lt_platform_thread_name(char *buf, size_t size)
{
    char name[16] = {0}; /* PR_GET_NAME writes up to 16 bytes */
    prctl(PR_GET_NAME, name, 0, 0, 0);
    size_t i = 0;
    for (; i + 1 < size && name[i]; i++)
        buf[i] = name[i];
    if (size)
        buf[i] = 0;
}

/* glibc keeps the type in the low bits of __kind; adaptive behaves like a normal mutex. */
int lt_platform_mutex_type(const void *mutex)
{
    switch (((const pthread_mutex_t *)mutex)->__data.__kind & 3) {
    case PTHREAD_MUTEX_RECURSIVE_NP: return LT_MUTEX_RECURSIVE;
    case PTHREAD_MUTEX_ERRORCHECK_NP: return LT_MUTEX_ERRORCHECK;
    default: return LT_MUTEX_NORMAL;
    }
}

/* glibc's private PTHREAD_MUTEX_ROBUST_NORMAL_NP bit in __kind (nptl/pthreadP.h). */
enum { GLIBC_MUTEX_ROBUST_BIT = 16 };

int lt_platform_mutex_robust(const void *mutex)
{
    return (((const pthread_mutex_t *)mutex)->__data.__kind & GLIBC_MUTEX_ROBUST_BIT) != 0;
}

/* glibc honours writer preference only for the non-recursive kind. */
int lt_platform_rwlock_prefers_writer(const void *rwlock)
{
    return ((const pthread_rwlock_t *)rwlock)->__data.__flags ==
           PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

void *lt_platform_map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void lt_platform_unmap(void *p, size_t size)
{
    munmap(p, size);
}

size_t lt_platform_unwind(lt_frame *frames, size_t max)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    size_t n = 0;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    while (n < max) {
        unw_word_t ip, sp;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw_get_reg(&cur, UNW_REG_SP, &sp);
        frames[n].ip = ip;
        frames[n].sp = sp;
        n++;
        if (unw_step(&cur) <= 0)
            break;
    }
    return n;
}

size_t lt_platform_backtrace(uintptr_t *ips, size_t max)
{
    int n = unw_backtrace((void **)ips, (int)max);
    return n > 0 ? (size_t)n : 0;
}

uintptr_t lt_platform_proc_start(uintptr_t ip)
{
    unw_proc_info_t pi;
    if (unw_get_proc_info_by_ip(unw_local_addr_space, ip, &pi, NULL) != 0)
        return 0;
    return pi.start_ip;
}

int lt_platform_in_tracer(uintptr_t ip)
{
    static void *self_base;
    Dl_info me, it;
    if (!self_base && dladdr((void *)lt_platform_in_tracer, &me))
        self_base = me.dli_fbase;
    return dladdr((void *)ip, &it) && it.dli_fbase == self_base;
}

/* One libdw session per process, opened at the first report (reports are serialised). */
static Dwfl *symbolizer(void)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
    };
    static Dwfl *dwfl;
    if (dwfl)
        return dwfl;
    dwfl = dwfl_begin(&callbacks);
    if (dwfl && (dwfl_linux_proc_report(dwfl, getpid()) != 0 ||
                 dwfl_report_end(dwfl, NULL, NULL) != 0)) {
        dwfl_end(dwfl);
        dwfl = NULL;
    }
    return dwfl;
}

/* C++ names read better demangled; libstdc++'s demangler is used when the program has it. */
static const char *demangle(const char *name)
{
    typedef char *(*demangler)(const char *, char *, size_t *, int *);
    static char buf[512];
    static demangler fn;
    int status = -1;
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    if (!fn)
        fn = (demangler)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    char *d = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (!d || status != 0)
        return name;
    size_t i = 0;
    for (; d[i] && i + 1 < sizeof buf; i++)
        buf[i] = d[i];
    buf[i] = 0;
    free(d);
    return buf;
}

/* dwfl_module_getsrc finds the compile unit through .debug_aranges, which clang does not
 * emit by default: then ask each unit whether it covers the address. */
static const char *line_by_scan(Dwfl_Module *mod, uintptr_t ip, int *line)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    Dwarf_Off off = 0, next;
    size_t header;
    while (dw && dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        Dwarf_Line *l;
        if (dwarf_offdie(dw, off + header, &cu) && dwarf_haspc(&cu, ip - bias) == 1 &&
            (l = dwarf_getsrc_die(&cu, ip - bias)) != NULL && dwarf_lineno(l, line) == 0)
            return dwarf_linesrc(l, NULL, NULL);
        off = next;
    }
    return NULL;
}

void lt_platform_symbolize(uintptr_t ip, lt_symbol *out)
{
    Dl_info info;
    *out = (lt_symbol){0};
    if (dladdr((void *)ip, &info)) {
        out->module = info.dli_fname;
        out->module_offset = ip - (uintptr_t)info.dli_fbase;
        if (info.dli_sname) {
            out->function = info.dli_sname;
            out->function_offset = ip - (uintptr_t)info.dli_saddr;
        }
    }
    Dwfl *dwfl = symbolizer();
    Dwfl_Module *mod = dwfl ? dwfl_addrmodule(dwfl, ip) : NULL;
    if (!mod)
        return;
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, ip, &off, &sym, NULL, NULL, NULL);
    if (name) {
        out->function = demangle(name);
        out->function_offset = off;
    }
    Dwfl_Line *line = dwfl_module_getsrc(mod, ip);
    if (line)
        out->file = dwfl_lineinfo(line, NULL, &out->line, NULL, NULL, NULL);
    else
        out->file = line_by_scan(mod, ip, &out->line);
}

void lt_platform_exe_path(char *buf, size_t size)
{
    ssize_t n = size ? readlink("/proc/self/exe", buf, size - 1) : -1;
    if (size)
        buf[n > 0 ? n : 0] = 0;
}

/* The build-id note among a module's PT_NOTE segments, as hex into out (size 129). */
static void note_build_id(const struct dl_phdr_info *info, char *out)
{
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const unsigned char *desc = (const unsigned char *)(p + sizeof *n + ((n->n_namesz + 3) & ~3u));
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && n->n_descsz <= 64 &&
                memcmp(p + sizeof *n, "GNU", 4) == 0) {
                for (size_t k = 0; k < n->n_descsz; k++) {
                    out[2 * k] = "0123456789abcdef"[desc[k] >> 4];
                    out[2 * k + 1] = "0123456789abcdef"[desc[k] & 15];
                }
                out[2 * n->n_descsz] = 0;
                return;
            }
            p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
        }
    }
}

typedef struct module_query {
    uintptr_t ip;
    lt_module *out;
} module_query;

static int module_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    module_query *q = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || q->ip < start || q->ip >= start + ph->p_memsz)
            continue;
        q->out->base = info->dlpi_addr;
        if (info->dlpi_name && info->dlpi_name[0])
            lt_fmt_str(q->out->path, sizeof q->out->path, 0, info->dlpi_name);
        else
            lt_platform_exe_path(q->out->path, sizeof q->out->path);
        note_build_id(info, q->out->build_id);
        return 1;
    }
    return 0;
}

int lt_platform_module(uintptr_t ip, lt_module *out)
{
    module_query q = {ip, out};
    return dl_iterate_phdr(module_of, &q) == 1;
}
