/*
 * report_read.c - report_read.h: JSON tree -> lt_rep. Every field the formatter relies on is
 * checked (type, range, known name, index within its list); the first problem found is the
 * error, named by its path in the document ("stacks[1].frames[3].ip"). Members this version
 * does not know are ignored, so later additions within version 1 stay readable.
 */
#define _GNU_SOURCE
#include "report_read.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fmt.h"
#include "json.h"

struct lt_rep_file {
    json_doc *doc;
    lt_rep rep;
    lt_rep_frame *frames;
};

/* Reading stops at the first problem: reader.fail jumps back to lt_rep_read. */
typedef struct reader {
    jmp_buf fail;
    char *err;
    size_t errsize;
} reader;

static _Noreturn void bad(reader *rd, const char *path, const char *fmt, ...)
{
    int n = snprintf(rd->err, rd->errsize, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < rd->errsize)
        vsnprintf(rd->err + n, rd->errsize - (size_t)n, fmt, ap);
    va_end(ap);
    longjmp(rd->fail, 1);
}

/* "parent.key" or "parent[i]" into buf (cut when it does not fit: it only names a place). */
static const char *sub(char *buf, size_t size, const char *parent, const char *key, long i)
{
    size_t at = lt_fmt_str(buf, size, 0, parent);
    if (key) {
        at = lt_fmt_str(buf, size, at, parent[0] ? "." : "");
        lt_fmt_str(buf, size, at, key);
    } else {
        at = lt_fmt_str(buf, size, at, "[");
        at = lt_fmt_dec(buf, size, at, i);
        lt_fmt_str(buf, size, at, "]");
    }
    return buf;
}

#define PATH_BYTES 256

static const json_value *field(reader *rd, const json_value *obj, const char *parent,
                               const char *key, json_type type, int nullable, char *path)
{
    const json_value *v = json_get(obj, key);
    sub(path, PATH_BYTES, parent, key, 0);
    if (!v)
        bad(rd, path, "missing");
    if (v->type == type || (nullable && v->type == JSON_NULL))
        return v;
    static const char *const names[] = {"null", "true/false", "an integer", "a number",
                                        "a string", "an array", "an object"};
    bad(rd, path, "expected %s%s, got %s", names[type], nullable ? " or null" : "", names[v->type]);
}

static long long integer(reader *rd, const json_value *obj, const char *parent, const char *key,
                         long long min, long long max)
{
    char path[PATH_BYTES];
    long long v = field(rd, obj, parent, key, JSON_INT, 0, path)->u.integer;
    if (v < min || v > max)
        bad(rd, path, "%lld is out of range %lld..%lld", v, min, max);
    return v;
}

static int boolean(reader *rd, const json_value *obj, const char *parent, const char *key)
{
    char path[PATH_BYTES];
    return field(rd, obj, parent, key, JSON_BOOL, 0, path)->u.boolean;
}

static const char *string(reader *rd, const json_value *obj, const char *parent, const char *key,
                          int nullable)
{
    char path[PATH_BYTES];
    const json_value *v = field(rd, obj, parent, key, JSON_STRING, nullable, path);
    return v->type == JSON_NULL ? NULL : v->u.string;
}

/* A name from one of report_text.c's tables; its index. */
static int name(reader *rd, const json_value *obj, const char *parent, const char *key,
                const char *(*names)(int))
{
    char path[PATH_BYTES];
    const char *s = field(rd, obj, parent, key, JSON_STRING, 0, path)->u.string;
    int i = lt_rep_lookup(names, s, strlen(s));
    if (i < 0)
        bad(rd, path, "unknown value \"%.64s\"", s);
    return i;
}

/* Addresses are "0x" and 1..16 hex digits. */
static uint64_t address(reader *rd, const json_value *obj, const char *parent, const char *key)
{
    char path[PATH_BYTES];
    const char *s = field(rd, obj, parent, key, JSON_STRING, 0, path)->u.string;
    size_t n = strlen(s);
    if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x' ||
        strspn(s + 2, "0123456789abcdefABCDEF") != n - 2)
        bad(rd, path, "expected an address \"0x...\", got \"%.64s\"", s);
    return strtoull(s + 2, NULL, 16);
}

