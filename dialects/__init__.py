"""The dialect layer: the only code that knows which database it talks to.

One module and one ``.sql`` file per database (MySQL's server facts in ``_mysql_server``),
the common path they share (:mod:`.base`, with :mod:`._lock_wake`), and the contract
(:mod:`.contract`): the :class:`~skiplock.dialects.contract.Dialect` protocol that
everything above this package calls, and the only skiplock module a dialect imports from.
:func:`get_dialect` picks the class for a parsed URL. What a driver does (connecting,
LISTEN, socket health) lives in :mod:`skiplock.drivers`, reached through the contract.

May import: :mod:`.contract` (which re-exports what a dialect needs from skiplock) and
the standard library.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from .base import BaseDialect
from .contract import DatabaseURL, Dialect, ServerInfo, TableName
from .state import RunState

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
    """The dialect for *url*, with its statements rendered for *table* (or *statements*:
    an older release's, rendered, as the upgrade tests load), sharing *state* (the
    queue's: what its operations change as they run)."""
    module_name, class_name = DIALECT_MODULES[url.dialect]
    cls: type[BaseDialect] = getattr(importlib.import_module(module_name), class_name)
    return cls(url, table, statements, state)
