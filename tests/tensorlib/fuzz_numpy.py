#!/usr/bin/python3
"""Randomized differential check of tensorlib against numpy, live, through ctypes.

    fuzz_numpy.py PATH/TO/libtensorlib.so [SEED [ROUNDS]]

Ops: unary, affine/powf/clamp/elu, binary and comparisons (same shape, broadcast, scalar),
where_cond, reductions (every set of dims, keepdim), softmax/log_softmax, var, log_sum_exp,
norm, rms_norm/layer_norm, pow, cumsum/cumprod, roll, flip, repeat, pads, reshape, flatten,
(un)squeeze, transpose, get, chunk, copy, slice_scatter, sort, matmul/broadcast_matmul, mv,
dot, conv1d/2d, conv_transpose1d/2d, pools, upsample_nearest, index_select, gather, scatter,
scatter_add, index_add, cat/stack, to_dtype, full/arange, in-place const_set, slice_set,
scatter_set and scatter_add_set through strided views (the whole storage checked), tl_format,
and shapes next to valid ones for every op that relates shapes (binary, where_cond, matmul,
mv, dot, cat, stack, gather, scatter_add, index_add, index_select, slice_scatter,
broadcast_as, conv and conv_transpose): accepted or refused as candle's checks decide.

Every round draws an op of tl.h, random shapes (rank 0-5, 0-size and size-1 dims), a dtype
and values (NaN, +-inf, -0, denormals, huge and tiny magnitudes, integer extremes), builds
each input in a random layout (contiguous, permuted, narrowed with an offset, strided, a
broadcast view, or one of these of another), runs the op and compares with numpy computing
in f64 (or exact integers) and rounding to the dtype once. Where candle and numpy differ the
reference follows candle as tl.h documents it (max/min and max_pool2d skip a NaN after a
number, round halves away from 0, relu/sign of NaN are 0, integer division truncates, float
-> integer is Rust's `as`, an integer affine or `t op scalar` converts its parameters into
the dtype and wraps there, an index equal to its dtype's maximum is no index); each such
place says so. Misuse (bad dims, shapes, dtypes) must fail with a message naming the op,
and the library must print nothing: fd 1 and 2 are captured and must stay empty.

Tolerances, |got - want| <= atol + rtol * |want| against the f64 reference rounded to the
dtype: elementwise ops 4 ulps of the dtype (f16 and bf16 compute in f64 and round once, f32
uses libm's float functions: within 1-2 ulps); sums and products of n terms n * eps * the sum
of the terms' magnitudes, except cumsum/cumprod, which are numpy's in the dtype to the bit (one
term at a time, each partial result rounded to the dtype); integers exact; ops that only move
values bit for bit.

Fixed seed, so a failure reproduces; the first argument after the library picks another seed
for exploring (the meson test uses the default). Exits 77 (skip, with the reason printed) when
python3-numpy is absent.
"""
import ctypes as C
import math
import os
import sys
import tempfile
import traceback

try:
    import numpy as np
except ImportError:
    print('SKIP: python3-numpy is not installed; the differential check needs it')
    sys.exit(77)

# ------------------------------------------------------------------------------------------
# The library
# ------------------------------------------------------------------------------------------
U8, U32, I64, F16, BF16, F32, F64, I16, I32 = range(9)
NAMES = ['u8', 'u32', 'i64', 'f16', 'bf16', 'f32', 'f64', 'i16', 'i32']
STORE = [np.uint8, np.uint32, np.int64, np.float16, np.uint16, np.float32, np.float64,
         np.int16, np.int32]
FLOATS = [F16, BF16, F32, F64]
INTS = [U8, U32, I64, I16, I32]
EPS = {F16: 2.0 ** -10, BF16: 2.0 ** -7, F32: 2.0 ** -23, F64: 2.0 ** -52}
TINY = {F16: 2.0 ** -24, BF16: 2.0 ** -133, F32: 2.0 ** -149, F64: 5e-324}
HUGE = {F16: 65504.0, BF16: 3.3895313892515355e38, F32: 3.4028234663852886e38,
        F64: 1.7976931348623157e308}
INT_RANGE = {U8: (0, 255), U32: (0, 2 ** 32 - 1), I64: (-2 ** 63, 2 ** 63 - 1),
             I16: (-2 ** 15, 2 ** 15 - 1), I32: (-2 ** 31, 2 ** 31 - 1)}

(UEXP, ULOG, USIN, UCOS, UTANH, UABS, UNEG, URECIP, USQR, USQRT, URELU, UGELU, UGELU_ERF,
 USILU, UFLOOR, UCEIL, UROUND, USIGN, USIGMOID, UERF) = range(20)
ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM = range(6)
RANGE = 5  # TL_ERR_RANGE
EQ, NE, LT, LE, GT, GE = range(6)
SUM, MEAN, MAX, MIN, ARGMAX, ARGMIN = range(6)

lib = None
P = C.c_void_p
SZ = C.c_size_t


def sizes(vals):
    return (SZ * max(len(vals), 1))(*vals)


def declare(lib):
    sig = {
        'tl_last_error': (C.c_char_p, []), 'tl_last_status': (C.c_int, []),
        'tl_from_data': (P, [P, P, SZ, C.c_int, C.c_int]),
        'tl_release': (None, [P]), 'tl_ndim': (SZ, [P]), 'tl_shape': (C.POINTER(SZ), [P]),
        'tl_dtype_of': (C.c_int, [P]), 'tl_elem_count': (SZ, [P]),
        'tl_to_vec': (C.c_int, [P, P, SZ]),
        'tl_narrow': (P, [P, SZ, SZ, SZ]), 'tl_squeeze': (P, [P, SZ]),
        'tl_unsqueeze': (P, [P, SZ]), 'tl_reshape': (P, [P, P, SZ]),
        'tl_transpose': (P, [P, SZ, SZ]), 'tl_permute': (P, [P, P, SZ]),
        'tl_broadcast_as': (P, [P, P, SZ]), 'tl_copy': (P, [P]), 'tl_contiguous': (P, [P]),
        'tl_flatten': (P, [P, SZ, SZ]), 'tl_get': (P, [P, SZ]),
        'tl_to_dtype': (P, [P, C.c_int]),
        'tl_unary': (P, [C.c_int, P]), 'tl_affine': (P, [P, C.c_double, C.c_double]),
        'tl_powf': (P, [P, C.c_double]), 'tl_clamp': (P, [P, C.c_double, C.c_double]),
        'tl_elu': (P, [P, C.c_double]),
        'tl_binary': (P, [C.c_int, P, P]), 'tl_broadcast_binary': (P, [C.c_int, P, P]),
        'tl_binary_scalar': (P, [C.c_int, P, C.c_double]),
        'tl_cmp': (P, [C.c_int, P, P]), 'tl_broadcast_cmp': (P, [C.c_int, P, P]),
        'tl_cmp_scalar': (P, [C.c_int, P, C.c_double]), 'tl_where_cond': (P, [P, P, P]),
        'tl_reduce': (P, [C.c_int, P, P, SZ, C.c_bool]),
        'tl_softmax': (P, [P, SZ]), 'tl_log_softmax': (P, [P, SZ]),
        'tl_var': (P, [P, SZ, C.c_bool]), 'tl_log_sum_exp': (P, [P, P, SZ, C.c_bool]),
        'tl_norm': (P, [P]), 'tl_pow': (P, [P, P]),
        'tl_cumsum': (P, [P, SZ]), 'tl_cumprod': (P, [P, SZ]),
        'tl_roll': (P, [P, C.c_ssize_t, SZ]), 'tl_flip': (P, [P, P, SZ]),
        'tl_repeat': (P, [P, P, SZ]),
        'tl_pad_with_zeros': (P, [P, SZ, SZ, SZ]), 'tl_pad_with_same': (P, [P, SZ, SZ, SZ]),
        'tl_matmul': (P, [P, P]), 'tl_broadcast_matmul': (P, [P, P]),
        'tl_mv': (P, [P, P]), 'tl_dot': (P, [P, P]),
        'tl_index_select': (P, [P, P, SZ]), 'tl_gather': (P, [P, P, SZ]),
        'tl_scatter_add': (P, [P, P, P, SZ]), 'tl_index_add': (P, [P, P, P, SZ]),
        'tl_scatter': (P, [P, P, P, SZ]), 'tl_slice_scatter': (P, [P, P, SZ, SZ]),
        'tl_cat': (P, [P, SZ, SZ]), 'tl_stack': (P, [P, SZ, SZ]),
        'tl_arg_sort_last_dim': (P, [P, C.c_bool]),
        'tl_sort_last_dim': (P, [P, C.c_bool, P]),
        'tl_conv1d': (P, [P, P, SZ, SZ, SZ, SZ]), 'tl_conv2d': (P, [P, P, SZ, SZ, SZ, SZ]),
        'tl_max_pool2d': (P, [P, SZ, SZ, SZ, SZ]), 'tl_avg_pool2d': (P, [P, SZ, SZ, SZ, SZ]),
        'tl_const_set': (C.c_int, [P, C.c_double]),
        'tl_slice_set': (C.c_int, [P, P, SZ, SZ]),
        'tl_scatter_set': (C.c_int, [P, P, P, SZ]),
        'tl_scatter_add_set': (C.c_int, [P, P, P, SZ]),
        'tl_rms_norm': (P, [P, P, C.c_double]), 'tl_layer_norm': (P, [P, P, P, C.c_double]),
        'tl_arange': (P, [C.c_double, C.c_double, C.c_double, C.c_int, C.c_int]),
        'tl_full': (P, [C.c_double, P, SZ, C.c_int, C.c_int]),
        'tl_format': (C.c_int, [P, C.c_char_p, SZ]),
        'tl_conv_transpose1d': (P, [P, P, SZ, SZ, SZ, SZ, SZ]),
        'tl_conv_transpose2d': (P, [P, P, SZ, SZ, SZ, SZ]),
        'tl_chunk': (C.c_int, [P, SZ, SZ, P, P]),
        'tl_load_npy': (P, [C.c_char_p, C.c_int]), 'tl_save_npy': (C.c_int, [P, C.c_char_p]),
        'tl_load_npz': (C.c_int, [C.c_char_p, C.c_int, P, P]),
        'tl_named_free': (None, [P, SZ]),
        'tl_upsample_nearest1d': (P, [P, SZ]), 'tl_upsample_nearest2d': (P, [P, SZ, SZ]),
        'tl_zeros': (P, [P, SZ, C.c_int, C.c_int]), 'tl_ones': (P, [P, SZ, C.c_int, C.c_int]),
        'tl_zeros_like': (P, [P]), 'tl_ones_like': (P, [P]),
        'tl_full_like': (P, [P, C.c_double]),
        'tl_eye': (P, [SZ, C.c_int, C.c_int]), 'tl_tril2': (P, [SZ, C.c_int, C.c_int]),
        'tl_triu2': (P, [SZ, C.c_int, C.c_int]),
        'tl_strides': (C.POINTER(SZ), [P]), 'tl_offset': (SZ, [P]),
        'tl_is_contiguous': (C.c_bool, [P]), 'tl_shares_storage': (C.c_bool, [P, P]),
        'tl_broadcast_left': (P, [P, P, SZ]), 'tl_flatten_all': (P, [P]), 'tl_t': (P, [P]),
        'tl_detach': (P, [P]), 'tl_clone': (P, [P]), 'tl_to_device': (P, [P, C.c_int]),
        'tl_var_set': (C.c_int, [P, P]),
        'tl_rand': (P, [C.c_double, C.c_double, P, SZ, C.c_int, C.c_int, C.c_uint64]),
        'tl_randn': (P, [C.c_double, C.c_double, P, SZ, C.c_int, C.c_int, C.c_uint64]),
        'tl_fail': (C.c_int, [C.c_int, C.c_char_p]),
        'tl_custom_op1': (P, [P, P]), 'tl_custom_op2': (P, [P, P, P]),
        'tl_custom_op3': (P, [P, P, P, P]),
        'tl_inplace_op1': (C.c_int, [P, P]), 'tl_inplace_op2': (C.c_int, [P, P, P]),
        'tl_inplace_op3': (C.c_int, [P, P, P, P]),
        'tl_inplace_op2_safe': (C.c_int, [P, P, P]),
        'tl_inplace_op3_safe': (C.c_int, [P, P, P, P]),
        'tl_save_npz': (C.c_int, [C.c_char_p, P, SZ]),
        'tl_save_safetensors': (C.c_int, [C.c_char_p, P, SZ]),
        'tl_load_safetensors': (C.c_int, [C.c_char_p, C.c_int, P, P]),
        'tl_load_safetensors_buffer': (C.c_int, [P, SZ, C.c_int, P, P]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


class Failed(Exception):
    """A tensorlib call returned an error where numpy has a result."""


def err():
    return lib.tl_last_error().decode()


def check_ptr(t, what):
    if not t:
        raise Failed('%s failed: %s' % (what, err()))
    return t


# Every tensor made in a round, released when the round ends.
live = []


def own(t, what='call'):
    check_ptr(t, what)
    live.append(t)
    return t


def release_all():
    while live:
        lib.tl_release(live.pop())


# ------------------------------------------------------------------------------------------
# numpy side: dtype rounding
# ------------------------------------------------------------------------------------------
def f64_to_bf16_bits(x):
    """Round f64 to bf16, to nearest even, once: round to odd on the way through f32."""
    x = np.asarray(x, np.float64)
    with np.errstate(over='ignore', invalid='ignore'):
        y = x.astype(np.float32)
        inexact = (y.astype(np.float64) != x) & np.isfinite(x)
        over = np.abs(y.astype(np.float64)) > np.abs(x)
        y = np.where(inexact & over, np.nextafter(y, np.float32(0)), y)
    bits = y.reshape(-1).view(np.uint32).reshape(y.shape)
    bits = np.where(inexact, bits | np.uint32(1), bits)
    nan = np.isnan(x)
    b64 = bits.astype(np.uint64)
    up = b64 + np.uint64(0x7fff) + ((b64 >> np.uint64(16)) & np.uint64(1))
    rounded = (up >> np.uint64(16)).astype(np.uint16)
    return np.where(nan, np.uint16(0x7fc0), rounded).astype(np.uint16)


def bf16_bits_to_f64(b):
    b = np.asarray(b, np.uint16)
    wide = (b.reshape(-1).astype(np.uint32) << 16).view(np.float32)
    return wide.astype(np.float64).reshape(b.shape)


def to_store(x, dt):
    """f64 (or exact int) values -> the stored representation of dt, rounding once."""
    if dt == BF16:
        return f64_to_bf16_bits(x)
    if dt in FLOATS:
        with np.errstate(over='ignore', invalid='ignore'):
            return np.asarray(x, np.float64).astype(STORE[dt])
    return np.asarray(x).astype(STORE[dt])


def from_store(a, dt):
    """Stored representation -> f64 (floats) or int64/uint64 (ints)."""
    if dt == BF16:
        return bf16_bits_to_f64(a)
    if dt in FLOATS:
        return a.astype(np.float64)
    return a.astype(np.int64)


def rounded(x, dt):
    """The f64 value of x rounded to dt (floats)."""
    return from_store(to_store(x, dt), dt)


# ------------------------------------------------------------------------------------------
# Random values and shapes
# ------------------------------------------------------------------------------------------
rng = None


MAX_RANK = 6  # rand_shape draws ranks 0..MAX_RANK-1 (strided views add one; TL_MAX_DIMS is 8)
BIG = 0.1  # the share of shapes with one dim past the kernels' blocks (FUZZ_BIG)


def rand_shape(rank=None, zero=0.08, maxd=5):
    """Mostly small dims; one round in ten has one dim past the cpu kernels' blocks (64-row
    tiles, 256-element chunks, eight-way partial sums)."""
    if rank is None:
        rank = int(rng.integers(0, MAX_RANK))
    dims = []
    for _ in range(rank):
        r = rng.random()
        dims.append(0 if r < zero else 1 if r < zero + 0.2 else int(rng.integers(2, maxd + 1)))
    if rank and maxd == 5 and rng.random() < BIG:
        dims[int(rng.integers(0, rank))] = int(rng.choice([63, 64, 65, 129, 257, 700]))
    return tuple(dims)


def rand_floats(shape, dt, special=0.15, scale=None, huge=True, tiny=True):
    """f64 values already representable in dt; huge=False leaves out the magnitudes whose
    sums or products overflow in the dtype where the f64 reference does not."""
    n = int(np.prod(shape, dtype=np.int64))
    s = scale if scale is not None else float(rng.choice([1.0, 1.0, 4.0, 100.0]))
    v = rng.standard_normal(n) * s
    if special:
        pool = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5] + \
            ([TINY[dt], -TINY[dt], 3 * TINY[dt], 1e-30] if tiny else []) + \
            ([HUGE[dt], -HUGE[dt], HUGE[dt] / 3] if huge else [])
        m = rng.random(n) < special
        v[m] = rng.choice(pool, size=int(m.sum()))
    return rounded(v, dt).reshape(shape)


def rand_ints(shape, dt, lo=None, hi=None, extremes=0.15):
    n = int(np.prod(shape, dtype=np.int64))
    a, b = INT_RANGE[dt]
    lo = a if lo is None else max(lo, a)
    hi = b if hi is None else min(hi, b)
    small = rng.integers(max(lo, -50), min(hi, 50) + 1, size=n, dtype=np.int64)
    if extremes and dt != I64:
        m = rng.random(n) < extremes
        big = rng.integers(lo, hi + 1, size=n, dtype=np.int64)
        ends = rng.choice([lo, hi, lo + 1, hi - 1], size=n)
        small = np.where(m, np.where(rng.random(n) < 0.5, big, ends), small)
    elif extremes:
        m = rng.random(n) < extremes
        # past 2^53 a double no longer holds every integer: ops must not go through one
        ends = np.array([lo, hi, lo + 1, hi - 1, 2 ** 40, -2 ** 40, 2 ** 53 + 1, -2 ** 53 - 1,
                         2 ** 62 + 3, -2 ** 62 - 3], dtype=np.int64)
        small = np.where(m, rng.choice(ends, size=n), small)
    return small.reshape(shape)


def rand_values(shape, dt, **kw):
    return rand_floats(shape, dt, **kw) if dt in FLOATS else rand_ints(shape, dt)


# ------------------------------------------------------------------------------------------
# Building tensors in random layouts, reading them back
# ------------------------------------------------------------------------------------------
def contig(a):
    """A C-ordered copy (np.ascontiguousarray makes a 0-d array 1-d)."""
    return np.array(a, order='C', copy=True)


def raw(values, dt):
    """A fresh contiguous tensor holding values (f64 or int) as dt."""
    a = contig(to_store(values, dt))
    shape = a.shape
    t = lib.tl_from_data(a.ctypes.data, sizes(shape), len(shape), dt, 0)
    return own(t, 'from_data')


def layout(values, dt, depth=0, allow_bcast=True):
    """A tensor with these logical values in a random layout; returns (tensor, description)."""
    shape = values.shape
    nd = len(shape)
    kinds = ['contig', 'perm', 'narrow', 'strided']
    if allow_bcast:
        kinds.append('bcast')
    kind = kinds[int(rng.integers(0, len(kinds)))] if depth < 2 else 'contig'
    if kind == 'perm' and nd >= 2:
        p = rng.permutation(nd)
        inv = np.argsort(p)
        base, d = layout(contig(np.transpose(values, p)), dt, depth + 1, False)
        t = own(lib.tl_permute(base, sizes(list(inv)), nd), 'permute')
        return t, 'permute%s(%s)' % (list(inv), d)
    if kind == 'narrow' and nd >= 1:
        ax = int(rng.integers(0, nd))
        before, after = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        pad = list(shape)
        pad[ax] = before
        pad2 = list(shape)
        pad2[ax] = after
        big = np.concatenate([rand_values(tuple(pad), dt), values, rand_values(tuple(pad2), dt)],
                             axis=ax)
        base, d = layout(big, dt, depth + 1, False)
        t = own(lib.tl_narrow(base, ax, before, shape[ax]), 'narrow')
        return t, 'narrow(%d,%d,%d)(%s)' % (ax, before, shape[ax], d)
    if kind == 'strided' and 1 <= nd < 8:  # the base has one dim more
        ax = int(rng.integers(0, nd))
        k, pick = int(rng.integers(2, 4)), None
        pick = int(rng.integers(0, k))
        big = np.stack([values if j == pick else rand_values(shape, dt) for j in range(k)],
                       axis=ax + 1)
        base, d = layout(big, dt, depth + 1, False)
        n1 = own(lib.tl_narrow(base, ax + 1, pick, 1), 'narrow')
        t = own(lib.tl_squeeze(n1, ax + 1), 'squeeze')
        return t, 'strided(%d,%d/%d)(%s)' % (ax, pick, k, d)
    if kind == 'bcast' and nd >= 1:
        # only when values are constant along some dims: make them so in the caller's copy
        ax = [i for i in range(nd) if rng.random() < 0.4]
        if ax:
            src = values
            for i in ax:
                src = np.take(src, [0] if shape[i] else [], axis=i) if shape[i] else src
            if all(s != 0 for s in shape):
                lead = int(rng.integers(0, 2)) if src.shape[0] == 1 else 0
                small = src.reshape(src.shape[lead:]) if lead else src
                base, d = layout(contig(small), dt, depth + 1, False)
                t = own(lib.tl_broadcast_as(base, sizes(shape), nd), 'broadcast_as')
                values[...] = np.broadcast_to(src, shape)
                return t, 'bcast%s(%s)' % (list(small.shape), d)
    return raw(values, dt), 'contig'


def make(values, dt, allow_bcast=True):
    """(tensor, values, description); values may be changed to be broadcast-constant."""
    values = np.array(values, copy=True)
    t, d = layout(values, dt, 0, allow_bcast)
    return t, values, d


def shape_of(t):
    n = lib.tl_ndim(t)
    s = lib.tl_shape(t)
    return tuple(s[i] for i in range(n))


def read(t):
    """(stored array, dtype) of a result."""
    dt = lib.tl_dtype_of(t)
    shape = shape_of(t)
    a = np.empty(shape, STORE[dt])
    if lib.tl_to_vec(t, a.ctypes.data, a.nbytes) != 0:
        raise Failed('to_vec: ' + err())
    return a, dt


# ------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------
class Mismatch(Exception):
    pass


# FUZZ_STATS=1: per (op, dtype), the checks made, the largest error in ulps of the dtype (of
# the reference's magnitude; below the smallest normal, in subnormal steps) and the largest
# share of its tolerance an error used, printed at the end.
STATS = None
current_op = None


def note_error(g, w, dt, tol):
    fin = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all='ignore'):
        err = np.abs(g - w)
        step = np.maximum(EPS[dt] * 2.0 ** np.floor(np.log2(np.maximum(np.abs(w), 1e-300))),
                          TINY[dt])
        ulp = float(np.max(np.where(fin, err / step, 0), initial=0))
        used = float(np.max(np.where(fin & (tol > 0), err / tol, 0), initial=0)) \
            if tol is not None else 0.0
    k = (current_op, NAMES[dt])
    n, u0, s0 = STATS.get(k, (0, 0.0, 0.0))
    STATS[k] = (n + 1, max(u0, ulp), max(s0, used))


def compare(t, want, dt, ulps=4, atol=None, bits=False, label=''):
    """want: f64 reference (floats: rounded here to dt) or exact ints."""
    got, gdt = read(t)
    want = np.asarray(want)
    if gdt != dt:
        raise Mismatch('%s: dtype %s, want %s' % (label, NAMES[gdt], NAMES[dt]))
    if got.shape != want.shape:
        raise Mismatch('%s: shape %s, want %s' % (label, got.shape, want.shape))
    if got.ndim == 0:  # so that a mismatch can be indexed
        got, want = got.reshape(1), want.reshape(1)
        if atol is not None and np.ndim(atol):
            atol = np.reshape(atol, 1)
        if np.ndim(ulps):
            ulps = np.reshape(ulps, 1)
    if dt in INTS:
        w = want.astype(object) if want.dtype == object else want.astype(np.int64)
        g = got.astype(np.int64)
        if STATS is not None:
            k = (current_op, NAMES[dt])
            n, u0, s0 = STATS.get(k, (0, 0.0, 0.0))
            STATS[k] = (n + 1, u0, s0)
        bad = np.nonzero(g != w)
        if len(bad[0]):
            i = tuple(x[0] for x in bad)
            raise Mismatch('%s: %s at %s got %s want %s' % (label, NAMES[dt], i, g[i], w[i]))
        return
    g = from_store(got, dt)
    w = rounded(want, dt)
    if bits:
        same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    else:
        tol = (TINY[dt] * 4 if atol is None else np.maximum(atol, TINY[dt] * 4)) \
            + ulps * EPS[dt] * np.abs(w)
        with np.errstate(invalid='ignore', over='ignore'):
            same = (np.isnan(g) & np.isnan(w)) | (g == w) | \
                (np.isfinite(w) & (np.abs(g - w) <= tol))
            same &= ~(np.isinf(w) & (g != w))
            # a reference within tolerance of the dtype's largest value may round to inf
            same |= np.isinf(g) & np.isfinite(w) & (np.sign(g) == np.sign(w)) & \
                (np.abs(w) + tol >= HUGE[dt])
            # a finite reference rounding just past the dtype's range
            same |= np.isfinite(want) & np.isinf(g) & np.isinf(w) & (g == w)
    if STATS is not None:
        note_error(g, w, dt, None if bits else tol)
    bad = np.nonzero(~np.asarray(same))
    if len(bad[0]):
        i = tuple(x[0] for x in bad)
        raise Mismatch('%s: %s at %s got %r want %r (%d of %d differ)' % (
            label, NAMES[dt], i, g[i], w[i], len(bad[0]), g.size))


# ------------------------------------------------------------------------------------------
# References following candle where it differs from numpy
# ------------------------------------------------------------------------------------------
def wrap(x, dt):
    """Python/np ints into dt keeping the low bits."""
    lo, hi = INT_RANGE[dt]
    span = hi - lo + 1
    x = np.asarray(x, dtype=object)
    return np.vectorize(lambda v: (int(v) - lo) % span + lo, otypes=[object])(x) \
        if x.size else x


def candle_as_int(x, dt):
    """Rust's `as` from float: truncate, saturate, NaN -> 0 (int64 values)."""
    lo, hi = INT_RANGE[dt]
    x = np.asarray(x, np.float64)
    with np.errstate(invalid='ignore'):
        mid = np.where((x > lo) & (x < float(hi)), np.trunc(x), 0).astype(np.int64)
        return np.where(np.isnan(x), 0, np.where(x <= lo, lo, np.where(x >= float(hi), hi, mid)))


def int_affine(v, mul, add, dt):
    """candle's affine on integers (cpu_backend's Affine): mul and add become T first
    (T::from_f64, Rust's `as`), then v * mul + add in T, wrapping (a release build)."""
    m, a = (int(candle_as_int([p], dt)[0]) for p in (mul, add))
    return wrap(np.array([int(x) * m + a for x in v.flat], dtype=object).reshape(v.shape), dt)


def unary_ref(op, x):
    with np.errstate(all='ignore'):
        if op == UEXP: return np.exp(x)
        if op == ULOG: return np.log(x)
        if op == USIN: return np.sin(x)
        if op == UCOS: return np.cos(x)
        if op == UTANH: return np.tanh(x)
        if op == UABS: return np.abs(x)
        if op == UNEG: return -x
        if op == URECIP: return 1.0 / x
        if op == USQR: return x * x
        if op == USQRT: return np.sqrt(x)
        if op == URELU: return np.where(x > 0, x, 0.0)  # candle: NaN -> 0
        if op == UGELU:  # 0.5 * (1 + tanh(u)) is 1 / (1 + exp(-2u)), without cancelling
            return x / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        if op == UGELU_ERF:
            return 0.5 * x * np.vectorize(lambda v: math.erfc(-v / math.sqrt(2)))(x) \
                if x.size else x
        if op == USILU: return x / (1 + np.exp(-x))
        if op == UFLOOR: return np.floor(x)
        if op == UCEIL: return np.ceil(x)
        if op == UROUND: return np.where(np.isfinite(x), np.sign(x) * np.floor(np.abs(x) + 0.5), x)
        if op == USIGN: return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))
        if op == USIGMOID: return 1 / (1 + np.exp(-x))
        if op == UERF:
            return np.vectorize(math.erf)(x) if x.size else x
    raise AssertionError(op)


def pick(seq):
    return seq[int(rng.integers(0, len(seq)))]


def vals(x, dt):
    """Logical values of an input as the reference sees them: f64 or object ints."""
    return np.asarray(x, np.float64) if dt in FLOATS else np.asarray(x).astype(object)


def rdim(nd):
    """A dim of a rank-nd tensor, sometimes counted from the end (TL_DIM(-k))."""
    d = int(rng.integers(0, nd))
    return (d, d) if rng.random() < 0.7 else (d, (d - nd) % 2 ** 64)


# ------------------------------------------------------------------------------------------
# Ops. Each draws its inputs, calls tensorlib and checks; the returned string describes the
# round for the failure message.
# ------------------------------------------------------------------------------------------
INT_UNARY = [UABS, UNEG, USQR, URELU, USIGN, UFLOOR, UCEIL, UROUND]


def op_unary():
    dt = pick(FLOATS + INTS)
    op = pick(INT_UNARY) if dt in INTS else int(rng.integers(0, 20))
    x, xv, d = make(rand_values(rand_shape(), dt), dt)
    got = own(lib.tl_unary(op, x), 'unary')
    desc = 'unary %d %s %s %s' % (op, NAMES[dt], xv.shape, d)
    if dt in INTS:
        v = vals(xv, dt)
        ref = {UABS: lambda: np.abs(v), UNEG: lambda: -v, USQR: lambda: v * v,
               URELU: lambda: np.where(v > 0, v, 0), USIGN: lambda: np.sign(v)}.get(
            op, lambda: v)()
        compare(got, wrap(ref, dt), dt, label=desc)
        return desc
    x64 = vals(xv, dt)
    ulps, atol = unary_tolerance(op, x64, dt)
    compare(got, unary_ref(op, x64), dt, ulps=ulps, atol=atol, label=desc)
    return desc


def unary_tolerance(op, x64, dt):
    """(ulps, atol) of a float unary op against an f64 reference (fuzz_torch's too)."""
    ulps = 4
    if op == UGELU:  # the exp's argument carries the f32 rounding of u, times |u|
        with np.errstate(all='ignore'):
            u = np.abs(2 * math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3))
        ulps = 4 + 4 * np.where(np.isfinite(u), u, 0)
    atol = None
    if op in (USIGMOID, USILU, UGELU):
        # exp(-x) overflows for x below about -88.7 in f32 (-709 in f64), so x / (1 +
        # exp(-x)) and the like come out 0 there where they are still about |x| e^x (numpy's,
        # candle's and PyTorch's float32 silu and sigmoid too): atol covers |x| e^x there
        atol = {F16: 2.0 ** -14, BF16: 2.0 ** -126, F32: 2.0 ** -120, F64: 2.0 ** -1012}[dt]
    if op == UGELU_ERF:
        # erfc(z) near z = 7 turns the rounding of x / sqrt(2) into 2 z^2 ulps; below x = -37
        # the reference's f64 erfc is subnormal, and 0.5 x multiplies its lost bits (up to
        # 20 subnormal steps; tensorlib's is within 1 there)
        ulps = 8 + np.where(np.isfinite(x64), 2 * x64 * x64, 0)
        atol = 24 * TINY[dt]
    return ulps, atol


def op_affine_family():
    dt = pick(FLOATS + INTS)
    x, xv, d = make(rand_values(rand_shape(), dt), dt)
    v = vals(xv, dt)
    kind = pick(['affine', 'powf', 'clamp', 'elu'] if dt in FLOATS else ['affine', 'clamp'])
    desc = '%s %s %s %s' % (kind, NAMES[dt], xv.shape, d)
    with np.errstate(all='ignore'):
        if kind == 'affine':
            mul, add = pick([1.0, -1.0, 0.5, 2.0, 0.0, 3.25, -7.0]), pick([0.0, 1.0, -2.5, 100.0])
            desc += ' mul %g add %g' % (mul, add)
            got = own(lib.tl_affine(x, mul, add), desc)
            if dt in INTS:
                compare(got, int_affine(v, mul, add, dt), dt, label=desc)
            else:
                compare(got, v * mul + add, dt, atol=4 * EPS[dt] * (np.abs(v * mul) + abs(add)),
                        label=desc)
        elif kind == 'powf':
            e = pick([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -0.5, 2.5, -2.0])
            desc += ' e %g' % e
            got = own(lib.tl_powf(x, e), desc)
            ref = np.power(v, e)
            lv = np.abs(e * np.log(np.abs(v) + 1e-300))
            cond = 4 + np.where(np.isfinite(ref) & (v != 0), lv, 0)
            compare(got, ref, dt, ulps=cond, label=desc)
        elif kind == 'clamp':
            # lo above hi too: then hi everywhere (numpy's clip, candle's clamp)
            # a NaN bound as candle's: none on floats (x < NaN is false), 0 on integers
            # and bounds past every dtype (integers: saturated into it)
            lo = pick([-1.5, 0.0, 2.0, -100.0, 7.0, math.nan, -1e300, 1e300])
            hi = pick([1.0, 3.5, 0.0, 300.0, math.nan, 1e300, -1e300])
            desc += ' %g %g' % (lo, hi)
            got = own(lib.tl_clamp(x, lo, hi), desc)
            if dt in INTS:  # the bounds converted to the dtype first (Rust's `as`)
                l, h = candle_as_int([lo], dt)[0], candle_as_int([hi], dt)[0]
                compare(got, np.array([min(max(a, l), h) for a in v.flat], dtype=object)
                        .reshape(v.shape), dt, label=desc)
            else:
                lo, hi = -math.inf if math.isnan(lo) else lo, math.inf if math.isnan(hi) else hi
                compare(got, np.where(np.isnan(v), v, np.minimum(np.maximum(v, lo), hi)), dt,
                        label=desc)
        else:
            alpha = pick([1.0, 0.5, 2.0, 0.0])
            desc += ' alpha %g' % alpha
            got = own(lib.tl_elu(x, alpha), desc)
            compare(got, np.where(v >= 0, v, alpha * np.expm1(v)), dt, label=desc)
    return desc


def bcast_shapes():
    out = rand_shape()
    shapes = []
    for _ in range(2):
        s = list(out[int(rng.integers(0, len(out) + 1)):] if rng.random() < 0.4 else out)
        for i in range(len(s)):
            if rng.random() < 0.3:
                s[i] = 1
        shapes.append(tuple(s))
    return shapes


