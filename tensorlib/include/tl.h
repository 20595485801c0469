/*
 * tl.h - tensorlib: candle-style tensors in C.
 *
 * A tensor is a reference-counted handle: a storage reference plus a layout (shape, strides in
 * elements, start offset). Clones and views (narrow, squeeze, reshape of a contiguous tensor,
 * transpose, permute, broadcast_as, detach, ...) share the storage, and every storage sits
 * under one pthread_rwlock_t. Ordinary ops take read locks on all their inputs, in argument
 * order, and return new storage; in-place ops take the write lock on their target first, then
 * read locks on the other operands - candle's contract, kept on purpose (see the in-place
 * section).
 *
 * Errors are values. A call that returns a tensor returns NULL on failure; a call that returns
 * tl_status returns nonzero. Either way tl_last_status() and tl_last_error() (thread-local,
 * valid until this thread's next failing call) say what went wrong, naming the op and the
 * shapes/dtypes involved. The library never prints and never aborts.
 *
 * Ownership: every tl_tensor * a function returns is owned by the caller and released with
 * tl_release. Arguments are borrowed.
 */
#ifndef TL_H
#define TL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported API; the library is built with hidden visibility for everything else. */
#if defined(__GNUC__) || defined(__clang__)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

#define TL_MAX_DIMS 8

typedef struct tl_tensor tl_tensor;

/* ------------------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------------------- */
typedef enum tl_status {
    TL_OK = 0,
    TL_ERR_ARG,            /* NULL or otherwise invalid argument */
    TL_ERR_SHAPE,          /* shapes do not fit the op */
    TL_ERR_DTYPE,          /* dtype not supported by the op, or operands disagree */
    TL_ERR_DEVICE,         /* operands on different devices, or device unavailable */
    TL_ERR_RANGE,          /* dim, index or size out of range */
    TL_ERR_NOMEM,          /* allocation failed */
    TL_ERR_LOCK,           /* pthread refused a storage lock (e.g. EDEADLK) */
    TL_ERR_SHARED_STORAGE, /* a guarded in-place op got operands that share storage */
    TL_ERR_UNSUPPORTED,    /* no implementation for this backend ("no metal implementation") */
    TL_ERR_BACKEND,        /* the device reported a failure */
} tl_status;

/* Status and message of this thread's last failing call. */
TL_API tl_status tl_last_status(void);
TL_API const char *tl_last_error(void);

