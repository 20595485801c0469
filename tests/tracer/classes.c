/*
 * classes.c - lock classes (LOCKTRACE_CLASSES): predicted inversions between locks that never
 * met, and the orders that are none, chosen by name:
 *   classes NAME
 * Every lock is used by one scenario only, and no scenario ever blocks: only the class graph
 * can see the risk. Locks of class "A", "B", "C" are named with locktrace_annotate_class
 * (they also have site classes: each kind is initialised in a function of its own); the
 * "site" scenarios name none. Each prints one line that does not depend on the tracer;
 * meson.build holds the expected reports.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "locktrace.h"

#define NOINLINE __attribute__((noinline))
#define N 8

static pthread_mutex_t a[N], b[N], c[N], s[N], p[N], u[N];
static pthread_rwlock_t r[N], q[N], w[N], v[N];

/* One init site per class, so LOCKTRACE_CLASSES=site sees the same classes unannotated. */
NOINLINE static void init_a(int named)
{
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&a[i], NULL);
        if (named)
            locktrace_annotate_class(&a[i], "A");
    }
}

NOINLINE static void init_b(int named)
{
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&b[i], NULL);
        if (named)
            locktrace_annotate_class(&b[i], "B");
    }
}

NOINLINE static void init_c(int named)
{
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&c[i], NULL);
        if (named)
            locktrace_annotate_class(&c[i], "C");
    }
}

/* A helper that makes every lock of the program: a lock wrapper (LOCKTRACE_WRAPPERS) whose
 * callers name the site classes. */
NOINLINE void make_lock(pthread_mutex_t *m)
{
    pthread_mutex_init(m, NULL);
}

NOINLINE static void init_p(void)
{
    for (int i = 0; i < N; i++)
        make_lock(&p[i]);
}

NOINLINE static void init_u(void)
{
    for (int i = 0; i < N; i++)
        make_lock(&u[i]);
}

NOINLINE static void init_s(void)
{
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&s[i], NULL);
        locktrace_annotate_class(&s[i], "S");
    }
}

/* Reader-preferring (r, q) and writer-preferring (w, v) rwlocks, two classes each. */
NOINLINE static void init_rwlocks(void)
{
    pthread_rwlockattr_t wp;
    pthread_rwlockattr_init(&wp);
    pthread_rwlockattr_setkind_np(&wp, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (int i = 0; i < N; i++) {
        pthread_rwlock_init(&r[i], NULL);
        pthread_rwlock_init(&q[i], NULL);
        pthread_rwlock_init(&w[i], &wp);
        pthread_rwlock_init(&v[i], &wp);
        locktrace_annotate_class(&r[i], "R");
        locktrace_annotate_class(&q[i], "Q");
        locktrace_annotate_class(&w[i], "W");
        locktrace_annotate_class(&v[i], "V");
    }
}

/* x then y, released in reverse. */
NOINLINE static void nest(pthread_mutex_t *x, pthread_mutex_t *y)
{
    pthread_mutex_lock(x);
    pthread_mutex_lock(y);
    pthread_mutex_unlock(y);
    pthread_mutex_unlock(x);
}

NOINLINE static void nest_read(pthread_rwlock_t *x, pthread_rwlock_t *y)
{
    pthread_rwlock_rdlock(x);
    pthread_rwlock_rdlock(y);
    pthread_rwlock_unlock(y);
    pthread_rwlock_unlock(x);
}

/* x, then y by trylock (it is free: it succeeds). */
NOINLINE static void nest_try(pthread_mutex_t *x, pthread_mutex_t *y)
{
    pthread_mutex_lock(x);
    if (pthread_mutex_trylock(y) == 0)
        pthread_mutex_unlock(y);
    pthread_mutex_unlock(x);
}

static pthread_mutex_t *pair_x, *pair_y;

static void *nest_thread(void *arg)
{
    (void)arg;
    nest(pair_x, pair_y);
    return NULL;
}

/* x then y on a thread of its own, joined before this returns. */
static void nest_on_thread(pthread_mutex_t *x, pthread_mutex_t *y)
{
    pthread_t th;
    pair_x = x;
    pair_y = y;
    pthread_create(&th, NULL, nest_thread, NULL);
    pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    int named = strncmp(name, "site-", 5) != 0;
    init_a(named);
    init_b(named);
    init_c(named);
    init_s();
    init_rwlocks();
    init_p();
    init_u();
    if (!strcmp(name, "cycle-2") || !strcmp(name, "site-cycle-2")) {
        nest_on_thread(&a[0], &b[0]); /* A -> B by a0, b0 */
        nest_on_thread(&b[1], &a[1]); /* B -> A by b1, a1: never met a0 or b0 */
    } else if (!strcmp(name, "site-wrapped")) {
        nest(&p[0], &u[0]);
        nest(&u[1], &p[1]);
    } else if (!strcmp(name, "cycle-3")) {
        nest(&a[0], &b[0]);
        nest(&b[1], &c[0]);
        nest(&c[1], &a[1]);
    } else if (!strcmp(name, "no-cycle")) {
        nest(&a[0], &b[0]);
        nest(&b[1], &c[0]);
        nest(&a[1], &c[1]);
    } else if (!strcmp(name, "reuse")) {
        nest(&a[0], &b[0]);
        pthread_mutex_destroy(&a[0]); /* the instance graph forgets both */
        pthread_mutex_destroy(&b[0]);
        pthread_mutex_init(&a[0], NULL);
        pthread_mutex_init(&b[0], NULL);
        locktrace_annotate_class(&a[0], "A");
        locktrace_annotate_class(&b[0], "B");
        nest(&b[0], &a[0]); /* the same addresses, other locks: the classes remember */
    } else if (!strcmp(name, "same-locks")) {
        nest(&a[0], &b[0]); /* the instance graph's inversion: reported once, by it */
        nest(&b[0], &a[0]);
    } else if (!strcmp(name, "read-read")) {
        nest_read(&r[0], &q[0]);
        nest_read(&q[1], &r[1]);
    } else if (!strcmp(name, "read-read-wp")) {
        nest_read(&w[0], &v[0]);
        nest_read(&v[1], &w[1]);
    } else if (!strcmp(name, "trylock")) {
        nest_try(&a[0], &b[0]); /* no edge into b0 */
        nest(&b[1], &a[1]);
    } else if (!strcmp(name, "nest-ascending")) {
        nest(&s[0], &s[1]);
        nest(&s[1], &s[2]);
        nest(&s[0], &s[5]);
        nest(&s[3], &s[7]);
    } else if (!strcmp(name, "nest-both")) {
        nest(&s[0], &s[1]);
        nest(&s[5], &s[2]);
    } else if (!strcmp(name, "nest-same-pair")) {
        nest(&s[0], &s[1]); /* the instance graph's inversion */
        nest(&s[1], &s[0]);
    } else if (!strcmp(name, "nest-declared")) {
        locktrace_annotate_nesting(&s[0], LOCKTRACE_NEST_ADDRESS_ASC);
        nest(&s[0], &s[1]);
        nest(&s[6], &s[4]);
    } else if (!strcmp(name, "nest-declared-desc")) {
        locktrace_annotate_nesting(&s[0], LOCKTRACE_NEST_ADDRESS_DESC);
        nest(&s[6], &s[4]);
        nest(&s[2], &s[1]);
    } else {
        fprintf(stderr, "classes: unknown scenario '%s'\n", name);
        return 2;
    }
    printf("%s done\n", name);
    return 0;
}
