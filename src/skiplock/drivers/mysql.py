"""MySQL / MariaDB drivers: mysql-connector-python, PyMySQL and mysqlclient.

A connection without ``CLIENT_FOUND_ROWS`` is fine: every fenced UPDATE changes a column
of the row it matches.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._core.ops import ErrorInfo
from .base import Adapter

__all__ = ["MySQLConnectorAdapter", "MySQLdbAdapter", "PyMySQLAdapter"]

#: mysql-connector's text for a connection that is gone, whatever class carries it
_NOT_AVAILABLE = "MySQL Connection not available"


def _causes(exc: BaseException) -> list[BaseException]:
    """The errors *exc* was raised from or during, nearest first."""
    out: list[BaseException] = []
    cur = exc.__cause__ or exc.__context__
    while cur is not None and len(out) < 8 and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _cext_error() -> type[BaseException] | None:
    try:
        from _mysql_connector import MySQLError  # type: ignore[import-not-found]
    except ImportError:
        return None
    return MySQLError  # type: ignore[no-any-return]


def _plain_cursor_class(connection: Any) -> Any:
    """The class of a plain cursor of *connection*, or None if unknown."""
    if getattr(connection, "_buffered", True) or getattr(connection, "_raw", True):
        return None
    from mysql.connector.connection import MySQLConnection
    from mysql.connector.cursor import MySQLCursor

    if type(connection) is MySQLConnection:
        return MySQLCursor
    try:
        from mysql.connector.connection_cext import CMySQLConnection
        from mysql.connector.cursor_cext import CMySQLCursor
    except ImportError:
        return None
    return CMySQLCursor if type(connection) is CMySQLConnection else None


class MySQLConnectorAdapter(Adapter):
    """mysql-connector-python: ``MySQLConnection`` and ``CMySQLConnection``."""

    database: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "mysql-connector"

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        super().__init__(connection, module, owned=owned)
        # The C extension's connection lets its own errors escape unwrapped in places
        # (``commit()`` after the server went away raises ``_mysql_connector.
        # MySQLInterfaceError``, which is no ``mysql.connector.Error``): catch them too.
        cext = _cext_error()
        if cext is not None:
            self.errors = (*self.errors, cext)

    def cursor(self) -> Any:
        # mysql-connector's cursor() pings the server first (COM_PING: one more round
        # trip before every statement; see docs/performance.md). The statement itself
        # reports a connection that is gone, as an error of the same kind.
        conn = self.connection
        plain = _plain_cursor_class(conn)
        if plain is None:
            return conn.cursor(buffered=False, raw=False, dictionary=False)
        conn.handle_unread_result()
        return plain(conn)

    def error_kind(self, exc: BaseException) -> str:
        cext = _cext_error()
        if cext is not None and isinstance(exc, cext):
            return "interface" if type(exc).__name__ == "MySQLInterfaceError" else "other"
        return super().error_kind(exc)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        errno = getattr(exc, "errno", None)
        return frozenset({errno}) if isinstance(errno, int) and errno > 0 else frozenset()

    def error_info(self, exc: BaseException) -> ErrorInfo:
        """As any adapter's; a lost connection hidden in a ``ProgrammingError`` too."""
        info = super().error_info(exc)
        if info.kind in ("operational", "interface") or info.number() >= 1000:
            return info
        for cause in _causes(exc):
            if isinstance(cause, self.errors):
                inner = super().error_info(cause)
                if inner.kind in ("operational", "interface"):
                    return ErrorInfo(inner.codes, inner.kind, info.message)
        if _NOT_AVAILABLE in info.message:
            return ErrorInfo(info.codes, "interface", info.message)
        return info

    def autocommit(self) -> bool:
        # in_transaction is read from the server's status flags; the autocommit property
        # asks the server, so it is asked only outside a transaction.
        if self.connection.in_transaction:
            return False
        return bool(self.connection.autocommit)


class PyMySQLAdapter(Adapter):
    """PyMySQL (``pymysql.connections.Connection``, any cursor class)."""

    database: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "pymysql"

    def cursor(self) -> Any:
        return self.connection.cursor(self.module.cursors.Cursor)

    def autocommit(self) -> bool:
        return bool(self.connection.get_autocommit())


class MySQLdbAdapter(PyMySQLAdapter):
    """mysqlclient (``MySQLdb.connections.Connection``, any cursor class)."""

    driver: ClassVar[str] = "mysqlclient"
