#!/usr/bin/env python3
"""CPU per request of a real server, memcached from Debian, natively and under liblocktrace.

  server_bench.py LIBLOCKTRACE [--requests N] [--rate R] [--conns C] [--repeat K]

Each run starts `memcached -l 127.0.0.1` (loopback only, a free port, 4 worker threads), sends
N requests (9 gets to 1 set, 1,000 keys of 100 bytes) over C connections at a fixed total rate
of R requests per second, then reads the server's user + system CPU time from /proc and stops
it. Every run is bounded: requests and a 120 s deadline. Native and traced runs alternate;
the median of K runs each counts. The load client is this script: its own CPU is not counted.
"""
import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time

DEADLINE_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def connect(port):
    for _ in range(200):
        try:
            return socket.create_connection(('127.0.0.1', port), timeout=10)
        except OSError:
            time.sleep(0.02)
    raise RuntimeError('memcached did not start listening')


def read_reply(s, buf):
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


def load(port, requests, rate, conns):
    socks = [connect(port) for _ in range(conns)]
    bufs = [b''] * conns
    rnd = random.Random(1)
    value = b'x' * 100
    start = time.monotonic()
    for n in range(requests):
        due = start + n / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        if now - start > DEADLINE_S:
            raise RuntimeError('deadline passed')
        c = n % conns
        key = b'key%d' % rnd.randrange(1000)
        if n % 10 == 0 or n < 1000:
            socks[c].sendall(b'set %s 0 0 %d\r\n%s\r\n' % (key, len(value), value))
        else:
            socks[c].sendall(b'get %s\r\n' % key)
        bufs[c] = read_reply(socks[c], bufs[c])
    for s in socks:
        s.close()


def run(env, requests, rate, conns):
    port = free_port()
    p = subprocess.Popen(['memcached', '-l', '127.0.0.1', '-p', str(port), '-U', '0', '-t', '4',
                          '-u', 'nobody' if os.geteuid() == 0 else str(os.geteuid())],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        load(port, requests, rate, conns)
        cpu = cpu_seconds(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            err = p.communicate(timeout=10)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            err = p.communicate()[1]
    if b'locktrace:' in err:
        sys.stderr.write(err.decode(errors='replace'))
    return cpu / requests * 1e6


def main(argv):
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument('lib')
    a.add_argument('--requests', type=int, default=100000)
    a.add_argument('--rate', type=int, default=10000)
    a.add_argument('--conns', type=int, default=8)
    a.add_argument('--repeat', type=int, default=5)
    o = a.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if not k.startswith('LOCKTRACE_')}
    base.pop('LD_PRELOAD', None)
    traced_env = {**base, 'LD_PRELOAD': os.path.abspath(o.lib)}
    native, traced = [], []
    for _ in range(o.repeat):
        native.append(run(base, o.requests, o.rate, o.conns))
        traced.append(run(traced_env, o.requests, o.rate, o.conns))
    n, t = statistics.median(native), statistics.median(traced)
    pair = [b / a for a, b in zip(native, traced)]
    print(f'memcached, {o.requests} requests at {o.rate}/s over {o.conns} connections; '
          f'server CPU per request, median of {o.repeat} interleaved runs')
    print(f'native {n:.2f} us  traced {t:.2f} us  ratio {t / n:.2f}x  '
          f'(noise: per-run ratios {min(pair):.2f}-{max(pair):.2f}x)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
