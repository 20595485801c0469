#!/usr/bin/env python3
"""Workflow tests (CI and post-mortem use of locktrace): exit codes, files that read back,
the launcher around a hung program, `locktrace report` on directories, SARIF and HTML, install.
Programs run through expect.py's run(), under its process-group timeout.

  workflow_test.py CHECK --locktrace PATH --lib PATH --wfprog PATH [...]

Each CHECK is one meson test; it exits 0 on success, 1 with the reasons, 77 to skip (with
the reason printed).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402

TIMEOUT = 30


class Failed(Exception):
    pass


class Skipped(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Failed(what)


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.dir = os.path.join(tmp, 'reports')

    def env(self, extra=None, preload=False):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith('LOCKTRACE_') and k != 'LD_PRELOAD'}
        if preload:
            e['LD_PRELOAD'] = self.a.lib
        e.update(extra or {})
        return e

    def run(self, cmd, env=None, preload=False, cwd=None, timeout=TIMEOUT):
        ending, out, err = expect.run(cmd, self.env(env, preload), timeout, cwd or self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def traced(self, *args, **env):
        """wfprog under LD_PRELOAD, reports into self.dir."""
        env.setdefault('LOCKTRACE_REPORT_DIR', self.dir)
        return self.run([self.a.wfprog] + list(args), env, preload=True)

    def report(self, *args):
        return self.run([self.a.locktrace, 'report'] + list(args))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path


def summary(d):
    files = glob.glob(os.path.join(d, '*.summary.json'))
    need(len(files) == 1, f'summary files in {d}: {files}')
    return json.load(open(files[0]))


# --- robust files ---------------------------------------------------------------------------

def exitcode_destructors(c):
    """'LOCKTRACE_EXITCODE lets destructors run': the status changes, the libraries'
    destructors still run and stdio is still flushed."""
    ending, out, err = c.traced('report-then-exit', LOCKTRACE_EXITCODE='7')
    need(ending == 7, f'status {ending}: {err}')
    need('library destructor ran' in out, f'a library destructor was skipped: {out!r}')
    need('main returns' in out, f'stdio was not flushed: {out!r}')
    ending, out, _ = c.traced('report-then-exit')
    need(ending == 0 and 'library destructor ran' in out, f'without EXITCODE: {ending} {out!r}')


def suppress_past_cap(c):
    """'suppressions apply whatever the cap': after 120 reports of a kind (cap 100), a report
    of that kind that a rule names is suppressed: counted as such, no abort, no exit code."""
    rules = c.write('supp', 'self-deadlock:known_write_read\n')
    ending, out, err = c.traced('capped-then-suppressed', LOCKTRACE_SUPPRESSIONS=rules)
    need(ending == 0, f'status {ending} (the suppressed report applied its action?)\n{err[-2000:]}')
    need(out.startswith('rdlock -> EDEADLK\n'), f'the suppressed call did not go on as in glibc: {out!r}')
    need('known_write_read' not in err, 'the suppressed report was printed')
    s = summary(c.dir)
    need(s['counts'] == {'self-deadlock': 120} and s['suppressed'] == {'self-deadlock': 1},
         f'summary counts {s["counts"]}, suppressed {s["suppressed"]}')


def json_del_byte(c):
    """'the JSON writer's escaping and the reader agree on every byte': a program whose name
    holds DEL (0x7f) and other odd bytes writes a report that `locktrace report` reads back."""
    odd = os.path.join(c.tmp, 'wf\x7fprog \\"q\x01')
    shutil.copy(c.a.wfprog, odd)
    ending, _, err = c.run([odd, 'bad-unlock'], {'LOCKTRACE_REPORT_DIR': c.dir}, preload=True)
    need(ending == 0 and 'bad-unlock' in err, f'{ending} {err}')
    files = [f for f in glob.glob(os.path.join(c.dir, '*.json')) if 'summary' not in f]
    need(len(files) == 1, f'report files {files}')
    raw = open(files[0], 'rb').read()
    need(b'\x7f' not in raw and b'\\u007f' in raw, 'DEL is not escaped in the file')
    need(json.loads(raw)['program'] == odd, 'program name does not read back in Python')
    ending, out, rerr = c.report('--json', files[0])
    need(ending == 0, f'locktrace report refuses a file the tracer wrote: {rerr}')
    need(json.loads(out)['program'] == odd, 'program name changed in the round trip')
    # and raw DEL, which JSON allows, is accepted too
    raw_del = c.write('raw.json', raw.decode().replace('\\u007f', '\x7f'))
    ending, out2, rerr = c.report('--json', raw_del)
    need(ending == 0 and out2 == out, f'raw DEL: {ending} {rerr}')


# --- locktrace report -------------------------------------------------------------------------

def report_dir(c):
    """'locktrace report takes files and directories and knows summary files': a directory
    with reports of two programs and their summaries, given as the directory or as the
    shell's *.json, prints both reports and exits 0."""
    for _ in range(2):
        ending, _, _ = c.traced('bad-unlock')
        need(ending == 0, f'ending {ending}')
    need(len(glob.glob(os.path.join(c.dir, '*.summary.json'))) == 2, 'expected two summaries')
    ending, out, err = c.report(c.dir)
    need(ending == 0 and err == '', f'on the directory: {ending} {err}')
    need(len(re.findall(r'^locktrace: bad-unlock:', out, re.M)) == 2, f'two reports expected:\n{out}')
    ending, out2, err = c.report(*sorted(glob.glob(os.path.join(c.dir, '*.json'))))
    need(ending == 0 and err == '' and sorted(out2.split('\n')) == sorted(out.split('\n')),
         f'on *.json (summaries included): {ending} {err}')
    empty = os.path.join(c.tmp, 'empty')
    os.mkdir(empty)
    ending, out, err = c.report(empty)
    need(ending == 0 and out == '' and 'no report files' in err, f'empty directory: {ending} {err}')
    ending, out, err = c.report(os.path.join(c.tmp, 'missing-dir'))
    need(ending == 1 and 'No such file' in err, f'a missing path: {ending} {err}')


