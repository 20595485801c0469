#!/usr/bin/env python3
"""Short-lived heap locks under liblocktrace: memory and time of the churn, and the cost of
free(), native and traced in the same run.

  run_churn.py CHURNBENCH LIBLOCKTRACE [--locks N] [--pairs N] [--repeat N]

churn: N heap locks (default 8 million), each malloc'd at a random size and offset, locked,
unlocked and freed, 4096 alive at a time (no init or destroy): seconds and peak RSS, native
and traced, and the traced RSS above native (the issue's bound: 64 MB). free: malloc/free
pairs per second (default 20 million pairs, median of --repeat interleaved runs), native and
traced, and the ratio native/traced (the issue's target: <= 1.15).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def run(prog, args, env):
    out = subprocess.run([prog] + args, env=env, check=True, capture_output=True, text=True,
                         timeout=900).stdout
    return {k: float(v) for k, v in re.findall(r'(\w+)=([\d.]+)', out)}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('churnbench')
    p.add_argument('lib')
    p.add_argument('--locks', type=int, default=8_000_000)
    p.add_argument('--pairs', type=int, default=20_000_000)
    p.add_argument('--repeat', type=int, default=5)
    a = p.parse_args(argv)
    native = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    native.pop('LD_PRELOAD', None)
    traced = dict(native, LD_PRELOAD=os.path.abspath(a.lib))
    n = run(a.churnbench, ['churn', str(a.locks)], native)
    t = run(a.churnbench, ['churn', str(a.locks)], traced)
    print(f'churn of {a.locks} short-lived heap locks (malloc, lock, unlock, free):')
    print(f'  native  {n["seconds"]:8.2f} s  peak RSS {n["rss_kib"] / 1024:8.1f} MB')
    print(f'  traced  {t["seconds"]:8.2f} s  peak RSS {t["rss_kib"] / 1024:8.1f} MB')
    print(f'  traced RSS above native: {(t["rss_kib"] - n["rss_kib"]) / 1024:.1f} MB '
          f'(bound 64 MB); time ratio {t["seconds"] / n["seconds"]:.1f}x')
    rn, rt = [], []
    for _ in range(a.repeat):
        rn.append(run(a.churnbench, ['free', str(a.pairs)], native)['pairs_per_sec'])
        rt.append(run(a.churnbench, ['free', str(a.pairs)], traced)['pairs_per_sec'])
    mn, mt = statistics.median(rn), statistics.median(rt)
    ratios = [x / y for x, y in zip(rn, rt)]
    print(f'malloc/free pairs per second, median of {a.repeat} interleaved runs:')
    print(f'  native {mn / 1e6:7.2f} M/s  traced {mt / 1e6:7.2f} M/s  '
          f'ratio {mn / mt:.3f} (target <= 1.15; runs {min(ratios):.3f}-{max(ratios):.3f})')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
