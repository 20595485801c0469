#!/usr/bin/env python3
"""Report files in hostile places (issue 10): each check runs a program that reports one bad
unlock with LOCKTRACE_REPORT_DIR set, in a directory made hostile first, and checks that the
report still reaches stderr, that one clear line says why no file was written (when none
could be), and that nothing was written through a planted link or published half-written.

  report_dirs_test.py CHECK --lib LIBLOCKTRACE --program PROGRAM [--linked PROGRAM]

PROGRAM reports one bad unlock and exits 0 (local_symbols); --linked is the same program
linked with the tracer (setuid check). Exit 0 on success, 1 with the reasons, 77 (skip) with
the reason when the check needs what this machine does not allow (mount, root).
"""
import glob
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from checks import Failed, Skipped, check_parser, need, run_main  # noqa: E402

TIMEOUT = 20


def run(cmd, env, before=None, user=None):
    """Runs cmd under a timeout, as `user` if given (from /, which that user can enter);
    `before(pid)` runs after the process exists and before the program starts (it waits on a
    line of stdin, then execs), so files can be planted under names that carry its pid.
    Returns (status, stdout, stderr)."""
    proc = subprocess.Popen(['sh', '-c', 'read x; exec "$@"', 'sh'] + cmd, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            user=user, cwd='/' if user is not None else None)
    if before:
        before(proc.pid)
    try:
        out, err = proc.communicate(b'\n', timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise Failed(f'{cmd} still running after {TIMEOUT} s')
    return proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.name = os.path.basename(args.program)

    def env(self, report_dir, preload=True, **more):
        e = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
        e.pop('LD_PRELOAD', None)
        if preload:
            e['LD_PRELOAD'] = self.a.lib
        e['LOCKTRACE_REPORT_DIR'] = report_dir
        e.update(more)
        return e

    def report(self, report_dir, before=None):
        status, out, err = run([self.a.program], self.env(report_dir), before)
        need(status == 0, f'status {status}, stderr:\n{err}')
        need(err.startswith('locktrace: bad-unlock:'), f'the report is not on stderr:\n{err}')
        return err

    def published(self, d):
        return sorted(glob.glob(os.path.join(d, self.name + '.*.json')))

    def leftovers(self, d):
        return glob.glob(os.path.join(d, '.*'))


def cannot_line(err, d, why):
    lines = [l for l in err.splitlines() if l.startswith('locktrace: cannot write')]
    need(len(lines) == 1, f'expected one "cannot write" line, got {lines}')
    need(d in lines[0] and why in lines[0] and lines[0].endswith('reports go to stderr only'),
         f'the line does not say {d!r} and {why!r}: {lines[0]}')


def mount_tmpfs(where, options):
    os.makedirs(where)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', options, 'tmpfs', where],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Skipped(f'cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): needs '
                      'root with mount rights')


def umount(where):
    subprocess.run(['umount', where], capture_output=True)


# --- checks ---------------------------------------------------------------------------------

def planted_symlink(c):
    """Symbolic links planted under the temporary and the final file names (pid known in
    advance) are never followed: the file they point to is unchanged, and the report file
    is a regular file of our own."""
    d = os.path.join(c.tmp, 'reports')
    os.makedirs(d)
    victim = os.path.join(c.tmp, 'victim')
    with open(victim, 'w') as f:
        f.write('precious\n')

    def plant(pid):
        for n in (f'.{c.name}.{pid}.1.json.tmp', f'{c.name}.{pid}.1.json',
                  f'.{c.name}.{pid}.summary.json.tmp', f'{c.name}.{pid}.summary.json'):
            os.symlink(victim, os.path.join(d, n))
    c.report(d, plant)
    need(open(victim).read() == 'precious\n', 'the file behind the planted link was written')
    files = c.published(d)
    need(len(files) == 2, f'expected the report and the summary, got {files}')
    for f in files:
        need(not os.path.islink(f) and os.path.getsize(f) > 0, f'{f} is a link or empty')
    need(not c.leftovers(d), f'left behind: {c.leftovers(d)}')


def readonly_dir(c):
    """A read-only report directory: one line says so, the report is on stderr."""
    d = os.path.join(c.tmp, 'ro')
    if os.geteuid() == 0:  # root writes through permission bits: a read-only mount instead
        mount_tmpfs(d, 'ro,size=16k')
    else:
        os.makedirs(d)
        os.chmod(d, 0o555)
    try:
        err = c.report(d)
        cannot_line(err, d, 'read-only file system' if os.geteuid() == 0 else 'permission denied')
        need(not c.published(d) and not c.leftovers(d), 'a file appeared in the read-only dir')
    finally:
        if os.geteuid() == 0:
            umount(d)


