#!/usr/bin/env python3
"""CPU per request of real servers (Debian's memcached, unbound and rsyslog), natively and traced.

  server_bench.py LIBLOCKTRACE [--servers memcached,unbound,rsyslog] [--repeat K] [--instructions]
                  [--baseline OTHER_LIBLOCKTRACE] [--traced-env VAR=VALUE] [--syscalls] [--profile DIR]
                  [--warmup S] [--lock-calls SO] [--keep-profiles DIR] [--requests N] [--rate R] [--conns C] [--seconds S] [--qps Q]
                  [--messages N] [--msg-rate R]

Needs `apt-get install memcached unbound dnsperf rsyslog` (benchmark-only tools; a missing one
is skipped with its reason). Everything runs on 127.0.0.1, nothing reaches the network.

memcached: `memcached -l 127.0.0.1 -t 4` on a free port; this script sends N requests (9 gets
to 1 set, 1,000 keys of 100 bytes) over C connections at a fixed total rate of R per second.
unbound: 2 threads, iterator only, serving 10 static local-data zones of 100 names each (no
recursion, no DNSSEC); dnsperf sends Q queries per second for S seconds (90 % names that
exist, 10 % NXDOMAIN inside the zones).
rsyslog: `rsyslogd -n` with its own configuration only: imtcp on a free port, a main queue
with 2 worker threads, an omfile action with a queue of its own; this script sends N messages
at R per second over one TCP connection (batches of 100), and the load ends when the file
holds them all. rsyslog makes every message an object with a mutex of its own (initialised by
the input thread, destroyed and freed by a queue worker): a lock's whole lifecycle per
message, where memcached and unbound reuse their locks.

Per run: the CPU time the server's threads spent between "ready" and the end of the load
(user + system, in nanoseconds from /proc/PID/task/*/schedstat: /proc/PID/stat counts in
10 ms ticks, ~1 % of a run), divided by the requests answered; the load client's CPU is not
counted. Also per request: the server's context switches (voluntary: it blocked, e.g. in
epoll_wait or a futex; involuntary: preempted, mostly other load on the machine) and its
CPU by thread name (memcached's workers and LRU maintainer...). Every run is bounded
(request counts, dnsperf's time limit, a 120 s deadline per run). Native and traced runs
alternate (with --baseline, another build of the library runs in the same turns:
before/after; --traced-env VAR=VALUE, the traced build once more with that setting); the
best, the median and the range of K runs each are printed, and the range and the median of
the ratios of runs made in the same turn (less moved by a load that changes slowly), with a
90 % bootstrap interval of that median. On a shared machine the CPU of one run varies by
10-50 %: compare medians of many interleaved runs, and counts: context switches, and with
--syscalls the server's system calls, futex calls and page faults per request (perf stat on
tracepoints). --warmup S runs the same load for S seconds before the measured one: a fresh
server's first minutes make its new locks and order edges (each of a call site's first 64
new edges unwinds), which a server that runs for days has long made.

--profile DIR: each run also recorded with `perf record -g` (DIR/perf.<server>.<label>.<n>.data),
and the median share of the server's samples that fell in liblocktrace's own code printed, with
its top functions in the first traced run: a share is read within one run, so a load on the
machine that changes between runs moves it far less than a ratio of two runs' CPU (it leaves
out the libc calls the tracer makes, e.g. its trylock before each lock, and what it costs the
program's own code in cache misses).

--lock-calls LOCKCOUNT_SO (build/tests/bench/liblockcount.so): first, one native run with that
preload, printing the pthread lock calls a request makes by kind and how many acquisitions
were made holding another lock. The tracer's cost is per lock operation, and nested ones also
ask the order graph: memcached makes ~16 lock/unlock pairs a request at 10 K/s (its LRU
maintainer's, all taken under its own maintainer lock, more than half), unbound 2.

--instructions: instead, one run each under valgrind's callgrind (apt-get install valgrind),
instrumented only between "ready" and the end of the load (callgrind_control), printing the
user-space instructions the server executed per request: exact where CPU time is noisy
(it leaves out the kernel, which is most of a loopback server's CPU, and cache misses); and
the lock/unlock pairs per request of each run (calls of libc's unlocks), which memcached's
LRU maintainer moves from run to run (10-28 a request at 1,000/s), with the tracer's
instructions per pair they give.
Defaults then drop to 10,000 requests at 1,000/s and 1,000 queries/s for 10 s.
"""
import argparse
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 120


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU of the whole process, dead threads included, in 10 ms ticks."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def threads(pid):
    """{tid: (name, CPU ns, voluntary, involuntary context switches)} of the live threads."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        d = f'/proc/{pid}/task/{tid}'
        try:
            with open(d + '/comm') as f:
                name = f.read().strip()
            with open(d + '/schedstat') as f:
                ns = int(f.read().split()[0])
            with open(d + '/status') as f:
                st = f.read()
        except OSError:  # the thread ended while being read
            continue
        cs = [int(re.search(rf'^{k}_ctxt_switches:\s+(\d+)', st, re.M).group(1))
              for k in ('voluntary', 'nonvoluntary')]
        out[tid] = (name, ns, *cs)
    return out


def tool(name):
    """The path of an installed program (servers live in /usr/sbin), or None."""
    return shutil.which(name, path=os.environ.get('PATH', '') + ':/usr/sbin:/sbin')


def run_user(user='nobody'):
    """memcached refuses to run as root without -u (and ignores -u otherwise)."""
    return ['-u', user] if os.geteuid() == 0 else []


def stop(p):
    """Stops a server; returns its stderr."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()[1]


