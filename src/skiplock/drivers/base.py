"""What every driver adapter provides: running one request on one DB-API connection, and
driving an operation over it (:meth:`Adapter.run`); and whether an idle connection of
skiplock's own is still usable, without a round trip.

Rows come back as ``list[dict]`` with JSON as text, or as
:class:`~skiplock._core.sql.Tuples`; datetimes may be naive (UTC) or aware.
"""

from __future__ import annotations

import select
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from types import ModuleType
from typing import Any, ClassVar, TypeVar

from skiplock._core.sql import (
    LASTROWID,
    NOTHING,
    ROWCOUNT,
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

__all__ = ["Adapter", "as_dicts", "counted", "dict_rows", "is_usable", "readable"]

T = TypeVar("T")


def dict_rows(cur: Any) -> list[dict[str, Any]]:
    """The cursor's remaining rows as dicts keyed by column name."""
    return as_dicts(cur.description, cur.fetchall())


def as_dicts(description: Any, rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Row tuples as dicts keyed by the column names of *description*."""
    names = [d[0] for d in description]
    return [dict(zip(names, row, strict=True)) for row in rows]


def counted(cur: Any, want: int) -> int | None:
    """What a statement that wants no rows answers (row count, last row id or None)."""
    if want == ROWCOUNT:
        return int(cur.rowcount)
    if want == LASTROWID:
        return int(cur.lastrowid)
    assert want == NOTHING
    return None


class Adapter:
    """One connection of one driver; ``database`` is the dialect name."""

    database: ClassVar[str]
    driver: ClassVar[str]
    #: the adapter can run :class:`~skiplock._core.sql.Copy` requests
    can_copy: ClassVar[bool] = False
    #: :meth:`set_autocommit` sends nothing to the server (psycopg 3)
    free_autocommit: ClassVar[bool] = False

    def __init__(self, connection: Any, module: ModuleType, *, owned: bool = False) -> None:
        self.connection = connection
        self.module = module
        #: skiplock made this connection (configured as the dialect wants) and ends its
        #: transactions; a user's connection is never committed here
        self.owned = owned
        self.errors: tuple[type[BaseException], ...] = (module.Error,)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.driver}{' (own)' if self.owned else ''}>"

    # -- running requests -----------------------------------------------------------------

    def cursor(self) -> Any:
        return self.connection.cursor()

    def execute(self, request: Request) -> Any:
        """Run *request*; answer as :mod:`skiplock._core.sql` says."""
        if type(request) is Statement:
            return self.statement(request.sql, request.params, request.want)
        if isinstance(request, Copy):
            return self.copy(request.sql, request.rows)
        assert isinstance(request, Control)
        if request.action == "commit":
            self.connection.commit()
        else:
            self.connection.rollback()
        return None

    def commit(self) -> None:
        self.connection.commit()

    def set_autocommit(self, on: bool) -> None:
        self.connection.autocommit = on

    def rollback(self) -> None:
        self.connection.rollback()

    def close(self) -> None:
        self.connection.close()

    def abort(self) -> None:
        self.connection.close()

    def statement(self, sql: str, params: Mapping[str, Any] | None, want: int) -> Any:
        cur = self.cursor()
        try:
            self.run_cursor(cur, sql, params)
            if want == ROWS:
                return self.rows(cur)
            if want == TUPLES:
                return self.tuples(cur)
            if cur.description is not None:
                cur.fetchall()  # unread rows would break the connection's next statement
            return counted(cur, want)
        finally:
            cur.close()

    def run_cursor(self, cur: Any, sql: str, params: Mapping[str, Any] | None) -> None:
        if params is None:
            cur.execute(sql)
        else:
            cur.execute(sql, self.bound(params))

    def bound(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        return params

    def rows(self, cur: Any) -> list[dict[str, Any]]:
        if cur.description is None:
            return []
        return dict_rows(cur)

    def tuples(self, cur: Any) -> Tuples:
        return Tuples.of(self.rows(cur))

    def copy(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        raise NotImplementedError(f"{self.driver} cannot COPY")

    # -- errors ---------------------------------------------------------------------------

    def error_kind(self, exc: BaseException) -> str:
        m = self.module
        for kind, cls in (
            ("integrity", "IntegrityError"),
            ("operational", "OperationalError"),
            ("interface", "InterfaceError"),
            ("programming", "ProgrammingError"),
        ):
            if isinstance(exc, getattr(m, cls, ())):
                return kind
        return "other"

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        """The SQLSTATE and error numbers in *exc*."""
        first = exc.args[0] if exc.args else None
        return frozenset({first}) if isinstance(first, int) else frozenset()

    def error_info(self, exc: BaseException) -> ErrorInfo:
        return ErrorInfo(self.error_codes(exc), self.error_kind(exc), str(exc))

    # -- driving an operation -------------------------------------------------------------

    def run(self, op: Op[T]) -> T:
        """Drive *op* over this connection; return its value.

        Raises :class:`~skiplock._core.sql.StatementError` for a driver error the operation
        did not handle, and whatever the operation raises.
        """
        errors = self.errors
        execute = self.execute
        try:
            request = next(op)
            while True:
                try:
                    result = execute(request)
                except errors as exc:
                    request = op.throw(StatementError(self.error_info(exc), exc))
                    continue
                request = op.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value

    def run_with_caller_conn(self, op: Op[T], begin_sql: str) -> T:
        """Drive *op* on a caller's connection, never ending the caller's transaction.

        In autocommit mode, an operation of several statements gets a transaction of its own.
        Raises :class:`~skiplock._core.sql.StatementError` for any driver error.
        """
        try:
            if not self.autocommit():
                return self.run(op)
            self.execute(Statement(begin_sql, None, NOTHING))
        except self.errors as exc:
            raise StatementError(self.error_info(exc), exc) from exc
        try:
            result = self.run(op)
        except BaseException:
            with suppress(Exception):
                self.execute(Statement("ROLLBACK", None, NOTHING))
            raise
        try:
            self.execute(Statement("COMMIT", None, NOTHING))
        except self.errors as exc:
            raise StatementError(self.error_info(exc), exc) from exc
        return result

    # -- transactions ---------------------------------------------------------------------

    def autocommit(self) -> bool:
        """True when every statement on the connection commits by itself."""
        return bool(getattr(self.connection, "autocommit", False))

    # -- user statements (Transaction.execute) --------------------------------------------

    def user_execute(self, sql: str, params: Any) -> tuple[int, list[tuple[Any, ...]]]:
        """Run the caller's statement in the driver's parameter style: (row count, rows)."""
        cur = self.connection.cursor()
        try:
            if params is None:
                cur.execute(sql)
            else:
                cur.execute(sql, params)
            rows = [tuple(r) for r in cur.fetchall()] if cur.description is not None else []
            return int(cur.rowcount), rows
        finally:
            cur.close()


# -- an idle connection's health ----------------------------------------------------------


def is_usable(
    conn: Any, fileno: Callable[[Any], int | None], is_closed: Callable[[Any], bool]
) -> bool:
    """False if an idle *conn* is known to be broken: *is_closed* says so, or its socket
    (*fileno*) turned readable.
    """
    try:
        fd = fileno(conn)
    except Exception:
        return False
    if fd is None:
        return not is_closed(conn)
    return fd >= 0 and not readable(fd)


def readable(fd: int) -> bool:
    """True if the socket *fd* has something to read (or cannot be asked)."""
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken
