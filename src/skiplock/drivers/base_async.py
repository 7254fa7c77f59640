"""Asynchronous driver adapters: the sync adapter of the same driver (``sync``), awaited."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import suppress
from typing import Any, ClassVar, TypeVar

from skiplock._core.sql import (
    NOTHING,
    ROWS,
    TUPLES,
    Control,
    Copy,
    ErrorInfo,
    Op,
    Request,
    Statement,
    StatementError,
    Tuples,
)

from .base import Adapter, as_dicts, counted, readable

__all__ = ["AsyncAdapter", "AsyncCursorAdapter", "ThreadAdapter", "is_usable_async", "opened"]

T = TypeVar("T")


async def opened(opening: Awaitable[T], close: Callable[[T], object]) -> T:
    """What *opening* opened. Interrupted, the opening still ends and what it opened is
    closed with *close*, so no socket is left open.
    """
    task = asyncio.ensure_future(opening)
    try:
        return await asyncio.shield(task)
    except BaseException:
        task.add_done_callback(lambda done: _close_opened(done, close))
        with suppress(BaseException):  # what is raised is the first interruption
            await asyncio.wait((task,))
        raise


def _close_opened(done: asyncio.Future[T], close: Callable[[T], object]) -> None:
    if done.cancelled() or done.exception() is not None:
        return  # nothing was opened (the opening cleans up after its own failure)
    with suppress(Exception):
        close(done.result())


class AsyncAdapter:
    """One asyncio connection; ``owned``: skiplock's own, whose transactions it ends."""

    #: the sync adapter class of the same driver family (names, error reading)
    sync_class: ClassVar[type[Adapter]]
    driver: ClassVar[str]
    #: :meth:`set_autocommit` sends nothing to the server (psycopg 3)
    free_autocommit: ClassVar[bool] = False

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        self.connection = connection
        self.module = module
        self.owned = owned
        self.sync = self.sync_class(connection, module, owned=owned)
        self.database = self.sync.database
        self.can_copy = self.sync.can_copy
        self.errors: tuple[type[BaseException], ...] = self.sync.errors

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.driver}{' (own)' if self.owned else ''}>"

    def error_info(self, exc: BaseException) -> ErrorInfo:
        return self.sync.error_info(exc)

    async def execute(self, request: Request) -> Any:
        if type(request) is Statement:
            return await self.statement(request.sql, request.params, request.want)
        if isinstance(request, Copy):
            return await self.copy(request.sql, request.rows)
        assert isinstance(request, Control)
        if request.action == "commit":
            await self.commit()
        else:
            await self.rollback()
        return None

    async def statement(self, sql: str, params: Mapping[str, Any] | None, want: int) -> Any:
        raise NotImplementedError

    async def copy(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        raise NotImplementedError(f"{self.driver} cannot COPY")

    async def commit(self) -> None:
        await self.connection.commit()

    async def set_autocommit(self, on: bool) -> None:
        await self.connection.set_autocommit(on)

    async def rollback(self) -> None:
        await self.connection.rollback()

    async def close(self) -> None:
        await self.connection.close()

    def abort(self) -> None:
        """Close without an await, after :meth:`close` was interrupted."""

    def is_closed(self) -> bool:
        return False

    # -- driving an operation -------------------------------------------------------------

    async def run(self, op: Op[T]) -> T:
        """:meth:`Adapter.run <skiplock.drivers.base.Adapter.run>`, awaited."""
        errors = self.errors
        execute = self.execute
        try:
            request = next(op)
            while True:
                try:
                    result = await execute(request)
                except errors as exc:
                    request = op.throw(StatementError(self.error_info(exc), exc))
                    continue
                request = op.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value

    async def run_with_caller_conn(self, op: Op[T], begin_sql: str) -> T:
        """:meth:`Adapter.run_with_caller_conn
        <skiplock.drivers.base.Adapter.run_with_caller_conn>`, awaited."""
        try:
            if not await self.autocommit():  # mysql-connector asks the server
                return await self.run(op)
            await self.execute(Statement(begin_sql, None, NOTHING))
        except self.errors as exc:
            raise StatementError(self.error_info(exc), exc) from exc
        try:
            result = await self.run(op)
        except BaseException:
            with suppress(Exception):
                await self.execute(Statement("ROLLBACK", None, NOTHING))
            raise
        try:
            await self.execute(Statement("COMMIT", None, NOTHING))
        except self.errors as exc:
            raise StatementError(self.error_info(exc), exc) from exc
        return result

    def fileno(self) -> int | None:
        return None

    async def autocommit(self) -> bool:
        return bool(getattr(self.connection, "autocommit", False))

    async def user_execute(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        raise NotImplementedError


class AsyncCursorAdapter(AsyncAdapter):
    """A driver whose cursor's ``execute``, ``fetchall`` and ``close`` are coroutines."""

    async def cursor(self) -> Any:
        return self.sync.cursor()

    async def statement(self, sql: str, params: Mapping[str, Any] | None, want: int) -> Any:
        cur = await self.cursor()
        try:
            bound = None if params is None else self.sync.bound(params)
            await (cur.execute(sql) if bound is None else cur.execute(sql, bound))
            if want == ROWS:
                return await self.rows(cur)
            if want == TUPLES:
                return Tuples.of(await self.rows(cur))
            if cur.description is not None:
                await cur.fetchall()  # unread rows would break the next statement
            return counted(cur, want)
        finally:
            await cur.close()

    async def rows(self, cur: Any) -> list[dict[str, Any]]:
        if cur.description is None:
            return []
        rows = await cur.fetchall()
        if rows and not isinstance(rows[0], dict):
            return as_dicts(cur.description, rows)
        return list(rows)

    async def user_execute(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        cur = await self.plain_cursor()
        try:
            await (cur.execute(sql) if params is None else cur.execute(sql, params))
            rows = [tuple(r) for r in await cur.fetchall()] if cur.description is not None else []
            return int(cur.rowcount), rows
        finally:
            await cur.close()

    async def plain_cursor(self) -> Any:
        return self.connection.cursor()


class ThreadAdapter(AsyncAdapter):
    """A sync adapter whose calls run in a thread, one at a time per connection."""

    def __init__(self, sync: Adapter) -> None:
        self.connection = sync.connection
        self.module = sync.module
        self.owned = sync.owned
        self.sync = sync
        self.database = sync.database
        self.can_copy = sync.can_copy
        self.errors = sync.errors
        self._one_at_a_time = threading.Lock()

    @property
    def driver(self) -> str:  # type: ignore[override]
        return f"{self.sync.driver} (in a thread)"

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        def call() -> T:
            with self._one_at_a_time:
                return fn(*args)

        return await asyncio.to_thread(call)

    async def execute(self, request: Request) -> Any:
        return await self._in_thread(self.sync.execute, request)

    async def commit(self) -> None:
        await self._in_thread(self.connection.commit)

    async def rollback(self) -> None:
        await self._in_thread(self.connection.rollback)

    async def close(self) -> None:
        await self._in_thread(self.connection.close)

    async def autocommit(self) -> bool:
        return await self._in_thread(self.sync.autocommit)

    async def user_execute(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        return await self._in_thread(self.sync.user_execute, sql, params)


def is_usable_async(own: AsyncAdapter, usable: Callable[[Any], bool]) -> bool:
    """:func:`~skiplock.drivers.base.is_usable` for an async adapter."""
    if isinstance(own, ThreadAdapter):
        return usable(own.connection)
    if own.is_closed():
        return False
    try:
        fd = own.fileno()
    except Exception:
        return False
    return fd is None or (fd >= 0 and not readable(fd))
