/*
 * report_set.h - the reports `locktrace report` has read, kept together for the formats that
 * take all of them at once (SARIF), and what those formats ask of a report: its re-symbolized
 * frames and where its sources are (which bug a report is: report_identity.c).
 */
#ifndef LT_REPORT_SET_H
#define LT_REPORT_SET_H

#include <stdio.h>

#include "report_read.h"
#include "symbolize.h"

typedef struct lt_report_entry {
    char *path;       /* the file it came from */
    char *text;       /* its contents, owned */
    lt_rep_file *file;
    lt_rep rep;       /* re-symbolized (or as recorded) */
} lt_report_entry;

typedef struct lt_report_set {
    lt_report_entry *items;
    size_t n, cap;
} lt_report_set;

/* Takes ownership of text, f and rep's re-symbolized stacks; 0, or -1 without memory (then
 * the caller keeps them). */
int lt_report_set_add(lt_report_set *set, const char *path, char *text, lt_rep_file *f,
                      const lt_rep *rep);
void lt_report_set_free(lt_report_set *set);

/* A copy of r whose stacks hold re-symbolized frames (inlined calls added); freed with
 * lt_rep_free_resymbolized. Without memory, r's own stacks. */
lt_rep lt_rep_resymbolize(const lt_rep *r, lt_symbolizer *sz, lt_symbolizer_notes *notes);
void lt_rep_free_resymbolized(lt_rep *out, const lt_rep *orig);

/* --path-map OLD=NEW: reports copied from another machine name its paths; a path that
 * starts with OLD (at a '/' boundary) is read at NEW + the rest instead. The first map that
 * matches applies. lt_path_map_add returns -1 for a spec without '='. */
int lt_path_map_add(const char *spec);
const char *lt_path_mapped(const char *path, char *buf, size_t size);

/* A source path relative to a build directory ("../src/a.c") as relative to the top of the
 * tree ("src/a.c"): path past its leading "../" and "./". */
const char *lt_path_in_tree(const char *path);

/* A frame's source file opened for reading: the recorded path (mapped), or, for a path
 * relative to a build directory ("../src/a.c"), the same path under source_root without its
 * leading "../" and "./". NULL when none is a readable regular file. */
FILE *lt_source_open(const char *file, const char *source_root, char *path, size_t size);

/* `locktrace report --sarif`: every report of the set as one SARIF 2.1.0 log on `to`.
 * source_root: the directory source paths are made relative to. 0, or 1 on error. */
int lt_sarif_write(FILE *to, const lt_report_set *set, const char *source_root);

/* `locktrace report --html`: every report of the set as one self-contained HTML page. */
int lt_html_write(FILE *to, const lt_report_set *set, const char *source_root);

#endif
