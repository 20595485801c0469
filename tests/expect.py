#!/usr/bin/env python3
"""Run one program and check how it ended and what it printed.

The one test driver for every scenario test (tracer, integration, demo). It runs the command
in its own process group under a hard timeout, so a hang is always a verdict, never a stuck
test run:

  expect.py [options] -- program [args...]

  --preload LIB        add LIB to LD_PRELOAD (DYLD_INSERT_LIBRARIES on macOS)
  --env K=V            set an environment variable (repeatable); --unset K removes one
  --timeout S          seconds before the process group is killed (default 10)
  --status S           expected ending: an exit code (0, 1, 3...), 'abort' (SIGABRT, or exit 134 from a launcher that passes it on),
                       'signal:NAME', 'timeout' (still running at the deadline), or 'any'
  --stdout-has RE      stdout must match RE (re.M); repeatable. --stdout-lacks RE: must not
  --stderr-has RE      same for stderr;                 --stderr-lacks RE
  --stderr-first RE    the first line of stderr that starts with 'locktrace:' matches RE
  --stdout-is TEXT     stdout must equal TEXT exactly (escapes like \\n are decoded)
  --stderr-empty       stderr must be empty
  --same-as-native     run the command a second time without the preload and require
                       byte-identical stdout and stderr and the same exit status
  --cwd DIR            run in DIR
  --no-report-files    run with LOCKTRACE_REPORT_DIR set to a new empty directory, and
                       require it to be empty at the end (a clean program leaves no file)
  --skip-status S      the program exiting with S means it cannot run here (a privilege it
                       lacks): a skip, its stdout printed as the reason

Exit status 0 when every check holds, 1 otherwise (with the reasons and the captured output),
77 (meson's 'skip') when --skip-unless names a file that does not exist, or the program
exits with --skip-status.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--preload', action='append', default=[])
    p.add_argument('--env', action='append', default=[])
    p.add_argument('--unset', action='append', default=[])
    p.add_argument('--timeout', type=float, default=10.0)
    p.add_argument('--status', default='0')
    p.add_argument('--stdout-has', action='append', default=[])
    p.add_argument('--stdout-lacks', action='append', default=[])
    p.add_argument('--stderr-has', action='append', default=[])
    p.add_argument('--stderr-lacks', action='append', default=[])
    p.add_argument('--stderr-first')
    p.add_argument('--stdout-is')
    p.add_argument('--stderr-empty', action='store_true')
    p.add_argument('--same-as-native', action='store_true')
    p.add_argument('--skip-unless', action='append', default=[])
    p.add_argument('--cwd')
    p.add_argument('--no-report-files', action='store_true')
    p.add_argument('--skip-status', type=int)
    p.add_argument('command', nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command and args.command[0] == '--':
        args.command = args.command[1:]
    if not args.command:
        p.error('no command given (put it after --)')
    return args


def environment(args, preload):
    env = dict(os.environ)
    for name in args.unset:
        env.pop(name, None)
    for kv in args.env:
        if '=' not in kv:
            sys.exit(f'expect.py: --env wants K=V, got {kv!r}')
        k, v = kv.split('=', 1)
        env[k] = v
    if preload:
        var = 'DYLD_INSERT_LIBRARIES' if sys.platform == 'darwin' else 'LD_PRELOAD'
        parts = [os.path.abspath(lib) for lib in preload]
        if env.get(var):
            parts.append(env[var])
        env[var] = ':'.join(parts)
    return env


def run(command, env, timeout, cwd):
    """Returns (ending, stdout bytes, stderr bytes); ending is an int code, 'signal:NAME'
    or 'timeout'."""
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return 'timeout', out, err
    if proc.returncode < 0:
        return 'signal:' + signal.Signals(-proc.returncode).name, out, err
    return proc.returncode, out, err


def status_matches(expected, ending):
    if expected == 'any':
        return ending != 'timeout'
    if expected == 'abort':  # killed by SIGABRT, or a launcher passing that on as 128+6
        return ending in ('signal:SIGABRT', 134)
    if expected == 'timeout' or expected.startswith('signal:'):
        return ending == expected
    return ending == int(expected)


def check(args, ending, out, err):
    failures = []
    o = out.decode('utf-8', 'replace')
    e = err.decode('utf-8', 'replace')
    if not status_matches(args.status, ending):
        failures.append(f'ending: expected {args.status}, got {ending}')
    for pat in args.stdout_has:
        if not re.search(pat, o, re.M):
            failures.append(f'stdout lacks /{pat}/')
    for pat in args.stdout_lacks:
        if re.search(pat, o, re.M):
            failures.append(f'stdout has /{pat}/')
    for pat in args.stderr_has:
        if not re.search(pat, e, re.M):
            failures.append(f'stderr lacks /{pat}/')
    for pat in args.stderr_lacks:
        if re.search(pat, e, re.M):
            failures.append(f'stderr has /{pat}/')
    if args.stderr_first is not None:
        first = next((ln for ln in e.splitlines() if ln.startswith('locktrace:')), None)
        if first is None or not re.search(args.stderr_first, first):
            failures.append(f'first locktrace line {first!r} does not match /{args.stderr_first}/')
    if args.stdout_is is not None:
        want = args.stdout_is.encode().decode('unicode_escape')
        if o != want:
            failures.append(f'stdout is {o!r}, expected {want!r}')
    if args.stderr_empty and e:
        failures.append('stderr is not empty')
    return failures


def main(argv):
    args = parse_args(argv)
    for path in args.skip_unless:
        if not os.path.exists(path):
            print(f'skipped: {path} does not exist')
            return 77
    env = environment(args, args.preload)
    with tempfile.TemporaryDirectory(prefix='expect-reports.') as reports:
        if args.no_report_files:
            env['LOCKTRACE_REPORT_DIR'] = reports
        ending, out, err = run(args.command, env, args.timeout, args.cwd)
        if args.skip_status is not None and ending == args.skip_status:
            print('skipped:', out.decode('utf-8', 'replace').strip())
            return 77
        failures = check(args, ending, out, err)
        if args.no_report_files and os.listdir(reports):
            failures.append(f'report files written: {sorted(os.listdir(reports))}')
    if args.same_as_native:
        n_ending, n_out, n_err = run(args.command, environment(args, []), args.timeout, args.cwd)
        if (n_ending, n_out, n_err) != (ending, out, err):
            failures.append(f'differs from the native run (native ending {n_ending}, '
                            f'stdout {len(n_out)} B, stderr {len(n_err)} B)')
    print('command:', ' '.join(args.command))
    print('ending:', ending)
    sys.stdout.flush()
    if failures:
        print('FAILED:\n  ' + '\n  '.join(failures))
        print('--- stdout ---')
        sys.stdout.write(out.decode('utf-8', 'replace'))
        print('--- stderr ---')
        sys.stdout.write(err.decode('utf-8', 'replace'))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
