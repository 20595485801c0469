/*
 * report_set.c - the reports `locktrace report` keeps for SARIF, their re-symbolized copies,
 * and where a report's source files are.
 */
#define _GNU_SOURCE
#include "report_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INLINE_DEPTH 8 /* frames one address may expand to */

int lt_report_set_add(lt_report_set *set, const char *path, char *text, lt_rep_file *f,
                      const lt_rep *rep)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        lt_report_entry *p = realloc(set->items, cap * sizeof *p);
        if (!p)
            return -1;
        set->items = p;
        set->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return -1;
    set->items[set->n++] = (lt_report_entry){copy, text, f, *rep};
    return 0;
}

void lt_report_set_free(lt_report_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        lt_report_entry *e = &set->items[i];
        lt_rep_free_resymbolized(&e->rep, lt_rep_of(e->file));
        lt_rep_file_free(e->file);
        free(e->text);
        free(e->path);
    }
    free(set->items);
    *set = (lt_report_set){0};
}

lt_rep lt_rep_resymbolize(const lt_rep *r, lt_symbolizer *sz, lt_symbolizer_notes *notes)
{
    lt_rep out = *r;
    out.stacks = calloc(r->nstacks ? r->nstacks : 1, sizeof *out.stacks);
    for (size_t i = 0; out.stacks && i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        size_t max = s->nframes * INLINE_DEPTH;
        out.stacks[i] = *s;
        out.stacks[i].frames = max ? malloc(max * sizeof *s->frames) : NULL;
        if (out.stacks[i].frames)
            out.stacks[i].nframes = lt_symbolize_stack(sz, s, out.stacks[i].frames, max, notes);
        else
            out.stacks[i].frames = s->frames;
    }
    if (!out.stacks)
        out.stacks = r->stacks;
    return out;
}

void lt_rep_free_resymbolized(lt_rep *out, const lt_rep *orig)
{
    if (out->stacks == orig->stacks)
        return;
    for (size_t i = 0; i < out->nstacks; i++)
        if (out->stacks[i].frames != orig->stacks[i].frames)
            free(out->stacks[i].frames);
    free(out->stacks);
}

/* ------------------------------------------------------------------------------------------
 * Paths of another machine.
 * ---------------------------------------------------------------------------------------- */
#define MAX_MAPS 32

static struct {
    const char *from, *to;
    size_t from_len;
} maps[MAX_MAPS];
static size_t nmaps;

int lt_path_map_add(const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || nmaps == MAX_MAPS)
        return -1;
    size_t n = (size_t)(eq - spec);
    while (n > 1 && spec[n - 1] == '/')
        n--;
    maps[nmaps].from = spec;
    maps[nmaps].from_len = n;
    maps[nmaps++].to = eq + 1;
    return 0;
}

const char *lt_path_mapped(const char *path, char *buf, size_t size)
{
    for (size_t i = 0; path && i < nmaps; i++) {
        size_t n = maps[i].from_len;
        if (strncmp(path, maps[i].from, n) != 0 || (path[n] != '/' && path[n] != 0))
            continue;
        if ((size_t)snprintf(buf, size, "%s%s", maps[i].to, path + n) < size)
            return buf;
    }
    return path;
}

const char *lt_path_in_tree(const char *path)
{
    for (;;) {
        if (strncmp(path, "./", 2) == 0)
            path += 2;
        else if (strncmp(path, "../", 3) == 0)
            path += 3;
        else
            return path;
    }
}

static FILE *open_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) /* never a FIFO a report names */
        return NULL;
    return fopen(path, "re");
}

FILE *lt_source_open(const char *file, const char *source_root, char *path, size_t size)
{
    if (!file)
        return NULL;
    const char *mapped = lt_path_mapped(file, path, size);
    if (mapped != path)
        snprintf(path, size, "%s", mapped);
    FILE *f = open_regular(mapped);
    if (f || file[0] == '/')
        return f;
    if ((size_t)snprintf(path, size, "%s/%s", source_root, lt_path_in_tree(file)) >= size)
        return NULL;
    return open_regular(path);
}
