/*
 * fixture.h - loads the numpy reference data written by fixtures/gen.py and compares
 * tensorlib results with it. A case holds named tensors (values as doubles) and integer
 * parameters; fx_make turns a fixture tensor into a tl_tensor of any dtype and layout variant,
 * fx_expect checks a result within the dtype's tolerance and says where it differs.
 */
#ifndef FIXTURE_H
#define FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "check.h"
#include "tl.h"

#define FX_MAX_TENSORS 16
#define FX_MAX_PARAMS 8
#define FX_NAME 64

typedef struct fx_tensor {
    char name[FX_NAME];
    size_t ndim;
    size_t shape[TL_MAX_DIMS];
    size_t count;
    double *data;
} fx_tensor;

typedef struct fx_case {
    char name[FX_NAME];
    fx_tensor tensors[FX_MAX_TENSORS];
    size_t ntensors;
    char param_names[FX_MAX_PARAMS][FX_NAME];
    long params[FX_MAX_PARAMS];
    size_t nparams;
} fx_case;

typedef struct fx_file {
    fx_case *cases;
    size_t ncases;
} fx_file;

/* Reads dir/name.txt; false (with a message on stdout) when it cannot. */
bool fx_load(const char *dir, const char *name, fx_file *f);
void fx_free(fx_file *f);

/* The tensor or parameter called name; NULL / -1 when the case has none. */
const fx_tensor *fx_get(const fx_case *c, const char *name);
long fx_param(const fx_case *c, const char *name);

/* Layouts a test input can come in; every variant holds the same logical values. */
typedef enum fx_variant {
    FX_CONTIGUOUS,  /* fresh row-major storage */
    FX_TRANSPOSED,  /* last two dims stored column-major (a transposed view); 1-D: contiguous */
    FX_OFFSET,      /* a narrow of a bigger storage: contiguous, nonzero start offset */
    FX_STRIDED,     /* every other element of a bigger storage: each stride doubled, offset 1 */
    FX_VARIANT_COUNT
} fx_variant;
const char *fx_variant_name(fx_variant v);

/* A new tensor with t's values in dtype and layout v; NULL on failure (message printed). */
tl_tensor *fx_make(const fx_tensor *t, tl_dtype dtype, fx_variant v);

/* Tolerance for comparing a dtype's results with an f64 reference: |got - want| <=
 * atol + rtol * |want|. */
double fx_rtol(tl_dtype dtype);

/* Checks got against want (shape and values within tolerance; NaN matches NaN, an infinity
 * only itself); prints the first mismatch with label. Returns whether it matched. */
bool fx_expect(const tl_tensor *got, const fx_tensor *want, tl_dtype dtype, const char *label);
/* The same with |got - want| <= atol + rtol * |want| (0, 0: exact). */
bool fx_expect_tol(const tl_tensor *got, const fx_tensor *want, tl_dtype dtype, double rtol,
                   double atol, const char *label);

/* Whether a call failed with status `want` and a message holding `part`; prints what it got
 * otherwise. `got` is the call's status: fx_status() turns a tensor result into one. */
bool fx_failed_with(tl_status got, tl_status want, const char *part);
/* TL_OK for a tensor (which it releases), tl_last_status() for NULL. */
tl_status fx_status(tl_tensor *t);
/* Checks (check.h) that a tensor-returning call failed with want and a message holding part;
 * FX_FAILS_ST the same for a call that returns a tl_status. */
#define FX_FAILS(call, want, part) CHECK(fx_failed_with(fx_status(call), (want), (part)))
#define FX_FAILS_ST(call, want, part) CHECK(fx_failed_with((call), (want), (part)))

/* Releases every tensor named (NULL is fine): FX_RELEASE(a, b, out). */
#define FX_RELEASE(...)                                                                          \
    fx_release((tl_tensor *[]){__VA_ARGS__},                                                     \
               sizeof((tl_tensor *[]){__VA_ARGS__}) / sizeof(tl_tensor *))
void fx_release(tl_tensor *const *ts, size_t n);

/* The fixture directory, the test's one argument; NULL after printing usage. */
const char *fx_dir(int argc, char **argv);

/* The float dtypes every fixture case runs on; the integer dtypes. */
extern const tl_dtype fx_float_dtypes[4];
extern const tl_dtype fx_int_dtypes[5];

/* The dtype a case name ends in ("wrap_i16" -> TL_I16); TL_DTYPE_COUNT when none. */
tl_dtype fx_case_dtype(const fx_case *c);

/* Checks got (released here) against the case's tensor `name` with fx_expect_tol, labelled
 * with the case, its parameters, the tensor and the variant. Returns whether it matched. */
bool fx_check(const fx_case *c, const char *name, tl_tensor *got, tl_dtype dtype, double rtol,
              double atol, fx_variant v);

/* A case's parameter as a dim (a negative one counts from the end, as TL_DIM). */
size_t fx_dim(const fx_case *c, const char *name);
/* Element i of the case's tensor "p" (the float parameters of an op). */
double fx_p(const fx_case *c, size_t i);

/* Calls run(c, dtype, v) for every case of dir/name.txt, float dtype and layout variant;
 * false (message printed) when the file does not load. */
typedef void (*fx_run_fn)(const fx_case *c, tl_dtype dtype, fx_variant v);
bool fx_each_case(const char *dir, const char *name, fx_run_fn run);

/* A table of runners by case-name prefix: each case of a file runs through every runner whose
 * prefix its name starts with, once per dtype in the runner's list (NULL list: once, with
 * the dtype the case name ends in) and layout variant. */
typedef struct fx_runner {
    const char *prefix;
    fx_run_fn run;
    const tl_dtype *dtypes;
    size_t ndtypes;
} fx_runner;
#define FX_FLOATS fx_float_dtypes, 4
#define FX_INTS fx_int_dtypes, 5
#define FX_OWN NULL, 0
/* Runs dir/name.txt through the table; false (message printed) when the file does not load
 * or a case matches no runner (so a new case cannot go unchecked). */
bool fx_run_table(const char *dir, const char *name, const fx_runner *table, size_t n);
/* main() of a table-driven test: the fixture directory from argv, fx_run_table, the summary
 * (inline: check.h's counters belong to the test's own file). */
static inline int fx_main(int argc, char **argv, const char *name, const fx_runner *table,
                          size_t n)
{
    const char *dir = fx_dir(argc, argv);
    if (!dir)
        return 2;
    CHECK(fx_run_table(dir, name, table, n));
    return check_summary();
}

/* t's values for dtype: unchanged for a float dtype, times 8 for an integer one (the
 * fixtures' multiples of 1/8 in [-2, 2] become integers), plus 32 more for u8/u32 (so they
 * stay above 0). For ops that only move values (and adds on the signed dtypes). The caller
 * frees .data. */
fx_tensor fx_as_dtype_values(const fx_tensor *t, tl_dtype dtype);

#endif
