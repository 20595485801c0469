/*
 * order_oracle.c - a randomized differential test of lock-order inversion detection: random
 * lock programs (order_oracle_gen.c) run under the tracer (order_oracle_exec.c), and every
 * report, or its absence, is compared step by step with what a small reference model written
 * from the documented semantics predicts (order_oracle_model.c): a report must come at the
 * step the model says, name one of the cycles the model says (its locks in cycle order,
 * ended locks included), and no report may come where the model has none (or only cycles
 * reported before). Any other report kind is a failure too: the programs are correct.
 *
 *   order_oracle                  the CI seeds (ORDER_ORACLE_PROGRAMS programs, default 300,
 *                                 from seed ORDER_ORACLE_BASE, default 1)
 *   ORDER_ORACLE_PROGRAMS=100000 ORDER_ORACLE_BASE=777 order_oracle    more, other seeds
 *   ORDER_ORACLE_SEED=N order_oracle   the one program of seed N, listed step by step with
 *                                 the reports of each step and, at a failure, the model's graph
 *                                 (ORDER_ORACLE_TRACE=1: and every edge the model makes)
 *   ORDER_ORACLE_TYPES=MASK (bit per lock type, order_oracle.h), ORDER_ORACLE_TIMED=0,
 *   ORDER_ORACLE_TRY=0, ORDER_ORACLE_ENDS=0 (no destroy, init again or free),
 *   ORDER_ORACLE_AGAIN=0 (no lock taken again by its holder): narrower
 *   programs, to tell which rule a failure is about (the same seed makes another program)
 *
 * A failure prints its seed. Run it under the tracer (LD_PRELOAD): meson's test does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "order_oracle.h"
#include "warm_reports.h"

#define INVERSION "locktrace: lock-order-inversion: "
#define MAX_CYCLE 1024

typedef struct totals {
    long programs, failed, steps, reports, ambiguous, beyond;
} totals;

/* The addresses of the cycle a report's first line names, in its order, the closing repeat
 * left out; -1 when the line cannot be read. */
static int cycle_of(const char *line, uintptr_t *addr)
{
    const char *p = strstr(line, "in a cycle (");
    if (!p)
        return -1;
    p += strlen("in a cycle (");
    int n = 0;
    for (;;) {
        char *end;
        if (strncmp(p, "0x", 2) != 0 || n == MAX_CYCLE)
            return -1;
        addr[n++] = (uintptr_t)strtoull(p, &end, 16);
        p = end;
        if (strncmp(p, " \"", 2) == 0) {
            p = strchr(p + 2, '"');
            if (!p)
                return -1;
            p++;
        }
        if (strncmp(p, " -> ", 4) == 0)
            p += 4;
        else if (*p == ')')
            break;
        else
            return -1;
    }
    return n > 1 && addr[n - 1] == addr[0] ? n - 1 : -1;
}

/* The positions of the cycle of n locks whose report (text up to `end`) says they no longer
 * exist: "... (edges A to B), under locks that no longer exist:" names the locks taken by
 * edges A to B-1, which are the cycle's entries A to B-1 (edge k takes entry k, edge n entry
 * 0). Nonzero ended[k] for those. */
static void ended_of(const char *text, const char *end, int n, unsigned char *ended)
{
    static const char tail[] = "), under locks that no longer exist:";
    memset(ended, 0, (size_t)n);
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *e = memmem(p, (size_t)(eol - p), "(edges ", 7);
        int a, b, used = 0;
        if (e && sscanf(e, "(edges %d to %d%n", &a, &b, &used) == 2 &&
            strncmp(e + used, tail, strlen(tail)) == 0)
            for (int k = a; k < b && k < n; k++)
                ended[k] = 1;
        p = eol + 1;
    }
}

static void fail(totals *t, const oracle_program *p, int step, const char *what, const char *text,
                 size_t len, int *failed)
{
    if (!*failed)
        t->failed++;
    *failed = 1;
    printf("FAIL seed %llu step %d: %s\n", (unsigned long long)p->seed, step, what);
    if (len)
        printf("%.*s\n", len > 4000 ? 4000 : (int)len, text);
    printf("  (reproduce: ORDER_ORACLE_SEED=%llu order_oracle)\n", (unsigned long long)p->seed);
}

