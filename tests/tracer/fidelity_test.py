#!/usr/bin/env python3
"""Report fidelity tests: programs in tests/tracer/fidelity/ are compiled here with the named
compiler at -O0 and -O2, run under the tracer, and their reports checked frame by frame
(function names and file:line) against the lines the sources mark with '@name' comments.

  fidelity_test.py CHECK --cc COMPILER --lib LIB --locktrace PATH --src DIR

CHECK is one of the functions in CHECKS. The C++ programs use the C++ compiler that goes
with COMPILER (gcc: g++, clang: clang++). Exit 0 on success, 77 (skip, with the reason) when
the compiler is not installed, 1 with the reasons otherwise.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import expect  # noqa: E402
from checks import Failed, Skipped, need  # noqa: E402

TIMEOUT = 30
CXX = {'gcc': 'g++', 'clang': 'clang++'}
FRAME = re.compile(r'^    #\d+ 0x[0-9a-f]+ in (\(inlined\) )?(.*?)(?: (\S+):(\d+))?(?: \(\S+\))?$')


def markers(path):
    """'@name' comments of a source file: name -> line number."""
    out = {}
    for n, line in enumerate(open(path), 1):
        m = re.search(r'(?:/\*|//) @(\S+)', line)
        if m:
            out[m.group(1)] = n
    return out


def short(function):
    """A frame's function as the markers name it: no parameter list, no namespace."""
    return re.sub(r'\(.*\)( const)?$', '', function).split('::')[-1]


def stacks(text):
    """The stacks of a text report in order: (heading, [(function, line)], partial)."""
    out = []
    for line in text.splitlines():
        m = FRAME.match(line)
        if m and out and out[-1][3]:
            out[-1][1].append((short(m.group(2)), int(m.group(4) or 0)))
        elif line.startswith('    (frames recorded when it was taken') and out:
            out[-1][2] = True
        elif line.rstrip().endswith(':'):
            out.append([line.strip(), [], False, True])
        elif out:
            out[-1][3] = False  # the stack, if any, has ended
    return [(h, f, p) for h, f, p, _ in out if f]


def check_chain(where, frames, partial, truth, decisive=-2):
    """frames (a report's stack, reduced to the marked functions) must be truth with only
    frames a tail call removed left out, must reach truth[decisive] (the frame that tells
    this acquisition from the others), and, unless it says it is partial, truth's end."""
    got = [f for f in frames if f[0] in {fn for fn, _ in truth}]
    it = iter(truth)
    need(all(any(f == t for t in it) for f in got),
         f'{where}: frames {got} are not the acquisition {truth}')
    need(truth[decisive] in got, f'{where}: {truth[decisive]} missing from {got}')
    need(partial or truth[-1] in got, f'{where}: not partial, yet {truth[-1]} missing: {got}')


class Program:
    def __init__(self, a, tmp, source, opt, *flags, libs=(), debug='-g'):
        self.a, self.tmp = a, tmp
        self.src = os.path.join(a.src, source)
        self.marks = markers(self.src)
        cc = a.cc if source.endswith('.c') else CXX[a.cc]
        self.exe = os.path.join(tmp, f'{os.path.basename(source)}-{cc}{opt}{debug}')
        subprocess.run([cc, debug, opt, '-pthread', *flags, self.src, *libs, '-o', self.exe],
                       check=True, cwd=tmp)  # where -gsplit-dwarf writes its .dwo files
        self.name = f'{source} {cc} {opt}'

    def line(self, mark):
        return self.marks[mark]

    def run(self, *args, **env):
        e = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
        e['LD_PRELOAD'] = self.a.lib
        e['LOCKTRACE_REPORT_DIR'] = os.path.join(self.tmp, 'reports')
        e.update(env)
        for f in glob.glob(os.path.join(self.tmp, 'reports', '*')):
            os.unlink(f)
        ending, out, err = expect.run([self.exe] + list(args), e, TIMEOUT, self.tmp)
        return ending, out.decode(), err.decode()

    def rendered(self):
        """Every report file the last run left, rendered by `locktrace report`."""
        files = sorted(glob.glob(os.path.join(self.tmp, 'reports', '*.json')))
        need(files, f'{self.name}: no report file written')
        p = subprocess.run([self.a.locktrace, 'report'] + files, capture_output=True, text=True,
                           timeout=TIMEOUT)
        return p.stdout


def chains(p):
    """The four acquisitions of helper_order: (lock, order) -> truth, innermost first."""
    out = {}
    for order, caller in (('01', 'Acquire_0_then_1'), ('10', 'Acquire_1_then_0')):
        for lock in '01':
            out[lock, order] = [('acquire', p.line('acquire')),
                                (f'Acquire{lock}', p.line(f'Acquire{lock}')),
                                (caller, p.line(f'{caller}:{lock}')),
                                ('main', p.line(f'main:{order}'))]
    return out


def check_inversion_text(p, text, where):
    """Both edges of the inversion: 'held' is the first lock its function took, 'taken' the
    second, each with its own caller's lines."""
    st = [s for s in stacks(text) if s[0].endswith('taken at:')]
    need(len(st) == 4, f'{where}: {len(st)} "taken at" stacks, want 4:\n{text}')
    truth = chains(p)
    for edge in range(2):
        (_, held, hp), (_, taken, tp) = st[2 * edge], st[2 * edge + 1]
        order = '01' if any(f[0] == 'Acquire_0_then_1' for f in held) else '10'
        first, second = order[0], order[1]
        check_chain(f'{where} edge {edge + 1} held lock', held, hp, truth[first, order])
        check_chain(f'{where} edge {edge + 1} new lock', taken, tp, truth[second, order])


def lazy_order(a, tmp):
    """Lock-order report through one shared helper: each lock's stack names its own caller."""
    for source in ('helper_order.c', 'helper_order.cpp'):
        for opt in ('-O0', '-O2'):
            p = Program(a, tmp, source, opt)
            ending, out, err = p.run()
            need(ending == 0 and out == 'done\n', f'{p.name}: {ending} {out!r}\n{err}')
            need('lock-order-inversion: 2 locks' in err, f'{p.name}: no inversion:\n{err}')
            check_inversion_text(p, err, f'{p.name} (stderr)')
            check_inversion_text(p, p.rendered(), f'{p.name} (locktrace report)')


def lazy_self(a, tmp):
    """Self-deadlock through the shared helper: the earlier acquisition names its caller."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'helper_order.c', opt)
        ending, out, err = p.run('self')
        need(ending == 'signal:SIGABRT', f'{p.name}: {ending}\n{err}')
        # at -O2 the request's helpers are tail calls: main is all that is left of it
        earlier = [('acquire', p.line('acquire')), ('Acquire0', p.line('Acquire0')),
                   ('Relock', p.line('Relock:first')), ('main', p.line('main:relock'))]
        request = [('acquire', p.line('acquire')), ('Acquire0', p.line('Acquire0')),
                   ('Take_again', p.line('Take_again')), ('Relock', p.line('Relock:again')),
                   ('main', p.line('main:relock'))]
        for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
            st = {h: (f, part) for h, f, part in stacks(text)}
            held = st.get('earlier acquisition by this thread (held for lock):')
            req = st.get('request (this call):')
            need(held and req, f'{p.name} ({how}): stacks missing:\n{text}')
            check_chain(f'{p.name} ({how}) earlier acquisition', *held, earlier)
            check_chain(f'{p.name} ({how}) request', *req, request, decisive=-1)


def same_text(a, tmp):
    """In-process symbolization (inlined calls with their own lines, C++ names) is the one
    `locktrace report` does from the binaries on disk: the text is the same, byte for byte."""
    runs = [(src, opt, arg) for src in ('helper_order.c', 'helper_order.cpp')
            for opt in ('-O0', '-O2') for arg in ([], ['self'])
            if not (arg and src.endswith('.cpp'))]
    for source, opt, args in runs:
        p = Program(a, tmp, source, opt)
        ending, out, err = p.run(*args)
        need('locktrace: ' in err, f'{p.name}: no report:\n{err}')
        err = err.split('locktrace: thread-dump:')[0]  # after an abort; not part of the report
        text = p.rendered()
        need(text == err, f'{p.name} {args}: stderr and `locktrace report` differ:\n'
             f'--- stderr\n{err}--- locktrace report\n{text}')
        if opt == '-O2':
            need('in (inlined) ' in err, f'{p.name}: no inlined frame at -O2:\n{err}')


def demangle(a, tmp):
    """C++ names demangled in a program that does not load libstdc++, and its self-deadlock's
    stacks right: the earlier acquisition at main's first call, the request at the second."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'plain_cxx.cpp', opt, '-Wl,--as-needed')
        dyn = subprocess.run(['readelf', '-d', p.exe], capture_output=True, text=True).stdout
        need('NEEDED' in dyn and 'libstdc++' not in dyn, f'{p.name} needs libstdc++:\n{dyn}')
        ending, out, err = p.run()
        need(ending == 'signal:SIGABRT', f'{p.name}: {ending}\n{err}')
        need('_ZN' not in err, f'{p.name}: mangled names in the report:\n{err}')
        if opt == '-O0':  # -O2 makes both calls tail calls: main is the only frame left
            need('cache::Guarded<int>::lock()' in err and 'cache::Table::relock(int)' in err,
                 f'{p.name}: C++ names missing:\n{err}')
        st = {h: (f, part) for h, f, part in stacks(err)}
        held = st.get('earlier acquisition by this thread (held for lock):')
        req = st.get('request (this call):')
        need(held and req, f'{p.name}: stacks missing:\n{err}')
        chain = [('lock', p.line('lock')), ('relock', p.line('relock'))]
        check_chain(f'{p.name} earlier acquisition', *held, chain + [('main', p.line('main:first'))],
                    decisive=-1)
        check_chain(f'{p.name} request', *req, chain + [('main', p.line('main:again'))],
                    decisive=-1)


def whole(where, stack, truth, text):
    """A recorded stack that names every frame of truth (function and line) and is not cut
    short at the frames recorded when the lock was taken."""
    need(stack, f'{where}: stack missing:\n{text}')
    frames, partial = stack
    need(not partial, f'{where}: only the frames recorded when it was taken:\n{text}')
    check_chain(where, frames, partial, truth, decisive=0)


def check_wrapped(p):
    """wrap_std.cpp and wrap_glib.c: in the self-deadlock ('upgrade') and in both edges of
    the inversion ('order'), every stack names the program's function, line and caller and is
    whole (the earlier acquisition recorded through the wrappers and joined to the current
    stack)."""
    ending, out, err = p.run('upgrade')
    need(ending == 'signal:SIGABRT', f'{p.name} upgrade: {ending}\n{err}')
    for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
        st = {h: (f, part) for h, f, part in stacks(text)}
        where = f'{p.name} upgrade ({how})'
        whole(f'{where} earlier acquisition', st.get('earlier acquisition by this thread (held for read):'),
              [('Read_then_write', p.line('Read_then_write:read')), ('main', p.line('main:upgrade'))], text)
        whole(f'{where} request', st.get('request (this call):'),
              [('Write_registry', p.line('Write_registry')),
               ('Read_then_write', p.line('Read_then_write:write')), ('main', p.line('main:upgrade'))], text)
    ending, out, err = p.run('order')
    need(ending == 0 and out == 'done\n', f'{p.name} order: {ending} {out!r}\n{err}')
    need('lock-order-inversion: 2 locks' in err, f'{p.name}: no inversion:\n{err}')
    for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
        st = [s for s in stacks(text) if s[0].endswith('taken at:')]
        need(len(st) == 4, f'{p.name} ({how}): {len(st)} "taken at" stacks, want 4:\n{text}')
        for edge in range(2):
            held, taken = st[2 * edge], st[2 * edge + 1]
            fn = 'Registry_then_cache' if any(f[0] == 'Registry_then_cache' for f in held[1]) \
                else 'Cache_then_registry'
            first, second = ('registry', 'cache') if fn == 'Registry_then_cache' else ('cache', 'registry')
            call = p.line('main:rc' if fn == 'Registry_then_cache' else 'main:cr')
            where = f'{p.name} ({how}) edge {edge + 1}'
            whole(f'{where} held lock', held[1:], [(fn, p.line(f'{fn}:{first}')), ('main', call)], text)
            whole(f'{where} new lock', taken[1:], [(fn, p.line(f'{fn}:{second}')), ('main', call)], text)