/* Records a failure from user code (custom op forwards), printf-style; returns status. */
TL_API tl_status tl_fail(tl_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------------------------------
 * Types, devices
 * ---------------------------------------------------------------------------------------- */
/* Integers compute in int64 and wrap when stored into u8/u32/i16/i32 (u8 200 + 100 is 44, as
 * in candle and numpy; integer -> integer conversions keep the low bits too). Float -> integer
 * conversions truncate toward zero, saturate, and map NaN to 0 (Rust's `as`). Integer
 * division by a tensor holding zero fails with TL_ERR_RANGE (candle's Rust panics). */
typedef enum tl_dtype {
    TL_U8, TL_U32, TL_I64, TL_F16, TL_BF16, TL_F32, TL_F64, TL_I16, TL_I32, TL_DTYPE_COUNT
} tl_dtype;
typedef enum tl_device { TL_CPU, TL_METAL } tl_device;

TL_API const char *tl_dtype_name(tl_dtype dtype); /* "f32" */
TL_API size_t tl_dtype_size(tl_dtype dtype);      /* bytes per element */
TL_API const char *tl_device_name(tl_device device);
TL_API bool tl_device_available(tl_device device); /* TL_METAL: only on macOS with a Metal GPU */

/* ------------------------------------------------------------------------------------------
 * Creation. shape has ndim entries (ndim 0 is a scalar).
 * ---------------------------------------------------------------------------------------- */
TL_API tl_tensor *tl_zeros(const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device);
TL_API tl_tensor *tl_ones(const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device);
TL_API tl_tensor *tl_full(double value, const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device);
/* New storage of t's shape, dtype and device (candle's zeros_like, ones_like, full_like). */
TL_API tl_tensor *tl_zeros_like(const tl_tensor *t);
TL_API tl_tensor *tl_ones_like(const tl_tensor *t);
TL_API tl_tensor *tl_full_like(const tl_tensor *t, double value);
/* start + i * step for i below ceil((end - start) / step), numpy's count (a last value may round
 * past end: 1, 1.3, 0.1 gives 1.3000000000000003); 1-D. candle adds step in the dtype while
 * below end instead (docs/candle-semantics.md). On an integer dtype a whole start and step
 * count in int64 and wrap into the dtype, as torch's and numpy's (u8 -3, 3, 2 gives 253, 255,
 * 1); a fractional one gives the double values converted as tl_to_dtype does. */
TL_API tl_tensor *tl_arange(double start, double end, double step, tl_dtype dtype, tl_device device);
/* Copies elem_count(shape) elements of dtype from data. */
TL_API tl_tensor *tl_from_data(const void *data, const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device);
/* n x n of dtype: ones on and below the diagonal (tril2), on and above it (triu2), on it (eye). */
TL_API tl_tensor *tl_tril2(size_t n, tl_dtype dtype, tl_device device);
TL_API tl_tensor *tl_triu2(size_t n, tl_dtype dtype, tl_device device);
TL_API tl_tensor *tl_eye(size_t n, tl_dtype dtype, tl_device device);
/* candle's arange_step is tl_arange (it always takes a step). */
static inline tl_tensor *tl_arange_step(double start, double end, double step, tl_dtype dtype, tl_device device)
{
    return tl_arange(start, end, step, dtype, device);
}
/* Uniform in [lo, hi) / normal(mean, std); float dtypes; same seed, same values on a device. */
TL_API tl_tensor *tl_rand(double lo, double hi, const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device, uint64_t seed);
TL_API tl_tensor *tl_randn(double mean, double std, const size_t *shape, size_t ndim, tl_dtype dtype, tl_device device, uint64_t seed);

/* ------------------------------------------------------------------------------------------
 * Handles and queries
 * ---------------------------------------------------------------------------------------- */
TL_API tl_tensor *tl_retain(tl_tensor *t);          /* returns t */
TL_API void tl_release(tl_tensor *t);               /* NULL is fine */
/* candle's clone: the same tensor, one more reference (so x and tl_clone(x) share storage). */
TL_API tl_tensor *tl_clone(tl_tensor *t);

TL_API size_t tl_ndim(const tl_tensor *t);
TL_API const size_t *tl_shape(const tl_tensor *t);
TL_API const size_t *tl_strides(const tl_tensor *t); /* in elements */
TL_API size_t tl_offset(const tl_tensor *t);         /* start offset in elements */
TL_API size_t tl_elem_count(const tl_tensor *t);
TL_API tl_dtype tl_dtype_of(const tl_tensor *t);
TL_API tl_device tl_device_of(const tl_tensor *t);
/* Row-major strides on every dim of size 2 or more (candle's is_contiguous); any offset. */
TL_API bool tl_is_contiguous(const tl_tensor *t);
/* True when a and b are views of one storage (and so share one lock). */
TL_API bool tl_shares_storage(const tl_tensor *a, const tl_tensor *b);

/* ------------------------------------------------------------------------------------------
 * Dims. Every argument that names a dim may count from the end, as candle's D::Minus1/Minus2:
 * TL_DIM(-1) (or just -1 converted to size_t) is the last dim, TL_DIM(-2) the one before.
 * Ops that insert a dim (unsqueeze, stack) count from the end of the result.
 * ---------------------------------------------------------------------------------------- */
#define TL_DIM(n) ((size_t)(ptrdiff_t)(n))

/* ------------------------------------------------------------------------------------------
 * Views (share storage, take no lock) and copies
 * ---------------------------------------------------------------------------------------- */
#define TL_INFER ((size_t)-1) /* one reshape dim may be TL_INFER */
TL_API tl_tensor *tl_narrow(const tl_tensor *t, size_t dim, size_t start, size_t len);
TL_API tl_tensor *tl_squeeze(const tl_tensor *t, size_t dim); /* size != 1: unchanged, as candle */
TL_API tl_tensor *tl_unsqueeze(const tl_tensor *t, size_t dim);
TL_API tl_tensor *tl_reshape(const tl_tensor *t, const size_t *shape, size_t ndim); /* copies if not contiguous */
TL_API tl_tensor *tl_transpose(const tl_tensor *t, size_t dim1, size_t dim2);
TL_API tl_tensor *tl_t(const tl_tensor *t); /* transpose of the last two dims (candle's t()) */
TL_API tl_tensor *tl_permute(const tl_tensor *t, const size_t *dims, size_t ndim);
TL_API tl_tensor *tl_broadcast_as(const tl_tensor *t, const size_t *shape, size_t ndim);
/* t seen with shape left ++ t's shape (candle's broadcast_left). */
TL_API tl_tensor *tl_broadcast_left(const tl_tensor *t, const size_t *left, size_t nleft);
TL_API tl_tensor *tl_detach(const tl_tensor *t);
/* Dims start_dim..end_dim (inclusive) as one; start_dim >= end_dim returns t itself, retained
 * (candle's flatten; a 0-d t becomes [1]). */
TL_API tl_tensor *tl_flatten(const tl_tensor *t, size_t start_dim, size_t end_dim);
TL_API tl_tensor *tl_flatten_all(const tl_tensor *t);
/* Splits dim into n views whose sizes differ by one at most, the longer first (candle's chunk,
 * numpy's array_split: 10 into 4 is 3, 3, 2, 2); a dim shorter than n gives one view per
 * element, so there may be fewer than n. out has room for n; *count gets how many. */
TL_API tl_status tl_chunk(const tl_tensor *t, size_t n, size_t dim, tl_tensor **out, size_t *count);
/* narrow(0, index, 1).squeeze(0); a 0-d t is returned itself, retained (candle's get). */
TL_API tl_tensor *tl_get(const tl_tensor *t, size_t index);
TL_API tl_tensor *tl_contiguous(const tl_tensor *t);        /* t itself (retained) when already contiguous */
TL_API tl_tensor *tl_copy(const tl_tensor *t);              /* new storage, always */
/* Both always return new storage, even for the tensor's own dtype or device. */
TL_API tl_tensor *tl_to_dtype(const tl_tensor *t, tl_dtype dtype);
TL_API tl_tensor *tl_to_device(const tl_tensor *t, tl_device device);

/* ------------------------------------------------------------------------------------------
 * Elementwise
 * ---------------------------------------------------------------------------------------- */
typedef enum tl_unary_op {
    TL_EXP, TL_LOG, TL_SIN, TL_COS, TL_TANH, TL_ABS, TL_NEG, TL_RECIP, TL_SQR, TL_SQRT,
    TL_RELU, TL_GELU /* tanh approximation */, TL_GELU_ERF, TL_SILU, TL_FLOOR, TL_CEIL,
    TL_ROUND, TL_SIGN, TL_SIGMOID, TL_ERF, TL_UNARY_COUNT
} tl_unary_op;
/* abs, neg, sqr, relu, sign, floor, ceil, round also take integer tensors; the rest need a
 * float dtype (TL_ERR_DTYPE otherwise). The result of an elementwise op (unary, affine &c,
 * binary, cmp, where_cond) on cpu follows its inputs' memory order when they all lay their
 * elements out densely in one order, e.g. exp of a transposed view is transposed too (numpy's
 * order K); otherwise it is row-major. */
TL_API tl_tensor *tl_unary(tl_unary_op op, const tl_tensor *t);
TL_API const char *tl_unary_name(tl_unary_op op);

/* t * mul + add. On an integer t, candle's: mul and add become t's dtype first (Rust's `as`:
 * truncated, saturated, NaN 0) and the result wraps in the dtype (u8 250 * 2 + 1 is 245, u8
 * x * 0.5 is 0). */
TL_API tl_tensor *tl_affine(const tl_tensor *t, double mul, double add);
TL_API tl_tensor *tl_powf(const tl_tensor *t, double exponent);
/* min(max(t, lo), hi), so hi everywhere when lo > hi (numpy's clip, candle's clamp); a NaN
 * bound is candle's: no bound on a float tensor (x < NaN is false), 0 on an integer one. */
TL_API tl_tensor *tl_clamp(const tl_tensor *t, double lo, double hi);
TL_API tl_tensor *tl_elu(const tl_tensor *t, double alpha);

/* Binary ops follow candle's shape contract: both operands have one shape (TL_ERR_SHAPE names
 * both otherwise), one dtype and one device. tl_broadcast_binary (broadcast_add, ...)
 * broadcasts numpy-style instead; tl_binary_scalar takes a scalar as the right operand, as
 * candle's `t + s` &c: on a float t, s rounded to t's dtype; on an integer t, add/sub/mul/div
 * are candle's affine(1, s), affine(1, -s), affine(s, 0), affine(1 / s, 0), which tl_affine
 * computes in the dtype (see there): u8 3 * 0.5 is 0, u8 1 - 2 is 1, u8 6 / 2 is 0 (1 / 2 is
 * u8 0), u8 x / 0 is x * 255, wrapped. maximum/minimum convert s to t's dtype first. */
typedef enum tl_binary_op { TL_ADD, TL_SUB, TL_MUL, TL_DIV, TL_MAXIMUM, TL_MINIMUM, TL_BINARY_COUNT } tl_binary_op;
TL_API tl_tensor *tl_binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b);
TL_API tl_tensor *tl_broadcast_binary(tl_binary_op op, const tl_tensor *a, const tl_tensor *b);
TL_API tl_tensor *tl_binary_scalar(tl_binary_op op, const tl_tensor *t, double s);
static inline tl_tensor *tl_add(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_ADD, a, b); }
static inline tl_tensor *tl_sub(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_SUB, a, b); }
static inline tl_tensor *tl_mul(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_MUL, a, b); }
static inline tl_tensor *tl_div(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_DIV, a, b); }
static inline tl_tensor *tl_maximum(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_MAXIMUM, a, b); }
static inline tl_tensor *tl_minimum(const tl_tensor *a, const tl_tensor *b) { return tl_binary(TL_MINIMUM, a, b); }
static inline tl_tensor *tl_broadcast_add(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_ADD, a, b); }
static inline tl_tensor *tl_broadcast_sub(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_SUB, a, b); }
static inline tl_tensor *tl_broadcast_mul(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_MUL, a, b); }
static inline tl_tensor *tl_broadcast_div(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_DIV, a, b); }
static inline tl_tensor *tl_broadcast_maximum(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_MAXIMUM, a, b); }
static inline tl_tensor *tl_broadcast_minimum(const tl_tensor *a, const tl_tensor *b) { return tl_broadcast_binary(TL_MINIMUM, a, b); }

