"""skiplock's own SQL Server connections through pymssql (FreeTDS): opened with autocommit
off and the session batch the dialect gives, and their health. pymssql has no asyncio
API: the AsyncQueue runs these connections in a thread.

May import: the standard library.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = ["autocommit", "connect", "is_closed"]


def connect(pymssql: ModuleType, kwargs: Mapping[str, Any], session: str) -> Any:
    """A new pymssql connection with the batch *session* run and committed; closed again if
    that fails."""
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
    """*conn* in autocommit mode for the block, for the statements SQL Server refuses in a
    transaction. pymssql rolls back the transaction it keeps open when autocommit goes on,
    and begins one again when it goes off."""
    conn.autocommit(True)
    try:
        yield
    finally:
        conn.autocommit(False)
