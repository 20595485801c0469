#!/usr/bin/env python3
"""Runs the README's first command in a fresh copy of the source tree, so it cannot rot.

  readme_command.py SOURCE_ROOT

Copies every file git tracks (as it is in the working tree; every file but meson's build
directories where there is no git or no checkout) into a temporary directory, runs the first
command of README.md's first ```sh block there with a clean environment (no build directory
exists yet), and checks that it built everything and that the demo's report came
out: a self-deadlock naming the tensorlib storage, and the abort passed through.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from expect import run  # noqa: E402  (the one way tests run a command under a timeout)

TIMEOUT = 900


def first_command(readme):
    block = re.search(r'```sh\n(.*?)```', readme, re.S)
    if not block:
        sys.exit('README.md has no ```sh block')
    for line in block.group(1).splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            return line
    sys.exit('README.md\'s first ```sh block has no command')


def source_files(src):
    """The files git tracks; without git or outside a git checkout (a tarball, a bare
    Debian that has no git), every file but those of meson build directories."""
    try:
        ls = subprocess.run(['git', '-C', src, 'ls-files', '-z'], capture_output=True)
        if ls.returncode == 0:
            return ls.stdout.decode().split('\0')
    except FileNotFoundError:
        pass
    names = []
    for top, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != '.git'
                   and not os.path.isdir(os.path.join(top, d, 'meson-private'))]
        names += [os.path.relpath(os.path.join(top, f), src) for f in files if f != '.git']
    return names


def copy_tracked(src, dst):
    for name in filter(None, source_files(src)):
        if not os.path.exists(os.path.join(src, name)):
            continue  # deleted in the working tree, not yet committed
        os.makedirs(os.path.join(dst, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(os.path.join(src, name), os.path.join(dst, name))


def main():
    src = os.path.abspath(sys.argv[1])
    with open(os.path.join(src, 'README.md')) as f:
        command = first_command(f.read())
    print('README command:', command)
    with tempfile.TemporaryDirectory(prefix='locktrace-readme-') as work:
        copy_tracked(src, work)
        ending, out, err = run(['sh', '-c', command], dict(os.environ), TIMEOUT, work)
        if ending == 'timeout':
            print(f'FAILED: still running after {TIMEOUT} s')
            return 1
        out, err = out.decode(errors='replace'), err.decode(errors='replace')
        failures = []
        if not re.search(r'^locktrace: self-deadlock:', err, re.M):
            failures.append('no "locktrace: self-deadlock:" report on stderr')
        if not re.search(r'tensorlib storage f32\[4\] cpu', err):
            failures.append('the report does not name the tensorlib storage')
        if not re.search(r'^x \+= y -> \[11\.0, 22\.0, 33\.0, 44\.0\]$', out, re.M):
            failures.append('the demo did not print its first step')
        if ending == 0:
            failures.append('the command exited 0: the abort was not passed through')
        if failures:
            print('FAILED:\n  ' + '\n  '.join(failures))
            print('--- stdout ---\n' + out[-6000:] + '\n--- stderr ---\n' + err[-6000:])
            return 1
    print('ok: ending', ending)
    return 0


if __name__ == '__main__':
    sys.exit(main())
