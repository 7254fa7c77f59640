"""The asyncio side of :mod:`skiplock._pool`: the same :class:`~skiplock._pool.PoolState`
(bound, wait order, recycling, broken connections dropped), its I/O awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from ._pool import PoolSettings, PoolState, Waiter
from .errors import ConfigurationError

__all__ = ["AsyncPool"]


class _LoopWaiter(Waiter):
    """Woken by whoever returns a connection on the same event loop."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        super().__init__()
        self.done = asyncio.Event()

    def wake(self) -> None:
        self.done.set()


class AsyncPool:
    """:class:`~skiplock._pool.Pool`'s contract for the tasks of one event loop: at most
    ``max_size`` connections, a wait of up to ``timeout`` seconds in arrival order (then
    :class:`~skiplock.PoolTimeout`), old, idle-too-long and broken connections closed.
    Connections are async adapters; *usable* checks one without a round trip."""

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
        """A connection for the caller alone until :meth:`put`; raises as ``Pool.get``."""
        deadline = time.monotonic() + self.timeout
        conn, waiter, stale = self.state.lend(_LoopWaiter)
        await _close_all(stale)
        if isinstance(waiter, _LoopWaiter):
            conn = await self._wait(waiter, deadline)
        if conn is not None and not self._usable(conn):
            self.state.forget(conn)  # broken while idle: its slot is ours
            await _close_all([conn])
            conn = None
        return conn if conn is not None else await self._open_one()

    async def _wait(self, waiter: _LoopWaiter, deadline: float) -> Any:
        try:
            await asyncio.wait_for(waiter.done.wait(), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            err = self.state.timed_out(waiter)
            if err is not None:
                raise err from None
        except BaseException:  # cancelled: pass on what we may have been given
            back = self.state.abandon(waiter)
            if back is not None:
                await self.put(back)
            raise
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
        """Take back a connection lent by :meth:`get`; closed if *broken*, too old or over
        ``max_idle``."""
        await _close_all(self.state.take_back(conn, broken))

    async def close(self) -> None:
        """Close the idle connections now, lent ones when they come back."""
        await _close_all(self.state.close())


async def _close_all(conns: list[Any]) -> None:
    for conn in conns:
        with suppress(Exception):
            await conn.close()
