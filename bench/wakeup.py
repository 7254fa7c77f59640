"""How fast an idle Worker starts a new job without LISTEN/NOTIFY, and what its idle probe
costs the server (MySQL / MariaDB).

    cd bench && python wakeup.py --backend mariadb --backend mysql --runs 3
    python wakeup.py --statement-cost      # server CPU per statement, spaced or not

Two settings, rounds interleaved: ``probe`` (what the Worker does: while idle, one
``SELECT MAX(id)`` every 25 ms on a connection of its own, every 100 ms after 10 s without
a job) and ``polling only`` (the
probe switched off in this process: the Worker before it, which found jobs only by its
claim polls, backing off to ``poll_interval``, 1 s).

- latency: from just before ``enqueue`` to the handler's first line (``bench/sk.py``'s
  latency, the same as ``run.py``'s row): ``--jobs`` jobs one every 20 ms, then
  ``--idle-jobs`` jobs each after ``--idle-gap`` seconds of idleness (the back-off has
  reached ``poll_interval`` by then).
- cost, per idle Worker (defaults, one worker): over its first 10 s of idleness (fast
  probes) and over ``--idle-seconds`` after that (slow probes): the
  statements its sessions sent per second and the server CPU time of the server threads
  serving them (``/proc/<server>/task/<thread>/schedstat``, nanoseconds; the threads are
  found by session id: ``information_schema.PROCESSLIST.TID`` on MariaDB,
  ``performance_schema.threads`` on MySQL). Statements per second are counted by the
  server on MySQL (``performance_schema.status_by_thread``), by the client on MariaDB
  (probes counted by the Worker, plus its claim polls). Per-session counters, so other
  sessions on a shared server do not land in them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Any

from common import percentile
from run import URLS
from sk import Skiplock

import skiplock
from skiplock._worker import claiming, lifecycle

SETTINGS = ("probe", "polling only")


def _set(setting: str) -> None:
    """Switch the probe on or off for the Workers this process builds."""
    lifecycle.make_wakeup = (  # type: ignore[assignment]
        claiming.make_wakeup if setting == "probe" else (lambda queue, flags: claiming.Wakeup())
    )


def latency(sk: Skiplock, jobs: int, idle_jobs: int, idle_gap: float) -> dict[str, float]:
    p50, p99, _ = sk.latency(jobs, 0.02, concurrency=100)
    out = {"p50 ms, every 20 ms": p50, "p99 ms, every 20 ms": p99}
    if idle_jobs:
        ms = _after_idle(sk, idle_jobs, idle_gap)
        out[f"p50 ms, after {idle_gap:g} s idle"] = percentile(ms, 50)
        out[f"max ms, after {idle_gap:g} s idle"] = max(ms)
    return out


def _after_idle(sk: Skiplock, count: int, gap: float) -> list[float]:
    sk.reset()
    seen: list[float] = []

    def handler(job: skiplock.Job) -> None:
        seen.append(time.time() - job.payload["t"])

    worker = skiplock.Worker(sk.q, handler).start()
    for _ in range(count):
        time.sleep(gap)
        sk.q.enqueue({"t": time.time()})
    deadline = time.monotonic() + 30
    while len(seen) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop(timeout=30)
    return [s * 1000 for s in seen]


def _server_pid(url: str) -> int:
    port = skiplock.connect(url).url.port or 3306
    pattern = "mariadbd" if port == 3306 else f"mysqld.*{port}"
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return int(out.split()[0])


def _sessions(q: skiplock.Queue) -> dict[int, int]:
    """Session id -> server thread id, for this database's sessions."""
    with q.transaction() as tx:
        if "MariaDB" in str(tx.fetchone("SELECT VERSION()")[0]):
            rows = tx.fetchall(
                "SELECT ID, TID FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"
            )
        else:
            rows = tx.fetchall(
                "SELECT PROCESSLIST_ID, THREAD_OS_ID FROM performance_schema.threads "
                "WHERE PROCESSLIST_DB = DATABASE()"
            )
    return {int(a): int(b) for a, b in rows}


def _cpu_ns(pid: int, tids: list[int]) -> int:
    total = 0
    for tid in tids:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def _questions(q: skiplock.Queue, sessions: list[int]) -> int | None:
    """Statements the server counted for *sessions* (MySQL's performance_schema)."""
    marks = ", ".join(str(int(s)) for s in sessions)
    with q.transaction() as tx:
        try:
            row = tx.fetchone(
                "SELECT SUM(s.VARIABLE_VALUE) FROM performance_schema.status_by_thread s "
                "JOIN performance_schema.threads t ON t.THREAD_ID = s.THREAD_ID "
                f"WHERE s.VARIABLE_NAME = 'Questions' AND t.PROCESSLIST_ID IN ({marks})"
            )
        except skiplock.BackendError:
            return None
    return None if row is None or row[0] is None else int(row[0])