/* Comparisons return u8 (1 true, 0 false); shapes as for binary ops. */
typedef enum tl_cmp_op { TL_EQ, TL_NE, TL_LT, TL_LE, TL_GT, TL_GE, TL_CMP_COUNT } tl_cmp_op;
TL_API tl_tensor *tl_cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b);
TL_API tl_tensor *tl_broadcast_cmp(tl_cmp_op op, const tl_tensor *a, const tl_tensor *b);
TL_API tl_tensor *tl_cmp_scalar(tl_cmp_op op, const tl_tensor *t, double s);
/* cond (an integer dtype, nonzero = true) picks from on_true or on_false; all three of one
 * shape (broadcast them first with tl_broadcast_as where needed). */
TL_API tl_tensor *tl_where_cond(const tl_tensor *cond, const tl_tensor *on_true, const tl_tensor *on_false);

/* ------------------------------------------------------------------------------------------
 * Reductions over dims (ndims 0: over all dims); argmax/argmin take exactly one dim and return
 * u32 (the first index of equal extremes). max/min/argmax/argmin follow candle's cpu
 * backend, which starts from the first element of the run and moves only to a strictly
 * greater (smaller) value: a NaN after a number is skipped, a NaN first gives NaN and index 0
 * ([NaN, 5] has max NaN, [5, NaN] max 5; numpy would give NaN for both). Over several dims
 * the run is taken in row-major order. An integer mean truncates; max/min/arg of an empty dim
 * is TL_ERR_SHAPE.
 * ---------------------------------------------------------------------------------------- */
