#!/usr/bin/env python3
"""De-duplication of reports by signature (issue: "No de-duplication"): the first occurrence
of a bug prints in full, each repeat one line; one report file per signature with its
occurrence count and first/last time; the launcher's line and the summary file agree.

  dedup_test.py CHECK --locktrace PATH --lib PATH --dedup PATH --source dedup.c

Expected line numbers come from marker comments in dedup.c, expected ordinals from
ordinal() below, never from the tracer. Exit 0 on success, 1 with the reasons.
"""
import datetime
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402
from checks import check_parser, need, run_main  # noqa: E402

TIMEOUT = 30
FULL = re.compile(r'^locktrace: (\S+): (?!again \()')
REPEAT = re.compile(r'^locktrace: (\S+): again \((\d+)(st|nd|rd|th) time\) at (\S+), see report (\d+)(.*)$')


def ordinal(n):
    if n % 100 in (11, 12, 13):
        return f'{n}th'
    return f'{n}' + {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.dir = os.path.join(tmp, 'reports')
        self.lines = {}
        for i, text in enumerate(open(args.source), 1):
            for m in re.finditer(r'/\* (BUG-[A-Z0-9-]+) \*/', text):
                self.lines[m.group(1)] = i

    def place(self, marker):
        return f'dedup.c:{self.lines[marker]}'

    def run(self, cmd, env=None, preload=True):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith('LOCKTRACE_'):
                del e[k]
        if preload:
            e['LD_PRELOAD'] = self.a.lib
            e['LOCKTRACE_REPORT_DIR'] = self.dir
        e.update(env or {})
        ending, out, err = expect.run(cmd, e, TIMEOUT, self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def dedup(self, mode, n=None, **env):
        return self.run([self.a.dedup, mode] + ([str(n)] if n is not None else []), env)

    def launch(self, mode, n=None, *options):
        cmd = [self.a.locktrace, '--report-dir', self.dir] + list(options) + ['--', self.a.dedup, mode]
        return self.run(cmd + ([str(n)] if n is not None else []), preload=False)

    def report(self, *args):
        return self.run([self.a.locktrace, 'report'] + list(args), preload=False)

    def files(self):
        return sorted(glob.glob(os.path.join(self.dir, 'dedup.*.[0-9]*.json')),
                      key=lambda p: int(p.split('.')[-2]))

    def summary(self):
        s = glob.glob(os.path.join(self.dir, '*.summary.json'))
        need(len(s) == 1, f'summary files: {s}')
        return json.load(open(s[0]))


def repeats(err):
    return [m.groups() for m in map(REPEAT.match, err.splitlines()) if m]


def fulls(err):
    return [m.group(1) for m in map(FULL.match, err.splitlines()) if m]


def check_repeats(err, kind, place, number, first, last):
    """The repeat lines of one report: 'again (Nth time)' for N = first..last in order."""
    got = [r for r in repeats(err) if r[3] == place]
    want = list(range(first, last + 1))
    need([int(r[1]) for r in got] == want, f'{kind} at {place}: repeats {[r[1] for r in got]}, want {want}')
    for r in got:
        n = int(r[1])
        need(r[0] == kind and r[1] + r[2] == ordinal(n) and r[4] == str(number),
             f'bad repeat line for the {ordinal(n)} time: {r}')


def load(path):
    return json.load(open(path))


def stamp(sec, nsec):
    t = datetime.datetime.fromtimestamp(sec, datetime.timezone.utc)
    return t.strftime('%Y-%m-%d %H:%M:%S') + '.%03d UTC' % (nsec // 1000000)


# --- checks ------------------------------------------------------------------------------

def loop(c):
    """One bug 100 times under LOCKTRACE_ACTION=edeadlk, through the launcher: one full
    report, 99 one-line repeats with the right ordinals, one file with count 100 and first/
    last time; the launcher's line and the summary file agree; `locktrace report` and SARIF
    show the count."""
    ending, out, err = c.launch('loop', 100, '--action=edeadlk')
    need(ending == 0 and out == 'EDEADLK 100 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock'], f'full reports: {fulls(err)}\n{err[:3000]}')
    check_repeats(err, 'self-deadlock', c.place('BUG-RELOCK'), 1, 2, 100)
    need(all(r[5] == '' for r in repeats(err)), 'a repeat line says more than it should')
    need(len(err.splitlines()) < 40 + 99, f'{len(err.splitlines())} lines of stderr')
    files = c.files()
    need(len(files) == 1 and files[0].endswith('.1.json'), f'report files {files}')
    r = load(files[0])
    need(r['occurrences'] == 100 and re.fullmatch(r'[0-9a-f]{16}', r['signature']), f'count {r.get("occurrences")}')
    first, last = (r['time_sec'], r['time_nsec']), (r['last_time_sec'], r['last_time_nsec'])
    need(first < last, f'first {first} is not before last {last}')
    s = c.summary()
    need(s['reports'] == [{'file': os.path.basename(files[0]), 'kind': 'self-deadlock',
                           'signature': r['signature'], 'occurrences': 100}], f'summary reports {s["reports"]}')
    need(s['distinct'] == {'self-deadlock': 1} and s['counts'] == {'self-deadlock': 100} and
         s['suppressed'] == {}, f'summary {s}')
    line = [l for l in err.splitlines() if re.match(r'locktrace: \d+ reports? \(', l)]
    need(line and line[0].startswith('locktrace: 1 report (1 self-deadlock; 100 occurrences) in '),
         f'launcher line {line}')
    ending, out, rerr = c.report(files[0])
    want = f'  100 occurrences, first {stamp(*first)}, last {stamp(*last)}\n'
    need(ending == 0 and out.startswith('locktrace: self-deadlock:') and out.endswith(want),
         f'locktrace report: {ending} {out[-300:]!r} {rerr}, want the last line {want!r}')
    ending, out, rerr = c.report('--as-recorded', files[0])
    full = err[:err.index('locktrace: self-deadlock: again')]
    need(ending == 0 and out == full + want, 'locktrace report --as-recorded is not the first report + the count')
    ending, out, rerr = c.report('--json', files[0])
    j = json.loads(out) if ending == 0 else {}
    need({k: j.get(k) for k in r if k in ('signature', 'occurrences', 'last_time_sec', 'last_time_nsec')} ==
         {k: r[k] for k in ('signature', 'occurrences', 'last_time_sec', 'last_time_nsec')},
         f'locktrace report --json lost the count: {ending} {rerr}')
    ending, out, rerr = c.report('--html', c.dir)
    need(ending == 0 and out.count(' &middot; 100 occurrences</p>') == 1, f'--html: {ending} {rerr}')
    ending, out, rerr = c.report('--sarif', c.dir)
    results = json.loads(out)['runs'][0]['results'] if ending == 0 else []
    need(len(results) == 1 and results[0]['occurrenceCount'] == 100 and
         results[0]['partialFingerprints'] == {'locktraceSignature/v3': r['signature']},
         f'SARIF: {ending} {rerr} {results and {k: results[0][k] for k in ("occurrenceCount", "partialFingerprints") if k in results[0]}}')


def stable(c):
    """The signature of a bug is the same from one run to the next, and for every thread
    that hits it (on a lock of its own): 4 threads x 25 make one report of 100
    occurrences whose repeat lines count up in order."""
    ending, out, err = c.dedup('threads', 25, LOCKTRACE_ACTION='edeadlk')
    need(ending == 0 and out == 'EDEADLK 100 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock'], f'full reports: {fulls(err)}')
    check_repeats(err, 'self-deadlock', c.place('BUG-RELOCK-OWN'), 1, 2, 100)
    files = c.files()
    need(len(files) == 1 and load(files[0])['occurrences'] == 100, f'files {files}')
    first = load(files[0])['signature']
    c.dir = os.path.join(c.tmp, 'again')
    c.dedup('threads', 3, LOCKTRACE_ACTION='edeadlk')
    need([load(f)['signature'] for f in c.files()] == [first], 'another run, another signature')


def fork(c):
    """A fork child starts with no reports: its first occurrence is its own report 1 and
    file, its repeats count there; the parent's counts are its own. A vfork child's _exit
    writes nothing (the pending counts it sees are the parent's)."""
    ending, out, err = c.launch('fork', None, '--action=edeadlk')
    need(ending == 0 and out.count('EDEADLK') == 2, f'program: {ending} {out!r}')
    # parent: 3 before the fork and 2 after (another call site); child: 5 after
    need(fulls(err) == ['self-deadlock'] * 3, f'full reports: {fulls(err)}')
    by_pid = {}
    for f in c.files():
        r = load(f)
        by_pid.setdefault(r['pid'], []).append(r['occurrences'])
    need(sorted(by_pid.values()) == [[3, 2], [5]], f'counts per process: {by_pid}')
    need(re.search(r'^locktrace: 3 reports \(3 self-deadlock; 10 occurrences\)', err, re.M),
         f'launcher: {err.splitlines()[-1]}')
    c.dir = os.path.join(c.tmp, 'vfork')
    ending, out, err = c.dedup('vfork', 10, LOCKTRACE_ACTION='edeadlk')
    child = re.search(r'child (\d+)', out)
    need(ending == 0 and child, f'vfork: {ending} {out!r}')
    names = os.listdir(c.dir)
    need(not [n for n in names if f'.{child.group(1)}.' in n], f'the vfork child wrote {names}')
    need(len(c.files()) == 1 and load(c.files()[0])['occurrences'] == 10, f'vfork: parent files {names}')


def two_bugs(c):
    """Two different bugs in one loop: two signatures, two files, each repeating."""
    ending, out, err = c.dedup('two-bugs', 30, LOCKTRACE_ACTION='edeadlk')
    need(ending == 0 and out == 'EDEADLK 60 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock', 'self-deadlock'], f'full reports: {fulls(err)}')
    check_repeats(err, 'self-deadlock', c.place('BUG-RELOCK'), 1, 2, 30)
    check_repeats(err, 'self-deadlock', c.place('BUG-UPGRADE'), 2, 2, 30)
    files = c.files()
    need(len(files) == 2, f'report files {files}')
    a, b = load(files[0]), load(files[1])
    need(a['reason'] == 'mutex-relock' and b['reason'] == 'upgrade' and a['occurrences'] == 30 and
         b['occurrences'] == 30 and a['signature'] != b['signature'], 'the two files')
    s = c.summary()
    need(s['distinct'] == {'self-deadlock': 2} and s['counts'] == {'self-deadlock': 60}, f'summary {s}')


