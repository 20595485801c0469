/*
 * tl_internal.h - the types and helpers every tensorlib source file shares.
 *
 * How to add an op (the ops engineer's checklist):
 *   1. The public entry point goes in a file named for the op family (ops_unary.c,
 *      ops_binary.c, reduce.c, ...; a new family gets a new file listed in tensorlib/meson.build).
 *      It validates its arguments (tl_check_tensor, tl_check_same, tl_check_dim, ...) and works
 *      out the result's shape and dtype. An op that makes a new tensor then calls tl_run_op
 *      (tl_run_elementwise for an elementwise op, whose result may follow its inputs' order)
 *      (backend.h, dispatch.c): it creates the result, read-locks the inputs in argument order,
 *      calls a small kernel function with the operands, and unlocks. An in-place op takes
 *      tl_lock_write on its target first (lock.c is the only place that locks). The generic
 *      layer never touches a storage's memory: only backends do.
 *   2. The kernel is a member of tl_backend_i (backend.h). Add the member with a comment,
 *      implement it in cpu/ and list it in the static const table in cpu/cpu_backend.c.
 *      Members a backend lacks stay NULL; the entry point then fails with
 *      tl_fail_unsupported(op, device) ("no metal implementation for <op>").
 *   3. CPU kernels walk strided, offset and broadcast layouts with tl_iter (below) and read and
 *      write elements of any dtype with tl_load/tl_store (tl_load_i64/tl_store_i64 for exact
 *      integers); a contiguous same-dtype f32/f64 fast path is a plain typed loop (see
 *      cpu/cpu_elementwise.c).
 *   4. Errors: return tl_fail(status, "<op>: what is wrong (shapes %s, dtype %s)", ...) with
 *      tl_describe/tl_shape_str for the operands. Never print, never abort.
 *   5. Allocate with tl_malloc/tl_calloc (alloc.c) and device buffers with tl_backend_alloc,
 *      so the fault-injection test reaches the new allocation points.
 */
#ifndef TL_INTERNAL_H
#define TL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tl.h"

/* ------------------------------------------------------------------------------------------
 * Layout: which elements of a storage a tensor sees. Strides and offset count elements.
 * A broadcast dim has stride 0. Contiguous: row-major over the shape (dims of size 0 or 1 may
 * carry any stride, as candle's); not implying offset 0 or a view of the whole storage.
 * ---------------------------------------------------------------------------------------- */
typedef struct tl_layout {
    size_t ndim;
    size_t shape[TL_MAX_DIMS];
    size_t stride[TL_MAX_DIMS]; /* elements */
    size_t offset;              /* elements from the start of the storage */
} tl_layout;

/* ------------------------------------------------------------------------------------------
 * Storage: one backend buffer under one rwlock, shared by every view and clone.
 * ---------------------------------------------------------------------------------------- */
struct tl_backend_i;

typedef struct tl_storage {
    atomic_size_t refcount;
    pthread_rwlock_t lock;              /* default attributes; annotated for locktrace */
    const struct tl_backend_i *backend; /* owns buf */
    tl_device device;
    tl_dtype dtype;
    size_t nbytes;
    void *buf;                          /* backend buffer (cpu: host memory) */
    size_t desc_ndim;                   /* shape of the tensor the storage was made for, */
    size_t desc_shape[TL_MAX_DIMS];     /* printed by the locktrace description */
} tl_storage;

struct tl_tensor {
    atomic_size_t refcount;
    tl_storage *storage; /* one reference held */
    tl_layout layout;
    tl_dtype dtype;      /* cached from the storage */
    tl_device device;
};

/* What a backend kernel sees of one operand: the buffer, the layout, the element type. */
typedef struct tl_operand {
    void *buf;
    const tl_layout *layout;
    tl_dtype dtype;
} tl_operand;

/* ------------------------------------------------------------------------------------------
 * error.c
 * ---------------------------------------------------------------------------------------- */
