"""Whether an idle connection of skiplock's own is still usable, without a round trip."""

from __future__ import annotations

import select
from collections.abc import Callable
from typing import Any

from .aio import AsyncAdapter, ThreadAdapter

__all__ = ["is_usable", "is_usable_async", "readable"]


def is_usable(
    conn: Any, fileno: Callable[[Any], int | None], is_closed: Callable[[Any], bool]
) -> bool:
    """False if an idle *conn* is known to be broken: *is_closed* says so, or its socket
    (*fileno*) turned readable.
    """
    try:
        fd = fileno(conn)
    except Exception:
        return False
    if fd is None:
        return not is_closed(conn)
    return fd >= 0 and not readable(fd)


def is_usable_async(own: AsyncAdapter, usable: Callable[[Any], bool]) -> bool:
    """:func:`is_usable` for an async adapter."""
    if isinstance(own, ThreadAdapter):
        return usable(own.connection)
    if own.is_closed():
        return False
    try:
        fd = own.fileno()
    except Exception:
        return False
    return fd is None or (fd >= 0 and not readable(fd))


def readable(fd: int) -> bool:
    """True if the socket *fd* has something to read (or cannot be asked)."""
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken
