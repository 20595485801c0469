#!/usr/bin/python3
"""Corner-value grids of tensorlib against PyTorch and candle's rules, live through ctypes.

    corners_torch.py PATH/TO/libtensorlib.so

fuzz_torch.py and chain_torch.py draw values at random, a few special ones among them, so a
rule that only a particular pair of values shows (a bound that rounds to the other zero, a
column whose pairs overflow) is met rarely or never. Here every dtype gets a fixed list of
corner values: the zeros of both signs, the infinities, NaN, the largest finite values, the
smallest normal and subnormal ones, halves for the roundings, integers near 2^24, 2^31, 2^32,
2^63 and the integer dtypes' ends. Over those, exhaustively:
  - casts between all 81 pairs of dtypes, from contiguous and from stride-2 views, plus the
    boundaries of each target (halfway past its largest finite value, around its smallest
    subnormal, ties to even and one ulp of the source off them, integers around each float's
    last exact one, float -> integer saturation): one rounding, Rust's `as` (saturating, NaN
    0), bit for bit;
  - the unary table on every dtype (integer dtypes: the eight ops they take, the rest refused
    with TL_ERR_DTYPE), contiguous and transposed;
  - binary ops and comparisons on every ordered pair of corner values, same-shape and as the
    broadcast of a column against a row (every pair again, through stride-0 views);
  - the scalar forms (binary_scalar, cmp_scalar, integer affine, clamp with each scalar as lo,
    as hi and as both, powf, elu) with scalars the dtype cannot hold (1e-300, 255.5, 2^64,
    +-inf, NaN);
  - max/min/argmax/argmin of corner matrices along each dim, keepdim or not, contiguous and
    transposed (candle's fold from the first element, strict comparison);
  - sum and mean of columns whose pairs overflow the dtype, or hold an inf or NaN, over dim 0
    and over the other dim of the transpose (one answer for both: tensorlib accumulates in
    double, one row after the other);
  - softmax, log_softmax and log_sum_exp of rows of infinities, NaN and zeros of both signs,
    along each dim of both layouts, against torch's f64 results rounded to the dtype;
  - every product of two corner values through matmul (a column times a row, each operand
    contiguous or transposed) and broadcast_matmul;
  - broadcast_add, broadcast_lt and broadcast_matmul over pairs of shapes with size-1, 0-size
    and missing dims: accepted exactly when numpy accepts them, refused with TL_ERR_SHAPE.
References: torch's f64 rounded once to the dtype where the op is exact or correctly rounded
(0 ulps); exp, log, tanh, sigmoid, silu, erf, sin, cos 4 ulps (fuzz_torch's bound); gelu and
gelu_erf from mpmath (torch's f64 gelu cancels below -3, 100 ulps off), 4 ulps, NaN at -inf
(candle's and torch's formulas: -inf * 0); candle's rules
where they differ from torch's (chain_torch.py's docstring lists them: relu and sign of NaN,
round half away, maximum keeping a left NaN, scalars converted to the dtype first, integer
affine in the dtype, truncating integer division that fails on 0).

Meson test corners_torch; exits 77 without torch. The library must print nothing: fds 1 and 2
are captured while it runs and must stay empty.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# chain_torch exits 77 when torch is missing; its value helpers are this file's too
import chain_torch as ct  # noqa: E402
from chain_torch import (ALL, EPS, FLOATS, FMT, INT_RANGE, INTS, NAMES, U8, as_int,  # noqa: E402
                         affine_int, binary_ref, close, cmp_ref, fold_ref, objarr, round_to,
                         unary_ref, wrap)
import torch  # noqa: E402

try:
    import mpmath
except ImportError:  # torch needs sympy, which needs mpmath: absent only in odd installs
    mpmath = None

ERR_SHAPE, ERR_DTYPE, ERR_RANGE = 2, 3, 5
UNARY = ['exp', 'log', 'sin', 'cos', 'tanh', 'abs', 'neg', 'recip', 'sqr', 'sqrt', 'relu', 'gelu',
         'gelu_erf', 'silu', 'floor', 'ceil', 'round', 'sign', 'sigmoid', 'erf']
INT_UNARY = ('abs', 'neg', 'sqr', 'relu', 'sign', 'floor', 'ceil', 'round')
SCALARS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 255.0, 255.5, 256.0, 65535.7, 4294967295.0,
           4294967296.0, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e300, -1e300, 1e-300, -1e-300,
           math.inf, -math.inf, math.nan]

lib = None
failures = []
checks = [0]


def fail(msg):
    failures.append(msg)


def corners(dt):
    """The corner values of dt, as logical values (ints exact, floats already in dt)."""
    if dt in INTS:
        lo, hi = INT_RANGE[dt]
        v = [lo, lo + 1, -1, 0, 1, 2, 3, 7, 100, 127, 128, 255, 256, 65535, 65536, 2 ** 31 - 1,
             2 ** 31, 2 ** 32 - 1, hi - 1, hi]
        return list(dict.fromkeys(wrap(x, dt) for x in v))  # in order, once each
    p, emin, fmax = FMT[dt]
    sub = 2.0 ** (emin - p + 1)
    v = [0.0, -0.0, math.inf, -math.inf, math.nan, fmax, -fmax, 2.0 ** emin, sub, -sub, 0.5,
         -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.7, -3.7, 255.0, 255.9, 256.0, 65504.0, 65535.5,
         2.0 ** 31, 2.0 ** 31 - 64, -2.0 ** 31, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e30,
         -1e30, 2.0 ** 24 + 2, 127.5, -128.5, 32767.5, -32768.9, 1e-3]
    return [round_to(x, dt) for x in v]


def values(lst, dt):
    return objarr([int(x) for x in lst], (len(lst),)) if dt in INTS else \
        np.array(lst, np.float64)


def tensor(v, dt):
    """A tensorlib tensor holding the logical array v (contiguous)."""
    st = ct.to_store(v, dt)
    t = lib.tl_from_data(ct.data_ptr(st), ct.sizes(st.shape), st.ndim, dt, 0)
    if not t:
        raise RuntimeError('from_data: %s' % ct.err())
    return t


def strided(v, dt):
    """v (1-D) as a stride-2 view: the even elements of a storage twice as long."""
    twice = np.empty(2 * len(v), dtype=object if dt in INTS else np.float64)
    twice[0::2] = v
    twice[1::2] = v[::-1]
    base = tensor(twice, dt)
    shape = ct.sizes([len(v), 2])
    pairs = lib.tl_reshape(base, shape, 2)
    col = lib.tl_narrow(pairs, 1, 0, 1)
    out = lib.tl_squeeze(col, 1)
    for t in (base, pairs, col):
        lib.tl_release(t)
    return out


def matrix(m, dt, transposed):
    """The logical matrix m, contiguous or as the transpose of its contiguous transpose."""
    if not transposed:
        return tensor(m, dt)
    base = tensor(np.ascontiguousarray(m.T), dt)
    t = lib.tl_t(base)
    lib.tl_release(base)
    return t


def judge(label, t, want, dt, ulps=0.0, atol=0.0):
    """t (owned) against want (None: the call must fail with TL_ERR_RANGE)."""
    checks[0] += 1
    if want is None:
        if t:
            lib.tl_release(t)
            return fail('%s: succeeded, want a failure' % label)
        if lib.tl_last_status() != ERR_RANGE:
            return fail('%s: status %d (%s), want TL_ERR_RANGE' % (label, lib.tl_last_status(),
                                                                   ct.err()))
        return None
    if not t:
        return fail('%s: failed: %s' % (label, ct.err()))
    got, shape, gdt = ct.read(t)
    lib.tl_release(t)
    want = np.asarray(want)
    if gdt != dt or shape != want.shape:
        return fail('%s: got %s%s, want %s%s' % (label, NAMES[gdt], list(shape), NAMES[dt],
                                               list(want.shape)))
    if close(got, want, dt, ulps, atol):
        return None
    g, w = got.reshape(-1), want.reshape(-1)
    bad = [i for i in range(len(w)) if not close(g[i:i + 1], w[i:i + 1], dt, ulps, atol)]
    fail('%s: %d of %d differ, e.g. at %s got %r want %r' % (label, len(bad), len(w), bad[:3],
                                                            list(g[bad[:3]]), list(w[bad[:3]])))


def refuse(label, t, status, prefix):
    checks[0] += 1
    if t:
        lib.tl_release(t)
        return fail('%s: succeeded, want status %d' % (label, status))
    if lib.tl_last_status() != status or not ct.err().startswith(prefix):
        fail('%s: status %d "%s", want %d "%s..."' % (label, lib.tl_last_status(), ct.err(),
                                                     status, prefix))


# ---------------------------------------------------------------------------------------------
def cast_bounds(to):
    """Values around the edges of float dtype to's grid, as f64."""
    p, emin, fmax = FMT[to]
    top = 2.0 ** (math.floor(math.log2(fmax)) - p + 1)  # ulp of the largest binade
    sub = 2.0 ** (emin - p + 1)
    v = [fmax + top / 2, fmax + top / 2 - top * 2 ** -30, fmax + top / 4, sub / 2,
         sub / 2 * (1 + 2 ** -40), sub * 1.5, sub * 2.5, sub * 0.75, 2.0 ** emin - sub / 2,
         2.0 ** emin * (1 - 2 ** -60)]
    for e in (0, 5, -3):
        u = 2.0 ** (e - p + 1)
        base = 2.0 ** e
        v += [base + u / 2, base + u / 2 + u * 2 ** -30, base + u * 1.5,
              base + u / 2 - u * 2 ** -30, base + u / 2 + 2.0 ** (e - 50)]
    return v + [-x for x in v]