def two_sites(c):
    """The same bug reached from two call sites: two signatures; reached through recursion
    of different depths: one."""
    ending, out, err = c.dedup('two-sites', 20, LOCKTRACE_ACTION='edeadlk')
    need(ending == 0 and out == 'EDEADLK 40 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock', 'self-deadlock'], f'full reports: {fulls(err)}')
    numbers = sorted({(r[4], int(r[1])) for r in repeats(err)})
    need([n for n, k in numbers if k == 20] == ['1', '2'], f'repeats per report: {numbers}')
    sites = [l for l in err.splitlines() if re.match(r'    #1 .* in main .*dedup\.c:\d+', l)]
    want = [f'dedup.c:{c.lines["BUG-SITE-1"]}', f'dedup.c:{c.lines["BUG-SITE-2"]}']
    need(all(any(w in l for l in sites) for w in want), f'the two reports do not name the two sites: {sites}')
    files = c.files()
    need(len(files) == 2 and [load(f)['occurrences'] for f in files] == [20, 20], f'files {files}')
    c2 = Ctx(c.a, c.tmp)
    c2.dir = os.path.join(c.tmp, 'recursion')
    ending, out, err = c2.dedup('recursion', 25, LOCKTRACE_ACTION='edeadlk')
    need(ending == 0 and fulls(err) == ['self-deadlock'], f'recursion: {fulls(err)}')
    check_repeats(err, 'self-deadlock', c.place('BUG-RELOCK'), 1, 2, 25)
    need(len(c2.files()) == 1 and load(c2.files()[0])['occurrences'] == 25, 'recursion files')


