"""libpq's URL reader, through psycopg (a string parse): apart from :mod:`.url` so the core's
no-I/O contract excuses this one import.

May import: the standard library (and psycopg, inside :func:`libpq_reader`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["libpq_reader"]


def libpq_reader() -> Callable[[str], Mapping[str, Any]] | None:
    """``psycopg.conninfo.conninfo_to_dict``, or None when psycopg is not installed. Its
    error message may quote the password."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    return conninfo_to_dict