/* Fails with TL_ERR_UNSUPPORTED: "no <device> implementation for <op>". */
tl_status tl_fail_unsupported(const char *op, tl_device device);
tl_status tl_fail_nomem(const char *op, size_t nbytes);
/* For an op built from other public ops: names op in front of the thread's last error unless
 * it already starts with "op:", so a failing step reads "log_sum_exp: max: ..." rather than
 * naming only the step. Returns the last status. tl_within passes a tensor result through,
 * doing that when it is NULL. */
tl_status tl_fail_within(const char *op);
static inline tl_tensor *tl_within(const char *op, tl_tensor *result)
{
    if (!result)
        tl_fail_within(op);
    return result;
}
/* How many failures this thread has recorded: tells whether user code (a custom forward)
 * called tl_fail before returning an error. */
unsigned tl_fail_count(void);

/* ------------------------------------------------------------------------------------------
 * alloc.c: all host allocations (tl_backend_alloc in backend.h for device buffers), so the
 * test hook tl_debug_fail_alloc reaches every allocation point. Free with free().
 * ---------------------------------------------------------------------------------------- */
void *tl_malloc(size_t nbytes);          /* nbytes may be 0 */
/* For types with _Alignas beyond malloc's: align is a power of two (pass _Alignof(type)). */
void *tl_malloc_aligned(size_t align, size_t nbytes);
void *tl_calloc(size_t n, size_t size);

/* ------------------------------------------------------------------------------------------
 * dtype.c: conversions and element access on host memory (cpu kernels, read-out)
 * ---------------------------------------------------------------------------------------- */
bool tl_dtype_is_float(tl_dtype dtype);
bool tl_dtype_valid(tl_dtype dtype);
float tl_f16_to_f32(uint16_t h);
uint16_t tl_f32_to_f16(float f);   /* round to nearest even */
/* bf16 is the top half of an f32; inline so conversion loops vectorize. */
static inline float tl_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; a NaN stays NaN (quieted), never rounding into infinity. */
static inline uint16_t tl_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(f != f ? (u >> 16) | 0x40u : rounded);
}
/* Element i of a host array of dtype, as a double. */
double tl_load(tl_dtype dtype, const void *base, size_t i);
/* Stores v into element i. Integer dtypes truncate toward zero and saturate (NaN -> 0), like
 * Rust's `as`; f16/bf16 round to nearest even. */
void tl_store(tl_dtype dtype, void *base, size_t i, double v);
/* Exact integer access for the integer dtypes (the integer kernels); stores wrap. */
int64_t tl_load_i64(tl_dtype dtype, const void *base, size_t i);
void tl_store_i64(tl_dtype dtype, void *base, size_t i, int64_t v);
/* v rounded to what dtype can hold (tl_load of tl_store). */
double tl_round_to_dtype(tl_dtype dtype, double v);
/* The values an integer dtype holds; *lo and *hi untouched for a float dtype. */
void tl_int_range(tl_dtype dtype, int64_t *lo, int64_t *hi);

/* ------------------------------------------------------------------------------------------
 * layout.c
 * ---------------------------------------------------------------------------------------- */
size_t tl_shape_elems(const size_t *shape, size_t ndim);
/* Checks ndim <= TL_MAX_DIMS and that elems * elem_size fits in size_t; *nbytes gets it. */
tl_status tl_shape_check(const char *op, const size_t *shape, size_t ndim, size_t elem_size,
                         size_t *nbytes);
void tl_layout_contiguous(tl_layout *l, const size_t *shape, size_t ndim, size_t offset);
bool tl_layout_is_contiguous(const tl_layout *l);
size_t tl_layout_elems(const tl_layout *l);
bool tl_same_shape(const tl_layout *a, const tl_layout *b);
/* When in covers its elements densely in some order of its dims (a transposed or permuted
 * view of whole storage, say), *out gets offset 0 and strides that lay the same shape out in
 * that memory order, and the result is true; otherwise *out is plain row-major and false. */
