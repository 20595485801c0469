#!/usr/bin/env python3
"""A program that fits its address-space cap natively with MARGIN_MB to spare runs traced as
natively, every lock tracked (no "out of memory" note): the tracer's address space is about
what it uses. Until 2026-12-05 the lock map reserved 96 MB for each 1 GiB that held a lock,
and the program's own pthread_create was refused.

  as_limit_test.py AS_LIMIT LIBLOCKTRACE

The cap is the program's peak address space without the tracer (VmPeak, from a run without
it) plus MARGIN_MB, set by the shell (ulimit -v) before the traced run starts: the tracer
reads it once, at its first large allocation.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402

MARGIN_MB = 130
TIMEOUT = 120


def main(argv):
    prog, lib = (os.path.abspath(a) for a in argv[1:3])
    env = {k: v for k, v in os.environ.items() if not k.startswith(('LOCKTRACE_', 'LD_PRELOAD'))}
    ending, out, err = expect.run([prog, 'peak'], env, TIMEOUT, None)
    out = out.decode()
    m = re.search(r'^peak (\d+)$', out, re.M)
    if ending != 0 or not m:
        print(f'native run: {ending} {out!r} {err!r}')
        return 1
    cap = int(m.group(1)) + MARGIN_MB * 1024
    traced = dict(env, LD_PRELOAD=lib)
    ending, out, err = expect.run(['sh', '-c', f'ulimit -v {cap} && exec "$0"', prog], traced,
                                  TIMEOUT, None)
    out, err = out.decode(), err.decode('utf-8', 'replace')
    print(f'native peak {m.group(1)} kB, cap {cap} kB: traced {ending}, stdout {out!r}')
    if ending != 0 or out != 'ok\n' or err:
        print(f'FAILED: want status 0, "ok" and nothing on stderr; stderr: {err[:2000]!r}')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
