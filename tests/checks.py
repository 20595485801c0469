"""The runner of multi-step test scripts: one named check per meson test, each in a fresh
temporary directory; a check raises Failed (exit 1) or Skipped (exit 77, meson's skip) with
the reason, or returns (exit 0)."""
import argparse
import os
import sys
import tempfile


class Failed(Exception):
    pass


class Skipped(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Failed(what)


def run_check(checks, name, make_ctx, prefix='locktrace-test-'):
    """Runs checks[name](make_ctx(tmp)) and returns the exit status, printing the verdict."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            checks[name](make_ctx(tmp))
        except Skipped as e:
            print(f'skipped {name}: {e}')
            return 77
        except Failed as e:
            print(f'FAILED {name}: {e}')
            return 1
    print(f'ok {name}')
    sys.stdout.flush()
    return 0


def check_parser(checks, **kw):
    """An argument parser whose first argument names one of checks (for run_main)."""
    p = argparse.ArgumentParser(**kw)
    p.add_argument('check', choices=sorted(checks))
    return p


def run_main(checks, parser, paths, make_ctx, prefix='locktrace-test-'):
    """Parses the command line, makes the options named in paths absolute where given (the
    check runs in a temporary directory), and runs the check named, on make_ctx(args, tmp)."""
    args = parser.parse_args()
    for k in paths:
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    return run_check(checks, args.check, lambda tmp: make_ctx(args, tmp), prefix)
