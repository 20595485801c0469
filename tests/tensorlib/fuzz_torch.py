#!/usr/bin/python3
"""Randomized differential check of tensorlib against PyTorch, live, through ctypes.

    fuzz_torch.py PATH/TO/libtensorlib.so [SEED [ROUNDS [OPS]]]

fuzz_numpy.py's sibling with an independent oracle: its driver, inputs (random ranks with
0-size and size-1 dims, every dtype, NaN/+-inf/-0/subnormal/huge values, permuted, narrowed,
strided and broadcast views) and comparison are reused; only the references come from torch.

Ops: the unary table (gelu with tanh and erf, silu, erf, sigmoid, ...), elu, powf, pow,
clamp, affine, binary ops and comparisons (same shape and broadcast), where_cond, every
dtype conversion, sum/mean/max/min/argmax/argmin over sets of dims, var, log_sum_exp, norm,
softmax/log_softmax, layer_norm/rms_norm, cumsum, cumprod, the stable sort and arg_sort,
matmul/broadcast_matmul, dot, mv, conv1d/2d (stride, padding, dilation, groups),
conv_transpose1d/2d (output_padding), max/avg_pool2d, upsample_nearest1d/2d,
index_select, gather, scatter, scatter_add, index_add, roll, flip, repeat, pads, cat,
stack, eye/tril2/triu2, arange.
Floats are computed by torch in float64 and rounded to the dtype once (compare), except the
dtype conversions, which are torch's own f64/f32 -> f16/bf16/f32 conversions; integers are
torch's own arithmetic in the dtype (u32, which torch 1.13 lacks, in int64 then wrapped).

Where tensorlib follows candle and candle differs from torch, the reference follows candle
and the place says so ("candle:"): relu of NaN is 0, round takes halves away from 0,
maximum/minimum keep a left NaN and skip a right one, max/min/argmax/argmin and max_pool2d
skip a NaN after a number (a NaN first wins), pow is exp(b * log(a)), integer mean
truncates, float -> integer conversion is Rust's `as` (saturating, NaN -> 0; torch's is
undefined out of range), f32/f64 -> bf16 and i64 -> f16/bf16 round once (torch's go through
f32 and can round twice), upsample_nearest uses candle's f64 ratio (torch 1.13's is a float).
Where torch's own f64 is measurably wrong (mpmath), the tolerance or reference says so:
gelu/gelu_erf/elu cancel in torch's formulas, its vectorised pow overflows DBL_MAX ** 1,
its layer_norm was 75 eps off on a row where tensorlib was 4.7. The PARTED lines at the end
count, per rule, the elements where torch was overruled.
Candle's "no index" marker (an index equal to its dtype's maximum) has no torch equivalent:
fuzz_numpy covers it, no index here is one.

Tolerances (|got - want| <= atol + ulps * eps * |want|, fuzz_numpy's compare): elementwise
ops fuzz_numpy's unary_tolerance (4 ulps, more where the argument's rounding is amplified:
gelu's exp, gelu_erf's erfc tail); sums, means, matmul, convolutions, pools, scatter_add and
index_add (n + 2) eps times the sum of the terms' magnitudes (each add of n rounds once in
the dtype; f16/bf16 accumulate in f32, so this is loose for them); softmax, log_softmax,
log_sum_exp, var, norm and the norms as fuzz_numpy states them; integers, comparisons,
where, index_select, gather, scatter, sort, conversions and upsampling exact.

Meson test fuzz_torch (1400 rounds) and by hand; torch is not a build or CI dependency: exits
77 with a message when it is absent. FUZZ_STATS=1 prints per op and dtype the checks made,
the largest error in ulps and the largest share of its tolerance used (a result dtype other
than the input's is named after '<': argmax<f32 checks u32 indexes of an f32 input).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_numpy as fz  # noqa: E402
from fuzz_numpy import (  # noqa: E402
                        U8, U32, I64, F16, BF16, F32, F64, I16, I32, NAMES, FLOATS, INTS,
                        EPS, INT_RANGE, compare, make, own, pick, rdim, sizes, vals, wrap,
                        rand_shape, rand_floats, rand_ints, rand_values, expect_fail,
                        candle_as_int, nan_skip_ext, arg_ref, rounded, unary_tolerance)
import numpy as np  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print('SKIP: python3-torch is not installed; the differential check against it needs it')
    sys.exit(77)

TORCH = {U8: torch.uint8, I16: torch.int16, I32: torch.int32, I64: torch.int64,
         F16: torch.float16, BF16: torch.bfloat16, F32: torch.float32, F64: torch.float64}


def rng():
    return fz.rng


def lib():
    return fz.lib


def tt(v, dt):
    """Logical values as a torch tensor: floats in float64, integers in their dtype (u32 in
    int64)."""
    if dt in FLOATS:
        return torch.from_numpy(np.array(v, np.float64))
    t = torch.from_numpy(np.array(v, np.int64))
    return t if dt == U32 else t.to(TORCH[dt])


def back(t, dt):
    """A torch result -> what compare wants: f64, or ints wrapped into dt."""
    if dt in FLOATS:
        return t.to(torch.float64).numpy()
    return wrap(t.to(torch.int64).numpy(), dt)


def sub(name):
    """Names the op being checked for FUZZ_STATS (a result dtype other than the input's is
    named after '<')."""
    fz.current_op = name


UNARY_NAMES = ['exp', 'log', 'sin', 'cos', 'tanh', 'abs', 'neg', 'recip', 'sqr', 'sqrt', 'relu',
               'gelu', 'gelu_erf', 'silu', 'floor', 'ceil', 'round', 'sign', 'sigmoid', 'erf']
BINARY_NAMES = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum']
CMP_NAMES = ['eq', 'ne', 'lt', 'le', 'gt', 'ge']
REDUCE_NAMES = ['sum', 'mean', 'max', 'min', 'argmax', 'argmin']


# Where torch and candle part, the reference follows candle (and where torch's own f64 is
# wrong, the exact value); PARTED counts, per rule, the elements where torch was overruled
# (of the elements the rule looked at), printed at the end.
PARTED = {}


def candle_where(rule, differs, candle, torch_ref):
    """torch_ref with candle's value where differs (a bool array), counted under rule."""
    differs = np.asarray(differs, bool)
    n, tot = PARTED.get(rule, (0, 0))
    PARTED[rule] = (n + int(differs.sum()), tot + differs.size)
    return np.where(differs, candle, torch_ref)


def finite_abs(t):
    return torch.where(torch.isfinite(t), t.abs(), torch.zeros_like(t))


# ------------------------------------------------------------------------------------------
# Elementwise
# ------------------------------------------------------------------------------------------
UNARY = {
    fz.UEXP: torch.exp, fz.ULOG: torch.log, fz.USIN: torch.sin, fz.UCOS: torch.cos,
    fz.UTANH: torch.tanh, fz.UABS: torch.abs, fz.UNEG: torch.neg, fz.URECIP: torch.reciprocal,
    fz.USQR: torch.square, fz.USQRT: torch.sqrt, fz.URELU: torch.relu,
    fz.UGELU: lambda x: F.gelu(x, approximate='tanh'), fz.UGELU_ERF: F.gelu, fz.USILU: F.silu,
    fz.UFLOOR: torch.floor, fz.UCEIL: torch.ceil, fz.UROUND: torch.round, fz.USIGN: torch.sign,
    fz.USIGMOID: torch.sigmoid, fz.UERF: torch.erf}


