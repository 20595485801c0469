#!/usr/bin/env python3
"""CPU per request of real servers (Debian's memcached and unbound), natively and traced.

  server_bench.py LIBLOCKTRACE [--servers memcached,unbound] [--repeat K]
                  [--requests N] [--rate R] [--conns C] [--seconds S] [--qps Q]

Needs `apt-get install memcached unbound dnsperf` (benchmark-only tools; a missing one is
skipped with its reason). Everything runs on 127.0.0.1, nothing reaches the network.

memcached: `memcached -l 127.0.0.1 -t 4` on a free port; this script sends N requests (9 gets
to 1 set, 1,000 keys of 100 bytes) over C connections at a fixed total rate of R per second.
unbound: 2 threads, iterator only, serving 10 static local-data zones of 100 names each (no
recursion, no DNSSEC); dnsperf sends Q queries per second for S seconds (90 % names that
exist, 10 % NXDOMAIN inside the zones).

Per run: the server's user + system CPU time (/proc/PID/stat) used between "ready" and the
end of the load, divided by the requests answered; the load client's CPU is not counted.
Every run is bounded (request counts, dnsperf's time limit, a 120 s deadline per run).
Native and traced runs alternate; the best and the median of K runs each are printed, and
the spread of the per-pair ratios.
"""
import argparse
import os
import random
import re
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
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def tool(name):
    """The path of an installed program (servers live in /usr/sbin), or None."""
    return shutil.which(name, path=os.environ.get('PATH', '') + ':/usr/sbin:/sbin')


def run_user():
    return ['-u', 'nobody' if os.geteuid() == 0 else str(os.geteuid())]


def stop(p):
    """Stops a server; returns its stderr."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()[1]


# ------------------------------------------------------------------------------------------
# memcached
# ------------------------------------------------------------------------------------------
def mc_connect(port):
    deadline = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection(('127.0.0.1', port), timeout=10)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError('memcached did not start listening')
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


def memcached(env, o):
    """One memcached run: (server CPU seconds over the load, requests answered, stderr)."""
    port = free_port()
    cmd = [tool('memcached'), '-l', '127.0.0.1', '-p', str(port), '-U', '0', '-t', '4']
    p = subprocess.Popen(cmd + run_user(), env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        socks = [mc_connect(port) for _ in range(o.conns)]
        bufs = [b''] * o.conns
        rnd = random.Random(1)
        value = b'x' * 100
        cpu0 = cpu_seconds(p.pid)
        start = time.monotonic()
        for n in range(o.requests):
            due = start + n / o.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            if now - start > DEADLINE_S:
                raise RuntimeError('deadline passed')
            c = n % o.conns
            key = b'key%d' % rnd.randrange(1000)
            if n % 10 == 0 or n < 1000:
                socks[c].sendall(b'set %s 0 0 %d\r\n%s\r\n' % (key, len(value), value))
            else:
                socks[c].sendall(b'get %s\r\n' % key)
            bufs[c] = mc_read_reply(socks[c], bufs[c])
        cpu = cpu_seconds(p.pid) - cpu0
        for s in socks:
            s.close()
    finally:
        err = stop(p)
    return cpu, o.requests, err


def memcached_title(o):
    return f'memcached, {o.requests} requests at {o.rate}/s over {o.conns} connections'


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


def unbound(env, o):
    """One unbound run: (server CPU seconds over the load, queries answered, stderr)."""
    with tempfile.TemporaryDirectory(prefix='ltbench-unbound.') as d:
        port = free_port(socket.SOCK_DGRAM)
        conf, queries = unbound_files(d, port)
        p = subprocess.Popen([tool('unbound'), '-d', '-c', conf], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while not dns_answered(port):
                if p.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError('unbound did not start answering')
            cpu0 = cpu_seconds(p.pid)
            cmd = [tool('dnsperf'), '-s', '127.0.0.1', '-p', str(port), '-d', queries,
                   '-Q', str(o.qps), '-l', str(o.seconds), '-c', '4', '-t', '2']
            out = subprocess.run(cmd, capture_output=True, text=True,
                                 timeout=DEADLINE_S).stdout
            cpu = cpu_seconds(p.pid) - cpu0
        finally:
            err = stop(p)
    m = re.search(r'Queries completed:\s+(\d+)', out)
    if not m or int(m.group(1)) == 0:
        raise RuntimeError('dnsperf: no answered queries\n' + out)
    return cpu, int(m.group(1)), err


def unbound_title(o):
    return (f'unbound, dnsperf at {o.qps} queries/s for {o.seconds} s '
            f'({ZONES} local zones x {NAMES} names)')


SERVERS = {
    'memcached': (memcached, memcached_title, ['memcached']),
    'unbound': (unbound, unbound_title, ['unbound', 'dnsperf']),
}


def bench(name, o, native_env, traced_env):
    fn, title, tools = SERVERS[name]
    missing = [t for t in tools if not tool(t)]
    if missing:
        print(f'{name}: skipped, not installed: {" ".join(missing)} '
              f'(apt-get install {" ".join(tools)})')
        return
    native, traced = [], []
    for _ in range(o.repeat):
        for env, out in ((native_env, native), (traced_env, traced)):
            cpu, answered, err = fn(env, o)
            if b'locktrace:' in err:
                sys.stderr.write(err.decode(errors='replace'))
            out.append(cpu / answered * 1e6)
    pair = [t / n for n, t in zip(native, traced)]
    print(f'{title(o)}; server CPU per request, {o.repeat} interleaved runs each')
    for label, f in (('best', min), ('median', statistics.median)):
        n, t = f(native), f(traced)
        print(f'  {label:6}  native {n:6.2f} us  traced {t:6.2f} us  ratio {t / n:.2f}x')
    print(f'  per-pair ratios {min(pair):.2f}-{max(pair):.2f}x')


def main(argv):
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument('lib')
    a.add_argument('--servers', default='memcached,unbound')
    a.add_argument('--repeat', type=int, default=5)
    a.add_argument('--requests', type=int, default=50000, help='memcached requests per run')
    a.add_argument('--rate', type=int, default=10000, help='memcached requests per second')
    a.add_argument('--conns', type=int, default=8, help='memcached connections')
    a.add_argument('--qps', type=int, default=10000, help='dnsperf queries per second')
    a.add_argument('--seconds', type=int, default=5, help='dnsperf seconds per run')
    o = a.parse_args(argv)
    names = o.servers.split(',')
    for n in names:
        if n not in SERVERS:
            a.error(f'unknown server {n!r} (known: {", ".join(SERVERS)})')
    base = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    base.pop('LD_PRELOAD', None)
    traced_env = {**base, 'LD_PRELOAD': os.path.abspath(o.lib)}
    for n in names:
        bench(n, o, base, traced_env)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