def int_bounds(src, to):
    """Integers of src around the last ones float dtype to holds exactly."""
    lo, hi = INT_RANGE[src]
    p = FMT[to][0]
    v = [hi, lo, hi - 1]
    for sh in range(p, 64):
        u = 1 << (sh - p)
        for off in (0, 1, u, u + 1, 3 * u, 3 << max(sh - p - 1, 0)):
            v += [x for x in ((1 << sh) + off, -((1 << sh) + off)) if lo <= x <= hi]
    return v


def cast_ref(a, src, to):
    if to in INTS:
        return objarr([wrap(int(q), to) if src in INTS else as_int(float(q), to) for q in a],
                      a.shape)
    return np.array([round_to(int(q) if src in INTS else float(q), to) for q in a])


def check_casts():
    for src in ALL:
        v = values(corners(src), src)
        extra = {}
        for to in FLOATS:
            extra[to] = values([int(x) for x in int_bounds(src, to)], src) if src in INTS \
                else values([round_to(x, src) for x in cast_bounds(to)], src)
        for to in INTS:
            lo, hi = INT_RANGE[to]
            extra[to] = values([wrap(x, src) for x in (lo, hi, lo - 1, hi + 1)], src) \
                if src in INTS else values([round_to(x, src) for x in (
                    hi + 0.5, hi + 1.0, hi - 0.5, lo - 0.5, lo - 1.0, lo + 0.5, float(hi),
                    float(lo), 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, -0.99, 0.99, -0.0)], src)
        for layout, make in (('', tensor), (' stride 2', strided)):
            t = make(v, src)
            for to in ALL:
                judge('to_dtype %s -> %s%s' % (NAMES[src], NAMES[to], layout),
                      lib.tl_to_dtype(t, to), cast_ref(v, src, to), to)
            lib.tl_release(t)
        for to in ALL:
            t = tensor(extra[to], src)
            judge('to_dtype %s -> %s, its edges' % (NAMES[src], NAMES[to]),
                  lib.tl_to_dtype(t, to), cast_ref(extra[to], src, to), to)
            lib.tl_release(t)


