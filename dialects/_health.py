"""A connection's health, and how long the server lets a session idle in a transaction."""

from __future__ import annotations

from typing import Any

from .contract import AsyncAdapter, is_usable, is_usable_async

__all__ = ["IDLE_TRANSACTION_TIMEOUT", "ConnectionHealth"]

#: see :attr:`ConnectionHealth.idle_transaction_timeout` (skiplock's own transactions take
#: milliseconds; a pause this long between two of their statements is a frozen client)
IDLE_TRANSACTION_TIMEOUT = 10.0


class ConnectionHealth:
    """A dialect's health checks (the driver's, where it tells more)."""

    def is_closed(self, conn: Any) -> bool:
        """The driver says *conn* is closed (the driver module's ``is_closed``)."""
        return False

    def fileno(self, conn: Any) -> int | None:
        """The socket of *conn* (-1 once closed), or None where the driver hides it."""
        return None

    def is_usable(self, conn: Any) -> bool:
        """False if an idle *conn* is known to be broken, found without a round trip."""
        return is_usable(conn, self.fileno, self.is_closed)

    def is_usable_async(self, own: AsyncAdapter) -> bool:
        """:meth:`is_usable` for a connection of :meth:`connect_async`."""
        return is_usable_async(own, self.is_usable)

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
