"""The database restarts while worker processes drain a queue: they reconnect with
back-off and every job still ends done exactly once.

These tests restart the machine's shared servers, so they run only when
``SKIPLOCK_RESTART_SERVERS=1`` (.ci/run sets it; scripts/test does not); a backend that
this machine cannot restart (e.g. a remote SQL Server) is skipped with the reason."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

import skiplock

from .conftest import Fleet, SideTables, check_exactly_once, soak
from .servers import restarter


def done_count(q: skiplock.Queue) -> int | None:
    try:
        return q.stats().done
    except skiplock.BackendError:  # the server is away
        return None


def wait_for(probe: Callable[[], bool], timeout: float, what: str, fleet: Fleet) -> None:
    end = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < end, f"timed out waiting for {what}\n{fleet.log_tail()}"
        time.sleep(0.1)


def test_workers_reconnect_after_a_database_restart(
    backend: str, url: str, queue: skiplock.Queue, side_tables: SideTables, fleet: Fleet
) -> None:
    if os.environ.get("SKIPLOCK_RESTART_SERVERS") != "1":
        pytest.skip("restarts the shared database servers: set SKIPLOCK_RESTART_SERVERS=1")
    restart = restarter(backend, url)
    if restart is None:
        pytest.skip(f"{backend}: this machine cannot restart that server (see servers.py)")
    total = 4_000 if soak() else 1_000
    ids = queue.enqueue_many(list(range(total)), max_attempts=1000)
    for _ in range(4):
        fleet.start()
    downtime = []
    for n in range(1, (3 if soak() else 1) + 1):
        target = total * n // 4  # restart at a quarter, then a half, then three quarters
        reached = lambda t=target: (done_count(queue) or 0) >= t  # noqa: E731
        wait_for(reached, 90, f"{target} jobs done", fleet)
        started = time.monotonic()
        restart()  # returns once the server answers, whatever happened
        downtime.append(time.monotonic() - started)
    wait_for(lambda: done_count(queue) == total, 120, "every job done after the restart", fleet)
    fleet.stop()
    report = check_exactly_once(queue, side_tables, ids)
    print(
        f"\n{backend}: {total} jobs, {len(downtime)} restarts of "
        f"{', '.join(f'{d:.1f}s' for d in downtime)}; {report['retaken']} jobs taken back, "
        f"{report['rejected']} late writes refused (LeaseLost)"
    )
