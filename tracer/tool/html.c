/*
 * html.c - `locktrace report --html`: every report as one self-contained page (inline style,
 * no script, nothing fetched): per finding its summary, a drawn graph (SVG) of the threads
 * and locks involved - the wait-for cycle of a deadlock, the lock-order cycle of an inversion,
 * a long wait's waiter and holders, a thread and its lock for the others - then each stack
 * with the source lines around every frame whose file is readable, and the text as printed.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report_set.h"

#define CONTEXT_LINES 3 /* source lines shown before and after a frame's line */
#define MAX_NODES 128
#define MAX_EDGES 256

/* s as HTML text: markup escaped, no control characters, valid UTF-8 (a byte that starts no
 * character becomes U+FFFD). */
static void esc(FILE *to, const char *s)
{
    while (s && *s) {
        unsigned char c = (unsigned char)*s;
        size_t n = lt_utf8_len(s);
        if (c == '<')
            fputs("&lt;", to);
        else if (c == '>')
            fputs("&gt;", to);
        else if (c == '&')
            fputs("&amp;", to);
        else if (c == '"')
            fputs("&quot;", to);
        else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            fputc('?', to); /* report data may hold anything: no control characters */
        else if (n == 0)
            fputs("&#xFFFD;", to);
        else
            fwrite(s, 1, n, to);
        s += n ? n : 1;
    }
}

/* ------------------------------------------------------------------------------------------
 * The graph: threads (ellipses) and locks (boxes) on a circle, in the order the cycle visits
 * them, with an arrow for each wait and each hold.
 * ---------------------------------------------------------------------------------------- */
typedef struct node {
    int thread; /* 1: a thread, 0: a lock */
    int index;  /* into lt_rep.threads or lt_rep.locks */
} node;

typedef struct edge {
    int from, to; /* node indices */
    char label[48];
    int wait;     /* drawn dashed: a wait, not a hold */
} edge;

typedef struct graph {
    node nodes[MAX_NODES];
    edge edges[MAX_EDGES];
    int nnodes, nedges;
} graph;

static int node_of(graph *g, int thread, int index)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].thread == thread && g->nodes[i].index == index)
            return i;
    if (g->nnodes == MAX_NODES)
        return -1;
    g->nodes[g->nnodes] = (node){thread, index};
    return g->nnodes++;
}

static void add_edge(graph *g, int from_thread, int from, int to_thread, int to, int wait,
                     const char *verb, const char *mode)
{
    if (from < 0 || to < 0 || g->nedges == MAX_EDGES)
        return;
    int a = node_of(g, from_thread, from), b = node_of(g, to_thread, to);
    if (a < 0 || b < 0)
        return;
    edge *e = &g->edges[g->nedges++];
    *e = (edge){a, b, "", wait};
    snprintf(e->label, sizeof e->label, "%s%s%s", verb, mode ? " " : "", mode ? mode : "");
}

/* "read" or "write" on an rwlock; nothing on a mutex or spinlock, which have one mode. */
static const char *mode_of(const lt_rep *r, int lock, int mode)
{
    if (lock < 0 || (size_t)lock >= r->nlocks || r->locks[lock].type != LT_RWLOCK)
        return NULL;
    return lt_rep_mode_name(mode);
}

static void build_graph(const lt_rep *r, graph *g)
{
    memset(g, 0, sizeof *g);
    for (size_t i = 0; i < r->nsteps; i++) {
        const lt_rep_step *s = &r->steps[i];
        int wanted = r->kind == LT_FIND_LONG_WAIT ? r->steps[0].lock : s->lock;
        const char *want = mode_of(r, s->lock, s->want_mode);
        const char *held = mode_of(r, r->kind == LT_FIND_INVERSION ? s->from : wanted, s->held_mode);
        if (r->kind == LT_FIND_INVERSION) {
            add_edge(g, 0, s->from, 1, s->thread, 0, "held by", held);
            add_edge(g, 1, s->thread, 0, s->lock, 1, "then wants", want);
        } else if (r->kind == LT_FIND_LONG_WAIT) {
            if (i == 0)
                add_edge(g, 1, s->thread, 0, s->lock, 1, "waits for", want);
            else
                add_edge(g, 0, r->steps[0].lock, 1, s->thread, 0, "held by", held);
        } else if (s->waits_for == LT_FOR_LOCK) {
            add_edge(g, 1, s->thread, 0, s->lock, 1, "waits for", want);
            add_edge(g, 0, s->lock, 1, s->blocker, 0, "held by", held);
        } else {
            add_edge(g, 1, s->thread, 1, s->blocker, 1,
                     s->waits_for == LT_FOR_JOIN ? "joins" : "waits for a signal from", NULL);
        }
    }
    if (r->nsteps || !r->nthreads)
        return;
    for (size_t i = 0; i < r->nlocks; i++) { /* same-thread kinds: thread 0 and its locks */
        const lt_rep_lock *l = &r->locks[i];
        if (l->held_mode != LT_MODE_NONE)
            add_edge(g, 0, (int)i, 1, 0, 0, "held by", mode_of(r, (int)i, l->held_mode));
        if (l->req_mode != LT_MODE_NONE)
            add_edge(g, 1, 0, 0, (int)i, 1, "requests", mode_of(r, (int)i, l->req_mode));
    }
}

