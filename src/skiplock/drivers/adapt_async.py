"""What :class:`skiplock.AsyncQueue` accepts as ``conn=``."""

from __future__ import annotations

from typing import Any

from skiplock.errors import ConfigurationError

from .adapt import ACCEPTED, adapt, adapter_class, async_adapter_class
from .base_async import AsyncAdapter, ThreadAdapter
from .postgresql import AsyncpgAdapter
from .wrappers import is_instance

__all__ = ["ACCEPTED_ASYNC", "adapt_async", "async_adapter_class"]

ACCEPTED_ASYNC: dict[str, str] = {
    "postgresql": "a psycopg 3 AsyncConnection or an asyncpg connection",
    "mysql": "a mysql.connector.aio connection",
}
_WRAPPERS = "or a SQLAlchemy AsyncConnection or AsyncSession over one"


def _accepted(database: str, in_thread: bool) -> str:
    if in_thread:
        return f"{ACCEPTED[database]} (run in a thread: no asyncio driver is used there)"
    return f"{ACCEPTED_ASYNC[database]}, {_WRAPPERS}"


async def _unwrap(obj: Any) -> Any:
    """The driver connection behind a SQLAlchemy asyncio object, its transaction begun."""
    if is_instance(obj, "sqlalchemy.ext.asyncio", "AsyncSession"):
        obj = await obj.connection()  # begins the session's transaction, as a statement would
    if not is_instance(obj, "sqlalchemy.ext.asyncio", "AsyncConnection"):
        return obj
    if not obj.in_transaction():
        await obj.begin()
    raw = (await obj.get_raw_connection()).driver_connection
    found = async_adapter_class(raw)
    if found is not None and await found[0](raw, found[1]).autocommit():
        # SQLAlchemy begins the driver's transaction lazily, at its first statement
        # (asyncpg): without one, our writes would commit at once, outside the session's.
        await obj.exec_driver_sql("SELECT 1")
    return raw


async def adapt_async(obj: Any, database: str, flavor: str, in_thread: bool) -> AsyncAdapter:
    """An async adapter for the caller's *obj*, checked to talk to *database*
    (*in_thread*: run sync connections in a thread). Raises ``ConfigurationError`` otherwise.
    """
    if isinstance(obj, AsyncAdapter):
        adapter = obj
    else:
        raw = await _unwrap(obj)
        found = async_adapter_class(raw)
        if found is not None:
            adapter = found[0](raw, found[1])
            if raw is not obj and isinstance(adapter, AsyncpgAdapter):
                adapter.json_decoded = True  # SQLAlchemy's asyncpg dialect decodes JSON
        elif in_thread:
            return ThreadAdapter(adapt(raw, database, flavor))
        else:
            hint = ""
            if adapter_class(raw) is not None:
                hint = " (a sync connection: use it with skiplock.Queue / skiplock.connect)"
            raise ConfigurationError(
                f"conn= on an AsyncQueue must be {_accepted(database, in_thread)}; got "
                f"{type(obj).__module__}.{type(obj).__qualname__}{hint}"
            )
    if adapter.database != database:
        raise ConfigurationError(
            f"conn= is a {adapter.driver} connection to {adapter.database}, but this queue is "
            f"on {flavor}: pass {_accepted(database, in_thread)} to the queue's database"
        )
    return adapter