def gelu_ref(name, v, dt):
    """mpmath's gelu (tanh form) or gelu_erf, rounded to dt."""
    mpmath.mp.prec = 120
    out = []
    for x in v:
        if math.isnan(x) or x > 50:  # both forms are x there in every dtype
            out.append(x)
            continue
        if x == -math.inf:  # candle's and torch's formulas: -inf * 0
            out.append(math.nan)
            continue
        if x < -60:  # below every dtype's least subnormal (f64 gelu_erf(-40) is 1e-350)
            out.append(-0.0)
            continue
        m = mpmath.mpf(x)
        if name == 'gelu':
            u = mpmath.sqrt(2 / mpmath.pi) * (m + mpmath.mpf('0.044715') * m ** 3)
            y = m / (1 + mpmath.exp(-2 * u))  # 0.5 x (1 + tanh u)
        else:
            y = m * mpmath.erfc(-m / mpmath.sqrt(2)) / 2
        out.append(round_to(float(y), dt) if y != 0 else math.copysign(0.0, x))
    return np.array(out)


def check_unary():
    for dt in ALL:
        v = values(corners(dt), dt)
        for layout in ('', ' transposed'):
            t = matrix(np.stack([v, v]), dt, True) if layout else tensor(v, dt)
            for op, name in enumerate(UNARY):
                label = '%s %s%s' % (name, NAMES[dt], layout)
                r = lib.tl_unary(op, t)
                if dt in INTS and name not in INT_UNARY:
                    refuse(label, r, ERR_DTYPE, name)
                    continue
                if name in ('gelu', 'gelu_erf'):
                    if mpmath is None:
                        lib.tl_release(r)
                        continue
                    want, ulps = gelu_ref(name, v, dt), 4
                else:
                    want, ulps = unary_ref(name, v, dt)
                if name in ('sin', 'cos') and dt in FLOATS:
                    # torch's f64 sin/cos of a huge argument is libm's, correctly reduced;
                    # tensorlib's f32 path reduces in double too
                    ulps = 4
                judge(label, r, np.stack([want, want]) if layout else want, dt, ulps)
            lib.tl_release(t)


