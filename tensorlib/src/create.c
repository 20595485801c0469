/*
 * create.c - tensors with fresh storage: constants, ranges, host data, seeded random values.
 * Values are produced on the host and written through the backend, so every device gets the
 * same numbers for the same seed.
 */
#include <math.h>
#include <stdlib.h>

#include "backend.h"

static tl_tensor *filled(const char *op, double value, const size_t *shape, size_t ndim,
                         tl_dtype dtype, tl_device device)
{
    tl_tensor *t = tl_tensor_empty(op, shape, ndim, dtype, device);
    if (!t)
        return NULL;
    tl_operand dst = tl_operand_of(t);
    if (TL_NEED(op, t, fill) != TL_OK || t->storage->backend->fill(&dst, value) != TL_OK) {
        tl_release(t);
        return NULL;
    }
    return t;
}

tl_tensor *tl_zeros(const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device)
{
    return filled("zeros", 0.0, shape, ndim, dtype, device);
}

tl_tensor *tl_ones(const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device)
{
    return filled("ones", 1.0, shape, ndim, dtype, device);
}

tl_tensor *tl_full(double value, const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device)
{
    return filled("full", value, shape, ndim, dtype, device);
}

/* New storage of t's shape, dtype and device, filled with value (candle's zeros_like &c). */
static tl_tensor *filled_like(const char *op, double value, const tl_tensor *t)
{
    if (tl_check_tensor(op, t) != TL_OK)
        return NULL;
    return filled(op, value, t->layout.shape, t->layout.ndim, t->dtype, t->device);
}

tl_tensor *tl_zeros_like(const tl_tensor *t)
{
    return filled_like("zeros_like", 0.0, t);
}

tl_tensor *tl_ones_like(const tl_tensor *t)
{
    return filled_like("ones_like", 1.0, t);
}

tl_tensor *tl_full_like(const tl_tensor *t, double value)
{
    return filled_like("full_like", value, t);
}

static tl_tensor *from_host(const char *op, const void *data, const size_t *shape, size_t ndim,
                            tl_dtype dtype, tl_device device)
{
    tl_tensor *t = tl_tensor_empty(op, shape, ndim, dtype, device);
    if (!t)
        return NULL;
    tl_storage *s = t->storage;
    if (s->nbytes && s->backend->write(s->buf, 0, data, s->nbytes) != TL_OK) {
        tl_release(t);
        return NULL;
    }
    return t;
}

tl_tensor *tl_from_data(const void *data, const size_t *shape, size_t ndim, tl_dtype dtype,
                        tl_device device)
{
    if (!data)
        return tl_fail(TL_ERR_ARG, "from_data: data is NULL"), NULL;
    return from_host("from_data", data, shape, ndim, dtype, device);
}

/* A host array of n elements of dtype, each gen(state, i) (stored as tl_store does: integers
 * saturate), or igen(state, i) when gen is NULL (stored as tl_store_i64 does: they wrap);
 * written to a new tensor. */
typedef double (*gen_fn)(void *state, size_t i);
typedef int64_t (*igen_fn)(void *state, size_t i);

static tl_tensor *generated(const char *op, gen_fn gen, igen_fn igen, void *state,
                            const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device)
{
    size_t nbytes;
    if (!tl_dtype_valid(dtype))
        return tl_fail(TL_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype), NULL;
    if (tl_shape_check(op, shape, ndim, tl_dtype_size(dtype), &nbytes) != TL_OK)
        return NULL;
    void *host = tl_malloc(nbytes);
    if (!host)
        return tl_fail_nomem(op, nbytes), NULL;
    size_t n = tl_shape_elems(shape, ndim);
    for (size_t i = 0; i < n; i++) {
        if (gen)
            tl_store(dtype, host, i, gen(state, i));
        else
            tl_store_i64(dtype, host, i, igen(state, i));
    }
    tl_tensor *t = from_host(op, host, shape, ndim, dtype, device);
    free(host);
    return t;
}

struct arange_state { double start, step; int64_t istart, istep; };

static double arange_gen(void *state, size_t i)
{
    const struct arange_state *a = state;
    return a->start + (double)i * a->step;
}

static int64_t arange_igen(void *state, size_t i)
{
    const struct arange_state *a = state;
    return (int64_t)((uint64_t)a->istart + (uint64_t)i * (uint64_t)a->istep);
}

/* v is a whole number int64 holds. */
static bool whole_int64(double v)
{
    return v == trunc(v) && v >= -0x1p63 && v < 0x1p63;
}

