"""Helpers for the worker tests: waiting on a condition, and workers stopped at the end.

Every test that takes the ``worker_cls`` fixture runs twice, once per worker kind:
``thread`` (:class:`skiplock.Worker`) and ``asyncio`` (:class:`skiplock.AsyncWorker` on an
event loop of its own, behind the same sync controls: :class:`LoopWorker`). The test builds
its workers with ``worker_cls(queue, handler, ...)``, so one test body serves both kinds.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import pytest
from skiplock.dialects import get_dialect

import skiplock
from skiplock import Worker
from skiplock._shell.schema import Schema

from .aio_view import Loop, SyncView
from .clients import Client, is_async, open_client


def wait_until(probe: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if probe():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or probe}")


def within(seconds: float, probe: Callable[[], object], what: str = "") -> None:
    """Proves what ``time.sleep(seconds); assert probe()`` proves, for a *probe* that stays
    true once true (a lease has ended, a run_at has passed), without sleeping out the rest
    of *seconds*: probes every 10 ms, and the last probe comes after *seconds*."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if probe():
            return
        time.sleep(0.01)
    assert probe(), f"not within {seconds} s: {what or probe}"


def drained(q: skiplock.Queue) -> bool:
    s = q.stats()
    return s.pending + s.scheduled + s.running + s.expired == 0


def take_away(queue: skiplock.Queue, job_id: int) -> None:
    """Another worker takes the job: a claim after the lease ended would do exactly this
    (the attempt moves on, so every fenced write of the older attempt is rejected)."""
    with queue.transaction() as tx:
        tx.execute(
            f"UPDATE {queue.dialect.quote(queue.table.name)} SET attempt = attempt + 1 "
            "WHERE id = %(id)s",
            {"id": job_id},
        )


@contextmanager
def worker_log_handler(handler: logging.Handler, level: int) -> Iterator[None]:
    """*handler* on the ``skiplock.worker`` logger, at *level*, for the block."""
    logger = logging.getLogger("skiplock.worker")
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


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


#: the worker kinds, by test id: a LoopWorker has a Worker's sync controls, so the tests
#: type it as one
WORKER_KINDS: dict[str, type[Worker]] = {
    "thread": Worker,
    "asyncio": cast("type[Worker]", LoopWorker),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    _generate_api(metafunc)
    if "worker_cls" in metafunc.fixturenames:
        # here rather than as the fixture's params, so the kind comes first in the test's
        # id ([thread-postgresql]), as it always has
        metafunc.parametrize("worker_cls", list(WORKER_KINDS), indirect=True)


@pytest.fixture
def worker_cls(request: pytest.FixtureRequest) -> type[Worker]:
    """The worker class of this run of the test: ``thread`` or ``asyncio`` (see the module's
    docstring)."""
    return WORKER_KINDS[getattr(request, "param", "thread")]


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
def client(
    backend: str, client_name: str, url: str, request: pytest.FixtureRequest
) -> Iterator[Client]:
    """The application's own connection through one accepted driver (see clients.py);
    a test module parametrises ``backend`` and ``client_name`` with :func:`by_client`."""
    c = open_client(backend, client_name, url, request.getfixturevalue("aio_loop"))
    try:
        yield c
    finally:
        c.close()


# -- one set of test bodies for the sync and the async API (see aio_view.py) ----------------

#: modules whose ``queue`` / ``make_queue`` tests run on both APIs (a test that also takes
#: ``workers`` runs its workers on a sync Queue, once per worker kind instead)
BOTH_APIS = {
    "test_claim",
    "test_lease",
    "test_claim_token",
    "test_dedupe",
    "test_bulk",
    "test_bad_input",
    "test_pool",
    "test_cancel",
    "test_listing",
    "test_times",
    "test_headers",
    "test_pause",
    "test_rate_limit",
    "test_key_rate",
    "test_observe",
    "test_workflows",
    "test_enqueue_alone",
}


def _generate_api(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    uses_queue = {"queue", "make_queue"} & set(metafunc.fixturenames)
    plain = not {"client", "workers"} & set(metafunc.fixturenames)
    if module in BOTH_APIS and uses_queue and plain:
        metafunc.fixturenames.append("api")
        metafunc.parametrize("api", ["sync", "async"], indirect=True)


@pytest.fixture
def api(request: pytest.FixtureRequest) -> str:
    """``sync``: the test gets ``skiplock.Queue``s; ``async``: views of ``AsyncQueue``s
    (by parametrisation, or because the test's client is an asyncio one)."""
    if "client_name" in request.fixturenames:
        return "async" if is_async(request.getfixturevalue("client_name")) else "sync"
    return str(getattr(request, "param", "sync"))


@pytest.fixture
def aio_loop() -> Iterator[Loop]:
    """The test's event loop, in a thread: its AsyncQueues and asyncio clients run on it."""
    loop = Loop()
    yield loop
    loop.close()


@pytest.fixture
def make_queue(
    make_queue: Callable[..., skiplock.Queue], api: str, url: str, aio_loop: Loop
) -> Iterator[Callable[..., Any]]:
    """The suite's ``make_queue`` (tests/conftest.py); with ``api="async"`` each queue is a
    sync view of an ``AsyncQueue`` on the same table (made and dropped by the sync one)."""
    if api == "sync":
        yield make_queue
        return
    loop = aio_loop
    views: list[SyncView] = []

    def make(**kwargs: Any) -> Any:
        sync = make_queue(**kwargs)
        options = {k: v for k, v in kwargs.items() if k != "table"}
        view = SyncView(skiplock.connect_async(url, table=str(sync.table), **options), loop)
        views.append(view)
        return view

    try:
        yield make
    finally:
        for view in views:
            view.close()


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


def as_release(q: Any, statements: Mapping[str, str]) -> None:
    """Make *q* (a queue, or a view of an AsyncQueue) run *statements*, an older
    release's, rendered: through a dialect made for them, whose capabilities are theirs."""
    target = getattr(q, "_target", q)
    old = target.dialect
    new = get_dialect(old.url, old.table, statements, old.state)
    if "mariadb" in vars(old):  # the server's product, as the queue's first connection read it
        new.mariadb = old.mariadb
    target.dialect = new
    target.schema = Schema(new)