/* The reports of step i (stderr from `from` to `to`) against the model's verdict. */
static int check_step(totals *t, const oracle_program *p, oracle_model *m, int i, int verdict,
                      const char *text, size_t from, size_t to, int *failed)
{
    static uintptr_t addr[MAX_CYCLE];
    static unsigned char ended[MAX_CYCLE];
    char why[2048];
    int inversions = 0;
    t->ambiguous += verdict == V_MAY;
    for (size_t at = from; at < to;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', to - at);
        size_t next = nl ? (size_t)(nl - text) + 1 : to;
        if (strncmp(line, "locktrace: ", 11) == 0) {
            if (strncmp(line, INVERSION, strlen(INVERSION)) != 0) {
                fail(t, p, i, "a report of another kind", text + from, to - from, failed);
                return 0;
            }
            t->reports++;
            if (++inversions > 1) {
                fail(t, p, i, "two reports at one acquisition", text + from, to - from, failed);
                return 0;
            }
            /* a report whose signature (its edges' stacks) is an earlier one's: a cycle
               through an ended lock whose edges reported before stand for it */
            int again = strncmp(line + strlen(INVERSION), "again (", 7) == 0;
            int n = again ? 0 : cycle_of(line, addr);
            if (n < 0) {
                fail(t, p, i, "a report whose cycle cannot be read", text + from, to - from,
                     failed);
                return 0;
            }
            if (verdict == V_NONE) {
                oracle_model_accept(m, NULL, NULL, -1, why, sizeof why);
                fail(t, p, i, "a report the model has no new cycle for", why, strlen(why),
                     failed);
                printf("%.*s\n", (int)(to - from > 4000 ? 4000 : to - from), text + from);
                return 0;
            }
            if (n > 0)
                ended_of(line, text + to, n, ended);
            if (!oracle_model_accept(m, again ? NULL : addr, ended, n, why, sizeof why)) {
                fail(t, p, i, why, text + from, to - from, failed);
                return 0;
            }
        }
        at = next;
    }
    if (verdict == V_MUST && !inversions) {
        oracle_model_accept(m, NULL, NULL, -1, why, sizeof why);
        fail(t, p, i, "no report where the model has a new cycle", why, strlen(why), failed);
        return 0;
    }
    return 1;
}

static oracle_features features;

static void run_program(totals *t, uint64_t seed, int verbose)
{
    oracle_program p;
    oracle_run r;
    int failed = 0;
    oracle_generate(&p, seed, &features);
    if (verbose)
        oracle_print_program(&p);
    oracle_execute(&p, &r);
    t->programs++;
    if (r.failed_step >= 0) {
        fail(t, &p, r.failed_step, "the step did not return what the generator expected",
             r.text, r.len, &failed);
    } else if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        fail(t, &p, -1, "the program did not end normally", r.text, r.len, &failed);
    } else {
        oracle_model *m = oracle_model_new(&p, &r);
        size_t from = 0;
        oracle_model_trace(m, verbose && getenv("ORDER_ORACLE_TRACE"));
        for (int i = 0; i < p.nsteps && !failed; i++) {
            if (verbose && getenv("ORDER_ORACLE_TRACE"))
                printf("step %d:\n", i);
            int verdict = oracle_model_step(m, i);
            if (oracle_model_beyond(m)) {
                t->beyond++;
                if (verbose)
                    printf("step %d: beyond the tracer's limits: %s\n", i,
                           oracle_model_beyond(m));
                break;
            }
            t->steps++;
            check_step(t, &p, m, i, verdict, r.text, from, r.end[i], &failed);
            if (failed && verbose)
                oracle_model_dump(m);
            from = r.end[i];
        }
        if (!failed && !oracle_model_beyond(m) && from < r.len)
            fail(t, &p, p.nsteps, "output after the last step", r.text + from, r.len - from,
                 &failed);
        oracle_model_free(m);
    }
    if (verbose)
        for (int i = 0, from = 0; i < p.nsteps && r.end[i] <= r.len; from = (int)r.end[i++])
            if (r.end[i] > (size_t)from)
                printf("--- step %d:\n%.*s", i, (int)(r.end[i] - (size_t)from), r.text + from);
    free(r.text);
    free(r.end);
    free(r.base);
    oracle_program_free(&p);
}

static uint64_t env_number(const char *name, uint64_t otherwise)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : otherwise;
}

int main(void)
{
    totals t = {0};
    warm_reports("order_oracle");
    features = (oracle_features){
        .types = (unsigned)env_number("ORDER_ORACLE_TYPES", (1u << TY_COUNT) - 1),
        .timed = (int)env_number("ORDER_ORACLE_TIMED", 1),
        .try = (int)env_number("ORDER_ORACLE_TRY", 1),
        .ends = (int)env_number("ORDER_ORACLE_ENDS", 1),
        .again = (int)env_number("ORDER_ORACLE_AGAIN", 1),
    };
    if (getenv("ORDER_ORACLE_SEED")) {
        run_program(&t, env_number("ORDER_ORACLE_SEED", 0), 1);
    } else {
        uint64_t base = env_number("ORDER_ORACLE_BASE", 1);
        uint64_t count = env_number("ORDER_ORACLE_PROGRAMS", 300);
        for (uint64_t i = 0; i < count; i++)
            run_program(&t, base + i, 0);
    }
    printf("order_oracle: %ld programs, %ld failed (%ld steps compared, %ld reports, %ld steps "
           "where a report and silence were both right, %ld programs past a tracer limit)\n",
           t.programs, t.failed, t.steps, t.reports, t.ambiguous, t.beyond);
    return t.failed != 0;
}