bool tl_layout_follow_order(tl_layout *out, const tl_layout *in);
/* numpy broadcasting of two shapes into out (out_ndim = max ndim). */
tl_status tl_broadcast_shape(const char *op, const tl_layout *a, const tl_layout *b,
                             size_t *out, size_t *out_ndim);
/* src seen with shape (right-aligned; size-1 or missing dims get stride 0). */
tl_status tl_layout_broadcast(const char *op, const tl_layout *src, const size_t *shape,
                              size_t ndim, tl_layout *out);
/* "[2, 3]" into buf; returns buf. TL_SHAPE_STR bytes hold any shape. */
#define TL_SHAPE_STR (TL_MAX_DIMS * 22 + 4)
const char *tl_shape_str(const size_t *shape, size_t ndim, char *buf);

/* Walks the elements of n layouts that share one shape in row-major order, one run at a
 * time. Dims that are contiguous for every operand are merged, so a contiguous tensor is a
 * single run.
 *     tl_iter it;
 *     if (tl_iter_init(&it, shape, ndim, layouts, n))
 *         do { for (size_t i = 0; i < it.inner; i++) use(it.off[k] + i * it.step[k]); }
 *         while (tl_iter_next(&it));
 */
#define TL_ITER_MAX 4
typedef struct tl_iter {
    size_t n;                                 /* operands */
    size_t outer;                             /* dims outside the run */
    size_t shape[TL_MAX_DIMS];
    size_t stride[TL_ITER_MAX][TL_MAX_DIMS];
    size_t idx[TL_MAX_DIMS];
    size_t inner;                             /* elements in the current run */
    size_t off[TL_ITER_MAX];                  /* element offset where the run starts */
    size_t step[TL_ITER_MAX];                 /* stride along the run */
} tl_iter;
/* False when there is nothing to visit (an empty shape). */
bool tl_iter_init(tl_iter *it, const size_t *shape, size_t ndim, const tl_layout *const *layouts,
                  size_t n);
bool tl_iter_next(tl_iter *it);
/* tl_iter_init visiting the dims in the memory order of layouts[0] (its largest stride
 * outermost), for kernels whose result does not depend on the visiting order: a result laid
 * out in its input's memory order (tl_run_elementwise) is then walked in one run. */
bool tl_iter_init_dst_order(tl_iter *it, const size_t *shape, size_t ndim,
                            const tl_layout *const *layouts, size_t n);

/* ------------------------------------------------------------------------------------------
 * storage.c
 * ---------------------------------------------------------------------------------------- */
/* New storage with uninitialised contents for a tensor of shape/dtype on device. */
tl_storage *tl_storage_new(const char *op, tl_device device, tl_dtype dtype, const size_t *shape,
                           size_t ndim);
void tl_storage_retain(tl_storage *s);
void tl_storage_release(tl_storage *s);
/* The locktrace description: "tensorlib storage f32[2,2] cpu 16 B". */
void tl_storage_describe(const void *storage, char *buf, size_t size);

/* ------------------------------------------------------------------------------------------
 * tensor.c
 * ---------------------------------------------------------------------------------------- */
/* A new handle on s (retained) with layout l. */
tl_tensor *tl_tensor_wrap(const char *op, tl_storage *s, const tl_layout *l);
/* A new contiguous tensor with fresh, uninitialised storage. */
tl_tensor *tl_tensor_empty(const char *op, const size_t *shape, size_t ndim, tl_dtype dtype,
                           tl_device device);
tl_operand tl_operand_of(const tl_tensor *t);
/* "f32[2, 3]" into buf (TL_DESC_STR bytes); returns buf. */
#define TL_DESC_STR (TL_SHAPE_STR + 8)
const char *tl_describe(const tl_tensor *t, char *buf);
/* Argument checks that fail with a message naming op. */
tl_status tl_check_tensor(const char *op, const tl_tensor *t);
tl_status tl_check_same(const char *op, const tl_tensor *a, const tl_tensor *b);
/* Resolves a dim counted from the end (size_t)-1 = the last, as candle's D::Minus1) into
 * 0..rank-1 in place; fails naming op unless it is in range. tl_check_dim: rank = t's ndim. */