def cost(sk: Skiplock, url: str, seconds: float) -> dict[str, float]:
    """One idle Worker: statements/s and server CPU µs/s of its sessions, over its first
    10 s of idleness (from 1 s after its start: fast probes) and over *seconds* from 11 s
    after its start (slow probes)."""
    sk.reset()
    monitor = skiplock.connect(url, table=sk.q.table.name)
    before = _sessions(monitor)
    own = skiplock.connect(url, table=sk.q.table.name)  # the worker's sessions are new
    worker = skiplock.Worker(own, lambda job: None).start()
    time.sleep(1.0)
    mine = {s: t for s, t in _sessions(monitor).items() if s not in before}
    pid = _server_pid(url)
    probe: Any = worker._runtime.wakeup
    out = {"sessions": float(len(mine))}

    def sample() -> tuple[int | None, int, float, int]:
        cpu = _cpu_ns(pid, list(mine.values()))
        return _questions(monitor, list(mine)), cpu, time.time(), getattr(probe, "probes", 0)

    for label, until in (("first 10 s idle", 10.0), ("idle longer", 11.0 + seconds)):
        if label == "idle longer":
            time.sleep(1.0)
        a = sample()
        time.sleep(until - 1.0 - (0 if label == "first 10 s idle" else 10.0))
        b = sample()
        took = b[2] - a[2]
        out[f"probes/s, {label}"] = (b[3] - a[3]) / took
        out[f"server CPU µs/s, {label}"] = (b[1] - a[1]) / 1000 / took
        if a[0] is not None and b[0] is not None:
            out[f"statements/s (server), {label}"] = (b[0] - a[0]) / took
    worker.stop(timeout=30)
    own.close()
    monitor.close()
    return out


def statement_cost(url: str, n: int = 200) -> dict[str, float]:
    """Server CPU µs per statement on one autocommit session: ``SELECT 1`` and the probe,
    back to back and one every 25 ms (what an idle probe's spacing costs)."""
    q = skiplock.connect(url, table="bench_skiplock")
    q.install()
    conn = q.dialect.probe_connect()
    cur = conn.cursor()
    cur.execute("SELECT CONNECTION_ID()")
    session = int(cur.fetchall()[0][0])
    tid, pid = _sessions(q)[session], _server_pid(url)
    out = {}
    for gap in (0.0, 0.025):
        for label, sql in (("SELECT 1", "SELECT 1"), ("probe", q.dialect.sql["wake_probe"])):
            before = _cpu_ns(pid, [tid])
            for _ in range(n):
                cur.execute(sql)
                cur.fetchall()
                time.sleep(gap)
            spacing = "back to back" if gap == 0 else "every 25 ms"
            out[f"{label}, {spacing}"] = (_cpu_ns(pid, [tid]) - before) / n / 1000
    conn.close()
    q.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append", choices=["mariadb", "mysql"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--idle-jobs", type=int, default=10)
    ap.add_argument("--idle-gap", type=float, default=1.5)
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument(
        "--statement-cost", action="store_true", help="only the server CPU per statement"
    )
    args = ap.parse_args()
    for backend in args.backend or ["mariadb", "mysql"]:
        url = URLS[backend]
        if args.statement_cost:
            for k, v in statement_cost(url).items():
                print(f"{backend}: {k}: {v:.0f} µs of server CPU per statement")
            continue
        sk = Skiplock(url)
        sk.q.install()
        got: dict[str, dict[str, list[float]]] = {s: {} for s in SETTINGS}
        for r in range(args.runs):
            for setting in SETTINGS:
                _set(setting)
                figures = latency(sk, args.jobs, args.idle_jobs, args.idle_gap)
                figures.update(cost(sk, url, args.idle_seconds))
                for k, v in figures.items():
                    got[setting].setdefault(k, []).append(v)
                print(f"{backend} round {r + 1} {setting}: {figures}", file=sys.stderr)
        _set("probe")
        print(f"\n{backend}: medians of {args.runs} (samples), rounds interleaved")
        print("| figure | " + " | ".join(SETTINGS) + " |")
        print("|---|" + "---:|" * len(SETTINGS))
        for k in got["probe"]:
            cells = []
            for s in SETTINGS:
                v = got[s].get(k, [])
                samples = ", ".join(f"{x:,.1f}" for x in v)
                cells.append(f"{statistics.median(v):,.1f} ({samples})" if v else "")
            print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
