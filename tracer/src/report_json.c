/*
 * report_json.c - an lt_rep as one JSON document (schema: docs/report-schema.md). Shared by
 * the tracer, which writes report files with it, and by `locktrace report --json`, which
 * re-emits what it read, so one file is the whole definition of the output side.
 *
 * No allocation and no stdio: the writer fills the caller's buffer and keeps counting past
 * its end, so the caller learns how much it would have needed. Addresses are strings
 * ("0x7f..."), because JSON readers commonly hold numbers as doubles (53 bits).
 */
#include <string.h>

#include "fmt.h"
#include "report_data.h"

typedef struct jout {
    char *buf;
    size_t size, at; /* at may pass size: the length needed */
} jout;

static void emit(jout *j, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, j->at++)
        if (j->at < j->size)
            j->buf[j->at] = s[i];
}

static void raw(jout *j, const char *s) { emit(j, s, strlen(s)); }

/* s as a JSON string: always valid UTF-8, each byte that starts no UTF-8 character replaced
 * by U+FFFD, control characters escaped. */
static void string(jout *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    raw(j, "\"");
    while (*s) {
        unsigned char c = (unsigned char)*s;
        char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
        size_t n = lt_utf8_len(s);
        if (c == '"' || c == '\\')
            emit(j, (const char[]){'\\', (char)c}, 2);
        else if (c < 0x20 || c == 0x7f) /* DEL too: raw, readers and terminals differ */
            raw(j, esc);
        else if (n == 0)
            raw(j, "\xef\xbf\xbd"); /* U+FFFD, as UTF-8: it reads back and re-writes the same */
        else
            emit(j, s, n);
        s += n ? n : 1;
    }
    raw(j, "\"");
}

static void key(jout *j, const char *k, int first)
{
    raw(j, first ? "\"" : ",\"");
    raw(j, k);
    raw(j, "\":");
}

static void kv_str(jout *j, const char *k, const char *v, int first)
{
    key(j, k, first);
    if (v)
        string(j, v);
    else
        raw(j, "null");
}

static void kv_dec(jout *j, const char *k, long long v, int first)
{
    char tmp[24];
    key(j, k, first);
    raw(j, v < 0 ? "-" : "");
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    size_t n = 0;
    do
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
    while (u /= 10);
    emit(j, tmp + sizeof tmp - n, n);
}

static void kv_hex(jout *j, const char *k, uint64_t v, int first)
{
    char tmp[24];
    size_t n = lt_fmt_hex(tmp, sizeof tmp, 0, (uintptr_t)v);
    key(j, k, first);
    raw(j, "\"");
    emit(j, tmp, n);
    raw(j, "\"");
}

static void kv_bool(jout *j, const char *k, int v, int first)
{
    key(j, k, first);
    raw(j, v ? "true" : "false");
}

/* ---------------------------------------------------------------------------------------- */

static void frame(jout *j, const lt_rep_frame *f)
{
    kv_hex(j, "ip", f->ip, 1);
    kv_str(j, "module", f->module, 0);
    kv_str(j, "build_id", f->build_id, 0);
    kv_hex(j, "module_offset", f->module_offset, 0);
    kv_str(j, "function", f->function, 0);
    kv_hex(j, "function_offset", f->function_offset, 0);
    kv_str(j, "file", f->file, 0);
    kv_dec(j, "line", f->line, 0);
    kv_bool(j, "inlined", f->inlined, 0);
    if (f->wrapper)
        kv_bool(j, "wrapper", 1, 0);
}

static void stack(jout *j, const void *item, size_t max_frames)
{
    const lt_rep_stack *s = item;
    size_t n = s->nframes < max_frames ? s->nframes : max_frames;
    kv_str(j, "role", s->role, 1);
    kv_dec(j, "thread", s->thread, 0);
    kv_dec(j, "lock", s->lock, 0);
    kv_dec(j, "step", s->step, 0);
    kv_bool(j, "partial", s->partial, 0);
    kv_dec(j, "dropped", (long long)(s->dropped + s->nframes - n), 0);
    /* why the unwind stopped at the last frame listed: written only when cut short, and not
     * when frames are left out (the last one listed is then not where it stopped) */
    if (s->cut != LT_CUT_NONE && n == s->nframes)
        kv_str(j, "cut", lt_rep_cut_name(s->cut), 0);
    key(j, "frames", 0);
    raw(j, "[");
    for (size_t i = 0; i < n; i++) {
        raw(j, i ? ",{" : "{");
        frame(j, &s->frames[i]);
        raw(j, "}");
    }
    raw(j, "]");
}

static void lock(jout *j, const void *item, size_t unused)
{
    const lt_rep_lock *l = item;
    (void)unused;
    kv_hex(j, "address", l->addr, 1);
    kv_str(j, "type", lt_rep_type_name(l->type), 0);
    kv_str(j, "mutex_type", l->type == LT_MUTEX ? lt_rep_mutex_type_name(l->mutex_type) : NULL, 0);
    kv_bool(j, "writer_preferring", l->writer_pref, 0);
    kv_str(j, "api", lt_rep_api_name(l->api), 0);
    kv_str(j, "held_mode", lt_rep_mode_name(l->held_mode), 0);
    kv_str(j, "requested_mode", lt_rep_mode_name(l->req_mode), 0);
    kv_str(j, "wait", lt_rep_wait_name(l->wait), 0);
    kv_dec(j, "generation", l->generation, 0);
    kv_hex(j, "object", l->object, 0);
    kv_str(j, "annotation", l->annotation, 0);
    kv_str(j, "name", l->name, 0);
    kv_str(j, "class", l->class_name, 0);
    kv_str(j, "ended", l->ended ? lt_rep_ended_name(l->ended) : NULL, 0);
}