static const json_value *list(reader *rd, const json_value *obj, const char *parent,
                              const char *key, size_t max)
{
    char path[PATH_BYTES];
    const json_value *v = field(rd, obj, parent, key, JSON_ARRAY, 0, path);
    if (v->u.array.n > max)
        bad(rd, path, "more than %zu entries", max);
    return v;
}

static const json_value *item(reader *rd, const json_value *arr, const char *parent, size_t i,
                              char *path)
{
    const json_value *v = arr->u.array.items[i];
    sub(path, PATH_BYTES, parent, NULL, (long)i);
    if (v->type != JSON_OBJECT)
        bad(rd, path, "expected an object");
    return v;
}

static void *table(reader *rd, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        bad(rd, "report", "out of memory");
    return p;
}

/* ------------------------------------------------------------------------------------------
 * The parts of a report.
 * ---------------------------------------------------------------------------------------- */
#define MAX_LIST 100000
#define MAX_IMAGE 1000 /* report_file.c numbers no more images of a pid */

static void read_thread(reader *rd, const json_value *o, const char *at, lt_rep_thread *t)
{
    t->seq = (int)integer(rd, o, at, "seq", -1, 1 << 30);
    t->tid = (int)integer(rd, o, at, "tid", 0, 1 << 30);
    t->name = string(rd, o, at, "name", 0);
    t->gone = boolean(rd, o, at, "gone");
    if (json_get(o, "by_fork")) /* a thread fork left behind; absent = false */
        t->by_fork = boolean(rd, o, at, "by_fork");
}

static void read_lock(reader *rd, const json_value *o, const char *at, lt_rep_lock *l)
{
    char path[PATH_BYTES];
    l->addr = address(rd, o, at, "address");
    l->type = (lt_kind)name(rd, o, at, "type", lt_rep_type_name);
    const json_value *mt = field(rd, o, at, "mutex_type", JSON_STRING, 1, path);
    if (l->type == LT_MUTEX && mt->type == JSON_NULL)
        bad(rd, path, "a mutex needs its mutex_type");
    if (mt->type != JSON_NULL)
        l->mutex_type = name(rd, o, at, "mutex_type", lt_rep_mutex_type_name);
    l->writer_pref = boolean(rd, o, at, "writer_preferring");
    if (json_get(o, "api")) /* added after version 1's first files: absent = pthread */
        l->api = name(rd, o, at, "api", lt_rep_api_name);
    l->held_mode = (lt_mode)name(rd, o, at, "held_mode", lt_rep_mode_name);
    l->req_mode = (lt_mode)name(rd, o, at, "requested_mode", lt_rep_mode_name);
    l->wait = (lt_wait)name(rd, o, at, "wait", lt_rep_wait_name);
    l->generation = (uint32_t)integer(rd, o, at, "generation", 0, UINT32_MAX);
    l->object = address(rd, o, at, "object");
    l->annotation = string(rd, o, at, "annotation", 1);
    if (json_get(o, "name")) /* optional: absent in reports made before locks had names */
        l->name = string(rd, o, at, "name", 1);
    if (json_get(o, "class")) /* optional: absent in reports made before lock classes */
        l->class_name = string(rd, o, at, "class", 1);
    if (json_get(o, "ended") && string(rd, o, at, "ended", 1)) /* optional: absent before */
        l->ended = (lt_ended)name(rd, o, at, "ended", lt_rep_ended_name);
}

static void read_frame(reader *rd, const json_value *o, const char *at, lt_rep_frame *f)
{
    char path[PATH_BYTES];
    f->ip = address(rd, o, at, "ip");
    f->module = string(rd, o, at, "module", 1);
    f->build_id = string(rd, o, at, "build_id", 1);
    if (f->build_id && (strlen(f->build_id) > 128 || strlen(f->build_id) % 2 ||
                        strspn(f->build_id, "0123456789abcdef") != strlen(f->build_id)))
        bad(rd, sub(path, sizeof path, at, "build_id", 0), "expected lowercase hex digits");
    f->module_offset = address(rd, o, at, "module_offset");
    f->function = string(rd, o, at, "function", 1);
    f->function_offset = address(rd, o, at, "function_offset");
    f->file = string(rd, o, at, "file", 1);
    f->line = (int)integer(rd, o, at, "line", 0, 1 << 30);
    f->inlined = boolean(rd, o, at, "inlined");
    if (json_get(o, "wrapper")) /* optional: written when true, absent before 2026-12-03 */
        f->wrapper = boolean(rd, o, at, "wrapper");
}