def check_binary():
    for dt in ALL:
        c = corners(dt)
        n = len(c)
        a, b = values([x for x in c for _ in range(n)], dt), values(c * n, dt)
        ta, tb = tensor(a, dt), tensor(b, dt)
        col = tensor(values(c, dt).reshape(n, 1), dt)
        row = tensor(values(c, dt).reshape(1, n), dt)
        for op in range(6):
            want = binary_ref(op, a, b, dt)
            label = 'binary op %d %s, every pair' % (op, NAMES[dt])
            if want is None:  # an integer division by 0 fails, and so does the broadcast one
                judge(label, lib.tl_binary(op, ta, tb), None, dt)
                judge(label + ' broadcast', lib.tl_broadcast_binary(op, col, row), None, dt)
                keep = [i for i in range(len(b)) if int(b[i]) != 0]
                a2, b2 = values([a[i] for i in keep], dt), values([b[i] for i in keep], dt)
                t2a, t2b = tensor(a2, dt), tensor(b2, dt)
                judge(label + ' but 0 divisors', lib.tl_binary(op, t2a, t2b),
                      binary_ref(op, a2, b2, dt), dt)
                lib.tl_release(t2a)
                lib.tl_release(t2b)
                continue
            judge(label, lib.tl_binary(op, ta, tb), want, dt)
            judge(label + ' broadcast', lib.tl_broadcast_binary(op, col, row),
                  want.reshape(n, n), dt)
        for op in range(6):
            want = cmp_ref(op, a, b)
            judge('cmp op %d %s, every pair' % (op, NAMES[dt]), lib.tl_cmp(op, ta, tb), want, U8)
            judge('cmp op %d %s broadcast' % (op, NAMES[dt]), lib.tl_broadcast_cmp(op, col, row),
                  want.reshape(n, n), U8)
        for t in (ta, tb, col, row):
            lib.tl_release(t)


