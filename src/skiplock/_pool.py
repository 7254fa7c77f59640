"""A bounded pool of driver connections: the one contract every dialect's Queue uses.

Why our own and not ``psycopg_pool``: a queue behaves the same on every database, so its
pool must too (the same bound, the same wait, the same error, the same recycling on
PostgreSQL, MySQL/MariaDB and SQL Server); psycopg_pool serves psycopg only, and a second
pool for the other drivers would be two contracts to keep true. What this pool needs is
small: hand out, take back, wait with a deadline, close what is old or broken.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from .errors import ConfigurationError, PoolTimeout

__all__ = ["Pool"]


class _Waiter:
    """A thread waiting for a connection; given one (or a slot to open one) by hand-off."""

    __slots__ = ("conn", "done", "outcome")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.outcome = ""  # "conn": take self.conn; "slot": open one; "closed"
        self.conn: Any = None


class Pool:
    """At most ``max_size`` connections open at once, lent to one thread at a time.

    :meth:`get` lends an idle connection (the most recently returned), or opens one while
    fewer than ``max_size`` are open, or waits up to ``timeout`` seconds for one, in
    arrival order, then raises :class:`~skiplock.PoolTimeout` (retryable). :meth:`put`
    takes it back: a connection flagged broken, older than ``max_lifetime`` (each one up to
    10 % sooner, so they do not all reopen together), or over ``max_idle`` idle ones is
    closed instead. An idle connection unused for ``max_idle_time``, or found unusable by
    *usable* (a check without a round trip) when lent, is closed and replaced. There is no
    background thread: idle connections are recycled when the pool is next used.

    Lock discipline: one lock guards the idle stack, the count of open connections (those
    being opened included: a slot is taken before opening) and the waiters. Nothing is
    opened, closed or checked while it is held, so a slow server never blocks a thread
    that only returns a connection. A returned connection or a freed slot goes straight
    to the oldest waiter, so a thread arriving later cannot take it first.
    """

    def __init__(
        self,
        opener: Callable[[], Any],
        *,
        usable: Callable[[Any], bool],
        max_size: int,
        max_idle: int,
        timeout: float,
        max_lifetime: float,
        max_idle_time: float,
        name: str,
    ) -> None:
        self._opener = opener
        self._usable = usable
        self.max_size = max_size
        self.max_idle = max_idle
        self.timeout = timeout
        self.max_lifetime = max_lifetime
        self.max_idle_time = max_idle_time
        self._name = name
        self._lock = threading.Lock()
        self._idle: deque[tuple[Any, float]] = deque()  # (conn, returned at); newest right
        self._expires: dict[int, float] = {}  # id(conn) -> when it is too old, for every open one
        self._open = 0  # open connections, lent or idle, plus those being opened
        self._waiters: deque[_Waiter] = deque()
        self._closed = False

    # -- lending --------------------------------------------------------------------------

    def get(self) -> Any:
        """A connection for the caller alone until :meth:`put`. Raises ``PoolTimeout``
        after ``timeout`` seconds without one, ``ConfigurationError`` once closed, and
        whatever opening a connection raises."""
        deadline = time.monotonic() + self.timeout
        with self._lock:
            self._check_open()
            now = time.monotonic()
            stale = self._expire_idle(now)
            conn, waiter = None, None
            while self._idle and conn is None:
                conn = self._idle.pop()[0]
                if now >= self._expires[id(conn)]:  # too old: closed, its slot freed
                    self._forget_locked(conn)
                    stale.append(conn)
                    conn = None
            if conn is None and self._open < self.max_size:
                self._open += 1  # a slot for the connection we open below
            elif conn is None:
                waiter = _Waiter()
                self._waiters.append(waiter)
        self._close_all(stale)
        if waiter is not None:
            conn = self._wait(waiter, deadline)
        if conn is not None and not self._usable(conn):
            self._forget(conn)  # broken while idle (killed, timed out): its slot is ours
            self._close_all([conn])
            conn = None
        return conn if conn is not None else self._open_one()

    def _wait(self, waiter: _Waiter, deadline: float) -> Any:
        try:
            handed = waiter.done.wait(max(0.0, deadline - time.monotonic()))
        except BaseException:  # e.g. KeyboardInterrupt: pass on what we may have been given
            self._abandon(waiter)
            raise
        if not handed:
            with self._lock:
                if not waiter.done.is_set():  # not handed anything at the last moment
                    self._waiters.remove(waiter)
                    raise PoolTimeout(
                        f"no free connection to {self._name} within {self.timeout:g}s: all "
                        f"{self.max_size} are in use. Raise max_size or pool_timeout "
                        "(skiplock.connect(url, max_size=..., pool_timeout=...)), keep "
                        "q.transaction() blocks short, and inside one pass conn= rather "
                        "than calling the queue plainly (that takes a second connection)"
                    )
        if waiter.outcome == "closed":
            raise ConfigurationError("this queue was closed")
        return waiter.conn  # None: a slot was handed over, open a connection in it

    def _abandon(self, waiter: _Waiter) -> None:
        with self._lock:
            if not waiter.done.is_set():
                self._waiters.remove(waiter)
                return
            if waiter.outcome == "slot":
                self._free_slot()
        if waiter.outcome == "conn":
            self.put(waiter.conn)

    def _open_one(self) -> Any:
        """Open a connection in a slot already counted in ``_open``."""
        try:
            conn = self._opener()
        except BaseException:
            with self._lock:
                self._free_slot()
            raise
        jitter = self.max_lifetime * random.uniform(0.0, 0.1)
        with self._lock:
            if not self._closed:
                self._expires[id(conn)] = time.monotonic() + self.max_lifetime - jitter
                return conn
            self._free_slot()
        self._close_all([conn])
        raise ConfigurationError("this queue was closed")

    # -- taking back ----------------------------------------------------------------------

    def put(self, conn: Any, *, broken: bool = False) -> None:
        """Take back a connection lent by :meth:`get`, rolled back or committed. With
        *broken* (its last use lost the connection) it is closed, never lent again."""
        now = time.monotonic()
        with self._lock:
            expires = self._expires.get(id(conn))
            keep = not (broken or self._closed or expires is None or now >= expires)
            if keep and self._waiters:
                self._hand(self._waiters.popleft(), "conn", conn)
                return
            stale = self._expire_idle(now)
            if keep and len(self._idle) < self.max_idle:
                self._idle.append((conn, now))
                conn = None
            else:
                self._forget_locked(conn)
        if conn is not None:
            stale.append(conn)
        self._close_all(stale)

    def close(self) -> None:
        """Close the idle connections now, lent ones when they come back; waiting and
        later :meth:`get` calls raise ``ConfigurationError``."""
        with self._lock:
            self._closed = True
            idle = [c for c, _ in self._idle]
            self._idle.clear()
            for conn in idle:
                self._forget_locked(conn)
            while self._waiters:
                self._hand(self._waiters.popleft(), "closed", None)
        self._close_all(idle)

    # -- under the lock -------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ConfigurationError("this queue was closed")

    def _expire_idle(self, now: float) -> list[Any]:
        """Take out the idle connections unused for ``max_idle_time``; the caller closes
        them after releasing the lock. (Age is checked as each one is lent or returned.)"""
        stale = []
        while self._idle and now - self._idle[0][1] >= self.max_idle_time:
            stale.append(self._idle.popleft()[0])  # the longest unused sit on the left
        for conn in stale:
            self._forget_locked(conn)
        return stale

    def _forget(self, conn: Any) -> None:
        """*conn* will be closed; its slot stays with the caller, who opens another."""
        with self._lock:
            self._expires.pop(id(conn), None)

    def _forget_locked(self, conn: Any) -> None:
        if self._expires.pop(id(conn), None) is not None:
            self._free_slot()

    def _free_slot(self) -> None:
        if self._waiters and not self._closed:
            self._hand(self._waiters.popleft(), "slot", None)  # the slot passes on
        else:
            self._open -= 1

    @staticmethod
    def _hand(waiter: _Waiter, outcome: str, conn: Any) -> None:
        waiter.outcome, waiter.conn = outcome, conn
        waiter.done.set()

    # -- outside the lock -----------------------------------------------------------------

    @staticmethod
    def _close_all(conns: list[Any]) -> None:
        for conn in conns:
            with suppress(Exception):
                conn.close()