typedef enum tl_reduce_op { TL_SUM, TL_MEAN, TL_MAX, TL_MIN, TL_ARGMAX, TL_ARGMIN, TL_REDUCE_COUNT } tl_reduce_op;
TL_API tl_tensor *tl_reduce(tl_reduce_op op, const tl_tensor *t, const size_t *dims, size_t ndims, bool keepdim);
TL_API tl_tensor *tl_softmax(const tl_tensor *t, size_t dim);
TL_API tl_tensor *tl_log_softmax(const tl_tensor *t, size_t dim);
/* Unbiased variance along dim: sum((t - mean)^2) / (n - 1) (candle's var/var_keepdim); NaN
 * when the dim has fewer than 2 elements, as numpy's var(ddof=1). */
TL_API tl_tensor *tl_var(const tl_tensor *t, size_t dim, bool keepdim);
/* log(sum(exp(t))) over dims (ndims 0: all), shifted by the maximum for stability; f16 and
 * bf16 compute in f32 and round once (70000 f16 zeros give log(70000), not inf). */
TL_API tl_tensor *tl_log_sum_exp(const tl_tensor *t, const size_t *dims, size_t ndims, bool keepdim);
/* sqrt(sum(t^2)) over every element, a 0-d tensor (candle's norm; float dtypes, unscaled: a
 * square past the dtype's range gives inf, as numpy's norm of a float32 array). */