static void read_stack(reader *rd, const json_value *o, const char *at, lt_rep_stack *s,
                       const lt_rep *r, lt_rep_frame *frames)
{
    char path[PATH_BYTES];
    s->role = string(rd, o, at, "role", 0);
    if (!s->role[0])
        bad(rd, sub(path, sizeof path, at, "role", 0), "empty");
    s->thread = (int)integer(rd, o, at, "thread", -1, (long long)r->nthreads - 1);
    s->lock = (int)integer(rd, o, at, "lock", -1, (long long)r->nlocks - 1);
    s->step = json_get(o, "step") /* absent in reports of the single-thread kinds before it */
                  ? (int)integer(rd, o, at, "step", -1, (long long)r->nsteps - 1)
                  : -1;
    s->partial = boolean(rd, o, at, "partial");
    s->dropped = (size_t)integer(rd, o, at, "dropped", 0, 1 << 30);
    if (json_get(o, "cut")) /* optional: written when cut short, absent before 2026-12-04 */
        s->cut = (lt_rep_cut)name(rd, o, at, "cut", lt_rep_cut_name);
    const json_value *fs = list(rd, o, at, "frames", MAX_LIST);
    char fat[PATH_BYTES];
    sub(fat, sizeof fat, at, "frames", 0);
    s->nframes = fs->u.array.n;
    s->frames = frames;
    for (size_t i = 0; i < s->nframes; i++)
        read_frame(rd, item(rd, fs, fat, i, path), path, &frames[i]);
}

static void read_step(reader *rd, const json_value *o, const char *at, lt_rep_step *s,
                      const lt_rep *r)
{
    long long maxt = (long long)r->nthreads - 1, maxl = (long long)r->nlocks - 1;
    s->thread = (int)integer(rd, o, at, "thread", -1, maxt);
    s->waits_for = name(rd, o, at, "waits_for", lt_rep_waits_for_name);
    s->lock = (int)integer(rd, o, at, "lock", -1, maxl);
    s->from = (int)integer(rd, o, at, "from", -1, maxl);
    s->want_mode = (lt_mode)name(rd, o, at, "wanted_mode", lt_rep_mode_name);
    s->held_mode = (lt_mode)name(rd, o, at, "held_mode", lt_rep_mode_name);
    s->wait = (lt_wait)name(rd, o, at, "wait", lt_rep_wait_name);
    s->blocker = (int)integer(rd, o, at, "blocker", -1, maxt);
    s->waited_ms = (long)integer(rd, o, at, "waited_ms", 0, INT32_MAX);
    s->cond = address(rd, o, at, "condition");
    if (json_get(o, "condition_name")) /* optional: absent before 2026-12-06 */
        s->cond_name = string(rd, o, at, "condition_name", 0);
    if (json_get(o, "api")) /* joins and condition waits; absent = pthread */
        s->api = name(rd, o, at, "api", lt_rep_api_name);
    if (json_get(o, "now_waits")) /* a long-wait holder that waits itself; absent = false */
        s->now_waits = boolean(rd, o, at, "now_waits");
    if (json_get(o, "now_in")) /* what a long-wait holder that waits for no lock does */
        s->now_in = string(rd, o, at, "now_in", 0);
}

/* The cross-thread kinds: the steps that the text is made of (report_data.h). */
static void read_steps(reader *rd, const json_value *root, lt_rep *r)
{
    char path[PATH_BYTES];
    r->warning = (int)integer(rd, root, "", "warning", 0, 2);
    r->one_thread = boolean(rd, root, "", "one_thread");
    r->wait_timeout = (int)integer(rd, root, "", "wait_timeout", 0, 86400);
    const json_value *steps = list(rd, root, "", "steps", MAX_LIST);
    if (steps->u.array.n == 0 && r->kind != LT_FIND_THREAD_DUMP) /* a dump may have no wait */
        bad(rd, "steps", "empty (a %s report lists at least one)", lt_rep_kind_name(r->kind));
    r->nsteps = steps->u.array.n;
    r->steps = table(rd, r->nsteps, sizeof *r->steps);
    for (size_t i = 0; i < r->nsteps; i++)
        read_step(rd, item(rd, steps, "steps", i, path), path, &r->steps[i], r);
}