def full_disk(c):
    """ENOSPC on a 16 KiB tmpfs filled to the last byte: one line says the disk is full,
    no file is published (not even an empty one) and no temporary file is left."""
    d = os.path.join(c.tmp, 'full')
    mount_tmpfs(d, 'size=16k')
    try:
        fd = os.open(os.path.join(d, 'filler'), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while os.write(fd, b'x' * 512) > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        err = c.report(d)
        cannot_line(err, d, 'no space left on the device')
        need(not c.published(d), f'published: {c.published(d)}')
        need(not c.leftovers(d), f'left behind: {c.leftovers(d)}')
    finally:
        umount(d)


def shared_dir(c):
    """A directory anyone may write, owned by someone else: without the sticky bit others
    could swap the files, so none is written (said once); with it (like /tmp), files are."""
    if os.geteuid() != 0:
        raise Skipped('needs root to give a directory to another user')
    d = os.path.join(c.tmp, 'shared')
    os.makedirs(d)
    os.chown(d, 65534, 65534)
    os.chmod(d, 0o777)
    os.chmod(c.tmp, 0o755)
    err = c.report(d)
    cannot_line(err, d, 'anyone may replace files there')
    need(not c.published(d) and not c.leftovers(d), 'a file was written into the unsafe dir')
    os.chmod(d, 0o1777)
    err = c.report(d)
    need('cannot write' not in err, f'refused a sticky shared dir:\n{err}')
    need(len(c.published(d)) == 2, f'expected a report and a summary, got {c.published(d)}')


def setuid_program(c):
    """In a setuid program (AT_SECURE) LOCKTRACE_REPORT_DIR and LOCKTRACE_SUPPRESSIONS are
    ignored, each said once: no file is written and the suppression rule is not read, so the
    report is printed. The copy is setuid root, started by user 65534: the loader then reads
    liblocktrace.so as root, wherever the build is (a copy setuid to 65534 started by root
    could not load it from a build under /root, mode 0700)."""
    if os.geteuid() != 0:
        raise Skipped('needs root to make a setuid-root copy of a program')
    os.chmod(c.tmp, 0o755)
    prog = os.path.join(c.tmp, 'setuid_probe')
    shutil.copy(c.a.linked, prog)
    os.chown(prog, 0, 0)
    os.chmod(prog, 0o4755)
    d = os.path.join(c.tmp, 'reports')
    os.makedirs(d)
    os.chmod(d, 0o777)
    rules = os.path.join(c.tmp, 'rules')
    with open(rules, 'w') as f:
        f.write('bad-unlock:*\n')
    env = c.env(d, preload=False, LOCKTRACE_SUPPRESSIONS=rules)
    status, _, err = run([prog], env, user=65534)
    need(status == 0, f'status {status}:\n{err}')
    for var in ('LOCKTRACE_REPORT_DIR', 'LOCKTRACE_SUPPRESSIONS'):
        need(f'locktrace: {var} ignored: a setuid or setgid program takes no file names from the '
             'environment\n' in err, f'{var} not said to be ignored:\n{err}')
    need('locktrace: bad-unlock:' in err, f'the report was suppressed or not made:\n{err}')
    need(not os.listdir(d), f'files written: {os.listdir(d)}')
    # the same copy, not setuid: both variables are honoured (the check above can fail)
    os.chmod(prog, 0o755)
    status, _, err = run([prog], env)
    need(status == 0 and 'ignored' not in err and 'bad-unlock' not in err and os.listdir(d),
         f'not setuid: {status} {os.listdir(d)}\n{err}')


def retitled_program(c):
    """A program that writes over its environment strings after start (setproctitle in nginx,
    redis, postgres) still gets its report file: the directory's name was copied at load."""
    d = os.path.join(c.tmp, 'retitled')
    status, out, err = run([c.a.program, 'retitle'], c.env(d))
    need(status == 0, f'status {status}, stderr:\n{err}')
    need(err.startswith('locktrace: bad-unlock:'), f'the report is not on stderr:\n{err}')
    need(len(c.published(d)) == 2, f'expected the report and the summary in {d}, found '
         f'{os.listdir(d) if os.path.isdir(d) else "no directory"}')


CHECKS = {f.__name__: f for f in (planted_symlink, readonly_dir, full_disk, shared_dir,
                                   setuid_program, retitled_program)}


def main():
    p = check_parser(CHECKS)
    p.add_argument('--lib', required=True)
    p.add_argument('--program', required=True)
    p.add_argument('--linked')
    return run_main(CHECKS, p, ('lib', 'program', 'linked'), Ctx, 'locktrace-dirs-')


if __name__ == '__main__':
    sys.exit(main())
