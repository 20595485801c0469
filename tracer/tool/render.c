/*
 * render.c - `locktrace report [--json] FILE...`: each report file printed as the text the
 * program printed (report_text.c), its frames re-symbolized from the binaries on disk when
 * their build-ids still match; with --json, the same data as normalized JSON. A file that
 * cannot be read as a report is an error naming the file and the problem; the others are
 * still printed. --as-recorded skips re-symbolizing: the frames exactly as the program saw them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_read.h"
#include "symbolize.h"
#include "tool.h"

#define MAX_REPORT_BYTES (64u << 20)
#define INLINE_DEPTH 8 /* frames one address may expand to */

static void say_note(void *file, const char *line)
{
    fprintf(stderr, "locktrace report: %s: note: %s\n", (const char *)file, line);
}

/* A copy of r whose stacks have re-symbolized frames; frees with free_resymbolized. */
static lt_rep resymbolize(const lt_rep *r, lt_symbolizer *sz, const char *file)
{
    lt_rep out = *r;
    lt_symbolizer_notes notes = {say_note, (void *)file};
    out.stacks = calloc(r->nstacks ? r->nstacks : 1, sizeof *out.stacks);
    for (size_t i = 0; out.stacks && i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        size_t max = s->nframes * INLINE_DEPTH;
        out.stacks[i] = *s;
        out.stacks[i].frames = max ? malloc(max * sizeof *s->frames) : NULL;
        if (out.stacks[i].frames)
            out.stacks[i].nframes = lt_symbolize_stack(sz, s, out.stacks[i].frames, max, &notes);
    }
    if (!out.stacks)
        out.stacks = r->stacks;
    return out;
}

static void free_resymbolized(lt_rep *out, const lt_rep *r)
{
    if (out->stacks == r->stacks)
        return;
    for (size_t i = 0; i < out->nstacks; i++)
        if (out->stacks[i].frames != r->stacks[i].frames)
            free(out->stacks[i].frames);
    free(out->stacks);
}

/* Text or JSON of r into a buffer grown until it fits; prints it. */
static int print(const lt_rep *r, int json)
{
    size_t size = 1 << 16;
    for (;;) {
        char *buf = malloc(size);
        if (!buf)
            return -1;
        size_t n = json ? lt_rep_format_json(r, buf, size, (size_t)-1)
                        : lt_rep_format_text(r, buf, size);
        if (n + 1 < size) {
            fwrite(buf, 1, n, stdout);
            free(buf);
            return 0;
        }
        free(buf);
        size = (json ? n : size) * 2;
    }
}

static int render_file(const char *path, int json, int as_recorded)
{
    char err[512];
    size_t len;
    char *text = lt_read_file(path, MAX_REPORT_BYTES, &len, err, sizeof err);
    lt_rep_file *f = text ? lt_rep_read(text, len, err, sizeof err) : NULL;
    if (!f) {
        fprintf(stderr, "locktrace report: %s: %s\n", path, err);
        free(text);
        return 1;
    }
    lt_symbolizer *sz = as_recorded ? NULL : lt_symbolizer_new();
    lt_rep *r = lt_rep_of(f);
    lt_rep out = sz ? resymbolize(r, sz, path) : *r;
    int rc = print(&out, json);
    free_resymbolized(&out, r);
    lt_symbolizer_free(sz);
    lt_rep_file_free(f);
    free(text);
    if (rc)
        fprintf(stderr, "locktrace report: %s: out of memory\n", path);
    return rc ? 1 : 0;
}

int lt_tool_report(int argc, char **argv)
{
    int json = 0, as_recorded = 0, status = 0, files = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && !files) {
            json = 1;
            continue;
        }
        if (strcmp(argv[i], "--as-recorded") == 0 && !files) {
            as_recorded = 1;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 && !files) {
            fputs(lt_tool_report_usage, stdout);
            return 0;
        }
        files++;
        status |= render_file(argv[i], json, as_recorded);
    }
    if (!files) {
        fputs(lt_tool_report_usage, stderr);
        return 2;
    }
    return status;
}