static void step(jout *j, const void *item, size_t unused)
{
    const lt_rep_step *s = item;
    (void)unused;
    kv_dec(j, "thread", s->thread, 1);
    kv_str(j, "waits_for", lt_rep_waits_for_name(s->waits_for), 0);
    if (s->waits_for != LT_FOR_LOCK)
        kv_str(j, "api", lt_rep_api_name(s->api), 0);
    kv_dec(j, "lock", s->lock, 0);
    kv_dec(j, "from", s->from, 0);
    kv_str(j, "wanted_mode", lt_rep_mode_name(s->want_mode), 0);
    kv_str(j, "held_mode", lt_rep_mode_name(s->held_mode), 0);
    kv_str(j, "wait", lt_rep_wait_name(s->wait), 0);
    kv_dec(j, "blocker", s->blocker, 0);
    kv_dec(j, "waited_ms", s->waited_ms, 0);
    kv_hex(j, "condition", s->cond, 0);
    if (s->cond_name)
        kv_str(j, "condition_name", s->cond_name, 0);
    if (s->now_waits)
        kv_bool(j, "now_waits", 1, 0);
    if (s->now_in)
        kv_str(j, "now_in", s->now_in, 0);
}

static void thread(jout *j, const void *item, size_t unused)
{
    const lt_rep_thread *t = item;
    (void)unused;
    kv_dec(j, "seq", t->seq, 1);
    kv_dec(j, "tid", t->tid, 0);
    kv_str(j, "name", t->name, 0);
    kv_bool(j, "gone", t->gone, 0);
    if (t->by_fork)
        kv_bool(j, "by_fork", 1, 0);
}

/* NUL-terminates what fits; the length needed. */
static size_t end(jout *j)
{
    if (j->at < j->size)
        j->buf[j->at] = 0;
    return j->at;
}

/* "[{...},{...}]" of n items of `stride` bytes, each written by fn, as the value of key k. */
static void list(jout *j, const char *k, const void *items, size_t n, size_t stride,
                 void (*fn)(jout *, const void *, size_t), size_t arg)
{
    key(j, k, 0);
    raw(j, "[");
    for (size_t i = 0; i < n; i++) {
        raw(j, i ? ",{" : "{");
        fn(j, (const char *)items + i * stride, arg);
        raw(j, "}");
    }
    raw(j, "]");
}

size_t lt_rep_format_json(const lt_rep *r, char *buf, size_t size, size_t max_frames)
{
    jout j = {buf, size, 0};
    raw(&j, "{");
    kv_dec(&j, "locktrace_report", r->version, 1);
    kv_str(&j, "kind", lt_rep_kind_name(r->kind), 0);
    kv_str(&j, "reason", lt_rep_reason_name(r->why), 0);
    kv_str(&j, "outcome", lt_rep_outcome_name(r->outcome), 0);
    kv_dec(&j, "time_sec", r->time_sec, 0);
    kv_dec(&j, "time_nsec", r->time_nsec, 0);
    kv_dec(&j, "pid", r->pid, 0);
    kv_str(&j, "program", r->program, 0);
    kv_dec(&j, "launcher_pid", r->launcher_pid, 0);
    if (r->image > 1)
        kv_dec(&j, "image", r->image, 0);
    list(&j, "threads", r->threads, r->nthreads, sizeof *r->threads, thread, 0);
    list(&j, "locks", r->locks, r->nlocks, sizeof *r->locks, lock, 0);
    list(&j, "stacks", r->stacks, r->nstacks, sizeof *r->stacks, stack, max_frames);
    if (lt_rep_counts_waiters(r->why)) {
        kv_dec(&j, "waiting", r->waiting, 0);
        kv_dec(&j, "waiting_max", r->waiting_max, 0);
    }
    if (r->kind >= LT_FIND_DEADLOCK) {
        kv_dec(&j, "warning", r->warning, 0);
        kv_bool(&j, "one_thread", r->one_thread, 0);
        kv_dec(&j, "wait_timeout", r->wait_timeout, 0);
        list(&j, "steps", r->steps, r->nsteps, sizeof *r->steps, step, 0);
    }
    if (!r->occurrences) {
        raw(&j, "}\n");
        return end(&j);
    }
    char sig[17];
    lt_rep_signature(r, sig);
    kv_str(&j, "signature", sig, 0);
    j.at += lt_rep_format_json_count(r, j.at < size ? buf + j.at : NULL,
                                     j.at < size ? size - j.at : 0);
    return end(&j);
}

/* Last in the document, so that the tracer can rewrite it alone on every repeat. */
size_t lt_rep_format_json_count(const lt_rep *r, char *buf, size_t size)
{
    jout j = {buf, size, 0};
    kv_dec(&j, "occurrences", (long long)r->occurrences, 0);
    kv_dec(&j, "last_time_sec", r->last_time_sec, 0);
    kv_dec(&j, "last_time_nsec", r->last_time_nsec, 0);
    raw(&j, "}\n");
    return end(&j);
}
