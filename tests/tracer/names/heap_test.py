#!/usr/bin/env python3
"""Names of locks inside malloc blocks (issue #11): each check runs one scenario of heap.c (or
heap_cpp.cpp, ownheap.c) under the tracer with report files on. The program prints the name
each lock must have, computed from its own pointers and malloc_usable_size:
  expect 0x<lock> heap block 0x<block> (<N> bytes), offset <K>
and the check finds that name for that address in the text on stderr, in the JSON file, and
in `locktrace report --as-recorded`, which must print the file as the program printed it.

  heap_test.py CHECK --program PATH --ownheap PATH [--cpp PATH] --locktrace PATH --lib PATH
"""
import glob
import json
import os
import re
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import expect  # noqa: E402
from checks import Skipped, check_parser, need, run_main  # noqa: E402

UNKNOWN = 'heap (block start unknown)'


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp

    def run(self, cmd, env=None, preload=True, timeout=30):
        e = dict(os.environ)
        for k in [k for k in e if k.startswith('LOCKTRACE_') or k.startswith('MALLOC_')]:
            del e[k]
        if preload:
            e['LD_PRELOAD'] = self.a.lib
        e.update(env or {})
        ending, out, err = expect.run(cmd, e, timeout, self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def scenario(self, cmd, timeout=30, **env):
        """Runs cmd with report files on: (stdout, stderr, [(path, JSON)] in report order)."""
        d = os.path.join(self.tmp, 'reports')
        env = {'LOCKTRACE_ACTION': 'edeadlk', 'LOCKTRACE_REPORT_DIR': d, **env}
        ending, out, err = self.run(cmd, env, timeout=timeout)
        need(ending == 0, f'{cmd}: ended {ending}\n{out}{err}')
        files = [f for f in glob.glob(os.path.join(d, '*.json')) if not f.endswith('.summary.json')]
        files.sort(key=lambda f: int(f.rsplit('.', 2)[-2]))
        return out, err, [(f, json.load(open(f))) for f in files]

    def same_as_recorded(self, err, path):
        """The tool prints the file as the program printed that report (one of err's)."""
        ending, out, rerr = self.run([self.a.locktrace, 'report', '--as-recorded', path],
                                     preload=False)
        need(ending == 0 and out and out in err, f'rendered differently:\n{out}\n---\n{err}{rerr}')


def expectations(out):
    """[(lock address, name)] the program announced, in order."""
    got = [(int(a, 16), name) for a, name in re.findall(r'^expect (0x[0-9a-f]+) (.*)$', out, re.M)]
    need(got, f'the program announced no lock:\n{out}')
    return got


def named(c, cmd, kind, count=1, **env):
    """Runs the scenario: `count` reports of `kind`, and every announced lock named as
    announced in one of them, in its JSON and in its text (the lock line, a table row or a
    step: the address, then the name in quotes)."""
    out, err, reports = c.scenario(cmd, **env)
    need([r['kind'] for _, r in reports] == [kind] * count,
         f'reports {[r["kind"] for _, r in reports]}, want {count} {kind}\n{err}')
    for addr, name in expectations(out):
        locks = [lock for _, r in reports for lock in r['locks'] if int(lock['address'], 16) == addr]
        need(locks, f'no report has the lock at {addr:#x}:\n{err}')
        need(all(lock['name'] == name for lock in locks),
             f'JSON names {[lock["name"] for lock in locks]}, want {name!r}')
        text = rf'{addr:#x} (?:[a-z]+ \([a-z]+\) )?"{re.escape(name)}"'
        need(re.search(text, err), f'no {text} in the text:\n{err}')
    for path, _ in reports:
        c.same_as_recorded(err, path)
    return out, err


def relocked(scenario, count=1):
    return lambda c: named(c, [c.a.program, scenario], 'self-deadlock', count)


def inversion(c):
    """Both orders of two heap locks: the "how it deadlocks" table names both blocks."""
    out, err = named(c, [c.a.program, 'inversion'], 'lock-order-inversion')
    (a, na), (b, nb) = expectations(out)
    for held, wanted in (((a, na), (b, nb)), ((b, nb), (a, na))):
        row = (rf'holds mutex \(normal\) {held[0]:#x} "{re.escape(held[1])}" \(lock\) and wants '
               rf'mutex \(normal\) {wanted[0]:#x} "{re.escape(wanted[1])}" \(lock\)$')
        need(re.search(row, err, re.M), f'no row {row}:\n{err}')


def unlimited_stack(check):
    """check run under `ulimit -s unlimited` (Linux's legacy layout: the brk heap below the
    main stack, nothing mapped between), set here for the program, which checks it."""
    def run(c):
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        if hard != resource.RLIM_INFINITY:
            raise Skipped('the hard RLIMIT_STACK is not unlimited')
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, hard))
        try:
            return check(c)
        finally:
            resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
    return run


