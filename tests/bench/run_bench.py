#!/usr/bin/env python3
"""Runs every row of the lock performance table natively and under liblocktrace, interleaved,
and prints native, traced and the ratio of each.

  run_bench.py LOCKBENCH STRESSBENCH LIBLOCKTRACE [--repeat N] [--rows a,b] [--full] [--classes]
               [--baseline OTHER_LIBLOCKTRACE]

Rows: lockbench flat/nested with 1 and 2 threads (64 rwlocks, ~90 % reads; figure: ns per
lock/unlock pair, i.e. wall time x threads / pairs, the cost one thread pays per pair),
`relock-1` (one thread, 64 recursive mutexes, each taken and taken again while held: a first
acquisition and a relock, ns per pair), and the
two stress shapes of stressbench (figure: seconds): `groups` (one thread, 500 groups x 50
nested mutexes held at once, 10 loops of init/lock all/unlock all/destroy) and `lazy` (4
threads, 16 K lazily initialised rwlocks, <= 10 held in increasing index order, 1 in 5 for
write); `churn` (4 threads, each with 64 mutexes of its own: init, lock, unlock, destroy,
4000 rounds: locks made and unmade by many threads at once); and `threads` (20,000 threads
that each take one mutex once, 4 alive at a time: what a thread's start and exit cost);
`condwait` and `mutexwait` (3,000 threads, each holding a mutex of its own, blocked at once on
one condition variable, then queued on its mutex / on one mutex; 10 rounds; figure: CPU
seconds of the process, since the threads mostly wait); `spawn` (20 shell scripts that each run
/bin/true 10 times: 220 short processes, each traced; figure: CPU seconds of the child
processes, what each traced process costs at its start and exit); `exec` and `exec-lock` (200
processes started one after the other: /bin/true, which takes no lock, and a process that takes
one mutex; figure: CPU seconds of the children), `exec-wall` (`exec`'s wall time) and `fork`
(500 fork()s of a child that calls _exit at once; figure: CPU seconds of the process and its
children); `sigthreads` and `sigthreads-cpu` (100 threads that each start 10 threads that return
at once, and join them, under a SIGALRM every 10 us whose handler counts: 1,100 thread starts
and exits in a signal storm; figures: wall seconds, CPU seconds of the process); `crowd` and
`crowd-cpu` (2,000 threads alive at once, each taking 4 mutexes of its own nested, 10 rounds,
all at the same moment: thousands of threads making their first lock orders at once; figures:
wall seconds, CPU seconds of the process); `tasks` (20,000 threads one after another, each
taking 8 mutexes all threads share, nested, once, each at a call site of its own a few frames
deep: a server that starts a thread per connection, whose every thread takes its first locks
from the same frames; figure: seconds); `replace` (one thread, 1,024 slots of heap mutexes
taken in index order, one and one of the next 8 under it, 300,000 times, the first destroyed,
freed and made anew one time in 16: a chain of ordered locks whose members are replaced all
the time; figure: seconds). Each row runs native, traced (and with --full, traced with LOCKTRACE_STACKS=full)
--repeat times, one after the other in turn, so a busy moment of the machine hits every
configuration alike; the median counts, and each configuration's best run is printed too.
`noise` is the spread (min-max) of the ratio of the run pairs (run i traced / run i native).
--classes adds a run with LOCKTRACE_CLASSES=site (lockbench's locks share one init site: one
class, nested in ascending address order) and its ratio to the traced run without classes
(`vs traced`). --baseline runs another build of the library in the same turns (before/after:
its median, and the ratios of its median and of its best run to native's).
--instructions: instead of times, user-space instructions under valgrind's callgrind (apt-get
install valgrind), exact where times on a busy machine are not: per lock/unlock pair for the
lockbench rows, per lock lifecycle (init, lock, unlock, destroy) for `groups`, per round of one
thread for `lazy` (1 thread: callgrind runs threads one at a time anyway), per thread for
`tasks` (its start, its 8 first lock pairs and its exit; 100 and 200 threads). Each
configuration runs at two iteration counts, and the difference is divided by the difference
in units, so start-up and first sightings cancel out (for `lazy`, the later rounds meet more
known edges than the earlier ones: its figure is the cost of rounds 20,001-40,000).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROWS = {
    'flat-1': ('lockbench', ['flat', '1', '64', '2000000'], 'ns/pair'),
    'nested-1': ('lockbench', ['nested', '1', '64', '2000000'], 'ns/pair'),
    'flat-2': ('lockbench', ['flat', '2', '64', '1000000'], 'ns/pair'),
    'nested-2': ('lockbench', ['nested', '2', '64', '1000000'], 'ns/pair'),
    'relock-1': ('lockbench', ['relock', '1', '64', '1000000'], 'ns/pair'),
    'groups': ('stressbench', ['groups', '500', '50', '10'], 's'),
    'lazy': ('stressbench', ['lazy', '4', '16384', '20000'], 's'),
    'churn': ('stressbench', ['churn', '4', '64', '4000'], 's'),
    'threads': ('stressbench', ['threads', '4', '5000', '1'], 's'),
    'condwait': ('stressbench', ['condwait', '3000', '10', '1'], 'cpu s'),
    'mutexwait': ('stressbench', ['mutexwait', '3000', '10', '1'], 'cpu s'),
    'spawn': ('stressbench', ['spawn', '20', '10', '1'], 'cpu s'),
    'exec': ('stressbench', ['exec', '200', '0', '1'], 'cpu s'),
    'exec-wall': ('stressbench', ['exec', '200', '0', '1'], 's'),
    'exec-lock': ('stressbench', ['exec', '200', '1', '1'], 'cpu s'),
    'fork': ('stressbench', ['fork', '500', '1', '1'], 'cpu s'),
    'sigthreads': ('stressbench', ['sigthreads', '100', '10', '10'], 's'),
    'sigthreads-cpu': ('stressbench', ['sigthreads', '100', '10', '10'], 'cpu s'),
    'crowd': ('stressbench', ['crowd', '2000', '4', '10'], 's'),
    'crowd-cpu': ('stressbench', ['crowd', '2000', '4', '10'], 'cpu s'),
    'replace': ('stressbench', ['replace', '1024', '300000', '1'], 's'),
    'tasks': ('stressbench', ['tasks', '20000', '8', '1'], 's'),
}


def measure(prog, args, env, unit):
    """The row's figure: ns per pair, CPU seconds or (unit 's') wall seconds."""
    out = subprocess.run([prog] + args, env=env, check=True, capture_output=True, text=True,
                         timeout=300).stdout
    m = (re.search(r'ns_per_lock=([\d.]+)', out) or
         (unit != 's' and re.search(r'cpu_seconds=([\d.]+)', out)) or
         re.search(r'(?<!_)seconds=([\d.]+)', out))
    return float(m.group(1))