def lines(c):
    """One helper called from 16 consecutive lines of one function: 16 reports, one per
    line, each repeating."""
    ending, out, err = c.dedup('lines', 5, LOCKTRACE_ACTION='edeadlk')
    need(ending == 0 and out == 'EDEADLK 80 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock'] * 16, f'full reports: {fulls(err)}')
    first = c.lines['BUG-LINES']
    want = [f'dedup.c:{first + i}' for i in range(16)]
    got = [m.group(1) for m in re.finditer(r'^    #2 .* in relock_lines .*(dedup\.c:\d+)', err, re.M)]
    need(sorted(set(got)) == sorted(want), f'the reports name lines {sorted(set(got))}, not {want}')
    last = {}
    for r in repeats(err):
        last[r[4]] = max(last.get(r[4], 0), int(r[1]))
    need(sorted(last.values()) == [5] * 16, f'occurrences per report: {last}')
    need(len(c.files()) == 16, f'files {c.files()}')


def abort_count(c):
    """Under abort, the count in the file is right: 50 unlocks of a mutex not held (the
    program goes on), then a self-deadlock that aborts; the first report's file says 50,
    though the repeats came faster than the file is rewritten."""
    ending, out, err = c.dedup('then-abort', 50)
    need(ending == 'signal:SIGABRT', f'ending {ending}')
    check_repeats(err, 'bad-unlock', c.place('BUG-UNLOCK'), 1, 2, 50)
    files = c.files()
    need(len(files) == 2, f'report files {files}')
    a, b = load(files[0]), load(files[1])
    need(a['kind'] == 'bad-unlock' and a['occurrences'] == 50, f'bad-unlock file: {a["kind"]} x{a["occurrences"]}')
    need(b['kind'] == 'self-deadlock' and b['occurrences'] == 1 and b['outcome'] == 'abort', 'self-deadlock file')
    need(not glob.glob(os.path.join(c.dir, '.*')), 'a temporary file was left behind')
    # the launcher counts the files of a process that left no summary, with their counts
    c.dir = os.path.join(c.tmp, 'launched')
    ending, _, err = c.launch('then-abort', 50)
    need(ending == 'signal:SIGABRT' and re.search(
        r'^locktrace: 2 reports \((1 bad-unlock, 1 self-deadlock|1 self-deadlock, 1 bad-unlock); 51 occurrences\)',
        err, re.M), f'launcher: {ending} {err[-500:]}')


