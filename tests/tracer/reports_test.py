#!/usr/bin/env python3
"""Post-mortem report tests: each needs more than one run (the program, then `locktrace
report` on what it left), so they live here rather than in expect.py arguments. Programs
still run through expect.py's run(), under its process-group timeout.

  reports_test.py CHECK --locktrace PATH --lib PATH --scenarios PATH

CHECK is one of the functions named in CHECKS below; tests/tracer/meson.build runs each as
its own test with the issue sentence it checks. Exit 0 on success, 1 with the reasons.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402
from checks import Failed, check_parser, need, run_main  # noqa: E402

TIMEOUT = 20


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.dir = os.path.join(tmp, 'reports')

    def run(self, cmd, env=None, preload=True, cwd=None):
        e = dict(os.environ)
        e.pop('LOCKTRACE_REPORT_DIR', None)
        if preload:
            e['LD_PRELOAD'] = self.a.lib
        e.update(env or {})
        ending, out, err = expect.run(cmd, e, TIMEOUT, cwd or self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def scenario(self, name, **env):
        env.setdefault('LOCKTRACE_REPORT_DIR', self.dir)
        return self.run([self.a.scenarios, name], env)

    def report(self, *files, json_out=False):
        cmd = [self.a.locktrace, 'report'] + (['--json'] if json_out else []) + list(files)
        return self.run(cmd, preload=False)

    def files(self):
        return sorted(glob.glob(os.path.join(self.dir, 'scenarios.*.[0-9]*.json')))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def write_bytes(self, name, data):
        path = os.path.join(self.tmp, 'supp-' + name)
        with open(path, 'wb') as f:
            f.write(data)
        return path


# --- report files ------------------------------------------------------------------------

def json_on_abort(c):
    """'every report is also written as one JSON file per incident ... even when the action
    is abort', with the schema's fields."""
    ending, _, err = c.scenario('rw-read-write')
    need(ending == 'signal:SIGABRT', f'expected an abort, got {ending}')
    files = c.files()
    need(len(files) == 1, f'expected one report file, got {files}')
    need(not glob.glob(os.path.join(c.dir, '.*')), 'a temporary file was left behind')
    r = json.load(open(files[0]))
    need(re.fullmatch(r'scenarios\.%d\.1\.json' % r['pid'], os.path.basename(files[0])),
         'file name is not <program>.<pid>.<n>.json')
    need(r['locktrace_report'] == 1 and r['kind'] == 'self-deadlock' and r['reason'] == 'upgrade'
         and r['outcome'] == 'abort', 'header fields')
    need(r['program'] == os.path.realpath(c.a.scenarios), 'program path')
    need(r['threads'][0]['name'] == 'scenarios' and r['threads'][0]['tid'] == r['pid'], 'thread')
    lock = r['locks'][0]
    need(lock['type'] == 'rwlock' and lock['held_mode'] == 'read' and
         lock['requested_mode'] == 'write' and lock['generation'] >= 1, f'lock fields {lock}')
    roles = [s['role'] for s in r['stacks']]
    need(roles == ['request', 'held', 'first-seen'], f'stack roles {roles}')
    f0 = r['stacks'][0]['frames'][0]
    need(f0['function'] == 'read_then_upgrade' and f0['file'].endswith('scenarios.c'), f'frame {f0}')
    need(f0['module'] == os.path.realpath(c.a.scenarios) and re.fullmatch('[0-9a-f]{40}', f0['build_id'])
         and int(f0['ip'], 16) - int(f0['module_offset'], 16) > 0, f'module fields {f0}')


def unwritable_dir(c):
    """A report directory that cannot be written: said once, the report still printed."""
    ending, _, err = c.scenario('bad-unlock', LOCKTRACE_REPORT_DIR='/proc/locktrace-cannot')
    need(ending == 0 and err.startswith('locktrace: bad-unlock:') and
         re.search(r'^locktrace: cannot write report files into /proc/locktrace-cannot '
                   r'\(LOCKTRACE_REPORT_DIR: no such directory\); reports go to stderr only$',
                   err, re.M), err)


def summary_at_exit(c):
    """'At exit in report-and-continue mode, a summary file lists every incident.'"""
    ending, _, _ = c.scenario('bad-unlock')
    need(ending == 0, f'ending {ending}')
    summaries = glob.glob(os.path.join(c.dir, '*.summary.json'))
    need(len(summaries) == 1, f'summary files {summaries}')
    s = json.load(open(summaries[0]))
    files = [os.path.basename(f) for f in c.files()]
    need([i['file'] for i in s['reports']] == files, f'summary lists {s["reports"]}, dir has {files}')
    need(s['reports'][0]['kind'] == 'bad-unlock' and s['counts'] == {'bad-unlock': 1}, f'summary {s}')


def exec_image(c):
    """A program that reports, then execs itself (the pid stays) and reports again: each
    image's report has a file of its own, the later one named by its image number, and the
    launcher's line and `locktrace report` count both (until 2026-12-06 the second image's
    file replaced the first's, and its summary hid what was left: 1 report, one on stderr
    without a file)."""
    ending, _, err = c.run([c.a.locktrace, '--report-dir', c.dir, '--', c.a.scenarios,
                            'bad-unlock-exec'], preload=False)
    need(ending == 0, f'ending {ending}: {err}')
    names = sorted(os.listdir(c.dir))
    pid = names[0].split('.')[1] if names else '?'
    want = [f'scenarios.{pid}.1.json', f'scenarios.{pid}.image2.1.json',
            f'scenarios.{pid}.image2.summary.json']
    need(names == want, f'files {names}, want {want}')
    first, second = (json.load(open(os.path.join(c.dir, n))) for n in want[:2])
    need(first['pid'] == second['pid'] and 'image' not in first and second['image'] == 2,
         f'pids and images {first["pid"]} {first.get("image")} {second["pid"]} {second.get("image")}')
    s = json.load(open(os.path.join(c.dir, want[2])))
    need(s['image'] == 2 and [r['file'] for r in s['reports']] == [want[1]], f'summary {s}')
    need(re.search(r'^locktrace: 2 reports \(2 bad-unlock; 2 occurrences\) in ', err, re.M)
         and 'no file' not in err, f'launcher line: {err}')
    ending, out, err = c.report(c.dir)
    need(ending == 0 and len(re.findall(r'^locktrace: bad-unlock: ', out, re.M)) == 2,
         f'locktrace report: {ending} {out} {err}')


def exitcode(c):
    """'LOCKTRACE_EXITCODE=<n> makes a program that produced reports exit with n (default:
    unchanged)', keeping the program's output."""
    ending, out, _ = c.scenario('bad-unlock', LOCKTRACE_EXITCODE='3')
    need(ending == 3, f'with reports: ending {ending}')
    need(out == 'unlock -> 0\n' or out.endswith('\n'), f'stdout lost: {out!r}')
    ending, _, _ = c.scenario('rw-read-read', LOCKTRACE_EXITCODE='3')
    need(ending == 0, f'clean program: ending {ending}')
    ending, _, err = c.scenario('bad-unlock', LOCKTRACE_EXITCODE='300')
    need(ending == 2 and 'bad value for LOCKTRACE_EXITCODE' in err, f'bad value: {ending} {err}')


# --- locktrace report ----------------------------------------------------------------------

def render_same_text(c):
    """'Renders one or more JSON reports as the same text the program printed', with
    file:line, after the program has exited: byte for byte as recorded; re-symbolized, the
    same lines except frames, which gain the calls inlined at each address."""
    _, _, err = c.scenario('exit-held')
    # The thread dump that follows an aborting report is printed, not part of the report.
    err = re.sub(r'^locktrace: thread-dump:.*\n(?:  .*\n)*', '', err, flags=re.M)
    ending, out, rerr = c.report('--as-recorded', *c.files())
    need(ending == 0, f'locktrace report: {ending} {rerr}')
    need(out == err, f'rendered text differs from what the program printed:\n{out}\n---\n{err}')
    ending, out, rerr = c.report(*c.files())
    frame = re.compile(r'^    #\d+ ')
    need([l for l in out.splitlines() if not frame.match(l)] ==
         [l for l in err.splitlines() if not frame.match(l)], f'non-frame lines differ:\n{out}')
    need(re.search(r'in exit_holding \S*scenarios\.c:\d+', out), 'no file:line')


def resymbolize(c):
    """'re-symbolizing from the binaries on disk with file:line ... through DWARF'."""
    c.scenario('rw-read-write')
    r = json.load(open(c.files()[0]))
    for s in r['stacks']:
        for f in s['frames']:
            f['function'] = f['file'] = None
            f['line'] = 0
    ending, out, err = c.report(c.write('stripped.json', json.dumps(r)))
    need(ending == 0, f'{ending} {err}')
    need(re.search(r'#0 0x[0-9a-f]+ in read_then_upgrade \S*scenarios\.c:\d+', out), f'not re-symbolized:\n{out}')


def inlined_cpp(c):
    """'with file:line and inlined frames through DWARF ...; C++ names demangled': the
    std::shared_mutex calls inlined into the program's function each get a frame."""
    ending, _, _ = c.run([c.a.scenarios_cpp, 'shared-write-read'], {'LOCKTRACE_REPORT_DIR': c.dir})
    need(ending == 'signal:SIGABRT', f'ending {ending}')
    ending, out, err = c.report(*glob.glob(os.path.join(c.dir, 'scenarios_cpp.*.1.json')))
    need(ending == 0, err)
    need(re.search(r'request \(this call\):\n(    #\d+ .* in \(inlined\) .*\n)*'
                   r'    #\d+ 0x\w+ in \(inlined\) std::shared_mutex::lock_shared\(\) \S*shared_mutex:\d+ .*\n'
                   r'    #\d+ 0x\w+ in cxx_write_then_read\(\) \S*scenarios_cpp\.cpp:\d+', out),
         f'no inlined, demangled frames:\n{out}')


