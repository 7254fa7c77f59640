"""skiplock's connection pool (docs/pool.md): :class:`PoolState`, its policy with no I/O,
and the pool that opens, checks, closes and waits as it says.

``scripts/async_to_sync`` makes ``pool.py`` from this module.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from ..errors import ConfigurationError, PoolTimeout
from .acompat import AEvent, wait_event_async
from .settings import PoolSettings, PoolStats

__all__ = ["AsyncPool", "PoolState", "Waiter"]


class Waiter:
    """A caller waiting for a connection, or a slot to open one."""

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


class _LoopWaiter(Waiter):
    """Woken by whoever hands it a connection or a slot."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        super().__init__()
        self.done = AEvent()

    def wake(self) -> None:
        self.done.set()


class AsyncPool:
    """At most ``max_size`` connections open at once, each lent to one caller at a time; no
    background task. The connections are skiplock's adapters."""

    def __init__(
        self,
        opener: Callable[[], Awaitable[Any]],
        *,
        usable: Callable[[Any], bool],
        settings: PoolSettings,
        name: str,
    ) -> None:
        self._opener = opener
        self._usable = usable
        self.state = PoolState(settings, name)
        self.max_size = settings.max_size
        self.max_idle = settings.max_idle
        self.timeout = settings.timeout

    async def get(self) -> Any:
        """A connection for the caller alone until :meth:`put`: an idle one that *usable*
        accepts, a new one, or one waited for. Raises ``PoolTimeout`` after ``timeout``
        seconds, ``ConfigurationError`` once closed. Interrupted, it gives back what it held
        first."""
        deadline = time.monotonic() + self.timeout
        conn, waiter, stale = self.state.lend(_LoopWaiter)
        try:
            await _close_all(stale)
        except BaseException:
            await self._give_back(conn, waiter)
            raise
        if isinstance(waiter, _LoopWaiter):
            conn = await self._wait(waiter, deadline)
        if conn is not None and not self._usable(conn):
            self.state.forget(conn)  # broken while idle (killed, timed out): its slot is ours
            try:
                await _close_all([conn])
            except BaseException:
                self.state.open_failed()  # the slot goes back (or to the next in line)
                raise
            conn = None
        return conn if conn is not None else await self._open_one()

    async def _give_back(self, conn: Any, waiter: Waiter | None) -> None:
        """What an interrupted :meth:`get` held: its place in line, a connection or a slot."""
        if waiter is not None:
            conn = self.state.abandon(waiter)
        elif conn is None:
            self.state.open_failed()
        if conn is not None:
            await self.put(conn)

    async def _wait(self, waiter: _LoopWaiter, deadline: float) -> Any:
        try:
            handed = await wait_event_async(waiter.done, max(0.0, deadline - time.monotonic()))
        except BaseException:  # KeyboardInterrupt, a cancelled task: pass on what we got
            await self._give_back(None, waiter)
            raise
        if not handed:
            err = self.state.timed_out(waiter)
            if err is not None:
                raise err
        return self.state.handed(waiter)

    async def _open_one(self) -> Any:
        try:
            conn = await self._opener()
        except BaseException:
            self.state.open_failed()
            raise
        if not self.state.opened(conn):
            await _close_all([conn])
            raise ConfigurationError("this queue was closed")
        return conn

    async def put(self, conn: Any, *, broken: bool = False) -> None:
        """Take back a connection from :meth:`get`; closed when *broken*."""
        await _close_all(self.state.take_back(conn, broken))

    async def close(self) -> None:
        """Close the idle connections now, lent ones when they come back; :meth:`get` raises
        ``ConfigurationError`` from now on."""
        await _close_all(self.state.close())


async def _close_all(conns: list[Any]) -> None:
    """Close each of *conns*, ignoring errors; interrupted, abort the rest and raise."""
    for i, conn in enumerate(conns):
        try:
            await conn.close()
        except Exception:
            with suppress(Exception):
                conn.abort()
        except BaseException:
            for rest in conns[i:]:
                with suppress(Exception):
                    rest.abort()
            raise