def exit_count(c):
    """_exit and _Exit skip exit handlers; the count in the file is still right."""
    for mode in ('then-_exit', 'then-_Exit'):
        c.dir = os.path.join(c.tmp, mode)
        ending, out, err = c.dedup(mode, 80)
        need(ending == 3 and out == 'EDEADLK 0 times\n', f'{mode}: {ending} {out!r}')
        files = c.files()
        need(len(files) == 1 and load(files[0])['occurrences'] == 80,
             f'{mode}: files {files} {files and load(files[0]).get("occurrences")}')
        need(not glob.glob(os.path.join(c.dir, '*.summary.json')), f'{mode}: a summary without exit()?')


def spaced(c):
    """Repeats further apart than the rewrite interval are in the file at once: a process
    killed outright (SIGKILL, no handler runs) leaves the right count."""
    ending, out, err = c.dedup('spaced', 4)
    need(ending == 'signal:SIGKILL', f'ending {ending}')
    files = c.files()
    need(len(files) == 1 and load(files[0])['occurrences'] == 4,
         f'files {files} {files and load(files[0]).get("occurrences")}')


def cap(c):
    """110 distinct bugs twice: 100 full reports and a note, the 100 printed ones repeat in
    one line each, the other 10 are counted silently; the launcher and the summary count all
    110 reports and 220 occurrences."""
    ending, out, err = c.launch('many-sites')
    need(ending == 0, f'ending {ending}')
    need(fulls(err).count('bad-unlock') == 100, f'{fulls(err).count("bad-unlock")} full reports')
    need(err.count('locktrace: further bad-unlock reports are not printed\n') == 1, 'no note at the cap')
    reps = repeats(err)
    need(len(reps) == 100 and all(r[1] == '2' for r in reps) and
         sorted(int(r[4]) for r in reps) == list(range(1, 101)), f'{len(reps)} repeat lines')
    need(len(c.files()) == 100, f'{len(c.files())} report files')
    s = c.summary()
    need(s['distinct'] == {'bad-unlock': 110} and s['counts'] == {'bad-unlock': 220} and
         len(s['reports']) == 100 and all(r['occurrences'] == 2 for r in s['reports']), f'summary {s}')
    need(re.search(r'^locktrace: 110 reports \(110 bad-unlock; 220 occurrences\) in ', err, re.M),
         f'launcher line: {err.splitlines()[-1]}')


def suppressed(c):
    """A suppressed report is counted, not printed, repeats included, and does not stop
    another from printing; the launcher counts only what was not suppressed, and --exitcode
    ignores suppressed reports."""
    rules = os.path.join(c.tmp, 'rules')
    open(rules, 'w').write('bad-unlock:stray_unlock\n')
    ending, out, err = c.dedup('unlock-relock', 10, LOCKTRACE_ACTION='edeadlk', LOCKTRACE_SUPPRESSIONS=rules)
    need(ending == 0 and out == 'EDEADLK 10 times\n', f'program: {ending} {out!r}')
    need(fulls(err) == ['self-deadlock'] and 'bad-unlock' not in err, f'printed: {fulls(err)}\n{err[:2000]}')
    check_repeats(err, 'self-deadlock', c.place('BUG-RELOCK'), 1, 2, 10)
    s = c.summary()
    need(s['distinct'] == {'self-deadlock': 1} and s['counts'] == {'self-deadlock': 10} and
         s['suppressed'] == {'bad-unlock': 10}, f'summary {s}')
    c.dir = os.path.join(c.tmp, 'all-suppressed')
    ending, out, err = c.launch('unlocks', 10, '--exitcode=9', '--suppressions=' + rules)
    need(ending == 0 and err == '', f'all suppressed: {ending} {err[-500:]}')
    ending, out, err = c.launch('unlocks', 10, '--exitcode=9')
    need(ending == 9 and re.search(r'^locktrace: 1 report \(1 bad-unlock; 10 occurrences\)', err, re.M),
         f'not suppressed: {ending} {err[-500:]}')


CHECKS = {f.__name__: f for f in (loop, stable, fork, two_bugs, two_sites, lines, abort_count, exit_count, spaced, cap,
                                  suppressed)}


def main():
    ap = check_parser(CHECKS)
    ap.add_argument('--locktrace', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--dedup', required=True)
    ap.add_argument('--source', required=True)
    return run_main(CHECKS, ap, ('locktrace', 'lib', 'dedup', 'source'), Ctx)


if __name__ == '__main__':
    sys.exit(main())
