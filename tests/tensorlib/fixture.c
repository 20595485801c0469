/*
 * fixture.c - the reader and comparison helpers behind fixture.h.
 */
#include "fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tl_dtype fx_float_dtypes[4] = {TL_F32, TL_F64, TL_F16, TL_BF16};
const tl_dtype fx_int_dtypes[5] = {TL_U8, TL_U32, TL_I16, TL_I32, TL_I64};

static bool read_values(FILE *in, fx_tensor *t)
{
    t->count = 1;
    for (size_t d = 0; d < t->ndim; d++)
        t->count *= t->shape[d];
    t->data = calloc(t->count ? t->count : 1, sizeof *t->data);
    if (!t->data)
        return false;
    for (size_t i = 0; i < t->count; i++)
        if (fscanf(in, "%lf", &t->data[i]) != 1)
            return false;
    return true;
}

static bool read_tensor(FILE *in, fx_case *c)
{
    if (c->ntensors == FX_MAX_TENSORS)
        return false;
    fx_tensor *t = &c->tensors[c->ntensors++];
    if (fscanf(in, "%63s %zu", t->name, &t->ndim) != 2 || t->ndim > TL_MAX_DIMS)
        return false;
    for (size_t d = 0; d < t->ndim; d++)
        if (fscanf(in, "%zu", &t->shape[d]) != 1)
            return false;
    return read_values(in, t);
}

static bool read_param(FILE *in, fx_case *c)
{
    if (c->nparams == FX_MAX_PARAMS)
        return false;
    size_t i = c->nparams++;
    return fscanf(in, "%63s %ld", c->param_names[i], &c->params[i]) == 2;
}

/* One keyword and what follows it; false on a malformed file. */
static bool read_item(FILE *in, const char *word, fx_file *f)
{
    if (word[0] == '#') {
        int ch;
        while ((ch = fgetc(in)) != EOF && ch != '\n')
            ;
        return true;
    }
    if (strcmp(word, "case") == 0) {
        fx_case *grown = realloc(f->cases, (f->ncases + 1) * sizeof *grown);
        if (!grown)
            return false;
        f->cases = grown;
        fx_case *c = &f->cases[f->ncases++];
        memset(c, 0, sizeof *c);
        return fscanf(in, "%63s", c->name) == 1;
    }
    if (f->ncases == 0)
        return false;
    fx_case *c = &f->cases[f->ncases - 1];
    if (strcmp(word, "tensor") == 0)
        return read_tensor(in, c);
    if (strcmp(word, "param") == 0)
        return read_param(in, c);
    return strcmp(word, "end") == 0;
}

bool fx_load(const char *dir, const char *name, fx_file *f)
{
    char path[1024], word[FX_NAME];
    snprintf(path, sizeof path, "%s/%s.txt", dir, name);
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "r");
    if (!in) {
        printf("cannot open fixture %s\n", path);
        return false;
    }
    bool ok = true;
    while (ok && fscanf(in, "%63s", word) == 1)
        ok = read_item(in, word, f);
    fclose(in);
    if (!ok || f->ncases == 0) {
        printf("malformed fixture %s\n", path);
        fx_free(f);
        return false;
    }
    return true;
}

void fx_free(fx_file *f)
{
    for (size_t i = 0; i < f->ncases; i++)
        for (size_t j = 0; j < f->cases[i].ntensors; j++)
            free(f->cases[i].tensors[j].data);
    free(f->cases);
    memset(f, 0, sizeof *f);
}

const fx_tensor *fx_get(const fx_case *c, const char *name)
{
    for (size_t i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0)
            return &c->tensors[i];
    return NULL;
}

long fx_param(const fx_case *c, const char *name)
{
    for (size_t i = 0; i < c->nparams; i++)
        if (strcmp(c->param_names[i], name) == 0)
            return c->params[i];
    return -1;
}

const char *fx_variant_name(fx_variant v)
{
    static const char *const names[] = {"contiguous", "transposed", "offset", "strided"};
    return v < FX_VARIANT_COUNT ? names[v] : "?";
}

/* t's values as a dtype tensor, `spread` elements apart, with `pad` junk elements before and
 * after them (junk between them too when spread > 1). */
