/*
 * tensor_bench.c - tensorlib's side of the speed benchmark (tensor_bench.py runs it next to
 * numpy and prints the comparison). Each line is "name seconds", the best of several
 * repetitions: f32 matmul at 512 and 1024, elementwise add/mul/exp on 16M contiguous f32, a
 * 4-element add whose time is mostly the op's fixed cost (allocation plus the two read locks),
 * one uncontended read lock + unlock of a pthread rwlock, the part of that cost the locks are,
 * and on 4096x4096 f32: exp of a transposed view, sum over dim 0, softmax over the last dim,
 * cumsum over each dim; cumprod of 16M.
 * Not a test: run on demand ("meson compile -C build bench-tensor").
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tl.h"

typedef tl_tensor *(*bench_op)(const tl_tensor *a, const tl_tensor *b);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tl_tensor *op_matmul(const tl_tensor *a, const tl_tensor *b) { return tl_matmul(a, b); }
static tl_tensor *op_add(const tl_tensor *a, const tl_tensor *b) { return tl_add(a, b); }
static tl_tensor *op_mul(const tl_tensor *a, const tl_tensor *b) { return tl_mul(a, b); }
static tl_tensor *op_exp(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_unary(TL_EXP, a);
}

/* exp of a transposed view: the kernel walks an input whose memory order is not the result's. */
static tl_tensor *op_exp_t(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    tl_tensor *t = tl_transpose(a, 0, 1);
    tl_tensor *out = t ? tl_unary(TL_EXP, t) : NULL;
    tl_release(t);
    return out;
}

static tl_tensor *op_sum0(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_reduce(TL_SUM, a, (const size_t[]){0}, 1, false);
}

static tl_tensor *op_softmax(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_softmax(a, 1);
}

static tl_tensor *op_cumsum0(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_cumsum(a, 0);
}

static tl_tensor *op_cumsum1(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_cumsum(a, 1);
}

static tl_tensor *op_cumprod(const tl_tensor *a, const tl_tensor *b)
{
    (void)b;
    return tl_cumprod(a, 0);
}

/* Best time of reps runs of `calls` back-to-back calls; false when the op fails. */
static bool best_of(bench_op op, const tl_tensor *a, const tl_tensor *b, int reps, long calls,
                    double *best)
{
    *best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (long i = 0; i < calls; i++) {
            tl_tensor *out = op(a, b);
            if (!out)
                return false;
            tl_release(out);
        }
        double t = now() - t0;
        *best = t < *best ? t : *best;
    }
    return true;
}

/* Times op on two random f32 tensors of shape; prints "name seconds-per-call". */
static bool run(const char *name, bench_op op, const size_t *shape, size_t ndim, int reps,
                long calls)
{
    tl_tensor *a = tl_rand(-1, 1, shape, ndim, TL_F32, TL_CPU, 1);
    tl_tensor *b = tl_rand(-1, 1, shape, ndim, TL_F32, TL_CPU, 2);
    double best = 0;
    bool ok = a && b && best_of(op, a, b, 1, 1, &best) && best_of(op, a, b, reps, calls, &best);
    if (ok)
        printf("%s %.9g\n", name, best / (double)calls);
    else
        fprintf(stderr, "tensor_bench: %s failed: %s\n", name, tl_last_error());
    tl_release(a);
    tl_release(b);
    return ok;
}

/* One uncontended pthread_rwlock_rdlock + unlock, as every input of every op pays it. */
static void run_rwlock(long calls)
{
    pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (long i = 0; i < calls; i++) {
            pthread_rwlock_rdlock(&lock);
            pthread_rwlock_unlock(&lock);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("rwlock_rd %.9g\n", best / (double)calls);
}

int main(void)
{
    size_t m512[] = {512, 512}, m1024[] = {1024, 1024}, big[] = {16u << 20}, tiny[] = {4};
    size_t m4096[] = {4096, 4096};
    bool ok = run("matmul_512", op_matmul, m512, 2, 20, 1);
    ok &= run("matmul_1024", op_matmul, m1024, 2, 10, 1);
    ok &= run("add_16M", op_add, big, 1, 10, 1);
    ok &= run("mul_16M", op_mul, big, 1, 10, 1);
    ok &= run("exp_16M", op_exp, big, 1, 10, 1);
    ok &= run("add_4", op_add, tiny, 1, 7, 200000);
    ok &= run("expT_4096", op_exp_t, m4096, 2, 7, 1);
    ok &= run("sum0_4096", op_sum0, m4096, 2, 7, 1);
    ok &= run("softmax_4096", op_softmax, m4096, 2, 7, 1);
    ok &= run("cumsum0_4096", op_cumsum0, m4096, 2, 7, 1);
    ok &= run("cumsum1_4096", op_cumsum1, m4096, 2, 7, 1);
    ok &= run("cumprod_16M", op_cumprod, big, 1, 7, 1);
    run_rwlock(2000000);
    return ok ? 0 : 1;
}
