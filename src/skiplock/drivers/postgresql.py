"""PostgreSQL drivers: psycopg 3 and psycopg 2 (JSON read as text, our own cursor), their
asyncio twins (psycopg 3, asyncpg), and skiplock's own connections through psycopg 3 with
LISTEN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from types import ModuleType
from typing import Any, ClassVar

from .._core.sql import Tuples
from .base import Adapter
from .base_async import AsyncAdapter, AsyncCursorAdapter, opened

__all__ = [
    "AsyncPsycopgAdapter",
    "AsyncpgAdapter",
    "Psycopg2Adapter",
    "PsycopgAdapter",
    "backend_pid",
    "bound",
    "connect",
    "connect_async",
    "fileno",
    "is_closed",
    "listen",
    "notifications",
    "numbered",
]

#: SQLSTATE: the server's own error code
_JSON_OIDS = {"json": 114, "jsonb": 3802}


_INT = frozenset({int})
_NONE = frozenset({type(None)})


def bound(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """*params* with a list of ints or of None as one array literal (faster in psycopg 3)."""
    out: dict[str, Any] | None = None
    for key, value in params.items():
        if type(value) is not list or not value:
            continue
        types = set(map(type, value))
        if types <= _INT:
            literal = "{" + ",".join(map(str, value)) + "}"
        elif types <= _NONE:
            literal = "{" + ",".join(["NULL"] * len(value)) + "}"
        else:
            continue
        if out is None:
            out = dict(params)
        out[key] = literal
    return params if out is None else out


class PsycopgAdapter(Adapter):
    """psycopg 3 (``psycopg.Connection``), any row factory or autocommit."""

    database: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "psycopg"
    can_copy: ClassVar[bool] = True
    free_autocommit: ClassVar[bool] = True

    def cursor(self) -> Any:
        from psycopg.rows import dict_row

        cur = self.connection.cursor(row_factory=dict_row)
        if not self.owned:  # our own connections read json as text already
            from psycopg.types.string import TextLoader

            cur.adapters.register_loader("json", TextLoader)
            cur.adapters.register_loader("jsonb", TextLoader)
        return cur

    def rows(self, cur: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = cur.fetchall() if cur.description is not None else []
        return rows

    def tuples(self, cur: Any) -> Tuples:
        if cur.description is None:
            return Tuples((), [])
        from psycopg.rows import tuple_row

        cur.row_factory = tuple_row  # this result's rows too (psycopg's setter)
        return Tuples(tuple(c.name for c in cur.description), cur.fetchall())

    def bound(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        return bound(params)

    def copy(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        cur = self.connection.cursor()
        try:
            with cur.copy(sql) as copy:
                write = copy.write_row
                for row in rows:
                    write(row)
        finally:
            cur.close()

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        state = getattr(exc, "sqlstate", None)
        return frozenset({state}) if state else frozenset()

    def autocommit(self) -> bool:
        return bool(self.connection.autocommit)


class Psycopg2Adapter(Adapter):
    """psycopg 2 (``psycopg2.extensions.connection``, any ``cursor_factory``)."""

    database: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "psycopg2"

    _casters: ClassVar[list[Any]] = []

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        super().__init__(connection, module, owned=owned)
        ext = self._ext = module.extensions
        if not Psycopg2Adapter._casters:
            Psycopg2Adapter._casters = [
                ext.new_type((oid,), f"SKIPLOCK_{name.upper()}_TEXT", lambda v, cur: v)
                for name, oid in _JSON_OIDS.items()
            ]

    def cursor(self) -> Any:
        # A plain cursor whatever the connection's cursor_factory (RealDictCursor rows
        # would iterate over their keys).
        cur = self.connection.cursor(cursor_factory=self._ext.cursor)
        for caster in self._casters:
            self._ext.register_type(caster, cur)
        return cur

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        state = getattr(exc, "pgcode", None)
        return frozenset({state}) if state else frozenset()


# -- asyncio -----------------------------------------------------------------------------


class AsyncPsycopgAdapter(AsyncCursorAdapter):
    """psycopg 3 ``AsyncConnection`` (also from ``psycopg_pool``)."""

    sync_class: ClassVar[type[Adapter]] = PsycopgAdapter
    driver: ClassVar[str] = "psycopg (async)"
    free_autocommit: ClassVar[bool] = True

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


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


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
        from skiplock._core.sql import ROWCOUNT, ROWS, TUPLES, Tuples

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


# -- skiplock's own connections ----------------------------------------------------------


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