def cpp_new(c):
    """C++: objects `new`ed with a std::mutex member, in both orders."""
    if not c.a.cpp:
        raise Skipped('no C++ compiler')
    out, err = named(c, [c.a.cpp], 'lock-order-inversion')
    need(len(expectations(out)) == 2, out)


def own_malloc(c):
    """A program whose malloc is its own (sbrk): the tracer does not guess a block from
    glibc's layout; the lock is in the heap, block start unknown."""
    out, err, reports = c.scenario([c.a.ownheap, 'relock'])
    lock = int(re.search(r'^lock (0x[0-9a-f]+)', out, re.M).group(1), 16)
    need([r['kind'] for _, r in reports] == ['self-deadlock'], f'reports:\n{err}')
    got = [(int(x['address'], 16), x['name']) for x in reports[0][1]['locks']]
    need(got == [(lock, UNKNOWN)], f'JSON locks {got}, want the lock at {lock:#x} named {UNKNOWN!r}')
    need(f'{lock:#x} mutex (normal) "{UNKNOWN}"' in err, f'text:\n{err}')


def stress(c):
    """Reports made while three threads malloc, realloc and free hard in the same arena
    (MALLOC_ARENA_MAX=1), large blocks mapped and unmapped: the program ends normally, every
    report names its lock as announced or, when the walk met a heap changing under it, says
    the block is unknown; most walks succeed all the same. (A few of the 100 relocks may be
    counted as repeats of an earlier report, not filed: reports are matched in order.)"""
    out, err, reports = c.scenario([c.a.program, 'stress'], timeout=150, MALLOC_ARENA_MAX='1')
    want = expectations(out)
    need(len(want) == 100 and len(reports) >= 90, f'{len(reports)} reports, {len(want)} locks\n{err[-3000:]}')
    exact, at = 0, 0
    for path, r in reports:
        got = [(int(x['address'], 16), x['name']) for x in r['locks']]
        while at < len(want) and [want[at][0]] != [a for a, _ in got]:
            at += 1
        need(at < len(want), f'{path}: lock {got} announced by no later relock')
        addr, name = want[at]
        need(got in ([(addr, name)], [(addr, UNKNOWN)]), f'{path}: {got}, want {name!r} at {addr:#x}')
        exact += got == [(addr, name)]
        at += 1
    need(exact * 2 >= len(reports), f'only {exact} of {len(reports)} blocks found')
    print(f'{exact} of {len(reports)} blocks found')


CHECKS = {
    'small': relocked('small'), 'array': relocked('array'), 'thread-arena': relocked('thread-arena'),
    'arena-heaps': relocked('arena-heaps', 2),
    'large': relocked('large'), 'aligned': relocked('aligned', 2), 'moved': relocked('moved'),
    'inversion': inversion,
    # heap locks above the brk heap's end when the main stack's reach was read: not its stack
    'grown': unlimited_stack(lambda c: named(c, [c.a.program, 'grown'], 'lock-order-inversion')),
    # the main thread has left by pthread_exit: its stack forgotten, not the heap grown into
    # its reach; the locks still named
    'main-left': lambda c: named(c, [c.a.program, 'main-left'], 'lock-order-inversion'),
    'grown-main-left': unlimited_stack(lambda c: named(c, [c.a.program, 'grown-main-left'],
                                                       'lock-order-inversion')),
    'cycle': lambda c: named(c, [c.a.program, 'cycle'], 'deadlock'),
    'long-wait': lambda c: named(c, [c.a.program, 'long-wait'], 'long-wait',
                                 LOCKTRACE_WAIT_TIMEOUT='1'),
    'free-held': lambda c: named(c, [c.a.program, 'free-held'], 'free-held'),
    'cpp-new': cpp_new, 'own-malloc': own_malloc, 'stress': stress,
}


def main():
    p = check_parser(CHECKS, description=__doc__.splitlines()[0])
    p.add_argument('--program', required=True)
    p.add_argument('--ownheap', required=True)
    p.add_argument('--cpp')
    p.add_argument('--locktrace', required=True)
    p.add_argument('--lib', required=True)
    return run_main(CHECKS, p, ('program', 'ownheap', 'cpp', 'locktrace', 'lib'), Ctx, 'locktrace-heap-')


if __name__ == '__main__':
    sys.exit(main())
