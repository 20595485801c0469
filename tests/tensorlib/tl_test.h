/*
 * tl_test.h - helpers shared by the tensorlib unit tests, on top of check.h: building small
 * tensors, and checking a result by its printed form or its values. The result-checking
 * helpers take ownership of the tensor they are given (so a call can be checked inline) and
 * report the library's error message when the call failed.
 */
#ifndef TL_TEST_H
#define TL_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tl.h"

/* SHAPE(2, 3) expands to a shape pointer and its length. */
/* The shape of a scalar. */
#define SCALAR NULL, 0

#define SHAPE(...) (const size_t[]){__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)

/* A tensor of dtype from doubles (converted element by element on the host). */
static inline tl_tensor *tt_make(tl_dtype dtype, const double *v, const size_t *shape, size_t ndim)
{
    tl_tensor *f64 = tl_from_data(v, shape, ndim, TL_F64, TL_CPU);
    tl_tensor *t = dtype == TL_F64 ? tl_retain(f64) : tl_to_dtype(f64, dtype);
    tl_release(f64);
    return t;
}

#define MAKE(dtype, shape, ...) tt_make(dtype, (const double[]){__VA_ARGS__}, shape)

static inline void tt_release(tl_tensor *const *ts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tl_release(ts[i]);
}
/* Releases every tensor named. */
#define RELEASE(...)                                                                              \
    tt_release((tl_tensor *[]){__VA_ARGS__},                                                      \
               sizeof((tl_tensor *[]){__VA_ARGS__}) / sizeof(tl_tensor *))

static inline int tt_expect_fmt(tl_tensor *t, const char *expect, const char *what,
                                const char *file, int line)
{
    char buf[1024] = "";
    int ok = t && tl_format(t, buf, sizeof buf) >= 0 && strcmp(buf, expect) == 0;
    check_record(ok, what, file, line);
    if (!ok)
        printf("    got %s, want %s%s%s\n", t ? buf : "NULL", expect, t ? "" : ": ",
               t ? "" : tl_last_error());
    tl_release(t);
    return ok;
}
/* Checks that t (owned) prints as expect. */
#define EXPECT_FMT(t, expect) tt_expect_fmt((t), (expect), #t, __FILE__, __LINE__)

static inline int tt_expect_vals(tl_tensor *t, const double *expect, size_t n, double tol,
                                 const char *what, const char *file, int line)
{
    double got[64];
    tl_tensor *f = t ? tl_to_dtype(t, TL_F64) : NULL;
    int ok = f && tl_elem_count(f) == n && n <= 64 && tl_to_vec(f, got, sizeof got) == TL_OK;
    size_t bad = n;
    for (size_t i = 0; ok && i < n; i++) {
        double scale = fabs(expect[i]) > 1 ? fabs(expect[i]) : 1;
        int same = got[i] == expect[i] || (isnan(expect[i]) && isnan(got[i])) || fabs(got[i] - expect[i]) <= tol * scale;
        if (!same) {
            ok = 0;
            bad = i;
        }
    }
    check_record(ok, what, file, line);
    if (!ok && !f)
        printf("    failed: %s\n", tl_last_error());
    else if (!ok && bad < n)
        printf("    element %zu: got %.17g, want %.17g\n", bad, got[bad], expect[bad]);
    else if (!ok)
        printf("    %zu elements, want %zu\n", tl_elem_count(f), n);
    tl_release(f);
    tl_release(t);
    return ok;
}
/* Checks t (owned) holds the given values, relative tolerance tol. */
#define EXPECT_VALS(t, tol, ...)                                                                  \
    tt_expect_vals((t), (const double[]){__VA_ARGS__},                                            \
                   sizeof((double[]){__VA_ARGS__}) / sizeof(double), (tol), #t, __FILE__, __LINE__)

static inline int tt_expect_fail(void *result, tl_status want, const char *needle,
                                 const char *what, const char *file, int line)
{
    int ok = result == NULL && tl_last_status() == want && strstr(tl_last_error(), needle);
    check_record(ok, what, file, line);
    if (!ok)
        printf("    got %s, status %d, message \"%s\"; want status %d mentioning \"%s\"\n",
               result ? "a tensor" : "NULL", (int)tl_last_status(), tl_last_error(), (int)want,
               needle);
    tl_release(result);
    return ok;
}
/* Checks a tensor-returning call failed with status want and a message containing needle. */
#define EXPECT_FAIL(call, want, needle) tt_expect_fail((call), (want), (needle), #call, __FILE__, __LINE__)

static inline int tt_expect_status(tl_status got, tl_status want, const char *needle,
                                   const char *what, const char *file, int line)
{
    int ok = got == want && (want == TL_OK || (tl_last_status() == want &&
                                               strstr(tl_last_error(), needle)));
    check_record(ok, what, file, line);
    if (!ok)
        printf("    got status %d (\"%s\"), want %d mentioning \"%s\"\n", (int)got,
               got ? tl_last_error() : "", (int)want, needle);
    return ok;
}
/* Checks a tl_status-returning call. */
#define EXPECT_STATUS(call, want, needle)                                                         \
    tt_expect_status((call), (want), (needle), #call, __FILE__, __LINE__)

#endif
