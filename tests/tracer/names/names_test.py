#!/usr/bin/env python3
"""Names for unannotated locks (issue #11): each check runs one scenario of names.c (C or
C++, built at -O0 and -O2) under the tracer with report files on, and checks the name the
report gives each lock in the text on stderr, in the JSON file, and in `locktrace report
--as-recorded`, which must print the file as the program printed it.

  names_test.py CHECK --program PATH --lang c|cpp --locktrace PATH --lib PATH
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import expect  # noqa: E402
from checks import check_parser, need, run_main  # noqa: E402

TIMEOUT = 30
ADDR = r'0x[0-9a-f]+'


class Ctx:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.cpp = args.lang == 'cpp'

    def run(self, cmd, env=None, preload=True):
        e = dict(os.environ)
        for k in [k for k in e if k.startswith('LOCKTRACE_')]:
            del e[k]
        if preload:
            e['LD_PRELOAD'] = self.a.lib
        e.update(env or {})
        ending, out, err = expect.run(cmd, e, TIMEOUT, self.tmp)
        return ending, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def scenario(self, name, status=0, **env):
        """Runs it with report files on: (stderr, the one report file's JSON and path)."""
        d = os.path.join(self.tmp, name)
        env = {'LOCKTRACE_ACTION': 'edeadlk', 'LOCKTRACE_REPORT_DIR': d, **env}
        ending, self.out, err = self.run([self.a.program, name], env)
        need(ending == status, f'{name}: ended {ending}, not {status}\n{self.out}{err}')
        files = sorted(glob.glob(os.path.join(d, '*.json')))
        files = [f for f in files if not f.endswith('.summary.json')]
        need(len(files) == 1, f'{name}: report files {files}\n{err}')
        return err, json.load(open(files[0])), files[0]

    def same_as_recorded(self, err, path):
        ending, out, rerr = self.run([self.a.locktrace, 'report', '--as-recorded', path],
                                     preload=False)
        need(ending == 0 and out == err, f'rendered differently:\n{out}\n---\n{err}{rerr}')


def names_of(r):
    return [lock['name'] for lock in r['locks']]


def relocked(c, scenario, name):
    """A relock (self-deadlock) of the lock: its `lock:` line and its JSON name say `name` (a
    regex, or a function of the program's output giving one), and the tool prints the file as
    the program did."""
    err, r, path = c.scenario(scenario)
    if callable(name):
        name = name(c.out)
    need(r['kind'] == 'self-deadlock', f'kind {r["kind"]}')
    need(re.search(rf'^  lock:      {ADDR} mutex \(normal\) "{name}", held for lock', err, re.M),
         f'no lock line naming {name}:\n{err}')
    need(re.search(rf'^locktrace: self-deadlock: .* on mutex \(normal\) {ADDR} "{name}" but it holds it ',
                   err, re.M), f'the summary line does not name {name}:\n{err}')
    need(len(r['locks']) == 1 and re.fullmatch(name, r['locks'][0]['name'] or ''),
         f'JSON names {names_of(r)}, want {name}')
    c.same_as_recorded(err, path)


def table(c, scenario, rows):
    """A one-thread inversion whose "how it deadlocks" rows name both locks: rows[i] is
    (held, wanted), each a regex of what follows the lock's address."""
    err, r, path = c.scenario(scenario)
    need(r['kind'] == 'lock-order-inversion', f'kind {r["kind"]}')
    for held, wanted in rows:
        row = (rf'^    (T0|another thread, as T0 did,) holds mutex \(normal\) {ADDR} {held} '
               rf'\(lock\) and wants mutex \(normal\) {ADDR} {wanted} \(lock\)$')
        need(re.search(row, err, re.M), f'no row {row}:\n{err}')
    names = sorted(names_of(r))
    summary = [l for l in err.splitlines() if l.startswith('locktrace: lock-order-inversion: ')]
    cycle = re.findall(rf'{ADDR} "([^"]*)"', summary[0]) if summary else []
    need(len(cycle) == 3 and cycle[0] == cycle[2] and sorted(cycle[:2]) == names,
         f'the summary line does not name the locks {names}: {summary}')
    edges = [re.match(rf'  edge \d+: {ADDR} "([^"]*)" taken while holding {ADDR} "([^"]*)", first by ', l)
             for l in err.splitlines() if l.startswith('  edge ')]
    need(len(edges) == 2 and all(e and sorted(e.groups()) == names for e in edges),
         f'the edge lines do not name the locks {names}:\n{err}')
    taken = re.findall(rf'^    {ADDR} "([^"]*)" taken at:$', err, re.M)
    need(len(taken) == 4 and sorted(set(taken)) == names, f'"taken at" lines name {taken}, want {names}')
    c.same_as_recorded(err, path)
    return r


def global_(c):
    """'a lock in a global or static variable by its symbol (config_mu ...)'"""
    relocked(c, 'global', 'config_mu')


def file_static(c):
    """... static symbols included: a file-static variable (C++: internal linkage, _ZL)."""
    relocked(c, 'file-static', 'file_mu')


def function_static(c):
    """... a function-static variable: gcc's local symbol fn_mu.N in C, demangled in C++."""
    relocked(c, 'function-static', r'function_static\(\)::fn_mu' if c.cpp else r'fn_mu\.\d+')


def member(c):
    """'registry+0x8': a lock inside a global struct, by symbol and offset."""
    relocked(c, 'member', r'registry\+0x8')


def far_bss(c):
    """... also where libdw's idea of the module ends: 1 MiB into .bss, mapped anonymously."""
    relocked(c, 'far-bss', r'late\+0x100000')


def stack(c):
    """'a lock on a thread's stack by the thread and frame': this thread's own frame."""
    relocked(c, 'stack', r'stack of T0, frame of stack_user' + (r'\(\)' if c.cpp else ''))


def thread_stack(c):
    """... the same on a second thread, which is T1."""
    relocked(c, 'thread-stack', r'stack of T1, frame of stack_user' + (r'\(\)' if c.cpp else ''))


def thread_local(c):
    """A thread-local lock by its variable and thread: it was "anonymous mapping 0x...
    (N bytes), offset K" in the main thread (the block ld.so maps for its static TLS)."""
    relocked(c, 'thread-local', r'tls_mu \(thread-local of T0\)')


def thread_local_thread(c):
    """... and in another thread, whose static TLS glibc puts at the top of its stack: it was
    "stack of T1"."""
    relocked(c, 'thread-local-thread', r'tls_registry\+0x8 \(thread-local of T1\)')


def other_stack(c):
    """A lock on another thread's stack, named by the thread that finds the inversion: the
    frame comes from the other thread's own lock call in that frame."""
    frame = r'stack_owner\(void\*\)' if c.cpp else 'stack_owner'
    r = table(c, 'other-stack', [(f'"stack of T1, frame of {frame}"', '"order_a"'),
                                 ('"order_a"', f'"stack of T1, frame of {frame}"')])
    need(sorted(names_of(r)) == sorted(['order_a', f'stack of T1, frame of {frame}'.replace('\\', '')]),
         f'JSON names {names_of(r)}')


def other_stack_unseen(c):
    """... and when that thread made no lock call from the frame, nothing proves which frame
    holds it: "stack of T1" alone."""
    r = table(c, 'other-stack-unseen', [('"stack of T1"', '"order_a"'), ('"order_a"', '"stack of T1"')])
    need(sorted(names_of(r)) == ['order_a', 'stack of T1'], f'JSON names {names_of(r)}')


def heap(c):
    """'a lock inside a heap block as "heap block 0x... (N bytes), offset K"', as the program
    prints it (heap_test.py has the other kinds of block and report)."""
    def printed(out):
        block = re.search(r'^heap block .*$', out, re.M)
        need(block, f'the program printed no block:\n{out}')
        return re.escape(block.group(0))
    relocked(c, 'heap', printed)


def shared_anon(c):
    """A process-shared mutex in an mmap(MAP_SHARED | MAP_ANONYMOUS) mapping as "shared
    anonymous mapping 0x... (N bytes), offset K", as the program prints it: the kernel calls
    that mapping "/dev/zero (deleted)", which the report said ("mapping of /dev/zero
    (deleted), file offset 0x1040") though the program opened no such file."""
    def printed(out):
        where = re.search(r'^shared anonymous mapping .*$', out, re.M)
        need(where, f'the program printed no mapping:\n{out}')
        return re.escape(where.group(0))
    relocked(c, 'shared-anon', printed)


def table_globals(c):
    """'in the "how it deadlocks" table': both rows name both globals."""
    r = table(c, 'table', [(r'"registry\+0x8"', '"order_a"'), ('"order_a"', r'"registry\+0x8"')])
    need(sorted(names_of(r)) == ['order_a', 'registry+0x8'], f'JSON names {names_of(r)}')


def table_annotated(c):
    """'Annotated locks keep their annotation, now shown in the inversion table too.'"""
    r = table(c, 'annotated', [(r'"checking" \[account #2\]', r'"savings" \[account #1\]'),
                               (r'"savings" \[account #1\]', r'"checking" \[account #2\]')])
    got = sorted((lock['name'], lock['annotation']) for lock in r['locks'])
    need(got == [('checking', 'account #2'), ('savings', 'account #1')], f'JSON locks {got}')


def cpp_members(c):
    """C++: std::mutex in a namespace and as a static class member, demangled."""
    if not c.cpp:
        need(False, 'C++ only')
    r = table(c, 'cpp-members', [('"Cache::mu"', '"bank::ledger_mu"'),
                                 ('"bank::ledger_mu"', '"Cache::mu"')])
    need(sorted(names_of(r)) == ['Cache::mu', 'bank::ledger_mu'], f'JSON names {names_of(r)}')


def dump_abort(c):
    """The thread dump printed after a report that aborts names the other thread's locks: a
    global, and a lock in its frame (proven by its own lock call there)."""
    frame = r'dump_holder\(void\*\)' if c.cpp else 'dump_holder'
    ending, out, err = c.run([c.a.program, 'dump-abort'])
    need(ending == 'signal:SIGABRT', f'ended {ending}\n{err}')
    dump = err[err.find('locktrace: thread-dump:'):]
    need(re.search(rf'^    holds {ADDR} mutex "config_mu", taken at:$', dump, re.M),
         f'config_mu not named:\n{dump}')
    need(re.search(rf'^    holds {ADDR} mutex "stack of T1, frame of {frame}", taken at:$', dump, re.M),
         f'stack lock not named:\n{dump}')


def dump_signal(c):
    """The dump a signal asks for runs in the handler, where only the stack bounds the tracer
    keeps can be read: the stack lock is "stack of T1", the global has no name."""
    err, r, path = c.scenario('dump-signal', LOCKTRACE_DUMP_SIGNAL='SIGUSR1')
    need(r['kind'] == 'thread-dump', f'kind {r["kind"]}')
    need(re.search(rf'^    holds {ADDR} mutex "stack of T1", taken at:$', err, re.M),
         f'stack lock not named:\n{err}')
    need(re.search(rf'^    holds {ADDR} mutex, taken at:$', err, re.M), f'global named:\n{err}')
    need(sorted(n or '' for n in names_of(r)) == ['', 'stack of T1'], f'JSON names {names_of(r)}')


CHECKS = {
    'global': global_, 'file-static': file_static, 'function-static': function_static,
    'member': member, 'far-bss': far_bss, 'stack': stack, 'thread-stack': thread_stack, 'other-stack': other_stack,
    'thread-local': thread_local, 'thread-local-thread': thread_local_thread,
    'other-stack-unseen': other_stack_unseen, 'heap': heap, 'shared-anon': shared_anon,
    'table': table_globals,
    'annotated': table_annotated, 'cpp-members': cpp_members, 'dump-abort': dump_abort,
    'dump-signal': dump_signal,
}


def main():
    p = check_parser(CHECKS, description=__doc__.splitlines()[0])
    p.add_argument('--program', required=True)
    p.add_argument('--lang', choices=['c', 'cpp'], required=True)
    p.add_argument('--locktrace', required=True)
    p.add_argument('--lib', required=True)
    return run_main(CHECKS, p, ('program', 'locktrace', 'lib'), Ctx, 'locktrace-names-')


if __name__ == '__main__':
    sys.exit(main())