static void node_label(FILE *to, const lt_rep *r, const node *n, double x, double y)
{
    char line[96];
    if (n->thread) {
        const lt_rep_thread *t = n->index >= 0 && (size_t)n->index < r->nthreads
                                     ? &r->threads[n->index] : NULL;
        snprintf(line, sizeof line, "T%d (tid %d)", t ? t->seq : -1, t ? t->tid : 0);
        fprintf(to, "<ellipse class=\"thread\" cx=\"%.0f\" cy=\"%.0f\" rx=\"70\" ry=\"28\"/>", x, y);
        fprintf(to, "<text x=\"%.0f\" y=\"%.0f\">", x, y - 3);
        esc(to, line);
        fprintf(to, "</text><text class=\"sub\" x=\"%.0f\" y=\"%.0f\">", x, y + 13);
        esc(to, t && t->name ? t->name : "");
        fputs("</text>", to);
        return;
    }
    const lt_rep_lock *l = n->index >= 0 && (size_t)n->index < r->nlocks ? &r->locks[n->index]
                                                                         : NULL;
    snprintf(line, sizeof line, "%s 0x%llx", l ? lt_rep_type_name(l->type) : "lock",
             l ? (unsigned long long)l->addr : 0ull);
    fprintf(to, "<rect class=\"lock\" x=\"%.0f\" y=\"%.0f\" width=\"170\" height=\"48\" rx=\"4\"/>",
            x - 85, y - 24);
    fprintf(to, "<text x=\"%.0f\" y=\"%.0f\">", x, y - 3);
    esc(to, line);
    fprintf(to, "</text><text class=\"sub\" x=\"%.0f\" y=\"%.0f\">", x, y + 13);
    const char *sub = l ? (l->annotation ? l->annotation : l->name) : NULL; /* what, else where */
    if (sub) {
        char cut[40];
        snprintf(cut, sizeof cut, "%s", sub);
        esc(to, cut);
    }
    fputs("</text>", to);
}