def source_line(path, text):
    """The 1-based line of path that contains text (found here, not by the code under test)."""
    for n, line in enumerate(open(path), 1):
        if text in line:
            return n
    raise Failed(f'{text!r} not in {path}')


def sarif(c):
    """'--sarif (SARIF 2.1.0 as GitHub code scanning reads it ...)': every field code scanning
    requires, the request frame's file:line as the location, the other stacks as related
    locations, and partialFingerprints that stay the same for the same bug."""
    for _ in range(2):
        ending, _, _ = c.traced('self-deadlock')
        need(ending == 'signal:SIGABRT', f'self-deadlock ending {ending}')
    inv = os.path.join(c.tmp, 'inversion')
    ending, _, _ = c.run([c.a.cross_order, 'cycle-2'], {'LOCKTRACE_REPORT_DIR': inv}, preload=True)
    need(ending == 0, f'cross_order ending {ending}')
    ending, out, err = c.report('--sarif', '--source-root', c.a.source_root, c.dir, inv)
    need(ending == 0, f'locktrace report --sarif: {ending} {err}')
    log = json.loads(out)
    need(log.get('version') == '2.1.0' and 'sarif' in log.get('$schema', ''), 'version/$schema')
    need(len(log['runs']) == 1, 'one run')
    run = log['runs'][0]
    driver = run['tool']['driver']
    need(driver['name'] == 'locktrace' and driver.get('version'), f'driver {driver}')
    rule_ids = [r['id'] for r in driver['rules']]
    need(sorted(rule_ids) == ['lock-order-inversion', 'self-deadlock'], f'rules {rule_ids}')
    for r in driver['rules']:
        need(r['shortDescription']['text'], f'rule {r["id"]} has no description')
    results = run['results']
    need(len(results) == 3, f'{len(results)} results, expected 3')
    root = run['originalUriBaseIds']['%SRCROOT%']['uri']
    need(root.startswith('file:///') and root.endswith('/'), f'SRCROOT {root}')
    for res in results:
        need(res['ruleId'] in rule_ids and rule_ids[res['ruleIndex']] == res['ruleId'], 'ruleId/ruleIndex')
        need(res['message']['text'], 'empty message')
        loc = res['locations'][0]['physicalLocation']
        uri = loc['artifactLocation']['uri']
        need(not uri.startswith('/') and '://' not in uri and '..' not in uri.split('/'),
             f'uri not relative: {uri}')
        need(os.path.isfile(os.path.join(c.a.source_root, uri)), f'{uri} is not under the source root')
        need(isinstance(loc['region']['startLine'], int) and loc['region']['startLine'] > 0, 'startLine')
        fp = res['partialFingerprints']
        need(fp and all(isinstance(v, str) and v for v in fp.values()), f'partialFingerprints {fp}')
        for rel in res['relatedLocations']:
            need(isinstance(rel['id'], int) and rel['message']['text'], f'related location {rel}')
    selfs = [r for r in results if r['ruleId'] == 'self-deadlock']
    src = os.path.join(c.a.source_root, 'tests', 'workflow', 'wfprog.c')
    want = source_line(src, 'int rc = pthread_rwlock_rdlock(l);')
    for r in selfs:
        loc = r['locations'][0]['physicalLocation']
        need(loc['artifactLocation']['uri'] == 'tests/workflow/wfprog.c' and
             loc['region']['startLine'] == want, f'request frame: {loc}, expected wfprog.c:{want}')
        need(any(rel['physicalLocation']['region']['startLine'] ==
                 source_line(src, 'pthread_rwlock_wrlock(l);') for rel in r['relatedLocations']),
             'the held stack is not a related location')
    need(selfs[0]['partialFingerprints'] == selfs[1]['partialFingerprints'],
         'two runs of the same bug have different fingerprints')
    inv_res = [r for r in results if r['ruleId'] == 'lock-order-inversion'][0]
    need(inv_res['partialFingerprints'] != selfs[0]['partialFingerprints'], 'different bugs share a fingerprint')


CHECKS = {f.__name__: f for f in (exitcode_destructors, suppress_past_cap, json_del_byte, report_dir,
                                   sarif)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument('check', choices=sorted(CHECKS))
    p.add_argument('--locktrace', required=True)
    p.add_argument('--lib', required=True)
    p.add_argument('--wfprog', required=True)
    p.add_argument('--cross-order', help='tests/tracer/cross_order')
    p.add_argument('--source-root', help='the top of the source tree')
    args = p.parse_args()
    for k in ('locktrace', 'lib', 'wfprog', 'cross_order', 'source_root'):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    with tempfile.TemporaryDirectory(prefix='locktrace-wf-') as tmp:
        try:
            CHECKS[args.check](Ctx(args, tmp))
        except Skipped as e:
            print(f'SKIP {args.check}: {e}')
            return 77
        except Failed as e:
            print(f'FAILED {args.check}: {e}')
            return 1
    print(f'ok {args.check}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
