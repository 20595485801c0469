/*
 * report_identity.c - which bug a report is, and where: its signature, its primary stack and
 * the source line that locates it. Shared by the tracer, which de-duplicates reports by
 * signature, and by the `locktrace` tool, whose SARIF output uses the same signature as its
 * fingerprint: one definition, so a repeat the tracer counted is one result in code scanning.
 */
#include <string.h>

#include "fmt.h"
#include "report_data.h"

/* The calls of each acquisition that identify it: the call site and its two callers, lock
 * wrappers left out. The same bug reached from a loop (or from deeper recursion) keeps them;
 * the same helper called from two places, or two bugs on two lines, do not. */
#define SIGNATURE_CALLS 3

/* FNV-1a over what stays the same from one occurrence of a bug to the next. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator, so "ab","c" differs from "a","bc" */
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    return mix(h, s ? s : "", s ? strlen(s) : 0);
}

static uint64_t mix_num(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> 8 * i);
    return mix(h, b, sizeof b);
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* One frame: function and source line; without a line, the offset in the function; without
 * a function, the module and the offset in it. Base names only, so a build in another
 * directory keeps its signatures. */
static uint64_t mix_frame(uint64_t h, const lt_rep_frame *f)
{
    if (!f->function)
        return mix_num(mix_str(h, base_name(f->module)), f->module_offset);
    h = mix_str(h, f->function);
    if (f->line > 0)
        return mix_num(mix_str(h, base_name(f->file)), (uint64_t)f->line);
    return mix_num(h, f->function_offset);
}

/* Spreads every input bit over the whole word. The stacks' hashes are summed, and FNV-1a
 * is close to linear in its last bytes: a request and a held stack that differ in one line
 * number, and a second occurrence one line further on, made equal sums (two bugs reported
 * as one) until each hash went through this before the sum. */
static uint64_t finalize(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ h >> 33;
}

/* The role and the first SIGNATURE_CALLS captured addresses of a stack outside lock wrappers,
 * each with the inlined calls it expands to (an address's frames end with its own, not
 * inlined, one; two addresses in a row may be the same, in recursion). Wrapper frames are left
 * out: at -O0 a std::lock_guard is three calls of its own, at -O2 calls inlined into the
 * program's frame, and the bug is the program's lines either way. */
static uint64_t stack_hash(const lt_rep_stack *s)
{
    uint64_t h = mix_str(0xcbf29ce484222325ull, s->role);
    int fresh = 1; /* no frame of this address hashed yet */
    for (size_t k = 0, calls = 0; k < s->nframes; k++) {
        const lt_rep_frame *f = &s->frames[k];
        if (k > 0 && !s->frames[k - 1].inlined)
            fresh = 1;
        if (f->wrapper)
            continue;
        if (fresh && ++calls > SIGNATURE_CALLS)
            break;
        fresh = 0;
        h = mix_frame(h, f);
    }
    return finalize(h);
}

void lt_rep_signature(const lt_rep *r, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    if (r->signature[0]) { /* as recorded by the tracer */
        memcpy(out, r->signature, 17);
        return;
    }
    uint64_t h = mix_str(mix_str(0xcbf29ce484222325ull, lt_rep_kind_name(r->kind)),
                         lt_rep_reason_name(r->why));
    /* A sum, so the order of the stacks does not matter: a deadlock cycle lists its threads
     * from whichever one found it. Where the lock was first seen is no part of the bug. */
    uint64_t stacks = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        if (strcmp(r->stacks[i].role, "first-seen") != 0)
            stacks += stack_hash(&r->stacks[i]);
    h = mix_num(h, stacks);
    for (int i = 0; i < 16; i++)
        out[i] = hex[h >> (60 - 4 * i) & 15];
    out[16] = 0;
}

const lt_rep_stack *lt_rep_primary_stack(const lt_rep *r)
{
    static const char *const primary[] = {"request", "waiting", "edge-to", "taken", "free"};
    for (size_t k = 0; k < sizeof primary / sizeof *primary; k++)
        for (size_t i = 0; i < r->nstacks; i++)
            if (strcmp(r->stacks[i].role, primary[k]) == 0)
                return &r->stacks[i];
    return r->nstacks ? &r->stacks[0] : NULL;
}

const lt_rep_frame *lt_rep_own_frame(const lt_rep_stack *s)
{
    for (size_t i = 0; s && i < s->nframes; i++)
        if (!s->frames[i].wrapper)
            return &s->frames[i];
    return s && s->nframes ? &s->frames[0] : NULL;
}

const lt_rep_frame *lt_rep_source_frame(const lt_rep_stack *s)
{
    const lt_rep_frame *f = lt_rep_own_frame(s);
    return f && f->file && f->line > 0 ? f : NULL;
}

size_t lt_rep_format_place(const lt_rep *r, char *buf, size_t size, size_t at)
{
    const lt_rep_stack *s = lt_rep_primary_stack(r);
    const lt_rep_frame *f = lt_rep_source_frame(s);
    if (f) {
        at = lt_fmt_str(buf, size, at, base_name(f->file));
        at = lt_fmt_str(buf, size, at, ":");
        return lt_fmt_dec(buf, size, at, f->line);
    }
    f = lt_rep_own_frame(s);
    if (f && f->function)
        return lt_fmt_str(buf, size, at, f->function);
    if (f && f->module) {
        at = lt_fmt_str(buf, size, at, base_name(f->module));
        at = lt_fmt_str(buf, size, at, "+");
        return lt_fmt_hex(buf, size, at, (uintptr_t)f->module_offset);
    }
    return lt_fmt_str(buf, size, at, "an unknown place");
}