static size_t count_frames(reader *rd, const json_value *stacks)
{
    size_t n = 0;
    char path[PATH_BYTES];
    for (size_t i = 0; i < stacks->u.array.n; i++) {
        n += list(rd, item(rd, stacks, "stacks", i, path), path, "frames", MAX_LIST)->u.array.n;
        if (n > MAX_LIST)
            bad(rd, "stacks", "more than %d frames in all", MAX_LIST);
    }
    return n;
}

/* A destroy (or a barrier's init) while threads wait: how many. Files written before the count was kept have only
 * the waiters named (at most 64). */
static void read_waiting(reader *rd, const json_value *root, lt_rep *r)
{
    r->waiting = r->waiting_max = (long)r->nthreads - 1;
    if (!json_get(root, "waiting"))
        return;
    r->waiting = (long)integer(rd, root, "", "waiting", 1, INT32_MAX);
    r->waiting_max = (long)integer(rd, root, "", "waiting_max", r->waiting, INT32_MAX);
}

/* De-duplication: the signature (16 hex digits), how often, and the last time. */
static void read_count(reader *rd, const json_value *root, lt_rep *r)
{
    const char *sig = string(rd, root, "", "signature", 0);
    if (strlen(sig) != 16 || strspn(sig, "0123456789abcdef") != 16)
        bad(rd, "signature", "not 16 lowercase hex digits");
    memcpy(r->signature, sig, 17);
    r->occurrences = (unsigned long)integer(rd, root, "", "occurrences", 1, INT64_MAX);
    r->last_time_sec = integer(rd, root, "", "last_time_sec", r->time_sec, INT64_MAX);
    r->last_time_nsec = (long)integer(rd, root, "", "last_time_nsec", 0, 999999999);
}

static void read_header(reader *rd, const json_value *root, lt_rep *r)
{
    char path[PATH_BYTES];
    const json_value *v = json_get(root, "locktrace_report");
    if (root->type != JSON_OBJECT || !v)
        bad(rd, "document", "not a locktrace report (no \"locktrace_report\" member)");
    r->version = (int)field(rd, root, "", "locktrace_report", JSON_INT, 0, path)->u.integer;
    if (v->u.integer != LT_REPORT_VERSION)
        bad(rd, path, "report format version %lld; this locktrace reads version %d",
            v->u.integer, LT_REPORT_VERSION);
    r->kind = (lt_finding_kind)name(rd, root, "", "kind", lt_rep_kind_name);
    r->why = (lt_reason)name(rd, root, "", "reason", lt_rep_reason_name);
    r->outcome = (lt_outcome)name(rd, root, "", "outcome", lt_rep_outcome_name);
    r->time_sec = integer(rd, root, "", "time_sec", 0, INT64_MAX);
    r->time_nsec = (long)integer(rd, root, "", "time_nsec", 0, 999999999);
    r->pid = (int)integer(rd, root, "", "pid", 0, 1 << 30);
    r->program = string(rd, root, "", "program", 0);
    if (json_get(root, "launcher_pid")) /* optional: absent in reports made without it */
        r->launcher_pid = (int)integer(rd, root, "", "launcher_pid", 0, INT32_MAX);
    if (json_get(root, "image")) /* optional: only a later image of its pid has it */
        r->image = (int)integer(rd, root, "", "image", 2, MAX_IMAGE);
    if (json_get(root, "occurrences")) /* optional: absent in thread dumps and older files */
        read_count(rd, root, r);
}

