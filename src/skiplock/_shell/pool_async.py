"""The pool's I/O: open, check, close and wait for connections as
:class:`~skiplock._shell.pool_state.PoolState` decides.

``scripts/async_to_sync`` makes ``pool.py`` from this module.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from ..errors import ConfigurationError
from .acompat import AEvent, wait_event_async
from .pool_state import PoolSettings, PoolState, Waiter

__all__ = ["AsyncPool"]


class _LoopWaiter(Waiter):
    """Woken (its event set) by whoever hands it a connection or a slot."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        super().__init__()
        self.done = AEvent()

    def wake(self) -> None:
        self.done.set()


class AsyncPool:
    """At most ``max_size`` connections open at once, each lent to one caller at a time.

    :meth:`get` lends an idle connection, or opens one, or waits up to ``timeout`` seconds
    for one, then raises :class:`~skiplock.PoolTimeout` (retryable); :meth:`put` takes it
    back (see :class:`~skiplock._shell.pool_state.PoolState` for what is kept and what closed).
    An idle connection found unusable by *usable* (a check without a round trip) when lent
    is closed and replaced. There is no background task: idle connections are recycled
    when the pool is next used. The connections are skiplock's adapters (``close()``, and
    ``abort()`` for a close that was interrupted).
    """

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
        """A connection for the caller alone until :meth:`put`. Raises ``PoolTimeout``
        after ``timeout`` seconds without one, ``ConfigurationError`` once closed, and
        whatever opening a connection raises.

        Interrupted anywhere (a cancelled task, ``KeyboardInterrupt``), it gives back what
        it held by then, its place in line, a connection or a slot, before it re-raises:
        every change to the pool's count is made by :class:`PoolState` without an await,
        and each await here is guarded by what undoes it."""
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
        """What an interrupted :meth:`get` held: its place in line (and whatever it was
        handed meanwhile), an idle connection, or the slot for a new one."""
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
        """Open a connection in a slot already taken."""
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
        """Take back a connection lent by :meth:`get`, rolled back or committed. With
        *broken* (its last use lost the connection) it is closed, never lent again."""
        await _close_all(self.state.take_back(conn, broken))

    async def close(self) -> None:
        """Close the idle connections now, lent ones when they come back; waiting and
        later :meth:`get` calls raise ``ConfigurationError``."""
        await _close_all(self.state.close())


async def _close_all(conns: list[Any]) -> None:
    """Close each of *conns* (already out of the pool's count), ignoring their errors. If
    interrupted, the one being closed and the rest are aborted (their sockets closed
    without an await: see ``AsyncAdapter.abort``), then the interruption is raised."""
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
