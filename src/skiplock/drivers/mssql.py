"""SQL Server drivers: pymssql (FreeTDS) and pyodbc; skiplock's own connections through
pymssql.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from types import ModuleType
from typing import Any, ClassVar

from .base import Adapter, dict_rows

__all__ = [
    "PymssqlAdapter",
    "PyodbcAdapter",
    "autocommit",
    "connect",
    "is_closed",
    "pymssql_error_number",
    "qmark",
]

_DBLIB_NUMBER = re.compile(r"(?:DB-Lib error message|SQL Server message) (\d+)")
_LEADING_NUMBER = re.compile(r"^\D{0,40}?\((\d+),")
_ODBC_NUMBER = re.compile(r"\((\d+)\) \(SQL\w+\)")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def pymssql_error_number(exc: BaseException) -> int | None:
    """The error number carried by a pymssql exception."""
    number = getattr(exc, "number", None)
    if isinstance(number, int) and number:
        return number
    first = exc.args[0] if exc.args else None
    if isinstance(first, tuple) and first and isinstance(first[0], int):
        return first[0]
    if isinstance(first, int):
        return first
    found = _LEADING_NUMBER.search(str(first or ""))
    return int(found[1]) if found else None


def pymssql_error_numbers(exc: BaseException) -> frozenset[int | str]:
    """The server's error number; FreeTDS's only when the server sent none."""
    number = pymssql_error_number(exc)
    if number is not None and number < 20000:
        return frozenset({number})
    numbers: set[int | str] = {int(n) for n in _DBLIB_NUMBER.findall(str(exc))}
    if number is not None:
        numbers.add(number)
    return frozenset(numbers)


@lru_cache(maxsize=512)
def _qmark(sql: str) -> tuple[str, tuple[str, ...]]:
    names = tuple(_PLACEHOLDER.findall(sql))
    return _PLACEHOLDER.sub("?", sql), names


def qmark(sql: str, params: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``%(name)s`` placeholders as ``?`` with the values in order. Raises ``KeyError`` for a
    placeholder without a value.
    """
    text, names = _qmark(sql)
    if params is None:
        return text, []
    return text, [params[n] for n in names]


class PymssqlAdapter(Adapter):
    """pymssql (``pymssql.Connection``)."""

    database: ClassVar[str] = "mssql"
    driver: ClassVar[str] = "pymssql"

    def cursor(self) -> Any:
        return self.connection.cursor(as_dict=False)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        return pymssql_error_numbers(exc)

    def autocommit(self) -> bool:
        return bool(getattr(self.connection, "autocommit_state", False))


class PyodbcAdapter(Adapter):
    """pyodbc (``pyodbc.Connection``) to SQL Server."""

    database: ClassVar[str] = "mssql"
    driver: ClassVar[str] = "pyodbc"

    def run_cursor(self, cur: Any, sql: str, params: Mapping[str, Any] | None) -> None:
        text, values = qmark(sql, params)
        if values:
            cur.execute(text, values)
        else:
            cur.execute(text)
        # Skip the results of statements that return no rows (SET …) to the first with
        # columns, if there is one.
        while cur.description is None and cur.nextset():
            pass

    def rows(self, cur: Any) -> list[dict[str, Any]]:
        if cur.description is None:
            return []
        return dict_rows(cur)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        codes: set[int | str] = {int(n) for n in _ODBC_NUMBER.findall(str(exc))}
        state = exc.args[0] if exc.args else None
        if isinstance(state, str) and len(state) == 5:
            codes.add(state)
        return frozenset(codes)


# -- skiplock's own connections ----------------------------------------------------------


def connect(pymssql: ModuleType, kwargs: Mapping[str, Any], session: str) -> Any:
    """A new pymssql connection with *session* run and committed."""
    conn = pymssql.connect(**kwargs)
    try:
        cur = conn.cursor()
        try:
            cur.execute(session)
        finally:
            cur.close()
        conn.commit()
    except BaseException:
        conn.close()
        raise
    return conn


def is_closed(conn: Any) -> bool:
    try:
        return not conn._conn.connected  # pymssql raises InterfaceError once closed
    except Exception:
        return True


@contextmanager
def autocommit(conn: Any) -> Iterator[None]:
    """*conn* in autocommit mode for the block."""
    conn.autocommit(True)
    try:
        yield
    finally:
        conn.autocommit(False)
