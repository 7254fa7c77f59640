"""Workflows under SIGKILL, on every backend: a random DAG (each job with 0-3 parents among
earlier jobs) drained by 4 worker processes while one of them is killed with SIGKILL
about every second (and replaced). Every job runs only after all its parents are done
(its start is later than each parent's completing transaction, and its handler saw every
parent's result), each is done exactly once (a result row written in its completion's
transaction), none is left waiting; with jobs that fail finally, exactly their
descendants end cancelled and every other job is done.

1,000 jobs as the issue asks (500 in the run with failing jobs); ``SKIPLOCK_SOAK=1`` runs
5,000 and 2,000. Measured on the shared 2-CPU machine (2026-12-04, 16:58 UTC): 1,000
jobs in 8 s (PostgreSQL 15), 19 s (MariaDB 10.11), 18 s (MySQL 9.7), the 500 with failing
jobs in 9-12 s; the six runs 100 s with start-up. While six other sessions ran tests,
1,000 jobs took 84 s (MariaDB) and 151 s (MySQL): a worker killed every second out of
four lives about four seconds, and a busy machine makes its start a good part of that.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import skiplock

from .conftest import fetch_all, soak

WORKER = Path(__file__).with_name("workflow_worker.py")
LEASE = 1.5


@pytest.fixture
def results(queue: skiplock.Queue) -> Iterator[str]:
    name = f"{queue.table.name}_wfres"
    quoted = queue.dialect.quote(name)
    with queue.transaction() as tx:
        tx.execute(f"DROP TABLE IF EXISTS {quoted}")
        tx.execute(
            f"CREATE TABLE {quoted} (job_id BIGINT NOT NULL, attempt INT NOT NULL, "
            "pid INT NOT NULL, started DOUBLE PRECISION NOT NULL, "
            "ended DOUBLE PRECISION NOT NULL, ok INT NOT NULL)"
        )
    yield name
    with queue.transaction() as tx:
        tx.execute(f"DROP TABLE IF EXISTS {quoted}")


class Processes:
    def __init__(self, url: str, q: skiplock.Queue, results: str, logs: Path) -> None:
        self.url, self.q, self.results, self.logs = url, q, results, logs
        self.procs: list[subprocess.Popen[bytes]] = []
        self.kills = 0

    def start(self) -> None:
        log = (self.logs / f"worker-{len(self.procs)}.log").open("wb")
        args = [str(self.q.table), self.results, str(LEASE), "2"]
        env = {**os.environ, "SKIPLOCK_URL": self.url}
        self.procs.append(
            subprocess.Popen([sys.executable, str(WORKER), *args], env=env, stdout=log, stderr=log)
        )
        log.close()

    def kill_one(self) -> None:
        random.choice([p for p in self.procs if p.poll() is None]).kill()
        self.kills += 1
        self.start()

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def log_tail(self) -> str:
        lines = []
        for path in sorted(self.logs.glob("worker-*.log")):
            lines += [f"{path.name}: {x}" for x in path.read_text().splitlines()[-10:]]
        return "\n".join(lines[-40:])


def build_dag(q: skiplock.Queue, n: int, failing: int) -> tuple[dict[int, list[int]], set[int]]:
    """*n* jobs, each with 0-3 parents among the earlier ones (nearby ones more often, so
    the graph is deep as well as wide), *failing* of them planned to fail; enqueued in
    one transaction. Returns each job's parents, and the ids planned to fail."""
    rng = random.Random()
    fails = set(rng.sample(range(n // 4, n), failing))
    parents: dict[int, list[int]] = {}
    ids: list[int] = []
    planned: set[int] = set()
    with q.transaction() as tx:
        for i in range(n):
            k = 0 if i == 0 else rng.randint(0, min(3, i))
            picks = sorted({ids[max(0, i - 1 - int(rng.expovariate(1 / 20)))] for _ in range(k)})
            payload = {"parents": picks, "fail": i in fails}
            job_id = tx.enqueue(
                payload, after=picks or None, max_attempts=1 if i in fails else 1000
            )
            ids.append(job_id)
            parents[job_id] = picks
            if i in fails:
                planned.add(job_id)
    return parents, planned


def descendants(parents: dict[int, list[int]], roots: set[int]) -> set[int]:
    out: set[int] = set()
    for job_id in sorted(parents):  # parents have smaller ids
        if any(p in roots or p in out for p in parents[job_id]):
            out.add(job_id)
    return out


@pytest.mark.parametrize("failing", [0, 4], ids=["all-done", "failing"])
def test_a_random_dag_under_kill_9(
    backend: str, url: str, queue: skiplock.Queue, results: str, tmp_path: Path, failing: int
) -> None:
    n = (5_000 if failing == 0 else 2_000) if soak() else (1_000 if failing == 0 else 500)
    parents, planned = build_dag(queue, n, failing)
    assert queue.stats().waiting > 0
    procs = Processes(url, queue, results, tmp_path)
    for _ in range(4):
        procs.start()
    started = time.monotonic()
    try:
        while True:
            s = queue.stats()
            if s.waiting + s.pending + s.scheduled + s.running + s.expired == 0:
                break
            waited = time.monotonic() - started
            assert waited < (900 if soak() else 300), f"not drained: {s}\n{procs.log_tail()}"
            assert s.done or waited < 30, f"nothing done: {s}\n{procs.log_tail()}"
            time.sleep(random.uniform(0.7, 1.3))
            procs.kill_one()
        elapsed = time.monotonic() - started
    finally:
        procs.stop()

    table = queue.dialect.quote(queue.table.name)
    jobs = {
        int(i): (str(st), int(a), e)
        for i, st, a, e in fetch_all(queue, f"SELECT id, status, attempt, last_error FROM {table}")
    }
    assert sorted(jobs) == sorted(parents)
    rows = fetch_all(
        queue, f"SELECT job_id, attempt, started, ended, ok FROM {queue.dialect.quote(results)}"
    )
    per_job: dict[int, list[tuple[int, float, float, int]]] = {}
    for job_id, attempt, t0, t1, ok in rows:
        per_job.setdefault(int(job_id), []).append((int(attempt), float(t0), float(t1), int(ok)))

    # a planned failure below another one is cancelled before it runs
    cancelled = descendants(parents, planned)
    failed = {j for j, (st, _, _) in jobs.items() if st == "failed"}
    assert failed == planned - cancelled, (failed, planned, cancelled)
    for job_id, (status, attempt, error) in jobs.items():
        if job_id in failed:
            continue
        if job_id in cancelled:
            assert status == "cancelled", (job_id, status)
            assert error is not None and error.startswith("parent job "), error
            assert job_id not in per_job, f"cancelled job {job_id} ran"
            continue
        assert status == "done", (job_id, status, error)
        runs = per_job.get(job_id, [])
        assert len(runs) == 1, f"job {job_id} has {len(runs)} result rows"
        ran_attempt, t0, _, ok = runs[0]
        assert ran_attempt == attempt, "the result row is not the completing attempt's"
        assert ok == 1, f"job {job_id} did not see every parent's result"
        for p in parents[job_id]:
            assert t0 >= per_job[p][0][2], f"job {job_id} started before its parent {p} ended"
    retaken = sum(1 for _, a, _ in jobs.values() if a > 1)
    print(
        f"\n{backend}: {n} jobs ({failing} failing, {len(cancelled)} cancelled) in "
        f"{elapsed:.1f}s, {procs.kills} workers killed, {retaken} jobs taken back"
    )
    assert procs.kills >= 3