static tl_tensor *make_padded(const fx_tensor *t, tl_dtype dtype, size_t pad, size_t spread)
{
    size_t n = t->count * spread + 2 * pad;
    double *buf = malloc(n * sizeof *buf);
    if (!buf)
        return NULL;
    for (size_t i = 0; i < n; i++)
        buf[i] = 7.0;
    for (size_t i = 0; i < t->count; i++)
        buf[pad + i * spread] = t->data[i];
    tl_tensor *f64 = tl_from_data(buf, &n, 1, TL_F64, TL_CPU);
    free(buf);
    tl_tensor *typed = f64 ? tl_to_dtype(f64, dtype) : NULL;
    tl_release(f64);
    return typed;
}

static tl_tensor *make_transposed(tl_tensor *t)
{
    size_t nd = tl_ndim(t);
    if (nd < 2)
        return tl_retain(t);
    tl_tensor *tt = tl_transpose(t, nd - 2, nd - 1);
    tl_tensor *packed = tt ? tl_copy(tt) : NULL;
    tl_tensor *back = packed ? tl_transpose(packed, nd - 2, nd - 1) : NULL;
    tl_release(tt);
    tl_release(packed);
    return back;
}

/* Every other element of flat (2 * t->count of them): t's shape with each stride doubled. */
static tl_tensor *make_strided(tl_tensor *flat, const fx_tensor *t)
{
    size_t shape[TL_MAX_DIMS + 1];
    if (t->ndim == TL_MAX_DIMS)
        return NULL;
    memcpy(shape, t->shape, t->ndim * sizeof shape[0]);
    shape[t->ndim] = 2;
    tl_tensor *pairs = tl_reshape(flat, shape, t->ndim + 1);
    tl_tensor *first = pairs ? tl_narrow(pairs, t->ndim, 0, 1) : NULL;
    tl_tensor *out = first ? tl_squeeze(first, t->ndim) : NULL;
    tl_release(pairs);
    tl_release(first);
    return out;
}

tl_tensor *fx_make(const fx_tensor *t, tl_dtype dtype, fx_variant v)
{
    size_t pad = v == FX_OFFSET || v == FX_STRIDED ? 3 : 0, spread = v == FX_STRIDED ? 2 : 1;
    tl_tensor *flat = make_padded(t, dtype, pad, spread);
    tl_tensor *body = flat ? tl_narrow(flat, 0, pad, t->count * spread) : NULL;
    tl_tensor *shaped = !body ? NULL
                        : v == FX_STRIDED ? make_strided(body, t)
                                          : tl_reshape(body, t->shape, t->ndim);
    tl_tensor *out = shaped && v == FX_TRANSPOSED ? make_transposed(shaped) : tl_retain(shaped);
    if (!out)
        printf("fx_make %s as %s/%s: %s\n", t->name, tl_dtype_name(dtype), fx_variant_name(v),
               tl_last_error());
    tl_release(flat);
    tl_release(body);
    tl_release(shaped);
    return out;
}

double fx_rtol(tl_dtype dtype)
{
    switch (dtype) {
    case TL_F64: return 1e-10;
    case TL_F32: return 1e-5;
    case TL_F16: return 4e-3;
    case TL_BF16: return 2e-2;
    default: return 0;
    }
}

static bool same_shape(const tl_tensor *got, const fx_tensor *want)
{
    if (tl_ndim(got) != want->ndim)
        return false;
    for (size_t d = 0; d < want->ndim; d++)
        if (tl_shape(got)[d] != want->shape[d])
            return false;
    return true;
}

static bool values_close(const double *got, const fx_tensor *want, tl_dtype dtype,
                         double rtol, double atol, const char *label)
{
    for (size_t i = 0; i < want->count; i++) {
        double w = want->data[i], diff = fabs(got[i] - w);
        if (got[i] == w || (isnan(got[i]) && isnan(w)))
            continue;
        if (isinf(w) || !(diff <= atol + rtol * fabs(w))) {
            printf("    %s: %s element %zu is %.9g, want %.9g\n", label, tl_dtype_name(dtype), i,
                   got[i], w);
            return false;
        }
    }
    return true;
}

bool fx_expect(const tl_tensor *got, const fx_tensor *want, tl_dtype dtype, const char *label)
{
    return fx_expect_tol(got, want, dtype, fx_rtol(dtype), fx_rtol(dtype), label);
}

