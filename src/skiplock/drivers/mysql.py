"""MySQL / MariaDB drivers: mysql-connector-python (pure and C extension), PyMySQL and
mysqlclient (``MySQLdb``).

All three take ``%(name)s`` parameters and bind no lists (the dialect expands them). Every
result is read to its end: mysql-connector refuses the next statement ("Unread result
found") while rows of the last one are pending. ``rowcount`` of an UPDATE counts matched
rows only with the ``CLIENT_FOUND_ROWS`` flag (skiplock's own connections and
SQLAlchemy's and Django's set it); without it, it counts changed rows, and every fenced
statement of skiplock changes a column of each row it matches (status, lease or attempt),
so the two counts agree.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .base import Adapter

__all__ = ["MySQLConnectorAdapter", "MySQLdbAdapter", "PyMySQLAdapter"]


class MySQLConnectorAdapter(Adapter):
    """mysql-connector-python: ``MySQLConnection`` (pure) and ``CMySQLConnection``."""

    database: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "mysql-connector"

    def cursor(self) -> Any:
        return self.connection.cursor(buffered=False, raw=False, dictionary=False)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        errno = getattr(exc, "errno", None)
        return frozenset({errno}) if isinstance(errno, int) and errno > 0 else frozenset()

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
    """mysqlclient (``MySQLdb.connections.Connection``, any cursor class): the same calls
    as PyMySQL (``cursors.Cursor``, ``get_autocommit()``)."""

    driver: ClassVar[str] = "mysqlclient"