TL_API tl_tensor *tl_norm(const tl_tensor *t);
/* candle-nn's norms over the last dim of a float x (rank >= 1), with alpha (and beta) 1-D of
 * that dim's size and x's dtype: rms_norm is x / sqrt(mean(x^2) + eps) * alpha, layer_norm
 * (x - mean) / sqrt(mean((x - mean)^2) + eps) * alpha + beta (the biased variance). x is
 * normalised in f32 (f16, bf16) or its own dtype, again in f64 on the cpu where its squares
 * overflowed that, and rounded back before alpha and beta, as candle-nn does for f16 and bf16. */
TL_API tl_tensor *tl_rms_norm(const tl_tensor *x, const tl_tensor *alpha, double eps);
TL_API tl_tensor *tl_layer_norm(const tl_tensor *x, const tl_tensor *alpha, const tl_tensor *beta,
                                double eps);
/* a^b elementwise as candle computes it, exp(b * log(a)); one shape, float dtypes. Computed
 * one precision up and rounded once (f16/bf16 in f32; f32 in f64 on the cpu). */
TL_API tl_tensor *tl_pow(const tl_tensor *a, const tl_tensor *b);

/* ------------------------------------------------------------------------------------------
 * Rearranging (candle's names; built from the ops above, so on every device that has those)
 * ---------------------------------------------------------------------------------------- */
/* The running sum along dim: numpy's cumsum in t's dtype, one term at a time with each
 * partial sum rounded to the dtype (so f32 0.1 summed 10^5 times ends at 9998.557, as numpy's
 * does); f16 and bf16 carry the sum in f32 and round each result once (PyTorch's and candle's
 * f16: 4096 f16 ones end at 4096, not 2048); integers wrap. candle's t @ triu2 adds the same
 * terms in order but costs n^2 and spreads a NaN or inf to earlier positions (0 * inf). */
TL_API tl_tensor *tl_cumsum(const tl_tensor *t, size_t dim);
/* The running product along dim, the same way (numpy's cumprod in t's dtype, f16 and bf16 in
 * f32 as PyTorch's; integers wrap; candle has none). */
TL_API tl_tensor *tl_cumprod(const tl_tensor *t, size_t dim);
/* Elements shifted by shift places along dim, wrapping around (candle's roll, numpy's roll
 * along one axis): a negative shift rolls toward index 0. */
TL_API tl_tensor *tl_roll(const tl_tensor *t, ptrdiff_t shift, size_t dim);
TL_API tl_tensor *tl_flip(const tl_tensor *t, const size_t *dims, size_t ndims);
/* rep[d] copies along each dim (0: the dim is empty, as numpy's tile and candle's repeat since
 * its #3877); t gets leading size-1 dims up to nrep first (fewer repeats than t has dims is
 * TL_ERR_SHAPE, as PyTorch's; candle applies them to the leading dims unchecked). */
