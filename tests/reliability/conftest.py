"""Shared pieces of the reliability suite: the soak switch, a fleet of worker processes,
the side tables their handlers write, and the exactly-once check at the end of a run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conformance.conftest import (  # noqa: F401  (shared: the fixtures, the parametrising)
    pytest_generate_tests,
    worker_cls,
    workers,
)

import skiplock

WORKER = Path(__file__).with_name("chaos_worker.py")


def soak() -> bool:
    """``SKIPLOCK_SOAK=1``: the long runs (10,000 jobs, longer fault loops)."""
    return os.environ.get("SKIPLOCK_SOAK", "") not in ("", "0")


def fetch_all(q: skiplock.Queue, sql: str) -> list[tuple[Any, ...]]:
    with q.transaction() as tx:
        cur = tx.connection.cursor()
        cur.execute(sql)
        rows = [tuple(r) for r in cur.fetchall()]
        cur.close()
    return rows


@dataclass
class SideTables:
    """RESULTS: one row per committed handler run. REJECTED: one row per late write the
    database refused. Neither has a key: a double completion would show as two rows."""

    results: str
    rejected: str


@pytest.fixture
def side_tables(queue: skiplock.Queue) -> Iterator[SideTables]:
    base = queue.table.name
    tables = SideTables(f"{base}_res", f"{base}_rej")
    names = [queue.dialect.quote(t) for t in (tables.results, tables.rejected)]
    with queue.transaction() as tx:
        for name in names:
            tx.execute(f"DROP TABLE IF EXISTS {name}")
            tx.execute(
                f"CREATE TABLE {name} (job_id BIGINT NOT NULL, attempt INT NOT NULL, "
                "pid INT NOT NULL)"
            )
    yield tables
    with queue.transaction() as tx:
        for name in names:
            tx.execute(f"DROP TABLE IF EXISTS {name}")


class Fleet:
    """Worker processes (``chaos_worker.py``) on one queue table: started, killed with
    SIGKILL, frozen with SIGSTOP and thawed with SIGCONT, stopped. Each writes its log to a
    file of its own."""

    def __init__(
        self, url: str, q: skiplock.Queue, tables: SideTables, logs: Path, *, lease: float
    ) -> None:
        self.url, self.q, self.tables, self.logs, self.lease = url, q, tables, logs, lease
        self.procs: list[subprocess.Popen[bytes]] = []
        self.frozen: dict[int, tuple[subprocess.Popen[bytes], float]] = {}  # pid: proc, since
        self.kills = self.freezes = 0
        #: which worker the processes run: ``thread`` (Worker) or ``asyncio`` (AsyncWorker)
        self.kind = "thread"
        #: more environment for the processes (``SKIPLOCK_EVENTS``: see chaos_worker.py)
        self.env: dict[str, str] = {}

    def start(self, concurrency: int = 2) -> None:
        t = self.tables
        args = [str(self.q.table), t.results, t.rejected, str(self.lease), str(concurrency)]
        args.append(self.kind)
        log = (self.logs / f"worker-{len(self.procs)}.log").open("wb")
        env = {**os.environ, **self.env, "SKIPLOCK_URL": self.url}
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), *args], env=env, stdout=log, stderr=log
        )
        log.close()
        self.procs.append(proc)

    def alive(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def kill_one(self) -> None:
        """SIGKILL a random worker (not a frozen one) and start a replacement."""
        random.choice([p for p in self.alive() if p.pid not in self.frozen]).kill()
        self.kills += 1
        self.start()

    def freeze_one(self) -> None:
        """SIGSTOP a random worker that has completed jobs (so it is running some; a new one
        may still be importing). Its leases end while it is frozen; see :meth:`thaw`."""
        table = self.q.dialect.quote(self.tables.results)
        working = {int(pid) for (pid,) in fetch_all(self.q, f"SELECT DISTINCT pid FROM {table}")}
        ready = [p for p in self.alive() if p.pid in working and p.pid not in self.frozen]
        if ready:
            proc = random.choice(ready)
            proc.send_signal(signal.SIGSTOP)
            self.frozen[proc.pid] = (proc, time.monotonic())
            self.freezes += 1

    def frozen_for(self) -> float:
        return max((time.monotonic() - t for _, t in self.frozen.values()), default=0.0)

    def thaw(self) -> None:
        """SIGCONT the frozen workers: they wake holding jobs whose leases ended; if other
        workers took those back meanwhile, their late writes must be refused."""
        for proc, _ in self.frozen.values():
            proc.send_signal(signal.SIGCONT)
        self.frozen.clear()

    def stop(self) -> None:
        self.thaw()
        for proc in self.alive():
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        text = []
        for path in sorted(self.logs.glob("worker-*.log")):
            text += [f"{path.name}: {line}" for line in path.read_text().splitlines()[-lines:]]
        return "\n".join(text[-lines * 3 :])


@pytest.fixture
def fleet(
    url: str, queue: skiplock.Queue, side_tables: SideTables, tmp_path: Path
) -> Iterator[Fleet]:
    made = Fleet(url, queue, side_tables, tmp_path, lease=1.5)
    yield made
    made.stop()


def check_exactly_once(q: skiplock.Queue, tables: SideTables, ids: list[int]) -> dict[str, int]:
    """Every job done, its result row written exactly once by the attempt that completed
    it; every refused late write belongs to an attempt that was taken back. Returns counts
    for the report."""
    stats = q.stats()
    assert (stats.pending, stats.scheduled, stats.running, stats.expired, stats.failed) == (
        0,
        0,
        0,
        0,
        0,
    ), stats
    assert stats.done == len(ids)
    jobs = dict(fetch_all(q, f"SELECT id, attempt FROM {q.dialect.quote(q.table.name)}"))
    assert sorted(jobs) == sorted(ids)
    results = fetch_all(q, f"SELECT job_id, attempt FROM {q.dialect.quote(tables.results)}")
    per_job: dict[int, list[int]] = {}
    for job_id, attempt in results:
        per_job.setdefault(int(job_id), []).append(int(attempt))
    twice = {j: a for j, a in per_job.items() if len(a) > 1}
    assert not twice, (
        f"{len(twice)} jobs have more than one result row, e.g. {list(twice.items())[:5]}"
    )
    missing = set(ids) - set(per_job)
    assert not missing, f"{len(missing)} done jobs have no result row, e.g. {sorted(missing)[:5]}"
    wrong = {j: (a[0], jobs[j]) for j, a in per_job.items() if a[0] != jobs[j]}
    assert not wrong, (
        f"result rows not written by the completing attempt: {list(wrong.items())[:5]}"
    )
    rejected = fetch_all(q, f"SELECT job_id, attempt FROM {q.dialect.quote(tables.rejected)}")
    not_retaken = [(j, a) for j, a in rejected if jobs[int(j)] <= int(a)]
    assert not not_retaken, f"late writes refused for jobs never taken back: {not_retaken[:5]}"
    retaken = sum(1 for a in jobs.values() if a > 1)
    assert len({int(j) for j, _ in rejected}) <= retaken
    return {"jobs": len(ids), "retaken": retaken, "rejected": len(rejected)}