def op_unary():
    dt = pick(FLOATS + INTS)
    op = pick(fz.INT_UNARY) if dt in INTS else pick(list(UNARY))
    x, xv, d = make(rand_values(rand_shape(), dt), dt)
    desc = 'unary %d %s %s %s' % (op, NAMES[dt], xv.shape, d)
    sub(UNARY_NAMES[op])
    got = own(lib().tl_unary(op, x), desc)
    t = tt(vals(xv, dt), dt)
    if dt in INTS:
        # torch's floor/ceil/round of an integer are the identity, as candle's
        ref = t.clone() if op in (fz.UFLOOR, fz.UCEIL, fz.UROUND) else UNARY[op](t)
        compare(got, back(ref, dt), dt, label=desc)
        return desc
    ref = back(UNARY[op](t), dt)
    if op == fz.URELU:  # candle: relu(NaN) is 0 (max(x, 0) in Rust); torch's is NaN
        ref = candle_where('relu(NaN) = 0', torch.isnan(t), 0.0, ref)
    if op == fz.UROUND:  # candle: halves away from 0 (f64::round); torch's to even
        half = ((t - torch.trunc(t)).abs() == 0.5).numpy()
        away = (torch.trunc(t) + torch.sign(t)).numpy()
        ref = candle_where('round half away from 0', half & (away != ref), away, ref)
    ulps, atol = unary_tolerance(op, vals(xv, dt), dt)
    if op in (fz.UGELU, fz.UGELU_ERF):
        # torch's f64 gelu is 0.5 x (1 + tanh(u)) / 0.5 x (1 + erf(x / sqrt 2)): in the
        # negative tail 1 + tanh/erf cancels, so its own error is about eps64 |x| (mpmath:
        # 56 ulps at x = -3, 1e15 at -9; tensorlib's is within 1.5 there). Torch checks these
        # only where it is accurate; fuzz_numpy and test_accuracy check the tail.
        atol = (atol or 0) + 4 * EPS[F64] * np.abs(np.where(np.isfinite(t), t, 0))
    compare(got, ref, dt, ulps=ulps, atol=atol, label=desc)
    return desc


def op_param():
    """elu, powf (scalar exponent), pow (tensor exponent), clamp, affine: floats."""
    dt = pick(FLOATS)
    kind = pick(['elu', 'powf', 'pow', 'clamp', 'affine'])
    s = rand_shape()
    x, xv, d = make(rand_values(s, dt), dt)
    v = vals(xv, dt)
    t = tt(v, dt)
    desc = '%s %s %s(%s)' % (kind, NAMES[dt], s, d)
    ulps, atol = 4, None
    sub(kind)
    if kind == 'elu':
        alpha = pick([1.0, 0.5, 2.0, 0.0])
        desc += ' alpha %g' % alpha
        got = own(lib().tl_elu(x, alpha), desc)
        ref = F.elu(t, alpha)
        # torch's f64 elu is alpha (exp(x) - 1), which cancels near 0 (mpmath: 140 ulps at
        # x = -0.001; tensorlib's expm1 0.45): its own error, 2 eps64 alpha, is allowed
        atol = 2 * EPS[F64] * alpha
    elif kind == 'powf':
        e = pick([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -0.5, 2.5, -2.0])
        desc += ' e %g' % e
        got = own(lib().tl_powf(x, e), desc)
        # candle's powf is Rust's f64::powf, C's pow; torch turns x ** 0.5 / -0.5 into
        # sqrt / rsqrt, which differ from pow at -inf (NaN, not +inf / 0) and -0 (-0 for
        # sqrt): C's special cases (numpy's power) there
        ref = torch.from_numpy(candle_where('powf is C pow (torch: sqrt/rsqrt)',
                                            (t == -math.inf) | (t == 0), np.power(v, e),
                                            torch.pow(t, e).numpy()))
        # the result's relative error is |e log x| times the input's rounding
        with np.errstate(all='ignore'):
            lv = np.abs(e * np.log(np.abs(v) + 1e-300))
        ulps = 4 + np.where(np.isfinite(ref.numpy()) & (v != 0), lv, 0)
    elif kind == 'pow':
        y, yv, dy = make(rand_floats(s, dt, special=0.05, huge=False, scale=2.0), dt)
        desc += ' exp(%s)' % dy
        got = own(lib().tl_pow(x, y), desc)
        w = tt(vals(yv, dt), dt)
        # candle: exp(b * log(a)), so NaN for a < 0, 0 ** 0 and 1 ** inf; torch's pow where
        # both are finite and a > 0
        ok = (t > 0) & torch.isfinite(t) & torch.isfinite(w)
        cp = torch.exp(w * torch.log(t)).numpy()
        tp = torch.pow(t, w).numpy()
        # torch's vectorised f64 pow (Sleef) overflows where the result is still finite:
        # DBL_MAX ** 1 is inf in a 64-element tensor, DBL_MAX in a 1-element one
        with np.errstate(all='ignore'):
            libm = np.power(v, vals(yv, dt))
        tp = candle_where('torch\'s vectorised pow overflows (libm: finite)',
                          np.isinf(tp) & np.isfinite(libm) & ok.numpy(), libm, tp)
        ref = torch.from_numpy(candle_where('pow is exp(b log a)', ~ok.numpy() & (
            (cp != tp) & ~(np.isnan(cp) & np.isnan(tp))), cp, tp))
        ulps = 2 if dt == F64 else 1
    elif kind == 'clamp':
        lo, hi = pick([-1.5, 0.0, 2.0, -100.0, 7.0]), pick([1.0, 3.5, 0.0, 300.0])
        desc += ' %g %g' % (lo, hi)
        got = own(lib().tl_clamp(x, lo, hi), desc)
        # torch.clamp with lo > hi gives hi everywhere, as candle's and numpy's clip
        ref = torch.clamp(t, lo, hi)
        ulps = 0
    else:
        mul, add = pick([1.0, -1.0, 0.5, 2.0, 0.0, 3.25, -7.0]), pick([0.0, 1.0, -2.5, 100.0])
        desc += ' mul %g add %g' % (mul, add)
        got = own(lib().tl_affine(x, mul, add), desc)
        ref = t * mul + add
        atol = 4 * EPS[dt] * (np.abs(v * mul) + abs(add))
    compare(got, back(ref, dt), dt, ulps=ulps, atol=atol, label=desc)
    return desc


BINARY = [torch.add, torch.sub, torch.mul, None, torch.maximum, torch.minimum]
CMP = [torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge]


