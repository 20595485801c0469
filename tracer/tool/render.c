/*
 * render.c - `locktrace report [options] FILE|DIR...`: each report file printed as the text
 * the program printed (report_text.c), its frames re-symbolized from the binaries on disk when
 * their build-ids still match; with --json, the same data as normalized JSON; with --sarif or
 * --html, all of them as one SARIF log (sarif.c) or one page (html.c). --path-map OLD=NEW
 * reads the binaries and sources of reports copied from another machine where they are here. A directory stands for
 * the report files in it, summary files skipped; a summary file named by itself stands for the
 * report files it lists, after a note saying what it is. A file that cannot be read
 * as a report is an error naming the file and the problem; the others are still printed.
 * --as-recorded skips re-symbolizing: the frames exactly as the program saw them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "report_read.h"
#include "report_set.h"
#include "symbolize.h"
#include "tool.h"

#define MAX_REPORT_BYTES (64u << 20)

typedef enum { OUT_TEXT, OUT_JSON, OUT_SARIF, OUT_HTML } out_format;

typedef struct options {
    out_format format;
    int as_recorded;
    char source_root[4096]; /* SARIF uris are relative to it (default: the current directory) */
} options;

static void say_note(void *file, const char *line)
{
    fprintf(stderr, "locktrace report: %s: note: %s\n", (const char *)file, line);
}

/* "2026-12-01 05:01:46.123 UTC" */
static const char *utc(int64_t sec, long nsec, char *buf, size_t size)
{
    struct tm tm;
    time_t t = (time_t)sec;
    size_t n = gmtime_r(&t, &tm) ? strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) : 0;
    snprintf(buf + n, size - n, ".%03ld UTC", nsec / 1000000);
    return buf;
}

/* After the text of a report that stands for several occurrences: how many, and when. */
static void print_count(const lt_rep *r)
{
    char first[64], last[64];
    if (r->occurrences > 1)
        printf("  %lu occurrences, first %s, last %s\n", r->occurrences,
               utc(r->time_sec, r->time_nsec, first, sizeof first),
               utc(r->last_time_sec, r->last_time_nsec, last, sizeof last));
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
            if (!json)
                print_count(r);
            return 0;
        }
        free(buf);
        size = (json ? n : size) * 2;
    }
}

/* The files read as reports so far, by device and inode: a summary file named among the
 * arguments stays silent when the reports it lists were read too (the shell's *.json). */
static struct file_id {
    dev_t dev;
    ino_t ino;
} *loaded;
static size_t nloaded;

static void note_loaded(const char *path)
{
    struct stat st;
    struct file_id *p = stat(path, &st) == 0 ? realloc(loaded, (nloaded + 1) * sizeof *p) : NULL;
    if (p) {
        loaded = p;
        loaded[nloaded++] = (struct file_id){st.st_dev, st.st_ino};
    }
}

static int was_loaded(const char *path)
{
    struct stat st;
    for (size_t i = 0; stat(path, &st) == 0 && i < nloaded; i++)
        if (loaded[i].dev == st.st_dev && loaded[i].ino == st.st_ino)
            return 1;
    return 0;
}

/* The summary files named as arguments, read after everything else. */
static char **summaries;
static size_t nsummaries;

/* 1 when text is a summary file (<program>.<pid>.summary.json): not a report, not an error;
 * kept in summaries. */
static int is_summary(const char *path, const char *text, size_t len)
{
    char err[64];
    json_doc *doc = json_parse(text, len, err, sizeof err);
    int yes = doc && json_get(json_root(doc), "locktrace_summary") != NULL;
    json_free(doc);
    char **p = yes ? realloc(summaries, (nsummaries + 1) * sizeof *p) : NULL;
    if (p && (p[nsummaries] = strdup(path)) != NULL)
        summaries = p, nsummaries++;
    return yes;
}