def check_scalars():
    for dt in ALL:
        v = values(corners(dt), dt)
        t = strided(v, dt)
        for s in SCALARS:
            for op in range(6):
                if dt in INTS and op < 4:  # candle's affine in the dtype
                    mul, add = [(1.0, s), (1.0, -s), (s, 0.0), (
                        1.0 / s if s else math.copysign(math.inf, s), 0.0)][op]
                    want = affine_int(v, mul, add, dt)
                elif dt in INTS:
                    sv = as_int(s, dt)
                    want = objarr([(x if not x < sv else sv) if op == 4 else
                                   (x if not x > sv else sv) for x in (int(q) for q in v)],
                                  v.shape)
                else:
                    want = binary_ref(op, v, np.array(round_to(s, dt)), dt)
                judge('binary_scalar op %d %s %r' % (op, NAMES[dt], s),
                      lib.tl_binary_scalar(op, t, s), want, dt)
            sv = as_int(s, dt) if dt in INTS else round_to(s, dt)
            for op in range(6):
                judge('cmp_scalar op %d %s %r' % (op, NAMES[dt], s), lib.tl_cmp_scalar(op, t, s),
                      cmp_ref(op, v, np.array(sv, dtype=object if dt in INTS else None)), U8)
            if dt in INTS:
                judge('affine %s %r %r' % (NAMES[dt], s, s), lib.tl_affine(t, s, s),
                      affine_int(v, s, s, dt), dt)
            else:
                # powf is C's pow in double (the f32 kernel's exponent an f32), elu
                # candle's: x when its sign is positive, else alpha expm1(x) (so -0 gives
                # alpha * +0, as candle's (e^-0 - 1) alpha and torch's)
                e = float(np.float32(s)) if dt == ct.F32 else s
                want = np.array([round_to(q, dt) for q in np.power(v, e)])
                judge('powf %s %r' % (NAMES[dt], s), lib.tl_powf(t, s), want, dt, 2)
                want = np.array([round_to(x if math.copysign(1, x) > 0 or math.isnan(x) else
                                          e * (math.expm1(x) + 0.0), dt) for x in v])
                judge('elu %s %r' % (NAMES[dt], s), lib.tl_elu(t, s), want, dt, 4)
            for lo, hi in ((s, 100.0), (-5.0, s), (s, s)):
                # candle: maximum(lo) then minimum(hi), each bound the dtype's value first;
                # a NaN bound is no bound on floats (x < NaN is false) and 0 on integers
                if dt in INTS:
                    lo_v, hi_v = as_int(lo, dt), as_int(hi, dt)
                    want = objarr([min(max(int(q), lo_v), hi_v) for q in v], v.shape)
                else:
                    lo_v, hi_v = round_to(lo, dt), round_to(hi, dt)
                    w = np.where(v < lo_v, lo_v, v)
                    want = np.where(w > hi_v, hi_v, w)
                judge('clamp %s %r %r' % (NAMES[dt], lo, hi), lib.tl_clamp(t, lo, hi), want, dt)
        lib.tl_release(t)


def check_extremes():
    """max/min/argmax/argmin along each dim of corner matrices (ties, zeros, NaN first)."""
    for dt in ALL:
        c = corners(dt)
        n = len(c)
        # rows: the corners, their reverse, a zeros-and-NaN row, the corners rotated by 3
        zeros = [c[(i * 7) % n] if dt in INTS else [0.0, -0.0, math.nan][i % 3] for i in range(n)]
        m = values(c + c[::-1] + zeros + c[3:] + c[:3], dt).reshape(4, n)
        for layout in ('', ' transposed'):
            t = matrix(m, dt, bool(layout))
            for op in range(2, 6):
                for d in (0, 1):
                    want, rdt = fold_ref(op, m, d, dt)
                    for keep in (False, True):
                        judge('reduce op %d %s dim %d%s%s' % (op, NAMES[dt], d,
                                                             ' keepdim' if keep else '', layout),
                              lib.tl_reduce(op, t, ct.sizes([d]), 1, keep),
                              np.expand_dims(want, d) if keep else want, rdt)
            lib.tl_release(t)


