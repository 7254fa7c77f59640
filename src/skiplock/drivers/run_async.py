"""The loops that drive :mod:`skiplock._core.sql` operations over a connection.

``scripts/async_to_sync`` makes ``run.py`` from this module.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, TypeVar

from .._core.sql import NOTHING, Op, Statement, StatementError

if TYPE_CHECKING:
    from .base_async import AsyncAdapter

__all__ = ["run_async", "run_with_caller_conn_async"]

T = TypeVar("T")


async def run_async(op: Op[T], adapter: AsyncAdapter) -> T:
    """Drive *op* over *adapter*'s connection; return its value.

    Raises :class:`~skiplock._core.sql.StatementError` for a driver error the operation did not
    handle, and whatever the operation raises.
    """
    errors = adapter.errors
    execute = adapter.execute
    try:
        request = next(op)
        while True:
            try:
                result = await execute(request)
            except errors as exc:
                request = op.throw(StatementError(adapter.error_info(exc), exc))
                continue
            request = op.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


async def run_with_caller_conn_async(op: Op[T], adapter: AsyncAdapter, begin_sql: str) -> T:
    """Drive *op* on a caller's connection, never ending the caller's transaction.

    In autocommit mode, an operation of several statements gets a transaction of its own.
    Raises :class:`~skiplock._core.sql.StatementError` for any driver error.
    """
    try:
        if not await adapter.autocommit():  # mysql-connector asks the server
            return await run_async(op, adapter)
        await adapter.execute(Statement(begin_sql, None, NOTHING))
    except adapter.errors as exc:
        raise StatementError(adapter.error_info(exc), exc) from exc
    try:
        result = await run_async(op, adapter)
    except BaseException:
        with suppress(Exception):
            await adapter.execute(Statement("ROLLBACK", None, NOTHING))
        raise
    try:
        await adapter.execute(Statement("COMMIT", None, NOTHING))
    except adapter.errors as exc:
        raise StatementError(adapter.error_info(exc), exc) from exc
    return result
