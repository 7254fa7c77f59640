"""Unwrapping SQLAlchemy, Django and pooled mysql-connector objects to the driver
connection inside (asynchronous SQLAlchemy objects are refused).
"""

from __future__ import annotations

import sys
from typing import Any

from skiplock.errors import ConfigurationError

__all__ = ["is_instance", "unwrap"]


def _is(obj: Any, module_name: str, attr: str) -> bool:
    module = sys.modules.get(module_name)
    cls = getattr(module, attr, None) if module is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


#: ``is_instance(obj, module, attr)``: *obj* is of that class (never imports *module*)
is_instance = _is


def unwrap(obj: Any, accepted: str) -> Any:
    """The driver connection behind *obj*, or *obj* itself."""
    if _is(obj, "sqlalchemy.ext.asyncio", "AsyncSession") or _is(
        obj, "sqlalchemy.ext.asyncio", "AsyncConnection"
    ):
        raise ConfigurationError(
            f"conn= is a SQLAlchemy {type(obj).__name__}: the synchronous Queue needs {accepted} "
            "(an asyncio queue, skiplock.connect_async(), takes this one)"
        )
    if _is(obj, "sqlalchemy.orm", "Session"):
        obj = obj.connection()
    if _is(obj, "sqlalchemy.engine", "Connection"):
        if not obj.in_transaction():
            # As SQLAlchemy's own autobegin at a statement: otherwise conn.commit() would
            # find no transaction to commit and our writes would be rolled back at close.
            obj.begin()
        pooled = obj.connection
        driver = getattr(pooled, "driver_connection", None)
        return driver if driver is not None else pooled.dbapi_connection
    if _is(obj, "django.utils.connection", "ConnectionProxy"):
        obj = obj._connections[obj._alias]
    if _is(obj, "django.db.backends.base.base", "BaseDatabaseWrapper"):
        obj.ensure_connection()
        return obj.connection
    if _is(obj, "mysql.connector.pooling", "PooledMySQLConnection"):
        return obj._cnx
    return obj
