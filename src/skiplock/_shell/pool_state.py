"""The policy of skiplock's connection pools, with no I/O (docs/pool.md): one for every
database and both queues, where ``psycopg_pool`` serves psycopg only. The pools of
``pool_async.py`` and ``pool.py`` open, check, close and wait as it tells them."""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._core.checks import integer, seconds
from ..errors import ConfigurationError, PoolTimeout

__all__ = ["DEFAULT_MAX_SIZE", "PoolSettings", "PoolState", "PoolStats", "Waiter"]

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


class Waiter:
    """A caller waiting for a connection, or a slot to open one; :meth:`wake` is the I/O
    side's."""

    __slots__ = ("conn", "outcome")

    def __init__(self) -> None:
        self.outcome = ""  # "": waiting; "conn": take self.conn; "slot": open one; "closed"
        self.conn: Any = None

    def wake(self) -> None:
        raise NotImplementedError


class PoolState:
    """The bookkeeping of a pool of at most ``max_size`` connections. Lends the most
    recently returned idle connection, else opens one, else queues the caller in arrival
    order; a returned connection or freed slot goes straight to the oldest waiter. Each
    method returns what the caller must close or open, outside the one lock."""

    def __init__(self, settings: PoolSettings, name: str) -> None:
        self.settings = settings
        self.name = name
        self._lock = threading.Lock()
        self._idle: deque[tuple[Any, float]] = deque()  # (conn, returned at); newest right
        self._expires: dict[int, float] = {}  # id(conn) -> when it is too old, for every open one
        self._open = 0  # open connections, lent or idle, plus those being opened
        self._waiters: deque[Waiter] = deque()
        self._closed = False

    def lend(self, waiter: Callable[[], Waiter]) -> tuple[Any, Waiter | None, list[Any]]:
        """``(conn, None, stale)``: lend *conn*, or open one in the slot taken when None;
        ``(None, w, stale)``: wait on *w*. Close *stale*. Raises ``ConfigurationError`` once
        closed."""
        with self._lock:
            if self._closed:
                raise ConfigurationError("this queue was closed")
            now = time.monotonic()
            stale = self._expire_idle(now)
            conn = None
            while self._idle and conn is None:
                conn = self._idle.pop()[0]
                if now >= self._expires[id(conn)]:  # too old: closed, its slot freed
                    self._forget_locked(conn)
                    stale.append(conn)
                    conn = None
            if conn is not None:
                return conn, None, stale
            if self._open < self.settings.max_size:
                self._open += 1  # a slot for the connection the caller opens
                return None, None, stale
            w = waiter()
            self._waiters.append(w)
            return None, w, stale

    def timed_out(self, waiter: Waiter) -> PoolTimeout | None:
        """After a wait: the error to raise, or None if *waiter* was handed something."""
        with self._lock:
            if waiter.outcome:
                return None
            self._waiters.remove(waiter)
        s = self.settings
        return PoolTimeout(
            f"no free connection to {self.name} within {s.timeout:g}s: all {s.max_size} are "
            "in use. Raise max_size or pool_timeout (skiplock.connect(url, max_size=..., "
            "pool_timeout=...)), keep q.transaction() blocks short, and inside one pass "
            "conn= rather than calling the queue plainly (that takes a second connection)"
        )

    @staticmethod
    def handed(waiter: Waiter) -> Any:
        """What a woken *waiter* got: a connection, or None for a slot."""
        if waiter.outcome == "closed":
            raise ConfigurationError("this queue was closed")
        return waiter.conn

    def abandon(self, waiter: Waiter) -> Any:
        """An interrupted waiter: the connection it was handed, to :meth:`take_back`, or
        None."""
        with self._lock:
            if not waiter.outcome:
                self._waiters.remove(waiter)
                return None
            if waiter.outcome == "slot":
                self._free_slot()
        return waiter.conn if waiter.outcome == "conn" else None

    def opened(self, conn: Any) -> bool:
        """*conn* was opened in a slot; False if the pool closed meanwhile (close it,
        raise)."""
        jitter = self.settings.max_lifetime * random.uniform(0.0, 0.1)
        with self._lock:
            if not self._closed:
                self._expires[id(conn)] = time.monotonic() + self.settings.max_lifetime - jitter
                return True
            self._free_slot()
            return False

    def open_failed(self) -> None:
        """Opening in a slot raised: the slot is freed or passed on."""
        with self._lock:
            self._free_slot()

    def forget(self, conn: Any) -> None:
        """*conn* will be closed; its slot stays with the caller."""
        with self._lock:
            self._expires.pop(id(conn), None)

    def take_back(self, conn: Any, broken: bool) -> list[Any]:
        """*conn* is returned; what the caller must close."""
        now = time.monotonic()
        with self._lock:
            expires = self._expires.get(id(conn))
            keep = not (broken or self._closed or expires is None or now >= expires)
            if keep and self._waiters:
                self._hand(self._waiters.popleft(), "conn", conn)
                return []
            stale = self._expire_idle(now)
            if keep and len(self._idle) < self.settings.max_idle:
                self._idle.append((conn, now))
            else:
                self._forget_locked(conn)
                stale.append(conn)
        return stale

    def stats(self) -> PoolStats:
        """The counts now."""
        with self._lock:
            idle = len(self._idle)
            return PoolStats(
                max_size=self.settings.max_size,
                open=self._open,
                idle=idle,
                in_use=self._open - idle,
                waiting=len(self._waiters),
            )

    def close(self) -> list[Any]:
        """No more lending; the idle connections, to close. Waiters get
        ``ConfigurationError``; lent connections are closed as they return."""
        with self._lock:
            self._closed = True
            idle = [c for c, _ in self._idle]
            self._idle.clear()
            for conn in idle:
                self._forget_locked(conn)
            while self._waiters:
                self._hand(self._waiters.popleft(), "closed", None)
        return idle

    # -- under the lock -------------------------------------------------------------------

    def _expire_idle(self, now: float) -> list[Any]:
        """Take out the idle connections unused for ``max_idle_time``."""
        stale = []
        while self._idle and now - self._idle[0][1] >= self.settings.max_idle_time:
            stale.append(self._idle.popleft()[0])  # the longest unused sit on the left
        for conn in stale:
            self._forget_locked(conn)
        return stale

    def _forget_locked(self, conn: Any) -> None:
        if self._expires.pop(id(conn), None) is not None:
            self._free_slot()

    def _free_slot(self) -> None:
        if self._waiters and not self._closed:
            self._hand(self._waiters.popleft(), "slot", None)  # the slot passes on
        else:
            self._open -= 1

    @staticmethod
    def _hand(waiter: Waiter, outcome: str, conn: Any) -> None:
        waiter.outcome, waiter.conn = outcome, conn
        waiter.wake()
