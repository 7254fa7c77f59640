"""Whether an idle connection is still usable, found without a round trip (the pool asks
at every checkout): the part of :class:`~skiplock.dialects.base.Dialect` that looks at a
connection's flag and socket."""

from __future__ import annotations

import select
from typing import Any

from skiplock.drivers.aio import AsyncAdapter, ThreadAdapter

__all__ = ["ConnectionHealth"]


class ConnectionHealth:
    """A dialect's health checks; a dialect overrides :meth:`is_closed` and
    :meth:`fileno` where its driver tells more."""

    def is_closed(self, conn: Any) -> bool:
        return False

    def fileno(self, conn: Any) -> int | None:
        """The socket of *conn* (-1 once closed), or None where the driver hides it."""
        return None

    def is_usable(self, conn: Any) -> bool:
        """False if an idle *conn* is known to be broken, found without a round trip: the
        driver says it is closed, or the server sent something unasked or closed the
        socket (what a killed session, a server shutdown or an idle timeout does: the
        socket turns readable). Where the driver hides its socket only the driver's flag
        is looked at, and a server-side kill is found at the connection's next use."""
        try:
            fd = self.fileno(conn)
        except Exception:
            return False
        if fd is None:
            return not self.is_closed(conn)
        return fd >= 0 and not _readable(fd)

    def is_usable_async(self, own: AsyncAdapter) -> bool:
        """:meth:`is_usable` for a connection of :meth:`connect_async` (an async adapter).
        An asyncio driver's socket is read by its event loop, so only psycopg's (read
        only when awaited) is looked at; for the others the adapter's flag is, and a
        server-side kill is found at the connection's next use (then retried)."""
        if isinstance(own, ThreadAdapter):
            return self.is_usable(own.connection)
        if own.is_closed():
            return False
        try:
            fd = own.fileno()
        except Exception:
            return False
        return fd is None or (fd >= 0 and not _readable(fd))


def _readable(fd: int) -> bool:
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken
