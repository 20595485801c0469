/*
 * deadlock.c - the in-place deadlock of candle, reproduced with tensorlib, one mode per
 * argument. Each step is printed (and flushed) before it runs, so a hang shows where it is.
 *
 * Run it plain to see what libc alone does (glibc returns EDEADLK for write-then-read, hangs
 * for read-then-write), and under locktrace to see the report instead:
 *   build/demo/deadlock self
 *   build/tracer/locktrace -- build/demo/deadlock self
 *
 * The scenario functions are global and never inlined so that stack traces name them.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"

enum {
    EXIT_OP_FAILED = 1,   /* a tensorlib call returned an error (printed) */
    EXIT_USAGE = 2,
    EXIT_NO_METAL = 3,    /* metal-self on a machine without Metal */
};

#define DEMO_FN __attribute__((noinline))

static void step(const char *what)
{
    printf("step: %s\n", what);
    fflush(stdout);
}

/* Prints the tensorlib error of the call that just failed and ends the demo. */
static void fail(const char *what)
{
    printf("error: %s: %s\n", what, tl_last_error());
    fflush(stdout);
    exit(EXIT_OP_FAILED);
}

static tl_tensor *must(tl_tensor *t, const char *what)
{
    if (!t)
        fail(what);
    return t;
}

static void must_ok(tl_status s, const char *what)
{
    if (s != TL_OK)
        fail(what);
}

static void print_tensor(const char *label, const tl_tensor *t)
{
    char buf[256];
    if (tl_format(t, buf, sizeof buf) < 0)
        fail("format");
    printf("%s%s\n", label, buf);
    fflush(stdout);
}

static tl_tensor *vec4(float a, float b, float c, float d, tl_device device)
{
    const float data[4] = {a, b, c, d};
    const size_t shape[1] = {4};
    return must(tl_from_data(data, shape, 1, TL_F32, device), "from_data");
}

static tl_tensor *matrix2x2(void)
{
    const float data[4] = {1, 2, 3, 4};
    const size_t shape[2] = {2, 2};
    return must(tl_from_data(data, shape, 2, TL_F32, TL_CPU), "from_data");
}

/* Row i of a 2-D tensor as a 1-D view: m.narrow(0, i, 1).squeeze(0). */
static tl_tensor *row(const tl_tensor *m, size_t i)
{
    tl_tensor *narrowed = must(tl_narrow(m, 0, i, 1), "narrow");
    tl_tensor *r = must(tl_squeeze(narrowed, 0), "squeeze");
    tl_release(narrowed);
    return r;
}

/* ---- the custom ops ----------------------------------------------------------------------- */

/* dst += src, contiguous f32 of equal length: the in-place op of the original write-up. */
static tl_status add_into_cpu(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx;
    const tl_view *src = &args[0];
    size_t n = dst->ndim ? dst->shape[0] : 1;
    if (nargs != 1 || dst->dtype != TL_F32 || src->dtype != TL_F32 || dst->ndim > 1 ||
        src->ndim != dst->ndim || (dst->ndim && src->shape[0] != n) ||
        (dst->ndim && (dst->strides[0] != 1 || src->strides[0] != 1)))
        return tl_fail(TL_ERR_ARG, "add-into: wants two contiguous 1-D f32 tensors of one length");
    float *d = (float *)dst->data + dst->offset;
    const float *s = (const float *)src->data + src->offset;
    for (size_t i = 0; i < n; i++)
        d[i] += s[i];
    return TL_OK;
}

static const tl_inplace_op add_into = {.name = "add-into", .cpu_fwd = add_into_cpu};

/* dst *= 2, any contiguous f32. */
static tl_status double_cpu(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx, (void)args, (void)nargs;
    if (dst->dtype != TL_F32 || dst->ndim != 1 || dst->strides[0] != 1)
        return tl_fail(TL_ERR_ARG, "double: wants a contiguous 1-D f32 tensor");
    float *d = (float *)dst->data + dst->offset;
    for (size_t i = 0; i < dst->shape[0]; i++)
        d[i] *= 2;
    return TL_OK;
}

static const tl_inplace_op double_op = {.name = "double", .cpu_fwd = double_cpu};

/*
 * A custom op that normalises its input "in place on a view" from inside its forward: the
 * forward runs under the READ lock of its input and then asks for the WRITE lock of the same
 * storage through the view. Read-held then write: this hangs on every platform.
 */
DEMO_FN tl_tensor *demo_upgrade_fwd(void *ctx, const tl_view *args, size_t nargs)
{
    (void)args, (void)nargs;
    tl_tensor *x = ctx;
    tl_tensor *head = must(tl_narrow(x, 0, 0, 2), "narrow");
    step("inside custom op (x read-locked): head = x.narrow(0, 0, 2); head.inplace_op1(double)");
    tl_status s = tl_inplace_op1(head, &double_op);
    tl_release(head);
    if (s != TL_OK)
        return NULL;
    return tl_copy(x);
}

/* ---- the scenarios ------------------------------------------------------------------------ */

DEMO_FN void demo_self(tl_device device)
{
    tl_tensor *x = vec4(1, 2, 3, 4, device);
    tl_tensor *y = vec4(10, 20, 30, 40, device);
    if (device == TL_CPU) {
        step("x.inplace_op2(y, add-into)");
        must_ok(tl_inplace_op2(x, y, &add_into), "x += y");
        print_tensor("x += y -> ", x);
    }
    step("x.inplace_op2(x.clone(), add-into)   <- same storage: write lock, then read lock");
    tl_tensor *alias = tl_clone(x);
    must_ok(tl_inplace_op2(x, alias, &add_into), "x += x.clone()");
    print_tensor("x += x.clone() -> ", x);
    tl_release(alias);
    tl_release(y);
    tl_release(x);
}

DEMO_FN void demo_view(void)
{
    tl_tensor *m = matrix2x2();
    print_tensor("m = ", m);
    tl_tensor *row0 = row(m, 0), *row1 = row(m, 1);
    printf("shares_storage(row0, row1) = %s\n", tl_shares_storage(row0, row1) ? "true" : "false");
    step("row0.inplace_op2(row1, add-into)   <- no element overlaps, one storage lock");
    must_ok(tl_inplace_op2(row0, row1, &add_into), "row0 += row1");
    print_tensor("m = ", m);
    tl_release(row1);
    tl_release(row0);
    tl_release(m);
}

DEMO_FN void demo_upgrade(void)
{
    tl_tensor *x = vec4(1, 2, 3, 4, TL_CPU);
    tl_custom_op normalise = {.name = "normalise", .cpu_fwd = demo_upgrade_fwd, .ctx = x};
    step("x.custom_op1(normalise)   <- read lock on x, then a write lock on a view of x");
    tl_tensor *y = must(tl_custom_op1(x, &normalise), "custom_op1(normalise)");
    print_tensor("y = ", y);
    tl_release(y);
    tl_release(x);
}

DEMO_FN void demo_scatter(void)
{
    const uint32_t data[4] = {0, 1, 2, 3}, values[2] = {7, 9};
    const size_t shape4[1] = {4}, shape2[1] = {2};
    tl_tensor *t = must(tl_from_data(data, shape4, 1, TL_U32, TL_CPU), "from_data");
    tl_tensor *src = must(tl_from_data(values, shape2, 1, TL_U32, TL_CPU), "from_data");
    tl_tensor *ids = must(tl_narrow(t, 0, 2, 2), "narrow");
    step("t.scatter_set(ids = t.narrow(0, 2, 2), src, 0)   <- the guard checks src only");
    must_ok(tl_scatter_set(t, ids, src, 0), "t.scatter_set(ids, src)");
    print_tensor("t = ", t);
    tl_release(ids);
    tl_release(src);
    tl_release(t);
}

/* ---- abba: two threads, opposite orders ---------------------------------------------------- */

struct abba_side {
    tl_tensor *mine, *other;
    pthread_barrier_t *both_hold_first;
};

/* Runs under the write lock of `mine`: waits until the other thread holds its own write lock,
 * then reads the other tensor (its read lock). Each waits for the other forever. */
static tl_status abba_fwd(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)dst, (void)args, (void)nargs;
    struct abba_side *side = ctx;
    float out[4];
    pthread_barrier_wait(side->both_hold_first);
    return tl_to_vec(side->other, out, sizeof out);
}

DEMO_FN void *demo_abba_thread(void *arg)
{
    struct abba_side *side = arg;
    tl_inplace_op op = {.name = "touch-then-read-other", .cpu_fwd = abba_fwd, .ctx = side};
    if (tl_inplace_op1(side->mine, &op) != TL_OK)
        fail("abba thread");
    return NULL;
}

