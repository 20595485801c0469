/*
 * dwarf_frames.c - the frames at one code address, from libdw (see dwarf_frames.h).
 */
#include "dwarf_frames.h"

#include <dwarf.h>

/* Whether the unit's own address ranges hold pc. libdw answers an address past the end of a
 * unit's ranges with that unit, and with a line of it where a row shares the address of its
 * sequence's end: _start, laid between main (.text.startup) and the unit's other functions,
 * was shown at the last line of main's unit, and so would code built without -g be. A unit
 * that names no ranges at all is taken at libdw's word. */
static int unit_holds(const lt_dw_api *dw, Dwarf_Die *cu, Dwarf_Addr pc)
{
    return dw->dwarf_haspc(cu, pc) == 1 ||
           (!dw->dwarf_hasattr(cu, DW_AT_low_pc) && !dw->dwarf_hasattr(cu, DW_AT_ranges));
}

/* The compile unit covering addr: through .debug_aranges, or, for units without them (clang
 * emits none by default), by asking each unit whether it covers the address. */
static Dwarf_Die *unit_at(const lt_dw_api *dw, Dwfl_Module *mod, Dwarf_Addr addr,
                          Dwarf_Die *store, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dw->dwfl_module_addrdie(mod, addr, bias);
    if (cu && unit_holds(dw, cu, addr - *bias))
        return cu;
    Dwarf *dbg = dw->dwfl_module_getdwarf(mod, bias);
    Dwarf_Off off = 0, next;
    size_t header;
    while (dbg && dw->dwarf_nextcu(dbg, off, &next, &header, NULL, NULL, NULL) == 0) {
        if (dw->dwarf_offdie(dbg, off + header, store) && dw->dwarf_haspc(store, addr - *bias) == 1)
            return store;
        off = next;
    }
    return NULL;
}

/* The line at addr, in cu (which holds it): the innermost inlined call's own line when addr
 * is in one. */
static void line_at(const lt_dw_api *dw, Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr addr,
                    Dwarf_Addr bias, lt_dw_frame *f)
{
    Dwfl_Line *l = dw->dwfl_module_getsrc(mod, addr);
    Dwarf_Line *dl;
    if (l) {
        f->file = dw->dwfl_lineinfo(l, NULL, &f->line, NULL, NULL, NULL);
    } else if ((dl = dw->dwarf_getsrc_die(cu, addr - bias)) != NULL &&
               dw->dwarf_lineno(dl, &f->line) == 0) {
        f->file = dw->dwarf_linesrc(dl, NULL, NULL);
    }
    if (!f->file)
        f->line = 0;
}

