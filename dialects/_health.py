"""Whether an idle connection is still usable, found without a round trip (the pool asks
at every checkout), and how long the server lets one sit idle inside a transaction: the
part of :class:`~skiplock.dialects.base.Dialect` about a connection's health."""

from __future__ import annotations

import select
from typing import Any

from skiplock.drivers.aio import AsyncAdapter, ThreadAdapter

__all__ = ["IDLE_TRANSACTION_TIMEOUT", "ConnectionHealth"]

#: see :attr:`ConnectionHealth.idle_transaction_timeout` (skiplock's own transactions take
#: milliseconds; a pause this long between two of their statements is a frozen client)
IDLE_TRANSACTION_TIMEOUT = 10.0


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

    # -- how long one of skiplock's own sessions may sit idle inside a transaction ----------
    # A process frozen (SIGSTOP, a paused VM) or cut off without a reset between two
    # statements of one of skiplock's transactions keeps that transaction's row locks: a
    # job it was heartbeating stays locked after its lease ends, and every claim skips it.
    # Where the server can end such a session, each pooled connection asks it to after
    # IDLE_TRANSACTION_TIMEOUT; ``transaction()`` blocks (the caller's code runs between
    # their statements) and ``q.connection()`` are exempt.

    #: seconds (None: this server has no such setting; see docs/guarantees.md)
    @property
    def idle_transaction_timeout(self) -> float | None:
        return None

    def idle_limit_sql(self) -> tuple[str, ...]:
        """Statements that set the limit on a new pooled connection (committed after)."""
        return ()

    def exempt_begin_sql(self) -> tuple[str, ...]:
        """Statements run first in a ``transaction()`` block on a pooled connection."""
        return ()

    def exempt_end_sql(self) -> tuple[str, ...]:
        """Statements run last in that block, before its COMMIT or ROLLBACK."""
        return ()


def _readable(fd: int) -> bool:
    try:
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a socket we can ask about: treat it as broken
