"""Which way our own connections drive the server, where the driver offers two.

mysql-connector-python decodes rows in C when its extension loads and in Python otherwise;
``connect(use_pure=False)`` would fall back silently, so skiplock chooses and says which
(``Queue.ping().driver``, ``skiplock install``). ``SKIPLOCK_REQUIRE=mysql-cext`` turns the
skip where the extension cannot load into a failure (CI sets it where it loads).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

import skiplock


def _cext_required() -> bool:
    names = {n.strip().lower() for n in os.environ.get("SKIPLOCK_REQUIRE", "").split(",")}
    return "mysql-cext" in names


def _connector(queue: skiplock.Queue) -> Any:
    if queue.dialect.driver_module != "mysql.connector":
        pytest.skip("this backend's driver has no C extension to choose")
    import mysql.connector

    return mysql.connector


def test_our_connections_use_the_c_extension_where_it_loads(queue: skiplock.Queue) -> None:
    connector = _connector(queue)
    from skiplock.drivers.mysql import c_extension_error

    why = c_extension_error(connector)
    if why is not None:
        message = f"mysql-connector's C extension does not load here: {why}"
        if _cext_required():
            pytest.fail(message + " (SKIPLOCK_REQUIRE names mysql-cext)", pytrace=False)
        pytest.skip(message)
    assert queue.ping().driver.endswith(", C extension")
    payload = {"text": "ünïcode ✓", "big": 2**62, "x": 0.5, "nested": [None, True, {"a": []}]}
    with queue.transaction() as tx:
        assert type(tx.connection).__name__ == "CMySQLConnection"
        job_id = tx.enqueue(payload)
    [job] = queue.claim()
    assert (job.id, job.payload, job.attempt) == (job_id, payload, 1)
    queue.complete(job)
    assert queue.stats().done == 1


def test_without_the_c_extension_our_connections_are_pure_python_and_say_so(
    make_queue: Callable[..., skiplock.Queue], monkeypatch: pytest.MonkeyPatch
) -> None:
    connector = _connector(make_queue())
    monkeypatch.setattr(connector, "HAVE_CEXT", False)
    queue = make_queue()  # a new pool: its connections are made with HAVE_CEXT false
    assert queue.ping().driver.endswith(", pure Python")
    with queue.transaction() as tx:
        assert type(tx.connection).__name__ == "MySQLConnection"
        job_id = tx.enqueue("through pure Python")
    [job] = queue.claim()
    assert job.id == job_id
    queue.complete(job)
    assert queue.stats().done == 1


def test_statements_send_no_ping_first(
    queue: skiplock.Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mysql-connector's cursor() pings the server (a round trip) before it returns; our
    # statements build the cursor themselves (docs/performance.md, "Measured reasons").
    _connector(queue)
    with queue.transaction() as tx:
        pings: list[object] = []
        ours, cls = tx.connection, type(tx.connection)
        real = cls.is_connected

        def is_connected(self: Any) -> bool:
            if self is ours:  # the class is patched: other threads' connections pass by
                pings.append(self)
            return bool(real(self))

        monkeypatch.setattr(cls, "is_connected", is_connected)
        first = tx.enqueue("one")
        ids = tx.enqueue_many(["two", "three"])
        monkeypatch.undo()
    assert pings == []
    jobs = queue.claim(limit=3)
    assert sorted(j.id for j in jobs) == sorted([first, *ids])
    queue.complete_many(jobs)
    assert queue.stats().done == 3
