/*
 * report_file.c - the evidence that outlives the terminal: with LOCKTRACE_REPORT_DIR, one
 * JSON file per report, <program>.<pid>.<n>.json, written under a temporary name and renamed
 * so a reader never sees half a file (also when the action then aborts); at exit, a
 * <program>.<pid>.summary.json listing every incident; and LOCKTRACE_EXITCODE.
 *
 * Called under the report lock (report.c) or from the exit handler: static buffers, open/
 * write/rename only, no stdio, no allocation. A report too big for the buffer is written
 * with fewer frames per stack; one that cannot be written is said once on stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt_internal.h"
#include "platform.h"
#include "report_data.h"

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso); /* the C runtime's (Itanium ABI) */

#define JSON_BYTES (1024 * 1024)
#define MAX_INCIDENTS (LT_FIND_KIND_COUNT * LT_REPORT_CAP)
#define MIN_FRAMES 4 /* below this a report is not worth shrinking further */

static char json_buf[JSON_BYTES];
static char path[4096], tmp_path[4096];
static unsigned char incidents[MAX_INCIDENTS]; /* kind of report file n (1-based: n-1) */
static size_t nincidents;
static unsigned long counted[LT_FIND_KIND_COUNT], suppressed[LT_FIND_KIND_COUNT];
static int write_failed;

static const char *program_name(void)
{
    static char exe[4096];
    if (!exe[0])
        lt_platform_exe_path(exe, sizeof exe);
    const char *slash = strrchr(exe, '/');
    return slash ? slash + 1 : exe[0] ? exe : "program";
}

/* "<dir>/<prefix><program>.<pid>.<what><suffix>" into buf. */
static void file_name(char *buf, size_t size, const char *prefix, const char *what,
                      const char *suffix)
{
    size_t at = lt_fmt_str(buf, size, 0, lt_cfg.report_dir);
    at = lt_fmt_str(buf, size, at, "/");
    at = lt_fmt_str(buf, size, at, prefix);
    at = lt_fmt_str(buf, size, at, program_name());
    at = lt_fmt_str(buf, size, at, ".");
    at = lt_fmt_dec(buf, size, at, (long)getpid());
    at = lt_fmt_str(buf, size, at, ".");
    at = lt_fmt_str(buf, size, at, what);
    lt_fmt_str(buf, size, at, suffix);
}

/* mkdir -p, quietly: a failure shows when the file cannot be created. */
static void make_dir(const char *dir)
{
    char p[4096];
    size_t n = lt_fmt_str(p, sizeof p, 0, dir);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        mkdir(p, 0777);
        p[i] = c;
    }
}

static void say_once(const char *what, const char *file)
{
    char msg[4200];
    if (write_failed++)
        return;
    size_t at = lt_fmt_str(msg, sizeof msg, 0, "locktrace: cannot write ");
    at = lt_fmt_str(msg, sizeof msg, at, what);
    at = lt_fmt_str(msg, sizeof msg, at, " ");
    at = lt_fmt_str(msg, sizeof msg, at, file);
    at = lt_fmt_str(msg, sizeof msg, at, " (LOCKTRACE_REPORT_DIR); reports go to stderr only\n");
    lt_platform_write(2, msg, at);
}

/* Writes len bytes of json_buf as file `what`, atomically. 0 on success. */
static int write_atomically(const char *what, size_t len)
{
    file_name(path, sizeof path, "", what, ".json");
    file_name(tmp_path, sizeof tmp_path, ".", what, ".json.tmp");
    make_dir(lt_cfg.report_dir);
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        say_once("the report file", tmp_path);
        return -1;
    }
    lt_platform_write(fd, json_buf, len);
    if (close(fd) != 0 || rename(tmp_path, path) != 0) {
        unlink(tmp_path);
        say_once("the report file", path);
        return -1;
    }
    return 0;
}

void lt_report_file_write(const lt_rep *r)
{
    char n[24];
    if (!lt_cfg.report_dir[0] || nincidents == MAX_INCIDENTS)
        return;
    size_t frames = (size_t)-1, len;
    while ((len = lt_rep_format_json(r, json_buf, sizeof json_buf, frames)) >= sizeof json_buf &&
           frames > MIN_FRAMES)
        frames = frames == (size_t)-1 ? 256 : frames / 2;
    if (len >= sizeof json_buf)
        return;
    lt_fmt_dec(n, sizeof n, 0, (long)nincidents + 1);
    if (write_atomically(n, len) == 0)
        incidents[nincidents++] = (unsigned char)r->kind;
}