static const char *die_name(const lt_dw_api *dw, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *linkage =
        dw->dwarf_formstring(dw->dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!linkage)
        linkage = dw->dwarf_formstring(dw->dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    return linkage ? dw->name(dw->ctx, linkage) : dw->dwarf_diename(die);
}

/* Where an inlined subroutine was called from: its DW_AT_call_file (an index into the file
 * table of the unit the DIE itself is in) and DW_AT_call_line. */
static void call_site(const lt_dw_api *dw, Dwarf_Die *inl, lt_dw_frame *f)
{
    Dwarf_Attribute attr;
    Dwarf_Word idx = 0, ln = 0;
    Dwarf_Files *files;
    Dwarf_Die unit;
    size_t nfiles;
    f->file = NULL;
    f->line = 0;
    if (dw->dwarf_formudata(dw->dwarf_attr(inl, DW_AT_call_file, &attr), &idx) == 0 &&
        dw->dwarf_diecu(inl, &unit, NULL, NULL) &&
        dw->dwarf_getsrcfiles(&unit, &files, &nfiles) == 0 && idx < nfiles)
        f->file = dw->dwarf_filesrc(files, idx, NULL, NULL);
    if (dw->dwarf_formudata(dw->dwarf_attr(inl, DW_AT_call_line, &attr), &ln) == 0)
        f->line = (int)ln;
}

/* The name of the split DWARF file a skeleton unit's DIEs are in (DWARF 5's attribute, or
 * the GNU extension gcc writes for DWARF 4). */
static const char *dwo_name(const lt_dw_api *dw, Dwarf_Die *skeleton)
{
    Dwarf_Attribute attr;
    const char *name = dw->dwarf_formstring(dw->dwarf_attr(skeleton, DW_AT_dwo_name, &attr));
    if (!name)
        name = dw->dwarf_formstring(dw->dwarf_attr(skeleton, DW_AT_GNU_dwo_name, &attr));
    return name ? name : "(unnamed)";
}

#define INLINED 64

/* Whether a DIE under parent holds the code at pc; the inlined calls on the way down to the
 * innermost one go into inl, the n-th at inl[n % INLINED] (*seen counts them: the innermost
 * INLINED are kept). Not dwarf_getscopes: it looks for each inlined call's abstract origin in the call's own
 * unit and finds no scope at all when the origin is in another, as every one is after gcc
 * -flto (its units of code point into the units the compiler emitted before linking) and a
 * call inlined from another file is after clang -flto. With nested, also under functions and
 * blocks that do not hold pc: gcc puts the code of a member function of a local class (a
 * lambda's operator()) under the function that defines the class, not at the unit's top. */
static int inlined_at(const lt_dw_api *dw, Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *inl,
                      int *seen, int depth, int nested)
{
    Dwarf_Die child, unit;
    Dwarf_Attribute attr;
    if (depth > 64 || dw->dwarf_child(parent, &child) != 0)
        return 0;
    do {
        switch (dw->dwarf_tag(&child)) {
        case DW_TAG_inlined_subroutine:
        case DW_TAG_subprogram:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_entry_point:
            if (dw->dwarf_haspc(&child, pc) != 1) {
                if (nested && dw->dwarf_tag(&child) != DW_TAG_inlined_subroutine &&
                    inlined_at(dw, &child, pc, inl, seen, depth + 1, nested))
                    return 1;
                break;
            }
            if (dw->dwarf_tag(&child) == DW_TAG_inlined_subroutine)
                inl[(*seen)++ % INLINED] = child;
            inlined_at(dw, &child, pc, inl, seen, depth + 1, 0);
            return 1;
        case DW_TAG_namespace: /* no code of their own, but functions defined inside them */
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            if (inlined_at(dw, &child, pc, inl, seen, depth + 1, nested))
                return 1;
            break;
        case DW_TAG_imported_unit: /* a partial unit, as dwz shares them between units */
            if (dw->dwarf_formref_die(dw->dwarf_attr(&child, DW_AT_import, &attr), &unit) &&
                inlined_at(dw, &unit, pc, inl, seen, depth + 1, nested))
                return 1;
            break;
        default:
            break;
        }
    } while (dw->dwarf_siblingof(&child, &child) == 0);
    return 0;
}

size_t lt_dw_frames(const lt_dw_api *dw, Dwfl_Module *mod, Dwarf_Addr addr, lt_dw_frame *out,
                    size_t max)
{
    GElf_Off off = 0;
    GElf_Sym sym;
    Dwarf_Addr bias = 0;
    Dwarf_Die store;
    if (max == 0)
        return 0;
    const char *fn = dw->dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    Dwarf_Die *cu = unit_at(dw, mod, addr, &store, &bias);
    lt_dw_frame f = {.function = fn ? dw->name(dw->ctx, fn) : NULL, .function_offset = off};
    if (cu)
        line_at(dw, mod, cu, addr, bias, &f);
    if (!fn && !f.file)
        return 0;
    Dwarf_Die inl[INLINED], split;
    uint8_t type = 0;
    int seen = 0;
    /* -gsplit-dwarf: the unit in the program is a skeleton, its DIEs are in the .dwo file.
     * Without that file (not shipped with the program, or rebuilt since) the line table is
     * still the program's, so the line is the innermost inlined call's: the frame says so. */
    if (cu && dw->dwarf_cu_info(cu->cu, NULL, &type, NULL, &split, NULL, NULL, NULL) == 0 &&
        type == DW_UT_skeleton) {
        if (split.cu) {
            cu = &split;
        } else {
            f.split_missing = dwo_name(dw, cu);
            cu = NULL;
        }
    }
    /* the walk under functions that do not hold the address only when the plain one, which
     * skips their subtrees, finds no function that does */
    if (cu && !inlined_at(dw, cu, addr - bias, inl, &seen, 0, 0))
        inlined_at(dw, cu, addr - bias, inl, &seen, 0, 1);
    size_t n = 0;
    for (int i = seen; i-- > 0 && i >= seen - INLINED && n + 1 < max;) {
        lt_dw_frame in = f;
        in.function = die_name(dw, &inl[i % INLINED]);
        in.inlined = 1;
        out[n++] = in;
        call_site(dw, &inl[i % INLINED], &f);
    }
    out[n++] = f;
    return n;
}
