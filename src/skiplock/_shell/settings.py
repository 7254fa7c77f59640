"""What a queue is made of, checked once: its URL, table, pool settings, queue limits
and rate limits.

:meth:`QueueSettings.check` holds the constructor's keywords and their defaults, the one
place they are written: :func:`skiplock.connect`, :class:`~skiplock.Queue`,
:func:`skiplock.connect_async` and :class:`~skiplock.AsyncQueue` forward theirs to it as
:class:`QueueKeywords`, and a queue made from another (``AsyncQueue.sync_queue``) takes
its :class:`QueueSettings` whole. tests/quality/test_async_parity.py checks that the TypedDict
names the keywords of :meth:`QueueSettings.check`.

May import: :mod:`skiplock._core`, :mod:`skiplock.errors` and the rest of the shell's
no-I/O part (:mod:`.pool_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from .._core.checks import queue_limits as checked_queue_limits
from .._core.checks import rate_limits as checked_rate_limits
from .._core.sql import TableName
from .._core.url import DatabaseURL, parse_url
from .pool_state import PoolSettings

__all__ = ["DEFAULT_TABLE", "QueueKeywords", "QueueSettings"]

DEFAULT_TABLE = "skiplock_jobs"


class QueueKeywords(TypedDict, total=False):
    """The keywords of :func:`skiplock.connect` and the queues' constructors (see
    :meth:`QueueSettings.check` for their defaults)."""

    table: str
    max_size: int | None
    max_idle: int | None
    pool_timeout: float
    max_lifetime: float
    max_idle_time: float
    queue_limits: Mapping[str, int] | None
    rate_limits: Mapping[str, tuple[int, float]] | None


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """A queue's checked settings. ``given_url`` is the URL as it was given (None:
    ``$SKIPLOCK_URL``, read when checked), for a queue made on the same database."""

    given_url: str | None
    url: DatabaseURL
    table: TableName
    pool: PoolSettings
    #: queue name → the most of its jobs that may hold a live lease at once
    queue_limits: dict[str, int]
    #: queue name → (N, per): at most N of its jobs claimed in any window of per seconds
    rate_limits: dict[str, tuple[int, float]]

    @classmethod
    def check(
        cls,
        url: str | None = None,
        *,
        table: str = DEFAULT_TABLE,
        max_size: int | None = None,
        max_idle: int | None = None,
        pool_timeout: float = 30.0,
        max_lifetime: float = 3600.0,
        max_idle_time: float = 600.0,
        queue_limits: Mapping[str, int] | None = None,
        rate_limits: Mapping[str, tuple[int, float]] | None = None,
    ) -> QueueSettings:
        """Raises :class:`~skiplock.ConfigurationError` for a bad URL or unknown scheme,
        an unsafe table name, a pool setting out of range or a bad limit (see
        :func:`skiplock.connect`); opens no connection."""
        return cls(
            given_url=url,
            url=parse_url(url),
            queue_limits=checked_queue_limits(queue_limits),
            rate_limits=checked_rate_limits(rate_limits),
            table=TableName.parse(table),
            pool=PoolSettings.check(max_size, max_idle, pool_timeout, max_lifetime, max_idle_time),
        )