def op_binary():
    dt = pick(FLOATS + INTS)
    op = int(rng().integers(0, 6))
    cmp = bool(rng().random() < 0.3)
    same = bool(rng().random() < 0.5)
    sa, sb = (rand_shape(),) * 2 if same else fz.bcast_shapes()
    x, xv, dx = make(rand_values(sa, dt), dt)
    y, yv, dy = make(rand_values(sb, dt), dt)
    name = ('cmp' if cmp else 'binary') + ('' if same else '_bcast')
    desc = '%s %d %s %s(%s) %s(%s)' % (name, op, NAMES[dt], sa, dx, sb, dy)
    sub((CMP_NAMES if cmp else BINARY_NAMES)[op] + ('<' + NAMES[dt] if cmp else ''))
    a, b = torch.broadcast_tensors(tt(vals(xv, dt), dt), tt(vals(yv, dt), dt))
    if cmp:
        t = (lib().tl_cmp if same else lib().tl_broadcast_cmp)(op, x, y)
        compare(own(t, desc), CMP[op](a, b).to(torch.int64).numpy(), U8, label=desc)
        return desc
    t = (lib().tl_binary if same else lib().tl_broadcast_binary)(op, x, y)
    if op == fz.DIV and dt in INTS:
        if (b == 0).any():  # candle's integer division panics; tensorlib fails
            expect_fail(t, 'division by zero', desc)
            return desc
        # C's and Rust's truncating division, in int64 (torch's int32 and int64 division of
        # the minimum by -1 traps: SIGFPE); that quotient wraps to the minimum here, as
        # numpy's (candle's Rust `/` panics on it)
        a64, b64 = a.to(torch.int64), b.to(torch.int64)
        trap = (a64 == -2 ** 63) & (b64 == -1)
        ref = torch.where(trap, a64, torch.div(a64, torch.where(trap, torch.ones_like(b64),
                                                                b64), rounding_mode='trunc'))
    elif op == fz.DIV:
        ref = a / b
    else:
        ref = BINARY[op](a, b)
    if op in (fz.MAXIMUM, fz.MINIMUM) and dt in FLOATS:
        # candle: `if a < b { b } else { a }` (and > for minimum): a left NaN is the result, a
        # right one is skipped; torch.maximum/minimum propagate either
        ref = torch.from_numpy(candle_where('maximum/minimum keep a left NaN, skip a right one',
                                            torch.isnan(b) & ~torch.isnan(a), a, ref))
    compare(own(t, desc), back(ref, dt), dt, label=desc)
    return desc


def op_where():
    dt, cdt = pick(FLOATS + INTS), pick(INTS)
    s = rand_shape()
    c, cv, dc = make(rand_ints(s, cdt, extremes=0.3) * (rng().random(s) < 0.5), cdt)
    x, xv, dx = make(rand_values(s, dt), dt)
    y, yv, dy = make(rand_values(s, dt), dt)
    desc = 'where %s %s %s c(%s) t(%s) f(%s)' % (NAMES[cdt], NAMES[dt], s, dc, dx, dy)
    sub('where')
    got = own(lib().tl_where_cond(c, x, y), desc)
    ref = torch.where(tt(vals(cv, cdt), cdt) != 0, tt(vals(xv, dt), dt), tt(vals(yv, dt), dt))
    compare(got, back(ref, dt), dt, bits=True, label=desc)
    return desc


def op_to_dtype():
    src, dst = pick(FLOATS + INTS), pick(FLOATS + INTS)
    s = rand_shape()
    vv = rand_values(s, src)
    n = int(np.prod(s, dtype=np.int64))
    if src == I64 and rng().random() < 0.5:  # past 2^24 and 2^53: rounding to f16/bf16/f32
        vv = rng().integers(-2 ** 63, 2 ** 63 - 1, size=s, dtype=np.int64) >> \
            rng().integers(0, 40, size=s)
    if src in (F32, F64) and rng().random() < 0.5:  # halfway and overflow edges of f16/bf16
        edges = [65504.0, 65519.99, 65520.0, 2.0 ** -25, 2.0 ** -24 * 1.5, 1 + 2.0 ** -8,
                 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 3.3895314e38,
                 1 + 2.0 ** -8 + 2.0 ** -30, 1 + 2.0 ** -11 + 2.0 ** -40, 2.0 ** -133,
                 2.0 ** -134 * 1.5, 255.5, 256.0, -0.99, 2.0 ** 31, 32767.9, 4294967295.5]
        e = rounded(rng().choice(edges, size=n) * rng().choice([1.0, -1.0], size=n), src)
        vv = np.where(rng().random(n) < 0.5, e, np.ravel(vv)).reshape(s)
    x, xv, d = make(vv, src)
    desc = 'to_dtype %s -> %s %s(%s)' % (NAMES[src], NAMES[dst], s, d)
    sub('to_dtype<' + NAMES[src])
    got = own(lib().tl_to_dtype(x, dst), desc)
    v = vals(xv, src)
    # torch's conversion from the source dtype itself (f16/bf16 inputs are exact in f32)
    t = tt(v, src).to(TORCH[src]) if src in FLOATS else tt(v, src)
    if dst in FLOATS:
        ref = t.to(TORCH[dst]).to(torch.float64).numpy()
        # candle (tensorlib) rounds once: the `half` crate's from_f64 / from_f32, Rust's
        # `as`. torch 1.13 converts f64 and integers to f16/bf16 through f32, so it may round
        # twice: where it differs from the value rounded once, it must be by exactly that
        if src in FLOATS:
            once, twice = rounded(v, dst), rounded(rounded(v, F32), dst)
        else:
            once = np.array([float(int(a)) if abs(int(a)) < 2 ** 53 else
                             fz.round_int_to_float(int(a), dst) for a in v.flat],
                            np.float64).reshape(v.shape)
            once = rounded(once, dst)
            twice = rounded(np.array([int(a) for a in v.flat], np.int64).reshape(v.shape)
                            .astype(np.float32).astype(np.float64), dst)
        same = (ref == once) | (np.isnan(ref) & np.isnan(once))
        ref = candle_where('to f16/bf16/f32 rounds once (torch: twice, through f32)',
                           ~same & (ref == twice), once, ref)
        compare(got, ref, dst, bits=True, label=desc)
        return desc
    if src in FLOATS:
        # candle: Rust's `as` (truncate, saturate, NaN -> 0); torch's is defined in range only
        lo, hi = INT_RANGE[dst]
        tr = np.trunc(v)
        inside = np.isfinite(v) & (tr >= lo) & (tr <= hi)
        safe = torch.from_numpy(np.where(inside, v, 0.0))
        ref = safe.to(torch.int64 if dst == U32 else TORCH[dst]).to(torch.int64).numpy()
        ref = candle_where('float -> int is Rust\'s `as` (torch: undefined out of range)',
                           ~inside, candle_as_int(v, dst), ref)
        compare(got, ref, dst, label=desc)
        return desc
    ref = t.to(torch.int64 if dst == U32 else TORCH[dst])  # integers wrap
    compare(got, back(ref, dst), dst, label=desc)
    return desc


# ------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------
def reduce_dims(nd, one=False):
    if one:
        return [rdim(nd)]
    dims = [rdim(nd) for _ in range(int(rng().integers(0, nd + 1)))]
    return list({a: (a, b) for a, b in dims}.values())