TL_API tl_tensor *tl_repeat(const tl_tensor *t, const size_t *rep, size_t nrep);
/* left and right extra slices along dim: zeros, or copies of the edge slice; with none on
 * either side, t itself, retained (candle's clone). */
TL_API tl_tensor *tl_pad_with_zeros(const tl_tensor *t, size_t dim, size_t left, size_t right);
TL_API tl_tensor *tl_pad_with_same(const tl_tensor *t, size_t dim, size_t left, size_t right);
/* Nearest neighbour to [b, c, size] / [b, c, h, w]: index i reads min(in - 1,
 * floor(i * (in / out))) with the ratio a double, as candle (2 -> 98 reads index 0 at i = 49,
 * where exact arithmetic would give 1). */
TL_API tl_tensor *tl_upsample_nearest1d(const tl_tensor *t, size_t size);
TL_API tl_tensor *tl_upsample_nearest2d(const tl_tensor *t, size_t h, size_t w);
/* Out-of-place scatter_set and slice_set: a copy of t with the change. */
TL_API tl_tensor *tl_scatter(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim);
TL_API tl_tensor *tl_slice_scatter(const tl_tensor *t, const tl_tensor *src, size_t dim, size_t start);

/* Along the last dim, a stable sort of each row, NaN greater than every number (so last when
 * ascending, first when descending; -0 equals 0):
 * the u32 indexes, or the sorted values (and the indexes through *indices when non-NULL). */
TL_API tl_tensor *tl_arg_sort_last_dim(const tl_tensor *t, bool ascending);
TL_API tl_tensor *tl_sort_last_dim(const tl_tensor *t, bool ascending, tl_tensor **indices);

/* ------------------------------------------------------------------------------------------
 * Linear algebra, convolution
 * ---------------------------------------------------------------------------------------- */
/* [..., m, k] @ [..., k, n] -> [..., m, n]; leading dims must be equal. */
TL_API tl_tensor *tl_matmul(const tl_tensor *a, const tl_tensor *b);
/* matmul with the leading dims broadcast numpy-style (candle's broadcast_matmul). */
TL_API tl_tensor *tl_broadcast_matmul(const tl_tensor *a, const tl_tensor *b);
/* [m, k] @ [k] -> [m] (candle's mv); sum(a * b) of two 1-D tensors of one length as a 0-d
 * tensor (candle's dot: the products in the dtype, so integers wrap as tl_mul's do). */
TL_API tl_tensor *tl_mv(const tl_tensor *a, const tl_tensor *b);
TL_API tl_tensor *tl_dot(const tl_tensor *a, const tl_tensor *b);
/* x [b, c_in, l], kernel [c_out, c_in/groups, k] -> [b, c_out, l_out]. */
TL_API tl_tensor *tl_conv1d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups);
/* x [b, c_in, h, w], kernel [c_out, c_in/groups, kh, kw]; padding/stride/dilation on both axes. */
TL_API tl_tensor *tl_conv2d(const tl_tensor *x, const tl_tensor *kernel, size_t padding, size_t stride,
                     size_t dilation, size_t groups);

/* The adjoint of conv (PyTorch's conv_transpose): x [b, c_in, l] / [b, c_in, h, w], kernel
 * [c_in, c_out/groups, k...] -> [b, c_out, (in - 1) * stride - 2 * padding + dilation * (k - 1)
 * + output_padding + 1 ...]; output_padding below stride or dilation; padding that leaves a
 * size of 0 or less fails with TL_ERR_SHAPE, as PyTorch's does, and so does a kernel of size
 * 0; an empty input gives an empty output. */
TL_API tl_tensor *tl_conv_transpose1d(const tl_tensor *x, const tl_tensor *kernel, size_t padding,
                                      size_t output_padding, size_t stride, size_t dilation,
                                      size_t groups);
TL_API tl_tensor *tl_conv_transpose2d(const tl_tensor *x, const tl_tensor *kernel, size_t padding,
                                      size_t output_padding, size_t stride, size_t dilation);
/* Max / mean of each kh x kw window of [b, c, h, w], windows sh x sw apart, no padding. The
 * max is candle's, as tl_reduce's: from the window's first element, rows in order, moving
 * only to a strictly greater one (a NaN first in its window is the result, a later one is
 * skipped). max_pool2d takes every dtype, avg_pool2d floats only. */