static void draw_graph(FILE *to, const lt_rep *r)
{
    graph *g = malloc(sizeof *g);
    if (!g)
        return;
    build_graph(r, g);
    if (!g->nedges) {
        free(g);
        return;
    }
    double radius = g->nnodes <= 2 ? 110 : 60.0 * g->nnodes / 2, size = 2 * radius + 240;
    double x[MAX_NODES], y[MAX_NODES];
    for (int i = 0; i < g->nnodes; i++) {
        double a = -M_PI / 2 + 2 * M_PI * i / g->nnodes;
        x[i] = size / 2 + radius * cos(a);
        y[i] = size / 2 + radius * sin(a);
    }
    fprintf(to, "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">", size, size, size, size);
    fputs("<title>threads and locks of this report</title><defs><marker id=\"arrow\" "
          "viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" "
          "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\"/></marker></defs>", to);
    for (int i = 0; i < g->nedges; i++) {
        const edge *e = &g->edges[i];
        double dx = x[e->to] - x[e->from], dy = y[e->to] - y[e->from];
        double len = sqrt(dx * dx + dy * dy), cut = len > 100 ? 45 / len : 0;
        if (e->from == e->to)
            continue;
        fprintf(to, "<line class=\"%s\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
                    "marker-end=\"url(#arrow)\"/>", e->wait ? "wait" : "hold",
                x[e->from] + dx * cut, y[e->from] + dy * cut, x[e->to] - dx * cut,
                y[e->to] - dy * cut);
        fprintf(to, "<text class=\"edge\" x=\"%.0f\" y=\"%.0f\">", x[e->from] + dx / 2,
                y[e->from] + dy / 2 - 4);
        esc(to, e->label);
        fputs("</text>", to);
    }
    for (int i = 0; i < g->nnodes; i++)
        node_label(to, r, &g->nodes[i], x[i], y[i]);
    fputs("</svg>\n", to);
    free(g);
}

/* ------------------------------------------------------------------------------------------
 * Stacks, with source.
 * ---------------------------------------------------------------------------------------- */
static void source_around(FILE *to, const lt_rep_frame *f, const char *root)
{
    char path[4096];
    FILE *src = lt_source_open(f->file, root, path, sizeof path);
    if (!src)
        return;
    char line[512];
    fputs("<pre class=\"source\">", to);
    for (int n = 1; fgets(line, sizeof line, src) && n <= f->line + CONTEXT_LINES; n++) {
        if (n < f->line - CONTEXT_LINES)
            continue;
        line[strcspn(line, "\n")] = 0;
        fprintf(to, "<span class=\"%s\">%5d  ", n == f->line ? "here" : "ctx", n);
        esc(to, line);
        fputs("</span>\n", to);
    }
    fputs("</pre>", to);
    fclose(src);
}

static void draw_stack(FILE *to, const lt_rep *r, const lt_rep_stack *s, const char *root)
{
    fputs("<h3>", to);
    esc(to, s->role);
    if (s->thread >= 0 && (size_t)s->thread < r->nthreads) {
        const lt_rep_thread *t = &r->threads[s->thread];
        fprintf(to, " &middot; T%d (tid %d) ", t->seq, t->tid);
        esc(to, t->name);
    }
    fputs(s->partial ? " <small>(frames recorded when it was taken; its callers beyond them then are not "
                     "known now)</small></h3><ol class=\"stack\">"
                     : "</h3><ol class=\"stack\">", to);
    for (size_t i = 0; i < s->nframes; i++) {
        const lt_rep_frame *f = &s->frames[i];
        fputs("<li><code class=\"fn\">", to);
        esc(to, f->inlined ? "(inlined) " : "");
        esc(to, f->function ? f->function : "??");
        fputs("</code> ", to);
        if (f->file) {
            fputs("<span class=\"loc\">", to);
            esc(to, f->file);
            fprintf(to, ":%d</span> ", f->line);
        }
        fputs("<span class=\"mod\">", to);
        esc(to, f->module ? f->module : "?");
        fprintf(to, "+0x%llx</span>", (unsigned long long)f->module_offset);
        if (f->file && f->line > 0)
            source_around(to, f, root);
        fputs("</li>", to);
    }
    fputs("</ol>\n", to);
    if (s->cut == LT_CUT_NO_UNWIND_INFO) /* the same words as the text report's (put_cut) */
        fputs("<p class=\"cut\">... stack cut short: no unwind information for its last frame, "
              "so its callers are not known (-fasynchronous-unwind-tables keeps it)</p>\n",
              to);
}

static void finding(FILE *to, const lt_report_entry *e, size_t n, const char *root)
{
    const lt_rep *r = &e->rep;
    size_t size = 1 << 16;
    char *text = malloc(size);
    if (text) {
        lt_rep_format_text(r, text, size);
        text[size - 1] = 0;
    }
    char *nl = text ? strchr(text, '\n') : NULL;
    fprintf(to, "<section class=\"finding\" id=\"r%zu\"><h2>", n);
    if (nl)
        *nl = 0;
    esc(to, text ? text : lt_rep_kind_name(r->kind));
    if (nl)
        *nl = '\n';
    fputs("</h2><p class=\"meta\">", to);
    esc(to, r->program);
    fprintf(to, ", pid %d &middot; ", r->pid);
    esc(to, e->path);
    if (r->occurrences > 1)
        fprintf(to, " &middot; %lu occurrences", r->occurrences);
    fputs("</p>\n", to);
    draw_graph(to, r);
    for (size_t i = 0; i < r->nstacks; i++)
        draw_stack(to, r, &r->stacks[i], root);
    fputs("<details><summary>the report as printed</summary><pre>", to);
    esc(to, text);
    fputs("</pre></details></section>\n", to);
    free(text);
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}"
    "h2{font-size:16px;font-family:monospace;background:#fdecea;padding:.5em;border-left:4px "
    "solid #c62828;white-space:pre-wrap}h3{font-size:14px;margin:1em 0 .3em}"
    ".meta{color:#666}.stack{font-family:monospace;font-size:13px}.stack li{margin:.2em 0}"
    ".fn{font-weight:bold}.mod{color:#888}.source{background:#f6f8fa;margin:.2em 0;padding:.3em}"
    ".source .here{background:#fff3b0;display:inline-block;width:100%}"
    "svg.graph text{font:12px monospace;text-anchor:middle}svg.graph text.sub{fill:#555}"
    "svg.graph text.edge{fill:#333;font-size:11px}svg.graph .thread{fill:#e3f2fd;stroke:#1565c0}"
    "svg.graph .lock{fill:#fff8e1;stroke:#ef6c00}svg.graph line{stroke:#333;stroke-width:1.5}"
    "svg.graph line.wait{stroke-dasharray:6 4;stroke:#c62828}section{margin-bottom:3em}";

int lt_html_write(FILE *to, const lt_report_set *set, const char *source_root)
{
    fprintf(to, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<title>locktrace: %zu report%s</title><style>%s</style></head><body>\n"
                "<h1>locktrace: %zu report%s</h1><ol class=\"toc\">", set->n,
            set->n == 1 ? "" : "s", style, set->n, set->n == 1 ? "" : "s");
    for (size_t i = 0; i < set->n; i++) {
        fprintf(to, "<li><a href=\"#r%zu\">", i + 1);
        esc(to, lt_rep_kind_name(set->items[i].rep.kind));
        fputs("</a> ", to);
        esc(to, set->items[i].path);
        fputs("</li>", to);
    }
    fputs("</ol>\n", to);
    for (size_t i = 0; i < set->n; i++)
        finding(to, &set->items[i], i + 1, source_root);
    fputs("</body></html>\n", to);
    return fflush(to) != 0 || ferror(to);
}