def check_overflowing_sums():
    """Columns whose pairs overflow the dtype, or hold an inf or a NaN, 8 and 16 rows: the
    sum and mean are the running double sum, rounded once, whichever layout."""
    for dt in (ct.F32, ct.F64):  # the dtypes with typed sum paths
        big = FMT[dt][2] * 0.9
        for rows in (8, 16):
            cols = [[big, big, -big, -big] + [0.0] * (rows - 4),
                    [big] * 4 + [-big] * 4 + [0.0] * (rows - 8),
                    [1.0, math.inf] + [1.0] * (rows - 2),
                    [1.0] * (rows - 1) + [math.nan],
                    [float(i) for i in range(rows)]]
            m = np.array(cols).T.copy()
            sums = []
            for col in cols:
                acc = 0.0
                for x in col:
                    acc += x  # Python floats are doubles: the running double sum
                sums.append(acc)
            want_sum = np.array([round_to(s, dt) for s in sums])
            want_mean = np.array([round_to(s / rows, dt) for s in sums])
            t = tensor(m, dt)
            tt = tensor(np.ascontiguousarray(m.T), dt)
            tv = lib.tl_t(tt)
            for op, want in ((0, want_sum), (1, want_mean)):
                label = '%s %s of [%d, 5] overflowing columns' % (['sum', 'mean'][op],
                                                                  NAMES[dt], rows)
                judge(label + ' dim 0', lib.tl_reduce(op, t, ct.sizes([0]), 1, False), want, dt)
                judge(label + ' dim 0 of a transposed view',
                      lib.tl_reduce(op, tv, ct.sizes([0]), 1, False), want, dt)
                judge(label + ' dim 1 of the transpose',
                      lib.tl_reduce(op, tt, ct.sizes([1]), 1, False), want, dt)
            for x in (t, tt, tv):
                lib.tl_release(x)


def check_matmul_pairs():
    """Every product of two corner values, as the matmul of a column by a row (k = 1, so each
    result is one product rounded once: infinities and NaN included), with each operand
    contiguous or transposed, and the same through broadcast_matmul with a batch dim of 1
    against one of 2. A zero's sign is BLAS's (OpenBLAS adds the product to a +0 with an fma:
    -0 * 1 gives +0, an underflowing negative product -0), so floats compare with half an eps
    of relative slack: a zero may have either sign, a normal product may not be an ulp off."""
    for dt in ALL:
        c = corners(dt)
        n = len(c)
        col, row = values(c, dt).reshape(n, 1), values(c, dt).reshape(1, n)
        slack = 0 if dt in INTS else 0.5
        if dt in INTS:
            want = objarr([wrap(int(x) * int(y), dt) for x in c for y in c], (n, n))
        else:
            want = np.array([round_to(x * y, dt) for x in c for y in c]).reshape(n, n)
        for ta in (False, True):
            for tb in (False, True):
                a, b = matrix(col, dt, ta), matrix(row, dt, tb)
                judge('matmul %s column x row%s%s' % (NAMES[dt], ' (a transposed)' * ta,
                                                      ' (b transposed)' * tb),
                      lib.tl_matmul(a, b), want, dt, slack)
                lib.tl_release(a)
                lib.tl_release(b)
        a = tensor(col.reshape(1, n, 1), dt)
        b = tensor(np.stack([row, row]), dt)
        judge('broadcast_matmul %s [1, n, 1] x [2, 1, n]' % NAMES[dt],
              lib.tl_broadcast_matmul(a, b), np.stack([want, want]), dt, slack)
        lib.tl_release(a)
        lib.tl_release(b)


