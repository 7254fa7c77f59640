"""A queue's settings, checked once: URL, table, pool, queue and rate limits.
:meth:`QueueSettings.check` is the one place the constructors' keywords and defaults are
written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from .._core.checks import queue_limits as checked_queue_limits
from .._core.checks import rate_limits as checked_rate_limits
from .._core.sql import TableName
from ..drivers.url import DatabaseURL, parse_url
from .pool_state import PoolSettings

__all__ = ["DEFAULT_TABLE", "QueueKeywords", "QueueSettings"]

DEFAULT_TABLE = "skiplock_jobs"


class QueueKeywords(TypedDict, total=False):
    """The keywords of :func:`skiplock.connect` and the queues' constructors."""

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
    """A queue's checked settings; ``given_url`` as given (None: ``$SKIPLOCK_URL``)."""

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
        """Raises :class:`~skiplock.ConfigurationError` for a bad URL, table name, pool
        setting or limit; opens no connection."""
        return cls(
            given_url=url,
            url=parse_url(url),
            queue_limits=checked_queue_limits(queue_limits),
            rate_limits=checked_rate_limits(rate_limits),
            table=TableName.parse(table),
            pool=PoolSettings.check(max_size, max_idle, pool_timeout, max_lifetime, max_idle_time),
        )
