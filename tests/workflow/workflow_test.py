#!/usr/bin/env python3
"""Workflow tests (CI and post-mortem use of locktrace): exit codes, files that read back,
the launcher around a hung program, `locktrace report` on directories, SARIF and HTML, install.
Programs run through expect.py's run(), under its process-group timeout.

  workflow_test.py CHECK --locktrace PATH --lib PATH --wfprog PATH [...]

Each CHECK is one meson test; it exits 0 on success, 1 with the reasons, 77 to skip (with
the reason printed).
"""
import glob
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import socket
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402
from checks import Failed, Skipped, check_parser, need, run_main  # noqa: E402

TIMEOUT = 30


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
    """'suppressions apply whatever the cap': after 120 distinct reports of a kind, past the
    cap of 100 printed ones, a report of that kind that a rule names is suppressed: counted as
    such, no abort, no exit code."""
    rules = c.write('supp', 'self-deadlock:known_write_read\n')
    ending, out, err = c.traced('capped-then-suppressed', LOCKTRACE_SUPPRESSIONS=rules)
    need(ending == 0, f'status {ending} (the suppressed report applied its action?)\n{err[-2000:]}')
    need(out.startswith('rdlock -> EDEADLK\n'), f'the suppressed call did not go on as in glibc: {out!r}')
    full = re.findall(r'^locktrace: self-deadlock: thread ', err, re.M)
    need(len(full) == 100 and err.count('locktrace: further self-deadlock reports are not printed\n') == 1,
         f'{len(full)} full reports printed, want 100 and the note at the cap')
    need('known_write_read' not in err, 'the suppressed report was printed')
    s = summary(c.dir)
    need(s['distinct'] == {'self-deadlock': 120} and s['counts'] == {'self-deadlock': 120} and
         s['suppressed'] == {'self-deadlock': 1},
         f'summary distinct {s["distinct"]}, counts {s["counts"]}, suppressed {s["suppressed"]}')


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
    shell's *.json, prints both reports and exits 0; an empty or missing directory has no
    reports (status 0), one of that name in a build directory is named; a missing file is an
    error."""
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
    # A report directory no program wrote to does not exist (the tracer makes it for the
    # first report): after a clean CI run the README's `locktrace report --sarif DIR` step
    # succeeds with an empty log. A missing *.json file stays an error.
    missing = os.path.join(c.tmp, 'missing-dir')
    ending, out, err = c.report(missing)
    need(ending == 0 and out == '' and 'no such directory, so no reports' in err,
         f'a missing directory: {ending} {err}')
    ending, out, err = c.report('--sarif', missing + '/')
    need(ending == 0 and json.loads(out)['runs'][0]['results'] == [], f'sarif: {ending} {err}')
    ending, out, err = c.report(missing + '.json')
    need(ending == 1 and 'No such file' in err, f'a missing file: {ending} {err}')
    # The README's CI step reads ./locktrace-reports/ from the top of the checkout, while
    # ctest, meson test and make check run tests (and so write reports) in a build directory:
    # the step then printed an empty SARIF log and said only "no such directory".
    os.makedirs(os.path.join(c.tmp, 'build', 'tests', 'locktrace-reports'))
    ending, out, err = c.report('--sarif', 'locktrace-reports/')
    need(ending == 0 and json.loads(out)['runs'][0]['results'] == [] and
         'no such directory, so no reports (the tracer makes it for the first report); but there '
         'is build/tests/locktrace-reports/: tests run by meson test, ctest or make check write '
         'their reports in their own working directory, unless the launcher is given an absolute '
         '--report-dir (--report-dir=$PWD/locktrace-reports)\n' in err,
         f'reports written under a build directory: {ending} {err}')


def summary_named(c):
    """'a summary file named alone says what it is': `locktrace report X.summary.json` printed
    nothing and exited 0. It prints the report files the summary lists (text and --json),
    after one note naming the process, its reports by kind and the directory to give; named
    with its reports or their directory it adds nothing; a summary of suppressed reports only
    says it lists no file; one whose report file is gone is an error like a missing file."""
    ending, _, _ = c.traced('bad-unlock')
    need(ending == 0, f'ending {ending}')
    (summ,) = glob.glob(os.path.join(c.dir, '*.summary.json'))
    (rep,) = [f for f in glob.glob(os.path.join(c.dir, '*.json')) if f != summ]
    pid = summary(c.dir)['pid']
    ending, want, err = c.report(rep)
    need(ending == 0 and err == '' and want.startswith('locktrace: bad-unlock:'), f'{rep}: {ending} {err}')
    ending, out, err = c.report(summ)
    note = (f'locktrace report: {summ}: a summary file, not a report: process {pid} had 1 distinct '
            f'report (1 bad-unlock); its report file follows (or give the directory: '
            f'{c.a.locktrace} report {c.dir}/)\n')
    need(ending == 0 and out == want and err == note, f'the summary alone: {ending} {out!r} {err!r}')
    ending, out, err = c.report('--json', summ)
    need(ending == 0 and json.loads(out)['pid'] == pid and err == note, f'--json: {ending} {err}')
    for args in ((summ, rep), (rep, summ), (c.dir, summ)):
        ending, out, err = c.report(*args)
        need(ending == 0 and out == want and err == '', f'named with its report {args}: {ending} {out!r} {err!r}')
    shutil.rmtree(c.dir)
    rules = c.write('supp', 'bad-unlock:noisy_unlock\n')
    ending, _, _ = c.traced('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    (summ,) = glob.glob(os.path.join(c.dir, '*.summary.json'))
    ending, out, err = c.report(summ)
    need(ending == 0 and out == '' and 'had 0 distinct reports and 1 suppressed (1 bad-unlock); it '
         'lists no report file' in err, f'suppressed only: {ending} {out!r} {err!r}')
    shutil.rmtree(c.dir)
    ending, _, _ = c.traced('bad-unlock')
    (summ,) = glob.glob(os.path.join(c.dir, '*.summary.json'))
    for f in glob.glob(os.path.join(c.dir, '*.1.json')):
        os.unlink(f)
    ending, out, err = c.report(summ)
    need(ending == 1 and out == '' and 'its report file follows' in err and
         re.search(r'\.1\.json: .*No such file', err), f'its report file gone: {ending} {err!r}')


def unwritable_report_dir(c):
    """'a report directory that cannot be written says why': run where the default
    ./locktrace-reports cannot be made (a directory without write permission, as a user who
    cannot override that), the report still reaches stderr and one line says the directory
    could not be created for lack of permission (it said "no such directory")."""
    prefix = []
    if os.geteuid() == 0:  # root writes anywhere: run without the capability that lets it
        # (still root, so a build under /root, mode 0700, stays readable, as it would not be
        # to another user)
        setpriv = shutil.which('setpriv')
        if not setpriv:
            raise Skipped('running as root without setpriv to drop privileges')
        prefix = [setpriv, '--bounding-set=-dac_override', '--']
    ro = os.path.join(c.tmp, 'read-only')
    os.mkdir(ro, 0o555)
    ending, _, err = c.run(prefix + [c.a.locktrace, '--', c.a.wfprog, 'bad-unlock'], cwd=ro)
    need(ending == 0 and re.search(r'^locktrace: bad-unlock:', err, re.M), f'{ending} {err}')
    want = (f'locktrace: cannot write report files into {ro}/locktrace-reports '
            '(LOCKTRACE_REPORT_DIR: permission denied); reports go to stderr only')
    need(want in err, f'expected {want!r}:\n{err}')
    need(os.listdir(ro) == [], f'made in a read-only directory: {os.listdir(ro)}')


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


def sarif_join(c):
    """A deadlock through std::thread::join, which libstdc++ runs out of line without debug
    info, or through a std::async future's get(), which joins from libstdc++'s headers and
    libc: its SARIF result is located at the program's line of the join or the get (it had
    none, and code scanning has nowhere to show such an alert)."""
    if not c.a.scenarios_cpp:
        raise Skipped('no C++ compiler: scenarios_cpp was not built')
    src = os.path.join(c.a.source_root, 'tests', 'tracer', 'scenarios_cpp.cpp')
    for scenario, line in (('join-holding', 'worker.join();'), ('async-holding', 'f.get();')):
        d = os.path.join(c.tmp, scenario)
        ending, _, err = c.run([c.a.scenarios_cpp, scenario], {'LOCKTRACE_REPORT_DIR': d},
                               preload=True)
        need(ending == 'signal:SIGABRT' and 'locktrace: deadlock:' in err, f'{scenario}: {ending} {err}')
        ending, out, err = c.report('--sarif', '--source-root', c.a.source_root, d)
        need(ending == 0, f'locktrace report --sarif: {ending} {err}')
        results = json.loads(out)['runs'][0]['results']
        need(len(results) == 1 and results[0]['locations'], f'{scenario}: results {results}')
        loc = results[0]['locations'][0].get('physicalLocation', {})
        want = source_line(src, line)
        need(loc.get('artifactLocation', {}).get('uri') == 'tests/tracer/scenarios_cpp.cpp' and
             loc['region']['startLine'] == want,
             f'{scenario}: location {results[0]["locations"]}, expected scenarios_cpp.cpp:{want}')


def chromium(c, page):
    """Loads page in headless chromium; (DOM after load, console lines)."""
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    if not exe:
        raise Skipped('chromium is not installed (CI installs it in .ci/run)')
    profile = os.path.join(c.tmp, 'chromium-profile')
    ending, dom, err = c.run([exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                              f'--user-data-dir={profile}', '--enable-logging=stderr', '--v=0',
                              '--dump-dom', 'file://' + page], {'HOME': c.tmp}, timeout=90)
    need(ending == 0 and dom, f'chromium: {ending} {err[-2000:]}')
    return dom, [l for l in err.splitlines() if ':CONSOLE' in l]


def html(c):
    """'--html: one self-contained page (every finding with stacks, source lines around each
    frame when readable, an inline SVG graph of the wait-for / lock-order cycle with threads and
    locks as nodes, no network)', loaded in headless chromium with no console errors."""
    ending, _, _ = c.traced('self-deadlock')
    need(ending == 'signal:SIGABRT', f'self-deadlock: {ending}')
    for name, cmd, env in (('inv', [c.a.cross_order, 'cycle-3'], {}),
                           ('dl', [c.a.cross_deadlock, 'mutex-2'], {'LOCKTRACE_ACTION': 'edeadlk'})):
        ending, _, _ = c.run(cmd, dict(env, LOCKTRACE_REPORT_DIR=os.path.join(c.tmp, name)), preload=True)
        need(ending == 0, f'{cmd}: {ending}')
    ending, page, err = c.report('--html', '--source-root', c.a.source_root, c.dir,
                                 os.path.join(c.tmp, 'inv'), os.path.join(c.tmp, 'dl'))
    need(ending == 0, f'locktrace report --html: {ending} {err}')
    need(not re.search(r'<(script|link|img|iframe)\b|url\((?!#)|https?://(?!www\.w3\.org/2000/svg)',
                       page), 'the page refers to something outside itself')
    path = c.write('page.html', page)
    dom, console = chromium(c, path)
    need(console == [], f'console messages: {console}')
    sections = re.findall(r'<section class="finding".*?</section>', dom, re.S)
    need(len(sections) == 3, f'{len(sections)} findings in the page, expected 3')
    kinds = {}
    for sec in sections:
        kind = re.search(r'<h2>locktrace: ([a-z-]+):', sec).group(1)
        svg = re.search(r'<svg class="graph".*?</svg>', sec, re.S)
        need(svg, f'{kind}: no graph')
        kinds[kind] = (sec, svg.group(0))
    need(sorted(kinds) == ['deadlock', 'lock-order-inversion', 'self-deadlock'], f'kinds {sorted(kinds)}')
    # the cycles: 2 threads and 2 locks for the deadlock, 3 + 3 for the inversion of 3
    for kind, threads, locks in (('deadlock', 2, 2), ('lock-order-inversion', 3, 3), ('self-deadlock', 1, 1)):
        svg = kinds[kind][1]
        need(svg.count('<ellipse class="thread"') == threads and svg.count('<rect class="lock"') == locks,
             f'{kind}: {svg.count("<ellipse")} threads, {svg.count("<rect")} locks in its graph')
        need(svg.count('<line class="wait"') == threads and svg.count('<line class="hold"') == locks,
             f'{kind}: edges of the cycle')
    sec = kinds['self-deadlock'][0]
    src = os.path.join(c.a.source_root, 'tests', 'workflow', 'wfprog.c')
    want = source_line(src, 'int rc = pthread_rwlock_rdlock(l);')
    need(re.search(r'<span class="here">\s*%d  \s*int rc = pthread_rwlock_rdlock\(l\);</span>' % want, sec),
         'the request frame\'s source line is not shown')
    need('known_write_read' in sec and 'request' in sec and 'first-seen' in sec, 'stacks missing')
    # the check can fail: a page with a script error is caught
    bad = c.write('bad.html', '<!DOCTYPE html><p>x</p><script>missingFunction();</script>')
    _, console = chromium(c, bad)
    need(any('missingFunction' in l for l in console), f'a console error went unseen: {console}')


