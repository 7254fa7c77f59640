"""The chaos run, on every backend: 8 worker processes drain a queue while one of them is
killed with SIGKILL about every second (and replaced), and now and then one is frozen
(SIGSTOP) until other workers have taken its jobs back. At the end every job is done
exactly once, and the late writes the database refused are counted."""

from __future__ import annotations

import random
import threading
import time

import pytest
from conformance.conftest import drained

import skiplock

from .conftest import Fleet, SideTables, check_exactly_once, soak

#: jobs enqueued per second: about as fast as the workers go
FLOW = 150


def feed(queue: skiplock.Queue, total: int, ids: list[int]) -> None:
    """Enqueue *total* jobs as a steady flow, not one big backlog: a job whose lease ended
    queues behind the jobs enqueued before that moment, so with a backlog a killed or
    frozen worker's jobs would be taken back only at its end."""
    while len(ids) < total:
        batch = list(range(min(FLOW // 10, total - len(ids))))
        ids += queue.enqueue_many(batch, max_attempts=1000)
        time.sleep(0.1)


@pytest.mark.parametrize("kind", ["thread", "asyncio"])
def test_kill_9_a_worker_every_second(
    backend: str, kind: str, queue: skiplock.Queue, side_tables: SideTables, fleet: Fleet
) -> None:
    # The same run for both workers; the asyncio one with fewer jobs, to keep the time down.
    fleet.kind = kind
    total = 10_000 if soak() else (2_000 if kind == "thread" else 800)
    ids: list[int] = []
    feeder = threading.Thread(target=feed, args=(queue, total, ids), daemon=True)
    for _ in range(8):
        fleet.start()
    started = time.monotonic()
    feeder.start()
    # a liveness bound, not a speed target: the run shares 2 CPUs with the rest of the
    # full run (CI: a Patroni drain beside it took this one past 100 s)
    deadline = started + (900 if soak() else 300)
    while feeder.is_alive() or not drained(queue):
        assert time.monotonic() < deadline, f"not drained in time\n{fleet.log_tail()}"
        time.sleep(random.uniform(0.6, 1.4))
        fleet.kill_one()
        if not fleet.frozen:
            fleet.freeze_one()
        elif fleet.frozen_for() > 2 * fleet.lease and queue.stats().expired == 0:
            fleet.thaw()  # its jobs were taken back: now let it try to complete them
        elif fleet.frozen_for() > 10 * fleet.lease:
            fleet.thaw()  # frozen inside a transaction: others cannot take that row back
    assert len(ids) == total
    elapsed = time.monotonic() - started
    fleet.stop()
    report = check_exactly_once(queue, side_tables, ids)
    print(
        f"\n{backend} ({kind}): {report['jobs']} jobs in {elapsed:.1f}s, {fleet.kills} workers "
        f"killed, {fleet.freezes} frozen; {report['retaken']} jobs taken back, "
        f"{report['rejected']} late writes refused (LeaseLost)"
    )
    # Whether a frozen worker held jobs at that moment is chance, so the refused late
    # writes are reported, not required; a late write that was not refused would show
    # above as a second result row.
    assert fleet.kills >= 3 and fleet.freezes >= 1
