/*
 * sarif.c - `locktrace report --sarif`: the reports as one SARIF 2.1.0 log, in the shape
 * GitHub code scanning reads: one rule per report kind, one result per report with
 * ruleId = kind, the first line of the report as its message, the program's frame of the
 * primary stack (report_set.c) as its location (an artifact uri relative to the source root
 * and a start line), every other stack's frame as a related location, every stack whole as a
 * SARIF stack, the dedup signature as its partial fingerprint and the tracer's count of
 * occurrences as its occurrenceCount.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "report_set.h"

/* v2: the signature the tracer de-duplicates by (report_identity.c), source lines included */
#define SIGNATURE_KEY "locktraceSignature/v3"

typedef struct rule_text {
    const char *kind, *name, *level, *text;
} rule_text;

/* Kinds without an entry get a generic rule: a kind added to the tracer still gets results. */
static const rule_text rules[] = {
    {"self-deadlock", "SelfDeadlock", "error",
     "A thread requests a lock it already holds in a way that can never be granted."},
    {"bad-unlock", "BadUnlock", "warning", "A thread unlocks a lock it does not hold."},
    {"destroy-held", "DestroyHeld", "warning", "A lock is destroyed while it is held."},
    {"use-after-destroy", "UseAfterDestroy", "warning",
     "A mutex is locked or unlocked after it was destroyed."},
    {"exit-held", "ExitHeld", "warning", "A thread exits holding locks; they are orphaned."},
    {"condvar-misuse", "CondvarMisuse", "warning",
     "A condition variable is destroyed while waited on, used with two mutexes, or waited on "
     "with a mutex not held."},
    {"barrier-misuse", "BarrierMisuse", "warning",
     "A barrier is destroyed, or initialised again, while threads wait in a round not "
     "complete."},
    {"deadlock", "Deadlock", "error", "Threads wait for each other in a cycle."},
    {"lock-order-inversion", "LockOrderInversion", "warning",
     "Locks are taken in orders that form a cycle: a potential deadlock."},
    {"long-wait", "LongWait", "warning", "A thread waited longer than the configured time."},
};

