"""Which adapter class serves a driver connection (sync or asyncio), and sync ``conn=``: a
driver, SQLAlchemy or Django connection made an :class:`Adapter`.
"""

from __future__ import annotations

import sys
from typing import Any

from skiplock.errors import ConfigurationError

from .base import Adapter
from .base_async import AsyncAdapter
from .mssql import PymssqlAdapter, PyodbcAdapter
from .mysql import (
    AsyncMySQLConnectorAdapter,
    MySQLConnectorAdapter,
    MySQLdbAdapter,
    PyMySQLAdapter,
)
from .postgresql import AsyncpgAdapter, AsyncPsycopgAdapter, Psycopg2Adapter, PsycopgAdapter
from .wrappers import is_instance, unwrap

__all__ = ["ACCEPTED", "Adapter", "adapt", "adapter_class", "async_adapter_class"]

#: database → the drivers accepted for ``conn=``, as the error message names them
ACCEPTED: dict[str, str] = {
    "postgresql": "a psycopg 3 connection (also from psycopg_pool) or a psycopg2 connection",
    "mysql": "a mysql-connector-python, PyMySQL or mysqlclient (MySQLdb) connection",
    "mssql": "a pymssql or pyodbc connection",
}
_WRAPPERS = "a SQLAlchemy Connection or Session, or a Django connection"

#: (module that must be imported, attribute path of the connection class, adapter)
_CLASSES: tuple[tuple[str, str, type[Adapter]], ...] = (
    ("psycopg", "Connection", PsycopgAdapter),
    ("psycopg2.extensions", "connection", Psycopg2Adapter),
    ("mysql.connector.abstracts", "MySQLConnectionAbstract", MySQLConnectorAdapter),
    ("pymysql.connections", "Connection", PyMySQLAdapter),
    ("MySQLdb.connections", "Connection", MySQLdbAdapter),
    ("pymssql", "Connection", PymssqlAdapter),
    ("pyodbc", "Connection", PyodbcAdapter),
)


def adapter_class(raw: Any) -> tuple[type[Adapter], Any] | None:
    """The adapter class for a driver connection, and the driver's DB-API module."""
    for module_name, attr, cls in _CLASSES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        conn_cls = getattr(module, attr, None)
        if isinstance(conn_cls, type) and isinstance(raw, conn_cls):
            top = module_name.split(".")[0]
            dbapi = sys.modules["mysql.connector"] if top == "mysql" else sys.modules[top]
            return cls, dbapi
    return None


#: (module, connection class, driver module, adapter) of the asyncio drivers accepted as
#: ``conn=`` (the module named must be imported already: nothing is imported here)
_ASYNC_CLASSES: tuple[tuple[str, str, str, type[AsyncAdapter]], ...] = (
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
    for module_name, attr, top, cls in _ASYNC_CLASSES:
        if is_instance(raw, module_name, attr) and top in sys.modules:
            return cls, sys.modules[top]
    return None


def _accepted(database: str) -> str:
    return f"{ACCEPTED[database]}, or {_WRAPPERS}"


def adapt(obj: Any, database: str, flavor: str) -> Adapter:
    """An adapter for the caller's *obj*, checked to talk to *database* (*flavor* names it
    in messages). Raises ``ConfigurationError`` otherwise.
    """
    if isinstance(obj, Adapter):
        adapter = obj
    else:
        raw = unwrap(obj, _accepted(database))
        found = adapter_class(raw)
        if found is None:
            hint = ""
            if async_adapter_class(raw) is not None:
                hint = " (an asyncio connection: use it with skiplock.connect_async())"
            raise ConfigurationError(
                f"conn= must be {_accepted(database)}; got {type(obj).__module__}."
                f"{type(obj).__qualname__}{hint}"
            )
        cls, module = found
        adapter = cls(raw, module)
    if adapter.database != database:
        raise ConfigurationError(
            f"conn= is a {adapter.driver} connection to {adapter.database}, but this queue is "
            f"on {flavor}: pass {_accepted(database)} to the queue's database"
        )
    if adapter.database == "mssql" and isinstance(adapter, PyodbcAdapter):
        _check_odbc_server(adapter)
    return adapter


def _check_odbc_server(adapter: PyodbcAdapter) -> None:
    """Refuse a pyodbc data source that is not SQL Server."""
    try:
        name = str(adapter.connection.getinfo(adapter.module.SQL_DBMS_NAME))
    except Exception:  # the driver cannot say: let the statements tell
        return
    if "sql server" not in name.lower():
        raise ConfigurationError(
            f"conn= is a pyodbc connection to {name!r}, but this queue is on SQL Server"
        )
