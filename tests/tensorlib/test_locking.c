/*
 * test_locking.c - the storage-lock contract: candle's unguarded in-place ops fail with
 * EDEADLK on glibc when given one storage twice (and leave nothing locked), the _safe
 * variants work, slice_set/var_set keep candle's guards, custom ops see their operands
 * under the locks, several readers hold one storage's read lock at once, and a writer
 * excludes readers.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tl_test.h"

/* ------------------------------------------------------------------------------------------
 * Custom ops written against tl_view, as a user would
 * ---------------------------------------------------------------------------------------- */
static size_t view_elems(const tl_view *v)
{
    size_t n = 1;
    for (size_t d = 0; d < v->ndim; d++)
        n *= v->shape[d];
    return n;
}

/* Element offset of the linear (row-major) index i. */
static size_t view_at(const tl_view *v, size_t i)
{
    size_t off = v->offset;
    for (size_t d = v->ndim; d-- > 0;) {
        off += (i % v->shape[d]) * v->strides[d];
        i /= v->shape[d];
    }
    return off;
}

/* dst += each arg (f32, same element count) */
static tl_status add_into_fwd(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx;
    if (dst->dtype != TL_F32)
        return tl_fail(TL_ERR_DTYPE, "add-into: f32 only");
    float *d = dst->data;
    for (size_t i = 0; i < view_elems(dst); i++)
        for (size_t k = 0; k < nargs; k++)
            d[view_at(dst, i)] += ((const float *)args[k].data)[view_at(&args[k], i)];
    return TL_OK;
}

static const tl_inplace_op add_into = {"add-into", add_into_fwd, NULL, NULL};
static const tl_inplace_op add_into_no_cpu = {"add-into", NULL, add_into_fwd, NULL};

/* f64 scalar: sum of the products of the args' elements (1 arg: sum, 2: dot, 3: triple) */
static tl_tensor *product_sum_fwd(void *ctx, const tl_view *args, size_t nargs)
{
    (void)ctx;
    double sum = 0;
    for (size_t i = 0; i < view_elems(&args[0]); i++) {
        double p = 1;
        for (size_t k = 0; k < nargs; k++)
            p *= ((const float *)args[k].data)[view_at(&args[k], i)];
        sum += p;
    }
    return tl_full(sum, NULL, 0, TL_F64, TL_CPU);
}

static const tl_custom_op product_sum = {"product-sum", product_sum_fwd, NULL, NULL};

