/*
 * summary.c - the launcher's last line: the reports the program wrote, counted by kind, and
 * how many times they occurred. A program image that exited normally wrote a summary file
 * (<program>.<pid>.summary.json) whose counts are taken as they are, so the line and the
 * summary agree (they also count reports past the per-kind cap, which have no file); the
 * report files of an image that left none (it aborted, was killed, or exec'd another) are
 * counted one by one, each with the occurrences it records. An exec keeps the pid: a later
 * image's files carry its image number (report_file.c), so its summary stands for its own. Only files that were not there before the
 * program started and that name this launcher (launcher_pid) count: tests run in parallel
 * under launchers of their own share one directory. Thread dumps are counted apart: they
 * were asked for, they are no finding (and no reason for --exitcode).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "report_read.h"
#include "tool.h"

/* A report or summary file: "<program>.<pid>.[image<k>.]<n>.json", not a temporary. */
static int is_json(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int is_summary(const char *name)
{
    return strstr(name, ".summary.json") != NULL;
}

/* The names in dir: every entry but . and .., or only the report and summary files. */
static char **list(const char *dir, int all)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 16;
    char **names = calloc(cap, sizeof *names);
    for (struct dirent *e; d && names && (e = readdir(d)) != NULL;) {
        if (all ? !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") : !is_json(e->d_name))
            continue;
        if (n + 1 == cap) {
            char **p = realloc(names, (cap *= 2) * sizeof *names);
            if (!p)
                break;
            names = p;
        }
        names[n++] = strdup(e->d_name);
        names[n] = NULL;
    }
    if (d)
        closedir(d);
    return names;
}

char **lt_tool_list_reports(const char *dir)
{
    return list(dir, 0);
}

char **lt_tool_list_all(const char *dir)
{
    return list(dir, 1);
}

void lt_tool_free_list(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static int listed(char **names, const char *name)
{
    for (size_t i = 0; names && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

#define MAX_KINDS 16

typedef struct tally {
    struct {
        char kind[64];
        long reports, occurrences;
    } kinds[MAX_KINDS];
    size_t nkinds;
    long reports, occurrences, dumps;
    struct image {
        long pid, image;
    } *summarized; /* program images whose summary was counted: their report files are in it */
    size_t nsummarized;
} tally;

static void add(tally *t, const char *kind, long reports, long occurrences)
{
    if (strcmp(kind, "thread-dump") == 0) { /* asked for, not a finding */
        t->dumps += reports;
        return;
    }
    size_t k = 0;
    while (k < t->nkinds && strcmp(t->kinds[k].kind, kind) != 0)
        k++;
    if (k == MAX_KINDS)
        k = MAX_KINDS - 1; /* more kinds than there are: lump the rest together */
    if (k == t->nkinds) {
        snprintf(t->kinds[k].kind, sizeof t->kinds[k].kind, "%s", kind);
        t->kinds[t->nkinds++].reports = 0;
        t->kinds[k].occurrences = 0;
    }
    t->kinds[k].reports += reports;
    t->kinds[k].occurrences += occurrences;
    t->reports += reports;
    t->occurrences += occurrences;
}

/* dir/name parsed, NULL when unreadable; *text holds the file's text, to free either way. */
static json_doc *load(const char *dir, const char *name, char **text)
{
    char path[4096], err[256];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *text = lt_read_file(path, 64u << 20, &len, err, sizeof err);
    return *text ? json_parse(*text, len, err, sizeof err) : NULL;
}

/* The file names this launcher (or no launcher: made before launcher_pid existed). */
static int mine(const json_value *root)
{
    const json_value *by = json_get(root, "launcher_pid");
    return !by || (by->type == JSON_INT && by->u.integer == (long long)getpid());
}

static long integer(const json_value *v, long otherwise)
{
    return v && v->type == JSON_INT ? (long)v->u.integer : otherwise;
}

/* The program image a file is of: its pid and, since an exec keeps the pid, its image
 * number (absent in the first image's files). */
static struct image image_of(const json_value *root)
{
    return (struct image){integer(json_get(root, "pid"), -1),
                          integer(json_get(root, "image"), 1)};
}

/* A summary: its process's distinct reports and occurrences per kind. */
static void add_summary(tally *t, const json_value *root)
{
    const json_value *distinct = json_get(root, "distinct"), *counts = json_get(root, "counts");
    if (!distinct || distinct->type != JSON_OBJECT)
        return; /* an older summary: its report files count instead */
    struct image *p = realloc(t->summarized, (t->nsummarized + 1) * sizeof *p);
    if (!p)
        return;
    t->summarized = p;
    t->summarized[t->nsummarized++] = image_of(root);
    for (size_t i = 0; i < distinct->u.object.n; i++) {
        const char *kind = distinct->u.object.members[i].key;
        add(t, kind, integer(distinct->u.object.members[i].value, 0),
            integer(counts ? json_get(counts, kind) : NULL, 0));
    }
}

static int summarized(const tally *t, struct image im)
{
    for (size_t i = 0; i < t->nsummarized; i++)
        if (t->summarized[i].pid == im.pid && t->summarized[i].image == im.image)
            return 1;
    return 0;
}

/* A report file no summary counted: one report, its recorded occurrences (1 when none). */
static void add_report(tally *t, const char *dir, const char *name)
{
    char *text;
    json_doc *doc = load(dir, name, &text);
    const json_value *root = doc ? json_root(doc) : NULL;
    const json_value *k = root ? json_get(root, "kind") : NULL;
    if (!root || (mine(root) && !summarized(t, image_of(root))))
        add(t, k && k->type == JSON_STRING ? k->u.string : "unreadable", 1,
            integer(root ? json_get(root, "occurrences") : NULL, 1));
    json_free(doc);
    free(text);
}

/* The reports of heard beyond those of t, by kind, into missing: reports with no file. */
static void unfiled(const tally *t, const lt_kind_counts *heard, tally *missing)
{
    for (size_t i = 0; heard && i < heard->n; i++) {
        long files = 0;
        for (size_t k = 0; k < t->nkinds; k++)
            if (strcmp(t->kinds[k].kind, heard->k[i].kind) == 0)
                files = t->kinds[k].reports;
        if (heard->k[i].reports > files)
            add(missing, heard->k[i].kind, heard->k[i].reports - files, 0);
    }
}

/* "N report(s) (N kind, N kind" */
static void print_kinds(const tally *t)
{
    fprintf(stderr, "locktrace: %ld report%s (", t->reports, t->reports == 1 ? "" : "s");
    for (size_t k = 0; k < t->nkinds; k++)
        fprintf(stderr, "%s%ld %s", k ? ", " : "", t->kinds[k].reports, t->kinds[k].kind);
}

int lt_tool_summarize(const char *dir, char **before, int say, const lt_kind_counts *heard)
{
    char **now = lt_tool_list_reports(dir);
    tally t = {0};
    for (size_t i = 0; now && now[i]; i++) {
        char *text = NULL;
        json_doc *doc = is_summary(now[i]) && !listed(before, now[i]) ? load(dir, now[i], &text)
                                                                       : NULL;
        if (doc && json_get(json_root(doc), "launcher_pid") && mine(json_root(doc)))
            add_summary(&t, json_root(doc));
        json_free(doc);
        free(text);
    }
    for (size_t i = 0; now && now[i]; i++)
        if (!is_summary(now[i]) && !listed(before, now[i]))
            add_report(&t, dir, now[i]);
    free(t.summarized);
    lt_tool_free_list(now);
    tally missing = {0};
    unfiled(&t, heard, &missing);
    if (!say)
        return (int)(t.reports + missing.reports);
    if (t.dumps)
        fprintf(stderr, "locktrace: %ld thread dump%s in %s/ (read %s with: %s report %s)\n",
                t.dumps, t.dumps == 1 ? "" : "s", dir, t.dumps == 1 ? "it" : "them",
                lt_tool_self, dir);
    if (t.reports) {
        print_kinds(&t);
        fprintf(stderr, "; %ld occurrence%s) in %s/ (read them again with: %s report FILE...)\n",
                t.occurrences, t.occurrences == 1 ? "" : "s", dir, lt_tool_self);
    }
    if (missing.reports) {
        print_kinds(&missing);
        fprintf(stderr, ") %s printed on stderr but %s no file in %s/ (%s could not be "
                        "written there, the tracer said why on stderr; or %s removed)\n",
                missing.reports == 1 ? "was" : "were", missing.reports == 1 ? "has" : "have",
                dir, missing.reports == 1 ? "it" : "they",
                missing.reports == 1 ? "it was" : "they were");
    }
    return (int)(t.reports + missing.reports);
}