bool fx_expect_tol(const tl_tensor *got, const fx_tensor *want, tl_dtype dtype, double rtol,
                   double atol, const char *label)
{
    if (!got) {
        printf("    %s: %s failed: %s\n", label, tl_dtype_name(dtype), tl_last_error());
        return false;
    }
    if (!same_shape(got, want) || tl_dtype_of(got) != dtype) {
        printf("    %s: got %s with the wrong shape or dtype\n", label,
               tl_dtype_name(tl_dtype_of(got)));
        return false;
    }
    double *vals = malloc((want->count ? want->count : 1) * sizeof *vals);
    tl_tensor *f64 = tl_to_dtype(got, TL_F64);
    bool ok = vals && f64 && tl_to_vec(f64, vals, want->count * sizeof *vals) == TL_OK &&
              values_close(vals, want, dtype, rtol, atol, label);
    tl_release(f64);
    free(vals);
    return ok;
}

bool fx_failed_with(tl_status got, tl_status want, const char *part)
{
    if (got == want && tl_last_status() == want && strstr(tl_last_error(), part))
        return true;
    printf("    want status %d with '%s', got status %d: %s\n", (int)want, part, (int)got,
           got == TL_OK ? "(success)" : tl_last_error());
    return false;
}

tl_status fx_status(tl_tensor *t)
{
    if (!t)
        return tl_last_status();
    tl_release(t);
    return TL_OK;
}

const char *fx_dir(int argc, char **argv)
{
    if (argc == 2)
        return argv[1];
    printf("usage: %s FIXTURE_DIR\n", argv[0]);
    return NULL;
}

void fx_release(tl_tensor *const *ts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tl_release(ts[i]);
}

bool fx_each_case(const char *dir, const char *name, fx_run_fn run)
{
    fx_file f;
    if (!fx_load(dir, name, &f))
        return false;
    for (size_t i = 0; i < f.ncases; i++)
        for (size_t d = 0; d < sizeof fx_float_dtypes / sizeof fx_float_dtypes[0]; d++)
            for (int v = 0; v < FX_VARIANT_COUNT; v++)
                run(&f.cases[i], fx_float_dtypes[d], v);
    fx_free(&f);
    return true;
}

tl_dtype fx_case_dtype(const fx_case *c)
{
    const char *u = strrchr(c->name, '_');
    for (int d = 0; u && d < TL_DTYPE_COUNT; d++)
        if (!strcmp(u + 1, tl_dtype_name((tl_dtype)d)))
            return (tl_dtype)d;
    return TL_DTYPE_COUNT;
}

bool fx_check(const fx_case *c, const char *name, tl_tensor *got, tl_dtype dtype, double rtol,
              double atol, fx_variant v)
{
    char label[256];
    int at = snprintf(label, sizeof label, "%s", c->name);
    for (size_t i = 0; i < c->nparams && at > 0 && (size_t)at < sizeof label; i++)
        at += snprintf(label + at, sizeof label - (size_t)at, " %s=%ld", c->param_names[i],
                       c->params[i]);
    if (at > 0 && (size_t)at < sizeof label)
        snprintf(label + at, sizeof label - (size_t)at, " %s (%s)", name, fx_variant_name(v));
    const fx_tensor *want = fx_get(c, name);
    if (!want)
        printf("    %s: the case has no such tensor\n", label);
    bool ok = want && fx_expect_tol(got, want, dtype, rtol, atol, label);
    tl_release(got);
    return ok;
}

size_t fx_dim(const fx_case *c, const char *name)
{
    return TL_DIM(fx_param(c, name));
}

double fx_p(const fx_case *c, size_t i)
{
    const fx_tensor *p = fx_get(c, "p");
    return p && i < p->count ? p->data[i] : NAN;
}

bool fx_run_table(const char *dir, const char *name, const fx_runner *table, size_t n)
{
    fx_file f;
    bool ok = fx_load(dir, name, &f);
    for (size_t i = 0; ok && i < f.ncases; i++) {
        const fx_case *c = &f.cases[i];
        bool matched = false;
        for (size_t r = 0; r < n; r++) {
            if (strncmp(c->name, table[r].prefix, strlen(table[r].prefix)) != 0)
                continue;
            matched = true;
            tl_dtype own = fx_case_dtype(c);
            size_t nd = table[r].dtypes ? table[r].ndtypes : 1;
            for (size_t d = 0; d < nd; d++)
                for (int v = 0; v < FX_VARIANT_COUNT; v++)
                    table[r].run(c, table[r].dtypes ? table[r].dtypes[d] : own, v);
        }
        if (!matched) {
            printf("%s.txt: no runner for case %s\n", name, c->name);
            ok = false;
        }
    }
    if (f.cases)
        fx_free(&f);
    return ok;
}
