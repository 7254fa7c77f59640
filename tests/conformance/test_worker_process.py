"""A worker process and its signals, on every backend: SIGTERM stops claiming, waits the
grace period, releases what did not finish (fenced) and exits 0; a SIGINT after it exits
at once, a repeated SIGTERM does not; a missing table is refused before the worker starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import skiplock

from .conftest import wait_until

HANDLER = """
import asyncio
import time

def sleepy(job):
    time.sleep(float(job.payload))
    return "slept"

async def asleepy(job):
    await asyncio.sleep(float(job.payload))
    return "slept"
"""


@pytest.fixture
def start_worker(queue: skiplock.Queue, url: str, tmp_path: Path) -> Iterator[object]:
    (tmp_path / "sleepymod.py").write_text(HANDLER)
    procs: list[subprocess.Popen[str]] = []

    def start(*options: str, target: str = "sleepymod:sleepy") -> subprocess.Popen[str]:
        cmd = [sys.executable, "-m", "skiplock", "worker", target]
        cmd += ["--table", str(queue.table), "--lease", "10", *options]
        env = {**os.environ, "SKIPLOCK_URL": url}
        p = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate()


def running(queue: skiplock.Queue, n: int) -> bool:
    return queue.stats().running == n


def test_sigterm_releases_unfinished_jobs_and_exits_0(
    queue: skiplock.Queue, start_worker: object
) -> None:
    quick, slow1, slow2 = queue.enqueue_many([0.05, 60, 60])
    proc = start_worker("--concurrency", "3", "--grace", "0.5")  # type: ignore[operator]
    wait_until(lambda: queue.stats().done == 1 and running(queue, 2), timeout=15)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 5
    for job_id in (slow1, slow2):
        record = queue.get(job_id)
        assert record is not None
        assert (record.status, record.attempt) == ("pending", 1), err
    assert "released job" in err
    assert queue.get(quick).status == "done"  # type: ignore[union-attr]


def test_sigterm_lets_a_running_job_finish_within_the_grace_period(
    queue: skiplock.Queue, start_worker: object
) -> None:
    job_id = queue.enqueue(1.0)
    proc = start_worker("--grace", "20")  # type: ignore[operator]
    wait_until(lambda: running(queue, 1), timeout=15)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    record = queue.get(job_id)
    assert record is not None and (record.status, record.result) == ("done", "slept")


def test_a_second_signal_exits_at_once(queue: skiplock.Queue, start_worker: object) -> None:
    job_id = queue.enqueue(60)
    proc = start_worker("--grace", "60")  # type: ignore[operator]
    wait_until(lambda: running(queue, 1), timeout=15)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert proc.poll() is None  # in its grace period
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 128 + signal.SIGINT
    assert time.monotonic() - started < 3
    record = queue.get(job_id)
    assert record is not None and record.status == "running"  # its lease brings it back


@pytest.mark.parametrize("target", ["sleepymod:sleepy", "sleepymod:asleepy"])
def test_repeated_sigterms_do_not_cut_the_grace_short(
    queue: skiplock.Queue, start_worker: object, target: str
) -> None:
    """One stop often comes as several SIGTERMs (GNU timeout signals the process, then its
    group): only the first counts; a SIGINT after it exits at once (the test above)."""
    job_id = queue.enqueue(60)
    proc = start_worker("--grace", "1", target=target)  # type: ignore[operator]
    wait_until(lambda: running(queue, 1), timeout=15)
    for _ in range(3):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # apart, so that each is delivered (pending ones merge)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "exiting now" not in err and "still stopping" in err, err
    record = queue.get(job_id)
    assert record is not None and (record.status, record.attempt) == ("pending", 1), err
    assert f"released job {job_id} attempt 1" in err


def test_a_killed_worker_frees_its_key_when_its_lease_ends(
    queue: skiplock.Queue, start_worker: object
) -> None:
    a = queue.enqueue(60, key="k", max_attempts=1)
    b = queue.enqueue(0.05, key="k")
    proc = start_worker("--lease", "1.5")  # type: ignore[operator]
    wait_until(lambda: running(queue, 1), timeout=15)
    proc.kill()  # SIGKILL mid-job: no release, no fenced write
    proc.communicate(timeout=15)
    assert queue.get(b).status == "pending"  # type: ignore[union-attr]
    start_worker("--lease", "1.5")  # type: ignore[operator]
    wait_until(lambda: queue.get(b).status == "done", timeout=30)  # type: ignore[union-attr]
    first, second = queue.get(a), queue.get(b)
    assert first is not None and second is not None
    assert first.status == "failed" and "lease expired" in (first.last_error or "")
    assert second.attempt == 1
    # the claim that ended a's lease freed the key; b was claimed after that
    assert first.finished_at is not None and second.finished_at is not None
    assert first.finished_at < second.finished_at


def test_a_missing_table_is_refused_before_the_worker_says_it_started(
    queue: skiplock.Queue, start_worker: object
) -> None:
    proc = start_worker("--table", f"{queue.table.name}_nope")  # type: ignore[operator]
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert f"the table {queue.table.name}_nope does not exist" in err, err
    assert "worker started" not in err and "worker list" not in err, err
