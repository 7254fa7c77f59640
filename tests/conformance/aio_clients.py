"""A user's asyncio connection for each accepted asyncio driver (and SQLAlchemy's asyncio
objects), behind the same :class:`~.clients.Client` face as the sync ones.

The connection lives on the test's event loop (:class:`~.aio_view.Loop`), where the
AsyncQueue under test runs too; ``commit``/``rollback``/``execute`` are run there. A
client's name starts with ``async-``: a test given one gets an AsyncQueue (``api``).
asyncpg has no implicit transaction: the client keeps one open, as an application
using ``conn.transaction()`` does, and opens the next one after each commit/rollback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skiplock.drivers.url import DatabaseURL

from .aio_view import Loop
from .clients import Client, _my, _pg, _sqlalchemy_url, need


def _run(loop: Loop, make: Callable[[], Any]) -> Callable[..., None]:
    return lambda *a: loop.run(make(*a))


def _dbapi(name: str, loop: Loop, conn: Any, cursor: Callable[[], Any]) -> Client:
    async def execute(sql: str) -> None:
        cur = await cursor()
        await cur.execute(sql)
        if cur.description is not None:
            await cur.fetchall()
        await cur.close()

    return Client(
        name,
        conn,
        _run(loop, conn.commit),
        _run(loop, conn.rollback),
        _run(loop, execute),
        [_run(loop, conn.close)],
    )


def _psycopg(name: str, u: DatabaseURL, loop: Loop) -> Client:
    psycopg = need("psycopg")
    conn = loop.run(psycopg.AsyncConnection.connect(**_pg(u)))

    async def cursor() -> Any:
        return conn.cursor()

    return _dbapi(name, loop, conn, cursor)


def _mysql_aio(name: str, u: DatabaseURL, loop: Loop) -> Client:
    need("mysql-connector")
    from mysql.connector import aio

    # ssl_disabled: mysql-connector 26.x's aio connect fails on a server without TLS
    conn = loop.run(aio.connect(**_my(u), autocommit=False, ssl_disabled=True))
    return _dbapi(name, loop, conn, conn.cursor)


def _asyncpg(name: str, u: DatabaseURL, loop: Loop) -> Client:
    asyncpg = need("asyncpg")
    conn = loop.run(
        asyncpg.connect(host=u.host, port=u.port or 5432, user=u.user, database=u.database)
    )
    state: dict[str, Any] = {}

    async def begin() -> None:
        state["tx"] = conn.transaction()
        await state["tx"].start()

    async def end(how: str) -> None:
        await getattr(state["tx"], how)()
        await begin()

    loop.run(begin())
    return Client(
        name,
        conn,
        lambda: loop.run(end("commit")),
        lambda: loop.run(end("rollback")),
        _run(loop, conn.execute),
        [_run(loop, conn.close)],
    )


def _sqlalchemy(name: str, u: DatabaseURL, loop: Loop, driver: str, kind: str) -> Client:
    sa = need("sqlalchemy")
    need("greenlet")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    async def make() -> Any:
        return create_async_engine(_sqlalchemy_url(u, driver), poolclass=sa.pool.NullPool)

    async def connect() -> Any:
        return await engine.connect()

    engine = loop.run(make())
    obj = AsyncSession(engine) if kind == "session" else loop.run(connect())

    async def execute(sql: str) -> None:
        await obj.execute(sa.text(sql))

    return Client(
        name,
        obj,
        _run(loop, obj.commit),
        _run(loop, obj.rollback),
        _run(loop, execute),
        [_run(loop, engine.dispose), _run(loop, obj.close)],
    )


#: database → async client name → maker(name, url, loop)
ASYNC_CLIENTS: dict[str, dict[str, Callable[[str, DatabaseURL, Loop], Client]]] = {
    "postgresql": {
        "async-psycopg": _psycopg,
        "async-asyncpg": _asyncpg,
        "async-sqlalchemy-session-asyncpg": lambda n, u, lp: _sqlalchemy(
            n, u, lp, "postgresql+asyncpg", "session"
        ),
        "async-sqlalchemy-session-psycopg": lambda n, u, lp: _sqlalchemy(
            n, u, lp, "postgresql+psycopg", "session"
        ),
        "async-sqlalchemy-connection-asyncpg": lambda n, u, lp: _sqlalchemy(
            n, u, lp, "postgresql+asyncpg", "connection"
        ),
    },
    "mysql": {"async-mysql-connector-aio": _mysql_aio},
    "mssql": {},
}
