"""The dialect layer: the only code that knows which database it talks to.

One module and one ``.sql`` file per database. :func:`get_dialect` picks the class for a
parsed URL; everything above this package calls the :class:`~skiplock.dialects.base.Dialect`
interface only.
"""

from __future__ import annotations

import importlib

from skiplock._core.sql import TableName
from skiplock._core.url import DatabaseURL

from .base import Dialect, ServerInfo

__all__ = ["DIALECT_MODULES", "Dialect", "ServerInfo", "get_dialect"]

#: dialect name → (module, class)
DIALECT_MODULES: dict[str, tuple[str, str]] = {
    "postgresql": ("skiplock.dialects.postgresql", "PostgreSQLDialect"),
    "mysql": ("skiplock.dialects.mysql", "MySQLDialect"),
    "mssql": ("skiplock.dialects.mssql", "MSSQLDialect"),
}


def get_dialect(url: DatabaseURL, table: TableName) -> Dialect:
    """The dialect for *url*, with its statements rendered for *table*."""
    module_name, class_name = DIALECT_MODULES[url.dialect]
    cls: type[Dialect] = getattr(importlib.import_module(module_name), class_name)
    return cls(url, table)