def path_map(c):
    """'--path-map OLD=NEW re-symbolization': reports made with a binary in one place are
    re-symbolized from a copy elsewhere (a CI machine's build directory)."""
    ci_build = os.path.join(c.tmp, 'ci-build')
    os.mkdir(ci_build)
    prog = os.path.join(ci_build, 'wfprog')
    shutil.copy(c.a.wfprog, prog)
    stripped, _ = stripped_report(c, prog)
    here = os.path.join(c.tmp, 'here')
    os.rename(ci_build, here)
    ending, out, err = c.report(stripped)
    need(ending == 0 and 'known_write_read' not in out and 'ci-build/wfprog is not on this machine' in err,
         f'without a map: {ending} {err}')
    ending, out, err = c.report('--path-map', f'{ci_build}={here}', stripped)
    need(ending == 0 and re.search(r'#0 0x[0-9a-f]+ in known_write_read \S*wfprog\.c:\d+', out),
         f'--path-map did not re-symbolize: {ending} {err}\n{out}')
    ending, out, err = c.report('--html', f'--path-map={ci_build}={here}', stripped)
    need(ending == 0 and 'known_write_read' in out, 'the map does not apply to --html')
    ending, _, err = c.report('--path-map', 'no-equals-sign', stripped)
    need(ending == 2 and 'OLD=NEW' in err, f'a bad map: {ending} {err}')


