#!/usr/bin/env python3
"""Runs lockbench natively and under liblocktrace in one go and prints ns per lock/unlock
pair and the ratio to native.

  run_bench.py LOCKBENCH LIBLOCKTRACE [--iters N] [--locks N] [--threads 1,2] [--repeat N]

ns/lock is wall time x threads / lock-unlock pairs: the cost one thread pays per pair.
Configurations: native; tracer (default, LOCKTRACE_STACKS=lazy); tracer with
LOCKTRACE_STACKS=full (an unwind per acquisition). Each configuration runs --repeat times,
interleaved with the others, and the best run counts (lockbench itself keeps its best of 3).
"""
import argparse
import os
import re
import subprocess
import sys


def measure(bench, mode, threads, locks, iters, env):
    out = subprocess.run([bench, mode, str(threads), str(locks), str(iters)], env=env,
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r'ns_per_lock=([\d.]+) locks_per_s=(\d+)', out)
    return float(m.group(1)), int(m.group(2))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('bench')
    p.add_argument('lib')
    p.add_argument('--iters', type=int, default=2_000_000)
    p.add_argument('--locks', type=int, default=64)
    p.add_argument('--threads', default='1,2')
    p.add_argument('--repeat', type=int, default=3, help='runs per configuration; best kept')
    a = p.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    base.pop('LD_PRELOAD', None)
    configs = [('native', {}),
               ('tracer', {'LD_PRELOAD': os.path.abspath(a.lib)}),
               ('tracer full', {'LD_PRELOAD': os.path.abspath(a.lib), 'LOCKTRACE_STACKS': 'full'})]
    print(f'lockbench: {a.locks} rwlocks, ~90 % reads; per configuration: ns per lock/unlock '
          f'pair, million pairs/s (all threads), ratio of ns to native')
    print(f'{"mode":8} {"threads":>7} ' + ' '.join(f'{name:>28}' for name, _ in configs))
    for mode in ('flat', 'nested'):
        for threads in [int(t) for t in a.threads.split(',')]:
            iters = a.iters // threads
            best = {}
            for _ in range(a.repeat):  # interleaved, so a busy moment hits every config alike
                for name, extra in configs:
                    got = measure(a.bench, mode, threads, a.locks, iters, {**base, **extra})
                    best[name] = min(best.get(name, got), got)
            native = best['native'][0]
            cells = [f'{ns:6.1f} ns {rate / 1e6:6.1f} M/s ({ns / native:4.2f}x)'
                     for ns, rate in (best[name] for name, _ in configs)]
            print(f'{mode:8} {threads:7} ' + ' '.join(f'{c:>28}' for c in cells))
            sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