/* One report file: printed (text, JSON) or kept in set (SARIF, HTML). 0, or 1 on error. */
static int load_file(const char *path, const options *o, lt_symbolizer *sz, lt_report_set *set)
{
    char err[512];
    size_t len;
    char *text = lt_read_file(path, MAX_REPORT_BYTES, &len, err, sizeof err);
    lt_rep_file *f = text ? lt_rep_read(text, len, err, sizeof err) : NULL;
    if (!f) {
        int summary = text && is_summary(path, text, len);
        free(text);
        if (summary)
            return 0;
        fprintf(stderr, "locktrace report: %s: %s\n", path, err);
        return 1;
    }
    note_loaded(path);
    lt_rep *r = lt_rep_of(f);
    lt_symbolizer_notes notes = {say_note, (void *)path};
    lt_rep out = sz ? lt_rep_resymbolize(r, sz, &notes) : *r;
    if (o->format == OUT_SARIF || o->format == OUT_HTML) {
        if (lt_report_set_add(set, path, text, f, &out) == 0)
            return 0; /* the set owns them now */
        fprintf(stderr, "locktrace report: %s: out of memory\n", path);
        lt_rep_free_resymbolized(&out, r);
        lt_rep_file_free(f);
        free(text);
        return 1;
    }
    int rc = print(&out, o->format == OUT_JSON);
    lt_rep_free_resymbolized(&out, r);
    lt_rep_file_free(f);
    free(text);
    if (rc)
        fprintf(stderr, "locktrace report: %s: out of memory\n", path);
    return rc ? 1 : 0;
}

/* "N kind, N kind" of a summary's {"kind":N,...} into buf; the sum. */
static long kinds_of(const json_value *counts, char *buf, size_t size)
{
    long sum = 0;
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; counts && counts->type == JSON_OBJECT && i < counts->u.object.n; i++) {
        const json_value *v = counts->u.object.members[i].value;
        long n = v->type == JSON_INT ? (long)v->u.integer : 0;
        sum += n;
        if (at < size)
            at += (size_t)snprintf(buf + at, size - at, "%s%ld %s", at ? ", " : "", n,
                                   counts->u.object.members[i].key);
    }
    return sum;
}

/* Whether entry i of a summary's list of reports names a file beside it (in dir) that is not
 * read yet; its path in file then. */
static int unread_entry(const json_value *reports, size_t i, const char *dir, char *file,
                        size_t size)
{
    const json_value *name = json_get(reports->u.array.items[i], "file");
    return name && name->type == JSON_STRING && !strchr(name->u.string, '/') &&
           (size_t)snprintf(file, size, "%s%s", dir, name->u.string) < size && !was_loaded(file);
}

/* A summary file named as an argument: it is not a report, but says which report files
 * belong to its process; those not read already (from the arguments or a directory) are
 * read now, after a note that says what the file is. Named with its reports (the shell's
 * *.json), it says nothing. It said nothing at all before: `locktrace report X.summary.json`
 * printed nothing and exited 0. */
static int load_summary(const char *path, const options *o, lt_symbolizer *sz,
                        lt_report_set *set)
{
    char err[256], kinds[512], suppressed[512], dir[4096], file[4096 + 256];
    size_t len;
    int status = 0;
    if (was_loaded(path)) /* named twice, or summaries that list each other */
        return 0;
    note_loaded(path);
    char *text = lt_read_file(path, MAX_REPORT_BYTES, &len, err, sizeof err);
    json_doc *doc = text ? json_parse(text, len, err, sizeof err) : NULL;
    const json_value *root = doc ? json_root(doc) : NULL;
    const json_value *reports = root ? json_get(root, "reports") : NULL;
    const json_value *pid = root ? json_get(root, "pid") : NULL;
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + 1) : 0, path);
    size_t listed = reports && reports->type == JSON_ARRAY ? reports->u.array.n : 0, unread = 0;
    for (size_t i = 0; i < listed; i++) {
        if (unread_entry(reports, i, dir, file, sizeof file))
            unread++;
    }
    if (root && listed && !unread) {
        json_free(doc);
        free(text);
        return 0;
    }
    long distinct = kinds_of(root ? json_get(root, "distinct") : NULL, kinds, sizeof kinds);
    long hidden = kinds_of(root ? json_get(root, "suppressed") : NULL, suppressed,
                           sizeof suppressed);
    fprintf(stderr, "locktrace report: %s: a summary file, not a report: process %lld had %ld "
                    "distinct report%s%s%s%s", path,
            pid && pid->type == JSON_INT ? pid->u.integer : -1LL, distinct,
            distinct == 1 ? "" : "s", distinct ? " (" : "", kinds, distinct ? ")" : "");
    if (hidden)
        fprintf(stderr, " and %ld suppressed (%s)", hidden, suppressed);
    if (unread)
        fprintf(stderr, "; %s report file%s follow%s (or give the directory: %s report %s)\n",
                unread == listed ? "its" : "the rest of its", unread == 1 ? "" : "s",
                unread == 1 ? "s" : "", lt_tool_self, dir[0] ? dir : ".");
    else
        fprintf(stderr, "; it lists no report file (suppressed reports, those past the cap of "
                        "100 per kind and those of a program whose name JSON cannot hold as it "
                        "is have none): the report files are %s<program>.<pid>.<n>.json\n",
                dir);
    for (size_t i = 0; i < listed; i++) {
        if (unread_entry(reports, i, dir, file, sizeof file))
            status |= load_file(file, o, sz, set);
    }
    json_free(doc);
    free(text);
    return status;
}