static void read_report(reader *rd, const json_value *root, lt_rep_file *f)
{
    char path[PATH_BYTES];
    lt_rep *r = &f->rep;
    read_header(rd, root, r);
    const json_value *threads = list(rd, root, "", "threads", MAX_LIST);
    if (threads->u.array.n == 0)
        bad(rd, "threads", "empty (the first entry is the thread that found the problem)");
    r->nthreads = threads->u.array.n;
    r->threads = table(rd, r->nthreads, sizeof *r->threads);
    for (size_t i = 0; i < r->nthreads; i++)
        read_thread(rd, item(rd, threads, "threads", i, path), path, &r->threads[i]);
    const json_value *locks = list(rd, root, "", "locks", MAX_LIST);
    r->nlocks = locks->u.array.n;
    r->locks = table(rd, r->nlocks, sizeof *r->locks);
    for (size_t i = 0; i < r->nlocks; i++)
        read_lock(rd, item(rd, locks, "locks", i, path), path, &r->locks[i]);
    if (r->kind >= LT_FIND_DEADLOCK)
        read_steps(rd, root, r);
    if (lt_rep_counts_waiters(r->why))
        read_waiting(rd, root, r);
    const json_value *stacks = list(rd, root, "", "stacks", MAX_LIST);
    r->nstacks = stacks->u.array.n;
    r->stacks = table(rd, r->nstacks, sizeof *r->stacks);
    f->frames = table(rd, count_frames(rd, stacks), sizeof *f->frames);
    for (size_t i = 0, at = 0; i < r->nstacks; at += r->stacks[i++].nframes)
        read_stack(rd, item(rd, stacks, "stacks", i, path), path, &r->stacks[i], r, f->frames + at);
}

/* ---------------------------------------------------------------------------------------- */

/* 0, or -1 when a check failed (the message is in rd->err). */
static int read_guarded(reader *rd, lt_rep_file *f)
{
    if (setjmp(rd->fail))
        return -1;
    read_report(rd, json_root(f->doc), f);
    return 0;
}

/* A file that is not JSON but a report's text as the program printed it (its stderr, kept
 * from a CI log): said so, instead of the parser's "unexpected character 'l'", with where the
 * files are. JSON that does not parse keeps the parser's message. */
static void printed_text(const char *text, size_t len, char *err, size_t errsize)
{
    static const char line[] = "locktrace: ";
    size_t i = 0, n = sizeof line - 1;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i < len && (text[i] == '{' || text[i] == '['))
        return;
    for (size_t at = 0; at + n <= len; at++)
        if ((at == 0 || text[at - 1] == '\n') && memcmp(text + at, line, n) == 0) {
            snprintf(err, errsize, "not a report file but the text of reports as printed; "
                                   "`locktrace report` reads the JSON files of the report "
                                   "directory (./locktrace-reports/ under the launcher, or "
                                   "--report-dir)");
            return;
        }
}

lt_rep_file *lt_rep_read(const char *text, size_t len, char *err, size_t errsize)
{
    reader rd = {.err = err, .errsize = errsize};
    lt_rep_file *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errsize, "out of memory");
        return NULL;
    }
    f->doc = json_parse(text, len, err, errsize);
    if (!f->doc) {
        printed_text(text, len, err, errsize);
        free(f);
        return NULL;
    }
    if (read_guarded(&rd, f) != 0) {
        lt_rep_file_free(f);
        return NULL;
    }
    return f;
}

lt_rep *lt_rep_of(lt_rep_file *f)
{
    return &f->rep;
}

void lt_rep_file_free(lt_rep_file *f)
{
    if (!f)
        return;
    free(f->rep.threads);
    free(f->rep.locks);
    free(f->rep.stacks);
    free(f->rep.steps);
    free(f->frames);
    json_free(f->doc);
    free(f);
}

char *lt_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t errsize)
{
    struct stat st;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errsize, "%s", strerror(errno));
        return NULL;
    }
    const char *problem = fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode) ? "not a regular file"
                          : (size_t)st.st_size > max_bytes ? "too large to be a report" : NULL;
    char *buf = problem ? NULL : malloc((size_t)st.st_size + 1);
    if (!problem && !buf)
        problem = "out of memory";
    *len = buf ? fread(buf, 1, (size_t)st.st_size, fp) : 0;
    if (buf && ferror(fp))
        problem = "read error";
    fclose(fp);
    if (problem) {
        snprintf(err, errsize, "%s", problem);
        free(buf);
        return NULL;
    }
    buf[*len] = 0;
    return buf;
}