def wrappers_std(a, tmp):
    """Locks taken through libstdc++'s wrappers (at -O0 five frames of their own between
    std::unique_lock's user and pthread): see check_wrapped."""
    for opt in ('-O0', '-O2'):
        check_wrapped(Program(a, tmp, 'wrap_std.cpp', opt, '-std=c++17'))


def wrappers_glib(a, tmp):
    """Locks taken through GLib (GRWLock and its lockers, GRecMutex): see check_wrapped."""
    glib = subprocess.run(['pkg-config', '--cflags', '--libs', 'glib-2.0'], capture_output=True,
                          text=True)
    if glib.returncode != 0:
        raise Skipped('GLib is not installed (apt-get install libglib2.0-dev)')
    for opt in ('-O0', '-O2'):
        check_wrapped(Program(a, tmp, 'wrap_glib.c', opt, libs=glib.stdout.split()))


def wrappers_user(a, tmp):
    """LOCKTRACE_WRAPPERS names the program's own wrappers. wrap_user.c's lock_cache(): its
    earlier acquisition is partial without the variable (so this check can fail) and whole,
    down to main, with it. helper_order's shared acquire() helper listed: both edges of the
    inversion still name their own callers, whole."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'wrap_user.c', opt)
        held = [('open_txn', p.line('open_txn')), ('begin', p.line('begin')),
                ('begin_update', p.line('begin_update')), ('update', p.line('update:begin')),
                ('main', p.line('main'))]
        request = [('lock_cache', p.line('lock_cache')), ('refresh', p.line('refresh')),
                   ('update', p.line('update:refresh')), ('main', p.line('main'))]
        heading = 'earlier acquisition by this thread (held for lock):'
        ending, out, err = p.run()
        need(ending == 'signal:SIGABRT', f'{p.name}: {ending}\n{err}')
        st = {h: (f, part) for h, f, part in stacks(err)}
        need(st.get(heading) and st[heading][1],
             f'{p.name}: without LOCKTRACE_WRAPPERS the earlier acquisition should be partial:\n{err}')
        ending, out, err = p.run(LOCKTRACE_WRAPPERS='lock_cache')
        need(ending == 'signal:SIGABRT', f'{p.name} LOCKTRACE_WRAPPERS=lock_cache: {ending}\n{err}')
        for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
            st = {h: (f, part) for h, f, part in stacks(text)}
            where = f'{p.name} LOCKTRACE_WRAPPERS=lock_cache ({how})'
            whole(f'{where} earlier acquisition', st.get(heading), held, text)
            whole(f'{where} request', st.get('request (this call):'), request, text)
        for source in ('helper_order.c', 'helper_order.cpp'):
            p = Program(a, tmp, source, opt)
            ending, out, err = p.run(LOCKTRACE_WRAPPERS='acquire,release')
            need(ending == 0 and out == 'done\n', f'{p.name}: {ending} {out!r}\n{err}')
            where = f'{p.name} LOCKTRACE_WRAPPERS=acquire,release'
            check_inversion_text(p, err, where)
            need('(frames recorded when it was taken' not in err, f'{where}: a partial stack:\n{err}')


def anonymous(text):
    """A report without what changes from run to run: addresses, thread and process ids."""
    return re.sub(r'(tid|pid) \d+', r'\1 N', re.sub(r'0x[0-9a-f]+', '0x', text))


def wrappers_nomatch(a, tmp):
    """LOCKTRACE_WRAPPERS patterns that match no function change nothing: every report is the
    same as without the variable (addresses and ids aside)."""
    patterns = 'no_such_function,*does_not_exist*,std::nothing::*,Guard<*>::lock(int)'
    runs = [('helper_order.c', []), ('helper_order.c', ['self']), ('helper_order.cpp', []),
            ('wrap_user.c', []), ('wrap_std.cpp', ['order']), ('wrap_std.cpp', ['upgrade'])]
    for opt in ('-O0', '-O2'):
        for source, args in runs:
            p = Program(a, tmp, source, opt, *(['-std=c++17'] if source.endswith('.cpp') else []))
            plain = p.run(*args)
            listed = p.run(*args, LOCKTRACE_WRAPPERS=patterns)
            need('locktrace: ' in plain[2], f'{p.name} {args}: no report:\n{plain[2]}')
            need(plain[:2] == listed[:2] and anonymous(plain[2]) == anonymous(listed[2]),
                 f'{p.name} {args}: LOCKTRACE_WRAPPERS={patterns} changed the outcome:\n'
                 f'--- without\n{plain}\n--- with\n{listed}')


def reports(err):
    """The text reports in stderr, in order."""
    return ['locktrace: ' + r for r in err.split('locktrace: ')[1:]]


def late_dlopen(a, tmp):
    """Libraries dlopened after the first report (late_main.c, late_lib.c): each report they
    cause names their functions with file:line and their locks, including the second library,
    loaded where the first one was closed, at another path and rebuilt at the same path."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'late_main.c', opt)
        lib_src = os.path.join(a.src, 'late_lib.c')
        libs = {}
        for which, flags in (('first', []), ('second', ['-DSECOND'])):
            libs[which] = os.path.join(tmp, f'late_{which}{opt}.so')
            subprocess.run([a.cc, '-g', opt, '-fPIC', '-shared', *flags, lib_src, '-o',
                            libs[which]], check=True)
        lib = markers(lib_src)
        same_path = os.path.join(tmp, f'late_plugin{opt}.so')
        new = os.path.join(tmp, f'late_new{opt}.so')
        shutil.copy(libs['first'], same_path)
        shutil.copy(libs['second'], new)
        runs = {'two paths': [libs['first'], libs['second']],
                'one path, rebuilt': [same_path, same_path, new]}
        for how, args in runs.items():
            where = f'{p.name} {how}'
            ending, out, err = p.run(*args, LOCKTRACE_ACTION='edeadlk')
            lines = out.splitlines()
            need(ending == 0 and len(lines) == 3 and all(l.endswith(': EDEADLK') for l in lines),
                 f'{where}: {ending} {out!r}\n{err}')
            need(lines[1].split(':')[0] == lines[2].split(':')[0],
                 f'{where}: the second library was not loaded where the first was: {out!r}')
            got = reports(err)
            need(len(got) == 3, f'{where}: {len(got)} reports, want 3:\n{err}')
            for text, which in ((got[1], 'first'), (got[2], 'second')):
                fn, line = f'{which}_relock', lib[f'{which}_relock']
                need(f' mutex (normal) "{which}_lock", held' in text,
                     f'{where}: report of the {which} library does not name {which}_lock:\n{text}')
                need(re.search(rf'^    #0 0x[0-9a-f]+ in {fn} \S*late_lib\.c:{line} ', text, re.M),
                     f'{where}: report of the {which} library: #0 is not {fn} late_lib.c:{line}:\n{text}')
                st = {h: (f, part) for h, f, part in stacks(text)}
                req = st.get('request (this call):')
                need(req, f'{where}: no request stack:\n{text}')
                check_chain(f'{where} {which} library request', *req,
                            [(fn, line), ('plugin_relock', lib[f'plugin_relock:{which}']),
                             ('run', p.line('run')), ('main', p.line(f'main:{which}'))], decisive=0)


