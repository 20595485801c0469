/*
 * symbolize.c - re-symbolizes a report's frames from the binaries on disk with libdw:
 * function (C++ demangled), file:line, and the frames inlined at each address. A module is
 * used only when its build-id is the one recorded in the report; a rebuilt, missing or
 * unverifiable module leaves its frames as the report recorded them, and the caller is told
 * once per module why. A missing one is fetched by build-id from debuginfod when
 * DEBUGINFOD_URLS is set.
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include "dwarf_frames.h"
#include "report_data.h"
#include "report_set.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *__cxa_demangle(const char *name, char *out, size_t *len, int *status);

typedef struct module {
    char *path;          /* as the report names it */
    char disk[4096];     /* where it is read: path through --path-map */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    const char *problem; /* NULL: usable */
    int fetched;         /* disk is a copy fetched from debuginfod */
    int noted;           /* the caller has been told the problem */
    char build_id[129];
    struct module *next;
} module;

struct lt_symbolizer {
    module *modules;
    char **strings; /* names made here, freed with the symbolizer */
    size_t nstrings, cap;
};

lt_symbolizer *lt_symbolizer_new(void)
{
    return calloc(1, sizeof(lt_symbolizer));
}

void lt_symbolizer_free(lt_symbolizer *sz)
{
    if (!sz)
        return;
    for (module *m = sz->modules, *next; m; m = next) {
        next = m->next;
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->path);
        free(m);
    }
    for (size_t i = 0; i < sz->nstrings; i++)
        free(sz->strings[i]);
    free(sz->strings);
    free(sz);
}

/* Keeps s (malloc'ed) until the symbolizer is freed; returns it. */
static const char *own(lt_symbolizer *sz, char *s)
{
    if (!s)
        return NULL;
    if (sz->nstrings == sz->cap) {
        size_t cap = sz->cap ? sz->cap * 2 : 64;
        char **p = realloc(sz->strings, cap * sizeof *p);
        if (!p) {
            free(s);
            return NULL;
        }
        sz->strings = p;
        sz->cap = cap;
    }
    return sz->strings[sz->nstrings++] = s;
}

static const char *demangle(lt_symbolizer *sz, const char *name)
{
    int status = -1;
    if (!name || strncmp(name, "_Z", 2) != 0)
        return name;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return name;
    }
    return own(sz, d);
}

/* ------------------------------------------------------------------------------------------
 * Modules: opened once each, checked against the build-id the report recorded.
 * ---------------------------------------------------------------------------------------- */
static void hex(const unsigned char *bits, int n, char *out)
{
    for (int i = 0; i < n && i < 64; i++)
        sprintf(out + 2 * i, "%02x", bits[i]);
}

/* ------------------------------------------------------------------------------------------
 * A binary that is not on this machine, fetched by build-id from the debuginfod servers of
 * DEBUGINFOD_URLS through elfutils' client library (the one libdw itself loads for separate
 * debug info), loaded at run time so the tool works where it is not installed.
 * ---------------------------------------------------------------------------------------- */
typedef struct debuginfod_client debuginfod_client;

static struct {
    int tried;
    debuginfod_client *(*begin)(void);
    int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
    void (*end)(debuginfod_client *);
} dfd;

/* Into out (size bytes) the path of a local copy of the binary with this build-id; 0 on
 * success. */
static int fetch(const char *build_id, char *out, size_t size)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!build_id || !urls || !urls[0])
        return -1;
    if (!dfd.tried) {
        dfd.tried = 1;
        void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
        dfd.begin = lib ? (debuginfod_client * (*)(void)) dlsym(lib, "debuginfod_begin") : NULL;
        *(void **)&dfd.find_executable = lib ? dlsym(lib, "debuginfod_find_executable") : NULL;
        *(void **)&dfd.end = lib ? dlsym(lib, "debuginfod_end") : NULL;
    }
    if (!dfd.begin || !dfd.find_executable || !dfd.end)
        return -1;
    debuginfod_client *c = dfd.begin();
    char *path = NULL;
    int fd = c ? dfd.find_executable(c, (const unsigned char *)build_id, 0, &path) : -1;
    if (fd >= 0) {
        close(fd);
        snprintf(out, size, "%s", path);
    }
    free(path);
    if (c)
        dfd.end(c);
    return fd >= 0 ? 0 : -1;
}

static void open_module(module *m, const char *build_id)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
    };
    const unsigned char *bits;
    GElf_Addr vaddr;
    struct stat st;
    const char *mapped = lt_path_mapped(m->path, m->disk, sizeof m->disk);
    if (mapped != m->disk)
        snprintf(m->disk, sizeof m->disk, "%s", mapped);
    if (access(m->disk, R_OK) != 0 || stat(m->disk, &st) != 0) {
        if (fetch(build_id, m->disk, sizeof m->disk) != 0 || stat(m->disk, &st) != 0) {
            m->problem = "is not on this machine any more";
            return;
        }
        m->fetched = 1;
    }
    if (!S_ISREG(st.st_mode)) { /* a report may name a FIFO or a device: never open those */
        m->problem = "is not a regular file";
        return;
    }
    m->dwfl = dwfl_begin(&callbacks);
    m->mod = m->dwfl ? dwfl_report_offline(m->dwfl, m->path, m->disk, -1) : NULL;
    if (!m->mod || dwfl_report_end(m->dwfl, NULL, NULL) != 0) {
        m->problem = "cannot be read as an ELF file";
        return;
    }
    int n = dwfl_module_build_id(m->mod, &bits, &vaddr);
    if (n <= 0) {
        m->problem = "has no build-id, so it cannot be matched to the report";
        return;
    }
    hex(bits, n, m->build_id);
}