def tdiv(x, y):
    """Integer division truncating toward 0 (C's, Rust's; Python's // floors)."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def int_binary_ref(op, a, b, dt):
    if op == ADD: r = a + b
    elif op == SUB: r = a - b
    elif op == MUL: r = a * b
    elif op == DIV:
        r = np.array([tdiv(int(x), int(y)) for x, y in zip(a.flat, b.flat)], dtype=object
                     ).reshape(a.shape)
    elif op == MAXIMUM: r = np.where(a < b, b, a)
    else: r = np.where(b < a, b, a)
    return wrap(r, dt)


def float_binary_ref(op, a, b):
    with np.errstate(all='ignore'):
        if op == ADD: return a + b
        if op == SUB: return a - b
        if op == MUL: return a * b
        if op == DIV: return a / b
        if op == MAXIMUM: return np.where(a < b, b, a)  # candle's: a NaN on the left wins
        return np.where(b < a, b, a)


def op_binary():
    dt = pick(FLOATS + INTS)
    op = int(rng.integers(0, 6))
    mode = pick(['same', 'bcast', 'scalar'])
    if mode == 'same':
        sa = sb = rand_shape()
    elif mode == 'bcast':
        sa, sb = bcast_shapes()
    if mode == 'scalar':
        sa = rand_shape()
        x, xv, d = make(rand_values(sa, dt), dt)
        s = pick([0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -2.5, 255.0, 256.0, 1e10, -0.0, 7.0])
        desc = 'binary_scalar %d %s %s %s s=%r' % (op, NAMES[dt], sa, d, s)
        t = lib.tl_binary_scalar(op, x, s)
        v = vals(xv, dt)
        if dt in INTS:
            got = own(t, desc)
            if op in (MAXIMUM, MINIMUM):
                sv = candle_as_int([s], dt)[0]
                ref = [max(a, sv) if op == MAXIMUM else min(a, sv) for a in v.flat]
                ref = np.array(ref, dtype=object).reshape(v.shape)
            else:  # candle's t + s &c: affine(1, s), affine(1, -s), affine(s, 0), affine(1 / s, 0)
                with np.errstate(divide='ignore'):
                    inv = float(np.float64(1) / np.float64(s))
                mul, add = {ADD: (1.0, s), SUB: (1.0, -s), MUL: (s, 0.0), DIV: (inv, 0.0)}[op]
                ref = int_affine(v, mul, add, dt)
            compare(got, ref, dt, label=desc)
        else:
            got = own(t, desc)
            srd = float(rounded([s], dt)[0])
            ref = float_binary_ref(op, v, np.float64(s if op != DIV else s))
            ref2 = float_binary_ref(op, v, np.float64(srd))
            try:
                compare(got, ref, dt, label=desc)
            except Mismatch:  # candle rounds the scalar to the dtype first
                compare(got, ref2, dt, label=desc)
        return desc
    x, xv, dx = make(rand_values(sa, dt), dt)
    bvals = rand_values(sb, dt)
    y, yv, dy = make(bvals, dt)
    desc = 'binary %s %d %s %s(%s) %s(%s)' % (mode, op, NAMES[dt], sa, dx, sb, dy)
    t = (lib.tl_binary if mode == 'same' else lib.tl_broadcast_binary)(op, x, y)
    a, b = np.broadcast_arrays(vals(xv, dt), vals(yv, dt))
    if dt in INTS and op == DIV and (b == 0).any():
        expect_fail(t, 'division by zero', desc)
        return desc
    got = own(t, desc)
    if dt in INTS:
        compare(got, int_binary_ref(op, a, b, dt), dt, label=desc)
    else:
        compare(got, float_binary_ref(op, a, b), dt, label=desc)
    return desc


def op_cmp():
    dt = pick(FLOATS + INTS)
    op = int(rng.integers(0, 6))
    mode = pick(['same', 'bcast', 'scalar'])
    fns = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
    if mode == 'scalar':
        sa = rand_shape()
        x, xv, d = make(rand_values(sa, dt), dt)
        s = pick([0.0, 1.0, -1.0, 2.5, math.nan, math.inf, -math.inf, 255.0, 300.0, -0.0])
        desc = 'cmp_scalar %d %s %s %s %r' % (op, NAMES[dt], sa, d, s)
        got = own(lib.tl_cmp_scalar(op, x, s), desc)
        v = vals(xv, dt)
        sv = candle_as_int([s], dt)[0] if dt in INTS else float(rounded([s], dt)[0])
        compare(got, fns[op](v, sv).astype(np.int64), U8, label=desc)
        return desc
    sa, sb = (rand_shape(),) * 2 if mode == 'same' else bcast_shapes()
    x, xv, dx = make(rand_values(sa, dt), dt)
    y, yv, dy = make(rand_values(sb, dt), dt)
    desc = 'cmp %s %d %s %s(%s) %s(%s)' % (mode, op, NAMES[dt], sa, dx, sb, dy)
    got = own((lib.tl_cmp if mode == 'same' else lib.tl_broadcast_cmp)(op, x, y), desc)
    a, b = np.broadcast_arrays(vals(xv, dt), vals(yv, dt))
    compare(got, fns[op](a, b).astype(np.int64), U8, label=desc)
    return desc


def op_where():
    dt, cdt = pick(FLOATS + INTS), pick(INTS)
    s = rand_shape()
    c, cv, dc = make(rand_ints(s, cdt, extremes=0.3) * (rng.random(s) < 0.5), cdt)
    x, xv, dx = make(rand_values(s, dt), dt)
    y, yv, dy = make(rand_values(s, dt), dt)
    desc = 'where %s %s %s c(%s) t(%s) f(%s)' % (NAMES[cdt], NAMES[dt], s, dc, dx, dy)
    got = own(lib.tl_where_cond(c, x, y), desc)
    ref = np.where(vals(cv, cdt) != 0, vals(xv, dt), vals(yv, dt))
    compare(got, ref, dt, bits=True, label=desc)
    return desc


def nan_skip_ext(v, axis, op):
    """candle's max/min (its cpu ReduceIndex): from the run's first element, moving only to a
    strictly greater / smaller value, so a later NaN is skipped and a NaN first stays. axis
    may be a tuple: the run is the reduced dims in row-major order."""
    axes = tuple(range(v.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    first = v[tuple(0 if d in axes else slice(None) for d in range(v.ndim))]
    with np.errstate(all='ignore'), warnings_off():
        ext = np.nanmax(v, axis=axes) if op == MAX else np.nanmin(v, axis=axes)
        return np.where(np.isnan(first), np.nan, ext)


class warnings_off:
    def __enter__(self):
        import warnings
        self.c = warnings.catch_warnings()
        self.c.__enter__()
        warnings.simplefilter('ignore')

    def __exit__(self, *a):
        self.c.__exit__(*a)


def arg_ref(v, axis, op):
    """First index of the extreme along axis, a later NaN skipped; a NaN first -> 0 (candle's
    ReduceIndex never leaves it)."""
    m = np.moveaxis(v, axis, -1)
    out = np.zeros(m.shape[:-1], dtype=np.int64)
    for idx in np.ndindex(*m.shape[:-1]):
        row = m[idx]
        best, bi = None, 0
        for i, x in enumerate(row):
            if isinstance(x, float) and math.isnan(x):
                if i == 0:
                    break
                continue
            if best is None or (x > best if op == ARGMAX else x < best):
                best, bi = x, i
        out[idx] = bi
    return out


def op_reduce():
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng.integers(1, 6)))
    nd = len(s)
    op = int(rng.integers(0, 6))
    keep = bool(rng.random() < 0.5)
    # no huge values: an f16 sum may overflow on the way where f64 does not
    xvals = rand_floats(s, dt, special=0.08, scale=pick([1.0, 10.0]), huge=False) \
        if dt in FLOATS else rand_values(s, dt)
    x, xv, d = make(xvals, dt)
    v = vals(xv, dt)
    if op in (ARGMAX, ARGMIN):
        dims = [rdim(nd)]
    else:
        k = int(rng.integers(0, nd + 1))
        dims = [rdim(nd) for _ in range(k)]
        dims = list({a: (a, b) for a, b in dims}.values())
    axes = tuple(a for a, _ in dims) if dims else tuple(range(nd))
    named = [b if b < 99 else b - 2 ** 64 for _, b in dims]
    desc = 'reduce %d %s %s(%s) dims %s keep %s' % (op, NAMES[dt], s, d, named, keep)
    t = lib.tl_reduce(op, x, sizes([b for _, b in dims]), len(dims), keep)
    empty = any(s[a] == 0 for a in axes)
    if op in (MAX, MIN, ARGMAX, ARGMIN) and empty:
        expect_fail(t, 'empty dim', desc)
        return desc
    got = own(t, desc)
    if op in (ARGMAX, ARGMIN):
        ref = arg_ref(v, axes[0], op)
        if keep:
            ref = np.expand_dims(ref, axes[0])
        compare(got, ref, U32, label=desc)
        return desc
    n = int(np.prod([s[a] for a in axes], dtype=np.int64))
    if dt in INTS:
        tot = v.sum(axis=axes, keepdims=keep) if v.size else np.zeros(
            np.sum(np.zeros(v.shape), axis=axes, keepdims=keep).shape, dtype=np.int64)
        if op == SUM:
            ref = wrap(tot, dt)
        elif op == MEAN:  # the exact mean truncated (tl.h), summed without wrapping
            w = np.sum(np.asarray(v, dtype=object), axis=axes, keepdims=keep) if v.size else tot
            ref = np.array([int(a) // n if a >= 0 else -(-int(a) // n) for a in
                            np.asarray(w).flat] if n else [0] * np.size(w),
                           dtype=object).reshape(np.shape(w))
        else:
            ref = (np.max if op == MAX else np.min)(v, axis=axes, keepdims=keep)
        compare(got, ref, dt, label=desc)
        return desc
    with np.errstate(all='ignore'), warnings_off():
        if op == SUM:
            ref = v.sum(axis=axes, keepdims=keep)
        elif op == MEAN:
            ref = v.sum(axis=axes, keepdims=keep) / n if n else \
                np.full(np.sum(v, axis=axes, keepdims=keep).shape, np.nan)
        else:
            ref = nan_skip_ext(v, axes, op)
            if keep:
                ref = np.expand_dims(ref, axes)
            compare(got, ref, dt, bits=False, label=desc)
            return desc
        mag = np.abs(np.where(np.isfinite(v), v, 0)).sum(axis=axes, keepdims=keep)
        if op == MEAN and n:
            mag = mag / n
    compare(got, ref, dt, atol=(n + 2) * EPS[dt] * mag, label=desc)
    return desc


def expect_fail(t, why, desc):
    """t must be NULL with a message; otherwise a mismatch."""
    if t:
        live.append(t)
        raise Mismatch('%s: succeeded, want a failure (%s)' % (desc, why))
    msg = err()
    if not msg:
        raise Mismatch('%s: failed with an empty message (%s)' % (desc, why))


def op_softmax():
    dt = pick(FLOATS)
    s = rand_shape(rank=int(rng.integers(1, 6)))
    nd = len(s)
    a, dim = rdim(nd)
    xvals = rand_floats(s, dt, special=0.05, scale=pick([1.0, 10.0, 1000.0]))
    x, xv, d = make(xvals, dt)
    log = bool(rng.random() < 0.5)
    desc = '%s %s %s(%s) dim %d' % ('log_softmax' if log else 'softmax', NAMES[dt], s, d, a)
    got = own((lib.tl_log_softmax if log else lib.tl_softmax)(x, dim), desc)
    v = vals(xv, dt)
    with np.errstate(all='ignore'), warnings_off():
        m = np.nanmax(v, axis=a, keepdims=True) if v.size else v
        e = np.exp(v - m)
        tot = e.sum(axis=a, keepdims=True)
        n = s[a]
        if log:
            ref = v - m - np.log(tot)
            atol = (n + 4) * EPS[dt] * (np.abs(v - m) + np.abs(np.log(tot)) + 1)
        else:
            ref = e / tot
            # exp's argument carries the rounding of x - max, times its size
            atol = (n + 4 + np.abs(v - m)) * EPS[dt] * np.abs(ref)
    compare(got, ref, dt, atol=np.where(np.isfinite(atol), atol, 0), label=desc)
    return desc


def batch_shapes(bcast):
    lead = rand_shape(rank=int(rng.integers(0, 3)), maxd=3)
    la, lb = list(lead), list(lead)
    if bcast:
        la = la[int(rng.integers(0, len(la) + 1)):]
        la = [1 if rng.random() < 0.3 else x for x in la]
        lb = [1 if rng.random() < 0.3 else x for x in lb]
    m, k, n = (pick([0, 1, 2, 3, 5, 17, 17, 64, 65, 130]) for _ in range(3))
    return tuple(la) + (m, k), tuple(lb) + (k, n)


def op_matmul():
    dt = pick(FLOATS + INTS)
    bc = bool(rng.random() < 0.4)
    sa, sb = batch_shapes(bc)
    gen = (lambda s: rand_floats(s, dt, special=0.02, scale=1.0, huge=False)) if dt in FLOATS else \
        (lambda s: rand_ints(s, dt, extremes=0.1))
    x, xv, dx = make(gen(sa), dt)
    y, yv, dy = make(gen(sb), dt)
    desc = '%smatmul %s %s(%s) %s(%s)' % ('broadcast_' if bc else '', NAMES[dt], sa, dx, sb, dy)
    got = own((lib.tl_broadcast_matmul if bc else lib.tl_matmul)(x, y), desc)
    a, b = vals(xv, dt), vals(yv, dt)
    k = sa[-1]
    if dt in INTS:
        ref = np.matmul(a, b) if a.size and b.size else np.zeros(
            np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1]), dtype=np.int64)
        if k == 0:
            ref = np.zeros(np.shape(ref), dtype=np.int64)
        compare(got, wrap(ref, dt), dt, label=desc)
        return desc
    with np.errstate(all='ignore'):
        ref = np.matmul(a, b)
        mag = np.matmul(np.abs(np.where(np.isfinite(a), a, 0)),
                        np.abs(np.where(np.isfinite(b), b, 0)))
    # a result in the denormal range has lost bits on the way: TINY per term
    compare(got, ref, dt, atol=(k + 2) * (EPS[dt] * mag + TINY[dt]), label=desc)
    return desc


def idx_dtype():
    return pick([U8, U32, I64, I16, I32])


def with_none(iv, idt):
    """Index values with candle's "no index" (the index dtype's maximum, cpu_backend's
    IndexSelect/Gather/Scatter/IndexAdd since #2940) put in a few places, sometimes."""
    iv = np.array(iv, dtype=np.int64)
    if iv.size and rng.random() < 0.2:
        for _ in range(int(rng.integers(1, 3))):
            iv.flat[int(rng.integers(0, iv.size))] = INT_RANGE[idt][1]
    return iv


def op_index():
    dt = pick(FLOATS + INTS)
    kind = pick(['index_select', 'gather', 'scatter_add', 'index_add', 'scatter'])
    s = rand_shape(rank=int(rng.integers(1, 5)))
    nd = len(s)
    a, dim = rdim(nd)
    x, xv, dx = make(rand_floats(s, dt, huge=False) if dt in FLOATS else rand_values(s, dt), dt)
    v = vals(xv, dt)
    idt = idx_dtype()
    bad = rng.random() < 0.1
    hi = s[a] + (3 if bad else 0)
    desc = '%s %s %s(%s) dim %d ids %s' % (kind, NAMES[dt], s, dx, a, NAMES[idt])
    none = INT_RANGE[idt][1]  # candle's "no index": reads 0, writes nowhere

    def ids_of(shape):
        if hi == 0:
            return with_none(np.zeros(shape, dtype=np.int64), idt)
        out = rng.integers(0, min(hi, INT_RANGE[idt][1] + 1), size=shape, dtype=np.int64)
        if bad and idt in (I64, I16, I32) and out.size:  # a negative index is out of range too
            out.flat[int(rng.integers(0, out.size))] = -1
        return with_none(out, idt)

    def out_of_range(iv):
        return (((iv >= s[a]) & (iv != none)) | (iv < 0)).any()

    if kind == 'index_select':
        n = int(rng.integers(0, 6))
        iv = ids_of((n,))
        if s[a] == 0 and n:
            iv = iv + 0  # any index is out of range
        ids, iv, di = make(iv, idt)
        desc += ' %s(%s)' % (list(iv), di)
        t = lib.tl_index_select(x, ids, dim)
        if out_of_range(iv):
            expect_fail(t, 'index out of range', desc)
            return desc
        if s[a]:
            ref = np.take(v, np.where(iv == none, 0, iv).astype(np.int64), axis=a)
        else:  # every index is the marker
            ref = np.zeros(s[:a] + (len(iv),) + s[a + 1:], v.dtype)
        ref[(slice(None),) * a + (iv == none,)] = 0
        compare(own(t, desc), ref, dt, bits=True, label=desc)
        return desc
    if kind == 'gather':
        gs = list(s)
        gs[a] = int(rng.integers(0, 4))
        if rng.random() < 0.3:  # ids smaller than t outside dim: candle's rule (#2567)
            gs = [q if i == a else int(rng.integers(0, q + 1)) for i, q in enumerate(gs)]
        iv = ids_of(tuple(gs))
        ids, iv, di = make(iv, idt)
        desc += ' ids %s(%s)' % (tuple(gs), di)
        t = lib.tl_gather(x, ids, dim)
        if out_of_range(iv):
            expect_fail(t, 'index out of range', desc)
            return desc
        # torch's meaning: out[p] = t[p with p[a] = ids[p]], so t cut to ids' other dims
        vc = v[tuple(slice(None) if i == a else slice(0, q) for i, q in enumerate(gs))]
        ref = np.take_along_axis(vc, np.where(iv == none, 0, iv).astype(np.int64), axis=a) \
            if s[a] else np.zeros(iv.shape, v.dtype)
        ref[iv == none] = 0
        compare(own(t, desc), ref, dt, bits=True, label=desc)
        return desc
    if kind in ('scatter_add', 'scatter'):
        ss = list(s)
        ss[a] = int(rng.integers(0, 4))
        iv = ids_of(tuple(ss))
        if kind == 'scatter':  # unique targets along dim, so the result does not depend on order
            iv = np.zeros(tuple(ss), dtype=np.int64)
            if s[a] >= ss[a] or bad:
                m = np.moveaxis(iv, a, -1)
                for idx in np.ndindex(*m.shape[:-1]):
                    # within what the index dtype holds (u8 ids of a 700 dim would wrap)
                    m[idx] = rng.permutation(max(min(hi, INT_RANGE[idt][1] + 1), ss[a]))[:ss[a]]
            iv = with_none(iv, idt)
        ids, iv, di = make(iv, idt, allow_bcast=False)
        src, sv, ds = make(rand_floats(tuple(ss), dt, huge=False) if dt in FLOATS else
                           rand_values(tuple(ss), dt), dt)
        desc += ' ids %s(%s) src(%s)' % (tuple(ss), di, ds)
        t = (lib.tl_scatter_add if kind == 'scatter_add' else lib.tl_scatter)(x, ids, src, dim)
        if out_of_range(iv):
            expect_fail(t, 'index out of range', desc)
            return desc
        ref = v.copy() if dt in INTS else v.copy()
        svv = vals(sv, dt)
        ref = np.array(ref, dtype=object) if dt in INTS else ref
        mag = np.abs(np.where(np.isfinite(v), v, 0)) if dt in FLOATS else None
        for idx in np.ndindex(*ss):
            if iv[idx] == none:
                continue
            j = list(idx)
            j[a] = int(iv[idx])
            if kind == 'scatter':
                ref[tuple(j)] = svv[idx]
                if mag is not None:
                    mag[tuple(j)] = 0
            else:
                ref[tuple(j)] = ref[tuple(j)] + svv[idx]
                if mag is not None and math.isfinite(svv[idx]):
                    mag[tuple(j)] += abs(svv[idx])
        if dt in INTS:
            compare(own(t, desc), wrap(ref, dt), dt, label=desc)
        else:  # several adds into one place round on the way (in the dtype)
            compare(own(t, desc), ref, dt, atol=(ss[a] + 2) * EPS[dt] * mag, label=desc)
        return desc
    # index_add: src has ids' length along dim
    n = int(rng.integers(0, 5))
    iv = ids_of((n,))
    ids, iv, di = make(iv, idt)
    ss = list(s)
    ss[a] = n
    src, sv, ds = make(rand_floats(tuple(ss), dt, huge=False) if dt in FLOATS else
                       rand_values(tuple(ss), dt), dt)
    desc += ' ids %s src(%s)' % (list(iv), ds)
    t = lib.tl_index_add(x, ids, src, dim)
    if out_of_range(iv):
        expect_fail(t, 'index out of range', desc)
        return desc
    ref = np.array(v, dtype=object) if dt in INTS else v.copy()
    svv = vals(sv, dt)
    mag = np.abs(np.where(np.isfinite(v), v, 0)) if dt in FLOATS else None
    for i, j in enumerate(iv.astype(np.int64)):
        if j == none:
            continue
        sl = [slice(None)] * nd
        sl[a] = int(j)
        sl2 = [slice(None)] * nd
        sl2[a] = i
        ref[tuple(sl)] = ref[tuple(sl)] + svv[tuple(sl2)]
        if mag is not None:
            mag[tuple(sl)] += np.abs(np.where(np.isfinite(svv[tuple(sl2)]), svv[tuple(sl2)], 0))
    if dt in INTS:
        compare(own(t, desc), wrap(ref, dt), dt, label=desc)
    else:
        compare(own(t, desc), ref, dt, atol=(n + 2) * EPS[dt] * mag, label=desc)
    return desc


def convert_ref(v, src, dst):
    """Float -> float rounds once; float -> integer is Rust's `as`; integers wrap."""
    if dst in FLOATS:
        return np.asarray(v, np.float64)
    if src in FLOATS:
        return candle_as_int(v, dst)
    return wrap(v, dst)


def op_to_dtype():
    src, dst = pick(FLOATS + INTS), pick(FLOATS + INTS)
    s = rand_shape()
    vv = rand_values(s, src)
    if src == I64 and rng.random() < 0.5:  # past 2^53: an f32/f16 result must round once
        vv = rng.integers(-2 ** 63, 2 ** 63 - 1, size=s, dtype=np.int64)
    if src in (F32, F64) and rng.random() < 0.5:  # the narrower dtypes' rounding boundaries
        edges = [65504.0, 65519.99, 65520.0, 65536.0, 2.0 ** -25, 2.0 ** -25 * 1.0000001,
                 2.0 ** -24 * 1.5, 2.0 ** -14 * (1 - 2 ** -11), 3.3895314e38, 3.3961e38,
                 2.0 ** -133, 2.0 ** -134, 2.0 ** -149, 2.0 ** -150, 1 + 2.0 ** -8,
                 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 255.5, 256.0, -0.99,
                 4294967295.5, 2.0 ** 63, -2.0 ** 63, 2.0 ** 31, -2.0 ** 31 - 1, 32767.9,
                 -32768.9]
        n = int(np.prod(s, dtype=np.int64))
        e = rounded(rng.choice(edges, size=n) * rng.choice([1.0, -1.0], size=n), src)
        vv = np.where(rng.random(n) < 0.5, e, np.ravel(vv)).reshape(s)
    x, xv, d = make(vv, src)
    desc = 'to_dtype %s -> %s %s(%s)' % (NAMES[src], NAMES[dst], s, d)
    got = own(lib.tl_to_dtype(x, dst), desc)
    v = vals(xv, src)
    if dst in FLOATS and src in INTS:
        exact = np.array([int(a) for a in v.flat], dtype=object).reshape(v.shape)
        compare_int_to_float(got, exact, dst, desc)
        return desc
    compare(got, convert_ref(v, src, dst), dst, bits=dst in FLOATS, label=desc)
    return desc


def round_int_to_float(n, dt):
    """Round a Python int to dt exactly (nearest, ties to even)."""
    from fractions import Fraction
    f = float(n)  # correctly rounded to f64
    if dt == F64:
        return f
    cands = [rounded([f], dt)[0]]
    c = cands[0]
    if math.isfinite(c):
        store = to_store([c], dt)
        for d in (-1, 1):
            bits = store.view(np.uint16 if dt in (F16, BF16) else np.uint32).astype(np.int64) + d
            nb = bits.astype(np.uint16 if dt in (F16, BF16) else np.uint32)
            cands.append(float(from_store(nb.view(STORE[dt]) if dt != BF16 else nb, dt)[0]))
    def key(z):  # nearest, then the even one
        bits = to_store([z], dt).view(np.uint16 if dt in (F16, BF16) else np.uint32)[0]
        return (abs(Fraction(z) - n) if math.isfinite(z) else Fraction(10 ** 400), int(bits) & 1)
    return min(cands, key=key)


