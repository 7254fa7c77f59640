"""conn= at its edges: connections in autocommit mode, objects skiplock cannot use, and
connections to another kind of database than the queue's."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import backend_url

import skiplock
from skiplock.drivers.url import parse_url

from .clients import DATABASE, _my, _pg, need


def _autocommit(database: str, driver: str, url: str) -> Any:
    u = parse_url(url)
    if driver == "psycopg":
        return need("psycopg").connect(**_pg(u), autocommit=True)
    if driver == "psycopg2":
        conn = need("psycopg2").connect(**_pg(u))
        conn.autocommit = True
        return conn
    if driver == "pymysql":
        return need("pymysql").connect(**_my(u), autocommit=True)
    if driver == "mysql-connector":
        need("mysql-connector")
        import mysql.connector

        return mysql.connector.connect(**_my(u), use_pure=True, autocommit=True)
    kw = _my(u)
    return need("mysqlclient").connect(
        host=kw["host"], port=kw["port"], user=kw["user"], passwd=kw["password"],
        db=kw["database"], autocommit=True,
    )  # fmt: skip


AUTOCOMMIT = {
    "postgresql": ["psycopg", "psycopg2"],
    "mysql": ["pymysql", "mysql-connector", "mysqlclient"],
    "mssql": [],
}


@pytest.fixture(params=["psycopg", "psycopg2", "pymysql", "mysql-connector", "mysqlclient"])
def autocommit_conn(request: pytest.FixtureRequest, backend: str, url: str) -> Iterator[Any]:
    database = DATABASE[backend]
    if request.param not in AUTOCOMMIT[database]:
        pytest.skip(f"{request.param} does not reach {database}")
    conn = _autocommit(database, request.param, url)
    yield conn
    conn.close()


def test_every_method_on_an_autocommit_connection_commits_by_itself(
    queue: skiplock.Queue, autocommit_conn: Any
) -> None:
    c = autocommit_conn
    job_id = queue.enqueue("one", conn=c)
    assert queue.get(job_id) is not None  # committed: visible to another connection
    ids = queue.enqueue_many(list(range(250)), conn=c, queue="bulk")
    assert queue.stats("bulk").pending == 250 and len(set(ids)) == 250
    [job] = queue.claim(conn=c, lease=60)
    assert job.id == job_id and queue.stats().running == 1  # the claim was committed
    queue.heartbeat(job, conn=c)
    queue.complete(job, result=1, conn=c)
    with pytest.raises(skiplock.LeaseLost):
        queue.complete(job, conn=c)
    a, b = queue.claim(queues="bulk", limit=2, conn=c)
    assert queue.complete_many([a], conn=c) == []
    assert queue.fail(b, "x", conn=c) == "pending"
    record = queue.get(job_id, conn=c)
    assert record is not None and record.status == "done"
    assert queue.stats(conn=c).done == 2


class Unusable:
    """Something with cursor() and commit(), but no connection of an accepted driver."""

    def cursor(self) -> Any:
        raise AssertionError("skiplock must not use an object it does not accept")

    def commit(self) -> None:
        raise AssertionError("skiplock must not commit an object it does not accept")


BAD: dict[str, Callable[[], Any]] = {
    "object": object,
    "a URL string": lambda: "postgresql://u@h/db",
    "a sqlite3 connection": lambda: sqlite3.connect(":memory:"),
    "a look-alike": Unusable,
    "a number": lambda: 1,
}


def _calls(q: skiplock.Queue, c: Any, job: skiplock.Job) -> list[Callable[[], Any]]:
    return [
        lambda: q.enqueue("x", conn=c),
        lambda: q.enqueue_many(["x"], conn=c),
        lambda: q.claim(conn=c),
        lambda: q.heartbeat(job, conn=c),
        lambda: q.complete(job, conn=c),
        lambda: q.complete_many([job], conn=c),
        lambda: q.fail(job, "e", conn=c),
        lambda: q.release(job, conn=c),
        lambda: q.get(job.id, conn=c),
        lambda: q.stats(conn=c),
    ]


@pytest.mark.parametrize("bad", sorted(BAD))
def test_an_unusable_object_is_refused_and_nothing_is_written(
    queue: skiplock.Queue, bad: str
) -> None:
    obj = BAD[bad]()
    queue.enqueue("held")
    [job] = queue.claim(lease=60)
    for call in _calls(queue, obj, job):
        with pytest.raises(skiplock.ConfigurationError, match="conn= must be") as info:
            call()
        assert "SQLAlchemy Connection or Session" in str(info.value)
    with pytest.raises(skiplock.ConfigurationError), queue.transaction(conn=obj):
        pass
    stats = queue.stats()
    assert (stats.pending, stats.running, stats.done) == (0, 1, 0)


def _other_database_connection(backend: str) -> Any:
    """A user's connection to the other kind of database, in an open transaction."""
    if DATABASE[backend] == "postgresql":
        url = backend_url("mariadb") or backend_url("mysql")
        if url is None:
            pytest.skip("no MySQL or MariaDB server to connect to")
        conn = need("pymysql").connect(**_my(parse_url(url)), autocommit=False)
        cur = conn.cursor()
        cur.execute("SELECT 1")
        cur.fetchall()
        return conn
    url = backend_url("postgresql") or backend_url("postgresql18")
    if url is None:
        pytest.skip("no PostgreSQL server to connect to")
    conn = need("psycopg").connect(**_pg(parse_url(url)))
    conn.execute("SELECT 1")
    return conn


def _in_transaction(conn: Any) -> bool:
    info = getattr(conn, "info", None)
    if info is not None and hasattr(info, "transaction_status"):
        return bool(info.transaction_status == 2)  # INTRANS
    return True  # pymysql: checked through the write below instead


def test_a_connection_to_another_database_is_refused_before_anything_is_sent(
    queue: skiplock.Queue, backend: str
) -> None:
    conn = _other_database_connection(backend)
    try:
        queue.enqueue("held")
        [job] = queue.claim(lease=60)
        for call in _calls(queue, conn, job):
            with pytest.raises(skiplock.ConfigurationError, match="this queue is on") as info:
                call()
            assert "password" not in str(info.value).lower()
        assert _in_transaction(conn)  # the user's transaction is as it was
        conn.rollback()
    finally:
        conn.close()
    stats = queue.stats()
    assert (stats.pending, stats.running, stats.done) == (0, 1, 0)


def test_an_async_sqlalchemy_session_is_refused_by_name(queue: skiplock.Queue) -> None:
    need("sqlalchemy")
    pytest.importorskip("greenlet", reason="SQLAlchemy's asyncio needs greenlet")
    asyncio_ext = pytest.importorskip(
        "sqlalchemy.ext.asyncio", reason="SQLAlchemy's asyncio needs greenlet"
    )
    AsyncSession = asyncio_ext.AsyncSession

    with pytest.raises(skiplock.ConfigurationError, match="AsyncSession"):
        queue.enqueue("x", conn=AsyncSession())
    assert queue.stats().pending == 0


def test_a_select_in_a_transaction_leaves_no_unread_result(queue: skiplock.Queue) -> None:
    # mysql-connector refuses the next statement while a result is unread
    with queue.transaction() as tx:
        tx.execute(f"SELECT * FROM {queue.dialect.quote(queue.table.name)}")
        assert tx.fetchall("SELECT 1") == [(1,)]
        assert tx.fetchone("SELECT 2") == (2,)
        job_id = tx.enqueue("after a select")
    assert queue.get(job_id) is not None
