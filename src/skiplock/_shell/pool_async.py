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
