"""The asyncio drivers: psycopg 3, asyncpg and ``mysql.connector.aio``."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, ClassVar

from .aio import AsyncAdapter, AsyncCursorAdapter
from .base import Adapter
from .mysql import MySQLConnectorAdapter
from .postgresql import PsycopgAdapter
from .wrappers import is_instance

__all__ = [
    "AsyncMySQLConnectorAdapter",
    "AsyncPsycopgAdapter",
    "AsyncpgAdapter",
    "async_adapter_class",
    "numbered",
]

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class AsyncPsycopgAdapter(AsyncCursorAdapter):
    """psycopg 3 ``AsyncConnection`` (also from ``psycopg_pool``)."""

    sync_class: ClassVar[type[Adapter]] = PsycopgAdapter
    driver: ClassVar[str] = "psycopg (async)"

    async def copy(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        cur = self.connection.cursor()
        try:
            async with cur.copy(sql) as copy:
                for row in rows:
                    await copy.write_row(row)
        finally:
            await cur.close()

    def is_closed(self) -> bool:
        return bool(self.connection.closed) or self.connection.info.transaction_status == 4

    def fileno(self) -> int | None:
        # psycopg reads its socket only while a call is awaited: readable while idle means
        # the server closed it or sent something unasked
        return -1 if self.is_closed() else int(self.connection.fileno())

    async def autocommit(self) -> bool:
        return bool(self.connection.autocommit)


class AsyncMySQLConnectorAdapter(AsyncCursorAdapter):
    """mysql-connector-python's ``mysql.connector.aio`` connection."""

    sync_class: ClassVar[type[Adapter]] = MySQLConnectorAdapter
    driver: ClassVar[str] = "mysql-connector (aio)"

    async def cursor(self) -> Any:
        return await self.connection.cursor(buffered=False, raw=False, dictionary=False)

    def is_closed(self) -> bool:
        # The event loop reads this driver's socket as data comes: a server that closed it
        # (a killed session, a shutdown, an idle timeout) has left EOF, or bytes nobody
        # asked for, in the stream reader of an idle connection.
        reader = getattr(getattr(self.connection, "_socket", None), "_reader", None)
        if reader is None:
            return True
        return bool(reader.at_eof() or getattr(reader, "_buffer", b""))

    async def plain_cursor(self) -> Any:
        return await self.connection.cursor()

    def abort(self) -> None:
        abort_mysql_aio(self.connection)

    async def autocommit(self) -> bool:
        # in_transaction comes from the server's status flags of the last reply; outside a
        # transaction the session's autocommit setting is asked of the server.
        if self.connection.in_transaction:
            return False
        return bool(await self.connection.get_autocommit())


def abort_mysql_aio(connection: Any) -> None:
    """Close a ``mysql.connector.aio`` connection's socket without an await."""
    writer = getattr(getattr(connection, "_socket", None), "_writer", None)
    transport = getattr(writer, "transport", None)
    if transport is not None:
        transport.abort()


@lru_cache(maxsize=512)
def _numbered(sql: str) -> tuple[str, tuple[str, ...]]:
    order: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"${order.setdefault(match[1], len(order) + 1)}"

    return _PLACEHOLDER.sub(number, sql), tuple(order)


def numbered(sql: str, params: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``%(name)s`` placeholders as ``$1 … $n`` and the values in that order."""
    text, names = _numbered(sql)
    return text, [] if params is None else [params[n] for n in names]


class _AsyncpgErrors(Adapter):
    """What is read from asyncpg's exceptions."""

    database: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "asyncpg"

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        self.connection, self.module, self.owned = connection, module, owned
        self.errors = (module.PostgresError, module.InterfaceError, OSError)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        state = getattr(exc, "sqlstate", None)
        return frozenset({state}) if isinstance(state, str) and state else frozenset()

    def error_kind(self, exc: BaseException) -> str:
        # the DB-API class psycopg gives the same SQLSTATE class
        state = str(getattr(exc, "sqlstate", "") or "")
        if isinstance(exc, OSError) or state[:2] in ("08", "40", "53", "55", "57", "58"):
            return "operational"
        if state[:2] == "23":
            return "integrity"
        if state[:2] == "42":
            return "programming"
        if isinstance(exc, self.module.InterfaceError):
            return "interface"
        return "other"


class AsyncpgAdapter(AsyncAdapter):
    """asyncpg ``Connection`` (also a pool's proxy)."""

    sync_class: ClassVar[type[Adapter]] = _AsyncpgErrors
    driver: ClassVar[str] = "asyncpg"
    #: the connection decodes json/jsonb itself (SQLAlchemy's asyncpg dialect registers
    #: such codecs): our json columns are encoded back to text, as every reader expects
    json_decoded = False

    async def statement(self, sql: str, params: Mapping[str, Any] | None, want: int) -> Any:
        from skiplock._core.ops import ROWCOUNT, ROWS, TUPLES, Tuples

        text, args = numbered(sql, params)
        conn = self.connection
        if want == TUPLES:
            return Tuples.of(await self.statement(sql, params, ROWS))
        if want == ROWS:
            if not self.json_decoded:
                return [dict(r) for r in await conn.fetch(text, *args)]
            stmt = await conn.prepare(text)
            rows = [dict(r) for r in await stmt.fetch(*args)]
            for a in stmt.get_attributes():
                if a.type.name in ("json", "jsonb"):
                    for row in rows:
                        if row[a.name] is not None:
                            row[a.name] = json.dumps(row[a.name])
            return rows
        status: str = await conn.execute(text, *args)
        if want == ROWCOUNT:
            last = status.rsplit(" ", 1)[-1]
            return int(last) if last.isdigit() else 0
        return None

    def is_closed(self) -> bool:
        return bool(self.connection.is_closed())

    async def commit(self) -> None:
        await self.connection.execute("COMMIT")

    async def rollback(self) -> None:
        await self.connection.execute("ROLLBACK")

    async def autocommit(self) -> bool:
        return not self.connection.is_in_transaction()

    async def user_execute(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        """The caller's statement in asyncpg's style (``$1``, a sequence)."""
        stmt = await self.connection.prepare(sql)
        rows = await stmt.fetch(*(params or ()))
        last = (stmt.get_statusmsg() or "").rsplit(" ", 1)[-1]
        return (int(last) if last.isdigit() else len(rows)), [tuple(r) for r in rows]


#: (module, connection class, driver module, adapter) of the asyncio drivers accepted as
#: ``conn=`` (the module named must be imported already: nothing is imported here)
_CLASSES: tuple[tuple[str, str, str, type[AsyncAdapter]], ...] = (
    ("psycopg", "AsyncConnection", "psycopg", AsyncPsycopgAdapter),
    ("asyncpg.connection", "Connection", "asyncpg", AsyncpgAdapter),
    ("asyncpg.pool", "PoolConnectionProxy", "asyncpg", AsyncpgAdapter),
    (
        "mysql.connector.aio.abstracts",
        "MySQLConnectionAbstract",
        "mysql.connector",
        AsyncMySQLConnectorAdapter,
    ),
)


def async_adapter_class(raw: Any) -> tuple[type[AsyncAdapter], Any] | None:
    """The async adapter class for a driver connection, and the driver module."""
    for module_name, attr, top, cls in _CLASSES:
        if is_instance(raw, module_name, attr) and top in sys.modules:
            return cls, sys.modules[top]
    return None
