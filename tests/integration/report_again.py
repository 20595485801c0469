#!/usr/bin/env python3
"""Runs a program under the launcher with a report directory of its own, then prints on stdout
what `locktrace report` makes of that directory (symbolized again from the binaries on disk).

  report_again.py LOCKTRACE PROGRAM [ARGS...]

Exit status: locktrace report's. The program's own output and status are not kept: it is
expected to end by a report (an abort, say)."""
import subprocess
import sys
import tempfile


def main(locktrace, *program):
    with tempfile.TemporaryDirectory(prefix='locktrace-again-') as d:
        subprocess.run([locktrace, f'--report-dir={d}', '--'] + list(program),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        r = subprocess.run([locktrace, 'report', d], capture_output=True, text=True, timeout=60)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        return r.returncode


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
