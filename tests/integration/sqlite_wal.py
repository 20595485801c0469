#!/usr/bin/env python3
"""Python's sqlite3 switching databases to WAL, for the harm tests (same results traced).

  sqlite_wal.py threads   8 threads, each with a new database of its own, switch it to WAL at
                          once (after a barrier), write 50 rows and count them. Correct: every
                          switch succeeds, traced or not.
  sqlite_wal.py upgrade   one connection holds a write transaction while a second, with a
                          busy timeout of an hour, switches the same database to WAL: SQLite
                          refuses at once with "database is locked" (the second connection
                          holds a read lock the first needs gone, so waiting could deadlock;
                          the busy handler is not called), then succeeds once the first commits.

`upgrade` is the failure seen under the tracer (2026-12-02: "database is locked" in 4 of 109
runs of threads switching one database to WAL at once): threads that switch the same new
database at once race into exactly this refusal whenever one's read transaction overlaps
another's switch. Natively the race is rarely lost, the threads' switches seldom overlap; any
slowdown loses it (the tracer, strace, a preload that only delays pthread_mutex_lock by
0.5 ms: 20 of 20 runs), so it is the program's race, and the tracer hands SQLite the results
libc would. Here it is made certain without threads, so the outcome never depends on timing;
the process timeout bounds it (a busy handler called would wait an hour).
"""
import os
import sqlite3
import sys
import tempfile
import threading

THREADS = 8
ROWS = 50
HOUR = 3600.0


def threads(tmp):
    barrier = threading.Barrier(THREADS)
    results = [None] * THREADS

    def work(i):
        con = sqlite3.connect(os.path.join(tmp, f'db{i}.sqlite'), timeout=HOUR)
        barrier.wait()
        try:
            mode = con.execute('PRAGMA journal_mode=WAL').fetchone()[0]
            con.execute('create table t(x)')
            con.executemany('insert into t values(?)', [(k,) for k in range(ROWS)])
            con.commit()
            results[i] = f'{mode} {con.execute("select count(*) from t").fetchone()[0]}'
        except sqlite3.Error as e:
            results[i] = f'error: {e}'
        con.close()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, r in enumerate(results):
        print(f'database {i}: {r}')


def upgrade(tmp):
    path = os.path.join(tmp, 'db.sqlite')
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute('create table t(x)')
    writer.execute('begin')
    writer.execute('insert into t values(1)')
    switcher = sqlite3.connect(path, timeout=HOUR)
    try:
        switcher.execute('PRAGMA journal_mode=WAL')
        print('switch during a write transaction: succeeded')
    except sqlite3.OperationalError as e:
        print(f'switch during a write transaction: {e}')
    writer.execute('commit')
    print(f'switch after the commit: {switcher.execute("PRAGMA journal_mode=WAL").fetchone()[0]}')
    print(f'rows: {switcher.execute("select count(*) from t").fetchone()[0]}')
    switcher.close()
    writer.close()


def main():
    with tempfile.TemporaryDirectory(prefix='locktrace-sqlite-') as tmp:
        {'threads': threads, 'upgrade': upgrade}[sys.argv[1]](tmp)
    return 0


if __name__ == '__main__':
    sys.exit(main())