def compare_int_to_float(got, exact, dt, desc):
    """Below 2^53 an integer is exact in f64, so rounding that to dt rounds once; past it
    (i64) each element is rounded exactly by round_int_to_float."""
    ref = np.array([float(int(a)) for a in exact.flat], dtype=np.float64).reshape(exact.shape)
    big = np.array([abs(int(a)) >= 2 ** 53 for a in exact.flat], dtype=bool).reshape(exact.shape)
    if big.any():
        ref = rounded(ref, dt)
        for i in np.ndindex(*exact.shape):
            if big[i]:
                ref[i] = round_int_to_float(int(exact[i]), dt)
    compare(got, ref, dt, bits=True, label=desc)


def op_cat():
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng.integers(1, 5)))
    nd = len(s)
    stack = bool(rng.random() < 0.4)
    a, dim = rdim(nd + 1 if stack else nd)
    n = int(rng.integers(1, 4))
    ts, vs, ds = [], [], []
    for _ in range(n):
        sh = list(s)
        if not stack:
            sh[a] = int(rng.integers(0, 4))
        t, v, d = make(rand_values(tuple(sh), dt), dt)
        ts.append(t), vs.append(v), ds.append(d)
    arr = (P * n)(*ts)
    desc = '%s %s %s dim %d parts %s' % ('stack' if stack else 'cat', NAMES[dt],
                                          [v.shape for v in vs], a, ds)
    got = own((lib.tl_stack if stack else lib.tl_cat)(arr, n, dim), desc)
    ref = (np.stack if stack else np.concatenate)([vals(v, dt) for v in vs], axis=a)
    compare(got, ref, dt, bits=True, label=desc)
    return desc


def float_input(dt, rank_lo=1, huge=False, special=0.08, scale=None):
    s = rand_shape(rank=int(rng.integers(rank_lo, 6)))
    x, xv, d = make(rand_floats(s, dt, special=special, scale=scale, huge=huge), dt)
    return x, vals(xv, dt), d, s


def op_stats():
    """var, log_sum_exp, norm: float reductions built from other ops."""
    dt = pick(FLOATS)
    kind = pick(['var', 'log_sum_exp', 'norm'])
    # f16 squares overflow past 255 (as numpy's var and norm of float16 do): smaller values
    x, v, d, s = float_input(dt, rank_lo=0 if kind == 'norm' else 1,
                             scale=4.0 if dt == F16 else None)
    if kind == 'var' and dt in (F32, F64) and rng.random() < 0.3:  # far from 0, small spread
        off = pick([1e4, -1e6, 3e8])
        x, xv, d = make(rounded(off + rng.standard_normal(s), dt), dt)
        v = vals(xv, dt)
        d = 'offset %g %s' % (off, d)
    nd = len(s)
    keep = bool(rng.random() < 0.5)
    desc = '%s %s %s(%s) keep %s' % (kind, NAMES[dt], s, d, keep)
    fin = np.where(np.isfinite(v), v, 0)
    with np.errstate(all='ignore'), warnings_off():
        if kind == 'var':
            a, dim = rdim(nd)
            desc += ' dim %d' % a
            got = own(lib.tl_var(x, dim, keep), desc)
            n = s[a]
            ref = np.var(v, axis=a, ddof=1, keepdims=keep) if n else \
                np.full(np.sum(np.zeros(s), axis=a, keepdims=keep).shape, np.nan)
            # each x - mean carries eps * |x|: the sum of squares 2 eps sum |x - mean| |x|
            dev = np.abs(fin - fin.mean(axis=a, keepdims=True)) if n else fin
            mag = ((dev + EPS[dt] * np.abs(fin)) * (np.abs(fin) + dev)).sum(
                axis=a, keepdims=keep) / max(n - 1, 1)
            compare(got, ref, dt, atol=(n + 8) * EPS[dt] * mag, label=desc)
        elif kind == 'log_sum_exp':
            k = int(rng.integers(0, nd + 1))
            dims = list({a: (a, b) for a, b in (rdim(nd) for _ in range(k))}.values())
            axes = tuple(a for a, _ in dims) if dims else tuple(range(nd))
            desc += ' dims %s' % [a for a, _ in dims]
            t = lib.tl_log_sum_exp(x, sizes([b for _, b in dims]), len(dims), keep)
            if any(s[a] == 0 for a in axes):
                expect_fail(t, 'max over an empty dim', desc)
                return desc
            got = own(t, desc)
            m = np.nanmax(v, axis=axes, keepdims=True)
            sh = np.where(np.isfinite(m), m, 0)
            tot = np.exp(v - sh).sum(axis=axes, keepdims=True)
            ref = np.log(tot) + sh
            n = int(np.prod([s[a] for a in axes]))
            atol = (n + 4) * EPS[dt] * (np.abs(np.log(tot)) + np.abs(sh) + 1)
            if not keep:
                ref, atol = np.squeeze(ref, axes), np.squeeze(atol, axes)
            compare(got, ref, dt, atol=np.where(np.isfinite(atol), atol, 0), label=desc)
        else:
            got = own(lib.tl_norm(x), desc)
            # the sum of squares is the dtype's: past its range the norm is inf (numpy's too)
            ref = np.sqrt(rounded((v * v).sum(), dt))
            compare(got, ref, dt, atol=(v.size + 4) * EPS[dt] * ref if np.isfinite(ref) else 0,
                    label=desc)
    return desc


def op_norms():
    dt = pick(FLOATS)
    s = rand_shape(rank=int(rng.integers(1, 5)))
    h = s[-1]
    x, xv, d = make(rand_floats(s, dt, special=0.03, huge=False), dt)
    al, av, da = make(rand_floats((h,), dt, special=0, huge=False), dt)
    layer = bool(rng.random() < 0.5)
    eps = pick([1e-5, 1e-6, 0.1])
    v, a = vals(xv, dt), vals(av, dt)
    desc = '%s %s %s(%s) alpha(%s) eps %g' % ('layer_norm' if layer else 'rms_norm', NAMES[dt],
                                             s, d, da, eps)
    # f16/bf16 are normalised in f32 and rounded back before alpha (candle-nn)
    work = F32 if dt in (F16, BF16) else dt
    with np.errstate(all='ignore'), warnings_off():
        if layer:
            be, bv, db = make(rand_floats((h,), dt, special=0, huge=False), dt)
            b = vals(bv, dt)
            got = own(lib.tl_layer_norm(x, al, be, eps), desc)
            mu = v.mean(axis=-1, keepdims=True)
            c = v - mu
            norm = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps)
            ref = rounded(norm, dt) * a + b if dt != work else norm * a + b
            # x - mean cancels: its rounding is relative to |x|, not to the difference
            scale = (np.abs(v) + np.abs(mu)) / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps)
            mag = (np.abs(rounded(norm, dt)) + scale) * np.abs(a) + np.abs(b)
        else:
            got = own(lib.tl_rms_norm(x, al, eps), desc)
            norm = v / np.sqrt((v * v).mean(axis=-1, keepdims=True) + eps)
            ref = rounded(norm, dt) * a if dt != work else norm * a
            mag = np.abs(ref)
    compare(got, ref, dt, atol=(h + 8) * EPS[dt] * (np.where(np.isfinite(mag), mag, 0) + 1),
            ulps=8, label=desc)
    return desc


def op_scan():
    """cumsum, cumprod, roll, flip, pow."""
    dt = pick(FLOATS + INTS)
    kind = pick(['cumsum', 'cumprod', 'roll', 'flip', 'pow'] if dt in FLOATS else
                ['cumsum', 'cumprod', 'roll', 'flip'])
    s = rand_shape(rank=int(rng.integers(0 if kind == 'flip' else 1, 6)))
    nd = len(s)
    gen = (lambda sh: rand_floats(sh, dt, special=0.05, huge=False,
                                  scale=1.0 if kind == 'cumprod' else None)) \
        if dt in FLOATS else (lambda sh: rand_ints(sh, dt, extremes=0.05))
    xs = gen(s)
    if kind == 'cumprod' and dt in FLOATS and rng.random() < 0.3:
        # runs of big values after a 0: a product tree's block overflows to inf and meets
        # the 0 (NaN) where numpy's running product stays 0
        r = rng.random(s)
        xs = np.where(r < 0.5, rounded(pick([1e3, 1e20, 1e200]), dt), np.where(r < 0.6, 0.0, xs))
    x, xv, d = make(xs, dt)
    v = vals(xv, dt)
    desc = '%s %s %s(%s)' % (kind, NAMES[dt], s, d)
    if kind == 'pow':
        y, yv, dy = make(rand_floats(s, dt, special=0.05, huge=False, scale=2.0), dt)
        desc += ' exp(%s)' % dy
        got = own(lib.tl_pow(x, y), desc)
        w = vals(yv, dt)
        with np.errstate(all='ignore'):
            # libm's pow for positive finite bases and finite exponents, candle's
            # exp(b * log(a)) elsewhere (NaN for a < 0, 0 ** 0, 1 ** inf)
            ref = np.where((v > 0) & np.isfinite(v) & np.isfinite(w), np.power(v, w),
                           np.exp(w * np.log(v)))
        # tensorlib rounds the correctly rounded pow once; numpy's f64 loop may be an ulp off
        compare(got, ref, dt, ulps=2 if dt == F64 else 1, label=desc)
        return desc
    if kind == 'flip':
        dims = [rdim(nd) for _ in range(int(rng.integers(0, nd + 1)))] if nd else []
        desc += ' dims %s' % [a for a, _ in dims]
        got = own(lib.tl_flip(x, sizes([b for _, b in dims]), len(dims)), desc)
        ref = v
        for a, _ in dims:  # a dim named twice flips twice
            ref = np.flip(ref, a)
        compare(got, ref, dt, bits=True, label=desc)
        return desc
    a, dim = rdim(nd)
    desc += ' dim %d' % a
    if kind == 'roll':
        sh = int(rng.integers(-12, 13))
        desc += ' shift %d' % sh
        got = own(lib.tl_roll(x, sh, dim), desc)
        compare(got, np.roll(v, sh, axis=a), dt, bits=True, label=desc)
        return desc
    got = own((lib.tl_cumsum if kind == 'cumsum' else lib.tl_cumprod)(x, dim), desc)
    if dt in INTS:
        acc = np.moveaxis(np.array(v, dtype=object), a, -1).copy()
        for i in range(1, acc.shape[-1]):
            prev = acc[..., i - 1]
            acc[..., i] = wrap(prev + acc[..., i] if kind == 'cumsum' else prev * acc[..., i], dt)
        compare(got, wrap(np.moveaxis(acc, -1, a), dt), dt, label=desc)
        return desc
    # numpy's cumsum/cumprod in the dtype: one term at a time, each partial result rounded to
    # the dtype (a running product that underflows to 0 or overflows there stays so, where
    # f64's would not); candle's cumsum (a matmul by triu2) adds the same terms in the same
    # order. f16 and bf16 carry the running value in f32 and round each result once
    # (PyTorch's float accumulator, candle's f16 matmul). So the result is exact to the bit,
    # -0 and NaN included.
    work = F32 if dt in (F16, BF16) else dt
    m = np.moveaxis(v, a, -1).copy()
    with np.errstate(all='ignore'):
        for i in range(1, m.shape[-1]):
            prev = m[..., i - 1]
            m[..., i] = rounded(prev + m[..., i] if kind == 'cumsum' else prev * m[..., i], work)
    compare(got, rounded(np.moveaxis(m, -1, a), dt), dt, bits=True, label=desc)
    return desc


def op_shape():
    """repeat, pad_with_zeros/same, views (reshape, flatten, squeeze, unsqueeze, transpose,
    get, copy, contiguous), slice_scatter."""
    dt = pick(FLOATS + INTS)
    s = rand_shape()
    nd = len(s)
    x, xv, d = make(rand_values(s, dt), dt)
    v = vals(xv, dt)
    kinds = ['repeat', 'reshape', 'flatten_view', 'unsqueeze', 'copy', 'contiguous']
    if nd:
        kinds += ['pad_zeros', 'pad_same', 'squeeze', 'transpose', 'get', 'slice_scatter',
                  'chunk']
    kind = pick(kinds)
    desc = '%s %s %s(%s)' % (kind, NAMES[dt], s, d)
    if kind == 'repeat':
        rep = [int(rng.integers(0, 3)) if rng.random() < 0.2 else int(rng.integers(1, 3))
               for _ in range(int(rng.integers(nd, nd + 2)) if nd < 5 else nd)]
        desc += ' %s' % rep
        t = lib.tl_repeat(x, sizes(rep), len(rep))
        # a 0 count empties the dim, as numpy's tile and candle's repeat since #3877 (0.11.0
        # and before left it whole)
        got = own(t, desc)
        ref = np.tile(v, rep) if len(rep) else v
        compare(got, ref, dt, bits=True, label=desc)
    elif kind in ('pad_zeros', 'pad_same'):
        a, dim = rdim(nd)
        l, r = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        desc += ' dim %d %d %d' % (a, l, r)
        t = (lib.tl_pad_with_zeros if kind == 'pad_zeros' else lib.tl_pad_with_same)(x, dim, l, r)
        if kind == 'pad_same' and s[a] == 0 and l + r:  # numpy's 'edge' refuses it too
            expect_fail(t, 'no edge to copy', desc)
            return desc
        got = own(t, desc)
        pw = [(0, 0)] * nd
        pw[a] = (l, r)
        ref = np.pad(v, pw, mode='constant' if kind == 'pad_zeros' else 'edge')
        compare(got, ref, dt, bits=True, label=desc)
    elif kind == 'reshape':
        n = int(np.prod(s, dtype=np.int64))
        shape = list(np.random.default_rng(int(rng.integers(1 << 30))).permutation(list(s)))
        if rng.random() < 0.5 and shape:
            shape[int(rng.integers(0, len(shape)))] = 2 ** 64 - 1  # TL_INFER
        desc += ' -> %s' % shape
        t = lib.tl_reshape(x, sizes(shape), len(shape))
        want = [n // max(1, int(np.prod([q for q in shape if q != 2 ** 64 - 1]))) if q ==
                2 ** 64 - 1 else q for q in shape]
        if 2 ** 64 - 1 in shape and int(np.prod([q for q in shape if q != 2 ** 64 - 1])) == 0:
            expect_fail(t, 'cannot infer a dim beside a 0', desc)
            return desc
        got = own(t, desc)
        compare(got, np.reshape(v, want), dt, bits=True, label=desc)
    elif kind == 'flatten_view':
        if nd == 0:
            got = own(lib.tl_flatten(x, 0, 0), desc)
            compare(got, v.reshape(1), dt, bits=True, label=desc)
            return desc
        a, b = sorted([int(rng.integers(0, nd)), int(rng.integers(0, nd))])
        desc += ' %d..%d' % (a, b)
        got = own(lib.tl_flatten(x, a, b), desc)
        compare(got, v.reshape(s[:a] + (-1 if int(np.prod(s)) else 0,) + s[b + 1:]) if
                int(np.prod(s)) else np.zeros(s[:a] + (int(np.prod(s[a:b + 1])),) + s[b + 1:]),
                dt, bits=True, label=desc)
    elif kind == 'unsqueeze':
        a = int(rng.integers(0, nd + 1))
        dim = a if rng.random() < 0.7 else (a - nd - 1) % 2 ** 64
        desc += ' %d' % a
        got = own(lib.tl_unsqueeze(x, dim), desc)
        compare(got, np.expand_dims(v, a), dt, bits=True, label=desc)
    elif kind == 'squeeze':
        a, dim = rdim(nd)
        desc += ' %d' % a
        got = own(lib.tl_squeeze(x, dim), desc)
        compare(got, np.squeeze(v, a) if s[a] == 1 else v, dt, bits=True, label=desc)
    elif kind == 'transpose':
        (a, da), (b, db) = rdim(nd), rdim(nd)
        desc += ' %d %d' % (a, b)
        got = own(lib.tl_transpose(x, da, db), desc)
        compare(got, np.swapaxes(v, a, b), dt, bits=True, label=desc)
    elif kind == 'get':
        i = int(rng.integers(0, s[0] + 2))
        desc += ' %d' % i
        t = lib.tl_get(x, i)
        if i >= s[0]:
            expect_fail(t, 'index out of range', desc)
            return desc
        compare(own(t, desc), v[i], dt, bits=True, label=desc)
    elif kind == 'chunk':
        a, dim = rdim(nd)
        n = int(rng.integers(1, 7))
        desc += ' %d into %d' % (a, n)
        out, cnt = (P * n)(), SZ()
        if lib.tl_chunk(x, n, dim, out, C.byref(cnt)):
            raise Failed('%s: %s' % (desc, err()))
        parts = [own(out[i], desc) for i in range(cnt.value)]
        # candle's chunk is numpy's array_split, except that a dim shorter than n gives one
        # piece per element (array_split pads with empty pieces)
        want = [p for p in np.array_split(v, n, axis=a) if p.shape[a]] if s[a] < n else \
            np.array_split(v, n, axis=a)
        if len(parts) != len(want):
            raise Mismatch('%s: %d pieces, want %d' % (desc, len(parts), len(want)))
        for i, (t, w) in enumerate(zip(parts, want)):
            compare(t, w, dt, bits=True, label='%s piece %d' % (desc, i))
    elif kind in ('copy', 'contiguous'):
        got = own((lib.tl_copy if kind == 'copy' else lib.tl_contiguous)(x), desc)
        compare(got, v, dt, bits=True, label=desc)
    else:
        a, dim = rdim(nd)
        n = int(rng.integers(0, s[a] + 1))
        start = int(rng.integers(0, s[a] - n + 2))
        ss = list(s)
        ss[a] = n
        src, sv, ds = make(rand_values(tuple(ss), dt), dt)
        desc += ' dim %d start %d src %s(%s)' % (a, start, ss, ds)
        t = lib.tl_slice_scatter(x, src, dim, start)
        if start + n > s[a]:
            expect_fail(t, 'slice past the end', desc)
            return desc
        ref = v.copy()
        sl = [slice(None)] * nd
        sl[a] = slice(start, start + n)
        ref[tuple(sl)] = vals(sv, dt)
        compare(own(t, desc), ref, dt, bits=True, label=desc)
    return desc


def sort_key_order(row, asc):
    """Stable order with NaN greater than every number; -0 equals 0."""
    idx = list(range(len(row)))
    def key(i):
        x = row[i]
        isnan = isinstance(x, float) and math.isnan(x)
        return (1 if isnan else 0, 0.0 if isnan else x)
    if asc:
        return sorted(idx, key=key)
    # descending and stable: equal keys keep their order
    return sorted(idx, key=lambda i: (-key(i)[0], -key(i)[1]))


def op_sort():
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng.integers(1, 5)))
    x, xv, d = make(rand_values(s, dt) if rng.random() < 0.5 else
                    rand_ints(s, I16, extremes=0).clip(-3, 3).astype(np.float64) if dt in FLOATS
                    else rand_ints(s, dt, extremes=0) % 4, dt)
    v = vals(xv, dt)
    asc = bool(rng.random() < 0.5)
    desc = 'sort %s %s(%s) asc %s' % (NAMES[dt], s, d, asc)
    ip = C.c_void_p()
    got = own(lib.tl_sort_last_dim(x, asc, C.byref(ip)), desc)
    ids = own(ip.value, desc)
    order = np.zeros(s, dtype=np.int64)
    for idx in np.ndindex(*s[:-1]):
        order[idx] = sort_key_order(list(v[idx]), asc)
    compare(ids, order, U32, label=desc + ' indices')
    compare(own(lib.tl_arg_sort_last_dim(x, asc), desc), order, U32, label=desc + ' arg_sort')
    compare(got, np.take_along_axis(v, order, axis=-1), dt, bits=dt in FLOATS, label=desc)
    return desc


