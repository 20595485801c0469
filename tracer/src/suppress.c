/*
 * suppress.c - LOCKTRACE_SUPPRESSIONS: a file of lines "<kind>:<pattern>", '#' comments (a
 * whole line, or after a rule and a blank) and blank lines. A report of that kind is
 * suppressed when the pattern ('*' matches any run of characters) matches a function name, a
 * module path or base name, or a source file path or base name in any of its frames.
 * Suppressed reports are counted (summary file), not printed. A few built-in rules come
 * first: see builtin[]; what they match is not even counted.
 *
 * The file is read once at load time, where a problem stops the program with the file and
 * line named; matching runs at report time on the loaded rules without allocating.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

typedef struct rule {
    int kind;            /* lt_finding_kind */
    const char *pattern; /* NUL-terminated, inside the loaded file's copy */
} rule;

static rule *rules;
static size_t nrules;

/* Built in: what a widely run program does on purpose, where the report would only ever be
 * noise on its stderr. HotSpot's VM thread ends the JVM at a safepoint it never leaves: it
 * takes Threads_lock in SafepointSynchronize::begin and returns from VMThread::run holding
 * it, so that no Java thread runs again while the launcher exits the process; whether the
 * tracer sees that thread exit first is a race, so every Java program got the report now
 * and then. A later request for that lock is still reported (the lock stays an orphan).
 * Not counted either: a summary file of suppressed counts would be the same noise on disk
 * (a Java program under the launcher left one). */
static const rule builtin[] = {
    {LT_FIND_EXIT_HELD, "SafepointSynchronize::begin()"},
};

/* The file's name and its text are shown (lt_fmt_shown): a binary file's bytes would reach the
 * terminal as they are. detail is n bytes. */
static void fail(const char *path, long line, const char *problem, const char *detail, size_t n)
{
    char msg[4200];
    size_t at = lt_fmt_str(msg, sizeof msg, 0, "locktrace: ");
    at = lt_config_named(msg, sizeof msg, at, "LOCKTRACE_SUPPRESSIONS");
    at = lt_fmt_str(msg, sizeof msg, at, ": ");
    at = lt_fmt_shown(msg, sizeof msg, at, path, strlen(path));
    char cwd[1024];
    if (line == 0 && path[0] != '/' && getcwd(cwd, sizeof cwd)) {
        /* read from the process's directory, which may not be the one it was named in */
        at = lt_fmt_str(msg, sizeof msg, at, " (in ");
        at = lt_fmt_shown(msg, sizeof msg, at, cwd, strlen(cwd));
        at = lt_fmt_str(msg, sizeof msg, at, ")");
    }
    if (line > 0) {
        at = lt_fmt_str(msg, sizeof msg, at, ":");
        at = lt_fmt_dec(msg, sizeof msg, at, line);
    }
    at = lt_fmt_str(msg, sizeof msg, at, ": ");
    at = lt_fmt_str(msg, sizeof msg, at, problem);
    at = lt_fmt_shown(msg, sizeof msg, at, detail, n);
    at = lt_fmt_str(msg, sizeof msg, at, "\n");
    lt_platform_write_err(msg, at);
    _exit(2);
}

/* The whole file, NUL-terminated, in mapped memory that lives as long as the process. */
static char *read_file(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const char *why = fd < 0 ? strerror(errno) : "not a regular file";
        fail(path, 0, "cannot read the file: ", why, strlen(why));
    }
    char *text = lt_platform_map((size_t)st.st_size + 1);
    size_t got = 0, want = (size_t)st.st_size;
    ssize_t n = 1;
    while (text && got < want && (n = read(fd, text + got, want - got)) > 0)
        got += (size_t)n;
    close(fd);
    if (!text || n < 0)
        fail(path, 0, "cannot read the file", "", 0);
    *len = got;
    return text;
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *end = 0;
    return s;
}

/* Where the line's comment starts, else end: at a '#' that begins the line or follows a blank,
 * so a rule may carry one after it (the README's "bad-unlock:legacy_cache_*   # a function"
 * was a pattern that matched nothing), while a '#' inside a name stays part of the pattern
 * (a lambda's "{lambda()#1}"). */