static tl_tensor *failing_fwd(void *ctx, const tl_view *args, size_t nargs)
{
    (void)args;
    (void)nargs;
    if (ctx)
        tl_fail(TL_ERR_SHAPE, "picky: does not like this shape");
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */

static void test_inplace_unguarded(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(2), 1, 2);
    tl_tensor *y = MAKE(TL_F32, SHAPE(2), 10, 20);
    EXPECT_STATUS(tl_inplace_op2(x, y, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(x), "[11.0, 22.0]");
    EXPECT_STATUS(tl_inplace_op1(x, &add_into), TL_OK, "");
    EXPECT_STATUS(tl_inplace_op3(x, y, y, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(x), "[31.0, 62.0]");
#ifdef __GLIBC__
    /* write lock on x, then a read lock on the same rwlock: glibc answers EDEADLK */
    tl_tensor *c = tl_clone(x);
    EXPECT_STATUS(tl_inplace_op2(x, x, &add_into), TL_ERR_LOCK, "Resource deadlock avoided");
    CHECKF(strstr(tl_last_error(), "EDEADLK") && strstr(tl_last_error(), "add-into") &&
               strstr(tl_last_error(), "tensorlib storage f32[2] cpu 8 B"),
           "message: %s", tl_last_error());
    EXPECT_STATUS(tl_inplace_op2(x, c, &add_into), TL_ERR_LOCK, "EDEADLK");
    EXPECT_STATUS(tl_inplace_op3(x, y, c, &add_into), TL_ERR_LOCK, "EDEADLK");
    tl_release(c);
    /* nothing stayed locked: a writer and readers still get through */
    EXPECT_STATUS(tl_const_set(x, 1), TL_OK, "");
    EXPECT_FMT(tl_add(x, x), "[2.0, 2.0]");
#endif
    tl_release(x);
    tl_release(y);
}

static void test_inplace_views(void)
{
    tl_tensor *m = MAKE(TL_F32, SHAPE(2, 2), 1, 2, 3, 4);
    tl_tensor *row0 = tl_get(m, 0), *row1 = tl_get(m, 1);
    tl_tensor *d = MAKE(TL_F32, SHAPE(2), 100, 200);
    EXPECT_STATUS(tl_inplace_op2(row0, d, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(m), "[[101.0, 202.0], [3.0, 4.0]]"); /* row0 writes through to m */
#ifdef __GLIBC__
    EXPECT_STATUS(tl_inplace_op2(row0, row1, &add_into), TL_ERR_LOCK, "EDEADLK");
#endif
    EXPECT_STATUS(tl_inplace_op2_safe(row0, row1, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(m), "[[104.0, 206.0], [3.0, 4.0]]");
    tl_release(d);
    tl_release(row0);
    tl_release(row1);
    tl_release(m);
}

static void test_inplace_safe(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(3), 1, 2, 3);
    EXPECT_STATUS(tl_inplace_op2_safe(x, x, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(x), "[2.0, 4.0, 6.0]");
    tl_tensor *y = MAKE(TL_F32, SHAPE(3), 1, 1, 1);
    EXPECT_STATUS(tl_inplace_op3_safe(x, x, y, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(x), "[5.0, 9.0, 13.0]");
    EXPECT_STATUS(tl_inplace_op3_safe(x, y, x, &add_into), TL_OK, "");
    EXPECT_FMT(tl_retain(x), "[11.0, 19.0, 27.0]");
    tl_tensor *r = MAKE(TL_F32, SHAPE(1, 3), 1, 2, 3);
    tl_tensor *t = tl_transpose(r, 0, 1);
    EXPECT_STATUS(tl_inplace_op2_safe(t, t, &add_into), TL_OK, "");
    EXPECT_FMT(t, "[[2.0], [4.0], [6.0]]");
    tl_release(r);
    EXPECT_STATUS(tl_inplace_op2_safe(x, NULL, &add_into), TL_ERR_ARG, "add-into");
    tl_release(y);
    tl_release(x);
}

static void test_inplace_errors(void)
{
    tl_tensor *x = MAKE(TL_F32, SHAPE(2), 1, 2);
    tl_tensor *i = MAKE(TL_I64, SHAPE(2), 1, 2);
    EXPECT_STATUS(tl_inplace_op2(x, x, &add_into_no_cpu), TL_ERR_UNSUPPORTED,
                  "no cpu implementation for add-into");
    EXPECT_STATUS(tl_inplace_op1(x, NULL), TL_ERR_ARG, "op table is NULL");
    EXPECT_STATUS(tl_inplace_op1(NULL, &add_into), TL_ERR_ARG, "add-into: tensor argument is NULL");
    EXPECT_STATUS(tl_inplace_op1(i, &add_into), TL_ERR_DTYPE, "add-into: f32 only");
    tl_release(i);
    tl_release(x);
}

static void test_custom_ops(void)
{
    tl_tensor *a = MAKE(TL_F32, SHAPE(2, 2), 1, 2, 3, 4);
    tl_tensor *at = tl_transpose(a, 0, 1);
    EXPECT_FMT(tl_custom_op1(a, &product_sum), "10.0");
    EXPECT_FMT(tl_custom_op2(a, at, &product_sum), "29.0"); /* 1 + 6 + 6 + 16 */
    EXPECT_FMT(tl_custom_op3(a, a, a, &product_sum), "100.0");
    tl_custom_op picky = {"picky", failing_fwd, NULL, &picky};
    EXPECT_FAIL(tl_custom_op1(a, &picky), TL_ERR_SHAPE, "picky: does not like this shape");
    tl_custom_op silent = {"silent", failing_fwd, NULL, NULL};
    EXPECT_FAIL(tl_custom_op1(a, &silent), TL_ERR_BACKEND, "silent: forward returned no tensor");
    tl_custom_op none = {"nothing", NULL, NULL, NULL};
    EXPECT_FAIL(tl_custom_op2(a, a, &none), TL_ERR_UNSUPPORTED, "no cpu implementation for nothing");
    EXPECT_FAIL(tl_custom_op2(a, NULL, &product_sum), TL_ERR_ARG, "product-sum");
    tl_release(at);
    tl_release(a);
}

static void test_guards(void)
{
    tl_tensor *m = tl_zeros(SHAPE(3, 2), TL_F32, TL_CPU);
    tl_tensor *src = MAKE(TL_F32, SHAPE(2, 2), 1, 2, 3, 4);
    EXPECT_STATUS(tl_slice_set(m, src, 0, 1), TL_OK, "");
    EXPECT_FMT(tl_retain(m), "[[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]");
    tl_tensor *srct = tl_transpose(src, 0, 1);
    EXPECT_STATUS(tl_slice_set(m, srct, 0, 0), TL_OK, "");
    EXPECT_FMT(tl_retain(m), "[[1.0, 3.0], [2.0, 4.0], [3.0, 4.0]]");
    tl_tensor *col = MAKE(TL_F32, SHAPE(3, 1), 7, 8, 9);
    EXPECT_STATUS(tl_slice_set(m, col, 1, 1), TL_OK, "");
    EXPECT_FMT(tl_retain(m), "[[1.0, 7.0], [2.0, 8.0], [3.0, 9.0]]");
    /* candle's guard: a source sharing the target's storage is refused, not deadlocked */
    tl_tensor *row0 = tl_narrow(m, 0, 0, 1);
    EXPECT_STATUS(tl_slice_set(m, row0, 0, 2), TL_ERR_SHARED_STORAGE,
                  "slice_set: target f32[3, 2] and source f32[1, 2] share their storage");
    EXPECT_STATUS(tl_slice_set(m, src, 0, 2), TL_ERR_SHAPE, "does not fit");
    EXPECT_STATUS(tl_slice_set(m, src, 2, 0), TL_ERR_RANGE, "slice_set");
    tl_tensor *isrc = tl_zeros(SHAPE(1, 2), TL_I64, TL_CPU);
    EXPECT_STATUS(tl_slice_set(m, isrc, 0, 0), TL_ERR_DTYPE, "slice_set: dtype mismatch");

    tl_tensor *v = tl_zeros(SHAPE(2, 2), TL_F32, TL_CPU);
    EXPECT_STATUS(tl_var_set(v, srct), TL_OK, "");
    EXPECT_FMT(tl_retain(v), "[[1.0, 3.0], [2.0, 4.0]]");
    tl_tensor *vt = tl_transpose(v, 0, 1);
    EXPECT_STATUS(tl_var_set(v, vt), TL_ERR_SHARED_STORAGE, "var_set");
    EXPECT_STATUS(tl_var_set(v, col), TL_ERR_SHAPE, "var_set: shape mismatch");
    EXPECT_STATUS(tl_const_set(NULL, 1), TL_ERR_ARG, "const_set");
    tl_release(vt);
    tl_release(v);
    tl_release(isrc);
    tl_release(row0);
    tl_release(col);
    tl_release(srct);
    tl_release(src);
    tl_release(m);
}

/* ------------------------------------------------------------------------------------------
 * Threads
 * ---------------------------------------------------------------------------------------- */
#define READERS 4

static atomic_int inside;

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Holds its read lock until every reader is inside too (or 10 s pass): only possible when
 * read locks are shared. */
static tl_tensor *rendezvous_fwd(void *ctx, const tl_view *args, size_t nargs)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    atomic_fetch_add(&inside, 1);
    for (int i = 0; i < 10000 && atomic_load(&inside) < READERS; i++)
        pause_ms(1);
    return tl_full(atomic_load(&inside), NULL, 0, TL_I64, TL_CPU);
}

static const tl_custom_op rendezvous = {"rendezvous", rendezvous_fwd, NULL, NULL};

typedef struct reader {
    tl_tensor *x;
    long met;  /* how many readers the rendezvous saw */
    int wrong; /* results that were not 2 * x */
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    tl_tensor *met = tl_custom_op1(r->x, &rendezvous);
    int64_t n = 0;
    if (met && tl_to_vec(met, &n, sizeof n) == TL_OK)
        r->met = (long)n;
    tl_release(met);
    for (int i = 0; i < 200; i++) {
        tl_tensor *s = tl_add(r->x, r->x);
        float v[64];
        if (!s || tl_to_vec(s, v, sizeof v) != TL_OK)
            r->wrong++;
        for (size_t k = 0; s && k < 64; k++)
            r->wrong += v[k] != 2.0f * (float)k;
        tl_release(s);
    }
    return NULL;
}

static void test_concurrent_readers(void)
{
    tl_tensor *x = tl_arange(0, 64, 1, TL_F32, TL_CPU);
    pthread_t th[READERS];
    reader rs[READERS];
    for (int i = 0; i < READERS; i++) {
        rs[i] = (reader){.x = x};
        CHECK(pthread_create(&th[i], NULL, reader_main, &rs[i]) == 0);
    }
    for (int i = 0; i < READERS; i++) {
        pthread_join(th[i], NULL);
        CHECKF(rs[i].met == READERS && rs[i].wrong == 0, "reader %d met %ld, %d wrong", i,
               rs[i].met, rs[i].wrong);
    }
    tl_release(x);
}

/* Writes the two halves of dst with a pause between: a reader that got in between would
 * see a half-written tensor. */
static atomic_int writing;

static tl_status slow_fill_fwd(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    float *d = dst->data;
    size_t n = view_elems(dst);
    atomic_store(&writing, 1);
    for (size_t i = 0; i < n / 2; i++)
        d[view_at(dst, i)] = 7;
    pause_ms(50);
    for (size_t i = n / 2; i < n; i++)
        d[view_at(dst, i)] = 7;
    return TL_OK;
}

static const tl_inplace_op slow_fill = {"slow-fill", slow_fill_fwd, NULL, NULL};

static void *writer_main(void *arg)
{
    return (void *)(intptr_t)tl_inplace_op1(arg, &slow_fill);
}

static void test_writer_excludes_readers(void)
{
    tl_tensor *x = tl_zeros(SHAPE(8), TL_F32, TL_CPU);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, writer_main, x) == 0);
    while (!atomic_load(&writing))
        pause_ms(1);
    EXPECT_FMT(tl_retain(x), "[7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0]");
    void *status;
    pthread_join(th, &status);
    CHECK((intptr_t)status == TL_OK);
    tl_release(x);
}

/* Views and clones of one shared base made and dropped from several threads at once: the
 * reference counts are atomic, and the last release (whichever thread) frees the storage. */
static void *churn_main(void *arg)
{
    tl_tensor *base = arg;
    for (int i = 0; i < 2000; i++) {
        tl_tensor *row = tl_get(base, (size_t)i % 4), *t = tl_transpose(base, 0, 1);
        tl_tensor *c = tl_clone(base), *s = tl_reduce(TL_SUM, row, NULL, 0, false);
        tl_release(row);
        tl_release(t);
        tl_release(c);
        tl_release(s);
    }
    tl_release(base); /* each thread owns one reference */
    return NULL;
}

static void test_refcount_threads(void)
{
    tl_tensor *base = tl_ones(SHAPE(4, 4), TL_F32, TL_CPU);
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++)
        CHECK(pthread_create(&th[i], NULL, churn_main, tl_retain(base)) == 0);
    tl_release(base); /* the threads hold the last references */
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
}

int main(void)
{
    test_inplace_unguarded();
    test_inplace_views();
    test_inplace_safe();
    test_inplace_errors();
    test_custom_ops();
    test_guards();
    test_concurrent_readers();
    test_writer_excludes_readers();
    test_refcount_threads();
    return check_summary();
}