TL_API tl_tensor *tl_max_pool2d(const tl_tensor *t, size_t kh, size_t kw, size_t sh, size_t sw);
TL_API tl_tensor *tl_avg_pool2d(const tl_tensor *t, size_t kh, size_t kw, size_t sh, size_t sw);

/* ------------------------------------------------------------------------------------------
 * Indexing and combining. Index tensors have an integer dtype. An index equal to its dtype's
 * maximum (u8 255, i16 32767, u32 4294967295, ...) is candle's "no index": index_select and
 * gather give 0 there, scatter (set and add) and index_add skip it; any other index outside
 * the dim (a negative one too) fails with TL_ERR_RANGE and changes nothing.
 * ---------------------------------------------------------------------------------------- */
TL_API tl_tensor *tl_index_select(const tl_tensor *t, const tl_tensor *ids, size_t dim);
/* gather: ids has t's rank and at most t's size on every dim but dim (candle's rule); the
 * result has ids' shape, out[p] = t[p with p[dim] = ids[p]]. */
TL_API tl_tensor *tl_gather(const tl_tensor *t, const tl_tensor *ids, size_t dim);
TL_API tl_tensor *tl_scatter_add(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim);
TL_API tl_tensor *tl_index_add(const tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim);
/* New storage, except for one tensor: candle's cat returns it (retained, so the result shares
 * its storage), and stack its unsqueezed view. */
TL_API tl_tensor *tl_cat(const tl_tensor *const *ts, size_t n, size_t dim);
TL_API tl_tensor *tl_stack(const tl_tensor *const *ts, size_t n, size_t dim);

/* ------------------------------------------------------------------------------------------
 * In place. These take the WRITE lock on their target.
 *
 * tl_inplace_op2/3 follow candle exactly: write lock on t, then read locks on the others, and
 * no check that they share storage. When they do (x with tl_clone(x), two rows of one matrix)
 * the thread waits for itself: glibc returns EDEADLK (reported as TL_ERR_LOCK), other
 * platforms hang. This is deliberate - it is the bug class locktrace exists to catch. The
 * _safe variants copy an operand that shares storage with t first.
 *
 * slice_set, scatter_set, scatter_add_set and var_set keep candle's guards and return
 * TL_ERR_SHARED_STORAGE (scatter_*: the guard checks src only, as candle does).
 * ---------------------------------------------------------------------------------------- */
TL_API tl_status tl_const_set(tl_tensor *t, double value);
TL_API tl_status tl_slice_set(tl_tensor *t, const tl_tensor *src, size_t dim, size_t offset);
TL_API tl_status tl_scatter_set(tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim);
TL_API tl_status tl_scatter_add_set(tl_tensor *t, const tl_tensor *ids, const tl_tensor *src, size_t dim);
TL_API tl_status tl_var_set(tl_tensor *t, const tl_tensor *src); /* candle's Var::set */

/* ------------------------------------------------------------------------------------------
 * Custom ops. A forward sees each operand as a tl_view of its storage, under the locks.
 * ---------------------------------------------------------------------------------------- */
typedef struct tl_view {
    void *data;             /* cpu: base of the storage's host memory; metal: the MTLBuffer */
    tl_dtype dtype;
    size_t ndim;
    const size_t *shape;
    const size_t *strides;  /* in elements */
    size_t offset;          /* in elements, from data */
} tl_view;

/* New-tensor ops: the forward returns a new tensor (or NULL after tl_fail). NULL forward: the
 * op fails with "no <device> implementation for <name>". */
typedef struct tl_custom_op {
    const char *name;
    tl_tensor *(*cpu_fwd)(void *ctx, const tl_view *args, size_t nargs);
    tl_tensor *(*metal_fwd)(void *ctx, const tl_view *args, size_t nargs);
    void *ctx;
} tl_custom_op;

/* In-place ops: the forward writes into dst; args are read-only operands. */
typedef struct tl_inplace_op {
    const char *name;
    tl_status (*cpu_fwd)(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs);
    tl_status (*metal_fwd)(void *ctx, const tl_view *dst, const tl_view *args, size_t nargs);
    void *ctx;
} tl_inplace_op;

