/*
 * summary.c - the launcher's last line: the report files the program wrote, counted by kind.
 * Those are the files in the report directory that were not there before it started and
 * that name this launcher (launcher_pid): tests run in parallel under launchers of their own
 * share one directory. Thread dumps are counted apart: they were asked for, they are no
 * finding (and no reason for --exitcode).
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

/* A report file: "<program>.<pid>.<n>.json", not a summary, not a temporary. */
static int is_report(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".json") == 0 &&
           !strstr(name, ".summary.json");
}

char **lt_tool_list_reports(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 16;
    char **names = calloc(cap, sizeof *names);
    for (struct dirent *e; d && names && (e = readdir(d)) != NULL;) {
        if (!is_report(e->d_name))
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

/* The "kind" of a report file of this launcher's program into buf, "unreadable" when it has
 * none; NULL when the file names another launcher. */
static const char *kind_of(const char *dir, const char *name, char *buf, size_t size)
{
    char path[4096], err[256];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(buf, size, "unreadable");
    char *text = lt_read_file(path, 64u << 20, &len, err, sizeof err);
    json_doc *doc = text ? json_parse(text, len, err, sizeof err) : NULL;
    const json_value *k = doc ? json_get(json_root(doc), "kind") : NULL;
    const json_value *by = doc ? json_get(json_root(doc), "launcher_pid") : NULL;
    int mine = !by || (by->type == JSON_INT && by->u.integer == (long long)getpid());
    if (k && k->type == JSON_STRING)
        snprintf(buf, size, "%s", k->u.string);
    json_free(doc);
    free(text);
    return mine ? buf : NULL;
}

#define MAX_KINDS 16

typedef struct tally {
    char kind[64];
    int n;
} tally;

int lt_tool_summarize(const char *dir, char **before)
{
    char **now = lt_tool_list_reports(dir);
    tally kinds[MAX_KINDS];
    size_t nkinds = 0;
    int total = 0, dumps = 0;
    for (size_t i = 0; now && now[i]; i++) {
        char kind[64];
        if (listed(before, now[i]) || !kind_of(dir, now[i], kind, sizeof kind))
            continue;
        if (strcmp(kind, "thread-dump") == 0) { /* asked for, not a finding */
            dumps++;
            continue;
        }
        size_t k = 0;
        while (k < nkinds && strcmp(kinds[k].kind, kind) != 0)
            k++;
        if (k == MAX_KINDS)
            k = MAX_KINDS - 1; /* more kinds than there are: lump the rest together */
        if (k == nkinds) {
            snprintf(kinds[k].kind, sizeof kinds[k].kind, "%s", kind);
            kinds[nkinds++].n = 0;
        }
        kinds[k].n++;
        total++;
    }
    lt_tool_free_list(now);
    if (dumps)
        fprintf(stderr, "locktrace: %d thread dump%s in %s/ (read %s with: locktrace report %s)\n",
                dumps, dumps == 1 ? "" : "s", dir, dumps == 1 ? "it" : "them", dir);
    if (!total)
        return 0;
    fprintf(stderr, "locktrace: %d report%s (", total, total == 1 ? "" : "s");
    for (size_t k = 0; k < nkinds; k++)
        fprintf(stderr, "%s%d %s", k ? ", " : "", kinds[k].n, kinds[k].kind);
    fprintf(stderr, ") in %s/ (read them again with: locktrace report FILE...)\n", dir);
    return total;
}
