"""The runner of multi-step test scripts: one named check per meson test, each in a fresh
temporary directory; a check raises Failed (exit 1) or Skipped (exit 77, meson's skip) with
the reason, or returns (exit 0)."""
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
