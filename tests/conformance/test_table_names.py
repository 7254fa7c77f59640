"""Tables whose names differ only in case are two queues: both install, neither sees the
other's jobs; where the database takes them for one table (SQL Server's default
collation), the second is refused. Installing stays idempotent on a table made by an
older release's DDL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

import skiplock
from skiplock._shell.schema import load_migrations

from .test_migrations import v1_statements


def drop(q: skiplock.Queue) -> None:
    q.uninstall()  # the table, its version table and its trigger


@pytest.fixture
def pair(url: str) -> Iterator[tuple[skiplock.Queue, skiplock.Queue]]:
    base = f"cased_{os.getpid() % 10000}_{uuid.uuid4().hex[:6]}"
    upper = skiplock.connect(url, table="Jobs_" + base)
    lower = skiplock.connect(url, table="jobs_" + base)
    try:
        yield upper, lower
    finally:
        for q in (upper, lower):
            try:
                drop(q)
            finally:
                q.close()


def one_table(upper: skiplock.Queue, lower: skiplock.Queue) -> bool:
    """Whether the server takes *lower*'s name for *upper*'s installed table (SQL Server's
    default collation compares names without case; PostgreSQL, and MySQL and MariaDB on
    Linux, do not)."""
    conn = lower.connection()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT COUNT(*) FROM {lower.dialect.quote(lower.table.name)}")
        cur.fetchall()
        return True
    except Exception:  # no such table
        return False
    finally:
        conn.close()


def test_tables_differing_only_in_case_are_two_queues_or_refused(
    pair: tuple[skiplock.Queue, skiplock.Queue],
) -> None:
    # old code, MySQL: the CHECK constraint's name (schema-wide, compared without case)
    # collided, and the second install failed
    upper, lower = pair
    upper.install()
    if one_table(upper, lower):
        # old code, SQL Server: the second queue took the first's table for its own
        upper.enqueue("upper")
        for refused in (lower.install, lower.stats, lower.uninstall):
            with pytest.raises(skiplock.ConfigurationError, match="differ only in case"):
                refused()
        assert [j.payload for j in upper.claim(limit=5)] == ["upper"]  # nothing dropped
        return
    lower.install()
    upper.install()  # still idempotent
    upper.enqueue("upper")
    lower.enqueue("lower")
    assert [j.payload for j in upper.claim(limit=5)] == ["upper"]
    assert [j.payload for j in lower.claim(limit=5)] == ["lower"]


def test_install_is_idempotent_on_a_table_made_by_the_old_ddl(url: str) -> None:
    # Until this release the MySQL constraint was named "<table>_status": a table made so
    # must still install (migrate from version 1: nothing recreated, nothing lost) and work.
    table = f"olddl_{os.getpid() % 10000}_{uuid.uuid4().hex[:6]}"
    q = skiplock.connect(url, table=table)
    try:
        tag = q.table.tag
        (initial,) = load_migrations(q.dialect)[0].steps  # the DDL of version 1
        with q.transaction() as tx:
            for statement in initial:
                tx.execute(statement.replace(f"{table}_status_{tag}", f"{table}_status"))
        # a job written by the old release (the queue itself refuses a version-1 table)
        conn = q.connection()
        new_enqueue = q.dialect.sql["enqueue"]
        q.dialect.sql["enqueue"] = v1_statements(q)["enqueue"]  # the old release's statement
        try:
            job_id = q.dialect.adapter(conn).run(q.dialect.insert({
                "queue": "default", "payload": '"kept"', "priority": 0, "max_attempts": 5,
                "run_at": None, "delay_ms": 0, "idempotency_key": str(uuid.uuid4()),
            }))  # fmt: skip
            conn.commit()
        finally:
            q.dialect.sql["enqueue"] = new_enqueue
            conn.close()
        q.install()
        q.install()
        assert q.schema_version() == q.schema.latest
        [job] = q.claim()
        assert (job.id, job.payload) == (job_id, "kept")
        q.complete(job)
    finally:
        drop(q)
        q.close()


def test_the_longest_table_name_installs(url: str) -> None:
    from skiplock._core.sql import MAX_IDENT

    table = f"L{uuid.uuid4().hex}".ljust(MAX_IDENT, "x")
    q = skiplock.connect(url, table=table)
    try:
        q.install()
        q.enqueue("long")
        assert [j.payload for j in q.claim()] == ["long"]
    finally:
        drop(q)
        q.close()