def instructions(prog, args, env):
    """User-space instructions callgrind counts for one run."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, 'callgrind.out')
        subprocess.run(['valgrind', '--tool=callgrind', f'--callgrind-out-file={out}', prog] + args,
                       env=env, check=True, capture_output=True, timeout=600)
        with open(out) as f:
            for line in f:
                if line.startswith(('summary:', 'totals:')):
                    return int(line.split()[1])
    raise RuntimeError('callgrind wrote no totals')


# Instructions per unit of a row: (mode and arguments at a small and at a large count, units
# between the two; the count goes last, or at the position a sixth element gives). lockbench
# runs its loop 4 times (a warm-up and 3 timed runs).
UNITS = {
    'flat-1': ('pair', ['flat', '1', '64'], 20000, 60000, lambda d: 4 * d),
    'nested-1': ('pair', ['nested', '1', '64'], 20000, 60000, lambda d: 8 * d),
    'flat-2': ('pair', ['flat', '2', '64'], 20000, 60000, lambda d: 8 * d),
    'nested-2': ('pair', ['nested', '2', '64'], 20000, 60000, lambda d: 16 * d),
    'relock-1': ('pair', ['relock', '1', '64'], 20000, 60000, lambda d: 8 * d),
    'groups': ('lifecycle', ['groups', '500', '50'], 2, 4, lambda d: 25000 * d),
    'lazy': ('round', ['lazy', '1', '16384'], 20000, 40000, lambda d: d),
    'tasks': ('thread', ['tasks', '8', '1'], 100, 200, lambda d: d, 1),
}


def per_unit(prog, row, env):
    """Instructions per unit of a row: the difference of two runs over their units."""
    _, args, small, large, units, *at = UNITS[row]
    pos = at[0] if at else len(args)
    counts = [instructions(prog, args[:pos] + [str(n)] + args[pos:], env)
              for n in (small, large)]
    return (counts[1] - counts[0]) / units(large - small)


def main_instructions(a, progs, configs):
    print('user-space instructions per unit (callgrind; difference of two iteration counts)')
    print(f'{"row":9} {"unit":9} ' + ' '.join(f'{n:>9}' for n, _ in configs) + '  ratio' +
          ('  baseline ratio' if a.baseline else ''))
    for row in a.rows.split(','):
        if row not in UNITS:
            continue
        n = {name: per_unit(progs[ROWS[row][0]], row, env) for name, env in configs}
        line = (f'{row:9} {UNITS[row][0]:9} ' + ' '.join(f'{n[name]:9.1f}' for name, _ in configs) +
                f' {n["traced"] / n["native"]:5.2f}x')
        if a.baseline:
            line += f' {n["base"] / n["native"]:14.2f}x'
        print(line)
        sys.stdout.flush()
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('lockbench')
    p.add_argument('stressbench')
    p.add_argument('lib')
    p.add_argument('--repeat', type=int, default=5, help='runs per configuration; median kept')
    p.add_argument('--rows', default=','.join(ROWS), help='which rows: ' + ','.join(ROWS))
    p.add_argument('--full', action='store_true', help='also LOCKTRACE_STACKS=full')
    p.add_argument('--classes', action='store_true', help='also LOCKTRACE_CLASSES=site')
    p.add_argument('--baseline', metavar='LIB', help='another liblocktrace, run alongside')
    p.add_argument('--instructions', action='store_true',
                   help='instructions per unit under callgrind instead of times (rows: ' +
                   ','.join(UNITS) + ')')
    a = p.parse_args(argv)
    progs = {'lockbench': a.lockbench, 'stressbench': a.stressbench}
    base = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    base.pop('LD_PRELOAD', None)
    lib = os.path.abspath(a.lib)
    configs = [('native', {}), ('traced', {'LD_PRELOAD': lib})]
    if a.full:
        configs.append(('full', {'LD_PRELOAD': lib, 'LOCKTRACE_STACKS': 'full'}))
    if a.classes:
        configs.append(('classes', {'LD_PRELOAD': lib, 'LOCKTRACE_CLASSES': 'site'}))
    if a.baseline:
        configs.append(('base', {'LD_PRELOAD': os.path.abspath(a.baseline)}))
    if a.instructions:
        return main_instructions(a, progs, [(n, {**base, **e}) for n, e in configs])
    print(f'median of {a.repeat} interleaved runs; ratio = traced / native; '
          f'noise = min-max of the per-run ratios; best = each configuration\'s best run')
    print(f'{"row":9} {"unit":7} ' + ' '.join(f'{n:>9}' for n, _ in configs[:2]) +
          f' {"ratio":>6} {"noise":>11}   best: native  traced  ratio' + ('  full  ratio' if a.full else '') +
          ('   classes vs traced (noise)' if a.classes else '') +
          ('  baseline  ratio best' if a.baseline else ''))
    for row in a.rows.split(','):
        prog, args, unit = ROWS[row]
        runs = {name: [] for name, _ in configs}
        for _ in range(a.repeat):
            for name, extra in configs:
                runs[name].append(measure(progs[prog], args, {**base, **extra}, unit))
        med = {name: statistics.median(v) for name, v in runs.items()}
        pair = [t / n for t, n in zip(runs['traced'], runs['native'])]
        line = (f'{row:9} {unit:7} {med["native"]:9.3f} {med["traced"]:9.3f} '
                f'{med["traced"] / med["native"]:5.2f}x {min(pair):5.2f}-{max(pair):4.2f}x'
                f' {min(runs["native"]):13.3f} {min(runs["traced"]):7.3f} '
                f'{min(runs["traced"]) / min(runs["native"]):5.2f}x')
        if a.full:
            line += f' {med["full"]:9.3f} {med["full"] / med["native"]:5.2f}x'
        if a.classes:
            vs = [c / t for c, t in zip(runs['classes'], runs['traced'])]
            line += (f' {med["classes"]:9.3f} {med["classes"] / med["traced"]:9.2f}x'
                     f' ({min(vs):.2f}-{max(vs):.2f}x)')
        if a.baseline:
            line += (f' {med["base"]:9.3f} {med["base"] / med["native"]:5.2f}x'
                     f' {min(runs["base"]) / min(runs["native"]):5.2f}x')
        print(line)
        sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