static const rule_text *rule_for(const char *kind)
{
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (strcmp(rules[i].kind, kind) == 0)
            return &rules[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * JSON output.
 * ---------------------------------------------------------------------------------------- */
/* s as a JSON string: valid UTF-8 (a byte that starts no character becomes U+FFFD), control
 * characters escaped, as report_json.c writes them. */
static void str(FILE *to, const char *s)
{
    fputc('"', to);
    while (s && *s) {
        unsigned char c = (unsigned char)*s;
        size_t n = lt_utf8_len(s);
        if (c == '"' || c == '\\')
            fprintf(to, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(to, "\\u%04x", c);
        else if (n == 0)
            fputs("\xef\xbf\xbd", to); /* U+FFFD */
        else
            fwrite(s, 1, n, to);
        s += n ? n : 1;
    }
    fputc('"', to);
}

/* path percent-encoded as a URI path (RFC 3986 unreserved characters and '/' stay). */
static char *encode(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(strlen(path) * 3 + 1), *o = out;
    for (; out && *path; path++) {
        unsigned char c = (unsigned char)*path;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/", c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    if (out)
        *o = 0;
    return out;
}

/* A source path relative to root ("../src/a.c" from a build directory is "src/a.c"); NULL
 * when the path is absolute outside root. */
static const char *tree_path(const char *path, const char *root)
{
    size_t rn = strlen(root);
    while (rn > 1 && root[rn - 1] == '/')
        rn--;
    if (path[0] == '/') {
        if (strncmp(path, root, rn) != 0 || path[rn] != '/')
            return NULL;
        path += rn + 1;
    }
    return lt_path_in_tree(path);
}

/* The path as a URI reference relative to root; NULL when it is outside. */
static char *relative_uri(const char *path, const char *root)
{
    const char *rel = tree_path(path, root);
    return rel ? encode(rel) : NULL;
}

/* Whether frame f's source file is a file of the tree at root. */
static int in_tree(const lt_rep_frame *f, const char *root)
{
    const char *rel = f->file && f->line > 0 ? tree_path(f->file, root) : NULL;
    char path[4096];
    return rel && (size_t)snprintf(path, sizeof path, "%s/%s", root, rel) < sizeof path &&
           access(path, R_OK) == 0;
}

/* Where a stack is located: the program's frame (past lock wrappers), or, when its source is
 * no file of the tree, the first frame below it whose source is (code scanning shows only the
 * repository's files). A std::async future's get() joins its thread through libstdc++'s
 * headers inlined into the program (<future>, <mutex>, invoke.h) and libc's pthread_once:
 * such a deadlock's result had no location. */
static const lt_rep_frame *located(const lt_rep_stack *s, const char *root)
{
    const lt_rep_frame *own = lt_rep_source_frame(s);
    for (const lt_rep_frame *f = own; f && f < s->frames + s->nframes; f++)
        if (in_tree(f, root))
            return f;
    return own;
}

/* "physicalLocation":{...} for frame f; 0 when it has no usable source location. */
static int physical(FILE *to, const lt_rep_frame *f, const char *root)
{
    char *uri = f && f->file ? relative_uri(f->file, root) : NULL;
    if (!uri)
        return 0;
    fputs("\"physicalLocation\":{\"artifactLocation\":{\"uri\":", to);
    str(to, uri);
    fprintf(to, ",\"uriBaseId\":\"%%SRCROOT%%\"},\"region\":{\"startLine\":%d}}", f->line);
    free(uri);
    return 1;
}

/* A location object for frame f: its source line when it has one under root, its function
 * always; with id >= 0 and msg, as a related location. */
static void location(FILE *to, const lt_rep_frame *f, const char *root, int id, const char *msg)
{
    fputc('{', to);
    if (id >= 0)
        fprintf(to, "\"id\":%d,", id);
    if (physical(to, f, root))
        fputc(',', to);
    fputs("\"logicalLocations\":[{\"fullyQualifiedName\":", to);
    str(to, f->function ? f->function : "?");
    fputs(",\"kind\":\"function\"}]", to);
    if (msg) {
        fputs(",\"message\":{\"text\":", to);
        str(to, msg);
        fputc('}', to);
    }
    fputc('}', to);
}

/* The first line of the report's text, without "locktrace: <kind>: ". */
static char *summary_line(const lt_rep *r)
{
    size_t size = 1 << 16;
    char *buf = malloc(size);
    if (!buf)
        return NULL;
    lt_rep_format_text(r, buf, size);
    buf[size - 1] = 0;
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = 0;
    char *text = buf;
    if (strncmp(text, "locktrace: ", 11) == 0)
        text += 11;
    const char *kind = lt_rep_kind_name(r->kind);
    if (strncmp(text, kind, strlen(kind)) == 0 && strncmp(text + strlen(kind), ": ", 2) == 0)
        text += strlen(kind) + 2;
    memmove(buf, text, strlen(text) + 1);
    return buf;
}

static const char *thread_label(const lt_rep *r, int t, char *buf, size_t size)
{
    if (t < 0 || (size_t)t >= r->nthreads)
        return "";
    const lt_rep_thread *th = &r->threads[t];
    snprintf(buf, size, " of T%d (tid %d)%s%s%s", th->seq, th->tid, th->name ? " \"" : "",
             th->name ? th->name : "", th->name ? "\"" : "");
    return buf;
}

/* Every stack but the primary one as a related location at its first source frame. */
static void related(FILE *to, const lt_rep *r, const lt_rep_stack *primary, const char *root)
{
    int id = 0;
    fputs(",\"relatedLocations\":[", to);
    for (size_t i = 0; i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        const lt_rep_frame *f = located(s, root);
        char label[160], msg[400];
        if (s == primary || !f)
            continue;
        snprintf(msg, sizeof msg, "%s stack%s: %s", s->role,
                 thread_label(r, s->thread, label, sizeof label), f->function ? f->function : "?");
        if (id)
            fputc(',', to);
        location(to, f, root, id++, msg);
    }
    fputc(']', to);
}

/* Every stack whole, as SARIF stacks (role and thread as the message, and, for a stack cut
 * short, why: the text report's line after its frames). */
static void stacks(FILE *to, const lt_rep *r, const char *root)
{
    fputs(",\"stacks\":[", to);
    for (size_t i = 0; i < r->nstacks; i++) {
        const lt_rep_stack *s = &r->stacks[i];
        char label[160], msg[400];
        snprintf(msg, sizeof msg, "%s%s%s", s->role,
                 thread_label(r, s->thread, label, sizeof label),
                 s->cut == LT_CUT_NO_UNWIND_INFO
                     ? " (stack cut short: no unwind information for its last frame, so its "
                       "callers are not known)"
                     : "");
        fputs(i ? ",{\"message\":{\"text\":" : "{\"message\":{\"text\":", to);
        str(to, msg);
        fputs("},\"frames\":[", to);
        for (size_t k = 0; k < s->nframes; k++) {
            const lt_rep_frame *f = &s->frames[k];
            fputs(k ? ",{\"location\":" : "{\"location\":", to);
            location(to, f, root, -1, NULL);
            if (f->module) {
                fputs(",\"module\":", to);
                str(to, f->module);
            }
            fprintf(to, ",\"properties\":{\"moduleOffset\":\"0x%llx\"}}",
                    (unsigned long long)f->module_offset);
        }
        fputs("]}", to);
    }
    fputc(']', to);
}

static void result(FILE *to, const lt_report_entry *e, int index, int rule_index,
                   const char *root)
{
    const lt_rep *r = &e->rep;
    const char *kind = lt_rep_kind_name(r->kind);
    const rule_text *rt = rule_for(kind);
    const lt_rep_stack *primary = lt_rep_primary_stack(r);
    const lt_rep_frame *where = located(primary, root);
    char sig[17], *msg = summary_line(r);
    lt_rep_signature(r, sig);
    fprintf(to, "%s{\"ruleId\":", index ? "," : "");
    str(to, kind);
    fprintf(to, ",\"ruleIndex\":%d,\"level\":\"%s\",\"message\":{\"text\":", rule_index,
            rt ? rt->level : "warning");
    str(to, msg ? msg : kind);
    free(msg);
    fputs("},\"locations\":[", to);
    if (where)
        location(to, where, root, -1, NULL);
    fputs("]", to);
    related(to, r, primary, root);
    stacks(to, r, root);
    fputs(",\"partialFingerprints\":{\"" SIGNATURE_KEY "\":", to);
    str(to, sig);
    fputs("}", to);
    if (r->occurrences)
        fprintf(to, ",\"occurrenceCount\":%lu", r->occurrences);
    fputs(",\"properties\":{\"reportFile\":", to);
    str(to, e->path);
    fprintf(to, ",\"pid\":%d}}", r->pid);
}

int lt_sarif_write(FILE *to, const lt_report_set *set, const char *source_root)
{
    const char *kinds[64];
    size_t nkinds = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (set->items[i].rep.kind == LT_FIND_THREAD_DUMP)
            continue;
        const char *k = lt_rep_kind_name(set->items[i].rep.kind);
        size_t j = 0;
        while (j < nkinds && strcmp(kinds[j], k) != 0)
            j++;
        if (j == nkinds && nkinds < sizeof kinds / sizeof *kinds)
            kinds[nkinds++] = k;
    }
    fputs("{\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"version\":\"2.1.0\","
          "\"runs\":[{\"tool\":{\"driver\":{\"name\":\"locktrace\",\"version\":\"" LT_VERSION
          "\",\"rules\":[", to);
    for (size_t j = 0; j < nkinds; j++) {
        const rule_text *rt = rule_for(kinds[j]);
        fputs(j ? ",{\"id\":" : "{\"id\":", to);
        str(to, kinds[j]);
        fputs(",\"name\":", to);
        str(to, rt ? rt->name : kinds[j]);
        fputs(",\"shortDescription\":{\"text\":", to);
        str(to, rt ? rt->text : kinds[j]);
        fprintf(to, "},\"defaultConfiguration\":{\"level\":\"%s\"}}", rt ? rt->level : "warning");
    }
    fputs("]}},\"originalUriBaseIds\":{\"%SRCROOT%\":{\"uri\":", to);
    char *root = encode(source_root);
    fputs("\"file://", to);
    fputs(root ? root : "", to);
    fputs(root && root[0] && root[strlen(root) - 1] == '/' ? "\"" : "/\"", to);
    free(root);
    fputs("}},\"results\":[", to);
    for (size_t i = 0, n = 0; i < set->n; i++) {
        if (set->items[i].rep.kind == LT_FIND_THREAD_DUMP)
            continue; /* a dump is no finding: nothing for code scanning to track */
        const char *k = lt_rep_kind_name(set->items[i].rep.kind);
        int rule_index = 0;
        while ((size_t)rule_index < nkinds && strcmp(kinds[rule_index], k) != 0)
            rule_index++;
        result(to, &set->items[i], (int)n++, rule_index, source_root);
    }
    fputs("]}]}\n", to);
    return fflush(to) != 0 || ferror(to);
}