def build_id_mismatch(c):
    """'checking build-ids so a rebuilt binary is never used to explain an old report (it
    says so instead)'."""
    c.scenario('rw-read-write')
    r = json.load(open(c.files()[0]))
    for s in r['stacks']:
        for f in s['frames']:
            if f['module'] == os.path.realpath(c.a.scenarios):
                f['build_id'] = '00' * 20
                f['function'] = 'name_from_the_report'
    ending, out, err = c.report(c.write('old.json', json.dumps(r)))
    need(ending == 0, f'{ending} {err}')
    need(re.search(r'old\.json: note: \S*scenarios was rebuilt since the report \(build-id 0+ then, '
                   r'[0-9a-f]+ now\)', err), f'no rebuilt note: {err}')
    need('read_then_upgrade' not in out and 'name_from_the_report' in out, 'the rebuilt binary was used')


def bad_files(c):
    """'A truncated, corrupt, wrong-version or hostile file gets a clear error naming the
    file and the problem, never a crash' (and the good files are still printed)."""
    c.scenario('rw-read-write')
    good = c.files()[0]
    text = open(good).read()
    cases = {
        'truncated.json': (text[:len(text) // 2], r'truncated\.json: line \d+, column \d+: unexpected end .*\(truncated\?\)'),
        'version.json': (text.replace('"locktrace_report":1', '"locktrace_report":7'),
                         r'version\.json: locktrace_report: report format version 7; this locktrace reads version 1'),
        'kind.json': (text.replace('"self-deadlock"', '"space-invaders"'),
                      r'kind\.json: kind: unknown value "space-invaders"'),
        'index.json': (text.replace('"lock":0', '"lock":99', 1), r'index\.json: stacks\[\d\]\.lock: 99 is out of range'),
        'deep.json': ('[' * 100000, r'deep\.json: line 1, column \d+: nested more than 64 deep'),
        'notjson.json': ('\x7fELF\x00\x01', r'notjson\.json: line 1, column 1: unexpected byte 0x7f \(not JSON text'),
    }
    paths = [c.write(name, body) for name, (body, _) in cases.items()]
    ending, out, err = c.report(good, *paths, os.path.join(c.tmp, 'missing.json'))
    need(ending == 1, f'exit status {ending}')
    need(out.startswith('locktrace: self-deadlock:'), 'the good file was not printed')
    for name, (_, pattern) in cases.items():
        need(re.search(pattern, err), f'{name}: no /{pattern}/ in:\n{err}')
    need(re.search(r'missing\.json: No such file', err), 'missing file')
    r = json.loads(text)
    os.mkfifo(os.path.join(c.tmp, 'fifo'))
    r['stacks'][0]['frames'][0]['module'] = os.path.join(c.tmp, 'fifo')
    r['threads'][0]['name'] = '\x1b[2J\nlocktrace: forged'
    ending, out, err = c.report(c.write('hostile.json', json.dumps(r)))
    need(ending == 0 and '"?[2J?locktrace: forged"' in out and '\x1b' not in out,
         f'control characters reach the terminal: {out!r}')
    need(re.search(r'fifo is not a regular file', err), f'a FIFO named as module: {err}')


def json_round_trip(c):
    """'--json re-emits normalized JSON': reading it back gives the same document."""
    c.scenario('annotated')
    ending, out, err = c.report('--json', c.files()[0])
    need(ending == 0, err)
    again = c.write('again.json', out)
    ending, out2, err = c.report('--json', again)
    need(ending == 0 and out2 == out, 'normalized JSON is not stable')
    need(json.loads(out)['locks'][0]['annotation'].startswith('test storage'), 'annotation lost')


def free_held(c):
    """'A new finding, free-held ... Report with the free's stack, the holder and where it took
    the lock': written as a file with the released block as the lock's name, printed back by
    `locktrace report` as the program printed it, and stable through --json."""
    d = os.path.join(c.tmp, 'free-held')
    ending, _, err = c.run([c.a.lifetime, 'free-held-other'], {'LOCKTRACE_REPORT_DIR': d})
    need(ending == 0, f'lifetime free-held-other: {ending}')
    files = sorted(glob.glob(os.path.join(d, '*.[0-9]*.[0-9]*.json')))
    need(len(files) == 1, f'report files {files}')
    r = json.load(open(files[0]))
    need(r['kind'] == 'free-held' and r['reason'] == 'freed' and r['outcome'] == 'continue',
         f'{r["kind"]} {r["reason"]} {r["outcome"]}')
    need(re.fullmatch(r'heap block 0x[0-9a-f]+ \(88 bytes\), offset 8', r['locks'][0]['name'] or ''),
         f'name {r["locks"][0]["name"]}')
    roles = {s['role']: s for s in r['stacks']}
    need('free' in roles and 'holder' in roles, f'roles {list(roles)}')
    need(r['threads'][roles['holder']['thread']]['seq'] == 1 and not r['threads'][1]['gone'],
         f'holder {r["threads"]}')
    ending, out, rerr = c.report('--as-recorded', files[0])
    need(ending == 0 and out == err, f'rendered differently:\n{out}\n---\n{err}{rerr}')
    ending, out, rerr = c.report('--as-recorded', '--json', files[0])
    again = c.write('again.json', out)
    ending2, out2, _ = c.report('--as-recorded', '--json', again)
    need(ending == 0 and ending2 == 0 and out2 == out, f'normalized JSON is not stable {rerr}')


def bad_unlock_holder(c):
    """A bad unlock names who holds the lock and where it took it, as a free-held report does:
    a live holder (threads[1], its `holder` stack, the lock's held_mode its hold), one gone
    holding it (threads[1] `gone`), nobody (held_mode `none`, no holder); `locktrace report`
    prints each back as the program printed it."""
    want = {'held': (False, 'write', '  held for lock by T1 \\(tid \\d+\\) "holder", taken at:\n'
                                     '    #0 .* in hold_handed '),
            'gone': (True, 'write', '  held by T1 \\(tid \\d+\\) "holder", which is gone \\(it exited\\)\n'
                                    '  it took the lock at:\n    #0 .* in hold_handed '),
            '': (None, 'none', '  held by no thread \\(none took it since its last release')}
    for how, (gone, mode, text) in want.items():
        c.dir = os.path.join(c.tmp, 'bad-unlock-' + (how or 'none'))
        ending, out, err = c.scenario('bad-unlock-' + how if how else 'bad-unlock')
        need(ending == 0 and out == 'unlock -> 0\n', f'{how}: {ending} {out!r}')
        files = [f for f in c.files() if json.load(open(f))['kind'] == 'bad-unlock']
        need(len(files) == 1, f'{how}: report files {c.files()}')
        r = json.load(open(files[0]))
        holder = [s for s in r['stacks'] if s['role'] == 'holder']
        need(r['locks'][0]['held_mode'] == mode, f'{how}: held_mode {r["locks"][0]["held_mode"]}')
        if gone is None:
            need(not holder and len(r['threads']) == 1, f'{how}: {r["threads"]} {holder}')
        else:
            need(len(holder) == 1 and holder[0]['thread'] == 1 and
                 holder[0]['frames'][0]['function'] == 'hold_handed', f'{how}: holder {holder}')
            need(r['threads'][1]['seq'] == 1 and r['threads'][1]['gone'] == gone,
                 f'{how}: threads {r["threads"]}')
        need(re.search(text, err), f'{how}: text lacks {text!r}:\n{err}')
        ending, again, rerr = c.report('--as-recorded', files[0])
        need(ending == 0 and again in err, f'{how}: rendered differently:\n{again}\n---\n{err}{rerr}')


# --- suppressions --------------------------------------------------------------------------

def cross_kinds(c):
    """The cross-thread kinds go through the same model: each is written as a JSON file,
    `locktrace report` prints it back as the text the program printed, a suppression rule
    hides it and LOCKTRACE_EXITCODE counts it."""
    runs = [('lock-order-inversion', [c.a.cross_order, 'cycle-2'], {}),
            ('deadlock', [c.a.cross_deadlock, 'mutex-2'], {'LOCKTRACE_ACTION': 'edeadlk'}),
            ('deadlock', [c.a.cross_deadlock, 'cond'], {}),
            ('long-wait', [c.a.cross_deadlock, 'long-wait'], {'LOCKTRACE_WAIT_TIMEOUT': '1'})]
    for n, (kind, cmd, env) in enumerate(runs):
        d = os.path.join(c.tmp, f'cross{n}')
        ending, _, err = c.run(cmd, dict(env, LOCKTRACE_REPORT_DIR=d, LOCKTRACE_EXITCODE='3'))
        need(ending == 3, f'{cmd}: LOCKTRACE_EXITCODE not applied: {ending}')
        files = sorted(glob.glob(os.path.join(d, '*.[0-9]*.[0-9]*.json')))
        need(len(files) == 1, f'{cmd}: report files {files}')
        r = json.load(open(files[0]))
        need(r['kind'] == kind and r['steps'], f'{cmd}: kind {r["kind"]}, steps {r.get("steps")}')
        reason = {'deadlock': 'wait-cycle', 'lock-order-inversion': 'order-cycle',
                  'long-wait': 'wait-timeout'}[kind]
        need(r['reason'] == reason, f'{cmd}: reason {r["reason"]}')
        ending, out, rerr = c.report('--as-recorded', files[0])
        need(ending == 0 and out == err, f'{cmd}: rendered differently:\n{out}\n---\n{err}{rerr}')
        ending, out, rerr = c.report(files[0])
        need(ending == 0 and re.search(f'^locktrace: {kind}: ', out), f'{cmd}: re-symbolized: {rerr}')
    rules = c.write('supp', 'lock-order-inversion:take_pair\n')
    d = os.path.join(c.tmp, 'cross-supp')
    ending, _, err = c.run([c.a.cross_order, 'cycle-2'],
                           {'LOCKTRACE_SUPPRESSIONS': rules, 'LOCKTRACE_REPORT_DIR': d})
    need(ending == 0 and 'locktrace:' not in err, f'not suppressed: {err}')
    s = json.load(open(glob.glob(os.path.join(d, '*.summary.json'))[0]))
    need(s['suppressed'] == {'lock-order-inversion': 1}, f'summary {s}')


def predicted(c):
    """Predicted inversions (LOCKTRACE_CLASSES) go through the same model: a JSON file whose
    locks carry their classes, rendered back as the text the program printed; an instance
    that came and went at one address stays another lock (its generation)."""
    for n, (scenario, reason, steps) in enumerate([('cycle-2', 'class-cycle', 2),
                                                   ('cycle-3', 'class-cycle', 3),
                                                   ('nest-both', 'class-nesting', 2),
                                                   ('nest-declared', 'class-declared-order', 1),
                                                   ('reuse', 'class-cycle', 2)]):
        d = os.path.join(c.tmp, f'predicted{n}')
        ending, _, err = c.run([c.a.classes, scenario],
                               {'LOCKTRACE_CLASSES': 'annotated', 'LOCKTRACE_REPORT_DIR': d})
        need(ending == 0, f'{scenario}: exit {ending}: {err}')
        files = sorted(glob.glob(os.path.join(d, '*.[0-9]*.[0-9]*.json')))
        need(len(files) == 1, f'{scenario}: report files {files}')
        r = json.load(open(files[0]))
        need(r['kind'] == 'lock-order-inversion' and r['reason'] == reason and
             r['outcome'] == 'continue' and len(r['steps']) == steps,
             f'{scenario}: {r["kind"]} {r["reason"]} {r["outcome"]} {len(r["steps"])} steps')
        need(len(r['locks']) == 2 * steps and all(l['class'] in 'ABCS' for l in r['locks']),
             f'{scenario}: locks {r["locks"]}')
        if scenario == 'reuse':  # two addresses, each with two generations
            need(len({(l['address'], l['generation']) for l in r['locks']}) == 4 and
                 len({l['address'] for l in r['locks']}) == 2, f'reuse: locks {r["locks"]}')
        ending, out, rerr = c.report('--as-recorded', files[0])
        need(ending == 0 and out == err, f'{scenario}: rendered differently:\n{out}\n---\n{err}{rerr}')
        ending, out, rerr = c.report(files[0])
        need(ending == 0 and re.search(r'^locktrace: lock-order-inversion: predicted \(classes ', out),
             f'{scenario}: re-symbolized: {rerr}')


def suppress(c):
    """'A suppressed finding is counted, not printed' for function, module and source-file
    patterns with '*'."""
    for pattern in ('unlock_not_*', '*scenarios', 'scenarios.c', '*/tracer/scenarios.c'):
        rules = c.write('supp', f'# known\n\n  bad-unlock : {pattern}\n')
        ending, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
        need(ending == 0 and 'locktrace:' not in err, f'{pattern}: not suppressed: {err}')
    s = json.load(open(glob.glob(os.path.join(c.dir, '*.summary.json'))[-1]))
    need(s['suppressed'] == {'bad-unlock': 1} and s['reports'] == [], f'summary {s}')
    rules = c.write('supp', 'self-deadlock:unlock_not_held\nbad-unlock:nothing_like_it*\n')
    _, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    need('locktrace: bad-unlock:' in err, 'a rule for another kind or function suppressed it')
    # the README's form, a comment after the rule (its pattern was "unlock_not_*   # a
    # function", matching nothing); a '#' with no blank before it is the pattern's own
    rules = c.write('supp', 'bad-unlock:unlock_not_*          # a function\n')
    ending, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    need(ending == 0 and 'locktrace:' not in err, f'a rule with a comment after it: not suppressed: {err}')
    rules = c.write('supp', 'bad-unlock:unlock_not_*#1\n')
    _, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    need('locktrace: bad-unlock:' in err, 'a pattern was cut at its own #')


def suppress_errors(c):
    """'a malformed line is an error naming file and line'; an unreadable file too."""
    rules = c.write('supp', '# fine\nbad-unlock:x\nno colon here\n')
    ending, out, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    need(ending == 2 and out == '', f'ending {ending}')
    need(re.search(r'LOCKTRACE_SUPPRESSIONS: \S*/supp:3: expected <kind>:<pattern>, got: no colon here', err), err)
    rules = c.write('supp', 'deadlocks:x\n')
    _, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=rules)
    need(re.search(r'supp:1: unknown report kind: deadlocks', err), err)
    ending, _, err = c.scenario('bad-unlock', LOCKTRACE_SUPPRESSIONS=os.path.join(c.tmp, 'nope'))
    need(ending == 2 and re.search(r'nope: cannot read the file: No such file', err), err)



def suppress_shown(c):
    """A binary suppressions file or a bad LOCKTRACE_* value is named in the error with each
    byte a terminal would act on as \\xNN: escape sequences (a title, colours, a cleared
    screen), NUL and bytes that are no UTF-8 never reach the terminal as they are."""
    cases = [
        ({'LOCKTRACE_SUPPRESSIONS': c.write('supp', '# rules\n')}, None),
        ({'LOCKTRACE_SUPPRESSIONS': c.write_bytes('esc', b'# rules\n\x1b]0;owned\x07\x1b[31mdeadlock\xff:x\n')},
         r"supp-esc:2: unknown report kind: \x1b]0;owned\x07\x1b[31mdeadlock\xff (the kinds: "),
        ({'LOCKTRACE_SUPPRESSIONS': c.write_bytes('nul', b'bad-unlock:x\n\x1b[2J\x00\xff:y\n')},
         r"supp-nul:2: a NUL byte in the line: \x1b[2J\x00\xff:y" "\n"),
        ({'LOCKTRACE_ACTION': os.fsdecode(b'\x1b[31mred\xff\xc2\x9b')},
         r"bad value for LOCKTRACE_ACTION: '\x1b[31mred\xff\xc2\x9b'; accepted values: "),
        ({'LOCKTRACE_WRAPPERS': os.fsdecode(b'lock_*,\x1b[1m,,')},
         r"bad value for LOCKTRACE_WRAPPERS: 'lock_*,\x1b[1m,,': an empty pattern"),
        ({os.fsdecode(b'LOCKTRACE_\x1b[1mX'): '1'},
         r"unknown variable LOCKTRACE_\x1b[1mX; LOCKTRACE_HELP"),
        ({'LOCKTRACE_ACTION': 'caf\u00e9'}, "bad value for LOCKTRACE_ACTION: 'caf\u00e9'; "),
    ]
    for env, want in cases:
        ending, out, err = c.scenario('bad-unlock', **env)
        if want is None:
            need(ending == 0 and 'locktrace: bad-unlock:' in err, f'a plain file: {ending} {out!r} {err!r}')
            continue
        need(ending == 2 and out == '', f'{env}: ending {ending}, stdout {out!r}')
        need(want in err, f'{env}: want {want!r} in {err!r}')
        need('\x1b' not in err and '\ufffd' not in err and '\x00' not in err and '\x9b' not in err,
             f'{env}: raw bytes reached stderr: {err!r}')

# --- the launcher --------------------------------------------------------------------------

def launcher(c):
    """The launcher: default ./locktrace-reports/, options mirror the variables, one summary
    line only when there are reports, the program's status passes through."""
    ending, out, err = c.run([c.a.locktrace, '--', c.a.scenarios, 'bad-unlock'], preload=False)
    need(ending == 0, f'ending {ending}')
    need(re.search(r'^locktrace: 1 report \(1 bad-unlock; 1 occurrence\) in %s/locktrace-reports/' % re.escape(c.tmp),
                   err, re.M), f'no summary line: {err}')
    need(len(glob.glob(os.path.join(c.tmp, 'locktrace-reports', 'scenarios.*.1.json'))) == 1, 'no file')
    # a report another launcher's program writes meanwhile into the same directory is not counted
    foreign = json.load(open(glob.glob(os.path.join(c.tmp, 'locktrace-reports', 'scenarios.*.1.json'))[0]))
    foreign['launcher_pid'] = 1
    shared = os.path.join(c.tmp, 'locktrace-reports')
    c.write('foreign.json', json.dumps(foreign))
    script = f'cp {c.tmp}/foreign.json {shared}/other.1.1.json && exec {c.a.scenarios} bad-unlock'
    ending, _, err = c.run([c.a.locktrace, '--', 'sh', '-c', script], preload=False)
    need(ending == 0 and re.search(r'^locktrace: 1 report \(1 bad-unlock; 1 occurrence\)', err, re.M), f'shared dir: {err}')
    ending, _, err = c.run([c.a.locktrace, '--exitcode=4', '--report-dir', c.dir, c.a.scenarios,
                            'bad-unlock'], preload=False)
    need(ending == 4 and os.path.isdir(c.dir) and c.dir in err, f'options: {ending} {err}')
    off = os.path.join(c.tmp, 'off')
    os.mkdir(off)
    ending, _, err = c.run([c.a.locktrace, '--report-dir=', c.a.scenarios, 'bad-unlock'],
                           preload=False, cwd=off)
    need(ending == 0 and os.listdir(off) == [] and 'report (' not in err, f'--report-dir=: {err}')
    ending, out, err = c.run([c.a.locktrace, c.a.scenarios, 'rw-read-read'], preload=False)
    need(ending == 0 and err == '' and out == 'rdlock -> 0\n', f'clean run changed: {ending} {out!r} {err!r}')
    ending, _, err = c.run([c.a.locktrace, '--frobnicate', 'x', c.a.scenarios], preload=False)
    need(ending == 2 and 'unknown option --frobnicate' in err, err)
    ending, out, _ = c.run([c.a.locktrace, '--help'], preload=False)
    for opt in ('--action=', '--report-dir=', '--exitcode=', '--suppressions=', '--stacks=', '--stack-depth='):
        need(opt in out, f'--help lacks {opt}')
    ending, out, _ = c.run([c.a.locktrace, '--version'], preload=False)
    need(re.fullmatch(r'locktrace \d+\.\d+\.\d+ \(report format version 1\)\n', out), out)


# --- linking the tracer in -----------------------------------------------------------------

def linked_pkgconfig(c):
    """'pkg-config --libs locktrace ... puts liblocktrace ahead of libc so it is active
    without any environment variable' (the uninstalled .pc meson writes beside the build)."""
    env = dict(os.environ, PKG_CONFIG_PATH=c.a.pc_dir)
    flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'locktrace-uninstalled'], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    need('-llocktrace' in flags and flags.index('-Wl,--push-state,--no-as-needed') <
         flags.index('-llocktrace'), f'pkg-config flags {flags}')
    exe = os.path.join(c.tmp, 'linked')
    subprocess.run([c.a.cc, '-g', '-O1', '-rdynamic', c.a.source, '-o', exe] + flags + ['-pthread'],
                   check=True)
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[(\S+)\]',
                        subprocess.run(['readelf', '-d', exe], capture_output=True, text=True).stdout)
    need(needed and needed[0] == 'liblocktrace.so' and needed.index('liblocktrace.so') <
         needed.index('libc.so.6'), f'NEEDED order {needed}')
    libdir = os.path.dirname(c.a.lib)
    ending, _, err = c.run([exe, 'rw-read-write'], env={'LD_LIBRARY_PATH': libdir}, preload=False)
    need(ending == 'signal:SIGABRT' and re.search(r'^locktrace: self-deadlock:', err, re.M) and
         'in read_then_upgrade' in err, f'not traced when linked in: {ending} {err}')