static char *comment_start(char *line, char *end)
{
    for (char *p = line; p < end; p++)
        if (*p == '#' && (p == line || p[-1] == ' ' || p[-1] == '\t'))
            return p;
    return end;
}

/* One line (not NUL-terminated: it ends at end); adds a rule unless it is blank or a comment. */
static void parse_line(const char *path, long lineno, char *line, char *end)
{
    char *stop = comment_start(line, end);
    if (memchr(line, 0, (size_t)(stop - line)))
        fail(path, lineno, "a NUL byte in the line: ", line, (size_t)(stop - line));
    line = trim(line, stop);
    if (!*line)
        return;
    char *colon = strchr(line, ':');
    if (!colon)
        fail(path, lineno, "expected <kind>:<pattern>, got: ", line, strlen(line));
    *colon = 0;
    char *name = trim(line, colon);
    char *pattern = trim(colon + 1, colon + 1 + strlen(colon + 1));
    int kind = lt_rep_lookup(lt_rep_kind_name, name, strlen(name));
    if (kind < 0) {
        /* the kinds listed: a typo ("bad_unlock") or a guess ("*") cannot be mended otherwise
         * without the README at hand */
        char what[1024];
        size_t at = lt_fmt_shown(what, sizeof what, 0, name, strlen(name));
        for (int k = 0; k < LT_FIND_THREAD_DUMP; k++) {
            at = lt_fmt_str(what, sizeof what, at, k ? ", " : " (the kinds: ");
            at = lt_fmt_str(what, sizeof what, at, lt_rep_kind_name(k));
        }
        at = lt_fmt_str(what, sizeof what, at, ")");
        fail(path, lineno, "unknown report kind: ", what, at);
    }
    if (!*pattern)
        fail(path, lineno, "empty pattern after ", name, strlen(name));
    rules[nrules++] = (rule){kind, pattern};
}

void lt_suppress_load(const char *path)
{
    size_t len, lines = 1;
    char *text = read_file(path, &len);
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    rules = lt_platform_map(lines * sizeof *rules);
    if (!rules)
        fail(path, 0, "out of memory", "", 0);
    char *line = text;
    for (long lineno = 1; line <= text + len; lineno++) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        char *end = nl ? nl : text + len;
        parse_line(path, lineno, line, end);
        line = end + 1;
    }
}

/* ------------------------------------------------------------------------------------------
 * Matching.
 * ---------------------------------------------------------------------------------------- */

/* Glob with '*' only; iterative, backtracking to the last star. */
int lt_glob(const char *p, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

/* A path matches by itself or by its base name. */
static int path_matches(const char *pattern, const char *path)
{
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    return lt_glob(pattern, path) || (base && lt_glob(pattern, base + 1));
}

static int frame_matches(const char *pattern, const lt_rep_frame *f)
{
    return (f->function && lt_glob(pattern, f->function)) || path_matches(pattern, f->module) ||
           path_matches(pattern, f->file);
}

static int rule_matches(const rule *ru, const lt_rep *r)
{
    if (ru->kind != (int)r->kind)
        return 0;
    for (size_t i = 0; i < r->nstacks; i++)
        for (size_t k = 0; k < r->stacks[i].nframes; k++)
            if (frame_matches(ru->pattern, &r->stacks[i].frames[k]))
                return 1;
    return 0;
}

int lt_suppress_kind(int kind)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(builtin); i++)
        if (builtin[i].kind == kind)
            return 1;
    for (size_t i = 0; i < nrules; i++)
        if (rules[i].kind == kind)
            return 1;
    return 0;
}

int lt_suppressed(const lt_rep *r)
{
    for (size_t i = 0; i < LT_ARRAY_LEN(builtin); i++)
        if (rule_matches(&builtin[i], r))
            return LT_SEEN_EXPECTED;
    for (size_t i = 0; i < nrules; i++)
        if (rule_matches(&rules[i], r))
            return LT_SEEN_SUPPRESSED;
    return LT_SEEN_REPORT;
}
