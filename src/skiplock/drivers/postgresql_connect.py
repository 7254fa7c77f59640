"""skiplock's own PostgreSQL connections through psycopg 3, and LISTEN."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from .aio import opened
from .aio_drivers import AsyncPsycopgAdapter

__all__ = [
    "backend_pid",
    "connect",
    "connect_async",
    "fileno",
    "is_closed",
    "listen",
    "notifications",
]


def _read_json_as_text(conn: Any) -> None:
    from psycopg.types.string import TextLoader

    conn.adapters.register_loader("json", TextLoader)
    conn.adapters.register_loader("jsonb", TextLoader)


def connect(psycopg: ModuleType, kwargs: Mapping[str, Any], session: Sequence[str]) -> Any:
    """A new ``psycopg.Connection`` with *session* run and committed."""
    conn = psycopg.connect(autocommit=False, **kwargs)
    try:
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        for sql in session:
            conn.execute(sql)
        conn.commit()
    except BaseException:
        conn.close()
        raise
    _read_json_as_text(conn)
    return conn


async def connect_async(
    psycopg: ModuleType, kwargs: Mapping[str, Any], session: Sequence[str]
) -> AsyncPsycopgAdapter:
    conn = await opened(psycopg.AsyncConnection.connect(autocommit=False, **kwargs), _finish)
    try:
        await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)
        for sql in session:
            await conn.execute(sql)
        await conn.commit()
    except BaseException:
        await conn.close()
        raise
    _read_json_as_text(conn)
    return AsyncPsycopgAdapter(conn, psycopg, owned=True)


def _finish(conn: Any) -> None:
    conn.pgconn.finish()


def listen(conn: Any, statements: Sequence[str]) -> Any:
    """*conn* switched to autocommit, with each LISTEN of *statements* run."""
    conn.autocommit = True
    for sql in statements:
        conn.execute(sql)
    return conn


def notifications(conn: Any, timeout: float) -> Iterator[tuple[str, str]]:
    """``(channel, payload)`` of the next notification within *timeout* seconds, or None."""
    for n in conn.notifies(timeout=timeout, stop_after=1):
        yield n.channel, n.payload


def backend_pid(conn: Any) -> int:
    """The server's process id of *conn*'s session."""
    return int(conn.info.backend_pid)


def is_closed(conn: Any) -> bool:
    return bool(conn.closed) or conn.info.transaction_status == 4  # UNKNOWN: broken


def fileno(conn: Any) -> int | None:
    return -1 if is_closed(conn) else int(conn.fileno())
