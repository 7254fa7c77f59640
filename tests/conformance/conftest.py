"""Helpers for the worker tests: waiting on a condition, and workers stopped at the end.

Every test that takes the ``workers`` fixture in a module that names ``Worker`` runs twice,
once per worker kind: ``thread`` (:class:`skiplock.Worker`) and ``asyncio``
(:class:`skiplock.AsyncWorker` on an event loop of its own, behind the same sync controls:
:class:`LoopWorker`). The module's ``Worker`` is swapped for the test, so one test body
serves both kinds.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

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


class LoopWorker:
    """A :class:`skiplock.AsyncWorker` with :class:`skiplock.Worker`'s sync controls: it runs
    on an event loop in a thread of its own, so a sync test body drives it unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.aw = skiplock.AsyncWorker(*args, **kwargs)
        self._thread: threading.Thread | None = None

    def __getattr__(self, name: str) -> Any:  # counts, lock, options
        return getattr(self.aw, name)

    def run(self, *, install_signals: bool = True) -> None:
        asyncio.run(self.aw.run(install_signals=False))

    def start(self) -> LoopWorker:
        self._thread = threading.Thread(target=self.run, name="loop-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, wait: bool = True, timeout: float | None = None) -> None:
        self.aw.request_stop()
        if wait and self._thread is not None:
            self._thread.join(timeout)


WORKER_KINDS: dict[str, Any] = {"thread": Worker, "asyncio": LoopWorker}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "workers" in metafunc.fixturenames and hasattr(metafunc.module, "Worker"):
        metafunc.fixturenames.append("worker_kind")  # the test body need not name it
        metafunc.parametrize("worker_kind", list(WORKER_KINDS), indirect=True)


@pytest.fixture
def worker_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The kind of worker the test's ``Worker`` builds (see the module's docstring)."""
    kind: str = getattr(request, "param", "thread")
    monkeypatch.setattr(request.module, "Worker", WORKER_KINDS[kind])
    return kind


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