def check_broadcast_shapes():
    """broadcast_add, broadcast_lt and broadcast_matmul over pairs of shapes with size-1,
    zero-size and missing dims, rank 0 to 3: numpy's rule decides what is accepted, and a
    refusal is TL_ERR_SHAPE with a message that starts with the op's name."""
    shapes = [(), (0,), (1,), (3,), (1, 1), (0, 1), (1, 0), (2, 1), (1, 3), (2, 3), (0, 3), (2, 0),
              (1, 1, 3), (2, 1, 1), (4, 2, 3), (1, 0, 1)]
    for sa in shapes:
        for sb in shapes:
            a = np.arange(1, int(np.prod(sa)) + 1, dtype=np.float64).reshape(sa)
            b = np.arange(1, int(np.prod(sb)) + 1, dtype=np.float64).reshape(sb) * 10
            ta, tb = tensor(a, ct.F32), tensor(b, ct.F32)
            cases = [('broadcast_add', lambda: lib.tl_broadcast_binary(0, ta, tb),
                      lambda: a + b, ct.F32),
                     ('broadcast_lt', lambda: lib.tl_broadcast_cmp(2, ta, tb),
                      lambda: objarr([int(q) for q in (a < b).reshape(-1)], (a < b).shape), U8)]
            if len(sa) >= 2 and len(sb) >= 2:
                cases.append(('broadcast_matmul', lambda: lib.tl_broadcast_matmul(ta, tb),
                              lambda: np.matmul(a, b), ct.F32))
            for name, call, ref, dt in cases:
                label = '%s %s %s' % (name, list(sa), list(sb))
                try:
                    want = ref()
                except ValueError:  # numpy refuses the shapes: tensorlib must too
                    refuse(label, call(), ERR_SHAPE, name)
                    continue
                judge(label, call(), want, dt)
            lib.tl_release(ta)
            lib.tl_release(tb)


def check_softmax_rows():
    inf, nan = math.inf, math.nan
    rows = [[-inf, -inf, -inf], [inf, 1, 2], [inf, inf, 0], [nan, 1, 2], [1, nan, 2],
            [-0.0, 0.0, -inf], [0.0, -inf, -0.0], [-inf, 5, -inf], [1e30, -1e30, 0]]
    for dt in FLOATS:
        m = np.array([[round_to(x, dt) for x in r] for r in rows])
        x = torch.from_numpy(m.copy())
        for layout in ('', ' transposed'):
            t = matrix(m, dt, bool(layout))
            for d in (0, 1):
                for name, f, tf in (('softmax', lib.tl_softmax, torch.softmax),
                                    ('log_softmax', lib.tl_log_softmax, torch.log_softmax)):
                    w = tf(x, d).numpy()
                    want = np.array([round_to(q, dt) for q in w.reshape(-1)]).reshape(w.shape)
                    judge('%s %s dim %d%s' % (name, NAMES[dt], d, layout), f(t, d), want, dt, 4,
                          8 * EPS[dt])
                w = torch.logsumexp(x, d).numpy()
                want = np.array([round_to(q, dt) for q in w.reshape(-1)])
                judge('log_sum_exp %s dim %d%s' % (NAMES[dt], d, layout),
                      lib.tl_log_sum_exp(t, ct.sizes([d]), 1, False), want, dt, 4, 8 * EPS[dt])
            lib.tl_release(t)


def main():
    global lib
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    ct.declare(sys.argv[1])
    lib = ct.lib
    with ct.library_output() as printed, np.errstate(all='ignore'):
        for part in (check_casts, check_unary, check_binary, check_scalars, check_extremes,
                     check_overflowing_sums, check_softmax_rows, check_matmul_pairs,
                     check_broadcast_shapes):
            part()
    printed = printed[0]
    return ct.verdict('%d checks, %d failed' % (checks[0], len(failures)), failures, printed, 40)


if __name__ == '__main__':
    sys.exit(main())