# ------------------------------------------------------------------------------------------
# What a run measures: the probe starts the server and is told when the load begins and ends.
# ------------------------------------------------------------------------------------------
VOLUNTARY, INVOLUNTARY = 'voluntary context switches', 'involuntary context switches'


class CpuProbe:
    """The server's CPU time over the load: a dict of microseconds ('cpu', 'cpu <thread
    name>') and counts (context switches)."""
    start_s = 10

    def __init__(self, d):
        pass

    def popen(self, cmd, env):
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def user(self):
        return run_user()

    def begin(self, pid):
        self.ticks, self.threads = cpu_seconds(pid), threads(pid)

    def end(self, pid):
        ticks, now = cpu_seconds(pid) - self.ticks, threads(pid)
        r = {'cpu': 0.0, VOLUNTARY: 0, INVOLUNTARY: 0}
        for tid, (name, ns, vol, invol) in now.items():
            _, ns0, vol0, invol0 = self.threads.get(tid, (name, 0, 0, 0))
            us = (ns - ns0) / 1e3
            r['cpu'] += us
            r['cpu ' + name] = r.get('cpu ' + name, 0.0) + us
            r[VOLUNTARY] += vol - vol0
            r[INVOLUNTARY] += invol - invol0
        if self.threads.keys() - now.keys():
            # A thread ended during the load: its time is only in the ticks (one that started
            # then spent all of its time in the load, from 0).
            r = {'cpu': ticks * 1e6}
        self.r = r

    def result(self):
        return self.r


# lockcount.c's counters, in its file's order.
LOCK_CALLS = ('mutex init', 'mutex destroy', 'mutex lock', 'mutex trylock', 'mutex trylock busy', 'mutex unlock',
              'rwlock rdlock', 'rwlock wrlock', 'rwlock try', 'rwlock unlock', 'spin lock',
              'spin unlock', 'cond wait', 'cond signal', 'nested acquisitions')


class LockCountProbe(CpuProbe):
    """CpuProbe, and the lock calls lockcount.so (preloaded, natively) counted over the load:
    the counters are a file the server maps, read at the load's start and end."""

    def __init__(self, d):
        self.file = os.path.join(d, 'lockcount')

    def popen(self, cmd, env):
        return super().popen(cmd, {**env, 'LOCKCOUNT_FILE': self.file})

    def counts(self):
        with open(self.file, 'rb') as f:
            data = f.read()
        return struct.unpack(f'{len(LOCK_CALLS)}Q', data[:8 * len(LOCK_CALLS)])

    def begin(self, pid):
        super().begin(pid)
        self.start = self.counts()

    def end(self, pid):
        super().end(pid)
        for name, a, b in zip(LOCK_CALLS, self.start, self.counts()):
            self.r[name] = b - a