# --- strings that are not UTF-8 ------------------------------------------------------------

def raw_bytes(c):
    """Every report file is valid JSON whatever bytes its strings had: rawbytes.c, built from
    a file named with bytes that are not UTF-8 into a directory named with such bytes, names
    its thread, its lock's annotation and a function's symbol with them and with a control
    character. They arrive as U+FFFD and the control character itself; `locktrace report`
    renders the files as text, JSON (valid), SARIF (valid) and HTML (UTF-8)."""
    here = os.path.dirname(os.path.abspath(__file__))
    where = os.path.join(c.tmp, os.fsdecode(b'dir-\xff\xfe'))
    os.mkdir(where)
    src = os.path.join(where, os.fsdecode(b'src-\xff.c'))
    shutil.copy(os.path.join(here, 'rawbytes.c'), src)
    exe = os.path.join(where, os.fsdecode(b'prog-\xfe'))
    subprocess.run([c.a.cc, '-g', '-O1', '-rdynamic', '-I', os.path.join(here, '..', '..', 'tracer', 'include'),
                    src, '-o', exe, '-pthread'], check=True)
    ending, out, err = c.run([exe], env={'LOCKTRACE_REPORT_DIR': c.dir})
    need(ending == 0 and out == 'relock -> EDEADLK\n' and 'locktrace: self-deadlock:' in err,
         f'{ending} {out!r}\n{err}')
    files = sorted(glob.glob(os.path.join(c.dir, '*.json')))
    need(len(files) == 2, f'want a report and a summary: {files}')
    docs = {}
    for f in files:
        try:
            docs[f] = json.loads(open(f, 'rb').read())
        except ValueError as e:
            raise Failed(f'{f!r} is not valid JSON: {e}')
    rep = next(d for d in docs.values() if 'locktrace_report' in d)
    frames = [fr for s in rep['stacks'] for fr in s['frames']]
    fffd = '\ufffd'
    need(rep['threads'][0]['name'] == f't{fffd}{fffd}\x01x', f'thread name {rep["threads"][0]["name"]!r}')
    need(rep['locks'][0]['annotation'] == f'cache {fffd}{fffd} of {fffd}( bytes\x01 \u20ac',
         f'annotation {rep["locks"][0]["annotation"]!r}')
    need(rep['program'].endswith(f'/dir-{fffd}{fffd}/prog-{fffd}'), f'program {rep["program"]!r}')
    need(any(fr['function'] == f'relock_{fffd}{fffd}' and (fr['file'] or '').endswith(f'/src-{fffd}.c')
             for fr in frames), f'no frame in relock_<ff><fe> src-<ff>.c: {frames}')
    ending, text, err = c.report(c.dir)
    need(ending == 0 and 'self-deadlock' in text and f'relock_{fffd}{fffd}' in text,
         f'locktrace report: {ending}\n{text}\n{err}')
    for fmt in ('--json', '--sarif', '--html'):
        p = subprocess.run([c.a.locktrace, 'report', fmt, c.dir], capture_output=True, timeout=TIMEOUT)
        need(p.returncode == 0, f'locktrace report {fmt}: {p.returncode}\n{p.stderr!r}')
        try:
            out = p.stdout.decode('utf-8')
            if fmt != '--html':
                json.loads(out)
        except ValueError as e:
            raise Failed(f'locktrace report {fmt}: not valid: {e}')
        need(f'relock_{fffd}{fffd}' in out or f'relock_\\ufffd\\ufffd' in out,
             f'locktrace report {fmt} does not name relock_<U+FFFD><U+FFFD>')