def op_reduce():
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng().integers(1, 6)))
    nd = len(s)
    op = int(rng().integers(0, 6))
    keep = bool(rng().random() < 0.5)
    xs = rand_floats(s, dt, special=0.08, scale=pick([1.0, 10.0]), huge=False) \
        if dt in FLOATS else rand_values(s, dt)
    x, xv, d = make(xs, dt)
    v = vals(xv, dt)
    dims = reduce_dims(nd, op in (fz.ARGMAX, fz.ARGMIN))
    axes = tuple(a for a, _ in dims) if dims else tuple(range(nd))
    desc = 'reduce %d %s %s(%s) dims %s keep %s' % (op, NAMES[dt], s, d, list(axes), keep)
    sub(REDUCE_NAMES[op] + ('<' + NAMES[dt] if op in (fz.ARGMAX, fz.ARGMIN) else ''))
    t = lib().tl_reduce(op, x, sizes([b for _, b in dims]), len(dims), keep)
    if op in (fz.MAX, fz.MIN, fz.ARGMAX, fz.ARGMIN) and any(s[a] == 0 for a in axes):
        expect_fail(t, 'empty dim (torch: "Expected reduction dim to have non-zero size")',
                    desc)
        return desc
    got = own(t, desc)
    tv = tt(v, dt)
    if op in (fz.ARGMAX, fz.ARGMIN):
        ref = (torch.argmax if op == fz.ARGMAX else torch.argmin)(tv, axes[0], keep).numpy()
        if dt in FLOATS:  # candle: a NaN first gives 0, a later one is skipped; torch's NaN wins
            cr = arg_ref(v, axes[0], op)
            cr = np.expand_dims(cr, axes[0]) if keep else cr
            nan_rows = np.isnan(v).any(axis=axes[0], keepdims=keep)
            ref = candle_where('argmax/argmin: a NaN first wins, a later one is skipped',
                               nan_rows & (cr != ref), cr, ref)
        compare(got, ref, U32, label=desc)
        return desc
    if op in (fz.MAX, fz.MIN):
        ref = (torch.amax if op == fz.MAX else torch.amin)(tv, axes, keep)
        if dt in FLOATS:  # candle: the same NaN rule as argmax; torch's amax propagates it
            cr = nan_skip_ext(v, axes, op)
            if keep:
                cr = np.expand_dims(cr, axes)
            ref = back(ref, dt)
            ref = candle_where('max/min: a NaN first wins, a later one is skipped',
                               np.isnan(cr) != np.isnan(ref), cr, ref)
        compare(got, back(ref, dt) if dt in INTS else ref, dt, label=desc)
        return desc
    n = int(np.prod([s[a] for a in axes], dtype=np.int64))
    if dt in INTS:
        tot = torch.sum(tv.to(torch.int64), axes, keep)  # torch sums integers in int64
        if op == fz.SUM:
            compare(got, back(tot, dt), dt, label=desc)
        else:  # tensorlib: the exact mean truncated (torch has no integer mean), so the
            # sum is taken in Python's integers: torch's int64 sum wraps for i64
            w = np.sum(np.array(v, dtype=object), axis=axes, keepdims=keep)
            ref = np.array([int(q) // n if q >= 0 else -(-int(q) // n) for q in np.ravel(w)]
                           if n else [0] * np.size(w), dtype=object).reshape(np.shape(w))
            compare(got, ref, dt, label=desc)
        return desc
    ref = (torch.sum if op == fz.SUM else torch.mean)(tv, axes, keep)
    mag = torch.sum(finite_abs(tv), axes, keep).numpy() / (max(n, 1) if op == fz.MEAN else 1)
    compare(got, back(ref, dt), dt, atol=(n + 2) * EPS[dt] * mag, label=desc)
    return desc


def op_stats():
    """var, log_sum_exp, norm, softmax, log_softmax."""
    dt = pick(FLOATS)
    kind = pick(['var', 'log_sum_exp', 'norm', 'softmax', 'log_softmax'])
    s = rand_shape(rank=int(rng().integers(0 if kind == 'norm' else 1, 6)))
    nd = len(s)
    big = kind in ('softmax', 'log_softmax')
    x, xv, d = make(rand_floats(s, dt, special=0.05 if big else 0.08, huge=big,
                                scale=pick([1.0, 10.0, 1000.0]) if big else
                                4.0 if dt == F16 else None), dt)
    v = vals(xv, dt)
    tv = tt(v, dt)
    fin = finite_abs(tv)
    keep = bool(rng().random() < 0.5)
    desc = '%s %s %s(%s) keep %s' % (kind, NAMES[dt], s, d, keep)
    sub(kind)
    if kind == 'norm':
        got = own(lib().tl_norm(x), desc)
        # the sum of squares is the dtype's (tl.h): past its range the norm is inf
        sq = rounded(torch.sum(tv * tv).numpy(), dt)
        ref = np.sqrt(sq)
        compare(got, ref, dt, atol=(v.size + 4) * EPS[dt] * ref if np.isfinite(ref) else 0,
                label=desc)
        return desc
    if kind == 'log_sum_exp':
        dims = reduce_dims(nd)
        axes = tuple(a for a, _ in dims) if dims else tuple(range(nd))
        desc += ' dims %s' % list(axes)
        t = lib().tl_log_sum_exp(x, sizes([b for _, b in dims]), len(dims), keep)
        if any(s[a] == 0 for a in axes):  # candle: max over an empty dim fails first
            expect_fail(t, 'max over an empty dim', desc)
            return desc
        ref = torch.logsumexp(tv, axes, keep)
        m = torch.amax(fin, axes, keep)  # the shift's size bounds the lost digits
        n = int(np.prod([s[a] for a in axes]))
        atol = (n + 4) * EPS[dt] * (ref.abs().numpy() + 2 * m.numpy() + 1)
        compare(own(t, desc), back(ref, dt), dt, atol=np.where(np.isfinite(atol), atol, 0),
                label=desc)
        return desc
    a, dim = rdim(nd)
    desc += ' dim %d' % a
    n = s[a]
    if kind == 'var':
        got = own(lib().tl_var(x, dim, keep), desc)
        ref = torch.var(tv, a, unbiased=True, keepdim=keep)
        dev = (tv - tv.mean(a, keepdim=True)).abs() if n else tv
        dev = torch.where(torch.isfinite(dev), dev, torch.zeros_like(dev))
        mag = ((dev + EPS[dt] * fin) * (fin + dev)).sum(a, keepdim=keep) / max(n - 1, 1)
        compare(got, back(ref, dt), dt, atol=(n + 8) * EPS[dt] * mag.numpy(), label=desc)
        return desc
    log = kind == 'log_softmax'
    got = own((lib().tl_log_softmax if log else lib().tl_softmax)(x, dim), desc)
    ref = (torch.log_softmax if log else torch.softmax)(tv, a)
    if n:
        m = tv.amax(a, keepdim=True) if not torch.isnan(tv).all() else tv
        dist = (tv - torch.where(torch.isfinite(m), m, torch.zeros_like(m))).abs().numpy()
    else:
        dist = np.zeros(s)
    r = ref.abs().numpy()
    # exp's argument carries the rounding of x - max, times its size; the log of the sum
    # carries n roundings
    atol = (n + 4) * EPS[dt] * (dist + np.log1p(n) + 1) if log else \
        (n + 4 + dist) * EPS[dt] * r
    compare(got, back(ref, dt), dt, atol=np.where(np.isfinite(atol), atol, 0), label=desc)
    return desc


def op_norms():
    dt = pick(FLOATS)
    s = rand_shape(rank=int(rng().integers(1, 5)))
    h = s[-1]
    x, xv, d = make(rand_floats(s, dt, special=0.03, huge=False), dt)
    al, av, da = make(rand_floats((h,), dt, special=0, huge=False), dt)
    layer = bool(rng().random() < 0.5)
    eps = pick([1e-5, 1e-6, 0.1])
    tv, ta = tt(vals(xv, dt), dt), tt(vals(av, dt), dt)
    desc = '%s %s %s(%s) alpha(%s) eps %g' % ('layer_norm' if layer else 'rms_norm', NAMES[dt],
                                             s, d, da, eps)
    sub('layer_norm' if layer else 'rms_norm')
    half = dt in (F16, BF16)  # candle-nn normalises f16/bf16 in f32, rounds before alpha
    if layer:
        be, bv, db = make(rand_floats((h,), dt, special=0, huge=False), dt)
        tb = tt(vals(bv, dt), dt)
        got = own(lib().tl_layer_norm(x, al, be, eps), desc)
        norm = F.layer_norm(tv, (h,), eps=eps) if tv.numel() else tv
        ref = torch.from_numpy(rounded(norm.numpy(), dt)) * ta + tb if half else \
            norm * ta + tb
        c = tv - tv.mean(-1, keepdim=True) if h else tv
        sd = torch.sqrt((c * c).mean(-1, keepdim=True) + eps) if h else tv
        # x - mean cancels: its rounding is relative to |x|, not to the difference
        mag = ((norm.abs() + (tv.abs() + tv.mean(-1, keepdim=True).abs()) / sd) * ta.abs() +
               tb.abs()) if h else tv
    else:
        got = own(lib().tl_rms_norm(x, al, eps), desc)
        # torch 1.13 has no rms_norm: torch 2.4's F.rms_norm's definition in torch ops
        norm = tv * torch.rsqrt((tv * tv).mean(-1, keepdim=True) + eps) if h else tv
        ref = torch.from_numpy(rounded(norm.numpy(), dt)) * ta if half else norm * ta
        mag = ref.abs()
    mag = mag.numpy()
    # torch's own f64 layer_norm (x * rstd - mean * rstd, Welford moments) is less accurate
    # than this bound: 75 eps off on a row of 4 where tensorlib was 4.7 (mpmath, seed 2), so
    # f64 allows its error on top
    own_err = 4 if dt == F64 else 1
    compare(got, back(ref, dt), dt,
            atol=own_err * (h + 8) * EPS[dt] * (np.where(np.isfinite(mag), mag, 0) + 1),
            ulps=8, label=desc)
    return desc


HALF = {F16: torch.float16, BF16: torch.bfloat16}


def half_scan_exact(got, scan, tv, a, dt, desc):
    """f16/bf16 cumsum and cumprod are torch's own in the dtype (a float accumulator, each
    result rounded once), equal to the last bit but a zero's sign (torch's sum starts from
    +0, tensorlib's from the first element). torch 1.13 has no f16 scans on the cpu: skipped."""
    if dt not in HALF:
        return
    try:
        ref = scan(tv.to(HALF[dt]), a)
    except RuntimeError:
        return
    compare(got, back(ref, dt), dt, ulps=0, label=desc + ' (torch\'s own %s)' % NAMES[dt])


def op_scan():
    """cumsum and the stable sort / arg_sort."""
    dt = pick(FLOATS + INTS)
    s = rand_shape(rank=int(rng().integers(1, 5)))
    if rng().random() < 0.5:
        xs = rand_floats(s, dt, special=0.05, huge=False) if dt in FLOATS else \
            rand_ints(s, dt, extremes=0.05)
        kind = pick(['cumsum', 'sort'])
    else:  # ties, for the sort's stability
        xs = rand_ints(s, I16, extremes=0).clip(-3, 3) % (4 if dt in INTS else 99)
        kind = 'sort'
    x, xv, d = make(xs, dt)
    v = vals(xv, dt)
    tv = tt(v, dt)
    desc = '%s %s %s(%s)' % (kind, NAMES[dt], s, d)
    sub(kind)
    if kind == 'cumsum':
        a, dim = rdim(len(s))
        desc += ' dim %d' % a
        got = own(lib().tl_cumsum(x, dim), desc)
        ref = torch.cumsum(tv, a)  # integers: torch promotes to int64; wrapped back
        if dt in INTS:
            compare(got, back(ref, dt), dt, label=desc)
        else:
            n = s[a]
            mag = torch.cumsum(finite_abs(tv), a).numpy()
            compare(got, back(ref, dt), dt, atol=(n + 2) * EPS[dt] * mag, label=desc)
            half_scan_exact(got, torch.cumsum, tv, a, dt, desc)
        return desc
    asc = bool(rng().random() < 0.5)
    desc += ' asc %s' % asc
    ip = fz.C.c_void_p()
    got = own(lib().tl_sort_last_dim(x, asc, fz.C.byref(ip)), desc)
    ids = own(ip.value, desc)
    # torch's stable sort puts NaN last ascending and first descending, as tl.h says
    sv, si = torch.sort(tv, dim=-1, descending=not asc, stable=True)
    compare(ids, si.numpy(), U32, label=desc + ' indices')
    compare(own(lib().tl_arg_sort_last_dim(x, asc), desc), si.numpy(), U32,
            label=desc + ' arg_sort')
    compare(got, back(sv, dt), dt, bits=dt in FLOATS, label=desc)
    return desc


# ------------------------------------------------------------------------------------------
# Linear algebra, convolutions, pools, sampling
# ------------------------------------------------------------------------------------------
def op_matmul():
    dt = pick(FLOATS + INTS)
    bc = bool(rng().random() < 0.4)
    sa, sb = fz.batch_shapes(bc)
    gen = (lambda sh: rand_floats(sh, dt, special=0.02, scale=1.0, huge=False)) \
        if dt in FLOATS else (lambda sh: rand_ints(sh, dt, extremes=0.1))
    x, xv, dx = make(gen(sa), dt)
    y, yv, dy = make(gen(sb), dt)
    desc = '%smatmul %s %s(%s) %s(%s)' % ('broadcast_' if bc else '', NAMES[dt], sa, dx, sb, dy)
    sub('broadcast_matmul' if bc else 'matmul')
    got = own((lib().tl_broadcast_matmul if bc else lib().tl_matmul)(x, y), desc)
    a, b = tt(vals(xv, dt), dt), tt(vals(yv, dt), dt)
    if dt in INTS:  # int64 products and sums wrap as the dtype's (two's complement)
        compare(got, back(torch.matmul(a.to(torch.int64), b.to(torch.int64)), dt), dt,
                label=desc)
        return desc
    k = sa[-1]
    mag = torch.matmul(finite_abs(a), finite_abs(b)).numpy()
    compare(got, back(torch.matmul(a, b), dt), dt,
            atol=(k + 2) * (EPS[dt] * mag + fz.TINY[dt]), label=desc)
    return desc


def op_conv():
    """conv1d/2d (stride, padding, dilation, groups), conv_transpose1d/2d (output_padding;
    groups in 1d, tensorlib's 2d has none)."""
    dt = pick(FLOATS)
    two = bool(rng().random() < 0.5)
    tr = bool(rng().random() < 0.5)
    groups = 1 if tr and two else pick([1, 1, 2, 3])
    big = rng().random() < 0.06
    cmax, smax, kmax = (7, 15, 6) if big else (3, 7, 4)
    ri = lambda lo, hi: int(rng().integers(lo, hi))  # noqa: E731
    b, cin, cout = ri(1, 3), groups * ri(1, cmax), groups * ri(1, cmax)
    nsp = 2 if two else 1
    ks = tuple(ri(1, kmax) for _ in range(nsp))
    sp = tuple(ri(1, smax) for _ in range(nsp))
    pad, stride, dil = ri(0, 5), ri(1, 5), ri(1, 4)
    opad = ri(0, max(stride, dil)) if tr else 0
    kshape = ((cin, cout // groups) if tr else (cout, cin // groups)) + ks
    x, xv, dx = make(rand_floats((b, cin) + sp, dt, special=0.02, huge=False), dt)
    # a NaN or inf in the kernel meets the padding's zeros: NaN there, as torch's
    k, kv, dk = make(rand_floats(kshape, dt, special=pick([0, 0, 0.02]), huge=False), dt)
    name = 'conv_transpose%dd' % nsp if tr else 'conv%dd' % nsp
    desc = '%s %s x %s(%s) k %s(%s) pad %d opad %d stride %d dil %d groups %d' % (
        name, NAMES[dt], (b, cin) + sp, dx, kshape, dk, pad, opad, stride, dil, groups)
    sub(name)
    tx, tk = tt(vals(xv, dt), dt), tt(vals(kv, dt), dt)
    if tr:
        t = lib().tl_conv_transpose2d(x, k, pad, opad, stride, dil) if two else \
            lib().tl_conv_transpose1d(x, k, pad, opad, stride, dil, groups)
        full = [(sp[i] - 1) * stride + dil * (ks[i] - 1) + 1 + opad for i in range(nsp)]
        bad = any(f - 2 * pad <= 0 for f in full)
        fn = F.conv_transpose2d if two else F.conv_transpose1d
        kw = {'stride': stride, 'padding': pad, 'output_padding': opad, 'groups': groups,
              'dilation': dil}
        n = cin // groups * int(np.prod(ks))
    else:
        t = (lib().tl_conv2d if two else lib().tl_conv1d)(x, k, pad, stride, dil, groups)
        bad = any(sp[i] + 2 * pad < dil * (ks[i] - 1) + 1 for i in range(nsp))
        fn = F.conv2d if two else F.conv1d
        kw = {'stride': stride, 'padding': pad, 'groups': groups, 'dilation': dil}
        n = cin // groups * int(np.prod(ks))
    if bad:  # torch: "Kernel size can't be greater than actual input size" / output size 0
        expect_fail(t, 'no output', desc)
        return desc
    got = own(t, desc)
    ref = fn(tx, tk, **kw)
    mag = fn(finite_abs(tx), finite_abs(tk), **kw).numpy()
    compare(got, back(ref, dt), dt, atol=(n + 2) * EPS[dt] * mag, label=desc)
    return desc


def op_pool():
    mx = bool(rng().random() < 0.5)
    dt = pick(FLOATS + INTS if mx else FLOATS)  # candle's MaxPool2D takes every dtype
    ri = lambda lo, hi: int(rng().integers(lo, hi))  # noqa: E731
    s = (ri(1, 3), ri(1, 3), ri(1, 13), ri(1, 13))
    kh, kw, sh, sw = ri(1, 6), ri(1, 6), ri(1, 5), ri(1, 5)
    x, xv, d = make(rand_floats(s, dt, special=0.05, huge=False) if dt in FLOATS else
                    rand_ints(s, dt), dt)
    v = vals(xv, dt)
    desc = '%s %s %s(%s) k %d %d s %d %d' % ('max_pool2d' if mx else 'avg_pool2d', NAMES[dt], s,
                                             d, kh, kw, sh, sw)
    sub('max_pool2d' if mx else 'avg_pool2d')
    t = (lib().tl_max_pool2d if mx else lib().tl_avg_pool2d)(x, kh, kw, sh, sw)
    if kh > s[2] or kw > s[3]:  # torch: "Output size is too small"
        expect_fail(t, 'window larger than the input', desc)
        return desc
    got = own(t, desc)
    tv = tt(v, dt)
    if not mx:
        ref = F.avg_pool2d(tv, (kh, kw), (sh, sw))
        mag = F.avg_pool2d(finite_abs(tv), (kh, kw), (sh, sw)).numpy()
        compare(got, back(ref, dt), dt, atol=(kh * kw + 4) * EPS[dt] * mag, label=desc)
        return desc
    # the windows, [b, c, oh, ow, kh, kw], in any dtype (F.max_pool2d is float-only)
    win = tv.unfold(2, kh, sh).unfold(3, kw, sw)
    if dt in INTS:
        ref = back(win.amax((-2, -1)), dt)
    else:
        ref = F.max_pool2d(tv, (kh, kw), (sh, sw)).numpy()
        # candle: a NaN first in its window is the result, a later one is skipped (rows in
        # order); torch propagates any NaN
        w = win.reshape(win.shape[:4] + (kh * kw,)).numpy()
        cr = nan_skip_ext(w, 4, fz.MAX)
        ref = candle_where('max_pool2d: a NaN first wins, a later one is skipped',
                           np.isnan(cr) != np.isnan(ref), cr, ref)
    compare(got, ref, dt, ulps=0, label=desc)
    return desc


def op_upsample():
    dt = pick(FLOATS + INTS)
    two = bool(rng().random() < 0.5)
    nsp = 2 if two else 1
    s = tuple(int(rng().integers(1, 3)) for _ in range(2)) + \
        tuple(int(rng().integers(1, 12)) for _ in range(nsp))
    # sometimes a size where torch's and candle's ratios part (2 -> 98, 3 -> 147, ...)
    out = tuple(int(rng().integers(1, 40)) if rng().random() < 0.8 else pick([98, 147, 196])
                for _ in range(nsp))
    x, xv, d = make(rand_values(s, dt), dt)
    v = vals(xv, dt)
    desc = 'upsample_nearest%dd %s %s(%s) -> %s' % (nsp, NAMES[dt], s, d, out)
    sub('upsample_nearest%dd' % nsp)
    got = own(lib().tl_upsample_nearest2d(x, *out) if two else
              lib().tl_upsample_nearest1d(x, out[0]), desc)
    # torch's source index per output position, from upsampling each axis' positions
    idx = []
    for j in range(nsp):
        pos = torch.arange(s[2 + j], dtype=torch.float64).reshape(1, 1, -1)
        ti = F.interpolate(pos, size=out[j], mode='nearest').reshape(-1).to(torch.int64)
        # candle: min(in - 1, floor(i * (in / out))), the ratio an f64; torch 1.13's ratio is
        # a float, so the two differ at a few positions (2 -> 98 at 49; tl.h)
        ci = np.minimum(s[2 + j] - 1, np.floor(np.arange(out[j]) * (s[2 + j] / out[j])))
        idx.append(candle_where('upsample_nearest: f64 ratio (torch: float)', ti.numpy() != ci,
                                ci, ti.numpy()).astype(np.int64))
    ref = v[:, :, idx[0]]
    if two:
        ref = ref[:, :, :, idx[1]]
    compare(got, ref, dt, bits=True, label=desc)
    return desc


# ------------------------------------------------------------------------------------------
# Indexing
# ------------------------------------------------------------------------------------------
def op_index():
    dt = pick(FLOATS + INTS)
    kind = pick(['index_select', 'gather', 'scatter', 'scatter_add', 'index_add'])
    s = rand_shape(rank=int(rng().integers(1, 5)))
    nd = len(s)
    a, dim = rdim(nd)
    x, xv, dx = make(rand_floats(s, dt, huge=False) if dt in FLOATS else rand_values(s, dt), dt)
    v = vals(xv, dt)
    tv = tt(v, dt)
    idt = pick([U8, U32, I64, I16, I32])
    bad = rng().random() < 0.1
    hi = min(s[a] + (3 if bad else 0), INT_RANGE[idt][1])  # the maximum is "no index"
    desc = '%s %s %s(%s) dim %d ids %s' % (kind, NAMES[dt], s, dx, a, NAMES[idt])
    sub(kind)

    def ids_of(shape):
        out = rng().integers(0, hi, size=shape, dtype=np.int64) if hi else \
            np.zeros(shape, np.int64)
        if bad and idt in (I64, I16, I32) and out.size:
            out.flat[int(rng().integers(0, out.size))] = -1
        return out

    def expect_range(t, iv):
        if ((iv >= s[a]) | (iv < 0)).any():  # torch: "index out of range"
            expect_fail(t, 'index out of range', desc)
            return True
        return False

    if kind in ('index_select', 'gather'):
        if kind == 'index_select':
            shape = (int(rng().integers(0, 6)),)
        else:  # torch's gather takes ids smaller than the source outside dim, as candle's (#2567)
            shape = tuple(int(rng().integers(0, 4)) if i == a else int(rng().integers(0, q + 1))
                          if rng().random() < 0.3 else q for i, q in enumerate(s))
        ids, iv, di = make(ids_of(shape), idt)
        desc += ' ids %s(%s)' % (shape, di)
        t = (lib().tl_index_select if kind == 'index_select' else lib().tl_gather)(x, ids, dim)
        if expect_range(t, iv):
            return desc
        fn = torch.index_select if kind == 'index_select' else torch.gather
        ref = fn(tv, a, torch.from_numpy(iv.astype(np.int64)))
        compare(own(t, desc), back(ref, dt), dt, bits=True, label=desc)
        return desc
    ns = list(s)
    ns[a] = int(rng().integers(0, 5))
    if kind == 'index_add':
        iv = ids_of((ns[a],))
        ids, iv, di = make(iv, idt)
    else:
        iv = ids_of(tuple(ns))
        if kind == 'scatter':
            # distinct targets along dim (torch's scatter is undefined for duplicates), below
            # the index dtype's "no index"; one out of range when bad
            room = min(s[a], INT_RANGE[idt][1])
            ns[a] = min(ns[a], room)
            iv = np.zeros(tuple(ns), np.int64)
            m = np.moveaxis(iv, a, -1)
            for idx in np.ndindex(*m.shape[:-1]):
                m[idx] = rng().permutation(room)[:ns[a]]
            if bad and iv.size and s[a] + 1 < INT_RANGE[idt][1]:
                iv.flat[int(rng().integers(0, iv.size))] = s[a] + 1
        ids, iv, di = make(iv, idt, allow_bcast=False)
    src, sv, ds = make(rand_floats(tuple(ns), dt, huge=False) if dt in FLOATS else
                       rand_values(tuple(ns), dt), dt)
    desc += ' ids %s(%s) src %s(%s)' % (iv.shape, di, tuple(ns), ds)
    fn = {'scatter': lib().tl_scatter, 'scatter_add': lib().tl_scatter_add,
          'index_add': lib().tl_index_add}[kind]
    t = fn(x, ids, src, dim)
    if expect_range(t, iv):
        return desc
    got = own(t, desc)
    ti = torch.from_numpy(iv.astype(np.int64))
    ts = tt(vals(sv, dt), dt)
    wide = torch.int64 if dt in INTS else torch.float64  # sums into u8 wrap as int64's low bits
    ref = {'scatter': torch.scatter, 'scatter_add': torch.scatter_add,
           'index_add': lambda t_, a_, i_, s_: torch.index_add(t_, a_, i_, s_)}[kind](
        tv.to(wide), a, ti, ts.to(wide))
    if dt in INTS or kind == 'scatter':
        compare(got, back(ref, dt), dt, bits=dt in FLOATS, label=desc)
        return desc
    f = {'scatter_add': torch.scatter_add, 'index_add': torch.index_add}[kind]
    mag = f(finite_abs(tv), a, ti, finite_abs(ts)).numpy()
    compare(got, back(ref, dt), dt, atol=(ns[a] + 2) * EPS[dt] * mag, label=desc)
    return desc


def op_rearrange():
    """cumprod, roll, flip, repeat, pad_with_zeros/same, cat, stack, dot, mv, eye, tril2,
    triu2, arange: torch's cumprod, roll, flip, Tensor.repeat, F.pad (constant, replicate),
    cat, stack, dot, mv, eye, tril, triu, arange."""
    dt = pick(FLOATS + INTS)
    kind = pick(['cumprod', 'roll', 'flip', 'repeat', 'pad', 'cat', 'stack', 'dot', 'mv',
                 'eye', 'arange'])
    sub(kind)
    # cumprod is numpy's in the dtype (tl.h): a partial product that underflows to 0 or
    # overflows there meets an inf or a 0 later as NaN, where torch's (f64, and its native
    # ones accumulate a precision up) does not. Floats get magnitudes in [0.5, 2] and dims up
    # to 4 (no dim past the blocks), so no partial product leaves the dtype's normal range
    s = rand_shape(rank=int(rng().integers(1, 5)),
                   maxd=4 if kind == 'cumprod' and dt in FLOATS else 5)
    nd = len(s)

    def cumprod_floats(sh):
        n = int(np.prod(sh, dtype=np.int64))
        v = 2.0 ** rng().uniform(-1, 1, n) * rng().choice([1.0, -1.0], n)
        m = rng().random(n) < 0.05
        v[m] = rng().choice([0.0, -0.0, math.inf, -math.inf, math.nan], int(m.sum()))
        return rounded(v, dt).reshape(sh)
    gen = cumprod_floats if kind == 'cumprod' and dt in FLOATS else \
        (lambda sh: rand_floats(sh, dt, special=0.05, huge=False,
                                scale=1.0 if kind in ('dot', 'mv') else None)) \
        if dt in FLOATS else (lambda sh: rand_ints(sh, dt, extremes=0.05))
    desc = '%s %s' % (kind, NAMES[dt])
    if kind in ('eye', 'arange'):
        n = int(rng().integers(0, 9))
        if kind == 'eye':
            fn = pick([(lib().tl_eye, torch.eye, 'eye'),
                       (lib().tl_tril2, lambda k, **kw: torch.tril(torch.ones(k, k, **kw)),
                        'tril2'),
                       (lib().tl_triu2, lambda k, **kw: torch.triu(torch.ones(k, k, **kw)),
                        'triu2')])
            desc = '%s %s %d' % (fn[2], NAMES[dt], n)
            sub(fn[2])
            compare(own(fn[0](n, dt, 0), desc), back(fn[1](n, dtype=torch.int64), dt), dt,
                    label=desc)
            return desc
        start = float(pick([0, 1, -3, 10] if dt in INTS else [0, 1, -3, 2.5, 0.1, 10]))
        step = float(pick([1, 2, -1, 3] if dt in INTS else [1, 2, -1, 0.5, 0.3, -0.7, 3]))
        end = start + step * float(pick([0, 1, 2.5, 5, 7, -1]))
        desc += ' %r %r %r' % (start, end, step)
        got = own(lib().tl_arange(start, end, step, dt, 0), desc)
        # torch's f64 arange: start + i * step, ceil((end - start) / step) values (numpy's);
        # an end behind start is torch's error and candle's (and numpy's) empty range
        ref = torch.arange(start, end, step, dtype=torch.float64).numpy() \
            if (end - start) * step > 0 else np.zeros(0)
        if dt in INTS:  # whole start and step: counted in int64, wrapped into dt (tl.h)
            compare(got, wrap(ref.astype(np.int64), dt), dt, label=desc)
        else:
            compare(got, ref, dt, atol=4 * EPS[dt] * abs(step) * len(ref), label=desc)
        return desc
    if kind in ('dot', 'mv'):
        m, k = int(rng().integers(0, 6)), pick([0, 1, 3, 17, 64, 65])
        x, xv, dx = make(gen((m, k) if kind == 'mv' else (k,)), dt)
        y, yv, dy = make(gen((k,)), dt)
        desc += ' %s(%s) %s(%s)' % (xv.shape, dx, (k,), dy)
        got = own((lib().tl_mv if kind == 'mv' else lib().tl_dot)(x, y), desc)
        a, b = tt(vals(xv, dt), dt), tt(vals(yv, dt), dt)
        fn = torch.mv if kind == 'mv' else torch.dot
        if dt in INTS:  # products and sums in the dtype wrap as int64's low bits
            compare(got, back(fn(a.to(torch.int64), b.to(torch.int64)), dt), dt, label=desc)
        else:
            mag = fn(finite_abs(a), finite_abs(b)).numpy()
            compare(got, back(fn(a, b), dt), dt, atol=(k + 2) * EPS[dt] * mag, label=desc)
        return desc
    if kind in ('cat', 'stack'):
        a, dim = rdim(nd + 1 if kind == 'stack' else nd)
        parts = []
        for _ in range(int(rng().integers(1, 4))):
            sh = list(s)
            if kind == 'cat':
                sh[a] = int(rng().integers(0, 4))
            parts.append(make(gen(tuple(sh)), dt))
        arr = (fz.P * len(parts))(*[p[0] for p in parts])
        desc += ' %s dim %d %s' % ([p[1].shape for p in parts], a, [p[2] for p in parts])
        got = own((lib().tl_stack if kind == 'stack' else lib().tl_cat)(arr, len(parts), dim),
                  desc)
        ref = (torch.stack if kind == 'stack' else torch.cat)(
            [tt(vals(p[1], dt), dt) for p in parts], a)
        compare(got, back(ref, dt), dt, bits=True, label=desc)
        return desc
    x, xv, d = make(gen(s), dt)
    tv = tt(vals(xv, dt), dt)
    desc += ' %s(%s)' % (s, d)
    if kind == 'flip':
        dims = list({rdim(nd)[0] for _ in range(int(rng().integers(0, nd + 1)))})
        desc += ' dims %s' % dims
        got = own(lib().tl_flip(x, sizes(dims), len(dims)), desc)
        compare(got, back(torch.flip(tv, dims), dt), dt, bits=True, label=desc)
        return desc
    if kind == 'repeat':
        rep = [int(rng().integers(0, 4)) for _ in range(nd + int(rng().integers(0, 2)))]
        desc += ' rep %s' % rep
        got = own(lib().tl_repeat(x, sizes(rep), len(rep)), desc)
        compare(got, back(tv.repeat(*rep), dt), dt, bits=True, label=desc)
        return desc
    a, dim = rdim(nd)
    desc += ' dim %d' % a
    if kind == 'cumprod':
        got = own(lib().tl_cumprod(x, dim), desc)
        if dt in INTS:  # torch multiplies integers in int64: its low bits are the dtype's
            compare(got, back(torch.cumprod(tv.to(torch.int64), a), dt), dt, label=desc)
        else:  # each partial product rounded once more in the dtype: n roundings
            ref = torch.cumprod(tv, a)
            compare(got, back(ref, dt), dt, ulps=s[a] + 2, label=desc)
            half_scan_exact(got, torch.cumprod, tv, a, dt, desc)
        return desc
    if kind == 'roll':
        sh = int(rng().integers(-12, 13))
        desc += ' shift %d' % sh
        got = own(lib().tl_roll(x, sh, dim), desc)
        compare(got, back(torch.roll(tv, sh, a), dt), dt, bits=True, label=desc)
        return desc
    left, right = int(rng().integers(0, 3)), int(rng().integers(0, 3))
    same = bool(rng().random() < 0.5) and s[a] > 0
    desc += ' %s %d %d' % ('same' if same else 'zeros', left, right)
    got = own((lib().tl_pad_with_same if same else lib().tl_pad_with_zeros)(x, dim, left, right),
              desc)
    if same:  # torch's replicate pad wants floats and pads only the last dims: cat the edges
        ref = torch.cat([tv.narrow(a, 0, 1)] * left + [tv] + [tv.narrow(a, s[a] - 1, 1)] * right,
                        a)
    elif tv.numel():
        ref = F.pad(tv, [0, 0] * (nd - 1 - a) + [left, right])
    else:  # torch's F.pad refuses a tensor with an empty dim ("negative output size")
        ref = torch.zeros(s[:a] + (s[a] + left + right,) + s[a + 1:], dtype=tv.dtype)
    compare(got, back(ref, dt), dt, bits=True, label=desc)
    return desc


OPS = [op_unary, op_param, op_binary, op_where, op_to_dtype, op_reduce, op_stats, op_norms,
       op_scan, op_matmul, op_conv, op_pool, op_upsample, op_index, op_rearrange]


if __name__ == '__main__':
    torch.set_num_threads(1)
    rc = fz.main(OPS, __doc__)
    for rule, (n, tot) in sorted(PARTED.items()):
        print('PARTED %s: torch overruled at %d of %d elements' % (rule, n, tot))
    sys.exit(rc)