static module *find_module(lt_symbolizer *sz, const char *path, const char *build_id)
{
    for (module *m = sz->modules; m; m = m->next)
        if (strcmp(m->path, path) == 0)
            return m;
    module *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    open_module(m, build_id);
    m->next = sz->modules;
    sz->modules = m;
    return m;
}

/* ------------------------------------------------------------------------------------------
 * One address: the frames dwarf_frames.c finds there, with the frame's recorded fields.
 * ---------------------------------------------------------------------------------------- */
static const char *name_of(void *sz, const char *symbol)
{
    return demangle(sz, symbol);
}

/* Appends the frames for addr to out (at most max); returns how many. */
static size_t frames_at(lt_symbolizer *sz, module *m, Dwarf_Addr addr, const lt_rep_frame *orig,
                        lt_rep_frame *out, size_t max)
{
    static const lt_dw_api linked = {
#define LT_DW_LINKED(f) .f = f,
        LT_DW_FRAME_FUNCS(LT_DW_LINKED)
#undef LT_DW_LINKED
    };
    lt_dw_api dw = linked;
    lt_dw_frame found[64];
    dw.name = name_of;
    dw.ctx = sz;
    size_t n = lt_dw_frames(&dw, m->mod, addr, found, max < 64 ? max : 64);
    if (n == 0 && max > 0) { /* nothing known: the frame as recorded, without its line */
        out[0] = *orig;
        out[0].file = NULL;
        out[0].line = 0;
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = *orig;
        out[i].function = found[i].function ? found[i].function : orig->function;
        out[i].function_offset = found[i].function ? found[i].function_offset
                                                   : orig->function_offset;
        out[i].file = found[i].file;
        out[i].line = found[i].line;
        out[i].inlined = found[i].inlined;
        out[i].split_missing = found[i].split_missing;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */

/* The module for frame f when it may explain f; else NULL (and a note, once per module). */
static module *usable(lt_symbolizer *sz, const lt_rep_frame *f, lt_symbolizer_notes *notes)
{
    char line[8400];
    module *m = f->module ? find_module(sz, f->module, f->build_id) : NULL;
    if (!m)
        return NULL;
    if (m->fetched == 1 && notes) {
        m->fetched = 2;
        snprintf(line, sizeof line, "%s is not on this machine: read from debuginfod's copy %s",
                 m->path, m->disk);
        notes->fn(notes->arg, line);
    }
    if (!m->problem && !f->build_id)
        m->problem = "has no build-id in the report, so it cannot be matched";
    if (!m->problem && strcmp(f->build_id, m->build_id) != 0) {
        snprintf(line, sizeof line, "%s was rebuilt since the report (build-id %s then, %s now): "
                 "its frames show the names the report recorded",
                 m->path, f->build_id, m->build_id);
        m->problem = "was rebuilt since the report";
    } else if (m->problem) {
        snprintf(line, sizeof line, "%s %s: its frames show the names the report recorded",
                 m->path, m->problem);
    }
    if (m->problem && !m->noted && notes) {
        m->noted = 1;
        notes->fn(notes->arg, line);
    }
    return m->problem ? NULL : m;
}

static int is_signal_frame(const lt_rep_frame *f)
{
    return f->function && strcmp(f->function, LT_REP_SIGNAL_FRAME) == 0;
}

/* Whether the tracer marked the frame of the address of recorded frame `last` (its own
 * frame, after the calls inlined there) that is named `function` as a lock wrapper. */
static int recorded_wrapper(const lt_rep_stack *s, size_t last, const char *function)
{
    for (size_t k = last + 1; k-- > 0 && s->frames[k].ip == s->frames[last].ip &&
                              (k == last || s->frames[k].inlined);)
        if (function && s->frames[k].function && strcmp(s->frames[k].function, function) == 0)
            return s->frames[k].wrapper;
    return 0;
}

/* A frame is looked up at its return address less one (the call), but the signal frame, kept
 * as the tracer named it, and the frame after it: the instruction the signal interrupted.
 * Each frame found keeps the tracer's lock wrapper mark of the frame it recorded under that
 * name at that address. */
size_t lt_symbolize_stack(lt_symbolizer *sz, const lt_rep_stack *s, lt_rep_frame *out, size_t max,
                          lt_symbolizer_notes *notes)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nframes && n < max; i++) {
        const lt_rep_frame *f = &s->frames[i];
        module *m = usable(sz, f, notes);
        if (!m || is_signal_frame(f)) {
            out[n++] = *f;
            continue;
        }
        if (f->inlined) /* found again with the function's frame at the same address */
            continue;
        Dwarf_Addr bias;
        dwfl_module_getelf(m->mod, &bias);
        int interrupted = i > 0 && is_signal_frame(&s->frames[i - 1]);
        size_t got = frames_at(sz, m, bias + f->module_offset - !interrupted, f, out + n, max - n);
        for (size_t k = n; k < n + got; k++)
            out[k].wrapper = recorded_wrapper(s, i, out[k].function);
        n += got;
    }
    return n;
}
