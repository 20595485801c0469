/*
 * json.c - the JSON reader of json.h: recursive descent over the text with a depth limit,
 * values and strings bump-allocated from an arena of growing chunks.
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_MEMBERS 4096 /* per object: report objects have about ten */

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

struct json_doc {
    chunk *chunks;
    json_value *root;
};

typedef struct parser {
    const char *p, *start, *end;
    json_doc *doc;
    char *err;
    size_t errsize;
    int failed;
} parser;

/* ---------------------------------------------------------------------------------------- */

static void *arena(parser *ps, size_t size)
{
    chunk *c = ps->doc->chunks;
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!c || c->size - c->used < size) {
        size_t want = size > 65536 ? size : 65536;
        chunk *fresh = malloc(sizeof *fresh + want);
        if (!fresh)
            return NULL;
        *fresh = (chunk){c, 0, want};
        ps->doc->chunks = c = fresh;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

static void *fail(parser *ps, const char *fmt, ...)
{
    if (ps->failed++)
        return NULL;
    int line = 1, col = 1;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++, col++)
        if (*q == '\n') {
            line++;
            col = 0;
        }
    int n = snprintf(ps->err, ps->errsize, "line %d, column %d: ", line, col);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < ps->errsize)
        vsnprintf(ps->err + n, ps->errsize - (size_t)n, fmt, ap);
    va_end(ap);
    return NULL;
}

static json_value *new_value(parser *ps, json_type type)
{
    json_value *v = arena(ps, sizeof *v);
    if (!v)
        return fail(ps, "out of memory");
    memset(v, 0, sizeof *v);
    v->type = type;
    return v;
}

static void skip_space(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return 0;
    ps->p += n;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Strings.
 * ---------------------------------------------------------------------------------------- */
static int hex4(parser *ps, unsigned *out)
{
    *out = 0;
    if (ps->end - ps->p < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        *out = *out * 16 + (unsigned)d;
    }
    return 1;
}

static size_t utf8(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX, with a surrogate pair when it is one; NUL is refused (C strings). */
static size_t unicode_escape(parser *ps, char *out)
{
    unsigned cp, lo;
    if (!hex4(ps, &cp))
        return fail(ps, "bad \\u escape"), 0;
    if (cp >= 0xD800 && cp < 0xDC00) {
        if (!literal(ps, "\\u") || !hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return fail(ps, "unpaired surrogate in \\u escape"), 0;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
        return fail(ps, "unpaired surrogate in \\u escape"), 0;
    }
    if (cp == 0)
        return fail(ps, "\\u0000 in a string"), 0;
    return utf8(cp, out);
}

static size_t escape(parser *ps, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text in a string (truncated?)"), 0;
    char c = *ps->p++;
    if (c == 'u')
        return unicode_escape(ps, out);
    const char *k = strchr(from, c);
    if (!c || !k)
        return fail(ps, "bad escape '\\%c'", c), 0;
    *out = to[k - from];
    return 1;
}

/* The string starting at the opening quote; escapes never make it longer than the source. */
static const char *string(parser *ps)
{
    const char *q = ++ps->p;
    while (q < ps->end && *q != '"')
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    char *out = arena(ps, (size_t)(q - ps->p) + 1), *o = out;
    if (!out)
        return fail(ps, "out of memory");
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) /* JSON's rule; DEL is allowed raw (the writer escapes it) */
            return fail(ps, "control character in a string");
        if (c == '\\') {
            ps->p++;
            size_t n = escape(ps, o);
            if (!n)
                return NULL;
            o += n;
        } else {
            *o++ = (char)c;
            ps->p++;
        }
    }
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text in a string (truncated?)");
    ps->p++;
    *o = 0;
    return out;
}

/* ------------------------------------------------------------------------------------------
 * Numbers: JSON's grammar exactly; integers are kept exact when they fit a long long.
 * ---------------------------------------------------------------------------------------- */
static int digits(parser *ps)
{
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > s;
}

static json_value *number(parser *ps)
{
    const char *s = ps->p;
    int integral = 1;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (!digits(ps))
        return fail(ps, "bad number");
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        integral = 0;
        if (!digits(ps))
            return fail(ps, "bad number");
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        integral = 0;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!digits(ps))
            return fail(ps, "bad number");
    }
    char buf[64];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof buf)
        return fail(ps, "number too long");
    memcpy(buf, s, n);
    buf[n] = 0;
    json_value *v = new_value(ps, integral ? JSON_INT : JSON_REAL);
    if (!v)
        return NULL;
    errno = 0;
    if (integral)
        v->u.integer = strtoll(buf, NULL, 10);
    else
        v->u.real = strtod(buf, NULL);
    if (errno == ERANGE || (!integral && !isfinite(v->u.real)))
        return fail(ps, "number out of range");
    return v;
}

/* ------------------------------------------------------------------------------------------
 * Arrays and objects: items are collected in a growing scratch array, then copied into the
 * arena at their final size.
 * ---------------------------------------------------------------------------------------- */
static json_value *value(parser *ps, int depth);

typedef struct list {
    void *items;
    size_t n, cap, size;
} list;