/* Report file names in dir, sorted as versions (prog.9.json before prog.10.json). */
static int by_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(const char *dir, const options *o, lt_symbolizer *sz, lt_report_set *set)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "locktrace report: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int status = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 ||
            strstr(e->d_name, ".summary.json"))
            continue; /* temporaries, other files, summaries */
        if (n == cap) {
            char **p = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (!p)
                break;
            names = p;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_version);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        const char *sep = dir[strlen(dir) - 1] == '/' ? "" : "/";
        if (names[i] &&
            (size_t)snprintf(path, sizeof path, "%s%s%s", dir, sep, names[i]) < sizeof path)
            status |= load_file(path, o, sz, set);
        free(names[i]);
    }
    free(names);
    if (!n)
        fprintf(stderr, "locktrace report: %s: no report files in this directory\n", dir);
    return status;
}

/* Whether dir/name is a directory, kept in found (at most 3) when it is. */
static void look_in(const char *dir, const char *name, char found[][4096], int *n)
{
    struct stat st;
    if (*n < 3 && (size_t)snprintf(found[*n], sizeof found[*n], "%s/%s", dir, name) <
                      sizeof found[*n] &&
        stat(found[*n], &st) == 0 && S_ISDIR(st.st_mode))
        (*n)++;
}

/* The directories one and two levels below the current one that hold a directory named
 * name (dot directories skipped, at most 3 found): tests run by meson, ctest or make run in
 * the build directory or one of its subdirectories, so a relative --report-dir, or the
 * default ./locktrace-reports, lands there and not where the CI step reads it. At most
 * 20000 entries are looked at (run from a home directory, the step must still end soon). */
static int elsewhere(const char *name, char found[][4096])
{
    int n = 0, budget = 20000;
    DIR *top = opendir(".");
    for (struct dirent *e; top && n < 3 && budget > 0 && (e = readdir(top)); budget--) {
        if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
            continue;
        look_in(e->d_name, name, found, &n);
        DIR *sub = opendir(e->d_name);
        for (struct dirent *f; sub && n < 3 && budget > 0 && (f = readdir(sub)); budget--) {
            char in[4096];
            if (f->d_name[0] != '.' && (f->d_type == DT_DIR || f->d_type == DT_UNKNOWN) &&
                (size_t)snprintf(in, sizeof in, "%s/%s", e->d_name, f->d_name) < sizeof in)
                look_in(in, name, found, &n);
        }
        if (sub)
            closedir(sub);
    }
    if (top)
        closedir(top);
    return n;
}

/* A missing report directory, said on stderr; where one of that name lies below the current
 * directory, that is most likely where the tests wrote (README's CI steps read
 * ./locktrace-reports/ from the top of the checkout: ctest, meson test and make check run
 * each test in a build directory, and the step printed an empty SARIF log, silently). */
static void say_missing(const char *arg)
{
    char name[4096], found[3][4096];
    size_t len = strlen(arg);
    while (len > 1 && arg[len - 1] == '/')
        len--;
    const char *base = arg + len;
    while (base > arg && base[-1] != '/')
        base--;
    snprintf(name, sizeof name, "%.*s", (int)(arg + len - base), base);
    fprintf(stderr, "locktrace report: %s: no such directory, so no reports (the tracer makes it "
                    "for the first report)", arg);
    int n = arg[0] != '/' && name[0] && strcmp(name, ".") && strcmp(name, "..")
                ? elsewhere(name, found)
                : 0;
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s/", i ? ", " : "; but there is ", found[i]);
    if (n)
        fprintf(stderr, ": tests run by meson test, ctest or make check write their reports in "
                        "their own working directory, unless the launcher is given an absolute "
                        "--report-dir (--report-dir=$PWD/%s)", name);
    fputc('\n', stderr);
}

/* A report directory that does not exist is an empty one: the tracer makes it only for a
 * first report, so after a clean run `locktrace report --sarif locktrace-reports/` (a CI
 * step) prints an empty log and succeeds. Only a missing *.json file is an error. */
static int load(const char *arg, const options *o, lt_symbolizer *sz, lt_report_set *set)
{
    struct stat st;
    size_t len = strlen(arg);
    int found = stat(arg, &st) == 0;
    if (found && S_ISDIR(st.st_mode))
        return load_dir(arg, o, sz, set);
    if (!found && errno == ENOENT && (len < 5 || strcmp(arg + len - 5, ".json") != 0)) {
        say_missing(arg);
        return 0;
    }
    return load_file(arg, o, sz, set);
}