CHECKS = {f.__name__: f for f in (json_on_abort, unwritable_dir, summary_at_exit, exec_image, exitcode, render_same_text,
                                   resymbolize, build_id_mismatch, bad_files, json_round_trip,
                                   cross_kinds, suppress, suppress_errors, launcher, linked_pkgconfig,
                                   inlined_cpp, free_held, predicted, raw_bytes, suppress_shown,
                                   bad_unlock_holder)}


def main():
    p = check_parser(CHECKS)
    p.add_argument('--locktrace', required=True)
    p.add_argument('--lib', required=True)
    p.add_argument('--scenarios', required=True)
    p.add_argument('--scenarios-cpp', help='scenarios_cpp, for inlined_cpp')
    p.add_argument('--cross-deadlock', help='cross_deadlock, for cross_kinds')
    p.add_argument('--cross-order', help='cross_order, for cross_kinds')
    p.add_argument('--lifetime', help='lifetime, for free_held')
    p.add_argument('--classes', help='classes, for predicted')
    p.add_argument('--pc-dir', help='where meson wrote locktrace-uninstalled.pc')
    p.add_argument('--cc', help='the C compiler, for linked_pkgconfig')
    p.add_argument('--source', help='scenarios.c, for linked_pkgconfig')
    return run_main(CHECKS, p, ('locktrace', 'lib', 'scenarios', 'scenarios_cpp', 'cross_deadlock',
                                'cross_order', 'lifetime', 'classes'), Ctx)


if __name__ == '__main__':
    sys.exit(main())