DEMO_FN void demo_abba(void)
{
    tl_tensor *a = vec4(1, 2, 3, 4, TL_CPU), *b = vec4(5, 6, 7, 8, TL_CPU);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    struct abba_side sides[2] = {{a, b, &barrier}, {b, a, &barrier}};
    pthread_t threads[2];
    step("thread 1: a.inplace_op1 (write a) then read b;  thread 2: b.inplace_op1 (write b) then read a");
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, demo_abba_thread, &sides[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    printf("both threads finished\n");
    pthread_barrier_destroy(&barrier);
    tl_release(b);
    tl_release(a);
}

/* ---- predict: one thread, never a deadlock, but the design allows one ----------------------- */

/* Two unrelated updates, each an in-place op on a pair of fresh tensors: the first adds the
 * newer tensor into the older one, the second the older into the newer. No storage is used
 * by both, so nothing can deadlock here; but every in-place op write-locks its target and
 * then read-locks its operand, and these two took storage locks nested in opposite orders:
 * two threads running x.inplace_op2(y) and y.inplace_op2(x) on shared tensors deadlock
 * (mode abba). Only lock classes see it (LOCKTRACE_CLASSES=annotated: tensorlib names its
 * storage class). Fresh pairs are made twice and nothing is freed before the end, so
 * whatever way the allocator places them, the two orders show. */
DEMO_FN void demo_predict(void)
{
    tl_tensor *t[8];
    for (int i = 0; i < 8; i++)
        t[i] = vec4((float)i, 1, 2, 3, TL_CPU);
    for (int round = 0; round < 2; round++) {
        tl_tensor **p = &t[4 * round];
        step("older.inplace_op2(newer, add-into)   <- write lock on one storage, read lock on another");
        must_ok(tl_inplace_op2(p[0], p[1], &add_into), "older += newer");
        step("newer.inplace_op2(older, add-into)   <- another pair, the other way round");
        must_ok(tl_inplace_op2(p[3], p[2], &add_into), "newer += older");
    }
    print_tensor("first pair: older -> ", t[0]);
    for (int i = 0; i < 8; i++)
        tl_release(t[i]);
}

/* ---- fixed: the same intentions, written so they cannot deadlock --------------------------- */

static void print_shares(const char *what, const tl_tensor *a, const tl_tensor *b)
{
    printf("shares_storage(%s) = %s\n", what, tl_shares_storage(a, b) ? "true" : "false");
}

DEMO_FN void demo_fixed(void)
{
    tl_tensor *x = vec4(1, 2, 3, 4, TL_CPU), *y = vec4(10, 20, 30, 40, TL_CPU);
    must_ok(tl_inplace_op2(x, y, &add_into), "x += y");
    print_tensor("x += y -> ", x);

    tl_tensor *clone = tl_clone(x), *copy = must(tl_copy(x), "copy");
    print_shares("x, x.clone()", x, clone);
    print_shares("x, x.copy()", x, copy);
    print_shares("x, y", x, y);
    must_ok(tl_inplace_op2_safe(x, clone, &add_into), "x += copy of x");
    print_tensor("x += copy of x -> ", x);

    tl_tensor *m = matrix2x2(), *row0 = row(m, 0), *row1 = row(m, 1);
    must_ok(tl_inplace_op2_safe(row0, row1, &add_into), "row0 += copy of row1");
    print_tensor("row0 += copy of row1 -> m = ", m);

    tl_tensor *sum = must(tl_add(x, x), "x + x");
    print_tensor("x + x (new tensor) -> ", sum);

    tl_release(sum);
    tl_release(row1);
    tl_release(row0);
    tl_release(m);
    tl_release(copy);
    tl_release(clone);
    tl_release(y);
    tl_release(x);
}

/* ---- main ---------------------------------------------------------------------------------- */

static const struct mode {
    const char *name, *help;
} modes[] = {
    {"self", "x.inplace_op2(x.clone()): write lock, then read lock of one storage"},
    {"view", "row0.inplace_op2(row1) of one matrix: disjoint elements, one storage lock"},
    {"upgrade", "a custom op writes a view of its own input under the input's read lock"},
    {"scatter", "scatter_set whose indexes are a view of self (candle guards src only)"},
    {"abba", "two threads, two tensors, in-place ops in opposite orders (a real deadlock)"},
    {"predict", "one thread, in-place ops on two pairs in opposite orders (never deadlocks)"},
    {"fixed", "the repaired versions: copies where storage is shared"},
    {"metal-self", "self on the Metal device (macOS only)"},
};

static int usage(FILE *out, int status)
{
    fprintf(out, "usage: deadlock MODE\n\nmodes:\n");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        fprintf(out, "  %-11s %s\n", modes[i].name, modes[i].help);
    return status;
}

static int run_metal_self(void)
{
    if (!tl_device_available(TL_METAL)) {
        fprintf(stderr, "deadlock: metal-self: Metal is unavailable on this machine "
                        "(tensorlib was built without Metal, or there is no Metal GPU)\n");
        return EXIT_NO_METAL;
    }
    demo_self(TL_METAL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return usage(stderr, EXIT_USAGE);
    const char *mode = argv[1];
    if (!strcmp(mode, "--help") || !strcmp(mode, "-h"))
        return usage(stdout, 0);
    if (!strcmp(mode, "self"))
        demo_self(TL_CPU);
    else if (!strcmp(mode, "view"))
        demo_view();
    else if (!strcmp(mode, "upgrade"))
        demo_upgrade();
    else if (!strcmp(mode, "scatter"))
        demo_scatter();
    else if (!strcmp(mode, "abba"))
        demo_abba();
    else if (!strcmp(mode, "predict"))
        demo_predict();
    else if (!strcmp(mode, "fixed"))
        demo_fixed();
    else if (!strcmp(mode, "metal-self"))
        return run_metal_self();
    else {
        fprintf(stderr, "deadlock: unknown mode '%s'\n", mode);
        return usage(stderr, EXIT_USAGE);
    }
    return 0;
}
