"""Prefetch on every backend, for both worker kinds: a claim takes jobs beyond the free
slots; they wait in the worker, heartbeated (their lease runs from the claim), their
timeout counted from when they begin; a stop gives them back at once; a killed worker's
come back when their lease ends; queues with ``queue_limits`` claim no more than the free
slots."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import skiplock
from skiplock import Job, Worker

from .conftest import wait_until
from .test_single import kill_session

AHEAD = 4


def gated(gate: threading.Event, seen: list[Any]) -> Callable[[Job], str]:
    """A handler: ``"block"`` waits for *gate*; anything else returns at once."""

    def handler(job: Job) -> str:
        seen.append(job.payload)
        if job.payload == "block":
            assert gate.wait(30)
        return "ok"

    return handler


def claimed_ahead(queue: skiplock.Queue, worker: Any, seen: list[Any]) -> list[int]:
    """Warm *worker* up with one quick job (the prefetch bound is 0 until a handler has
    ended), then enqueue a blocking job and AHEAD more: one claim takes all of them."""
    queue.enqueue("warm-up")
    wait_until(lambda: worker.counts["done"] == 1, what="the warm-up job")
    ids = queue.enqueue_many(["block"] + [f"after {i}" for i in range(AHEAD)])
    wait_until(lambda: queue.stats().running == AHEAD + 1, what="the jobs to be claimed")
    # the claim has committed; its first job begins on a runner thread just after
    wait_until(lambda: "block" in seen, what="the blocking job to begin")
    assert seen == ["warm-up", "block"]  # one slot: the others wait, unstarted
    return ids


def test_prefetched_jobs_wait_heartbeated_and_their_timeout_starts_when_they_do(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    gate, seen = threading.Event(), []
    worker = worker_cls(
        queue,
        gated(gate, seen),
        concurrency=1,
        prefetch=AHEAD,
        lease=1.5,
        heartbeat=0.3,
        poll_interval=0.1,
        timeout=lambda job: None if job.payload == "block" else 1.0,
    )
    workers.append(worker.start())
    ids = claimed_ahead(queue, worker, seen)
    time.sleep(2.5)  # past the lease and past the waiting jobs' timeout
    assert queue.stats().expired == 0
    assert queue.claim(limit=10, lease=5) == []  # nothing came back: the leases were kept
    gate.set()
    wait_until(lambda: worker.counts["done"] == AHEAD + 2, what="every job to be done")
    for job_id in ids:
        record = queue.get(job_id)
        assert record is not None and (record.status, record.attempt) == ("done", 1)
    assert worker.counts["failed"] == worker.counts["retried"] == worker.counts["lost"] == 0


def test_a_stop_gives_prefetched_jobs_back_at_once(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    gate, seen = threading.Event(), []
    worker = worker_cls(
        queue, gated(gate, seen), concurrency=1, prefetch=AHEAD, grace=30, poll_interval=0.1
    )
    workers.append(worker.start())
    block, *ahead = claimed_ahead(queue, worker, seen)
    worker.stop(wait=False)  # the grace is 30 s; the block job runs on
    wait_until(lambda: queue.stats().pending == AHEAD, what="the prefetched jobs' release")
    for job_id in ahead:
        record = queue.get(job_id)
        assert record is not None and (record.status, record.attempt) == ("pending", 1)
    assert queue.get(block).status == "running"  # type: ignore[union-attr]
    gate.set()
    worker.stop(timeout=15)
    assert queue.get(block).status == "done"  # type: ignore[union-attr]
    assert worker.counts["released"] == AHEAD
    assert seen == ["warm-up", "block"]  # a released job is never begun
    again = queue.claim(limit=10, lease=5)  # claimable now, not after a lease
    assert sorted(j.id for j in again) == sorted(ahead)


def test_no_claim_ahead_on_a_queue_with_a_limit(
    make_queue: Callable[..., skiplock.Queue], workers: list[Worker], worker_cls: type[Worker]
) -> None:
    # A prefetched job holds a live lease, so it would take a slot of the limit while it
    # waits: a limited queue's worker claims only for its free slots.
    queue = make_queue(queue_limits={"default": 3})
    gate, seen = threading.Event(), []
    worker = worker_cls(queue, gated(gate, seen), concurrency=1, prefetch=AHEAD, poll_interval=0.1)
    workers.append(worker.start())
    queue.enqueue("warm-up")
    wait_until(lambda: worker.counts["done"] == 1, what="the warm-up job")
    queue.enqueue_many(["block"] + [f"after {i}" for i in range(AHEAD)])
    wait_until(lambda: queue.stats().running == 1, what="the block job to be claimed")
    time.sleep(0.5)
    assert queue.stats().running == 1
    assert len(queue.claim(limit=10, lease=5)) == 2  # the limit's two other slots are free
    gate.set()


def test_single_mode_gives_prefetched_jobs_back_when_it_loses_its_lock(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    if not queue.dialect.supports_lock():
        pytest.skip("this database has no advisory-lock statements")
    gate, seen = threading.Event(), []
    worker = worker_cls(
        queue,
        gated(gate, seen),
        mode="single",
        concurrency=1,
        prefetch=AHEAD,
        lease=3,
        heartbeat=0.2,
        poll_interval=0.1,
    )
    workers.append(worker.start())
    wait_until(lambda: worker.lock.held, what="the lock")
    block, *ahead = claimed_ahead(queue, worker, seen)
    session = worker.lock.session_id()
    assert session is not None
    kill_session(queue, session)
    # no job begins without the lock: the waiting ones are given back (and claimed again
    # once the lock is held again), the running one goes on under fencing
    wait_until(lambda: worker.counts["released"] >= AHEAD, what="the release")
    gate.set()
    wait_until(lambda: worker.counts["done"] == AHEAD + 2, what="every job to be done")
    assert queue.get(block).attempt == 1  # type: ignore[union-attr]
    # (the producer and the heartbeat may each notice the loss: released once or twice)
    assert all(queue.get(i).attempt >= 2 for i in ahead)  # type: ignore[union-attr]
    assert seen.count("block") == 1 and sorted(seen[2:]) == [f"after {i}" for i in range(AHEAD)]


@pytest.mark.one_table
@pytest.mark.parametrize("bad", [-1, 1001, 2.5, "8", True])
def test_a_bad_prefetch_is_refused_before_anything_runs(queue: skiplock.Queue, bad: Any) -> None:
    with pytest.raises(skiplock.ConfigurationError, match="prefetch must be"):
        skiplock.Worker(queue, lambda job: None, prefetch=bad)
    assert queue.stats().running == 0


def test_the_default_prefetch_is_the_concurrency_at_least_32(queue: skiplock.Queue) -> None:
    assert skiplock.Worker(queue, lambda job: None).prefetch == 32
    assert skiplock.Worker(queue, lambda job: None, concurrency=100).prefetch == 100
    assert skiplock.Worker(queue, lambda job: None, prefetch=0).prefetch == 0


HANDLER = """
import time

def sleepy(job):
    time.sleep(float(job.payload))
    return "slept"
"""


def test_a_killed_workers_prefetched_jobs_come_back_when_their_lease_ends(
    queue: skiplock.Queue, url: str, tmp_path: Path
) -> None:
    (tmp_path / "sleepymod.py").write_text(HANDLER)
    cmd = [sys.executable, "-m", "skiplock", "worker", "sleepymod:sleepy", "--table"]
    cmd += [str(queue.table), "--concurrency", "1", "--prefetch", str(AHEAD), "--lease", "2"]
    env = {**os.environ, "SKIPLOCK_URL": url}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        queue.enqueue(0)  # the warm-up
        wait_until(lambda: queue.stats().done == 1, timeout=20, what="the warm-up job")
        ids = queue.enqueue_many([60] + [0] * AHEAD)
        wait_until(lambda: queue.stats().running == AHEAD + 1, what="the jobs to be claimed")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=15)
        assert queue.stats().done == 1  # the quick ones were claimed ahead, never begun
        wait_until(lambda: queue.stats().expired == AHEAD + 1, what="the leases to end")
        back = queue.claim(limit=10, lease=5)
        assert sorted((j.id, j.attempt) for j in back) == [(i, 2) for i in ids]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