TL_API tl_tensor *tl_custom_op1(const tl_tensor *a, const tl_custom_op *op);
TL_API tl_tensor *tl_custom_op2(const tl_tensor *a, const tl_tensor *b, const tl_custom_op *op);
TL_API tl_tensor *tl_custom_op3(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c, const tl_custom_op *op);
TL_API tl_status tl_inplace_op1(tl_tensor *t, const tl_inplace_op *op);
TL_API tl_status tl_inplace_op2(tl_tensor *t, const tl_tensor *a, const tl_inplace_op *op);
TL_API tl_status tl_inplace_op3(tl_tensor *t, const tl_tensor *a, const tl_tensor *b, const tl_inplace_op *op);
TL_API tl_status tl_inplace_op2_safe(tl_tensor *t, const tl_tensor *a, const tl_inplace_op *op);
TL_API tl_status tl_inplace_op3_safe(tl_tensor *t, const tl_tensor *a, const tl_tensor *b, const tl_inplace_op *op);

/* ------------------------------------------------------------------------------------------
 * Read-out
 * ---------------------------------------------------------------------------------------- */
/* Copies the elements in logical row-major order, as dtype of t, into dst (capacity bytes). */
TL_API tl_status tl_to_vec(const tl_tensor *t, void *dst, size_t capacity);
/* Formats like candle: [[4.0, 6.0], [3.0, 4.0]]. Floats print as Rust's {:?}: the shortest
 * digits that read back to the same value in the tensor's dtype, always with a '.' or an
 * exponent (1e-7 and 1.5e16 outside [1e-4, 1e16)), NaN, inf; integers plainly ([1, 2]); a
 * scalar without brackets. Returns the length it needs (snprintf semantics), or -1 on failure. */
TL_API int tl_format(const tl_tensor *t, char *buf, size_t size);

/* ------------------------------------------------------------------------------------------
 * Files: numpy's .npy/.npz and safetensors. Loading checks every length, offset and header
 * field against the file and fails with a message naming what is wrong; files are mapped,
 * not read. A list of named tensors is an array of tl_named that tl_named_free releases.
 * ---------------------------------------------------------------------------------------- */
typedef struct tl_named {
    char *name;
    tl_tensor *tensor;
} tl_named;
TL_API void tl_named_free(tl_named *list, size_t n);

/* .npy: versions 1-3, little or big endian, C or Fortran order; u1/b1 (as u8), u4, i2, i4, i8,
 * f2, f4, f8. Saving writes version 1.0, little endian, C order (bf16 has no numpy dtype). */
TL_API tl_tensor *tl_load_npy(const char *path, tl_device device);
TL_API tl_status tl_save_npy(const tl_tensor *t, const char *path);
/* .npz as np.savez writes it (entries stored; np.savez_compressed's deflate is refused with
 * TL_ERR_UNSUPPORTED); names without the .npy suffix, in archive order. */
TL_API tl_status tl_load_npz(const char *path, tl_device device, tl_named **out, size_t *count);
TL_API tl_status tl_save_npz(const char *path, const tl_named *list, size_t n);
/* safetensors: dtypes U8, U32, I16, I32, I64, F16, BF16, F32, F64; __metadata__ is checked and
 * ignored; the list comes sorted by name. Saving writes the tensors in list order. */
TL_API tl_status tl_load_safetensors(const char *path, tl_device device, tl_named **out,
                                     size_t *count);
TL_API tl_status tl_load_safetensors_buffer(const void *data, size_t size, tl_device device,
                                            tl_named **out, size_t *count);
TL_API tl_status tl_save_safetensors(const char *path, const tl_named *list, size_t n);

/* ------------------------------------------------------------------------------------------
 * Testing
 * ---------------------------------------------------------------------------------------- */
/* Makes the nth allocation tensorlib attempts from now fail (once); 0 disarms. Returns how
 * many allocations were still to go (0 when the failure happened or none was armed). For
 * fault-injection tests; process-wide. */
TL_API long tl_debug_fail_alloc(long nth);

#ifdef __cplusplus
}
#endif

#endif
