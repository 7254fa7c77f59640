"""Whether an idle connection of skiplock's own is still usable, found without a round trip
(the pool asks at every checkout): the driver's own flag, and whether the server sent
something unasked or closed the socket.

May import: the standard library and :mod:`.aio` (the async adapters).
"""

from __future__ import annotations

import select
from collections.abc import Callable
from typing import Any

from .aio import AsyncAdapter, ThreadAdapter

__all__ = ["is_usable", "is_usable_async", "readable"]


def is_usable(
    conn: Any, fileno: Callable[[Any], int | None], is_closed: Callable[[Any], bool]
) -> bool:
    """False if an idle *conn* is known to be broken: *is_closed* says so, or the server
    sent something unasked or closed the socket that *fileno* finds (what a killed session,
    a server shutdown or an idle timeout does: the socket turns readable). Where the driver
    hides its socket (*fileno* gives None) only *is_closed* is asked, and a server-side kill
    is found at the connection's next use."""
    try:
        fd = fileno(conn)
    except Exception:
        return False
    if fd is None:
        return not is_closed(conn)
    return fd >= 0 and not readable(fd)


def is_usable_async(own: AsyncAdapter, usable: Callable[[Any], bool]) -> bool:
    """:func:`is_usable` for an async adapter; *usable* is the sync check of a connection
    run in a thread. An asyncio driver's socket is read by its event loop, so only
    psycopg's (read only when awaited) is looked at; for the others the adapter's flag is,
    and a server-side kill is found at the connection's next use (then retried)."""
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
    """True if the socket *fd* has something to read (or is not a socket we can ask about)."""
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken
