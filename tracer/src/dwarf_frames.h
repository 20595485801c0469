/*
 * dwarf_frames.h - the frames at one code address, from libdw: the calls inlined there,
 * innermost first, each with its own file:line, then the function that contains them.
 * Compiled into the tracer (which loads libdw privately and passes the functions it bound)
 * and into the locktrace command (which links libdw), so a live report and `locktrace
 * report` explain an address the same way.
 */
#ifndef LT_DWARF_FRAMES_H
#define LT_DWARF_FRAMES_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>

#define LT_DW_FRAME_FUNCS(X)                                                                \
    X(dwfl_module_addrinfo) X(dwfl_module_getsrc) X(dwfl_lineinfo) X(dwfl_module_addrdie)   \
    X(dwfl_module_getdwarf) X(dwarf_nextcu) X(dwarf_offdie) X(dwarf_haspc) X(dwarf_hasattr)\
    X(dwarf_getsrc_die) X(dwarf_lineno) X(dwarf_linesrc) X(dwarf_child) X(dwarf_siblingof)   \
    X(dwarf_tag) X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_formref_die) X(dwarf_diecu)   \
    X(dwarf_cu_info)                                                                        \
    X(dwarf_formstring) X(dwarf_formudata) X(dwarf_diename) X(dwarf_getsrcfiles)            \
    X(dwarf_filesrc)

/* The libdw functions used, and how a symbol name becomes the name shown: `name` demangles
 * a C++ name (or returns it as it is) into storage that outlives the caller's use. */
typedef struct lt_dw_api {
#define LT_DW_FIELD(f) __typeof__(&f) f;
    LT_DW_FRAME_FUNCS(LT_DW_FIELD)
#undef LT_DW_FIELD
    const char *(*name)(void *ctx, const char *symbol);
    void *ctx;
} lt_dw_api;

typedef struct lt_dw_frame {
    const char *function; /* NULL when unknown */
    uint64_t function_offset;
    const char *file;     /* NULL without line information */
    int line;
    int inlined;          /* a call inlined at the address */
    const char *split_missing; /* the split DWARF file (-gsplit-dwarf) that would name the calls
                                  inlined at the address, not found: the line may be one of
                                  theirs; NULL otherwise */
} lt_dw_frame;

/* The frames at addr (an address in mod's dwfl space), at most max into out; returns how
 * many, 0 when libdw knows nothing about it. */
size_t lt_dw_frames(const lt_dw_api *dw, Dwfl_Module *mod, Dwarf_Addr addr, lt_dw_frame *out,
                    size_t max);

#endif
