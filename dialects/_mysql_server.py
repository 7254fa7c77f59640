"""What a MySQL or MariaDB server says: its version and its error numbers."""

from __future__ import annotations

import re

from .contract import ErrorInfo, ServerInfo, UnsupportedServer

__all__ = ["classify", "migration_done", "parse_server_version"]

#: deadlock, lock wait timeout, NOWAIT lock refused (MySQL 3572), lock refused (MariaDB 1205)
_RETRYABLE = {1205, 1213, 3572, 3058}
#: a migration statement whose effect is there already: duplicate column, key or table;
#: no such column, key or constraint to drop (MySQL 3940, MariaDB 1091)
_ALREADY = {1060, 1061, 1050, 1091, 3940, 3822}
#: server gone, lost, killed, shutting down, disconnected for inactivity
_CONNECTION = {1053, 1927, 2003, 2006, 2013, 2055, 4031, 1317}
#: Galera (MariaDB's wsrep): a node that is not ready for clients (joining, desynced and
#: rejecting queries, or cut off from the primary component) answers statements that read
#: a table with 1047 ER_UNKNOWN_COM_ERROR and this text, for as long as it stays so
_NOT_READY = "wsrep has not yet prepared node for application use"


def classify(info: ErrorInfo) -> tuple[bool, bool]:
    """``(retryable, connection_lost)`` for a MySQL / MariaDB error."""
    errno = info.number()
    # a Galera node that is not ready is a database that went away for a while
    lost = (
        errno in _CONNECTION
        or (errno == 1047 and _NOT_READY in info.message.lower())
        or (
            info.kind in ("operational", "interface")
            and errno not in _RETRYABLE
            and errno < 1000  # client-side: no server error code
        )
    )
    return (lost or errno in _RETRYABLE), lost


def migration_done(info: ErrorInfo) -> bool:
    """A migration statement failed because its effect is there already."""
    return info.number() in _ALREADY


def parse_server_version(text: str) -> ServerInfo:
    """What ``VERSION()`` says, or :class:`~skiplock.UnsupportedServer` for a server whose
    ``SKIP LOCKED`` is missing or does not lock."""
    if "tidb" in text.lower():
        # TiDB calls itself 8.0.11 but parses FOR UPDATE SKIP LOCKED as a read without
        # locks, so two workers would claim the same jobs.
        raise UnsupportedServer(
            f"TiDB ({text}) is not supported: its SKIP LOCKED takes no row locks, so "
            "workers would claim the same jobs; use MySQL 8.0.1+ or MariaDB 10.6+"
        )
    numbers = tuple(int(n) for n in re.findall(r"\d+", text.split("-")[0])[:3])
    if "mariadb" in text.lower():
        if numbers < (10, 6):
            raise UnsupportedServer(
                f"MariaDB {text} has no SKIP LOCKED: skiplock needs MariaDB 10.6 or newer"
            )
        return ServerInfo("MariaDB", numbers, text)
    if numbers < (8, 0, 1):
        raise UnsupportedServer(
            f"MySQL {text} has no SKIP LOCKED: skiplock needs MySQL 8.0.1 or newer"
        )
    return ServerInfo("MySQL", numbers, text)
