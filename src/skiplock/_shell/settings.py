"""A queue's settings, checked once: URL, table, pool, queue and rate limits.
:meth:`QueueSettings.check` is the one place the constructors' keywords and defaults are
written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from .._core.checks import integer, seconds
from .._core.checks import queue_limits as checked_queue_limits
from .._core.checks import rate_limits as checked_rate_limits
from .._core.sql import TableName
from ..drivers.url import DatabaseURL, parse_url
from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_SIZE",
    "DEFAULT_TABLE",
    "PoolSettings",
    "PoolStats",
    "QueueKeywords",
    "QueueSettings",
]

DEFAULT_TABLE = "skiplock_jobs"

#: connections a queue's pool may open when neither max_size nor a larger max_idle is given
DEFAULT_MAX_SIZE = 10


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """A pool's checked settings (see :func:`skiplock.connect`)."""

    max_size: int
    max_idle: int
    timeout: float
    max_lifetime: float
    max_idle_time: float

    @classmethod
    def check(
        cls,
        max_size: object,
        max_idle: object,
        timeout: object,
        max_lifetime: object,
        max_idle_time: object,
    ) -> PoolSettings:
        """Raises ``ConfigurationError`` for a setting out of range or of the wrong type."""
        idle = None if max_idle is None else integer(max_idle, "max_idle", 0, 10_000)
        if max_size is None:
            size = max(DEFAULT_MAX_SIZE, idle or 0)
        else:
            size = integer(max_size, "max_size", 1, 10_000)
        if idle is not None and idle > size:
            raise ConfigurationError(
                f"max_idle ({idle}) cannot be larger than max_size ({size}): the pool never "
                "holds more than max_size connections"
            )
        return cls(
            max_size=size,
            max_idle=size if idle is None else idle,
            timeout=seconds(timeout, "pool_timeout", strict=True),
            max_lifetime=seconds(max_lifetime, "max_lifetime", strict=True),
            max_idle_time=seconds(max_idle_time, "max_idle_time", strict=True),
        )


@dataclass(frozen=True, slots=True)
class PoolStats:
    """One moment of a queue's pool (:meth:`skiplock.Queue.pool_stats`): ``in_use`` is 0
    once every call and ``transaction()`` block has ended, however it ended."""

    #: the bound: at most this many open at once
    max_size: int
    #: connections open or being opened, lent or idle
    open: int
    #: open and waiting in the pool to be lent
    idle: int
    #: lent to a call or a ``transaction()`` block, or being opened for one
    in_use: int
    #: callers waiting for a connection
    waiting: int


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