def signature_wrappers(a, tmp):
    """A bug reached through libstdc++'s lock wrappers (sig_std.cpp) has one signature at -O0
    (the wrappers are calls of their own) and -O2 (inlined), through std::lock_guard and
    std::unique_lock alike; reached from another caller, it is another bug."""
    sigs = {}
    for opt in ('-O0', '-O2'):
        for guard in ('std::lock_guard', 'std::unique_lock'):
            for arg in ('main', 'other'):
                p = Program(a, tmp, 'sig_std.cpp', opt, f'-DGUARD={guard}')
                ending, out, err = p.run(arg, LOCKTRACE_ACTION='edeadlk')
                need(ending == 0 and out.startswith('relock: EDEADLK\n'), f'{p.name} {guard} {arg}: {ending} {out!r}\n{err}')
                files = [f for f in glob.glob(os.path.join(tmp, 'reports', '*.json'))
                         if not f.endswith('.summary.json')]
                need(len(files) == 1, f'{p.name} {guard} {arg}: report files {files}')
                sigs[opt, guard, arg] = json.load(open(files[0]))['signature']
    for arg in ('main', 'other'):
        got = {k: v for k, v in sigs.items() if k[2] == arg}
        need(len(set(got.values())) == 1, f'{arg}: one bug, several signatures: {got}')
    need(sigs['-O0', 'std::lock_guard', 'main'] != sigs['-O0', 'std::lock_guard', 'other'],
         f'two callers, one signature: {sigs}')


def each_whole(where, found, truths, text):
    """found (stacks of one kind) must be one whole stack per truth, told apart by the truth's
    first function (the one that makes the call)."""
    need(len(found) == len(truths), f'{where}: {len(found)} stacks, want {len(truths)}:\n{text}')
    for name, truth in truths.items():
        mine = [s for s in found if truth[0][0] in {f for f, _ in s[1]}]
        need(len(mine) == 1, f'{where}: {len(mine)} stacks through {truth[0][0]}, want 1:\n{text}')
        whole(f'{where} {name}', mine[0][1:], truth, text)


