"""Helpers for the worker tests: waiting on a condition, and workers stopped at the end."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

import skiplock
from skiplock import Worker

from .clients import Client, open_client


def wait_until(probe: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if probe():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or probe}")


def drained(q: skiplock.Queue) -> bool:
    s = q.stats()
    return s.pending + s.scheduled + s.running + s.expired == 0


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """Workers started by a test; stopped at its end whatever happens."""
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop(wait=False)
    for w in started:
        w.stop(timeout=15)


@pytest.fixture
def client(backend: str, client_name: str, url: str) -> Iterator[Client]:
    """The application's own connection through one accepted driver (see clients.py);
    a test module parametrises ``backend`` and ``client_name`` with :func:`by_client`."""
    c = open_client(backend, client_name, url)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def side_table(queue: skiplock.Queue) -> Iterator[str]:
    """A table of the application's own next to the queue's: ``(job_id, note)``."""
    name = queue.dialect.quote(f"{queue.table.name}_side")
    with queue.transaction() as tx:
        tx.execute(f"DROP TABLE IF EXISTS {name}")
        tx.execute(f"CREATE TABLE {name} (job_id BIGINT NOT NULL, note VARCHAR(50))")
    yield name
    with queue.transaction() as tx:
        tx.execute(f"DROP TABLE IF EXISTS {name}")


def rows_in(queue: skiplock.Queue, table: str) -> int:
    """Committed rows of *table*, read on a connection of the queue's own."""
    with queue.transaction() as tx:
        row = tx.fetchone(f"SELECT COUNT(*) FROM {table}")
    assert row is not None
    return int(row[0])
