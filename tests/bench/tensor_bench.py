#!/usr/bin/python3
"""tensorlib vs numpy: runs tensor_bench (the C side) and the same ops in numpy in one process
environment, best of N repetitions each, and prints a table with the ratios.

    /usr/bin/python3 tests/bench/tensor_bench.py build/tests/bench/tensor_bench
    (or: meson compile -C build bench-tensor)

Both sides use the machine's OpenBLAS (numpy through Debian's libblas.so.3 alternative,
tensorlib through libopenblas), under the same environment: OPENBLAS_CORETYPE or
OPENBLAS_NUM_THREADS, if set, apply to both. Targets from the issue: matmul within 1.2x of
numpy, elementwise within 1.5x; the 4-element add shows the fixed cost of one op.
"""
import subprocess
import sys
import time

import numpy as np

TARGETS = {'matmul': 1.2, 'add': 1.5, 'mul': 1.5, 'exp': 1.5, 'expT': 1.2, 'sum0': 1.2,
           'softmax': 1.2}
ROUNDS = 5


def best_of(fn, reps, calls=1):
    fn()
    best = float('inf')
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / calls


def numpy_times():
    rng = np.random.default_rng(1)
    f32 = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    m512, n512, m1024, n1024 = f32(512, 512), f32(512, 512), f32(1024, 1024), f32(1024, 1024)
    x, y = f32(16 << 20), f32(16 << 20)
    s, t = f32(4), f32(4)
    m4096 = f32(4096, 4096)
    return {
        'matmul_512': best_of(lambda: m512 @ n512, 20),
        'matmul_1024': best_of(lambda: m1024 @ n1024, 10),
        'add_16M': best_of(lambda: x + y, 10),
        'mul_16M': best_of(lambda: x * y, 10),
        'exp_16M': best_of(lambda: np.exp(x), 10),
        'add_4': best_of(lambda: s + t, 7, 200000),
        'expT_4096': best_of(lambda: np.exp(m4096.T), 7),
        'sum0_4096': best_of(lambda: m4096.sum(axis=0), 7),
        'softmax_4096': best_of(lambda: softmax(m4096), 7),
        'cumsum0_4096': best_of(lambda: np.cumsum(m4096, axis=0), 7),
        'cumsum1_4096': best_of(lambda: np.cumsum(m4096, axis=1), 7),
        'cumprod_16M': best_of(lambda: np.cumprod(x), 7),
    }


def softmax(x):
    """numpy's usual softmax over the last dim, shifted by the row maximum."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def tensorlib_times(exe):
    """The C side's figures; rwlock_rd (one read lock + unlock) has no numpy counterpart."""
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {name: float(sec) for name, sec in (line.split() for line in out.splitlines())}


def show(tl, np_):
    print('%-13s %14s %14s %8s %8s' % ('op', 'tensorlib', 'numpy', 'ratio', 'target'))
    for name, sec in tl.items():
        if name not in np_:
            continue
        ratio = sec / np_[name]
        target = TARGETS.get(name.split('_')[0]) if name != 'add_4' else None
        unit, scale = ('ns', 1e9) if name == 'add_4' else ('ms', 1e3)
        verdict = ''
        if target is not None:
            verdict = '<= %.1fx %s' % (target, 'ok' if ratio <= target else 'MISSED')
        print('%-13s %11.3f %s %11.3f %s %7.2fx  %s' % (name, sec * scale, unit, np_[name] * scale,
                                                        unit, ratio, verdict))
    print('tiny add: %.0f ns/op in tensorlib (checks, allocation, dispatch, 2 read locks); one '
          'uncontended rwlock read lock + unlock: %.1f ns, so the locks are %.1f ns of it'
          % (tl['add_4'] * 1e9, tl['rwlock_rd'] * 1e9, 2 * tl['rwlock_rd'] * 1e9))


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: tensor_bench.py PATH/TO/tensor_bench')
    # Alternate the two sides over a few rounds and keep each op's best, so a burst of other
    # load on the machine does not land on one side only.
    tl, np_ = {}, {}
    for _ in range(ROUNDS):
        for best, times in ((tl, tensorlib_times(sys.argv[1])), (np_, numpy_times())):
            for name, sec in times.items():
                best[name] = min(sec, best.get(name, sec))
    show(tl, np_)


if __name__ == '__main__':
    main()
