"""The dialect layer: the only code that knows which database it talks to."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from .base import BaseDialect, RunState
from .contract import DatabaseURL, Dialect, ServerInfo, TableName

__all__ = ["DIALECT_MODULES", "Dialect", "RunState", "ServerInfo", "get_dialect"]

#: dialect name → (module, class)
DIALECT_MODULES: dict[str, tuple[str, str]] = {
    "postgresql": ("skiplock.dialects.postgresql", "PostgreSQLDialect"),
    "mysql": ("skiplock.dialects.mysql", "MySQLDialect"),
    "mssql": ("skiplock.dialects.mssql", "MSSQLDialect"),
}


def get_dialect(
    url: DatabaseURL,
    table: TableName,
    statements: Mapping[str, str] | None = None,
    state: RunState | None = None,
) -> Dialect:
    """The dialect for *url* and *table* (*statements*: an older release's; *state*: the
    queue's)."""
    module_name, class_name = DIALECT_MODULES[url.dialect]
    cls: type[BaseDialect] = getattr(importlib.import_module(module_name), class_name)
    return cls(url, table, statements, state)
