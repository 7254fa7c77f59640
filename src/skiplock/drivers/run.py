# Generated from src/skiplock/drivers/run_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The loops that drive :mod:`skiplock._core.sql` operations over a connection.

Generated from ``run_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, TypeVar

from .._core.sql import NOTHING, Op, Statement, StatementError

if TYPE_CHECKING:
    from .base import Adapter

__all__ = ["run_sync", "run_with_caller_conn"]

T = TypeVar("T")


def run_sync(op: Op[T], adapter: Adapter) -> T:
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
                result = execute(request)
            except errors as exc:
                request = op.throw(StatementError(adapter.error_info(exc), exc))
                continue
            request = op.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


def run_with_caller_conn(op: Op[T], adapter: Adapter, begin_sql: str) -> T:
    """Drive *op* on a caller's connection, never ending the caller's transaction.

    In autocommit mode, an operation of several statements gets a transaction of its own.
    Raises :class:`~skiplock._core.sql.StatementError` for any driver error.
    """
    try:
        if not adapter.autocommit():  # mysql-connector asks the server
            return run_sync(op, adapter)
        adapter.execute(Statement(begin_sql, None, NOTHING))
    except adapter.errors as exc:
        raise StatementError(adapter.error_info(exc), exc) from exc
    try:
        result = run_sync(op, adapter)
    except BaseException:
        with suppress(Exception):
            adapter.execute(Statement("ROLLBACK", None, NOTHING))
        raise
    try:
        adapter.execute(Statement("COMMIT", None, NOTHING))
    except adapter.errors as exc:
        raise StatementError(adapter.error_info(exc), exc) from exc
    return result