static int list_add(list *l, const void *item)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        void *p = realloc(l->items, cap * l->size);
        if (!p)
            return 0;
        l->items = p;
        l->cap = cap;
    }
    memcpy((char *)l->items + l->n * l->size, item, l->size);
    l->n++;
    return 1;
}

static void *list_finish(parser *ps, list *l)
{
    void *out = l->n ? arena(ps, l->n * l->size) : NULL;
    if (out)
        memcpy(out, l->items, l->n * l->size);
    free(l->items);
    return out;
}

/* After an item: ',' continues, `close` ends (returns 1 then), anything else is an error. */
static int next_item(parser *ps, char close, int *done)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        return 1;
    }
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        *done = 1;
        return 1;
    }
    if (ps->p >= ps->end)
        fail(ps, "unexpected end of the text (truncated?)");
    else
        fail(ps, "expected ',' or '%c'", close);
    return 0;
}

static int array_item(parser *ps, list *l, int depth)
{
    json_value *item = value(ps, depth + 1);
    return item && (list_add(l, &item) || (fail(ps, "out of memory"), 0));
}

static int has_key(const list *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(((json_member *)l->items)[i].key, key) == 0)
            return 1;
    return 0;
}

/* One "key": value of an object. */
static int member(parser *ps, list *l, int depth)
{
    json_member m;
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text (truncated?)"), 0;
    if (*ps->p != '"')
        return fail(ps, "expected a member name in quotes"), 0;
    if (!(m.key = string(ps)))
        return 0;
    if (l->n == MAX_MEMBERS)
        return fail(ps, "more than %d members in one object", MAX_MEMBERS), 0;
    if (has_key(l, m.key))
        return fail(ps, "duplicate member \"%s\"", m.key), 0;
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text (truncated?)"), 0;
    if (*ps->p != ':')
        return fail(ps, "expected ':' after \"%s\"", m.key), 0;
    ps->p++;
    if (!(m.value = value(ps, depth + 1)))
        return 0;
    return list_add(l, &m) || (fail(ps, "out of memory"), 0);
}

/* An array or object from its opening bracket: items read by `item` until `close`. */
static json_value *container(parser *ps, int depth, json_type type, char close, size_t size,
                             int (*item)(parser *, list *, int))
{
    list l = {NULL, 0, 0, size};
    int done = 0;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        done = 1;
    }
    while (!done) {
        if (!item(ps, &l, depth) || !next_item(ps, close, &done)) {
            free(l.items);
            return NULL;
        }
    }
    size_t n = l.n;
    void *items = list_finish(ps, &l);
    json_value *v = n && !items ? fail(ps, "out of memory") : new_value(ps, type);
    if (v && type == JSON_ARRAY) {
        v->u.array.n = n;
        v->u.array.items = items;
    } else if (v) {
        v->u.object.n = n;
        v->u.object.members = items;
    }
    return v;
}

static json_value *value(parser *ps, int depth)
{
    json_value *v;
    if (depth > MAX_DEPTH)
        return fail(ps, "nested more than %d deep", MAX_DEPTH);
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text (truncated?)");
    switch (*ps->p) {
    case '{': return container(ps, depth, JSON_OBJECT, '}', sizeof(json_member), member);
    case '[': return container(ps, depth, JSON_ARRAY, ']', sizeof(json_value *), array_item);
    case '"': {
        const char *s = string(ps);
        if (s && (v = new_value(ps, JSON_STRING)))
            v->u.string = s;
        return s ? v : NULL;
    }
    case 't': case 'f': {
        int truth = literal(ps, "true");
        if (truth || literal(ps, "false")) {
            if ((v = new_value(ps, JSON_BOOL)))
                v->u.boolean = truth;
            return v;
        }
        break;
    }
    case 'n':
        if (literal(ps, "null"))
            return new_value(ps, JSON_NULL);
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return number(ps);
    }
    if (*ps->p >= 0x20 && *ps->p < 0x7f)
        return fail(ps, "unexpected character '%c'", *ps->p);
    return fail(ps, "unexpected byte 0x%02x (not JSON text: a binary file?)",
                (unsigned)(unsigned char)*ps->p);
}

/* ---------------------------------------------------------------------------------------- */

json_doc *json_parse(const char *text, size_t len, char *err, size_t errsize)
{
    json_doc *doc = calloc(1, sizeof *doc);
    parser ps = {text, text, text + len, doc, err, errsize, 0};
    if (!doc) {
        snprintf(err, errsize, "out of memory");
        return NULL;
    }
    doc->root = value(&ps, 0);
    skip_space(&ps);
    if (doc->root && ps.p != ps.end)
        fail(&ps, "text after the end of the document");
    if (ps.failed) {
        json_free(doc);
        return NULL;
    }
    return doc;
}

const json_value *json_root(const json_doc *doc)
{
    return doc->root;
}

void json_free(json_doc *doc)
{
    if (!doc)
        return;
    for (chunk *c = doc->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

const json_value *json_get(const json_value *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->u.object.n; i++)
        if (strcmp(v->u.object.members[i].key, key) == 0)
            return v->u.object.members[i].value;
    return NULL;
}
