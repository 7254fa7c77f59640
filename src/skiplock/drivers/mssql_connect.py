"""skiplock's own SQL Server connections through pymssql."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = ["autocommit", "connect", "is_closed"]


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
