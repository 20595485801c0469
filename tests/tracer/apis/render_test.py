#!/usr/bin/env python3
"""The findings of tests/tracer/apis as report files: each run leaves one JSON report with the
expected kind, reason and api names, `locktrace report --as-recorded` prints it back as the
text the program printed, and `--json` reading its own output gives the same document.

  render_test.py --locktrace PATH --lib PATH --c11 PATH --once PATH --condvar PATH --exit-held PATH
                 --barrier PATH
"""
import argparse
import glob
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import expect  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for opt in ('--locktrace', '--lib', '--c11', '--once', '--condvar', '--exit-held', '--barrier'):
        p.add_argument(opt, required=True)
    a = p.parse_args()
    for k, v in vars(a).items():
        setattr(a, k, os.path.abspath(v))
    # (program, scenario, env, kind, reason, check on the JSON document)
    runs = [
        (a.c11, 'relock', {}, 'self-deadlock', 'mutex-relock',
         lambda r: r['locks'][0]['api'] == 'c11'),
        (a.c11, 'join-deadlock', {}, 'deadlock', 'wait-cycle',
         lambda r: any(s['waits_for'] == 'join' and s['api'] == 'c11' for s in r['steps'])),
        (a.once, 'self', {}, 'self-deadlock', 'once-recursion',
         lambda r: r['locks'][0]['type'] == 'once'),
        (a.condvar, 'destroy-waited', {}, 'condvar-misuse', 'destroy-waited',
         lambda r: r['locks'][0]['type'] == 'condvar' and len(r['threads']) == 2),
        (a.condvar, 'two-mutexes', {}, 'condvar-misuse', 'two-mutexes',
         lambda r: [l['type'] for l in r['locks']] == ['condvar', 'mutex', 'mutex']),
        (a.condvar, 'wait-unheld', {}, 'condvar-misuse', 'wait-unheld', lambda r: True),
        (a.barrier, 'destroy-waited', {}, 'barrier-misuse', 'destroy-waited',
         lambda r: [l['type'] for l in r['locks']] == ['barrier'] and len(r['threads']) == 2
         and r['waiting'] == 1 and r['outcome'] == 'abort'),
        (a.barrier, 'init-waited', {}, 'barrier-misuse', 'init-waited',
         lambda r: r['locks'][0]['type'] == 'barrier' and r['waiting'] == 1
         and r['outcome'] == 'continue'),
        (a.exit_held, 'exit', {'LOCKTRACE_EXIT_HELD': 'report'}, 'exit-held', 'process-exit',
         lambda r: len(r['locks']) == 4 and len(r['threads']) == 2),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (prog, name, env, kind, reason, ok) in enumerate(runs):
            d = os.path.join(tmp, str(n))
            e = dict(os.environ, LD_PRELOAD=a.lib, LOCKTRACE_REPORT_DIR=d, **env)
            _, _, err = expect.run([prog, name], e, 20, tmp)
            err = err.decode('utf-8', 'replace')
            err = re.sub(r'^locktrace: thread-dump:.*\n(?:  .*\n)*', '', err, flags=re.M)
            files = sorted(glob.glob(os.path.join(d, '*.[0-9]*.[0-9]*.json')))
            if len(files) != 1:
                failures.append(f'{name}: report files {files}')
                continue
            r = json.load(open(files[0]))
            if (r['kind'], r['reason']) != (kind, reason) or not ok(r):
                failures.append(f'{name}: kind {r["kind"]}, reason {r["reason"]}: {r}')
            plain = dict(os.environ)
            plain.pop('LD_PRELOAD', None)
            ending, out, rerr = expect.run([a.locktrace, 'report', '--as-recorded', files[0]],
                                           plain, 20, tmp)
            if ending != 0 or out.decode() != err:
                failures.append(f'{name}: rendered differently:\n{out.decode()}---\n{err}{rerr}')
            _, j1, _ = expect.run([a.locktrace, 'report', '--json', files[0]], plain, 20, tmp)
            again = os.path.join(tmp, f'again{n}.json')
            open(again, 'wb').write(j1)
            _, j2, _ = expect.run([a.locktrace, 'report', '--json', again], plain, 20, tmp)
            if not j1 or j1 != j2:
                failures.append(f'{name}: --json is not stable')
    for f in failures:
        print('FAIL', f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
