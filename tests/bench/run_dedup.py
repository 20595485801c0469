#!/usr/bin/env python3
"""A bug repeated in a tight loop under liblocktrace: what its first occurrence costs (a full
report, symbolized, and its file) and what each repeat costs (one line up to the 100th, the
count kept, the file rewritten at most every 200 ms), with and without report files, against
the same call natively. Best of --repeat interleaved runs.

  run_dedup.py DEDUP LIBLOCKTRACE [--calls N] [--repeat N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def run(prog, calls, env):
    out = subprocess.run([prog, 'timed', str(calls)], env=env, check=True, capture_output=True,
                         text=True, timeout=900).stdout
    return {k: float(v) for k, v in re.findall(r'(\w+)=([\d.]+)', out)}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('dedup')
    p.add_argument('lib')
    p.add_argument('--calls', type=int, default=200_000)
    p.add_argument('--repeat', type=int, default=5)
    a = p.parse_args(argv)
    native = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    native.pop('LD_PRELOAD', None)
    traced = dict(native, LD_PRELOAD=os.path.abspath(a.lib))
    best = {}
    with tempfile.TemporaryDirectory(prefix='bench-dedup-') as tmp:
        for i in range(a.repeat):
            filed = dict(traced, LOCKTRACE_REPORT_DIR=os.path.join(tmp, str(i)))
            for name, env in (('native', native), ('traced', traced), ('traced+files', filed)):
                r = run(a.dedup, a.calls, env)
                b = best.setdefault(name, r)
                for k in r:
                    b[k] = min(b[k], r[k])
    print(f'one bug (unlock of a mutex not held) hit {a.calls + 1} times in a loop, best of {a.repeat}:')
    print(f'{"":14} {"first (us)":>11} {"repeat (ns)":>12} {"repeat/native":>14}')
    for name in ('native', 'traced', 'traced+files'):
        b = best[name]
        print(f'{name:14} {b["first_ns"] / 1000:11.1f} {b["repeat_ns"]:12.1f} '
              f'{b["repeat_ns"] / best["native"]["repeat_ns"]:13.0f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