def conv_ref(x, k, pad, stride, dil, groups):
    """x [b, cin, *sp], k [cout, cin/groups, *ks]: cross-correlation as torch's conv."""
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * nsp)
    b, cin = x.shape[:2]
    cout = k.shape[0]
    ks = k.shape[2:]
    out_sp = [(x.shape[2 + i] - dil * (ks[i] - 1) - 1) // stride + 1 for i in range(nsp)]
    out = np.zeros((b, cout) + tuple(out_sp))
    mag = np.zeros_like(out)
    cpg, opg = cin // groups, cout // groups
    for o in range(cout):
        g = o // opg
        for pos in np.ndindex(*out_sp):
            acc, am = 0.0, 0.0
            for kp in np.ndindex(*ks):
                src = tuple(pos[i] * stride + kp[i] * dil for i in range(nsp))
                patch = x[(slice(None), slice(g * cpg, (g + 1) * cpg)) + src]
                w = k[(o, slice(None)) + kp]
                acc = acc + patch @ w
                am = am + np.abs(patch) @ np.abs(w)
            out[(slice(None), o) + pos] = acc
            mag[(slice(None), o) + pos] = am
    return out, mag


def op_conv():
    dt = pick(FLOATS)
    two = bool(rng.random() < 0.5)
    groups = pick([1, 1, 2, 3])
    big = rng.random() < 0.06  # a few with more channels, wider inputs and kernels
    cmax, smax, kmax = (7, 17, 6) if big else (3, 7, 4)
    b, cin, cout = int(rng.integers(1, 3)), groups * int(rng.integers(1, cmax)), \
        groups * int(rng.integers(1, cmax))
    nsp = 2 if two else 1
    ks = tuple(int(rng.integers(1, kmax)) for _ in range(nsp))
    sp = tuple(int(rng.integers(1, smax)) for _ in range(nsp))
    pad, stride, dil = int(rng.integers(0, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    x, xv, dx = make(rand_floats((b, cin) + sp, dt, special=0.02, huge=False), dt)
    k, kv, dk = make(rand_floats((cout, cin // groups) + ks, dt, special=0, huge=False), dt)
    desc = 'conv%dd %s x %s(%s) k %s(%s) pad %d stride %d dil %d groups %d' % (
        nsp, NAMES[dt], (b, cin) + sp, dx, (cout, cin // groups) + ks, dk, pad, stride, dil,
        groups)
    t = (lib.tl_conv2d if two else lib.tl_conv1d)(x, k, pad, stride, dil, groups)
    if any(sp[i] + 2 * pad < dil * (ks[i] - 1) + 1 for i in range(nsp)):
        expect_fail(t, 'kernel larger than the padded input', desc)
        return desc
    got = own(t, desc)
    with np.errstate(all='ignore'):
        ref, mag = conv_ref(vals(xv, dt), vals(kv, dt), pad, stride, dil, groups)
    n = cin // groups * int(np.prod(ks))
    compare(got, ref, dt, atol=(n + 2) * EPS[dt] * np.where(np.isfinite(mag), mag, 0),
            label=desc)
    return desc


def op_pool():
    mx = bool(rng.random() < 0.5)
    dt = pick(FLOATS + INTS if mx else FLOATS)  # candle's MaxPool2D takes every dtype
    s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 7)),
         int(rng.integers(1, 7)))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    x, xv, d = make(rand_floats(s, dt, special=0.05, huge=False) if dt in FLOATS else
                    rand_ints(s, dt), dt)
    v = vals(xv, dt)
    desc = '%s %s %s(%s) k %d %d s %d %d' % ('max_pool2d' if mx else 'avg_pool2d', NAMES[dt], s,
                                             d, kh, kw, sh, sw)
    t = (lib.tl_max_pool2d if mx else lib.tl_avg_pool2d)(x, kh, kw, sh, sw)
    if kh > s[2] or kw > s[3]:
        expect_fail(t, 'window larger than the input', desc)
        return desc
    got = own(t, desc)
    oh, ow = (s[2] - kh) // sh + 1, (s[3] - kw) // sw + 1
    ref = np.zeros(s[:2] + (oh, ow), dtype=object if dt in INTS else np.float64)
    with np.errstate(all='ignore'):
        for i in range(oh):
            for j in range(ow):
                win = v[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                # candle's MaxPool2D: a NaN first in its window wins, a later one is skipped
                ref[:, :, i, j] = win.max(axis=(2, 3)) if dt in INTS else \
                    nan_skip_ext(win, (2, 3), MAX) if mx else win.mean(axis=(2, 3))
    if mx:  # exact, up to the sign of a zero (which of -0 and 0 is the max)
        compare(got, ref, dt, ulps=0, label=desc)
        return desc
    mag = np.zeros_like(ref)
    fin = np.abs(np.where(np.isfinite(v), v, 0))
    for i in range(oh):
        for j in range(ow):
            mag[:, :, i, j] = fin[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw].mean(axis=(2, 3))
    compare(got, ref, dt, atol=(kh * kw + 4) * EPS[dt] * mag, label=desc)
    return desc


def op_inplace():
    """const_set, slice_set, scatter_set, scatter_add_set through a view of a bigger storage:
    the view's elements change, every other element of the storage stays."""
    dt = pick(FLOATS + INTS)
    base_shape = rand_shape(rank=int(rng.integers(1, 5)))
    nd = len(base_shape)
    # no huge values: adds into one place overflow on the way in f16 where f64 does not
    bv = rand_floats(base_shape, dt, huge=False) if dt in FLOATS else rand_values(base_shape, dt)
    base = raw(bv, dt)
    ref = vals(bv, dt).copy() if dt in FLOATS else np.array(vals(bv, dt), dtype=object)
    # the target: a permuted narrow of base, so writes go through strides and an offset
    a = int(rng.integers(0, nd))
    st = int(rng.integers(0, base_shape[a] + 1))
    ln = int(rng.integers(0, base_shape[a] - st + 1))
    view = own(lib.tl_narrow(base, a, st, ln), 'narrow')
    p = list(rng.permutation(nd))
    view = own(lib.tl_permute(view, sizes(p), nd), 'permute')
    sl = [slice(None)] * nd
    sl[a] = slice(st, st + ln)
    rv = ref[tuple(sl)].transpose(p)  # a numpy view of ref, written in place
    vs = rv.shape
    kind = pick(['const_set', 'slice_set', 'scatter_set', 'scatter_add_set'])
    desc = '%s %s base %s narrow(%d,%d,%d) permute %s' % (kind, NAMES[dt], base_shape, a, st, ln,
                                                           p)
    if kind == 'const_set':
        c = float(rand_values((), dt)) if dt in FLOATS else float(pick([0, 1, 7, -3, 255, 300]))
        desc += ' %r' % c
        rc = lib.tl_const_set(view, c)
        if rc:
            raise Failed('%s: %s' % (desc, err()))
        rv[...] = float(rounded([c], dt)[0]) if dt in FLOATS else candle_as_int([c], dt)[0]
    elif kind == 'slice_set':
        b, dim = rdim(nd)
        n = int(rng.integers(0, vs[b] + 1))
        off = int(rng.integers(0, vs[b] - n + 1))
        ss = list(vs)
        ss[b] = n
        src, sv, ds = make(rand_values(tuple(ss), dt), dt)
        desc += ' dim %d off %d src %s(%s)' % (b, off, ss, ds)
        if lib.tl_slice_set(view, src, dim, off):
            raise Failed('%s: %s' % (desc, err()))
        sl2 = [slice(None)] * nd
        sl2[b] = slice(off, off + n)
        rv[tuple(sl2)] = vals(sv, dt)
    else:
        b, dim = rdim(nd)
        ss = list(vs)
        ss[b] = int(rng.integers(0, 3))
        idt = idx_dtype()
        reach = min(vs[b], INT_RANGE[idt][1])  # indexes the index dtype holds, its max aside
        if kind == 'scatter_set':
            ss[b] = min(ss[b], vs[b])
            iv = np.zeros(tuple(ss), dtype=np.int64)
            m = np.moveaxis(iv, b, -1)
            for idx in np.ndindex(*m.shape[:-1]):
                m[idx] = rng.permutation(reach)[:ss[b]]
        else:
            iv = rng.integers(0, max(reach, 1), size=tuple(ss)) if vs[b] else \
                np.zeros(tuple(ss), dtype=np.int64)
            if vs[b] == 0:
                ss[b] = 0
                iv = np.zeros(tuple(ss), dtype=np.int64)
        iv = with_none(iv, idt)  # candle's "no index": skipped
        ids, iv, di = make(iv, idt, allow_bcast=False)
        src, sv, ds = make(rand_floats(tuple(ss), dt, huge=False) if dt in FLOATS else
                           rand_values(tuple(ss), dt), dt)
        desc += ' dim %d ids %s(%s) src(%s)' % (b, ss, di, ds)
        f = lib.tl_scatter_set if kind == 'scatter_set' else lib.tl_scatter_add_set
        if f(view, ids, src, dim):
            raise Failed('%s: %s' % (desc, err()))
        svv = vals(sv, dt)
        mag = np.abs(np.where(np.isfinite(ref), ref, 0)) if dt in FLOATS else None
        mv = mag[tuple(sl)].transpose(p) if mag is not None else None
        for idx in np.ndindex(*ss):
            if iv[idx] == INT_RANGE[idt][1]:
                continue
            j = list(idx)
            j[b] = int(iv[idx])
            rv[tuple(j)] = svv[idx] if kind == 'scatter_set' else rv[tuple(j)] + svv[idx]
            if mv is not None and math.isfinite(svv[idx]):
                mv[tuple(j)] += abs(svv[idx])
        if dt in INTS:
            ref = wrap(ref, dt)
        if kind == 'scatter_add_set' and dt in FLOATS:  # adds into one place round on the way
            compare(base, ref, dt, atol=(ss[b] + 2) * EPS[dt] * mag,
                    label=desc + ' (whole storage)')
            return desc
    compare(base, ref, dt, bits=dt in FLOATS, label=desc + ' (whole storage)')
    return desc


def op_vec():
    """mv, dot."""
    dt = pick(FLOATS + INTS)
    m, k = pick([0, 1, 3, 7]), pick([0, 1, 4, 9])
    gen = (lambda sh: rand_floats(sh, dt, special=0.02, huge=False, scale=1.0)) \
        if dt in FLOATS else (lambda sh: rand_ints(sh, dt, extremes=0.1))
    mv = bool(rng.random() < 0.5)
    a, av, da = make(gen((m, k) if mv else (k,)), dt)
    b, bv, db = make(gen((k,)), dt)
    desc = '%s %s a(%s) b(%s) m %d k %d' % ('mv' if mv else 'dot', NAMES[dt], da, db, m, k)
    got = own((lib.tl_mv if mv else lib.tl_dot)(a, b), desc)
    x, y = vals(av, dt), vals(bv, dt)
    if dt in INTS:
        ref = (x * y).sum(axis=-1) if k else np.zeros((m,) if mv else (), dtype=np.int64)
        if not mv:  # dot: the products in the dtype, wrapping as tl_mul's do
            ref = wrap(wrap(x * y, dt).sum() if k else 0, dt)
        compare(got, wrap(ref, dt), dt, label=desc)
        return desc
    with np.errstate(all='ignore'):
        ref = x @ y if k else np.zeros((m,) if mv else ())
        mag = np.abs(np.where(np.isfinite(x), x, 0)) @ np.abs(np.where(np.isfinite(y), y, 0)) \
            if k else np.zeros((m,) if mv else ())
    compare(got, ref, dt, atol=(k + 2) * EPS[dt] * mag, label=desc)
    return desc


def op_create():
    dt = pick(FLOATS + INTS)
    kind = pick(['arange', 'full'])
    if kind == 'full':
        s = rand_shape()
        c = float(rand_values((), dt)) if dt in FLOATS else \
            float(pick([0, 1, -1, 300, 2.7, -2.7, 1e20]))
        desc = 'full %s %s %r' % (NAMES[dt], s, c)
        got = own(lib.tl_full(c, sizes(s), len(s), dt, 0), desc)
        ref = np.full(s, c) if dt in FLOATS else np.full(s, candle_as_int([c], dt)[0], dtype=object)
        compare(got, ref, dt, bits=True, label=desc)
        return desc
    # integer dtypes with integral ends and steps: a fractional one's truncation depends on
    # how start + i * step rounds (numpy's arange computes it differently again)
    start = float(pick([0, 1, -3, 10] if dt in INTS else [0, 1, -3, 2.5, 0.1, 10]))
    step = float(pick([1, 2, -1, 3] if dt in INTS else [1, 2, -1, 0.5, 0.3, -0.7, 3]))
    end = start + step * float(pick([0, 1, 2.5, 5, 7, -1]))
    desc = 'arange %s %r %r %r' % (NAMES[dt], start, end, step)
    t = lib.tl_arange(start, end, step, dt, 0)
    ref = np.arange(start, end, step)
    got = own(t, desc)
    if dt in INTS:  # whole start and step: counted in int64 and wrapped into dt (tl.h)
        compare(got, wrap(ref.astype(np.int64), dt), dt, label=desc)
    else:
        compare(got, ref, dt, ulps=4, atol=4 * EPS[dt] * abs(step) * len(ref), label=desc)
    return desc


def conv_t_ref(x, k, pad, opad, stride, dil, groups):
    """PyTorch's conv_transpose: each input element adds x * kernel into the output."""
    nsp = x.ndim - 2
    b, cin = x.shape[:2]
    copg = k.shape[1]
    cout = copg * groups
    ks = k.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride + dil * (ks[i] - 1) + 1 + opad for i in range(nsp)]
    out = np.zeros((b, cout) + tuple(full))
    mag = np.zeros_like(out)
    cipg = cin // groups
    for ci in range(cin):
        g = ci // cipg
        for pos in np.ndindex(*x.shape[2:]):
            xv = x[(slice(None), ci) + pos]
            for kp in np.ndindex(*ks):
                dst = tuple(pos[i] * stride + kp[i] * dil for i in range(nsp))
                w = k[(ci, slice(None)) + kp]
                sl = (slice(None), slice(g * copg, (g + 1) * copg)) + dst
                out[sl] += np.outer(xv, w)
                mag[sl] += np.outer(np.abs(xv), np.abs(w))
    crop = (slice(None), slice(None)) + tuple(slice(pad, full[i] - pad) for i in range(nsp))
    return out[crop], mag[crop]


def op_conv_transpose():
    dt = pick(FLOATS)
    two = bool(rng.random() < 0.5)
    groups = 1 if two else pick([1, 1, 2, 3])
    big = rng.random() < 0.06  # a few with more channels, wider inputs and kernels
    cmax, smax, kmax = (7, 13, 6) if big else (3, 6, 4)
    b, cin, copg = int(rng.integers(1, 3)), groups * int(rng.integers(1, cmax)), \
        int(rng.integers(1, cmax))
    nsp = 2 if two else 1
    ks = tuple(int(rng.integers(1, kmax)) for _ in range(nsp))
    sp = tuple(int(rng.integers(1, smax)) for _ in range(nsp))
    pad, stride, dil = int(rng.integers(0, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    opad = int(rng.integers(0, max(stride, dil)))
    x, xv, dx = make(rand_floats((b, cin) + sp, dt, special=0.02, huge=False), dt)
    k, kv, dk = make(rand_floats((cin, copg) + ks, dt, special=0, huge=False), dt)
    desc = 'conv_transpose%dd %s x %s(%s) k %s(%s) pad %d opad %d stride %d dil %d groups %d' % (
        nsp, NAMES[dt], (b, cin) + sp, dx, (cin, copg) + ks, dk, pad, opad, stride, dil, groups)
    if two:
        t = lib.tl_conv_transpose2d(x, k, pad, opad, stride, dil)
    else:
        t = lib.tl_conv_transpose1d(x, k, pad, opad, stride, dil, groups)
    full = [(sp[i] - 1) * stride + dil * (ks[i] - 1) + 1 + opad for i in range(nsp)]
    if any(f - 2 * pad <= 0 for f in full):
        expect_fail(t, 'empty output', desc)
        return desc
    got = own(t, desc)
    with np.errstate(all='ignore'):
        ref, mag = conv_t_ref(vals(xv, dt), vals(kv, dt), pad, opad, stride, dil, groups)
    n = cin * int(np.prod(ks))
    compare(got, ref, dt, atol=(n + 2) * EPS[dt] * np.where(np.isfinite(mag), mag, 0),
            label=desc)
    return desc


def op_upsample():
    dt = pick(FLOATS + INTS)
    two = bool(rng.random() < 0.5)
    s = tuple(int(rng.integers(1, 3)) for _ in range(2)) + \
        tuple(int(rng.integers(1, 8)) for _ in range(2 if two else 1))
    out = tuple(int(rng.integers(1, 20)) for _ in range(2 if two else 1))
    x, xv, d = make(rand_values(s, dt), dt)
    v = vals(xv, dt)
    desc = 'upsample_nearest%dd %s %s(%s) -> %s' % (2 if two else 1, NAMES[dt], s, d, out)
    got = own(lib.tl_upsample_nearest2d(x, *out) if two else
              lib.tl_upsample_nearest1d(x, out[0]), desc)
    # index i reads min(in - 1, floor(i * (in / out))), the ratio a double (candle's)
    idx = [np.minimum(s[2 + j] - 1, np.floor(np.arange(out[j]) * (s[2 + j] / out[j]))
                      ).astype(np.int64) for j in range(len(out))]
    ref = v[:, :, idx[0]]
    if two:
        ref = ref[:, :, :, idx[1]]
    compare(got, ref, dt, bits=True, label=desc)
    return desc


NPY = {U8: 'u1', U32: 'u4', I64: 'i8', F16: 'f2', F32: 'f4', F64: 'f8', I16: 'i2', I32: 'i4'}
scratch = None


class Named(C.Structure):
    _fields_ = [('name', C.c_char_p), ('tensor', C.c_void_p)]


def op_npy():
    """numpy's .npy/.npz (either byte order, C or Fortran order) read by tensorlib, and
    tensorlib's .npy read by numpy."""
    dt = pick(FLOATS + INTS)
    s = rand_shape()
    path = os.path.join(scratch, 'x.npy').encode()
    kind = pick(['load', 'save', 'npz'])
    desc = 'npy %s %s %s' % (kind, NAMES[dt], s)
    if kind == 'save':
        x, xv, d = make(rand_values(s, dt), dt)
        desc += ' (%s)' % d
        rc = lib.tl_save_npy(x, path)
        if dt == BF16:  # numpy has no bf16
            if rc == 0 or not err().startswith('save_npy'):
                raise Mismatch('%s: status %d %r, want a failure naming save_npy' % (
                    desc, rc, err()))
            return desc
        if rc:
            raise Failed('%s: %s' % (desc, err()))
        a = np.load(path.decode())
        if a.dtype != np.dtype('<' + NPY[dt]) or a.shape != s:
            raise Mismatch('%s: numpy read %s %s' % (desc, a.dtype, a.shape))
        want = to_store(vals(xv, dt), dt)
        if a.tobytes() != np.array(want, order='C').tobytes():
            raise Mismatch('%s: numpy read other values' % desc)
        return desc
    if dt == BF16:
        dt = F32
    order = pick(['C', 'F'])
    endian = pick(['<', '>'])
    v = to_store(rand_values(s, dt), dt)
    a = np.array(v, dtype=endian + NPY[dt], order=order)
    desc += ' %s%s' % (endian, order)
    if kind == 'load':
        np.save(path.decode(), a)
        t = own(lib.tl_load_npy(path, 0), desc)
        compare(t, vals(v, dt) if dt in INTS else from_store(np.asarray(v), dt), dt, bits=True,
                label=desc)
        return desc
    zpath = os.path.join(scratch, 'x.npz').encode()
    b = to_store(rand_values((3,), I32), I32)
    np.savez(zpath.decode(), first=a, second=b)
    out, cnt = P(), SZ()
    if lib.tl_load_npz(zpath, 0, C.byref(out), C.byref(cnt)):
        raise Failed('%s: %s' % (desc, err()))
    arr = C.cast(out, C.POINTER(Named))
    try:
        names = [arr[i].name.decode() for i in range(cnt.value)]
        if names != ['first', 'second']:
            raise Mismatch('%s: names %s' % (desc, names))
        compare(arr[0].tensor, vals(v, dt) if dt in INTS else from_store(np.asarray(v), dt),
                dt, bits=True, label=desc + ' first')
        compare(arr[1].tensor, vals(b, I32), I32, label=desc + ' second')
    finally:
        lib.tl_named_free(out, cnt.value)
    return desc


def op_misuse():
    """A bad call must return NULL (or nonzero) with a message that starts with the op."""
    dt = pick(FLOATS + INTS)
    # dims of 2 and more, so that s and s2 (each dim one more) cannot broadcast
    s = tuple(q + 2 for q in rand_shape(rank=int(rng.integers(1, 5)), maxd=3))
    nd = len(s)
    x, _, _ = make(rand_values(s, dt), dt)
    km, _, _ = make(rand_values(s[:-2] + (s[-1] + 1, 3), dt), dt)
    bad = nd + int(rng.integers(0, 3))
    badm = (-nd - 1 - int(rng.integers(0, 3))) % 2 ** 64
    dim = pick([bad, badm])
    other = pick([q for q in INTS + FLOATS if q != dt])
    y, _, _ = make(rand_values(s, other), other)
    s2 = tuple(q + 1 for q in s)
    z, _, _ = make(rand_values(s2, dt), dt)
    ids, _, _ = make(rand_ints((2,), U32, lo=0, hi=0), U32)
    fids, _, _ = make(rand_floats((2,), F32, special=0), F32)
    cases = [
        ('narrow', lambda: lib.tl_narrow(x, dim, 0, 0), RANGE),
        ('narrow', lambda: lib.tl_narrow(x, 0, s[0], 1)),
        ('narrow', lambda: lib.tl_narrow(x, 0, 2 ** 64 - 1, 2)),
        ('get', lambda: lib.tl_get(x, s[0])),
        ('squeeze', lambda: lib.tl_squeeze(x, dim), RANGE),
        ('unsqueeze', lambda: lib.tl_unsqueeze(x, nd + 1 + int(rng.integers(0, 3)))),
        ('transpose', lambda: lib.tl_transpose(x, 0, dim), RANGE),
        ('permute', lambda: lib.tl_permute(x, sizes([0] * nd), nd) if nd > 1 else
         lib.tl_permute(x, sizes([1]), 1)),
        ('permute', lambda: lib.tl_permute(x, sizes(list(range(nd + 1))), nd + 1)),
        ('reshape', lambda: lib.tl_reshape(x, sizes([int(np.prod(s)) + 1]), 1)),
        ('broadcast_as', lambda: lib.tl_broadcast_as(z, sizes(s), nd)),
        ('flatten', lambda: lib.tl_flatten(x, 0, dim), RANGE),
        ('softmax', lambda: lib.tl_softmax(x, dim), RANGE),
        ('log_softmax', lambda: lib.tl_log_softmax(x, dim), RANGE),
        ('var', lambda: lib.tl_var(x, dim, False), RANGE),
        ('cumsum', lambda: lib.tl_cumsum(x, dim), RANGE),
        ('cumprod', lambda: lib.tl_cumprod(x, dim), RANGE),
        ('roll', lambda: lib.tl_roll(x, 1, dim), RANGE),
        ('flip', lambda: lib.tl_flip(x, sizes([dim]), 1), RANGE),
        ('sum', lambda: lib.tl_reduce(SUM, x, sizes([dim]), 1, False), RANGE),
        ('argmax', lambda: lib.tl_reduce(ARGMAX, x, sizes([0, 0]), 2, False)),
        ('index_select', lambda: lib.tl_index_select(x, ids, dim), RANGE),
        ('index_select', lambda: lib.tl_index_select(x, fids, 0)),
        ('gather', lambda: lib.tl_gather(x, ids, 0) if nd > 1 else lib.tl_gather(x, fids, 0)),
        ('cat', lambda: lib.tl_cat((P * 2)(x, z), 2, 0) if nd > 1 else
         lib.tl_cat((P * 2)(x, y), 2, 0)),
        ('cat', lambda: lib.tl_cat((P * 2)(x, x), 2, dim), RANGE),
        ('cat', lambda: lib.tl_cat((P * 1)(), 0, 0)),
        ('stack', lambda: lib.tl_stack((P * 2)(x, z), 2, 0)),
        ('add', lambda: lib.tl_binary(ADD, x, z)),
        ('add', lambda: lib.tl_binary(ADD, x, y)),
        ('broadcast_mul', lambda: lib.tl_broadcast_binary(MUL, x, z)),
        ('eq', lambda: lib.tl_cmp(EQ, x, y)),
        ('where_cond', lambda: lib.tl_where_cond(x if dt in FLOATS else y, x, x)
         if dt in FLOATS or other in FLOATS else lib.tl_where_cond(x, x, z)),
        ('matmul', lambda: lib.tl_matmul(x, km) if nd >= 2 else lib.tl_matmul(x, x)),
        ('matmul', lambda: lib.tl_matmul(x, y) if nd >= 2 else lib.tl_matmul(x, x)),
        ('exp', lambda: lib.tl_unary(UEXP, x) if dt in INTS else lib.tl_unary(UEXP, None)),
        ('unary', lambda: lib.tl_unary(20 + int(rng.integers(0, 3)), x)),
        ('binary', lambda: lib.tl_binary(6 + int(rng.integers(0, 3)), x, x)),
        ('softmax', lambda: lib.tl_softmax(x, 0) if dt in INTS else lib.tl_softmax(None, 0)),
        ('to_dtype', lambda: lib.tl_to_dtype(x, 9 + int(rng.integers(0, 3)))),
        ('pad_with_zeros', lambda: lib.tl_pad_with_zeros(x, dim, 1, 1), RANGE),
        ('conv1d', lambda: lib.tl_conv1d(x, x, 0, 1, 1, 1) if nd != 3 else
         lib.tl_conv1d(x, x, 0, 0, 1, 1)),
        ('conv2d', lambda: lib.tl_conv2d(x, x, 0, 1, 1, 1) if nd != 4 else
         lib.tl_conv2d(x, x, 0, 1, 0, 1)),
        ('max_pool2d', lambda: lib.tl_max_pool2d(x, 0, 1, 1, 1)),
        ('mv', lambda: lib.tl_mv(x, x)),
        ('slice_set', lambda: lib.tl_slice_set(x, z, 0, 0)),
        ('repeat', lambda: lib.tl_repeat(x, sizes([1] * max(nd - 1, 0)), max(nd - 1, 0))
         if nd > 1 else lib.tl_repeat(x, sizes([2 ** 63]), 1)),
        ('full', lambda: lib.tl_full(1.0, sizes(s), nd, 17, 0)),
        ('arange', lambda: lib.tl_arange(0, 10, 0, dt, 0)),
    ]
    s0, _, _ = make(rand_values((), dt), dt)
    cases += [  # a 0-d tensor has no dim 0; the message says so as "dim 0"
        ('cumsum', lambda: lib.tl_cumsum(s0, 0), RANGE),
        ('softmax', lambda: lib.tl_softmax(s0, 0), RANGE),
        ('narrow', lambda: lib.tl_narrow(s0, 0, 0, 1), RANGE),
        ('index_select', lambda: lib.tl_index_select(s0, ids, 0), RANGE),
        ('roll', lambda: lib.tl_roll(s0, 1, 0), RANGE),
        ('squeeze', lambda: lib.tl_squeeze(s0, 0), RANGE)]
    name, call, *status = pick(cases)
    r = call()
    desc = 'misuse %s on %s%s' % (name, NAMES[dt], s)
    if isinstance(r, int) and not isinstance(r, bool) and r in range(0, 16) and name in (
            'slice_set',):
        if r == 0:
            raise Mismatch('%s: succeeded' % desc)
    elif r:
        live.append(r)
        raise Mismatch('%s: succeeded, want a failure' % desc)
    msg = err()
    st = lib.tl_last_status()
    if not msg or st == 0:
        raise Mismatch('%s: status %d, message %r' % (desc, st, msg))
    if not msg.startswith(name) and not msg.startswith(name.split('_')[0]):
        raise Mismatch('%s: the message does not start with the op: %r' % (desc, msg))
    # a dim out of range is TL_ERR_RANGE (an integer tensor given to a float op may say
    # TL_ERR_DTYPE first)
    if status and st != status[0] and not (dt in INTS and st == 3):
        raise Mismatch('%s: status %d, want %d (%r)' % (desc, st, status[0], msg))
    if 'dim -0 ' in msg:
        raise Mismatch('%s: dim 0 named "-0": %r' % (desc, msg))
    return desc


def near_shape(s, p=0.3):
    """s with some dims moved by one, set to 0 or 1 or grown, sometimes a dim added or
    dropped: shapes next to an accepted one, accepted or not."""
    s = list(s)
    for i in range(len(s)):
        r = rng.random()
        if r < p / 2:
            s[i] = max(0, s[i] + pick([-1, 1]))
        elif r < p:
            s[i] = pick([0, 1, s[i] + 2])
    r = rng.random()
    if r < 0.08 and len(s) < 5:
        s.insert(int(rng.integers(0, len(s) + 1)), pick([1, 2]))
    elif r < 0.16 and s:
        del s[int(rng.integers(0, len(s)))]
    return tuple(s)


def small_values(shape, dt):
    """Small integers in any dtype: sums and products of a few are exact in every dtype."""
    return rand_ints(shape, I16, extremes=0).clip(0 if dt in (U8, U32) else -8, 8).astype(
        np.float64 if dt in FLOATS else np.int64)


def bcast_ok(a, b):
    """candle's Shape::broadcast_shape_binary_op: numpy's rule."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def op_shape_rules():
    """Shapes next to valid ones for every op that relates two or more shapes, accepted or
    refused as candle's checks decide (tensor.rs, conv.rs, shape.rs, layout.rs at 0.11):
    an accepted call is checked against numpy, a refused one must fail with a message that
    starts with the op, never crash or make a tensor."""
    dt = pick(FLOATS + INTS)
    kind = pick(['binary', 'cmp', 'broadcast_add', 'where_cond', 'matmul', 'broadcast_matmul',
                 'mv', 'dot', 'cat', 'stack', 'gather', 'scatter_add', 'index_add',
                 'index_select', 'slice_scatter', 'broadcast_as', 'conv1d', 'conv2d',
                 'conv_transpose1d', 'conv_transpose2d', 'rms_norm', 'layer_norm'])
    base = rand_shape(rank=int(rng.integers(1, 5)), maxd=4)
    nd = len(base)
    ok, ref, name, call = True, None, kind, None
    mk = lambda sh: make(small_values(sh, dt), dt)  # noqa: E731
    desc = 'shape_rules %s %s' % (kind, NAMES[dt])
    if kind in ('binary', 'cmp', 'broadcast_add', 'where_cond'):
        sa, sb = base, near_shape(base)
        x, xv, dx = mk(sa)
        y, yv, dy = mk(sb)
        a, b = vals(xv, dt), vals(yv, dt)
        desc += ' %s(%s) %s(%s)' % (sa, dx, sb, dy)
        if kind == 'broadcast_add':
            name, out = 'broadcast_add', bcast_ok(sa, sb)
            ok = out is not None
            call = lambda: lib.tl_broadcast_binary(ADD, x, y)  # noqa: E731
            ref = (lambda: wrap(a + b, dt) if dt in INTS else a + b)  # noqa: E731
        elif kind == 'where_cond':  # candle: same_shape_binary_op twice, no broadcasting
            sc = near_shape(base) if rng.random() < 0.5 else base
            c, cv, dc = make(rand_ints(sc, U8, lo=0, hi=1), U8)
            desc += ' cond %s(%s)' % (sc, dc)
            ok = sc == sa == sb
            call = lambda: lib.tl_where_cond(c, x, y)  # noqa: E731
            ref = lambda: np.where(vals(cv, U8) != 0, a, b)  # noqa: E731
        else:  # same_shape_binary_op
            ok = sa == sb
            name = 'add' if kind == 'binary' else 'eq'
            call = (lambda: lib.tl_binary(ADD, x, y)) if kind == 'binary' else \
                (lambda: lib.tl_cmp(EQ, x, y))
            ref = (lambda: wrap(a + b, dt) if dt in INTS else a + b) if kind == 'binary' else \
                (lambda: (a == b).astype(np.int64))
    elif kind in ('matmul', 'broadcast_matmul', 'mv', 'dot'):
        m, k, n = (int(rng.integers(0, 4)) for _ in range(3))
        if kind == 'mv':
            sa, sb = near_shape((m, k)), near_shape((k,))
            ok = len(sa) == 2 and len(sb) == 1 and sa[1] == sb[0]
        elif kind == 'dot':
            sa, sb = near_shape((k,)), near_shape((k,))
            ok = len(sa) == 1 and sa == sb
        else:
            lead = base[:-1] if nd > 1 else ()
            sa = near_shape(lead + (m, k), 0.15)
            sb = near_shape(lead + (k, n), 0.15)
            if kind == 'matmul':
                # ranks equal, >= 2, k agrees, batch dims equal (candle compares only their
                # products, [2, 3] against [3, 2] runs there as 6 flat batches: tl.h's
                # stricter rule, as its doc says "b1..bi" for both)
                ok = len(sa) >= 2 and len(sa) == len(sb) and sa[-1] == sb[-2] and \
                    sa[:-2] == sb[:-2]
            else:
                ok = len(sa) >= 2 and len(sb) >= 2 and sa[-1] == sb[-2] and \
                    bcast_ok(sa[:-2], sb[:-2]) is not None
        x, xv, dx = mk(sa)
        y, yv, dy = mk(sb)
        a, b = vals(xv, dt), vals(yv, dt)
        desc += ' %s(%s) %s(%s)' % (sa, dx, sb, dy)
        f = {'matmul': lib.tl_matmul, 'broadcast_matmul': lib.tl_broadcast_matmul,
             'mv': lib.tl_mv, 'dot': lib.tl_dot}[kind]
        call = lambda: f(x, y)  # noqa: E731

        def ref():
            if kind == 'dot':
                r = (a * b).sum() if a.size else 0
            elif kind == 'mv':
                r = (a * b).sum(axis=-1) if a.size else np.zeros(sa[0], dtype=a.dtype)
            elif kind == 'matmul':  # candle multiplies the batches in flat order
                bs = int(np.prod(sa[:-2]))
                aa, bb = a.reshape((bs,) + sa[-2:]), b.reshape((bs,) + sb[-2:])
                r = np.array([(aa[i][:, :, None] * bb[i][None, :, :]).sum(axis=1)
                              for i in range(bs)], dtype=a.dtype).reshape(
                    sa[:-2] + (sa[-2], sb[-1]))
            else:
                lead = bcast_ok(sa[:-2], sb[:-2])
                aa = np.broadcast_to(a, lead + sa[-2:])
                bb = np.broadcast_to(b, lead + sb[-2:])
                r = (aa[..., :, :, None] * bb[..., None, :, :]).sum(axis=-2)
            return wrap(r, dt) if dt in INTS else r
    elif kind in ('cat', 'stack'):
        a = int(rng.integers(0, nd + (kind == 'stack')))  # parts' ranks differ: no TL_DIM
        parts = []
        for i in range(int(rng.integers(1, 4))):
            sh = list(base)
            if kind == 'cat':
                sh[a] = int(rng.integers(0, 3))
            parts.append(near_shape(tuple(sh), 0.15) if rng.random() < 0.4 else tuple(sh))
        made = [mk(sh) for sh in parts]
        arr = (P * len(made))(*[t for t, _, _ in made])
        desc += ' %s dim %d' % (parts, a)
        if kind == 'cat':  # one rank, same dims but dim
            r0 = len(parts[0])
            ok = a < r0 and all(len(q) == r0 and all(q[i] == parts[0][i] for i in range(r0)
                                                     if i != a) for q in parts)
        else:
            ok = all(q == parts[0] for q in parts) and a <= len(parts[0])
        call = lambda: (lib.tl_cat if kind == 'cat' else lib.tl_stack)(  # noqa: E731
            arr, len(made), a)
        ref = lambda: (np.concatenate if kind == 'cat' else np.stack)(  # noqa: E731
            [vals(v, dt) for _, v, _ in made], axis=a)
    elif kind in ('gather', 'scatter_add', 'index_add', 'index_select'):
        a, dim = rdim(nd)
        x, xv, dx = mk(base)
        v = vals(xv, dt)
        idt = idx_dtype()
        hi = max(base[a], 1)

        def ids_for(sh):
            iv = rng.integers(0, hi, size=sh) if base[a] else np.zeros(sh, dtype=np.int64)
            return make(np.minimum(iv, INT_RANGE[idt][1] - 1), idt, allow_bcast=False)

        if kind == 'gather':
            gs = list(base)
            gs[a] = int(rng.integers(0, 4))
            gs = near_shape(tuple(gs), 0.3)
            ok = len(gs) == nd and all(gs[i] <= base[i] for i in range(nd) if i != a)
            ids, iv, di = ids_for(gs)
            ok = ok and (base[a] > 0 or iv.size == 0)
            desc += ' %s(%s) dim %d ids %s %s(%s)' % (base, dx, a, NAMES[idt], gs, di)
            call = lambda: lib.tl_gather(x, ids, dim)  # noqa: E731

            def ref():  # torch's gather: out[p] = x[p with p[dim] = ids[p]]
                out = np.zeros(gs, dtype=v.dtype)
                for p in np.ndindex(*gs):
                    q = list(p)
                    q[a] = int(iv[p])
                    out[p] = v[tuple(q)]
                return out
        elif kind == 'index_select':
            si = near_shape((int(rng.integers(0, 4)),), 0.3)
            ids, iv, di = ids_for(si)
            ok = len(si) == 1 and (base[a] > 0 or iv.size == 0)
            desc += ' %s(%s) dim %d ids %s %s(%s)' % (base, dx, a, NAMES[idt], si, di)
            call = lambda: lib.tl_index_select(x, ids, dim)  # noqa: E731
            ref = lambda: np.take(v, iv.reshape(-1).astype(np.int64), axis=a)  # noqa: E731
        else:
            ss = list(base)
            ss[a] = int(rng.integers(0, 4))
            ss = near_shape(tuple(ss), 0.2)
            src, sv, ds = mk(ss)
            srcv = vals(sv, dt)
            if kind == 'scatter_add':  # src fits self but along dim; ids has src's shape
                si = near_shape(ss, 0.2) if rng.random() < 0.4 else ss
                ok = len(ss) == nd and all(ss[i] == base[i] for i in range(nd) if i != a) \
                    and si == ss
            else:  # src fits self but along dim; 1-D ids, as long as src along dim
                si = near_shape((ss[a] if a < len(ss) else 1,), 0.2)
                ok = len(ss) == nd and all(ss[i] == base[i] for i in range(nd) if i != a) \
                    and len(si) == 1 and si[0] == ss[a]
            ids, iv, di = ids_for(si)
            ok = ok and (base[a] > 0 or iv.size == 0)
            desc += ' %s(%s) dim %d ids %s %s(%s) src %s(%s)' % (base, dx, a, NAMES[idt], si,
                                                                di, ss, ds)
            f = lib.tl_scatter_add if kind == 'scatter_add' else lib.tl_index_add
            call = lambda: f(x, ids, src, dim)  # noqa: E731

            def ref():
                out = np.array(v, dtype=object) if dt in INTS else v.copy()
                for p in np.ndindex(*ss):
                    q = list(p)
                    q[a] = int(iv[p] if kind == 'scatter_add' else iv[p[a]])
                    out[tuple(q)] = out[tuple(q)] + srcv[p]
                return wrap(out, dt) if dt in INTS else out
    elif kind == 'slice_scatter':
        a, dim = rdim(nd)
        ss = list(base)
        ss[a] = int(rng.integers(0, base[a] + 2))
        ss = near_shape(tuple(ss), 0.15)
        start = int(rng.integers(0, 3))
        x, xv, dx = mk(base)
        src, sv, ds = mk(ss)
        ok = len(ss) == nd and all(ss[i] == base[i] for i in range(nd) if i != a) and \
            ss[a] + start <= base[a]
        desc += ' %s(%s) dim %d start %d src %s(%s)' % (base, dx, a, start, ss, ds)
        call = lambda: lib.tl_slice_scatter(x, src, dim, start)  # noqa: E731

        def ref():
            out = vals(xv, dt).copy()
            sl = [slice(None)] * nd
            sl[a] = slice(start, start + ss[a])
            out[tuple(sl)] = vals(sv, dt)
            return out
    elif kind in ('rms_norm', 'layer_norm'):
        # candle-nn's ops: alpha (and beta) 1-D, as long as x's last dim
        dt = pick(FLOATS)
        x, xv, dx = make(rand_floats(base, dt, special=0, huge=False), dt)
        sa = near_shape((base[-1],), 0.3)
        sb = near_shape((base[-1],), 0.2)
        al, _, _ = make(rand_floats(sa, dt, special=0, huge=False), dt)
        be, _, _ = make(rand_floats(sb, dt, special=0, huge=False), dt)
        ok = sa == (base[-1],) and (kind == 'rms_norm' or sb == sa)
        desc = 'shape_rules %s %s %s(%s) alpha %s beta %s' % (kind, NAMES[dt], base, dx, sa, sb)
        call = (lambda: lib.tl_rms_norm(x, al, 1e-5)) if kind == 'rms_norm' else \
            (lambda: lib.tl_layer_norm(x, al, be, 1e-5))
        ref = None  # values: op_norms
    elif kind == 'broadcast_as':
        src = near_shape(base, 0.3)
        src = tuple(1 if rng.random() < 0.3 else q for q in src)
        x, xv, dx = mk(src)
        desc += ' %s(%s) -> %s' % (src, dx, base)
        # layout.rs broadcast_as: new dims on the left, each old one equal or 1
        ok = len(src) <= nd and all(q == t or q == 1 for q, t in zip(src, base[nd - len(src):]))
        call = lambda: lib.tl_broadcast_as(x, sizes(base), nd)  # noqa: E731
        ref = lambda: np.broadcast_to(vals(xv, dt), base)  # noqa: E731
    else:  # convolutions: candle's channel rules; every output length at least 1
        two = kind.endswith('2d')
        trans = 'transpose' in kind
        nsp = 2 if two else 1
        groups = 1 if (two and trans) else pick([1, 1, 2, 3])
        b = int(rng.integers(0, 3))
        cin = groups * int(rng.integers(1, 3))
        co = int(rng.integers(1, 3)) * (1 if trans else groups)
        ks = tuple(int(rng.integers(1, 4)) for _ in range(nsp))
        sp = tuple(int(rng.integers(1, 6)) for _ in range(nsp))
        pad, stride, dil = int(rng.integers(0, 3)), int(rng.integers(1, 3)), \
            int(rng.integers(1, 3))
        opad = int(rng.integers(0, max(stride, dil))) if trans else 0
        xs = near_shape((b, cin) + sp, 0.12)
        kshape = ((cin, co) if trans else (co, cin // groups)) + ks
        kshape = near_shape(kshape, 0.12)
        dtf = pick(FLOATS)
        x, xv, dx = make(small_values(xs, dtf), dtf)
        k, kv, dk = make(small_values(kshape, dtf), dtf)
        dt = dtf
        desc = 'shape_rules %s %s x %s(%s) k %s(%s) pad %d stride %d dil %d groups %d opad %d' \
            % (kind, NAMES[dt], xs, dx, kshape, dk, pad, stride, dil, groups, opad)
        r = 2 + nsp
        ok = len(xs) == r and len(kshape) == r
        # a kernel of size 0 fails (candle's dilation * (k - 1) underflows)
        ok = ok and all(q >= 1 for q in kshape[2:])
        if ok and trans:
            # conv_transpose1d: c_in == kernel's c_in, c_in % groups == 0; an empty input
            # gives an empty output (candle's (l_in - 1) * stride underflows: tl.h's choice)
            ok = xs[1] == kshape[0] and xs[1] % groups == 0
            full = [(xs[2 + i] - 1) * stride + dil * (kshape[2 + i] - 1) + 1 + opad
                    for i in range(nsp)]
            ok = ok and all(xs[2 + i] == 0 or f - 2 * pad >= 1 for i, f in enumerate(full))
            empty = (xs[0], kshape[1] * groups) + tuple(
                0 if xs[2 + i] == 0 else f - 2 * pad for i, f in enumerate(full))
        elif ok:
            # c_in == kernel's c_in * groups, and the kernel's c_out splits into the groups;
            # 0 input channels fail (candle would make zeros: tl.h's choice)
            ok = xs[1] >= 1 and xs[1] == kshape[1] * groups and kshape[0] % groups == 0
            ok = ok and all(xs[2 + i] + 2 * pad >= dil * (kshape[2 + i] - 1) + 1
                            for i in range(nsp))
        if trans:
            call = (lambda: lib.tl_conv_transpose2d(x, k, pad, opad, stride, dil)) if two else \
                (lambda: lib.tl_conv_transpose1d(x, k, pad, opad, stride, dil, groups))
        else:
            call = lambda: (lib.tl_conv2d if two else lib.tl_conv1d)(  # noqa: E731
                x, k, pad, stride, dil, groups)

        def ref():
            if trans and 0 in xs[2:]:
                return np.zeros(empty)
            f = conv_t_ref if trans else conv_ref
            args = (pad, opad, stride, dil, groups) if trans else (pad, stride, dil, groups)
            return f(vals(xv, dt), vals(kv, dt), *args)[0]
    t = call()
    if not ok:
        if t:
            live.append(t)
            raise Mismatch('%s: succeeded with shape %s, candle refuses it' % (
                desc, shape_of(t)))
        msg = err()
        if not msg or not (msg.startswith(name) or msg.startswith(name.split('_')[0])):
            raise Mismatch('%s: failed without a message naming %s: %r' % (desc, name, msg))
        return desc
    got = own(t, desc)
    if ref is None:
        if shape_of(got) != base:
            raise Mismatch('%s: shape %s, want %s' % (desc, shape_of(got), base))
        return desc
    want = ref()
    compare(got, want, U8 if kind == 'cmp' else dt, bits=False, ulps=0, label=desc)
    return desc


def shortest_digits(x, dt):
    """(digits, exponent) of the shortest decimal that reads back to x in dt: x = 0.d1d2... *
    10^exponent."""
    for p in range(1, 40):
        m = '%.*e' % (p - 1, x)
        if float(rounded([float(m)], dt)[0]) == x:
            break
    mant, e = m.split('e')
    digits = mant.replace('.', '').replace('-', '').rstrip('0') or '0'
    return digits, int(e)


def rust_debug(x, dt):
    """Rust's {:?} of a float with the shortest digits for dt (tl.h's tl_format)."""
    if math.isnan(x):
        return 'NaN'
    if math.isinf(x):
        return 'inf' if x > 0 else '-inf'
    sign = '-' if math.copysign(1, x) < 0 else ''
    if x == 0:
        return sign + '0.0'
    digits, e = shortest_digits(abs(x), dt)
    if 1e-4 <= abs(x) < 1e16:
        if e >= 0:
            whole = (digits + '0' * (e + 1))[:e + 1]
            frac = digits[e + 1:] or '0'
        else:
            whole, frac = '0', '0' * (-e - 1) + digits
        return sign + whole + '.' + frac
    return sign + digits[0] + ('.' + digits[1:] if len(digits) > 1 else '') + 'e%d' % e


def op_format():
    dt = pick(FLOATS + INTS)
    n = int(rng.integers(0, 6))
    scalar = rng.random() < 0.2
    shape = () if scalar else (n,)
    if dt in FLOATS:
        v = rand_floats(shape, dt, special=0.3, scale=pick([1.0, 1e-5, 1e5, 1e17, 1e-20]))
    else:
        v = rand_ints(shape, dt, extremes=0.3)
    x, xv, d = make(v, dt, allow_bcast=False)
    buf = C.create_string_buffer(4096)
    desc = 'format %s %s' % (NAMES[dt], shape)
    n = lib.tl_format(x, buf, 4096)
    got = buf.value.decode()
    items = [rust_debug(float(a), dt) if dt in FLOATS else str(int(a)) for a in
             vals(xv, dt).flat]
    want = items[0] if scalar else '[' + ', '.join(items) + ']'
    if got != want or n != len(want):
        raise Mismatch('%s: got %r (%d), want %r' % (desc, got, n, want))
    return desc


# ------------------------------------------------------------------------------------------
# The rest of tl.h: fills and masks, the remaining views and the layout queries, var_set,
# to_device, rand/randn, custom and in-place op tables, .npz and safetensors saving
# ------------------------------------------------------------------------------------------
def candle_contiguous(shape, strides):
    """candle's Shape::is_contiguous: row-major strides on every dim of size 2 or more."""
    acc = 1
    for d, st in zip(reversed(shape), reversed(strides)):
        if d > 1 and st != acc:
            return False
        acc *= d
    return True


def layout_of(t):
    """(shape, strides, offset) of a tensor, in elements."""
    st = lib.tl_strides(t)
    return shape_of(t), tuple(st[i] for i in range(lib.tl_ndim(t))), lib.tl_offset(t)


def check_new(t, x, desc):
    """t is new contiguous storage at offset 0, not x's."""
    _, st, off = layout_of(t)
    if not lib.tl_is_contiguous(t) or off != 0:
        raise Mismatch('%s: a new tensor laid out %s offset %d' % (desc, st, off))
    if x is not None and lib.tl_shares_storage(t, x):
        raise Mismatch('%s: shares storage with its argument' % desc)


def op_fill():
    """zeros, ones, zeros_like/ones_like/full_like of a view (new contiguous storage of its
    shape, the value converted as tl_full does), eye, tril2, triu2."""
    dt = pick(FLOATS + INTS)
    kind = pick(['zeros', 'ones', 'zeros_like', 'ones_like', 'full_like', 'eye', 'tril2',
                 'triu2'])
    if kind in ('eye', 'tril2', 'triu2'):
        n = pick([0, 1, 2, 3, 5, 17, 64, 65])
        desc = '%s %s %d' % (kind, NAMES[dt], n)
        got = own(getattr(lib, 'tl_' + kind)(n, dt, 0), desc)
        ones = np.ones((n, n))
        ref = np.eye(n) if kind == 'eye' else np.tril(ones) if kind == 'tril2' else np.triu(ones)
        compare(got, ref, dt, bits=True, label=desc)
        check_new(got, None, desc)
        return desc
    s = rand_shape()
    x = None
    if kind in ('zeros', 'ones'):
        desc = '%s %s %s' % (kind, NAMES[dt], s)
        got = own(getattr(lib, 'tl_' + kind)(sizes(s), len(s), dt, 0), desc)
        c = 0.0 if kind == 'zeros' else 1.0
    else:
        x, _, d = make(rand_values(s, dt), dt)
        c = {'zeros_like': 0.0, 'ones_like': 1.0}.get(kind)
        if c is None:
            c = float(rand_values((), dt)) if dt in FLOATS else \
                float(pick([0, 1, -1, 300, 2.7, -2.7, 1e20, -1e20, math.nan]))
        desc = '%s %s %s(%s) %r' % (kind, NAMES[dt], s, d, c)
        got = own(lib.tl_full_like(x, c) if kind == 'full_like' else
                  getattr(lib, 'tl_' + kind)(x), desc)
    ref = np.full(s, c) if dt in FLOATS else np.full(s, candle_as_int([c], dt)[0], dtype=object)
    compare(got, ref, dt, bits=True, label=desc)
    check_new(got, x, desc)
    return desc


def op_view_layout():
    """broadcast_left, flatten_all, t, detach, clone, to_device, narrow, permute, and the
    calls where candle returns its argument's clone (get of a 0-d tensor, cat of one,
    flatten with start >= end, pads of 0 and 0: the same handle here): the values,
    whether the result shares the argument's storage, and its layout as candle's Layout
    computes it (narrow moves the offset, t/permute reorder shape and strides, new dims of a
    broadcast have stride 0); tl_is_contiguous as candle's is_contiguous on every tensor."""
    dt = pick(FLOATS + INTS)
    s = rand_shape()
    nd = len(s)
    x, xv, d = make(rand_values(s, dt), dt)
    v = vals(xv, dt)
    xs, xst, xoff = layout_of(x)
    kinds = ['broadcast_left', 'flatten_all', 'detach', 'clone', 'to_device', 'itself']
    kinds += ['narrow'] if nd else []
    kinds += ['t', 'permute'] if nd >= 2 else ['t_fails']
    kind = pick(kinds)
    desc = '%s %s %s(%s) strides %s offset %d' % (kind, NAMES[dt], s, d, xst, xoff)
    if candle_contiguous(xs, xst) != bool(lib.tl_is_contiguous(x)):
        raise Mismatch('%s: is_contiguous says %d' % (desc, lib.tl_is_contiguous(x)))
    share, want = True, (xs, xst, xoff)
    if kind == 'broadcast_left':
        left = rand_shape(rank=int(rng.integers(0, min(3, 8 - nd) + 1)))
        desc += ' left %s' % (left,)
        got = own(lib.tl_broadcast_left(x, sizes(left), len(left)), desc)
        ref = np.broadcast_to(v, left + s)
        want = (left + xs, (0,) * len(left) + xst, xoff)
    elif kind == 'flatten_all':
        got = own(lib.tl_flatten_all(x), desc)
        ref = v.reshape(-1)
        # candle's flatten: a rank-1 tensor itself, else its reshape (a view of a contiguous
        # tensor, a copy of another)
        share, want = nd <= 1 or candle_contiguous(xs, xst), None
    elif kind == 'detach':
        got = own(lib.tl_detach(x), desc)
        ref = v
    elif kind == 'clone':  # candle's clone is the same Arc: here the same handle, retained
        got = own(lib.tl_clone(x), desc)
        if got != x:
            raise Mismatch('%s: a new handle' % desc)
        ref = v
    elif kind == 'itself':  # where candle returns its argument's clone: the same handle
        a, dim = rdim(nd) if nd else (0, 0)
        how, call = [
            ('get of a 0-d tensor', lambda: lib.tl_get(x, int(rng.integers(0, 3)))),
            ('cat of one', lambda: lib.tl_cat((P * 1)(x), 1, dim)),
            ('flatten with start >= end', lambda: lib.tl_flatten(
                x, dim, int(rng.integers(0, a + 1)))),
            ('pad_with_zeros of 0, 0', lambda: lib.tl_pad_with_zeros(x, dim, 0, 0)),
            ('pad_with_same of 0, 0', lambda: lib.tl_pad_with_same(x, dim, 0, 0))][
                0 if nd == 0 else int(rng.integers(1, 5))]
        desc += ' ' + how
        got = own(call(), desc)
        if got != x:
            raise Mismatch('%s: a new handle' % desc)
        ref = v
    elif kind == 'to_device':
        got = own(lib.tl_to_device(x, 0), desc)
        ref, share, want = v, False, None
        check_new(got, x, desc)
    elif kind == 'narrow':
        a, dim = rdim(nd)
        start = int(rng.integers(0, s[a] + 1))
        ln = int(rng.integers(0, s[a] - start + 1))
        desc += ' dim %d %d %d' % (a, start, ln)
        got = own(lib.tl_narrow(x, dim, start, ln), desc)
        ref = np.take(v, range(start, start + ln), axis=a)
        ws = list(xs)
        ws[a] = ln
        want = (tuple(ws), xst, xoff + start * xst[a])
    elif kind == 't':
        got = own(lib.tl_t(x), desc)
        ref = np.swapaxes(v, -1, -2)
        sw = lambda q: q[:-2] + (q[-1], q[-2])
        want = (sw(xs), sw(xst), xoff)
    elif kind == 'permute':
        p = [int(q) for q in rng.permutation(nd)]
        desc += ' %s' % p
        got = own(lib.tl_permute(x, sizes(p), nd), desc)
        ref = np.transpose(v, p)
        want = (tuple(xs[q] for q in p), tuple(xst[q] for q in p), xoff)
    else:  # candle's t() needs 2 dims
        expect_fail(lib.tl_t(x), 't of rank %d' % nd, desc)
        if not err().startswith('t:'):
            raise Mismatch('%s: message %r' % (desc, err()))
        return desc
    compare(got, ref, dt, bits=True, label=desc)
    if bool(lib.tl_shares_storage(got, x)) != share:
        raise Mismatch('%s: shares storage %d, want %d' % (desc, lib.tl_shares_storage(got, x),
                                                            share))
    gl = layout_of(got)
    if want is not None and gl != want:
        raise Mismatch('%s: layout %s, want %s' % (desc, gl, want))
    if candle_contiguous(gl[0], gl[1]) != bool(lib.tl_is_contiguous(got)):
        raise Mismatch('%s: result %s is_contiguous says %d' % (desc, gl,
                                                                 lib.tl_is_contiguous(got)))
    return desc


def op_var_set():
    """var_set (candle's Var::set) through a permuted target: its elements become src's; a
    source sharing the target's storage (TL_ERR_SHARED_STORAGE), another shape
    (TL_ERR_SHAPE) or dtype (TL_ERR_DTYPE) is refused and changes nothing."""
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng.integers(0, 5)))
    nd = len(s)
    bv = rand_values(s, dt)
    base = raw(bv, dt)
    p = [int(q) for q in rng.permutation(nd)]
    target = own(lib.tl_permute(base, sizes(p), nd), 'permute')
    ts = tuple(s[q] for q in p)
    kind = pick(['ok', 'ok', 'shared', 'shape', 'dtype'])
    desc = 'var_set %s %s base %s permute %s' % (kind, NAMES[dt], s, p)
    if kind == 'ok':
        src, sv, ds = make(rand_values(ts, dt), dt)
        desc += ' src(%s)' % ds
        if lib.tl_var_set(target, src):
            raise Failed('%s: %s' % (desc, err()))
        compare(target, vals(sv, dt), dt, bits=True, label=desc)
        compare(base, np.transpose(vals(sv, dt), np.argsort(p)), dt, bits=True,
                label=desc + ' (whole storage)')
        return desc
    if kind == 'shared':
        src, want = own(lib.tl_detach(target), 'detach'), 8
    elif kind == 'shape':
        src, _, _ = make(rand_values(ts + (2,), dt), dt)
        want = 2
    else:
        src, _, _ = make(rand_values(ts, pick([q for q in FLOATS + INTS if q != dt])), 0)
        src = raw(rand_values(ts, F64 if dt != F64 else I32), F64 if dt != F64 else I32)
        want = 3
    rc = lib.tl_var_set(target, src)
    if rc != want or lib.tl_last_status() != want or not err().startswith('var_set'):
        raise Mismatch('%s: status %d (%r), want %d' % (desc, rc, err(), want))
    compare(base, vals(bv, dt), dt, bits=True, label=desc + ' (unchanged)')
    return desc


def op_rand():
    """rand/randn: the shape and float dtype asked for, uniform values inside [lo, hi), the
    same values for the same seed and others for the next seed; 1000 or more values have a
    mean within 6 standard errors of the distribution's (fixed seeds: no flakes). An integer
    dtype, a NaN bound or a negative std is refused."""
    dt = pick(FLOATS)
    s = pick([(), (0,), (3,), (2, 3), (1000,), (40, 50)])
    kind = pick(['rand', 'randn', 'misuse'])
    seed = int(rng.integers(0, 2 ** 63))
    f = lib.tl_rand if kind == 'rand' else lib.tl_randn
    if kind == 'misuse':
        bad = pick([('rand', 0.0, 1.0, pick(INTS)), ('randn', 0.0, 1.0, pick(INTS)),
                    ('randn', 0.0, -1.0, dt), ('rand', math.nan, 1.0, dt)])
        desc = 'misuse %s %r %r %s' % (bad[0], bad[1], bad[2], NAMES[bad[3]])
        expect_fail(getattr(lib, 'tl_' + bad[0])(bad[1], bad[2], sizes(s), len(s), bad[3], 0,
                                                 seed), 'bad arguments', desc)
        if not err().startswith(bad[0]):
            raise Mismatch('%s: message %r' % (desc, err()))
        return desc
    a, b = pick([(0.0, 1.0), (-2.0, 3.0), (5.0, 5.5), (-1024.0, 1024.0)] if kind == 'rand' else
                [(0.0, 1.0), (3.0, 0.5), (-100.0, 10.0)])
    desc = '%s %s %s %r %r seed %d' % (kind, NAMES[dt], s, a, b, seed)
    t1 = own(f(a, b, sizes(s), len(s), dt, 0, seed), desc)
    t2 = own(f(a, b, sizes(s), len(s), dt, 0, seed), desc)
    t3 = own(f(a, b, sizes(s), len(s), dt, 0, seed + 1), desc)
    g1, gdt = read(t1)
    if gdt != dt or g1.shape != s:
        raise Mismatch('%s: %s%s' % (desc, NAMES[gdt], g1.shape))
    if g1.tobytes() != read(t2)[0].tobytes():
        raise Mismatch('%s: another run of the seed gave other values' % desc)
    # six values at least: bf16 holds 16 values in [5, 5.5), so three of them match the
    # next seed's once in 4096 draws (seed 131039 met it); six, once in 2^24
    if g1.size >= 6 and g1.tobytes() == read(t3)[0].tobytes():
        raise Mismatch('%s: the next seed gave the same values' % desc)
    x = from_store(g1, dt)
    if not np.all(np.isfinite(x)):
        raise Mismatch('%s: %s' % (desc, x[~np.isfinite(x)][:3]))
    if kind == 'rand' and not np.all((x >= a) & (x < b)):
        raise Mismatch('%s: %r outside [lo, hi)' % (desc, x[(x < a) | (x >= b)][:3]))
    if x.size >= 1000:
        mean, sd = ((a + b) / 2, (b - a) / math.sqrt(12)) if kind == 'rand' else (a, b)
        if abs(x.mean() - mean) > 6 * sd / math.sqrt(x.size) + 2 * EPS[dt] * abs(mean):
            raise Mismatch('%s: mean %r, want %r' % (desc, x.mean(), mean))
        if abs(x.std() - sd) > 0.15 * sd:
            raise Mismatch('%s: std %r, want %r' % (desc, x.std(), sd))
    return desc


class View(C.Structure):
    _fields_ = [('data', P), ('dtype', C.c_int), ('ndim', SZ), ('shape', C.POINTER(SZ)),
                ('strides', C.POINTER(SZ)), ('offset', SZ)]


CUSTOM_FWD = C.CFUNCTYPE(P, P, C.POINTER(View), SZ)
INPLACE_FWD = C.CFUNCTYPE(C.c_int, P, C.POINTER(View), C.POINTER(View), SZ)


class CustomOp(C.Structure):
    _fields_ = [('name', C.c_char_p), ('cpu_fwd', CUSTOM_FWD), ('metal_fwd', CUSTOM_FWD),
                ('ctx', P)]


class InplaceOp(C.Structure):
    _fields_ = [('name', C.c_char_p), ('cpu_fwd', INPLACE_FWD), ('metal_fwd', INPLACE_FWD),
                ('ctx', P)]


def view_array(vw):
    """A numpy array over a tl_view's elements (writable: the storage's own memory)."""
    shape = tuple(vw.shape[i] for i in range(vw.ndim))
    st = tuple(vw.strides[i] for i in range(vw.ndim))
    store = np.dtype(STORE[vw.dtype])
    if 0 in shape:
        return np.empty(shape, store)
    span = vw.offset + sum((n - 1) * q for n, q in zip(shape, st)) + 1
    flat = np.frombuffer((C.c_char * (span * store.itemsize)).from_address(vw.data), store)
    return np.lib.stride_tricks.as_strided(flat[vw.offset:], shape,
                                           [q * store.itemsize for q in st])


def op_custom():
    """custom_op1/2/3 and inplace_op1/2/3 (and the _safe ones) with forwards written here:
    each operand's tl_view (data, dtype, shape, strides in elements, offset) must show its
    logical values; the custom forward returns the elementwise sum of its operands, the
    in-place one adds them into the target (one when there are none) through the target's
    view. Targets are permuted narrows of a base whose whole storage is checked; a _safe
    call may get an operand that shares the target's storage (it is copied first, so its
    values before the op count), a plain one given the target's storage twice fails with
    TL_ERR_LOCK (glibc's EDEADLK, candle's unguarded contract) and changes nothing; a
    forward's tl_fail reaches the caller; ctx is passed through."""
    dt = pick(FLOATS + INTS)
    nargs = int(rng.integers(1, 4))
    kind = pick(['custom', 'inplace', 'inplace', 'fail'])
    s = rand_shape(rank=int(rng.integers(0, 5)))
    nd = len(s)
    seen, token = [], int(rng.integers(1, 2 ** 31))

    def record(ctx, views, n):
        if ctx != token:
            seen.append('ctx %r, want %r' % (ctx, token))
        return [view_array(views[i]).copy() for i in range(n)], \
            [views[i].dtype for i in range(n)]

    def custom_fwd(ctx, views, n):
        try:
            arrs, dts = record(ctx, views, n)
            total = sum(vals(from_store(a, q) if q in FLOATS else a, q) for a, q in zip(arrs, dts))
            out = contig(to_store(wrap(total, dts[0]) if dts[0] in INTS else total, dts[0]))
            return lib.tl_from_data(out.ctypes.data, sizes(out.shape), out.ndim, dts[0], 0)
        except Exception:
            seen.append(traceback.format_exc(limit=-2))
            return None

    def inplace_fwd(ctx, dst, args, n):
        try:
            arrs, dts = record(ctx, args, n)
            out = view_array(dst[0])
            q = dst[0].dtype
            cur = vals(from_store(out, q) if q in FLOATS else out, q)
            add = sum(vals(from_store(a, r) if r in FLOATS else a, r) for a, r in zip(arrs, dts)) \
                if n else 1
            res = cur + add
            out[...] = to_store(wrap(res, q) if q in INTS else res, q)
            return 0
        except Exception:
            seen.append(traceback.format_exc(limit=-2))
            return 10

    def failing_fwd(ctx, dst, args, n):
        return lib.tl_fail(9, b'boom from the forward')

    name = b'fuzzop'
    if kind == 'custom':
        gen = (lambda sh: rand_floats(sh, dt, huge=False)) if dt in FLOATS else \
            (lambda sh: rand_values(sh, dt))
        ops = [make(gen(s), dt) for _ in range(nargs)]
        desc = 'custom_op%d %s %s (%s)' % (nargs, NAMES[dt], s, ', '.join(o[2] for o in ops))
        fwd = CUSTOM_FWD(custom_fwd)
        table = CustomOp(name, fwd, CUSTOM_FWD(), token)
        f = [lib.tl_custom_op1, lib.tl_custom_op2, lib.tl_custom_op3][nargs - 1]
        got = own(f(*[o[0] for o in ops], C.byref(table)), desc)
        if seen:
            raise Mismatch('%s: %s' % (desc, seen[0]))
        with np.errstate(all='ignore'):
            total = sum(vals(o[1], dt) for o in ops)
        compare(got, wrap(total, dt) if dt in INTS else total, dt, bits=dt in INTS,
                ulps=2 * nargs, label=desc)
        return desc
    # the target: a permuted narrow of base; the written region is checked in the whole base
    base_shape = tuple(q + int(rng.integers(0, 2)) for q in s)
    bv = rand_floats(base_shape, dt, huge=False) if dt in FLOATS else rand_values(base_shape, dt)
    base = raw(bv, dt)
    ref = vals(bv, dt).copy()
    view, rv = base, ref
    if nd:
        a = int(rng.integers(0, nd))
        view = own(lib.tl_narrow(base, a, base_shape[a] - s[a], s[a]), 'narrow')
        sl = [slice(None)] * nd
        sl[a] = slice(base_shape[a] - s[a], None)
        p = [int(q) for q in rng.permutation(nd)]
        view = own(lib.tl_permute(view, sizes(p), nd), 'permute')
        rv = ref[tuple(sl)].transpose(p)
    ts = rv.shape
    n = nargs - 1
    safe = n >= 1 and rng.random() < 0.5
    shared = n >= 1 and rng.random() < 0.3
    args, descs, avals = [], [], []
    for i in range(n):
        if shared and i == n - 1:  # a view of the base: the target's storage
            cp = own(lib.tl_copy(view), 'copy')
            arg = own(lib.tl_detach(view), 'detach') if rng.random() < 0.5 else base
            if arg == base and ts != tuple(base_shape):
                arg = own(lib.tl_detach(view), 'detach')
            args.append(arg)
            descs.append('shared')
            avals.append(rv.copy() if arg != base else ref.copy())
            del cp
        else:
            t, tv, td = make(rand_floats(ts, dt, huge=False) if dt in FLOATS else
                             rand_values(ts, dt), dt)
            args.append(t)
            descs.append(td)
            avals.append(vals(tv, dt))
    desc = '%s%s%d %s base %s target %s (%s)' % (kind, '_safe' if safe else '', nargs, NAMES[dt],
                                                 base_shape, ts, ', '.join(descs))
    table = InplaceOp(name, INPLACE_FWD(failing_fwd if kind == 'fail' else inplace_fwd),
                      INPLACE_FWD(), token)
    if n == 0:
        rc = lib.tl_inplace_op1(view, C.byref(table))
    elif n == 1:
        rc = (lib.tl_inplace_op2_safe if safe else lib.tl_inplace_op2)(view, args[0],
                                                                        C.byref(table))
    else:
        rc = (lib.tl_inplace_op3_safe if safe else lib.tl_inplace_op3)(view, args[0], args[1],
                                                                        C.byref(table))
    if seen:
        raise Mismatch('%s: %s' % (desc, seen[0]))
    if shared and not safe:
        if rc != 7 or not err().startswith('fuzzop'):
            raise Mismatch('%s: status %d %r, want TL_ERR_LOCK (EDEADLK)' % (desc, rc, err()))
        compare(base, ref, dt, bits=True, label=desc + ' (unchanged)')
        return desc
    if kind == 'fail':
        if rc != 9 or err() != 'boom from the forward':
            raise Mismatch('%s: status %d %r, want the forward\'s' % (desc, rc, err()))
        return desc
    if rc:
        raise Failed('%s: %s' % (desc, err()))
    with np.errstate(all='ignore'):
        rv[...] = rv + (sum(avals) if n else 1)
    if dt in INTS:
        ref = wrap(ref, dt)
    compare(base, ref, dt, ulps=2 * nargs, label=desc + ' (whole storage)')
    return desc


ST_NAME = {U8: 'U8', U32: 'U32', I64: 'I64', F16: 'F16', BF16: 'BF16', F32: 'F32', F64: 'F64',
           I16: 'I16', I32: 'I32'}


def safetensors_bytes(items, meta):
    """A safetensors file as its format says: a u64 header length, the JSON header, data."""
    import json
    import struct
    head, blobs, at = {}, [], 0
    if meta:
        head['__metadata__'] = meta
    for name, dt, stored in items:
        b = contig(stored).tobytes()
        head[name] = {'dtype': ST_NAME[dt], 'shape': list(stored.shape),
                      'data_offsets': [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(head).encode()
    h += b' ' * (-len(h) % 8)  # writers pad the header to 8 bytes with spaces
    return struct.pack('<Q', len(h)) + h + b''.join(blobs)


def parse_safetensors(data):
    import json
    import struct
    n = struct.unpack('<Q', data[:8])[0]
    head = json.loads(data[8:8 + n])
    head.pop('__metadata__', None)
    return head, data[8 + n:]


def op_files():
    """tl_save_npz read by numpy's np.load; tl_save_safetensors parsed here (header fields,
    bytes); safetensors written here (any tensor order, __metadata__, 0-size and 0-d tensors)
    read by tl_load_safetensors and tl_load_safetensors_buffer, names sorted."""
    kind = pick(['save_npz', 'save_safetensors', 'load_safetensors'])
    n = int(rng.integers(1, 4))
    items = []
    for i in range(n):
        dt = pick(FLOATS + INTS if kind != 'save_npz' else [q for q in FLOATS + INTS if q != BF16])
        s = rand_shape(rank=int(rng.integers(0, 4)))
        items.append(('t%d_%s' % (int(rng.integers(0, 100)), NAMES[dt]) if i else 'w', dt, s,
                      rand_values(s, dt)))
    names = []
    for it in items:  # distinct names
        nm = it[0]
        while nm in names:
            nm += 'x'
        names.append(nm)
    desc = '%s %s' % (kind, [(nm, NAMES[it[1]], it[2]) for nm, it in zip(names, items)])
    if kind == 'load_safetensors':
        order = [int(q) for q in rng.permutation(n)]
        stored = [(names[i], items[i][1], to_store(items[i][3], items[i][1])) for i in order]
        data = safetensors_bytes(stored, {'format': 'pt'} if rng.random() < 0.5 else None)
        path = os.path.join(scratch, 'x.safetensors')
        with open(path, 'wb') as f:
            f.write(data)
        for how in ('file', 'buffer'):
            out, cnt = P(), SZ()
            buf = C.create_string_buffer(data, len(data))
            rc = lib.tl_load_safetensors(path.encode(), 0, C.byref(out), C.byref(cnt)) \
                if how == 'file' else \
                lib.tl_load_safetensors_buffer(buf, len(data), 0, C.byref(out), C.byref(cnt))
            if rc:
                raise Failed('%s %s: %s' % (desc, how, err()))
            arr = C.cast(out, C.POINTER(Named))
            try:
                got = [arr[i].name.decode() for i in range(cnt.value)]
                if got != sorted(names):
                    raise Mismatch('%s %s: names %s' % (desc, how, got))
                for i in range(cnt.value):
                    k = names.index(got[i])
                    dt = items[k][1]
                    compare(arr[i].tensor, vals(items[k][3], dt) if dt in INTS else items[k][3],
                            dt, bits=True, label='%s %s %s' % (desc, how, got[i]))
            finally:
                lib.tl_named_free(out, cnt.value)
        return desc
    tensors = []
    for it in items:
        t, tv, d = make(it[3], it[1])
        tensors.append((t, tv))
    lst = (Named * n)(*[Named(nm.encode(), t) for nm, (t, _) in zip(names, tensors)])
    if kind == 'save_npz':
        path = os.path.join(scratch, 'out.npz')
        if lib.tl_save_npz(path.encode(), lst, n):
            raise Failed('%s: %s' % (desc, err()))
        with np.load(path) as z:
            if list(z.keys()) != names:
                raise Mismatch('%s: numpy read names %s' % (desc, list(z.keys())))
            for nm, it, (_, tv) in zip(names, items, tensors):
                a = z[nm]
                want = contig(to_store(vals(tv, it[1]), it[1]))
                if a.dtype != np.dtype('<' + NPY[it[1]]) or a.shape != it[2] or \
                        a.tobytes() != want.tobytes():
                    raise Mismatch('%s: numpy read %s %s %s' % (desc, nm, a.dtype, a.shape))
        return desc
    path = os.path.join(scratch, 'out.safetensors')
    if lib.tl_save_safetensors(path.encode(), lst, n):
        raise Failed('%s: %s' % (desc, err()))
    with open(path, 'rb') as f:
        head, data = parse_safetensors(f.read())
    if sorted(head) != sorted(names):
        raise Mismatch('%s: header names %s' % (desc, sorted(head)))
    for nm, it, (_, tv) in zip(names, items, tensors):
        e = head[nm]
        want = contig(to_store(vals(tv, it[1]), it[1])).tobytes()
        lo, hi = e['data_offsets']
        if e['dtype'] != ST_NAME[it[1]] or tuple(e['shape']) != it[2] or data[lo:hi] != want:
            raise Mismatch('%s: %s written as %s' % (desc, nm, e))
    return desc


OPS = [op_unary, op_affine_family, op_binary, op_cmp, op_where, op_reduce, op_softmax,
       op_matmul, op_index, op_to_dtype, op_cat, op_stats, op_norms, op_scan, op_shape,
       op_sort, op_conv, op_pool, op_inplace, op_vec, op_create, op_misuse, op_format,
       op_conv_transpose, op_upsample, op_npy, op_fill, op_view_layout, op_var_set, op_rand,
       op_custom, op_files, op_shape_rules]


def main(ops=None, usage=__doc__):
    """The driver, fuzz_torch's too: ops (default OPS) in turn, failures and STATS printed."""
    global lib, rng
    if len(sys.argv) < 2:
        sys.exit(usage)
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 20261202
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    only = sys.argv[4].split(',') if len(sys.argv) > 4 else None
    global MAX_RANK, STATS, BIG
    MAX_RANK = int(os.environ.get('FUZZ_MAX_RANK', MAX_RANK))
    BIG = float(os.environ.get('FUZZ_BIG', BIG))
    STATS = {} if os.environ.get('FUZZ_STATS') else None
    import warnings
    warnings.simplefilter('ignore')  # fd 2 must hold only what the library writes
    global scratch
    scratch_dir = tempfile.TemporaryDirectory()
    scratch = scratch_dir.name
    lib = C.CDLL(sys.argv[1])
    declare(lib)
    rng = np.random.default_rng(seed)
    ops = [o for o in ops or OPS if not only or o.__name__[3:] in only]
    # the library must print nothing: fds 1 and 2 go to a file during the rounds
    cap = tempfile.TemporaryFile()
    saved = os.dup(1), os.dup(2)
    sys.stdout.flush()
    os.dup2(cap.fileno(), 1), os.dup2(cap.fileno(), 2)
    failures, seen = [], {}
    import time
    spent = {}  # seconds per op, printed when FUZZ_TIMES is set
    try:
        for r in range(rounds):
            op = ops[r % len(ops)]
            global current_op
            current_op = op.__name__[3:]
            t0 = time.time()
            try:
                op()
            except Exception as e:  # a harness error is a failure too, with its trace
                if not isinstance(e, (Mismatch, Failed)):
                    e = Failed(traceback.format_exc(limit=-3))
                key = (op.__name__, type(e).__name__, str(e).split(':')[0][:40])
                seen[key] = seen.get(key, 0) + 1
                if seen[key] <= 2:
                    failures.append('round %d %s: %s' % (r, op.__name__, e))
            finally:
                release_all()
                spent[op.__name__] = spent.get(op.__name__, 0) + time.time() - t0
    finally:
        sys.stdout.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
    cap.seek(0)
    printed = cap.read()
    for f in failures:
        print('FAIL', f)
    if os.environ.get('FUZZ_TIMES'):
        print(sorted(spent.items(), key=lambda kv: -kv[1])[:8])
    for (o, d), (n, ulp, used) in sorted((STATS or {}).items()):
        print('STATS %s %s checks %d max_ulps %.3g max_tol_share %.3g' % (o, d, n, ulp, used))
    if printed:
        print('FAIL: the library printed %d bytes: %r' % (len(printed), printed[:200]))
    print('%d rounds over %d ops, seed %d: %d failures (%d distinct)' % (
        rounds, len(ops), seed, sum(seen.values()), len(seen)))
    return 1 if failures or printed else 0


if __name__ == '__main__':
    sys.exit(main())
