#!/usr/bin/env python3
"""The demo's metal-self mode: deadlocks (or fails with EDEADLK) without the tracer, and is
caught with it, the report naming the Metal storage. Skips (exit 77) with the demo's own
reason where Metal is unavailable.

  metal_demo.py DEMO LAUNCHER
"""
import re
import subprocess
import sys

SKIP = 77


def run(cmd, timeout):
    """(status, stdout, stderr); status 'timeout' when cmd was still running."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return 'timeout', out, err


def main(demo, launcher):
    status, out, err = run([demo, 'metal-self'], 10)
    if status == 3:
        print('Metal unavailable: ' + err.strip())
        return SKIP
    # Without the tracer the same thread waits for itself: a hang, or an EDEADLK that
    # tensorlib reports as an error (what macOS's rwlocks return for write-then-read).
    native_ok = status == 'timeout' or (status == 1 and 'EDEADLK' in out)
    print('native: status %s' % status)
    status_t, out_t, err_t = run([launcher, '--', demo, 'metal-self'], 20)
    print('under the tracer: status %s' % status_t)
    caught = (status_t == -6 and re.search(r'^locktrace: self-deadlock: ', err_t, re.M) and
              re.search(r'^  guards: .* tensorlib storage f32\[4\] metal', err_t, re.M))
    if native_ok and caught:
        return 0
    sys.stdout.write('--- native stdout\n%s--- native stderr\n%s' % (out, err))
    sys.stdout.write('--- traced stdout\n%s--- traced stderr\n%s' % (out_t, err_t))
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
