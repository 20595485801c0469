#!/usr/bin/env python3
"""Short-lived heap locks under liblocktrace: memory and time of the churn, and the cost of
free(), native and traced in the same run.

  run_churn.py CHURNBENCH LIBLOCKTRACE [--floor PASSFREE] [--locks N] [--pairs N] [--repeat N]

churn: N heap locks (default 8 million), each malloc'd at a random size and offset, locked,
unlocked and freed, 4096 alive at a time (no init or destroy): seconds and peak RSS, native
and traced, and the traced RSS above native (the issue's bound: 64 MB). free: malloc/free
pairs per second of CPU time (windows of 100,000 pairs in a run of --pairs, the slowest of
the fastest quarter of them; the best of --repeat interleaved runs), native and traced, and
the ratio native/traced (the issue's target: <= 1.15), for three rows: blocks with no lock
in their 64 KiB (heap locks known elsewhere), blocks right between small objects whose
mutexes are known, and malloc/realloc/free triples of such blocks. --floor adds, for each
row, a preloaded free() that only passes the call on (passfree.c): the cost of
interposing free() at all (its realloc is libc's).
"""
import argparse
import os
import re
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
    p.add_argument('--floor', help='passfree.so: a free() that only passes the call on')
    p.add_argument('--locks', type=int, default=8_000_000)
    p.add_argument('--pairs', type=int, default=3_000_000)
    p.add_argument('--repeat', type=int, default=9)
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
    rows = [('free', 'malloc/free, no lock in the block\'s 64 KiB'),
            ('near', 'malloc/free, locks nearby (block between objects with mutexes)'),
            ('realloc', 'malloc/realloc/free triples, locks nearby')]
    envs = {'native': native, 'traced': traced}
    if a.floor:
        envs['pass-through'] = dict(native, LD_PRELOAD=os.path.abspath(a.floor))
    best = {}
    for _ in range(a.repeat):
        for mode, _title in rows:
            for env, environ in envs.items():
                r = run(a.churnbench, [mode, str(a.pairs)], environ)
                best[(mode, env)] = max(best.get((mode, env), 0), r['pairs_per_sec'])
    print(f'pairs (or triples) per second of CPU time (fast quartile of windows of 100,000), '
          f'best of {a.repeat} interleaved runs of {a.pairs} (target: ratio <= 1.15):')
    for mode, title in rows:
        n = best[(mode, 'native')]
        line = f'  {title}:\n    native {n / 1e6:6.2f} M/s'
        for env in list(envs)[1:]:
            t = best[(mode, env)]
            line += f'  {env} {t / 1e6:6.2f} M/s ratio {n / t:.3f}'
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