/* The output form an option names; OUT_TEXT for any other word. */
static out_format format_of(const char *a)
{
    return strcmp(a, "--json") == 0    ? OUT_JSON
           : strcmp(a, "--sarif") == 0 ? OUT_SARIF
           : strcmp(a, "--html") == 0  ? OUT_HTML
                                       : OUT_TEXT;
}

/* The value of option a (--NAME=VALUE, or --NAME then VALUE as the next argument); NULL and
 * a message when there is none (the last argument, or "--"), rather than an empty value
 * that read as "--source-root: : No such file or directory". */
static const char *value_of(const char *a, const char *what, int argc, char **argv, int *i)
{
    const char *eq = strchr(a, '=');
    if (eq)
        return eq + 1;
    if (*i + 1 < argc && strcmp(argv[*i + 1], "--") != 0)
        return argv[++*i];
    fprintf(stderr, "locktrace report: %s needs a value: %s\n", a, what);
    return NULL;
}

/* Options anywhere before a "--" (`locktrace report DIR --html` as well); the files are
 * moved to the front of argv in their order. Returns how many, -1 to stop (status in
 * *status). */
static int parse(int argc, char **argv, options *o, int *status)
{
    int files = 0;
    const char *chosen = NULL; /* one output form per run: a second one is an error */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                argv[files++] = argv[i];
            break;
        }
        if (a[0] != '-' || a[1] != '-')
            argv[files++] = argv[i];
        else if (format_of(a) != OUT_TEXT) {
            if (chosen && strcmp(chosen, a) != 0) {
                fprintf(stderr, "locktrace report: %s and %s: give one of --json, --sarif, "
                                "--html\n", chosen, a);
                *status = 2;
                return -1;
            }
            chosen = a;
            o->format = format_of(a);
        } else if (strcmp(a, "--as-recorded") == 0)
            o->as_recorded = 1;
        else if (strncmp(a, "--path-map=", 11) == 0 || strcmp(a, "--path-map") == 0) {
            const char *spec = value_of(a, "OLD=NEW", argc, argv, &i);
            if (!spec) {
                *status = 2;
                return -1;
            }
            if (lt_path_map_add(spec) != 0) {
                fprintf(stderr, "locktrace report: --path-map wants OLD=NEW (at most 32), got "
                                "'%s'\n", spec);
                *status = 2;
                return -1;
            }
        } else if (strncmp(a, "--source-root=", 14) == 0 || strcmp(a, "--source-root") == 0) {
            const char *dir = value_of(a, "DIR", argc, argv, &i);
            if (!dir) {
                *status = 2;
                return -1;
            }
            if (!realpath(dir, o->source_root)) {
                fprintf(stderr, "locktrace report: --source-root: %s: %s\n", dir, strerror(errno));
                *status = 2;
                return -1;
            }
        }
        else if (strcmp(a, "--help") == 0) {
            fputs(lt_tool_report_usage, stdout);
            *status = 0;
            return -1;
        } else {
            fprintf(stderr, "locktrace report: unknown option %s\n%s", a, lt_tool_report_usage);
            *status = 2;
            return -1;
        }
    }
    return files;
}

int lt_tool_report(int argc, char **argv)
{
    options o = {OUT_TEXT, 0, ""};
    int status = 0;
    if (!getcwd(o.source_root, sizeof o.source_root))
        snprintf(o.source_root, sizeof o.source_root, "/");
    int files = parse(argc, argv, &o, &status);
    if (files < 0)
        return status;
    if (files == 0) {
        fputs(lt_tool_report_usage, stderr);
        return 2;
    }
    lt_symbolizer *sz = o.as_recorded ? NULL : lt_symbolizer_new();
    lt_report_set set = {0};
    for (int i = 0; i < files; i++)
        status |= load(argv[i], &o, sz, &set);
    for (size_t i = 0; i < nsummaries; i++) {
        status |= load_summary(summaries[i], &o, sz, &set);
        free(summaries[i]);
    }
    free(summaries);
    free(loaded);
    if (o.format == OUT_SARIF)
        status |= lt_sarif_write(stdout, &set, o.source_root);
    else if (o.format == OUT_HTML)
        status |= lt_html_write(stdout, &set, o.source_root);
    lt_report_set_free(&set);
    lt_symbolizer_free(sz);
    return status;
}