tl_status tl_resolve_dim(const char *op, const tl_tensor *t, size_t rank, size_t *dim);
tl_status tl_check_dim(const char *op, const tl_tensor *t, size_t *dim);
tl_status tl_check_float(const char *op, const tl_tensor *t);
/* The target of a writing op: no two of its indexes may name one element (a broadcast view),
 * or the result would depend on the order of the writes. */
tl_status tl_check_writable(const char *op, const tl_tensor *t);

/* ------------------------------------------------------------------------------------------
 * lock.c: the only place that takes storage locks. Each fails with TL_ERR_LOCK naming op and
 * the pthread error; on failure nothing stays locked.
 *
 * The acquiring functions are always inlined so the pthread call is made from the op's own
 * frame, which stays live while the op runs. A tracer that records only the call site of each
 * acquisition (locktrace's default, cheap stacks) can then recover the whole stack of an
 * earlier acquisition when the op deadlocks, instead of just a helper that has returned.
 * ---------------------------------------------------------------------------------------- */
#define TL_LOCK_INLINE static inline __attribute__((always_inline))
tl_status tl_lock_failed(const tl_tensor *t, const char *op, const char *mode, int rc);

/* Notes that this thread now holds t's storage lock, so a later EDEADLK can say why. */
void tl_lock_taken(const tl_tensor *t, bool write);

TL_LOCK_INLINE tl_status tl_lock_read(const tl_tensor *t, const char *op)
{
    int rc = pthread_rwlock_rdlock(&t->storage->lock);
    if (rc != 0)
        return tl_lock_failed(t, op, "read", rc);
    tl_lock_taken(t, false);
    return TL_OK;
}

TL_LOCK_INLINE tl_status tl_lock_write(const tl_tensor *t, const char *op)
{
    int rc = pthread_rwlock_wrlock(&t->storage->lock);
    if (rc != 0)
        return tl_lock_failed(t, op, "write", rc);
    tl_lock_taken(t, true);
    return TL_OK;
}

void tl_unlock(const tl_tensor *t);
void tl_unlock_all(const tl_tensor *const *ts, size_t n);

/* Read-locks ts[0..n) in order (a storage appearing twice is locked twice, as candle does). */
TL_LOCK_INLINE tl_status tl_lock_read_all(const tl_tensor *const *ts, size_t n, const char *op)
{
    for (size_t i = 0; i < n; i++) {
        tl_status st = tl_lock_read(ts[i], op);
        if (st != TL_OK) {
            tl_unlock_all(ts, i);
            return st;
        }
    }
    return TL_OK;
}

/* ------------------------------------------------------------------------------------------
 * copy.c
 * ---------------------------------------------------------------------------------------- */
/* A new contiguous tensor of dtype holding t's elements. Takes the read lock on t. */
tl_tensor *tl_copy_as(const char *op, const tl_tensor *t, tl_dtype dtype);
/* What an op built from other ops computes in: an f32 copy of an f16 or bf16 t (sums of their
 * terms leave f16's range, and lose bf16's few bits, long before the result does), else t
 * itself, retained. */
tl_tensor *tl_widen_half(const tl_tensor *t);
/* For an op that squares t's values: a copy in a dtype where those squares cannot overflow
 * (f16 in f32, whose range holds 65504^2; f32 and bf16 in f64 on the cpu, Metal having no
 * f64: f32 there), else t itself, retained. Twice the memory and about three times the time:
 * the ops use it only to redo a result whose squares overflowed (tl_has_inf). */
tl_tensor *tl_widen_squares(const tl_tensor *t);
/* 1 when the float tensor t holds an infinity, 0 when not, -1 (the thread's last error set)
 * when the check failed. */
int tl_has_inf(const tl_tensor *t);

#endif