def print_lock_calls(name, o, fn, env, lib):
    """One native run with lockcount.so preloaded: the lock calls a request makes."""
    r = run_one(fn, {**env, 'LD_PRELOAD': os.path.abspath(lib)}, o, LockCountProbe)
    acquired = sum(r[k] for k in ('mutex lock', 'mutex trylock', 'rwlock rdlock',
                                  'rwlock wrlock', 'rwlock try', 'spin lock'))
    print(f'{name}: lock calls per request (native, one run, {os.path.basename(lib)}): '
          + ', '.join(f'{k} {r[k]:.2f}' for k in LOCK_CALLS[:-1] if r[k] >= 0.005)
          + f'; nested acquisitions {r[LOCK_CALLS[-1]]:.2f} '
          f'({100 * r[LOCK_CALLS[-1]] / acquired if acquired else 0:.0f} % of {acquired:.2f})')


class PerfProbe(CpuProbe):
    """CpuProbe, with `perf <command> -p PID` attached to the server over the load only: perf
    starts disabled and is switched on and off through its control pipe."""

    def perf_args(self):
        raise NotImplementedError

    def begin(self, pid):
        ctl_r, self.ctl = os.pipe()
        self.ack, ack_w = os.pipe()
        self.perf = subprocess.Popen(['perf'] + self.perf_args() + [
                                      '-D', '-1', '--control', f'fd:{ctl_r},{ack_w}',
                                      '-p', str(pid)],
                                     pass_fds=(ctl_r, ack_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(ctl_r)
        os.close(ack_w)
        self._control(b'enable')
        super().begin(pid)

    def _control(self, command):
        """Sends perf a command and waits for its acknowledgement (counting or sampling is
        then on or off): perf -p says nothing when it has attached."""
        os.write(self.ctl, command + b'\n')
        if not os.read(self.ack, 16).startswith(b'ack\n'):  # 'ack\n\0'
            raise RuntimeError('perf: ' + self.perf.communicate(timeout=10)[1].decode())

    def end(self, pid):
        self._control(b'disable')
        super().end(pid)
        # The control pipe stays open until perf has ended: perf record that sees it closed
        # first dies of the SIGINT without writing its file's header.
        self.perf.send_signal(signal.SIGINT)
        self.perf.communicate(timeout=60)
        os.close(self.ctl)
        os.close(self.ack)


class SyscallProbe(PerfProbe):
    """CpuProbe, and what `perf stat` counts in the server over the load: its system calls
    (all, and futex: the waits and wakes of contended locks and condition variables) and
    page faults. The CPU figures then include the tracepoints' own cost."""
    EVENTS = {'raw_syscalls:sys_enter': 'syscalls', 'syscalls:sys_enter_futex': 'futex syscalls',
              'page-faults': 'page faults'}

    def __init__(self, d):
        self.out = os.path.join(d, 'perf.stat')

    def perf_args(self):
        return ['stat', '-x,', '-o', self.out, '-e', ','.join(self.EVENTS)]

    def end(self, pid):
        super().end(pid)
        with open(self.out) as f:
            for line in f:
                v = line.strip().split(',')
                if len(v) > 2 and v[2] in self.EVENTS and v[0].isdigit():
                    self.r[self.EVENTS[v[2]]] = int(v[0])


class ProfileProbe(PerfProbe):
    """CpuProbe, and a `perf record -g` profile of the server over the load, kept as
    DIR/perf.<server>.<label>.<n>.data; the result also holds the share of the samples that
    fell in liblocktrace (its own code: the libc calls it makes count as libc's). That share
    is read within one run, so a load on the machine that changes from run to run moves it
    far less than the ratio of two runs' CPU. perf's sampling (1 kHz) adds to the CPU."""
    runs = {}

    def __init__(self, d, keep, server, label):
        ProfileProbe.runs[(server, label)] = n = ProfileProbe.runs.get((server, label), 0) + 1
        self.out = os.path.join(keep, f'perf.{server}.{label}.{n}.data')

    def perf_args(self):
        return ['record', '-g', '-F', '1000', '-q', '-o', self.out]

    def end(self, pid):
        super().end(pid)
        self.r['samples in liblocktrace %'] = 100 * tracer_share(self.out)


def perf_report(data, *args):
    return subprocess.run(['perf', 'report', '-i', data, '--stdio', '--no-children', '-g', 'none']
                          + list(args), capture_output=True, text=True, timeout=120).stdout


def tracer_share(data):
    """The fraction of the samples in data that fell in liblocktrace."""
    for line in perf_report(data, '--sort', 'dso').splitlines():
        m = re.match(r'\s*([\d.]+)%\s+(\S+)', line)
        if m and m.group(2).startswith('liblocktrace'):
            return float(m.group(1)) / 100
    return 0.0


def print_tracer_symbols(data, top=8):
    """The functions of liblocktrace with most samples in one profile."""
    rows = [line.strip() for line in perf_report(data, '--sort', 'sym', '--dsos',
                                                 'liblocktrace.so').splitlines()
            if re.match(r'\s*[\d.]+%', line)]
    print(f'  top functions of liblocktrace in {data} (percent of all samples):')
    for row in rows[:top]:
        print('    ' + row)


def valgrind_fd_limit():
    """memcached sets its descriptor limit to its connection count (-c 1024), which valgrind
    accepts only when that equals valgrind's own hard limit: 12 below the real one."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1036, 1036))


class CallgrindProbe:
    """User-space instructions the server executed over the load (callgrind, instrumented
    from begin to end only)."""
    start_s = 120

    keep = None  # --keep-profiles DIR: where each run's callgrind.out is copied

    def __init__(self, d):
        self.out = os.path.join(d, 'callgrind.out')

    def popen(self, cmd, env):
        memcached = cmd[0].endswith('memcached')
        if memcached:
            cmd = cmd + ['-c', '1024']
        return subprocess.Popen(['valgrind', '--tool=callgrind', '--instr-atstart=no',
                                 f'--callgrind-out-file={self.out}'] + cmd, env=env,
                                preexec_fn=valgrind_fd_limit if memcached else None,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def user(self):
        return run_user('root')  # callgrind_control cannot reach a server that changed user

    def _instrument(self, pid, on):
        subprocess.run(['callgrind_control', '-i', on, str(pid)], check=True,
                       capture_output=True, timeout=60)

    def begin(self, pid):
        self._instrument(pid, 'on')

    def end(self, pid):
        self._instrument(pid, 'off')

    def result(self):
        if self.keep:
            CallgrindProbe.runs = getattr(CallgrindProbe, 'runs', 0) + 1
            shutil.copy(self.out, os.path.join(self.keep, f'callgrind.out.{self.runs}'))
        with open(self.out) as f:
            text = f.read()
        m = re.search(r'^totals: (\d+)', text, re.M)
        if not m:
            raise RuntimeError(f'no instruction count in {self.out}')
        return {'instructions': int(m.group(1)), 'unlocks': libc_unlocks(text)}


def libc_unlocks(text):
    """The calls of libc's exported unlocks (mutex, rwlock, spin) in a callgrind output: the
    lock/unlock pairs of the run, natively and traced alike (the tracer's unlock calls libc's;
    libc's internal unlocks, e.g. a condition wait's, have other names)."""
    names, n, counting = {}, 0, False
    for line in text.splitlines():
        m = re.match(r'(c?)fn=\((\d+)\)(?: (.*))?$', line)  # (a name is given once, either)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            counting = m.group(1) == 'c' and re.match(r'pthread_(mutex|rwlock|spin)_unlock@',
                                                      names.get(m.group(2), '')) is not None
        elif counting and line.startswith('calls='):
            n += int(line[6:].split()[0])
    return n


# ------------------------------------------------------------------------------------------
# memcached
# ------------------------------------------------------------------------------------------
def connect(port, start_s, server):
    deadline = time.monotonic() + start_s
    while True:
        try:
            return socket.create_connection(('127.0.0.1', port), timeout=10)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f'{server} did not start listening')
            time.sleep(0.02)


def mc_read_reply(s, buf):
    """Reads one reply (END / STORED terminated); returns the rest of the buffer."""
    while True:
        for end in (b'END\r\n', b'STORED\r\n'):
            i = buf.find(end)
            if i >= 0:
                return buf[i + len(end):]
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError('memcached closed the connection')
        buf += chunk


def paced(first, count, rate, step=1):
    """first, first + step, ... below first + count, each at its due time at rate a second
    from now; a load that falls DEADLINE_S behind is an error, not a longer run."""
    start = time.monotonic()
    for n in range(first, first + count, step):
        due = start + (n - first) / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        if now - start > DEADLINE_S:
            raise RuntimeError('deadline passed')
        yield n


def mc_load(socks, bufs, rnd, o, first, count):
    """Requests first .. first + count - 1 at o.rate a second, round robin over socks; the
    first 1,000 requests and every tenth are sets."""
    value = b'x' * 100
    for n in paced(first, count, o.rate):
        c = n % len(socks)
        key = b'key%d' % rnd.randrange(1000)
        if n % 10 == 0 or n < 1000:
            socks[c].sendall(b'set %s 0 0 %d\r\n%s\r\n' % (key, len(value), value))
        else:
            socks[c].sendall(b'get %s\r\n' % key)
        bufs[c] = mc_read_reply(socks[c], bufs[c])


def memcached(env, o, probe):
    """One memcached run: (requests answered, stderr); probe measures the load."""
    port = free_port()
    cmd = [tool('memcached'), '-l', '127.0.0.1', '-p', str(port), '-U', '0', '-t', '4']
    p = probe.popen(cmd + probe.user(), env)
    try:
        socks = [connect(port, probe.start_s, 'memcached') for _ in range(o.conns)]
        bufs = [b''] * o.conns
        rnd = random.Random(1)
        warmup = o.warmup * o.rate
        mc_load(socks, bufs, rnd, o, 0, warmup)
        probe.begin(p.pid)
        mc_load(socks, bufs, rnd, o, warmup, o.requests)
        probe.end(p.pid)
        for s in socks:
            s.close()
    finally:
        err = stop(p)
    return o.requests, err


def warmed(o):
    return f', after {o.warmup} s of the same load' if o.warmup else ''


def memcached_title(o):
    return (f'memcached, {o.requests} requests at {o.rate}/s over {o.conns} connections'
            + warmed(o))


# ------------------------------------------------------------------------------------------
# unbound + dnsperf
# ------------------------------------------------------------------------------------------
ZONES, NAMES = 10, 100


def unbound_files(d, port):
    conf = os.path.join(d, 'unbound.conf')
    with open(conf, 'w') as f:
        f.write('server:\n'
                f'  interface: 127.0.0.1\n  port: {port}\n  do-ip6: no\n  do-tcp: no\n'
                f'  do-daemonize: no\n  username: ""\n  chroot: ""\n  directory: "{d}"\n'
                '  pidfile: ""\n  use-syslog: no\n  logfile: ""\n  verbosity: 0\n'
                '  num-threads: 2\n  module-config: "iterator"\n'
                '  access-control: 127.0.0.0/8 allow\n')
        for z in range(ZONES):
            f.write(f'  local-zone: "z{z}.bench.test." static\n')
            for n in range(NAMES):
                f.write(f'  local-data: "h{n}.z{z}.bench.test. 300 IN A 10.{z}.{n // 256}.'
                        f'{n % 256}"\n')
        f.write('remote-control:\n  control-enable: no\n')
    queries = os.path.join(d, 'queries')
    rnd = random.Random(1)
    with open(queries, 'w') as f:
        for _ in range(10000):
            z, n = rnd.randrange(ZONES), rnd.randrange(NAMES)
            f.write(f'h{n}.z{z}.bench.test A\n' if rnd.random() < 0.9 else
                    f'nx{n}.z{z}.bench.test A\n')
    return conf, queries


def dns_answered(port):
    """1 when the server answers a query for h0.z0.bench.test within 0.2 s."""
    q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
    q += b''.join(bytes([len(x)]) + x for x in (b'h0', b'z0', b'bench', b'test')) + b'\0'
    q += struct.pack('>HH', 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        try:
            s.sendto(q, ('127.0.0.1', port))
            return s.recv(512)[:2] == q[:2]
        except OSError:
            return False


def unbound(env, o, probe):
    """One unbound run: (queries answered, stderr); probe measures the load."""
    with tempfile.TemporaryDirectory(prefix='ltbench-unbound.') as d:
        port = free_port(socket.SOCK_DGRAM)
        conf, queries = unbound_files(d, port)
        p = probe.popen([tool('unbound'), '-d', '-c', conf], env)
        try:
            deadline = time.monotonic() + probe.start_s
            while not dns_answered(port):
                if p.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError('unbound did not start answering')
            cmd = [tool('dnsperf'), '-s', '127.0.0.1', '-p', str(port), '-d', queries,
                   '-Q', str(o.qps), '-c', '4', '-t', '2', '-l']
            if o.warmup:
                subprocess.run(cmd + [str(o.warmup)], capture_output=True, timeout=DEADLINE_S)
            probe.begin(p.pid)
            out = subprocess.run(cmd + [str(o.seconds)], capture_output=True, text=True,
                                 timeout=DEADLINE_S).stdout
            probe.end(p.pid)
        finally:
            err = stop(p)
    m = re.search(r'Queries completed:\s+(\d+)', out)
    if not m or int(m.group(1)) == 0:
        raise RuntimeError('dnsperf: no answered queries\n' + out)
    return int(m.group(1)), err


def unbound_title(o):
    return (f'unbound, dnsperf at {o.qps} queries/s for {o.seconds} s '
            f'({ZONES} local zones x {NAMES} names)' + warmed(o))


# ------------------------------------------------------------------------------------------
# rsyslog
# ------------------------------------------------------------------------------------------
SYSLOG_LINE = b'<13>Dec  3 19:00:00 benchhost bench[42]: message %8d of the benchmark load\n'


def rsyslog_conf(d, port, out):
    conf = os.path.join(d, 'rsyslog.conf')
    with open(conf, 'w') as f:
        f.write(f'global(workDirectory="{d}")\n'
                'module(load="imtcp")\n'
                f'input(type="imtcp" port="{port}" address="127.0.0.1")\n'
                # queue workers start on demand; kept, so that their CPU stays countable
                'main_queue(queue.type="LinkedList" queue.workerThreads="2"'
                ' queue.timeoutWorkerthreadShutdown="-1")\n'
                f'action(type="omfile" file="{out}" queue.type="LinkedList"'
                ' queue.timeoutWorkerthreadShutdown="-1")\n')
    return conf


def lines_in(path, seen):
    """seen: [bytes read, newlines in them] of path so far, brought up to date; the count."""
    try:
        with open(path, 'rb') as f:
            f.seek(seen[0])
            chunk = f.read()
    except FileNotFoundError:
        return 0
    seen[0] += len(chunk)
    seen[1] += chunk.count(b'\n')
    return seen[1]


def syslog_load(s, out, seen, o, first, count):
    """Messages first .. first + count - 1 at o.msg_rate a second, in batches of 100, then
    waits until the file holds all of them: the server's work is done when they are written."""
    start = time.monotonic()
    for n in paced(first, count, o.msg_rate, 100):
        s.sendall(b''.join(SYSLOG_LINE % i for i in range(n, min(n + 100, first + count))))
    while lines_in(out, seen) < first + count:
        if time.monotonic() - start > DEADLINE_S:
            raise RuntimeError(f'rsyslog wrote {seen[1]} of {first + count} messages')
        time.sleep(0.01)


def rsyslog(env, o, probe):
    """One rsyslog run: (messages written, stderr); probe measures the load."""
    with tempfile.TemporaryDirectory(prefix='ltbench-rsyslog.') as d:
        port, out = free_port(), os.path.join(d, 'messages')
        p = probe.popen([tool('rsyslogd'), '-n', '-iNONE', '-f', rsyslog_conf(d, port, out)], env)
        try:
            s = connect(port, probe.start_s, 'rsyslog')
            seen = [0, 0]
            warmup = o.warmup * o.msg_rate
            syslog_load(s, out, seen, o, 0, warmup)
            probe.begin(p.pid)
            syslog_load(s, out, seen, o, warmup, o.messages)
            probe.end(p.pid)
            s.close()
        finally:
            err = stop(p)
    return o.messages, err


def rsyslog_title(o):
    return (f'rsyslog, {o.messages} messages at {o.msg_rate}/s over TCP to a file' + warmed(o))


SERVERS = {
    'memcached': (memcached, memcached_title, ['memcached']),
    'unbound': (unbound, unbound_title, ['unbound', 'dnsperf']),
    'rsyslog': (rsyslog, rsyslog_title, ['rsyslogd']),
}


def run_one(fn, env, o, probe_class):
    """One run of a server; the probe's figure per request answered."""
    with tempfile.TemporaryDirectory(prefix='ltbench.') as d:
        probe = probe_class(d)
        answered, err = fn(env, o, probe)
        if b'locktrace:' in err:
            sys.stderr.write(err.decode(errors='replace'))
        r = probe.result()
        if isinstance(r, dict):  # per request, but for shares of the run
            return {k: v if k.endswith('%') else v / answered for k, v in r.items()}
        return r / answered


def bench(name, o, envs):
    """envs: (label, environment) pairs, native first; the others are traced builds."""
    fn, title, tools = SERVERS[name]
    missing = [t for t in tools if not tool(t)]
    if missing:
        print(f'{name}: skipped, not installed: {" ".join(missing)} '
              f'(apt-get install {" ".join(tools)})')
        return
    if o.lock_calls:
        print_lock_calls(name, o, fn, envs[0][1], o.lock_calls)
    if o.instructions:
        n, *ts = (run_one(fn, env, o, CallgrindProbe) for _, env in envs)
        print(f'{title(o)}; user-space instructions per request (callgrind, one run each)')
        i = 'instructions'
        print(f'  native {n[i]:8.0f}' + ''.join(f'  {label} {t[i]:8.0f}  ratio {t[i] / n[i]:.2f}x  '
                                              f'({t[i] - n[i]:+.0f})'
                                              for (label, _), t in zip(envs[1:], ts)))
        # A server's own background work (memcached's LRU maintainer) moves its lock count
        # from run to run; the tracer's cost is per lock operation.
        print('  lock/unlock pairs per request (libc unlock calls): '
              + '  '.join(f'{label} {r["unlocks"]:.2f}' for (label, _), r in zip(envs, [n] + ts)))
        print('  per pair, traced minus native per request over the traced run\'s pairs: '
              + '  '.join(f'{label} {(t[i] - n[i]) / t["unlocks"]:.0f}'
                          for (label, _), t in zip(envs[1:], ts) if t['unlocks']))
        return
    runs = {label: [] for label, _ in envs}
    probe = SyscallProbe if o.syscalls else CpuProbe
    if o.profile:
        os.makedirs(o.profile, exist_ok=True)
        probes = {label: (lambda d, label=label: ProfileProbe(d, o.profile, name, label))
                  for label, _ in envs}
    # The order rotates each turn: with a fixed order, the build run right after native read
    # ~8 % more CPU per memcached request than the one after it, whichever build it was.
    for turn in range(o.repeat):
        k = turn % len(envs)
        for label, env in envs[k:] + envs[:k]:
            runs[label].append(run_one(fn, env, o, probes[label] if o.profile else probe))
    cpu = {k: [r['cpu'] for r in v] for k, v in runs.items()}
    native = cpu['native']
    print(f'{title(o)}; server CPU per request, {o.repeat} interleaved runs each')
    for label, f in (('best', min), ('median', statistics.median)):
        print(f'  {label:6}  native {f(native):6.2f} us' +
              ''.join(f'  {k} {f(v):6.2f} us  ratio {f(v) / f(native):.2f}x'
                      for k, v in cpu.items() if k != 'native'))
    print('  range  ' + '  '.join(f'{k} {min(v):.2f}-{max(v):.2f} us' for k, v in cpu.items()))
    for k, v in cpu.items():
        if k != 'native':
            pair = [t / n for n, t in zip(native, v)]
            lo, hi = median_interval(pair)
            print(f'  {k} per-pair ratios {min(pair):.2f}-{max(pair):.2f}x, median '
                  f'{statistics.median(pair):.2f}x (90 % interval {lo:.2f}-{hi:.2f}x)')
    print_details(runs)
    if o.profile:
        print_tracer_symbols(os.path.join(o.profile, f'perf.{name}.traced.1.data'))


def median_interval(xs, rounds=2000):
    """A 90 % bootstrap interval of the median of xs: how far the median of this many runs
    may be from the one more runs would give (fixed seed: the same runs, the same interval)."""
    rnd = random.Random(0)
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(rounds))
    return meds[rounds // 20], meds[rounds - 1 - rounds // 20]


def print_details(runs):
    """Medians per request of what the probe saw besides the total: counts (context
    switches, with --syscalls system calls), and the CPU of each thread name (runs where a
    thread came or went have only the total)."""
    keys = sorted({k for v in runs.values() for r in v for k in r if k != 'cpu'},
                  key=lambda k: (k.startswith('cpu'), k))
    for k in keys:
        med = {label: statistics.median(r[k] for r in v if k in r) if any(k in r for r in v)
               else None for label, v in runs.items()}
        if all(m is None or m < 0.0005 for m in med.values()):
            continue
        unit = ' us' if k.startswith('cpu') else ' %' if k.endswith('%') else ''
        print(f'  {k + " (median)":40}' +
              '  '.join(f'{label} {"-" if m is None else f"{m:.4f}{unit}"}'
                        for label, m in med.items()))


def main(argv):
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument('lib')
    a.add_argument('--servers', default='memcached,unbound,rsyslog')
    a.add_argument('--repeat', type=int, default=7)
    a.add_argument('--instructions', action='store_true',
                   help='user-space instructions per request under callgrind instead')
    a.add_argument('--baseline', metavar='LIB',
                   help='another liblocktrace, run in the same turns (before/after)')
    a.add_argument('--warmup', type=int, default=0, metavar='S',
                   help='S seconds of the same load before the measured one, so that first '
                   'sightings (new locks, new order edges, their unwinds) are left out')
    a.add_argument('--syscalls', action='store_true',
                   help='also count the server\'s system calls (all, futex) and page faults '
                   'per request with perf stat (its tracepoints add to the CPU figures)')
    a.add_argument('--traced-env', metavar='VAR=VALUE', action='append', default=[],
                   help='also run the traced build with this LOCKTRACE_ setting (repeatable: '
                   'one more run per turn each), e.g. LOCKTRACE_INVERSION=off')
    a.add_argument('--profile', metavar='DIR',
                   help='record each run with perf record -g into DIR/perf.<server>.<label>.<n>.data '
                   'and print the median share of the server\'s samples in liblocktrace, and '
                   'its top functions in the first traced run (apt-get install linux-perf)')
    a.add_argument('--lock-calls', metavar='LOCKCOUNT_SO',
                   help='first, one native run with this preload (build/tests/bench/'
                   'liblockcount.so) printing the lock calls per request by kind, and how '
                   'many acquisitions were made holding another lock')
    a.add_argument('--keep-profiles', metavar='DIR',
                   help='with --instructions: copy each run\'s callgrind output to DIR '
                   '(callgrind.out.1 native, .2 traced, .3 baseline; numbered on per server)')
    a.add_argument('--requests', type=int, help='memcached requests per run')
    a.add_argument('--rate', type=int, help='memcached requests per second')
    a.add_argument('--conns', type=int, default=8, help='memcached connections')
    a.add_argument('--qps', type=int, help='dnsperf queries per second')
    a.add_argument('--seconds', type=int, help='dnsperf seconds per run')
    a.add_argument('--messages', type=int, help='rsyslog messages per run')
    a.add_argument('--msg-rate', type=int, help='rsyslog messages per second')
    o = a.parse_args(argv)
    defaults = (dict(requests=10000, rate=1000, qps=1000, seconds=10, messages=20000,
                     msg_rate=2000) if o.instructions else
                dict(requests=50000, rate=10000, qps=10000, seconds=5, messages=100000,
                     msg_rate=20000))
    for k, v in defaults.items():
        if getattr(o, k) is None:
            setattr(o, k, v)
    if o.instructions and not (tool('valgrind') and tool('callgrind_control')):
        a.error('--instructions needs valgrind (apt-get install valgrind)')
    if o.profile and not tool('perf'):
        a.error('--profile needs perf (apt-get install linux-perf)')
    if o.profile and (o.instructions or o.syscalls):
        a.error('--profile goes with neither --instructions nor --syscalls')
    CallgrindProbe.keep = o.keep_profiles
    names = o.servers.split(',')
    for n in names:
        if n not in SERVERS:
            a.error(f'unknown server {n!r} (known: {", ".join(SERVERS)})')
    base = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    base.pop('LD_PRELOAD', None)
    envs = [('native', base), ('traced', {**base, 'LD_PRELOAD': os.path.abspath(o.lib)})]
    if o.baseline:
        envs.append(('baseline', {**base, 'LD_PRELOAD': os.path.abspath(o.baseline)}))
    for setting in o.traced_env:
        var, eq, value = setting.partition('=')
        if not eq or not var.startswith('LOCKTRACE_'):
            a.error(f'--traced-env {setting!r}: expected LOCKTRACE_VAR=VALUE')
        envs.append((setting, {**envs[1][1], var: value}))
    for n in names:
        bench(n, o, envs)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