void lt_report_file_counted(lt_finding_kind kind)
{
    counted[kind]++;
}

void lt_report_file_suppressed(lt_finding_kind kind)
{
    suppressed[kind]++;
}

void lt_report_file_fork_child(void)
{
    nincidents = 0;
    memset(counted, 0, sizeof counted);
    memset(suppressed, 0, sizeof suppressed);
}

/* ------------------------------------------------------------------------------------------
 * At exit.
 * ---------------------------------------------------------------------------------------- */
typedef struct sout {
    size_t at;
} sout;

static void s_put(sout *o, const char *s)
{
    o->at = lt_fmt_str(json_buf, sizeof json_buf, o->at, s);
}

static void s_dec(sout *o, unsigned long v)
{
    o->at = lt_fmt_dec(json_buf, sizeof json_buf, o->at, (long)v);
}

/* {"self-deadlock":1,...} of the kinds with a nonzero count. */
static void s_counts(sout *o, const unsigned long *c)
{
    int first = 1;
    s_put(o, "{");
    for (int k = 0; k < LT_FIND_KIND_COUNT; k++) {
        if (!c[k])
            continue;
        s_put(o, first ? "\"" : ",\"");
        s_put(o, lt_rep_kind_name(k));
        s_put(o, "\":");
        s_dec(o, c[k]);
        first = 0;
    }
    s_put(o, "}");
}

static void s_incidents(sout *o)
{
    char name[4096];
    for (size_t i = 0; i < nincidents; i++) {
        char n[24];
        lt_fmt_dec(n, sizeof n, 0, (long)i + 1);
        file_name(name, sizeof name, "", n, ".json");
        s_put(o, i ? ",{\"file\":\"" : "{\"file\":\"");
        s_put(o, strrchr(name, '/') + 1);
        s_put(o, "\",\"kind\":\"");
        s_put(o, lt_rep_kind_name(incidents[i]));
        s_put(o, "\"}");
    }
}

/* The file names come from the program's name: JSON-safe unless it has quotes or
 * backslashes, in which case the summary lists counts only. */
static void write_summary(void)
{
    sout o = {0};
    int safe = strpbrk(program_name(), "\"\\") == NULL;
    s_put(&o, "{\"locktrace_summary\":1,\"pid\":");
    s_dec(&o, (unsigned long)getpid());
    s_put(&o, ",\"reports\":[");
    if (safe)
        s_incidents(&o);
    s_put(&o, "],\"counts\":");
    s_counts(&o, counted);
    s_put(&o, ",\"suppressed\":");
    s_counts(&o, suppressed);
    s_put(&o, "}\n");
    if (o.at + 1 < sizeof json_buf)
        write_atomically("summary", o.at);
}

static unsigned long total(const unsigned long *c)
{
    unsigned long n = 0;
    for (int k = 0; k < LT_FIND_KIND_COUNT; k++)
        n += c[k];
    return n;
}

/* Runs after every other exit handler and after the libraries' destructors: it is
 * registered with no DSO handle (lt_report_setup), before the C runtime registers the dynamic
 * linker's destructor pass, so it is the last entry of the exit list. The status is changed
 * by calling exit() again from here: C leaves that undefined, but glibc and musl define it
 * (the remaining handlers run, stdio is flushed, the last status given wins). */
static void at_exit(void *unused)
{
    (void)unused;
    unsigned long reports = total(counted);
    lt_tls.busy = 1;
    if (lt_cfg.report_dir[0] && reports + total(suppressed) > 0)
        write_summary();
    lt_tls.busy = 0;
    if (lt_cfg.exitcode && reports > 0)
        exit(lt_cfg.exitcode);
}

void lt_report_setup(void)
{
    if (lt_cfg.suppressions[0])
        lt_suppress_load(lt_cfg.suppressions);
    /* Not atexit(): from a shared library that ties the handler to our DSO, so it would run
     * inside the destructor pass, and exit() there would skip the libraries after us. */
    __cxa_atexit(at_exit, NULL, NULL);
    if (lt_cfg.stats)
        lt_stats_setup();
}
