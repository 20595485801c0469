#!/usr/bin/env python3
"""The `locktrace` command as someone trying it cold meets it: its help and man page, bad
options and variables, programs it cannot trace, report files given in any order.

  tool_test.py CHECK --locktrace PATH --prog PATH --man PATH [--demo PATH --readme PATH]

--prog is tests/tracer/scenarios (its 'bad-unlock' writes one report and exits 0). Each CHECK
is one meson test; it exits 0 on success, 1 with the reasons, 77 to skip.
"""
import glob
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402
from checks import Failed, Skipped, check_parser, need, run_main  # noqa: E402

NOT_LOADED = 'did not load'


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.dir = os.path.join(tmp, 'reports')

    def run(self, cmd, env=None, cwd=None):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith('LOCKTRACE_') and k != 'LD_PRELOAD'}
        e.update(env or {})
        ending, out, err = expect.run(cmd, e, 30, cwd or self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def launch(self, *args, env=None):
        return self.run([self.a.locktrace] + list(args), env)


def bad_configuration(c):
    """A bad option value, a misspelt variable, a bad wrapper list or suppressions file and
    LOCKTRACE_HELP end the program before main: the launcher passes the tracer's status on (2,
    or 0 for the help) and does not claim the tracer never loaded or the program ran untraced."""
    cases = [(['--action=bogus'], {}, 2,
              r"bad value for --action \(LOCKTRACE_ACTION\): 'bogus'"),
             (['--stack-depth', '2'], {}, 2,
              r"bad value for --stack-depth \(LOCKTRACE_STACK_DEPTH\): '2'"),
             (['--wait-timeout=abc'], {}, 2,
              r"bad value for --wait-timeout \(LOCKTRACE_WAIT_TIMEOUT\): 'abc'; accepted values"),
             ([], {'LOCKTRACE_ACTON': 'abort'}, 2, r'unknown variable LOCKTRACE_ACTON'),
             # no option sets it: --help is the launcher's own
             ([], {'LOCKTRACE_HELP': 'maybe'}, 2, r"^locktrace: bad value for LOCKTRACE_HELP: 'maybe'"),
             (['--wrappers=a,,b'], {}, 2,
              r"bad value for --wrappers \(LOCKTRACE_WRAPPERS\): 'a,,b'"),
             (['--suppressions=/nonexistent'], {}, 2,
              r'--suppressions \(LOCKTRACE_SUPPRESSIONS\): /nonexistent: cannot read the file'),
             ([], {'LOCKTRACE_HELP': '1'}, 0, r'^LOCKTRACE_ACTION=abort\|edeadlk')]
    for opts, env, status, said in cases:
        ending, out, err = c.launch(*opts, '--report-dir=' + c.dir, '--', c.a.prog,
                                    'bad-unlock', env=env)
        what = f'{opts} {env}: {ending}\n{err}'
        need(ending == status, 'status ' + what)
        need(re.search(said, err, re.M), 'message ' + what)
        need(NOT_LOADED not in err and 'untraced' not in err, 'launcher claim ' + what)
        need('bad-unlock' not in err, 'the program ran: ' + what)
    # An unknown kind in a suppressions file lists the kinds (a typo had to be mended from
    # the README).
    supp = os.path.join(c.tmp, 'typo.supp')
    with open(supp, 'w') as f:
        f.write('# the vendor library\nbad_unlock:libvendor*\n')
    ending, out, err = c.launch('--suppressions=' + supp, '--', c.a.prog, 'bad-unlock')
    need(ending == 2 and f'{supp}:2: unknown report kind: bad_unlock (the kinds: self-deadlock, '
         'bad-unlock, destroy-held, exit-held, free-held, condvar-misuse, use-after-destroy, '
         'barrier-misuse, deadlock, lock-order-inversion, long-wait)\n' in err,
         f'unknown kind: {ending} {err}')
    # Without the launcher there is no option to name: the variable alone.
    ending, out, err = c.run([c.a.prog, 'bad-unlock'],
                             {'LD_PRELOAD': os.path.join(os.path.dirname(os.path.abspath(
                                 c.a.locktrace)), 'liblocktrace.so'),
                              'LOCKTRACE_WAIT_TIMEOUT': 'abc'})
    need(ending == 2 and "locktrace: bad value for LOCKTRACE_WAIT_TIMEOUT: 'abc'" in err,
         f'LD_PRELOAD: {ending} {err}')


def relative_paths(c):
    """A relative --suppressions file is read from the launcher's directory by every process
    of the tree, also by one that changed directory first (a test script's "cd sub && ./t",
    ctest's per-test directories): it stopped each of them with status 2, "cannot read the
    file". With LD_PRELOAD alone, the message names the directory it was looked for in."""
    os.mkdir(os.path.join(c.tmp, 'sub'))
    with open(os.path.join(c.tmp, 'supp.txt'), 'w') as f:
        f.write('bad-unlock:*\n')
    ending, out, err = c.launch('--suppressions=supp.txt', '--report-dir=rep', '--', 'sh', '-c',
                                f'cd sub && exec {c.a.prog} bad-unlock')
    need(ending == 0 and 'cannot read' not in err and 'locktrace: bad-unlock' not in err,
         f'cd sub under the launcher: {ending} {err}')
    # made absolute from / as "/x", not "//x"
    ending, out, err = c.run([c.a.locktrace, '--report-dir=proc/no/such', '--', 'sh', '-c',
                              f'cd /; exec {c.a.prog} bad-unlock'], cwd='/')
    need(ending == 0 and 'cannot write report files into /proc/no/such (' in err,
         f'from /: {ending} {err}')
    lib = os.path.join(os.path.dirname(c.a.locktrace), 'liblocktrace.so')
    ending, out, err = c.run(['sh', '-c', f'cd sub && exec {c.a.prog} bad-unlock'],
                             {'LD_PRELOAD': lib, 'LOCKTRACE_SUPPRESSIONS': 'supp.txt'})
    need(ending == 2 and 'locktrace: LOCKTRACE_SUPPRESSIONS: supp.txt (in ' +
         os.path.join(os.path.realpath(c.tmp), 'sub') + '): cannot read the file' in err,
         f'LD_PRELOAD from sub: {ending} {err}')


def short_options(c):
    """-h is --help, and --help after other options too; any other single-dash word before the program is an unknown option (not
    "cannot run -x"); after --, it is the program's name."""
    ending, out, err = c.launch('-h')
    need(ending == 0 and out.startswith('usage: locktrace'), f'-h: {ending} {out[:200]} {err}')
    # --help after other options (an option line being edited) is the help too
    ending, out, err = c.launch('--exitcode=66', '--help', c.a.prog, 'bad-unlock')
    need(ending == 0 and out.startswith('usage: locktrace') and 'bad-unlock' not in err,
         f'--exitcode=66 --help: {ending} {out[:200]} {err}')
    ending, out, err = c.launch('-x', c.a.prog, 'bad-unlock')
    need(ending == 2 and re.search(r'^locktrace: unknown option -x ', err, re.M) and
         'bad-unlock' not in err, f'-x: {ending} {err}')
    ending, out, err = c.launch('--report-dir=', '--', '-x')
    need(ending == 127 and 'cannot run -x' in err, f'-- -x: {ending} {err}')


def option_without_value(c):
    """An option whose value is missing before `--` says so; it does not take `--` as its
    value (that said "bad value for LOCKTRACE_ACTION: '--'") and does not run the program;
    so do the report command's options."""
    for opt, accepted in (('--action', 'abort|edeadlk'), ('--report-dir', 'DIR')):
        ending, out, err = c.launch(opt, '--', c.a.prog, 'bad-unlock')
        need(ending == 2 and f'locktrace: {opt} needs a value: {accepted}' in err and
             'bad-unlock' not in err, f'{opt} --: {ending} {err}')
    # The report command's options with a value: last, or before "--" (that said
    # "--source-root: : No such file or directory", and --path-map "got ''").
    for opt, accepted in (('--source-root', 'DIR'), ('--path-map', 'OLD=NEW')):
        for tail in ([], ['--', c.dir]):
            ending, out, err = c.launch('report', opt, *tail)
            need(ending == 2 and err == f'locktrace report: {opt} needs a value: {accepted}\n',
                 f'report {opt} {tail}: {ending} {err}')


def no_program(c):
    """Options and no program: an option meant as a flag that took the program as its value
    (`--stats ./prog`) is named with what it took and how to write it, and nothing runs; the
    whole usage (all that was printed before) is left for a bare `locktrace`."""
    ending, out, err = c.launch('--stats', c.a.prog)
    need(ending == 2 and err == f'locktrace: no program to run: --stats took {c.a.prog} as its '
         'value (write --stats=VALUE, accepted: 0|1|no|yes|false|true|off|on, then the '
         'program)\n', f'--stats PROG: {ending} {err}')
    # the last option that took the next word names it, though options follow it
    ending, out, err = c.launch('--action', 'edeadlk', '--wait-timeout', c.a.prog, '--exitcode=3')
    need(ending == 2 and err.startswith(f'locktrace: no program to run: --wait-timeout took '
                                        f'{c.a.prog} as its value'), f'--wait-timeout PROG: {ending} {err}')
    for args in (['--exitcode=3'], ['--exitcode=3', '--']):
        ending, out, err = c.launch(*args)
        need(ending == 2 and err == 'locktrace: no program to run after the options (usage: '
             'locktrace [options] [--] program [args...])\n', f'{args}: {ending} {err}')
    ending, out, err = c.launch()
    need(ending == 2 and err.startswith('usage: locktrace') and not out, f'no arguments: {ending} {err[:200]}')


def report_of_text(c):
    """`locktrace report` given the text the program printed (its stderr, kept from a CI log)
    says that is what it got and where the JSON files are; it said "line 1, column 1:
    unexpected character 'l'". A file that is neither keeps the parser's message."""
    ending, out, err = c.launch('--report-dir=', '--', c.a.prog, 'bad-unlock')
    need(ending == 0 and err.startswith('locktrace: bad-unlock:'), f'making a report: {ending} {err}')
    log = os.path.join(c.tmp, 'ci.log')
    with open(log, 'w') as f:
        f.write('make check\n' + err)
    ending, out, rerr = c.launch('report', log)
    need(ending == 1 and not out and rerr == f'locktrace report: {log}: not a report file but the '
         'text of reports as printed; `locktrace report` reads the JSON files of the report '
         'directory (./locktrace-reports/ under the launcher, or --report-dir)\n',
         f'report of the text: {ending} {rerr}')
    other = os.path.join(c.tmp, 'notes.txt')
    with open(other, 'w') as f:
        f.write('the locktrace: notes\n')
    ending, out, rerr = c.launch('report', other)
    need(ending == 1 and rerr == f"locktrace report: {other}: line 1, column 1: unexpected "
         "character 't'\n", f'another text file: {ending} {rerr}')


def report_dir_slash(c):
    """A directory given with its trailing slash (as the README writes locktrace-reports/)
    is named with one slash in the launcher's line and names its files so in messages; a file that is no report is named with the
    reason while the others still print, status 1; a binary file is said to be one."""
    ending, out, err = c.launch('--report-dir=' + c.dir + '/', '--', c.a.prog, 'bad-unlock')
    good = glob.glob(os.path.join(c.dir, '*.1.json'))
    need(ending == 0 and len(good) == 1, f'making a report: {ending} {err}')
    need(f' in {c.dir}/ (read them again' in err, f'the launcher line: {err}')
    with open(good[0]) as f:
        head = f.read(300)
    with open(os.path.join(c.dir, 'cut.json'), 'w') as f:
        f.write(head)
    ending, out, err = c.launch('report', c.dir + '/')
    need(ending == 1 and out.startswith('locktrace: bad-unlock'), f'{ending} {out[:200]} {err}')
    need(re.search(r'^locktrace report: ' + re.escape(c.dir) + r'/cut\.json: line 1, column \d+: '
                   r'.*\(truncated\?\)$', err, re.M), f'message: {err}')
    # A program given by mistake: its first byte named as such ('?' before).
    ending, out, err = c.launch('report', c.a.prog)
    need(ending == 1 and f'locktrace report: {c.a.prog}: line 1, column 1: unexpected byte 0x7f '
         '(not JSON text: a binary file?)' in err, f'a binary file: {ending} {err}')


def cannot_run(c):
    """A program that cannot be run says why as a shell would: a directory, a file without
    its execute bit (both were "Permission denied"), a missing file, a program of this
    directory named without ./; status 126 or 127."""
    text = os.path.join(c.tmp, 'notes.txt')
    with open(text, 'w') as f:
        f.write('not a program\n')
    os.chmod(text, 0o644)
    for prog, status, said in ((c.tmp, 126, 'it is a directory'),
                               (text, 126, 'the file is not executable'),
                               (os.path.join(c.tmp, 'missing'), 127, 'No such file or directory')):
        ending, out, err = c.launch('--report-dir=', '--', prog)
        need(ending == status and f'locktrace: cannot run {prog}: {said}' in err,
             f'{prog}: {ending} {err}')
    # A program in the current directory named without ./ (PATH does not hold it).
    shutil.copy(c.a.prog, os.path.join(c.tmp, 'localprog'))
    ending, out, err = c.launch('--report-dir=', '--', 'localprog', 'bad-unlock')
    need(ending == 127 and 'locktrace: cannot run localprog: not found in PATH (a program in this '
         'directory is run as ./NAME)' in err, f'localprog: {ending} {err}')
    # A script of the current directory named without ./ and without its execute bit: one
    # message says both steps (it said "./NAME", then "chmod +x?") and the interpreter's way.
    with open(os.path.join(c.tmp, 'job.py'), 'w') as f:
        f.write('#!/usr/bin/python3 -u\nprint("hi")\n')
    for prog, what in (('job.py', 'not found in PATH, and the file of that name in this directory '
                                  'is not executable'),
                       ('./job.py', 'the file is not executable')):
        ending, out, err = c.launch('--report-dir=', '--', prog)
        need(ending == (127 if prog == 'job.py' else 126) and
             f'locktrace: cannot run {prog}: {what} (run it through its interpreter: locktrace -- '
             f'/usr/bin/python3 -u {prog}; or chmod +x {prog}, then locktrace -- ./job.py)\n' in err,
             f'{prog}: {ending} {err}')



def with_loader(prog, copy, loader):
    """Copies the ELF program prog to copy with its PT_INTERP renamed loader (no longer than
    the old name), as a program built for another libc names one this system lacks."""
    with open(prog, 'rb') as f:
        data = bytearray(f.read())
    need(data[:5] == b'\x7fELF\x02' and data[5] == 1, f'{prog}: not a 64-bit little-endian ELF')
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    for i in range(phnum):
        kind, = struct.unpack_from('<I', data, phoff + i * phentsize)
        if kind == 3:  # PT_INTERP
            offset, = struct.unpack_from('<Q', data, phoff + i * phentsize + 8)
            size, = struct.unpack_from('<Q', data, phoff + i * phentsize + 32)
            need(len(loader) < size, f'{loader} longer than the loader of {prog}')
            data[offset:offset + size] = loader.encode().ljust(size, b'\0')
            break
    else:
        raise Failed(f'{prog} has no PT_INTERP')
    with open(copy, 'wb') as f:
        f.write(data)
    os.chmod(copy, 0o755)


def missing_interpreter(c):
    """A program that is there but whose interpreter is not says which one, where the launcher
    said "No such file or directory" about a file the user can see: a script's #! names a
    missing program, or ends in a carriage return (a script with DOS line ends), an ELF
    program's dynamic loader is not installed (built for another libc). Status 127 as a
    shell's; the same through PATH. A script whose interpreter is there runs."""
    bad = os.path.join(c.tmp, 'bad-interp.sh')
    dos = os.path.join(c.tmp, 'dos.sh')
    good = os.path.join(c.tmp, 'good.sh')
    elf = os.path.join(c.tmp, 'other-libc')
    for path, text in ((bad, '#! /no/such/shell -e\necho hi\n'), (dos, '#!/bin/sh\r\necho hi\r\n'),
                       (good, '#!/bin/sh\necho hi\n')):
        with open(path, 'w', newline='') as f:
            f.write(text)
        os.chmod(path, 0o755)
    with_loader(c.a.prog, elf, '/lib/ld-none.so.1')
    for prog, said in ((bad, 'its interpreter /no/such/shell (its #! line) does not exist'),
                       (dos, 'its #! line ends in a carriage return, so the interpreter sought is '
                             '"/bin/sh\\r", which does not exist (DOS line ends: dos2unix)'),
                       (elf, 'its dynamic loader /lib/ld-none.so.1 is not installed (a program '
                             'built for another system or libc?)')):
        ending, out, err = c.launch('--report-dir=', '--', prog)
        need(ending == 127 and f'locktrace: cannot run {prog}: {said}\n' in err,
             f'{prog}: {ending} {err}')
    ending, out, err = c.launch('--report-dir=', '--', 'bad-interp.sh',
                                env={'PATH': c.tmp + ':' + os.environ.get('PATH', '')})
    need(ending == 127 and 'locktrace: cannot run bad-interp.sh: its interpreter /no/such/shell '
         in err, f'through PATH: {ending} {err}')
    ending, out, err = c.launch('--report-dir=', '--', good)
    need(ending == 0 and out == 'hi\n' and 'cannot run' not in err, f'{good}: {ending} {out} {err}')


def summary_names_command(c):
    """The closing line tells how to read the reports again with the command as it was run:
    from a build tree "build/tracer/locktrace report", where a bare "locktrace report" is not
    found (it said that); through PATH "locktrace report"."""
    ending, out, err = c.launch('--report-dir=' + c.dir, '--', c.a.prog, 'bad-unlock')
    need(ending == 0 and f'(read them again with: {c.a.locktrace} report FILE...)\n' in err,
         f'run by its path: {ending} {err}')
    ending, out, err = c.run(['locktrace', '--report-dir=' + c.dir, '--', c.a.prog, 'bad-unlock'],
                             env={'PATH': os.path.dirname(c.a.locktrace) + ':' +
                                  os.environ.get('PATH', '')})
    need(ending == 0 and '(read them again with: locktrace report FILE...)\n' in err,
         f'run through PATH: {ending} {err}')

def help_text(c):
    """--help names every form of the report command, says what the exit statuses mean and
    what to try when a program hangs with no report."""
    ending, out, err = c.launch('--help')
    need(ending == 0, f'--help: {ending} {err}')
    need(re.search(r'^ +locktrace report \[--json \| --sarif \| --html\]', out, re.M),
         f'report usage: {out[:400]}')
    for status in ('--exitcode=N', '2 for a bad option', '125 when', '126 or 127'):
        need(status in ' '.join(out.split()), f'exit status "{status}" missing: {out[:900]}')
    # What to do when the program hangs and nothing is reported, before the option list.
    intro = ' '.join(out[:out.index('Options (')].split())
    for hint in ('still hangs with no report', '--wait-timeout=10',
                 '--dump-signal=SIGUSR1 and then `locktrace dump PID`'):
        need(hint in intro, f'hang hint "{hint}" missing: {intro}')
    # README: "`locktrace --help` and `man locktrace` list them all"; LOCKTRACE_HELP is no
    # option, and an LD_PRELOAD user gets no report files without LOCKTRACE_REPORT_DIR.
    for hint in ('LOCKTRACE_HELP=1', 'no report files unless LOCKTRACE_REPORT_DIR is set'):
        need(hint in intro, f'"{hint}" missing: {intro}')


def man_page(c):
    """The man page's synopsis and COMMANDS name --html and --path-map, as the command has,
    ENVIRONMENT the variables that are no options (LOCKTRACE_HELP), and DESCRIPTION every
    kind of finding the tracer reports (report_text.c's names: it named 7 of 11)."""
    text = open(c.a.man).read()
    description = text[text.index('.SH DESCRIPTION'):text.index('.SH OPTIONS')]
    names = os.path.join(os.path.dirname(c.a.man), 'src', 'report_text.c')
    table = open(names).read().split('kind_names[', 1)[1].split('};', 1)[0]
    kinds = [k for k in re.findall(r'= "([a-z-]+)"', table) if k != 'thread-dump']
    need(len(kinds) > 10, f'kinds read from {names}: {kinds}')
    for kind in kinds:
        need(kind.replace('-', r'\-') in description or kind in description,
             f'DESCRIPTION lacks {kind}:\n{description}')
    synopsis = text[text.index('.SH SYNOPSIS'):text.index('.SH DESCRIPTION')]
    commands = text[text.index('.SH COMMANDS'):text.index('.SH EXIT STATUS')]
    for part, name in ((synopsis, 'SYNOPSIS'), (commands, 'COMMANDS')):
        for opt in (r'\-\-html', r'\-\-path\-map', r'\-\-sarif', r'\-\-json'):
            need(opt in part, f'{name} lacks {opt}:\n{part}')
    # The variables that are no options: the page names them in ENVIRONMENT.
    env = text[text.index('.SH ENVIRONMENT'):text.index('.SH COMMANDS')]
    for var in ('LOCKTRACE_HELP=1', 'LOCKTRACE_REPORT_DIR', 'LD_PRELOAD'):
        need(var in env, f'ENVIRONMENT lacks {var}:\n{env}')


def setid_program(c):
    """A set-group-ID program (of a group that is not ours) is refused with advice that fits:
    not "link it dynamically", which it already is."""
    if os.getegid() == 0 and os.geteuid() != 0:
        raise Skipped('needs a group other than our own to give the copy')
    prog = os.path.join(c.tmp, 'setgid-prog')
    shutil.copy(c.a.prog, prog)
    other = 1 if os.getegid() != 1 else 2
    try:
        os.chown(prog, -1, other)
        os.chmod(prog, 0o2755)
    except PermissionError as e:
        raise Skipped(f'cannot make a set-group-ID copy: {e}')
    if not os.stat(prog).st_mode & 0o2000:
        raise Skipped('the file system dropped the set-group-ID bit')
    ending, out, err = c.launch('--report-dir=', '--', prog, 'bad-unlock')
    need(ending == 125 and 'set-user-ID or set-group-ID' in err, f'{ending} {err}')
    need('link it dynamically' not in err and 'copy without the bit' in err, f'advice: {err}')


def report_options_anywhere(c):
    """`locktrace report DIR --json` works like `locktrace report --json DIR`; two output
    forms are an error; after `--`, a word that looks like an option is a file name."""
    ending, out, err = c.launch('--report-dir=' + c.dir, '--', c.a.prog, 'bad-unlock')
    need(ending == 0 and len(glob.glob(os.path.join(c.dir, '*.1.json'))) == 1,
         f'making a report: {ending} {err}')
    ending, before, err = c.launch('report', '--json', c.dir)
    need(ending == 0 and before.startswith('{"locktrace_report":'), f'--json first: {err}')
    ending, after, err = c.launch('report', c.dir, '--json')
    need(ending == 0 and after == before, f'--json last: {ending} {err} {after[:200]}')
    ending, html, err = c.launch('report', c.dir, '--html')
    need(ending == 0 and html.startswith('<!DOCTYPE html>'), f'--html last: {ending} {err}')
    ending, out, err = c.launch('report', '--json', c.dir, '--sarif')
    need(ending == 2 and out == '' and 'locktrace report: --json and --sarif: give one of' in err,
         f'two output forms (the last one won silently): {ending} {err} {out[:100]}')
    ending, out, err = c.launch('report', c.dir, '--', '--json')
    need(ending == 0 and re.search(r'^locktrace report: --json: no such directory', err, re.M)
         and out.startswith('locktrace: bad-unlock'), f'-- --json: {ending} {err}')


def normalized(line):
    """A report line without what changes from run to run and machine to machine: addresses,
    thread ids, the directories of modules, of the report directory and of the launcher."""
    line = re.sub(r'0x[0-9a-f]+', '0x_', line)
    line = re.sub(r'\(tid \d+\)', '(tid _)', line)
    line = re.sub(r'\((?:\S*/)?([^/\s]+)\+0x_\)', r'(\1+0x_)', line)
    line = re.sub(r'with: \S*locktrace report', 'with: locktrace report', line)
    return re.sub(r' in \S+/ \(read them again', ' in DIR/ (read them again', line)


def readme_example(c):
    """The README's example of `locktrace -- build/demo/deadlock self` is what the command
    prints: every line it shows (frames: function, file:line; the storage it guards; the
    closing summary) comes in that order, only addresses, ids and directories differ. So the
    example sends the reader to the source lines the tool really names."""
    if not c.a.demo or not c.a.readme:
        raise Skipped('no --demo/--readme')
    text = open(c.a.readme).read()
    start = text.index('$ build/tracer/locktrace -- build/demo/deadlock self')
    block = text[start:text.index('```', start)].splitlines()[1:]
    shown = [normalized(l) for l in block
             if l.strip() != '...' and not l.startswith('$ ') and l not in ('Aborted', '134')]
    need(len(shown) > 12, f'README example not found or short: {block[:5]}')
    ending, out, err = c.launch('--report-dir=' + c.dir, '--', c.a.demo, 'self')
    need(ending == 'signal:SIGABRT', f'demo self: {ending} {err}')
    actual = [normalized(l) for l in (out + err).splitlines()]
    at = 0
    for line in shown:
        while at < len(actual) and actual[at] != line:
            at += 1
        need(at < len(actual), f'README line not printed (in this order):\n{line}\n'
             f'actual output:\n' + '\n'.join(actual))
        at += 1


CHECKS = {f.__name__: f for f in (bad_configuration, relative_paths, short_options, option_without_value,
                                   cannot_run, missing_interpreter, summary_names_command,
                                   report_dir_slash, help_text, man_page, setid_program,
                                   report_options_anywhere, readme_example, no_program,
                                   report_of_text)}


def main():
    p = check_parser(CHECKS)
    p.add_argument('--locktrace', required=True)
    p.add_argument('--prog', required=True)
    p.add_argument('--man', required=True)
    p.add_argument('--demo', help='build/demo/deadlock')
    p.add_argument('--readme', help='README.md')
    return run_main(CHECKS, p, ('locktrace', 'prog', 'man', 'demo', 'readme'), Ctx, 'locktrace-tool-')


if __name__ == '__main__':
    sys.exit(main())