tl_tensor *tl_arange(double start, double end, double step, tl_dtype dtype, tl_device device)
{
    if (step == 0.0 || !isfinite(step) || !isfinite(start) || !isfinite(end))
        return tl_fail(TL_ERR_ARG, "arange: start %g, end %g, step %g do not make a range",
                       start, end, step), NULL;
    double count = ceil((end - start) / step);
    if (count > (double)(SIZE_MAX / 8))
        return tl_fail(TL_ERR_RANGE, "arange: %g elements is too many", count), NULL;
    size_t n = count > 0 ? (size_t)count : 0;
    struct arange_state a = {start, step, 0, 0};
    /* An integer range with a whole start and step counts in int64 and wraps into the dtype,
     * as tl.h's integers do and torch's and numpy's aranges do (u8 0 to 300 by 7 ends 31, 38
     * rather than saturating at 255; i64 from 2^53 by 1 counts where doubles cannot). */
    if (!tl_dtype_is_float(dtype) && tl_dtype_valid(dtype) && whole_int64(start) &&
        whole_int64(step)) {
        a.istart = (int64_t)start;
        a.istep = (int64_t)step;
        return generated("arange", NULL, arange_igen, &a, &n, 1, dtype, device);
    }
    return generated("arange", arange_gen, NULL, &a, &n, 1, dtype, device);
}

/* xoshiro256** seeded through splitmix64: small, fast, reproducible across platforms. */
typedef struct rng {
    uint64_t s[4];
    double a, b;  /* the distribution's two parameters */
    tl_dtype dtype;
    double lo, hi; /* uniform: the least and greatest values of dtype in [a, b) */
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed, double a, double b)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
    r->a = a;
    r->b = b;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return (double)(out >> 11) * 0x1p-53;
}

/* A value of the dtype rounded to nearest can leave [a, b) (f16 rounds 0.9999 up to 1.0):
 * it is clamped to the dtype's own range inside it. */
static double uniform_gen(void *state, size_t i)
{
    rng *r = state;
    (void)i;
    double u = rng_unit(r), width = r->b - r->a;
    double v = isinf(width) ? r->a * (1 - u) + r->b * u : r->a + width * u;
    v = tl_round_to_dtype(r->dtype, v);
    return v < r->lo ? r->lo : v > r->hi ? r->hi : v;
}

/* The neighbour of v (a value of the float dtype) toward +inf (up) or -inf. */
static double dtype_step(tl_dtype dtype, double v, bool up)
{
    if (dtype == TL_F64)
        return nextafter(v, up ? INFINITY : -INFINITY);
    if (dtype == TL_F32)
        return nextafterf((float)v, up ? INFINITY : -INFINITY);
    uint16_t h; /* f16 and bf16: sign and magnitude, magnitudes ordered like their bits */
    tl_store(dtype, &h, 0, v);
    if (v == 0)
        h = up ? 0x0001 : 0x8001;
    else if ((v > 0) == up)
        h++;
    else
        h--;
    return tl_load(dtype, &h, 0);
}

#define TWO_PI 6.283185307179586476925286766559

/* Box-Muller, one value per call from two uniforms (only the cosine branch: the sine one
 * would need state between calls). */
static double normal_gen(void *state, size_t i)
{
    rng *r = state;
    (void)i;
    double u1 = 1.0 - rng_unit(r), u2 = rng_unit(r);
    return r->a + r->b * sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

static tl_tensor *random_tensor(const char *op, gen_fn gen, double a, double b, double lo,
                                double hi, const size_t *shape, size_t ndim, tl_dtype dtype,
                                tl_device device, uint64_t seed)
{
    if (!tl_dtype_is_float(dtype))
        return tl_fail(TL_ERR_DTYPE, "%s: needs a float dtype, got %s", op, tl_dtype_name(dtype)),
               NULL;
    rng r = {.dtype = dtype, .lo = lo, .hi = hi};
    rng_seed(&r, seed, a, b);
    return generated(op, gen, NULL, &r, shape, ndim, dtype, device);
}

tl_tensor *tl_rand(double lo, double hi, const size_t *shape, size_t ndim, tl_dtype dtype,
                   tl_device device, uint64_t seed)
{
    if (!(lo < hi) || !isfinite(lo) || !isfinite(hi))
        return tl_fail(TL_ERR_ARG, "rand: [%g, %g) is not a finite, nonempty range", lo, hi),
               NULL;
    if (!tl_dtype_is_float(dtype))
        return tl_fail(TL_ERR_DTYPE, "rand: needs a float dtype, got %s", tl_dtype_name(dtype)),
               NULL;
    double first = tl_round_to_dtype(dtype, lo), last = tl_round_to_dtype(dtype, hi);
    first = first < lo ? dtype_step(dtype, first, true) : first;
    last = last >= hi ? dtype_step(dtype, last, false) : last;
    if (first > last)
        return tl_fail(TL_ERR_ARG, "rand: no %s value lies in [%g, %g)", tl_dtype_name(dtype),
                       lo, hi), NULL;
    return random_tensor("rand", uniform_gen, lo, hi, first, last, shape, ndim, dtype, device,
                         seed);
}

tl_tensor *tl_randn(double mean, double std, const size_t *shape, size_t ndim, tl_dtype dtype,
                    tl_device device, uint64_t seed)
{
    if (!(std >= 0.0))
        return tl_fail(TL_ERR_ARG, "randn: std %g is not a number >= 0", std), NULL;
    return random_tensor("randn", normal_gen, mean, std, 0, 0, shape, ndim, dtype, device, seed);
}