def stripped_report(c, prog):
    """Runs prog (a copy of wfprog) into a report, then blanks every frame's names: only
    re-symbolizing from the binary can bring them back. The path of the blanked copy."""
    ending, _, _ = c.run([prog, 'self-deadlock'], {'LOCKTRACE_REPORT_DIR': c.dir}, preload=True)
    need(ending == 'signal:SIGABRT', f'ending {ending}')
    report = [f for f in glob.glob(os.path.join(c.dir, '*.json')) if 'summary' not in f][0]
    r = json.load(open(report))
    for st in r['stacks']:
        for f in st['frames']:
            f['function'] = f['file'] = None
            f['line'] = 0
    build_id = next(f['build_id'] for st in r['stacks'] for f in st['frames']
                    if f['module'] == os.path.realpath(prog))
    return c.write('stripped.json', json.dumps(r)), build_id


def debuginfod(c):
    """'debuginfod through libdw's client in locktrace report only, tested against Debian's
    debuginfod server run on 127.0.0.1': a report whose binary is gone from this machine is
    re-symbolized from the server's copy, found by build-id."""
    server = shutil.which('debuginfod')
    if not server:
        raise Skipped('debuginfod is not installed (CI installs it in .ci/run)')
    ci_build = os.path.join(c.tmp, 'ci-build')
    os.mkdir(ci_build)
    prog = os.path.join(ci_build, 'wfprog')
    shutil.copy(c.a.wfprog, prog)
    stripped, build_id = stripped_report(c, prog)
    served = os.path.join(c.tmp, 'served')
    os.rename(ci_build, served)
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    url = f'http://127.0.0.1:{port}'
    log = open(os.path.join(c.tmp, 'debuginfod.log'), 'w')
    srv = subprocess.Popen([server, '-F', '-p', str(port), '-c', '1', '-d',
                            os.path.join(c.tmp, 'db.sqlite'), served], cwd=c.tmp,
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:  # the server scans served/ after it starts: poll until it has the binary
            try:
                with urllib.request.urlopen(f'{url}/buildid/{build_id}/executable', timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            need(srv.poll() is None, f'debuginfod ended: {open(log.name).read()[-2000:]}')
            need(time.monotonic() < deadline, f'debuginfod never served {build_id}')
            time.sleep(0.2)
        ending, out, err = c.report(stripped)
        need(ending == 0 and 'known_write_read' not in out and 'is not on this machine any more' in err,
             f'without DEBUGINFOD_URLS: {ending} {err}')
        env = {'DEBUGINFOD_URLS': url, 'DEBUGINFOD_CACHE_PATH': os.path.join(c.tmp, 'cache')}
        ending, out, err = c.run([c.a.locktrace, 'report', stripped], env)
        need(ending == 0 and re.search(r'#0 0x[0-9a-f]+ in known_write_read \S*wfprog\.c:\d+', out),
             f'not re-symbolized from debuginfod: {ending} {err}\n{out}')
        need(re.search(r'ci-build/wfprog is not on this machine: read from debuginfod\'s copy', err), err)
    finally:
        os.killpg(srv.pid, signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL)
            srv.wait()
        log.close()


# --- the launcher ---------------------------------------------------------------------------

class Running:
    """A command started in its own session, read line by line with a deadline; killed (the
    whole group) on the way out."""

    def __init__(self, c, cmd, env=None):
        self.p = subprocess.Popen(cmd, env=c.env(env), cwd=c.tmp, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True)
        self.buf = {self.p.stdout: b'', self.p.stderr: b''}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()

    def wait_for(self, stream, pattern, timeout=TIMEOUT):
        """Reads stream until pattern matches what it printed so far; the match."""
        f = self.p.stdout if stream == 'stdout' else self.p.stderr
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.buf[f].decode('utf-8', 'replace'), re.M)
            if m:
                return m
            left = deadline - time.monotonic()
            need(left > 0, f'{stream} never matched /{pattern}/: {self.buf[f][-2000:]!r}')
            ready, _, _ = select.select([f], [], [], left)
            if ready:
                chunk = os.read(f.fileno(), 65536)
                need(chunk, f'{stream} closed before /{pattern}/: {self.buf[f][-2000:]!r}')
                self.buf[f] += chunk

    def finish(self, timeout=TIMEOUT):
        out, err = self.p.communicate(timeout=timeout)
        self.buf[self.p.stdout] += out
        self.buf[self.p.stderr] += err
        return self.p.returncode


def launcher_signals(c):
    """'forwards every signal a user sends to a hung test (at least the dump signal, INT,
    TERM, HUP, QUIT, USR1, USR2) to the program': each one sent to the launcher reaches the
    program, the launcher stays, and the program's status is passed through."""
    with Running(c, [c.a.locktrace, '--', c.a.wfprog, 'hang']) as r:
        r.wait_for('stdout', r'^ready \d+$')
        for sig in ('SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGTERM'):
            os.kill(r.p.pid, getattr(signal, sig))
            r.wait_for('stdout', f'^got {sig[3:]}$')
        need(r.finish() == 0, f'launcher status {r.p.returncode}')
    # the dump signal: the program prints its thread dump; then SIGTERM ends it, and the
    # launcher dies of the same signal
    with Running(c, [c.a.locktrace, '--dump-signal=SIGUSR1', '--', c.a.wfprog, 'hung-on-lock']) as r:
        r.wait_for('stdout', r'^ready \d+$')
        os.kill(r.p.pid, signal.SIGUSR1)
        r.wait_for('stderr', r'^locktrace: thread-dump:')
        r.wait_for('stderr', r'holds 1 lock')
        os.kill(r.p.pid, signal.SIGTERM)
        need(r.finish() == -signal.SIGTERM, f'launcher status {r.p.returncode}, not death by SIGTERM')


def dump_command(c):
    """'locktrace dump PID asks a running traced program for its thread dump and says what to
    do when the program was not started with a dump signal', by the launcher's pid or the
    program's, and of a program with a handler of its own for the signal; one that takes the
    signal with sigwait is said to have written none."""
    # spelt as kill -s takes it: the command knows the signal as the tracer does
    with Running(c, [c.a.locktrace, '--dump-signal=usr2', '--', 'sh', '-c',
                     f'{c.a.wfprog} hung-on-lock; true']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        ending, _, err = c.run([c.a.locktrace, 'dump', str(r.p.pid)])
        need(ending == 0 and re.search(rf'asked {pid} \(wfprog\) for its thread dump with SIGUSR2', err),
             f'dump by launcher pid: {ending} {err}')
        # the command as run, as the launcher's own line does ("locktrace report" is not
        # found when it was run as build/tracer/locktrace)
        need(f'(read it with: {c.a.locktrace} report ' in err, f'dump names the command: {err}')
        r.wait_for('stderr', r'^locktrace: thread-dump:(.*\n)+.*waits for 0x[0-9a-f]+ mutex')
        ending, _, err = c.run([c.a.locktrace, 'dump', str(pid)])
        need(ending == 0 and f'asked {pid} (wfprog)' in err, f'dump by program pid: {ending} {err}')
        r.wait_for('stderr', r'^locktrace: thread-dump:(.*\n)+(.*\n)*locktrace: thread-dump:')
        # 'frames as module+offset ... also written to the report directory as a JSON report of
        # kind thread-dump, which locktrace report symbolizes like any other'
        r.wait_for('stderr', r'holds 1 lock\n    holds 0x[0-9a-f]+ mutex(?: "[^"]*")?, taken at:\n'
                             r'    #0 0x[0-9a-f]+ in \?\? \(\S*/wfprog\+0x[0-9a-f]+\)\n')
        deadline = time.monotonic() + TIMEOUT
        while True:  # the file follows the text on stderr
            dumps = sorted(glob.glob(os.path.join(c.tmp, 'locktrace-reports', f'wfprog.{pid}.dump-*.json')))
            if len(dumps) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        need(len(dumps) == 2, f'dump files {dumps}')
        d = json.load(open(dumps[0]))
        need(d['kind'] == 'thread-dump' and d['reason'] == 'dump-signal' and d['pid'] == pid, f'{d}')
        ending, out, rerr = c.report(dumps[0])
        need(ending == 0 and re.search(r'waits for 0x[0-9a-f]+ mutex(?: "[^"]*")? for \d+ ms, at:\n'
                                       r'    #0 0x[0-9a-f]+ in waiter \S*wfprog\.c:\d+', out) and
             re.search(r'holds 0x[0-9a-f]+ mutex(?: "[^"]*")?, taken at:\n(    #\d+ .*\n)*    #\d+ 0x[0-9a-f]+ in '
                       r'(\(inlined\) )?hung_on_lock \S*wfprog\.c:\d+', out),
             f'the dump file is not symbolized: {ending} {rerr}\n{out}')
        ending, out, _ = c.report('--sarif', os.path.join(c.tmp, 'locktrace-reports'))
        need(ending == 0 and json.loads(out)['runs'][0]['results'] == [], 'a dump became a SARIF result')
        os.kill(r.p.pid, signal.SIGTERM)  # passed on to the shell and the program under it
        need(r.finish() in (0, -signal.SIGTERM), f'launcher status {r.p.returncode}')
    need(re.search(r'^locktrace: \d+ thread dumps in \S+/locktrace-reports/', r.buf[r.p.stderr].decode(), re.M)
         and 'report (' not in r.buf[r.p.stderr].decode(), 'the launcher counted the dumps as reports')
    with Running(c, [c.a.locktrace, '--', c.a.wfprog, 'hung-on-lock']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        ending, _, err = c.run([c.a.locktrace, 'dump', str(pid)])
        need(ending == 1 and 'was not started with a dump signal' in err and
             f'  {c.a.locktrace} --dump-signal=SIGUSR1 -- PROGRAM' in err and
             f'then run {c.a.locktrace} dump again' in err, f'no dump signal: {ending} {err}')
        need(r.p.poll() is None, 'the program did not survive the question')
    # A program with a handler of its own for the dump signal (a server's SIGUSR1, installed
    # after the tracer's) keeps it for every other sender: the command's request dumps without
    # running it, a plain kill runs it and does not dump.
    with Running(c, [c.a.locktrace, '--dump-signal=SIGUSR1', '--', c.a.wfprog, 'hang']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        ending, _, err = c.run([c.a.locktrace, 'dump', str(pid)])
        need(ending == 0 and f'asked {pid} (wfprog)' in err, f'own SIGUSR1 handler: {ending} {err}')
        r.wait_for('stderr', r'^locktrace: thread-dump:')
        r.wait_for('stdout', r'^got none$')  # the request woke its sigsuspend, no handler of its own ran
        os.kill(pid, signal.SIGUSR1)
        r.wait_for('stdout', r'^got USR1$')
        os.kill(pid, signal.SIGTERM)
        need(r.finish() == 0, f'launcher status {r.p.returncode}')
        need(r.buf[r.p.stderr].decode().count('locktrace: thread-dump:') == 1,
             f'a plain SIGUSR1 dumped too: {r.buf[r.p.stderr][-2000:]!r}')
    # One that takes the signal with sigwaitinfo runs no handler: no dump, and the command says why.
    with Running(c, [c.a.locktrace, '--dump-signal=SIGUSR1', '--', c.a.wfprog, 'sigwait']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        ending, _, err = c.run([c.a.locktrace, 'dump', str(pid)])
        r.wait_for('stdout', r'^took USR1$')
        need(ending == 1 and re.search(rf'^locktrace dump: no dump file from {pid} \(wfprog\) after '
                                       r'\d+ s: if the program blocks SIGUSR1 in every thread or takes it with sigwait', err, re.M),
             f'sigwait: {ending} {err}')
    ending, _, err = c.run([c.a.locktrace, 'dump', str(os.getpid())])
    need(ending == 1 and 'is not running under locktrace' in err, f'untraced pid: {ending} {err}')


def parent_pid(pid):
    """The parent of pid, from /proc (read here, not by the code under test)."""
    with open(f'/proc/{pid}/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[1])


def dump_wrapped(c):
    """`locktrace dump` given the pid of what started the launcher (a CI job's `timeout 600
    locktrace -- test`, whose pid is the one at hand) names the launcher to ask, and asks
    nothing; it said only that the pid was not running under locktrace."""
    with Running(c, ['timeout', str(TIMEOUT * 2), c.a.locktrace, '--dump-signal=usr2', '--',
                     c.a.wfprog, 'hung-on-lock']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        launcher = parent_pid(pid)
        ending, _, err = c.run([c.a.locktrace, 'dump', str(r.p.pid)])
        need(ending == 1 and err == f'locktrace dump: {r.p.pid} (timeout) is not running under '
             f'locktrace, but it started the launcher {launcher}: run {c.a.locktrace} dump '
             f'{launcher}\n', f'dump of timeout\'s pid: {ending} {err}')
        need('thread-dump' not in r.buf[r.p.stderr].decode(), 'a dump was asked for')
        ending, _, err = c.run([c.a.locktrace, 'dump', str(launcher)])
        need(ending == 0 and f'asked {pid} (wfprog)' in err, f'dump by the launcher named: {ending} {err}')
        os.kill(r.p.pid, signal.SIGTERM)  # timeout passes it on to the launcher, and it to wfprog
        need(r.finish() in (124, -signal.SIGTERM), f'timeout status {r.p.returncode}')


def comm(pid):
    """The command name of pid, from /proc ('' once it is gone)."""
    try:
        return open(f'/proc/{pid}/comm').read().strip()
    except OSError:
        return ''


def dump_early(c):
    """`locktrace dump` sends the dump signal only to a process that has a handler for it,
    since its default action ends the process: the man page's `locktrace --dump-signal=SIGUSR1
    -- ./test & locktrace dump $!` asked a program not yet past the tracer's constructor
    (it died of SIGUSR1) or a launcher that had not started it yet ("not running under
    locktrace"); and a child started with LD_PRELOAD dropped, which keeps the launcher's
    variables, died of it."""
    for _ in range(3):
        with Running(c, [c.a.locktrace, '--dump-signal=SIGUSR1', '--', c.a.wfprog, 'hung-on-lock']) as r:
            ending, _, err = c.run([c.a.locktrace, 'dump', str(r.p.pid)])
            need(ending == 0 and re.search(r'^locktrace dump: asked \d+ \(wfprog\)', err, re.M),
                 f'dump at once: {ending} {err}')
            r.wait_for('stderr', r'^locktrace: thread-dump:')
            need(r.p.poll() is None, f'the launcher ended: {r.p.returncode}')
    with Running(c, [c.a.locktrace, '--dump-signal=SIGUSR1', '--', 'sh', '-c',
                     'env -u LD_PRELOAD sleep 60 & echo ready $!; wait']) as r:
        pid = int(r.wait_for('stdout', r'^ready (\d+)$').group(1))
        deadline = time.monotonic() + TIMEOUT
        while comm(pid) != 'sleep':  # past env's exec of sleep, the untraced program
            need(time.monotonic() < deadline, f'{pid} is {comm(pid)!r}, not sleep')
            time.sleep(0.02)
        ending, _, err = c.run([c.a.locktrace, 'dump', str(r.p.pid)])
        need(ending == 1 and f'locktrace dump: {pid} (sleep) has no handler for SIGUSR1 after 5 s, so '
             'the tracer is not loaded into it' in err and 'none was sent' in err and
             re.search(r'^locktrace dump: asked \d+ \(sh\)', err, re.M), f'untraced child: {ending} {err}')
        need(running(pid), f'the untraced child {pid} did not survive the question')


def exit_code_tree(c):
    """'the exit code covers the whole process tree it started': --exitcode through sh -c,
    where the shell's own status is 0, with report files on or off."""
    script = f'{c.a.wfprog} bad-unlock; true'
    ending, _, err = c.run([c.a.locktrace, '--exitcode=66', '--', 'sh', '-c', script])
    need(ending == 66 and '1 report (1 bad-unlock; 1 occurrence)' in err, f'through sh -c: {ending} {err}')
    ending, _, _ = c.run([c.a.locktrace, '--', 'sh', '-c', script])
    need(ending == 0, f'without --exitcode: {ending}')
    ending, _, err = c.run([c.a.locktrace, '--exitcode=66', '--', 'sh', '-c', f'{c.a.wfprog} hang & '
                            'kill -TERM $!; wait; exit 3'])
    need(ending == 3 and err == '', f'a clean tree keeps its own status: {ending} {err}')
    # With report files off the tree's reports are still counted (through a private
    # directory, removed at the end: nothing is left in TMPDIR and no line names it).
    scratch = os.path.join(c.tmp, 'scratch')
    os.mkdir(scratch)
    for script, status in ((script, 66), ('true', 0)):
        ending, _, err = c.run([c.a.locktrace, '--exitcode=66', '--report-dir=', '--', 'sh', '-c',
                                script], {'TMPDIR': scratch})
        need(ending == status and 'occurrence' not in err and scratch not in err,
             f'--report-dir= through sh -c {script!r}: {ending} {err}')
        need(os.listdir(scratch) == [], f'left behind: {os.listdir(scratch)}')


def no_file_line(dir, n, kinds):
    """The launcher's line for n reports that have no file in dir."""
    one = n == 1
    return (f'locktrace: {n} report{"" if one else "s"} ({kinds}) {"was" if one else "were"} '
            f'printed on stderr but {"has" if one else "have"} no file in {dir}/ '
            f'({"it" if one else "they"} could not be written there, the tracer said why on '
            f'stderr; or {"it was" if one else "they were"} removed)\n')


def running(pid):
    """Whether pid is there and no zombie (a daemon's parent may never reap it)."""
    try:
        return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def unfiled_setup(c):
    """wfprog, a report directory that cannot be made (a path through a regular file: it
    fails as a full disk or a read-only directory does, for root too), and the launcher's
    command with --exitcode=66 and that directory, up to `sh -c`."""
    bad = os.path.join(c.write('afile', ''), 'reports')
    return c.a.wfprog, bad, [c.a.locktrace, '--exitcode=66', '--report-dir=' + bad, '--', 'sh', '-c']


def unfiled_reports(c):
    """'a report that happened makes --exitcode fire, whatever became of its file': a child
    of sh -c whose report directory cannot be made, a child that removed its files, one that
    closed every descriptor and took their numbers for a file of its own, one that reported
    and exec'd a program that reported under the same pid; each run exits 66 and the
    launcher's last line counts the reports that have no file (a full disk: checked by hand
    on a full tmpfs, which needs root to mount)."""
    wf, bad, lt = unfiled_setup(c)
    ending, _, err = c.run(lt + [f'{wf} bad-unlock; true'])
    need(ending == 66 and re.search(r'^locktrace: bad-unlock:', err, re.M) and
         'LOCKTRACE_REPORT_DIR: not a directory' in err and
         err.endswith(no_file_line(bad, 1, '1 bad-unlock')), f'directory not writable: {ending} {err}')
    ending, _, err = c.run(lt[:1] + lt[2:] + [f'{wf} bad-unlock; true'])
    need(ending == 0 and err.endswith(no_file_line(bad, 1, '1 bad-unlock')),
         f'without --exitcode: {ending} {err}')
    ending, _, err = c.run(lt + [f'{wf} bad-unlock-exec {wf} bad-unlock; true'])
    need(ending == 66 and err.endswith(no_file_line(bad, 2, '2 bad-unlock')),
         f'a report, then exec, then a report under the same pid: {ending} {err}')
    own = os.path.join(c.tmp, 'own.log')
    closer = c.write('closer.py', f"""import os
os.closerange(0, 65536)
for _ in range(16):
    os.set_inheritable(os.open({own!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), True)
os.execv({wf!r}, [{wf!r}, 'bad-unlock'])
""")
    ending, _, err = c.run(lt + [f'{sys.executable} {closer}; true'])
    text = open(own).read() if os.path.exists(own) else ''
    need(ending == 66 and err.endswith(no_file_line(bad, 1, '1 bad-unlock')),
         f'every descriptor closed, their numbers reused: {ending} {err}')
    need(re.search(r'^locktrace: bad-unlock:', text, re.M) and 'locktrace-reports' not in text,
         f'the program\'s own file (its fds 0-15): {text!r}')
    ending, _, err = c.run([c.a.locktrace, '--exitcode=66', '--report-dir=' + c.dir, '--', 'sh',
                            '-c', f'{wf} bad-unlock; rm -r {c.dir}; true'])
    need(ending == 66 and err.endswith(no_file_line(c.dir, 1, '1 bad-unlock')),
         f'the report file removed: {ending} {err}')


def unfiled_neighbours(c):
    """The legal neighbours of unfiled_reports: a report the user suppressed, in a child
    whose report directory cannot be made, counts for nothing; a clean tree keeps its status
    and says nothing; reports whose files were written are counted once; a daemon reporting
    after the launcher ended prints its report and the directory's line, and nothing more."""
    wf, bad, lt = unfiled_setup(c)
    rules = c.write('supp', 'bad-unlock:noisy_unlock\n')
    ending, _, err = c.run(lt[:3] + ['--suppressions=' + rules] + lt[3:] + [f'{wf} bad-unlock; true'])
    need(ending == 0 and 'bad-unlock' not in err and 'no file' not in err,
         f'suppressed by the user: {ending} {err}')
    ending, _, err = c.run(lt + [f'{wf} clean; exit 3'])
    need(ending == 3 and err == '', f'a clean tree: {ending} {err}')
    ending, _, err = c.run([c.a.locktrace, '--exitcode=66', '--report-dir=' + c.dir, '--', 'sh',
                            '-c', f'{wf} bad-unlock; {wf} bad-unlock; true'])
    need(ending == 66 and '2 reports (2 bad-unlock; 2 occurrences)' in err and 'no file' not in err,
         f'reports with their files: {ending} {err}')
    log = os.path.join(c.tmp, 'daemon.log')
    ending, out, err = c.run(lt + [f'(sleep 1; exec {wf} bad-unlock) >/dev/null 2>{log} '
                                   '</dev/null & echo $!'])
    pid = int(out.split()[0]) if out.split() else 0
    need(ending == 0 and 'the program left ' in err, f'a daemon: {ending} {err}')
    for _ in range(300):  # the daemon ends within a few seconds; 30 s at most
        if not pid or not running(pid):
            break
        time.sleep(0.1)
    text = open(log).read()
    lines = [l for l in text.splitlines() if l.startswith('locktrace')]
    need(len(lines) == 2 and lines[0].startswith('locktrace: bad-unlock:') and
         'LOCKTRACE_REPORT_DIR: not a directory' in lines[1],
         f'the daemon reporting after the launcher ended: {text!r}')


def untraced_children(c):
    """'a child started with an environment that drops the tracer is named': a program that
    removes LD_PRELOAD and then starts another (execve, execl, execvp, posix_spawn, system,
    popen) ran it untraced, silently, its lock bugs unreported; the launcher now names it at
    the end, and one started traced but without the launcher's socket in its environment
    (its reports would not count). Neighbours: the same starts with the environment kept say
    nothing; an exec that fails takes its word back; without the launcher nothing is printed
    (the tracer never changes a child's environment, and prints no notes of its own)."""
    wf = c.a.wfprog
    untraced = ('locktrace: 1 program ran without the tracer: the program that started it gave it '
                'an environment whose LD_PRELOAD does not name it (cleared or replaced): ')
    for how in ('execve', 'execl', 'execvp', 'posix_spawn', 'system', 'popen'):
        name = wf if how.startswith('exec') or how == 'posix_spawn' else f'{how}: {wf} bad-unlock'
        ending, out, err = c.run([c.a.locktrace, '--', wf, 'start', how, 'LD_PRELOAD', wf, 'bad-unlock'])
        need(ending == 0 and 'locktrace: bad-unlock' not in err and
             re.search(re.escape(untraced + name) + r' \(in pid \d+\)\n$', err),
             f'{how} without LD_PRELOAD: {ending} {err!r}')
        ending, out, err = c.run([c.a.locktrace, '--', wf, 'start', how, '-', wf, 'clean'])
        need(ending == 0 and err == '', f'{how} with the environment kept: {ending} {err!r}')
    ending, _, err = c.run([c.a.locktrace, '--', wf, 'start', 'execve', 'LOCKTRACE_LAUNCHER_SOCKET',
                            wf, 'clean'])
    need(ending == 0 and re.search(
        r'^locktrace: 1 program ran traced but without LOCKTRACE_LAUNCHER_SOCKET in its environment '
        r'.*: ' + re.escape(wf) + r' \(in pid \d+\)\n$', err),
        f'the launcher\'s socket dropped: {ending} {err!r}')
    ending, _, err = c.run([c.a.locktrace, '--', 'sh', '-c', 'env -i /nonexistent/prog'])
    need(ending == 127 and 'without the tracer' not in err, f'a failed exec: {ending} {err!r}')
    ending, out, err = c.run([wf, 'start', 'execve', 'LD_PRELOAD', wf, 'clean'], preload=True)
    need(ending == 0 and err == '', f'LD_PRELOAD by hand, no launcher: {ending} {err!r}')


def left_running(c):
    """'a daemon's reports come after the launcher is gone': a traced process the program
    leaves running is named in one line that says where its reports will go; a tree that
    ended says nothing."""
    ending, out, err = c.run([c.a.locktrace, '--report-dir=' + c.dir, '--', 'sh', '-c',
                              'sleep 30 </dev/null >/dev/null 2>&1 & echo $!'])
    pid = int(out.split()[0]) if out.split() else 0
    try:
        want = (f'locktrace: the program left 1 traced process running (pid {pid}): what they '
                f'report from now on goes to their stderr and to {c.dir}/ and does not count '
                "in this launcher's status\n")
        need(ending == 0 and err == want, f'{ending} {out} {err!r}')
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
    ending, out, err = c.run([c.a.locktrace, '--', 'sh', '-c', 'sleep 0 & wait'])
    need(ending == 0 and err == '', f'a tree that ended: {ending} {err}')


def readme_own_program(c):
    """README's "your own program" commands do what their comments say: the first reports a
    self-deadlock on stderr and in ./locktrace-reports/ and ends with the abort; the second
    turns a hang on a lock whose holder waits elsewhere into a long-wait report naming the
    holder (the program itself still hangs until killed)."""
    readme = open(os.path.join(c.a.source_root, 'README.md')).read()
    block = next((b for b in re.findall(r'```sh\n(.*?)```', readme, re.S) if './myprog' in b), None)
    need(block, 'README has no ```sh block with ./myprog')
    commands = [line.split() for line in block.splitlines() if line and not line.startswith('#')]
    need(len(commands) == 2 and all(cmd[0] == 'build/tracer/locktrace' and
                                    cmd[-2:] == ['./myprog', 'args'] for cmd in commands),
         f'expected two "build/tracer/locktrace ... ./myprog args" commands: {commands}')
    first, second = ([c.a.locktrace] + cmd[1:-2] + [c.a.wfprog] for cmd in commands)
    ending, _, err = c.run(first + ['self-deadlock'])
    need(ending == 'signal:SIGABRT' and re.search(r'^locktrace: self-deadlock:', err, re.M),
         f'{first}: {ending} {err}')
    need(glob.glob(os.path.join(c.tmp, 'locktrace-reports', 'wfprog.*.1.json')),
         f'no report file in ./locktrace-reports/: {err}')
    ending, _, err = c.run(second + ['hung-on-lock'], timeout=25)
    need(ending == 'timeout' and re.search(r'^locktrace: long-wait: thread T1 .* has waited', err, re.M)
         and re.search(r'^  held for lock by T0 .*, taken at:', err, re.M), f'{second}: {ending} {err}')


def space_path(c):
    """'a build path with a space works': the launcher and the library in a directory whose
    name has a space and a colon still trace the program; the symlink it needs is removed."""
    d = os.path.join(c.tmp, 'build dir:1')
    os.mkdir(d)
    shutil.copy(c.a.locktrace, d)
    shutil.copy(c.a.lib, d)
    scratch = os.path.join(c.tmp, 'scratch')
    os.mkdir(scratch)
    ending, _, err = c.run([os.path.join(d, 'locktrace'), '--', c.a.wfprog, 'self-deadlock'],
                           {'TMPDIR': scratch})
    need(ending == 'signal:SIGABRT' and re.search(r'^locktrace: self-deadlock:', err, re.M),
         f'not traced from a path with a space: {ending} {err}')
    need(os.listdir(scratch) == [], f'left behind: {os.listdir(scratch)}')


def not_loaded(c):
    """'it checks that the tracer is really loaded in its child ... and refuses clearly when
    it cannot be': a statically linked program, named directly or hidden behind a script."""
    if not c.a.wfstatic:
        raise Skipped('no static program in a sanitized build')
    ending, out, err = c.run([c.a.locktrace, '--', c.a.wfstatic])
    need(ending == 125 and out == '' and 'is statically linked' in err, f'static: {ending} {out} {err}')
    script = c.write('script', f'#!{c.a.wfstatic}\n')
    os.chmod(script, 0o755)
    ending, out, err = c.run([c.a.locktrace, '--', script])
    need(ending == 125 and re.search(r'^locktrace: the tracer did not load into \S+script .*'
                                     r'before the program ended', err, re.M), f'script: {ending} {err}')
    ending, out, err = c.run([c.a.locktrace, '--', c.a.wfprog, 'bad-unlock'])
    need(ending == 0 and 'did not load' not in err, f'a dynamic program: {ending} {err}')


# --- sanitizers -------------------------------------------------------------------------------

def asan_program(c):
    """'a -fsanitize=address program runs under locktrace -- with no extra option and its lock
    bugs are reported; LeakSanitizer silent about the tracer' (and still finding the
    program's own leaks)."""
    if not c.a.wf_address:
        raise Skipped('the compiler cannot build -fsanitize=address programs here')
    ending, _, err = c.run([c.a.locktrace, '--', c.a.wf_address, 'self-deadlock'])
    need(ending == 134 or ending == 'signal:SIGABRT', f'ending {ending}: {err[-3000:]}')
    need(re.search(r'^locktrace: self-deadlock: .* requests read on rwlock', err, re.M) and
         re.search(r'#0 .* in known_write_read \S*wfprog\.c:\d+', err), f'no report: {err[-3000:]}')
    need('does not come first' not in err, err)
    for mode in ('bad-unlock', 'clean', 'report-then-exit'):
        ending, _, err = c.run([c.a.locktrace, '--', c.a.wf_address, mode])
        need(ending == 0 and 'LeakSanitizer' not in err, f'{mode}: {ending} {err[-3000:]}')
    ending, out, err = c.run([c.a.locktrace, '--', c.a.wf_address, 'leak'])
    need(ending != 0 and re.search(r'Direct leak of 4242 byte', err) and
         re.search(r'SUMMARY: AddressSanitizer: 4242 byte\(s\) leaked in 1 allocation', err),
         f'LeakSanitizer no longer sees the program\'s own leak: {ending} {err[-3000:]}')


def tsan_program(c):
    """'a -fsanitize=thread program gets one clear sentence ... and runs untraced'."""
    if not c.a.wf_thread:
        raise Skipped('the compiler cannot build -fsanitize=thread programs here')
    ending, out, err = c.run([c.a.locktrace, '--', c.a.wf_thread, 'clean'])
    need(ending == 0 and out.startswith('lock -> 0\n'), f'{ending} {out!r} {err}')
    need(re.fullmatch(r'locktrace: \S+ is built with ThreadSanitizer, which already intercepts '
                      r'pthread locks; run one or the other\. Running it untraced\.\n', err), err)
    ending, _, err = c.run([c.a.locktrace, '--', c.a.wf_thread, 'bad-unlock'])
    need('locktrace: bad-unlock' not in err and not os.path.exists(os.path.join(c.tmp, 'locktrace-reports')),
         f'it was traced: {err}')


# --- install ----------------------------------------------------------------------------------

def install_prefix(c):
    """'meson install installs tracer, launcher, header, .pc and a man page locktrace(1);
    tensorlib only when asked for; after install to a prefix a pkg-config-linked program
    starts' (no ldconfig), and the installed launcher works from another directory; then
    `ninja uninstall` removes it all."""
    src, build, prefix = c.a.source_root, os.path.join(c.tmp, 'build'), os.path.join(c.tmp, 'prefix')

    def sh(*cmd, **kw):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
        need(p.returncode == 0, f'{" ".join(cmd)}: {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-3000:]}')
        return p.stdout

    # README "Install": the prefix is set with `meson configure` on a configured build dir
    sh('meson', 'setup', build, src)
    sh('meson', 'configure', build, f'-Dprefix={prefix}')
    sh('meson', 'compile', '-C', build, 'tracer/locktrace:executable',
       'tracer/locktrace:shared_library', 'tracer/locktrace.1:custom')
    sh('meson', 'install', '-C', build, '--no-rebuild', '--quiet')
    files = sorted(os.path.relpath(os.path.join(d, f), prefix)
                   for d, _, fs in os.walk(prefix) for f in fs)
    libdir = os.path.dirname(next(f for f in files if f.endswith('liblocktrace.so')))
    want = ['bin/locktrace', 'include/locktrace.h', f'{libdir}/liblocktrace.so',
            f'{libdir}/pkgconfig/locktrace.pc', 'share/man/man1/locktrace.1']
    need(all(w in files for w in want), f'installed {files}, expected {want}')
    need(not any('tensorlib' in f or f.endswith('tl.h') for f in files), f'tensorlib installed: {files}')
    elsewhere = os.path.join(c.tmp, 'elsewhere')
    os.mkdir(elsewhere)
    env = dict(c.env(), PKG_CONFIG_PATH=os.path.join(prefix, libdir, 'pkgconfig'))
    flags = sh('pkg-config', '--cflags', '--libs', 'locktrace', env=env).split()
    exe = os.path.join(elsewhere, 'linked')
    sh(c.a.cc, '-g', '-O1', '-rdynamic', os.path.join(src, 'tests', 'workflow', 'wfprog.c'),
       os.path.join(src, 'tests', 'workflow', 'wfdtor.c'), '-o', exe, *flags, '-pthread')
    ending, _, err = c.run([exe, 'self-deadlock'], cwd=elsewhere)
    need(ending == 'signal:SIGABRT' and re.search(r'^locktrace: self-deadlock:', err, re.M),
         f'the pkg-config-linked program did not start traced: {ending} {err[-2000:]}')
    launcher = os.path.join(prefix, 'bin', 'locktrace')
    ending, _, err = c.run([launcher, '--', c.a.wfprog, 'bad-unlock'], cwd=elsewhere)
    need(ending == 0 and re.search(r'^locktrace: 1 report \(1 bad-unlock; 1 occurrence\) in %s/locktrace-reports/'
                                   % re.escape(elsewhere), err, re.M), f'installed launcher: {ending} {err}')
    ending, out, _ = c.run([launcher, 'report', os.path.join(elsewhere, 'locktrace-reports')], cwd=elsewhere)
    need(ending == 0 and out.startswith('locktrace: bad-unlock:'), f'installed report: {ending}')
    page = open(os.path.join(prefix, 'share', 'man', 'man1', 'locktrace.1')).read().replace('\\-', '-')
    _, help_text, _ = c.run([launcher, '--help'])
    for opt in re.findall(r'^  (--[a-z-]+)=', help_text, re.M):
        need(opt in page, f'the man page lacks {opt}')
    sh('ninja', '-C', build, 'uninstall')
    left = [f for _, _, fs in os.walk(prefix) for f in fs]
    need(left == [], f'left after uninstall: {left}')


def ctest_recipe(c):
    """'a ctest recipe that works on CMake 3.25 first': the README's CMAKE_CROSSCOMPILING_EMULATOR
    line makes a test with a report fail and leaves a clean test passing."""
    if not shutil.which('cmake') or not shutil.which('ctest'):
        raise Skipped('cmake is not installed (CI installs it in .ci/run)')
    if not shutil.which('make'):
        raise Skipped("make, cmake's default generator, is not installed (CI installs it)")
    readme = open(os.path.join(c.a.source_root, 'README.md')).read()
    m = re.search(r'^cmake -B build -DCMAKE_CROSSCOMPILING_EMULATOR="/usr/local/bin/locktrace;'
                  r'(--exitcode=66;--report-dir=\$PWD/locktrace-reports;--)" &&$', readme, re.M)
    need(m, 'the README has no CMAKE_CROSSCOMPILING_EMULATOR recipe')
    proj = os.path.join(c.tmp, 'proj')
    os.mkdir(proj)
    src = os.path.join(c.a.source_root, 'tests', 'workflow')
    with open(os.path.join(proj, 'CMakeLists.txt'), 'w') as f:
        f.write('cmake_minimum_required(VERSION 3.13)\nproject(recipe C)\n'
                f'add_executable(wfprog "{src}/wfprog.c" "{src}/wfdtor.c")\n'
                'target_link_libraries(wfprog pthread)\nenable_testing()\n'
                'add_test(NAME with_report COMMAND wfprog bad-unlock)\n'
                'add_test(NAME clean COMMAND wfprog clean)\n')
    build = os.path.join(proj, 'build')
    # the recipe runs at the top of the checkout, where the shell makes $PWD that directory
    emulator = f'-DCMAKE_CROSSCOMPILING_EMULATOR={c.a.locktrace};{m.group(1).replace("$PWD", proj)}'
    for cmd in (['cmake', '-S', proj, '-B', build, emulator], ['cmake', '--build', build]):
        ending, out, err = c.run(cmd, timeout=300)
        need(ending == 0, f'{cmd}: {ending} {out[-2000:]} {err[-2000:]}')
    ending, out, err = c.run(['ctest', '--test-dir', build], timeout=120)
    need(ending != 0 and re.search(r'1 - with_report \(Failed\)', out) and
         re.search(r'50% tests passed, 1 tests failed out of 2', out), f'ctest: {ending} {out}')
    # ctest runs each test in the build directory: the reports are where the recipe's later
    # steps (locktrace report ... locktrace-reports/) read them, at the top
    reports = os.path.join(proj, 'locktrace-reports')
    need(os.path.isdir(reports) and any(n.endswith('.json') for n in os.listdir(reports)),
         f'no report in {reports}: {os.listdir(proj)}')


CHECKS = {f.__name__: f for f in (exitcode_destructors, suppress_past_cap, json_del_byte, report_dir,
                                   unwritable_report_dir,
                                   sarif, sarif_join, launcher_signals, dump_command, dump_wrapped, dump_early, exit_code_tree, left_running,
                                   readme_own_program,
                                   space_path,
                                   not_loaded, unfiled_reports, unfiled_neighbours, summary_named, untraced_children, asan_program, tsan_program, install_prefix,
                                   ctest_recipe, html, path_map, debuginfod)}


def main():
    p = check_parser(CHECKS)
    p.add_argument('--locktrace', required=True)
    p.add_argument('--lib', required=True)
    p.add_argument('--wfprog', required=True)
    p.add_argument('--cross-order', help='tests/tracer/cross_order')
    p.add_argument('--cross-deadlock', help='tests/tracer/cross_deadlock')
    p.add_argument('--scenarios-cpp', help='tests/tracer/scenarios_cpp')
    p.add_argument('--wfstatic', help='a statically linked program')
    p.add_argument('--cc', help='the C compiler')
    p.add_argument('--wf-address', help='wfprog built with -fsanitize=address')
    p.add_argument('--wf-thread', help='wfprog built with -fsanitize=thread')
    p.add_argument('--source-root', help='the top of the source tree')
    return run_main(CHECKS, p, ('locktrace', 'lib', 'wfprog', 'cross_order', 'cross_deadlock', 'source_root',
                                'wfstatic', 'scenarios_cpp', 'wf_address', 'wf_thread'), Ctx, 'locktrace-wf-')

if __name__ == '__main__':
    sys.exit(main())