def waits(a, tmp):
    """Reports made while threads wait (waiters.c), each from a call chain of its own: a
    deadlock of three threads, and a thread dump of a lock wait, a condition wait and a join.
    Each says where every thread waits and where it took what it holds, whole, with the
    function and line of each call from the thread's start function down; the dump names a
    thread renamed while it waits by its new name."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'waiters.c', opt, '-I' + os.path.join(a.src, '..', '..'))
        L = p.line
        waiting = {'shallow': [('Wait_shallow', L('shallow:wait')), ('Cycle_worker', L('cycle:0'))],
                   'deep': [('Inner', L('inner:wait')), ('Middle', L('middle')), ('Outer', L('outer')),
                            ('Around', L('around')), ('Wait_deep', L('deep:wait')), ('Cycle_worker', L('cycle:1'))],
                   'helper': [('Take', L('take')), ('Wait_helper', L('helper:wait')),
                              ('Cycle_worker', L('cycle:2'))]}
        holding = {'shallow': [('Wait_shallow', L('shallow:hold')), ('Cycle_worker', L('cycle:0'))],
                   'deep': [('Wait_deep', L('deep:hold')), ('Cycle_worker', L('cycle:1'))],
                   'helper': [('Take', L('take')), ('Wait_helper', L('helper:hold')),
                              ('Cycle_worker', L('cycle:2'))]}
        ending, out, err = p.run('cycle')
        need(ending == 'signal:SIGABRT' and 'deadlock: 3 threads wait for each other' in err,
             f'{p.name} cycle: {ending} {out!r}\n{err}')
        report = err.split('locktrace: thread-dump:')[0]
        for text, how in ((report, 'stderr'), (p.rendered(), 'locktrace report')):
            st = stacks(text)
            where = f'{p.name} cycle ({how})'
            each_whole(f'{where} waiting', [s for s in st if s[0] == 'waiting at:'], waiting, text)
            each_whole(f'{where} holding', [s for s in st if s[0] == 'taken at:'], holding, text)
        waiting = {'lock': [('Gate_wait', L('gate:wait')), ('Dump_worker', L('dump:0'))],
                   'condition': [('Cond_wait_holding', L('cond:wait')), ('Dump_worker', L('dump:1'))],
                   'join': [('Join_holding', L('join:wait')), ('Dump_worker', L('dump:2'))]}
        holding = {'condition': [('Cond_wait_holding', L('cond:hold')), ('Dump_worker', L('dump:1'))],
                   'join': [('Join_holding', L('join:hold')), ('Dump_worker', L('dump:2'))]}
        ending, out, err = p.run('dump', LOCKTRACE_DUMP_SIGNAL='SIGUSR1')
        need(ending == 0 and out == 'dumped\n', f'{p.name} dump: {ending} {out!r}\n{err}')
        text = p.rendered()
        for name, what in (('gate-waiter', 'holds 0 locks'), ('cond-renamed', 'holds 1 lock'),
                           ('join-waiter', 'holds 1 lock')):
            need(f'"{name}": {what}, waiting\n' in text,
                 f'{p.name} dump: no "{name}" that {what} and waits:\n{text}')
        st = [s for s in stacks(text) if 'Dump_worker' in {f for f, _ in s[1]}]
        where = f'{p.name} dump (locktrace report)'
        each_whole(f'{where} waiting', [s for s in st if s[0].startswith('waits ')], waiting, text)
        each_whole(f'{where} holding', [s for s in st if s[0].endswith('taken at:')], holding, text)


def exact(where, stack, truth, text):
    """A stack whose frames of truth's functions are truth, in order, none missing, and that is
    not cut short at the frames recorded when the lock was taken."""
    need(stack, f'{where}: stack missing:\n{text}')
    frames, partial = stack
    got = [f for f in frames if f[0] in {fn for fn, _ in truth}]
    need(not partial and got == truth, f'{where}: frames {got}, want {truth}:\n{text}')


def lto(a, tmp):
    """Link-time optimisation (lto_main.c and lto_lock.c at -O2 -flto): the helper inlined from
    the other file is a frame of its own with its line, and its caller's line follows, in the
    inversion's four stacks and the self-deadlock's two, on stderr and in `locktrace report`."""
    other = os.path.join(a.src, 'lto_lock.c')
    take = ('lock_it', markers(other)['lock_it'])
    p = Program(a, tmp, 'lto_main.c', '-O2', '-flto', libs=[other])
    L = p.line
    ending, out, err = p.run()
    need(ending == 0 and out == 'done\n', f'{p.name}: {ending} {out!r}\n{err}')
    need('lock-order-inversion: 2 locks' in err, f'{p.name}: no inversion:\n{err}')
    for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
        st = [s for s in stacks(text) if s[0].endswith('taken at:')]
        need(len(st) == 4, f'{p.name} ({how}): {len(st)} "taken at" stacks, want 4:\n{text}')
        for edge, (held, taken) in enumerate(((st[0], st[1]), (st[2], st[3])), 1):
            fn = 'Zero_then_one' if any(f[0] == 'Zero_then_one' for f in held[1]) else 'One_then_zero'
            order = '01' if fn == 'Zero_then_one' else '10'
            where = f'{p.name} ({how}) edge {edge}'
            exact(f'{where} held lock', held[1:],
                  [take, (fn, L(f'{fn}:{order[0]}')), ('main', L(f'main:{order}'))], text)
            exact(f'{where} new lock', taken[1:],
                  [take, (fn, L(f'{fn}:{order[1]}')), ('main', L(f'main:{order}'))], text)
    ending, out, err = p.run('self')
    need(ending == 'signal:SIGABRT', f'{p.name} self: {ending}\n{err}')
    for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
        st = {h: (f, part) for h, f, part in stacks(text)}
        where = f'{p.name} self ({how})'
        exact(f'{where} request', st.get('request (this call):'),
              [take, ('Relock', L('Relock:again')), ('main', L('main:relock'))], text)
        exact(f'{where} earlier acquisition', st.get('earlier acquisition by this thread (held for lock):'),
              [take, ('Relock', L('Relock:first')), ('main', L('main:relock'))], text)


def split_dwarf(a, tmp):
    """-gsplit-dwarf (helper_order.c at -O2): the program holds only skeleton units, the calls
    inlined are described in the .dwo file beside it; both stacks of each edge of the
    inversion name them with their lines, on stderr and in `locktrace report`."""
    p = Program(a, tmp, 'helper_order.c', '-O2', '-gsplit-dwarf')
    need(glob.glob(os.path.join(tmp, '*.dwo')), f'{p.name}: no .dwo file written in {tmp}')
    ending, out, err = p.run()
    need(ending == 0 and out == 'done\n', f'{p.name}: {ending} {out!r}\n{err}')
    need(re.search(r'in \(inlined\) acquire \S*helper_order\.c:', err),
         f'{p.name}: no inlined frame:\n{err}')
    check_inversion_text(p, err, f'{p.name} (stderr)')
    check_inversion_text(p, p.rendered(), f'{p.name} (locktrace report)')


def split_missing(a, tmp):
    """-gsplit-dwarf (helper_order.c at -O2) without its .dwo file: the program's line table
    still gives each frame a line, which may be an inlined call's (acquire's, under main); every
    frame in helper_order.c says that the calls inlined there are unknown and which file would
    name them, on stderr and in `locktrace report`. With the file back, none does."""
    p = Program(a, tmp, 'helper_order.c', '-O2', '-gsplit-dwarf')
    dwo = glob.glob(os.path.join(tmp, '*.dwo'))
    need(len(dwo) == 1, f'{p.name}: .dwo files {dwo}, want 1')
    hidden = os.path.join(tmp, 'hidden')
    note = re.compile(r' \S*helper_order\.c:\d+ \((\S+) not found: the calls inlined here, whose line '
                      r'this may be, are unknown\) \(')
    for missing in (True, False):
        if missing:
            os.rename(dwo[0], hidden)
        ending, out, err = p.run('self')
        need(ending == 'signal:SIGABRT', f'{p.name}: {ending}\n{err}')
        texts = ((err.split('locktrace: thread-dump:')[0], 'stderr'), (p.rendered(), 'locktrace report'))
        if missing:
            os.rename(hidden, dwo[0])
        for text, how in texts:
            where = f'{p.name} {"without" if missing else "with"} its .dwo ({how})'
            frames = [l for l in text.splitlines() if re.search(r'helper_order\.c:\d+', l)]
            need(frames, f'{where}: no frame in helper_order.c:\n{text}')
            named = [os.path.basename(m.group(1)) for m in map(note.search, frames) if m]
            want = [os.path.basename(dwo[0])] * len(frames) if missing else []
            need(named == want, f'{where}: frames say {named}, want {want}:\n{text}')
        need(texts[0][0] == texts[1][0], f'{p.name}: stderr and `locktrace report` differ:\n'
             f'--- stderr\n{texts[0][0]}--- locktrace report\n{texts[1][0]}')


def recorded(a, tmp):
    """recorded.c at -O0 and -O2: a stack recorded lazily that reaches the thread's start is
    whole (exit-held's "taken at": no "frames recorded" line, JSON partial false); a lock's
    "lock first seen" stack of recorded frames that do not reach main says so, and its frames
    are the first of the true chain."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'recorded.c', opt)
        L = p.line
        ending, out, err = p.run('exit')
        need(ending == 0 and 'locktrace: exit-held: ' in err, f'{p.name} exit: {ending}\n{err}')
        files = [f for f in glob.glob(os.path.join(tmp, 'reports', '*.json')) if not f.endswith('.summary.json')]
        taken = [s for f in files for s in json.load(open(f))['stacks'] if s['role'] == 'taken']
        need(len(taken) == 1 and not taken[0]['partial'], f'{p.name} exit: JSON taken stacks {taken}')
        for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
            where = f'{p.name} exit ({how})'
            st = [x for x in stacks(text) if x[0] == 'taken at:']
            need(len(st) == 1, f'{where}: {len(st)} "taken at" stacks:\n{text}')
            whole(f'{where} taken', st[0][1:], [('Hold', L('hold')), ('Exiting', L('exiting'))], text)
        ending, out, err = p.run('deep')
        need(ending == 0 and 'locktrace: bad-unlock: ' in err, f'{p.name} deep: {ending}\n{err}')
        truth = [('Deep1', L('deep1')), ('Deep2', L('deep2')), ('Deep3', L('deep3')),
                 ('Deep4', L('deep4')), ('Deep5', L('deep5')), ('main', L('main:deep'))]
        for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
            where = f'{p.name} deep ({how})'
            st = {h: (f, part) for h, f, part in stacks(text)}
            first = st.get('lock first seen:')
            need(first and first[1], f'{where}: "lock first seen" not marked as recorded frames:\n{text}')
            got = [f for f in first[0] if f[0] in {fn for fn, _ in truth}]
            need(got and got == truth[:len(got)], f'{where}: first seen at {got}, want the start of {truth}')


def leaked(a, tmp):
    """leak.c: a lock leaked by a call that returned, requested again through the same helpers
    from another caller. The request names that caller; the earlier acquisition names the
    caller that leaked it, or only its recorded frames, marked as such, never the request's
    caller. The same through a loop that takes the lock twice at one call site, and for the
    holder of a leaked lock whose memory is freed."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'leak.c', opt)
        L = p.line
        helpers = [('Take', L('Take'))] + [(f'Depth{i}', L(f'Depth{i}')) for i in range(1, 6)]
        runs = {'leak': ([], [('Leaky', L('Leaky')), ('main', L('main:leaky'))],
                         [('Other', L('Other')), ('main', L('main:other'))]),
                'loop': (['loop'], [('Loop', L('Loop')), ('main', L('main:loop'))],
                         [('Loop', L('Loop')), ('main', L('main:loop'))])}
        for name, (args, earlier_callers, request_callers) in runs.items():
            ending, out, err = p.run(*args)
            need(ending == 'signal:SIGABRT', f'{p.name} {name}: {ending}\n{err}')
            for text, how in ((err.split('locktrace: thread-dump:')[0], 'stderr'), (p.rendered(), 'locktrace report')):
                st = {h: (f, part) for h, f, part in stacks(text)}
                where = f'{p.name} {name} ({how})'
                exact(f'{where} request', st.get('request (this call):'), helpers + request_callers, text)
                held = st.get('earlier acquisition by this thread (held for lock):')
                need(held, f'{where}: no earlier acquisition:\n{text}')
                truth = helpers + earlier_callers
                got = [f for f in held[0] if f[0] in {fn for fn, _ in truth + request_callers}]
                need(got == truth or (held[1] and got and got == truth[:len(got)]),
                     f'{where} earlier acquisition: frames {got}, want {truth} or, marked as '
                     f'recorded only, its start:\n{text}')
            if name == 'leak' and held[1]:  # the HTML page says what a partial stack is too
                files = sorted(glob.glob(os.path.join(tmp, 'reports', '*.json')))
                page = subprocess.run([a.locktrace, 'report', '--html'] + files, capture_output=True,
                                      text=True, timeout=TIMEOUT).stdout
                need('(frames recorded when it was taken;' in page and 'only the call site' not in page,
                     f'{p.name} {name} (html): a partial stack is not marked as such:\n{page}')
        ending, out, err = p.run('free', LOCKTRACE_FREE_HELD='report')
        need(ending == 0 and 'locktrace: free-held: ' in err, f'{p.name} free: {ending}\n{err}')
        for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
            holder = [(f, part) for h, f, part in stacks(text) if h.startswith('held for lock by ')]
            where = f'{p.name} free ({how}) holder'
            need(len(holder) == 1, f'{where}: {len(holder)} holder stacks:\n{text}')
            truth = helpers + [('Leaky', L('Leaky')), ('main', L('main:free'))]
            got = [f for f in holder[0][0] if f[0] in {fn for fn, _ in truth}]
            need(got == truth or (holder[0][1] and got and got == truth[:len(got)]),
                 f'{where}: frames {got}, want {truth} or, marked as recorded only, its start:\n{text}')


def place(a, tmp):
    """A bug reached through libstdc++'s lock wrappers (sig_std.cpp at -O0 and -O2, through
    std::lock_guard and std::unique_lock) is placed at the program's line, not at the
    wrapper's in a libstdc++ header: its repeat line on stderr ("again ... at FILE:LINE") and
    its SARIF location."""
    for opt in ('-O0', '-O2'):
        for guard in ('std::lock_guard', 'std::unique_lock'):
            p = Program(a, tmp, 'sig_std.cpp', opt, f'-DGUARD={guard}')
            where = f'{p.name} {guard}'
            ending, out, err = p.run('twice', LOCKTRACE_ACTION='edeadlk')
            need(ending == 0 and out.count('relock: EDEADLK\n') == 2, f'{where}: {ending} {out!r}\n{err}')
            again = re.findall(r'^locktrace: self-deadlock: again \(2nd time\) at (\S+), see report', err, re.M)
            need(again == [f'sig_std.cpp:{p.line("inner")}'], f'{where}: the repeat is placed at {again}:\n{err}')
            files = sorted(glob.glob(os.path.join(tmp, 'reports', '*.json')))
            sarif = subprocess.run([a.locktrace, 'report', '--sarif', '--source-root', a.src] + files,
                                   capture_output=True, text=True, timeout=TIMEOUT)
            results = json.loads(sarif.stdout)['runs'][0]['results']
            need(len(results) == 1, f'{where}: {len(results)} SARIF results:\n{sarif.stdout}')
            loc = results[0]['locations'][0].get('physicalLocation', {})
            need(loc.get('artifactLocation', {}).get('uri') == 'sig_std.cpp' and
                 loc.get('region', {}).get('startLine') == p.line('inner'),
                 f'{where}: SARIF location {loc}, want sig_std.cpp:{p.line("inner")}')


def no_debug(a, tmp):
    """A program built without -g (helper_order.c's self-deadlock at -O0 and -O2): its report
    says that its frame has no file:line and why, naming the program, on stderr and in
    `locktrace report`; built with -g, no such note."""
    for opt in ('-O0', '-O2'):
        for debug in ('-g0', '-g'):
            p = Program(a, tmp, 'helper_order.c', opt, debug=debug)
            ending, out, err = p.run('self')
            need(ending == 'signal:SIGABRT', f'{p.name} {debug}: {ending}\n{err}')
            note = re.compile(r'^  note: no file:line for \S+: (\S+) has no debug info for it \(build with -g;', re.M)
            for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
                got = note.findall(text)
                need(got == ([p.exe] if debug == '-g0' else []),
                     f'{p.name} {debug} ({how}): notes for {got}, want {[p.exe] if debug == "-g0" else []}:\n{text}')


def gaps(a, tmp):
    """gap_main.cpp (mixed_nodebug.c built without -g, linked first) at -O0 and -O2, both
    modes: a frame of the program that addr2line (binutils, independent of libdw) places in no
    line shows none, on stderr and in `locktrace report`; lock_twice's frame (no debug info)
    says why, and the frames with lines name the marked ones."""
    nodebug = os.path.join(a.src, 'mixed_nodebug.c')
    frame = re.compile(r'^    #\d+ 0x[0-9a-f]+ in (?:\(inlined\) )?(.*?)(?: (\S+):(\d+))? \((\S+)\+0x([0-9a-f]+)\)$', re.M)
    for opt in ('-O0', '-O2'):
        obj = os.path.join(tmp, f'mixed_nodebug{opt}.o')
        subprocess.run([a.cc, '-g0', opt, '-c', nodebug, '-o', obj], check=True, cwd=tmp)
        p = Program(a, tmp, 'gap_main.cpp', opt, '-std=c++17', obj)
        for mode, own in (('upgrade', ('put', 'put')), ('nodebug', ('lock_twice', None))):
            ending, out, err = p.run(mode)
            need(ending == 'signal:SIGABRT', f'{p.name} {mode}: {ending}\n{err}')
            for text, how in ((err.split('locktrace: thread-dump:')[0], 'stderr'), (p.rendered(), 'locktrace report')):
                where = f'{p.name} {mode} ({how})'
                frames = [m for m in frame.finditer(text) if m.group(4) == p.exe]
                need(frames, f'{where}: no frame of the program:\n{text}')
                offs = sorted({int(m.group(5), 16) - 1 for m in frames})
                known = dict(zip(offs, subprocess.run(['addr2line', '-e', p.exe] + [hex(o) for o in offs],
                                                      capture_output=True, text=True, check=True).stdout.split()))
                for m in frames:
                    need(m.group(2) is None or not known[int(m.group(5), 16) - 1].startswith('??'),
                         f'{where}: {m.group(0).strip()} names a line addr2line finds none at:\n{text}')
                st = stacks(text)
                need(st and st[0][0].startswith('request'), f'{where}: no request stack:\n{text}')
                fn, mark = own
                want = (fn, p.line(mark) if mark else 0)
                need(want in st[0][1], f'{where}: {want} not in the request stack {st[0][1]}:\n{text}')
                if mode == 'nodebug':
                    need(('through', p.line('through')) in st[0][1],
                         f'{where}: through:{p.line("through")} not in {st[0][1]}')
                    need(re.search(r'^  note: no file:line for lock_twice: \S+ has no debug info for it', text, re.M),
                         f'{where}: no note on the missing line:\n{text}')


def stripped(a, tmp):
    """wrap_std.cpp at -O0 (libstdc++'s wrappers are calls of their own), stripped of every
    symbol, its debug file where its .gnu_debuglink names it: beside the program, then in its
    .debug/ directory. The wrappers are known by their names from the debug file, so the stacks
    are whole down to main, as the unstripped program's are (check_wrapped)."""
    objcopy = shutil.which('objcopy')
    if not objcopy:
        raise Skipped('objcopy is not installed (binutils)')
    for where in ('', '.debug'):
        p = Program(a, tmp, 'wrap_std.cpp', '-O0', '-std=c++17')
        place = os.path.join(tmp, where)
        os.makedirs(place, exist_ok=True)
        debug = os.path.join(place, os.path.basename(p.exe) + '.dbg')
        subprocess.run([objcopy, '--only-keep-debug', p.exe, debug], check=True)
        subprocess.run([objcopy, '--strip-all', '--add-gnu-debuglink=' + debug, p.exe], check=True)
        sections = subprocess.run(['readelf', '-S', p.exe], capture_output=True, text=True).stdout
        need('.symtab' not in sections and '.gnu_debuglink' in sections,
             f'{p.name}: not stripped with a debug link:\n{sections}')
        p.name += f' stripped, debug file in {where or "its directory"}'
        check_wrapped(p)
        os.unlink(debug)


def merged(a, tmp):
    """merged.c at -O2: the request's frame #0 names the marked line of its lock call, or, where
    the compiler merged the two calls into one (clang: DWARF line 0), says that no single line
    is the call's instead of printing ":0" alone; on stderr and in `locktrace report`."""
    p = Program(a, tmp, 'merged.c', '-O2')
    for arg in ('write', 'read'):
        ending, out, err = p.run(arg)
        need(ending == 'signal:SIGABRT', f'{p.name} {arg}: {ending}\n{err}')
        for text, how in ((err.split('locktrace: thread-dump:')[0], 'stderr'), (p.rendered(), 'locktrace report')):
            where = f'{p.name} {arg} ({how})'
            top = re.search(r'request \(this call\):\n    #0 .*', text)
            need(top, f'{where}: no request stack:\n{text}')
            need(re.search(rf'merged\.c:({p.line(arg)}|0 \(no single line: code the compiler merged from '
                           r'several lines\)) \(', top.group(0)),
                 f'{where}: frame #0 names neither line {p.line(arg)} nor why it has none:\n{text}')
            need(not re.search(r':0 \((?!no single line)', text), f'{where}: a line 0 unexplained:\n{text}')


def lambdas(a, tmp):
    """lambda.cpp at -O0 and -O2: the self-deadlock's request names the inner lambda's line, the
    outer lambda's line and main's, in that order (inlined or not), and its earlier acquisition
    the outer lambda's lock line, then main's; on stderr and in `locktrace report`. Checked by
    file:line (the names of lambdas differ from compiler to compiler)."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'lambda.cpp', opt, '-std=c++17')
        ending, out, err = p.run()
        need(ending == 'signal:SIGABRT', f'{p.name}: {ending}\n{err}')
        for text, how in ((err.split('locktrace: thread-dump:')[0], 'stderr'), (p.rendered(), 'locktrace report')):
            where = f'{p.name} ({how})'
            mine = {}
            for heading, frames in re.findall(r'^  (request \(this call\)|earlier acquisition by this thread[^\n]*):\n((?:    .*\n)+)', text, re.M):
                mine[heading.split()[0]] = [int(m) for m in re.findall(r' \S*lambda\.cpp:(\d+) ', frames)]
            want = {'request': [p.line('again'), p.line('with:body'), p.line('main')],
                    'earlier': [p.line('with:lock'), p.line('main')]}
            need(mine == want, f'{where}: lines of lambda.cpp {mine}, want {want}:\n{text}')


def fresh_thread(a, tmp):
    """Threads started one after another take two locks through the same helpers from the same
    depth (fresh_thread.c): the third, in the other order, finds the walks of the two before
    it (on their stack, or on one of the same size), which hold up to the frame that called
    Pair. Each edge of the inversion names its own thread's lines, Route's above all."""
    for opt in ('-O0', '-O2'):
        p = Program(a, tmp, 'fresh_thread.c', opt)
        L = p.line

        def truth(lock, order):
            first = 'a' if order == 0 else 'b'
            return [('acquire', L('acquire')), ('Take', L('take')),
                    ('Pair', L('pair:first' if lock == first else 'pair:second')),
                    ('Route', L(f'route:{order}')), ('Worker', L('worker'))]
        for mode in ('same', 'own'):
            ending, out, err = p.run(mode)
            need(ending == 0 and out == 'done\n', f'{p.name} {mode}: {ending} {out!r}\n{err}')
            need('lock-order-inversion: 2 locks' in err,
                 f'{p.name} {mode}: no inversion:\n{err}')
            for text, how in ((err, 'stderr'), (p.rendered(), 'locktrace report')):
                where = f'{p.name} {mode} ({how})'
                st = [s for s in stacks(text) if s[0].endswith('taken at:')]
                need(len(st) == 4, f'{where}: {len(st)} "taken at" stacks, want 4:\n{text}')
                for edge in range(2):
                    held, taken = st[2 * edge], st[2 * edge + 1]
                    lock = held[0].split('"')[1]  # '0x... "a" taken at:'
                    order = 0 if lock == 'a' else 1
                    check_chain(f'{where} edge {edge + 1} held lock', held[1], held[2],
                                truth(lock, order))
                    check_chain(f'{where} edge {edge + 1} new lock', taken[1], taken[2],
                                truth('b' if lock == 'a' else 'a', order))


CHECKS = {f.__name__: f for f in (lazy_order, lazy_self, same_text, demangle, wrappers_std, wrappers_glib,
                                          wrappers_user, wrappers_nomatch, late_dlopen,
                                          signature_wrappers, waits, lto, split_dwarf,
                                          leaked, place, no_debug, merged, gaps, lambdas,
                                          fresh_thread, stripped, split_missing, recorded)}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('check', choices=sorted(CHECKS))
    ap.add_argument('--cc', required=True, choices=sorted(CXX))
    ap.add_argument('--lib', required=True)
    ap.add_argument('--locktrace', required=True)
    ap.add_argument('--src', required=True)
    a = ap.parse_args(argv)
    for tool in (a.cc, CXX[a.cc]):
        if not shutil.which(tool):
            print(f'skipped: {tool} is not installed')
            return 77
    a.lib, a.locktrace, a.src = map(os.path.abspath, (a.lib, a.locktrace, a.src))
    with tempfile.TemporaryDirectory(prefix='lt-fidelity-') as tmp:
        os.mkdir(os.path.join(tmp, 'reports'))
        try:
            CHECKS[a.check](a, tmp)
        except Skipped as e:
            print(f'skipped: {e}')
            return 77
        except (Failed, subprocess.CalledProcessError) as e:
            print(f'FAIL {a.check} ({a.cc}): {e}')
            return 1
    print(f'ok {a.check} ({a.cc})')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
