# Generated from src/skiplock/_shell/pool_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The pool's I/O: open, check, close and wait for connections as
:class:`~skiplock._shell.pool_state.PoolState` decides.

Generated from ``pool_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from ..errors import ConfigurationError
from .acompat import Event, wait_event
from .pool_state import PoolSettings, PoolState, Waiter

__all__ = ["Pool"]


class _ThreadWaiter(Waiter):
    """Woken by whoever hands it a connection or a slot."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        super().__init__()
        self.done = Event()

    def wake(self) -> None:
        self.done.set()


class Pool:
    """At most ``max_size`` connections open at once, each lent to one caller at a time; no
    background task. The connections are skiplock's adapters."""

    def __init__(
        self,
        opener: Callable[[], Any],
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

    def get(self) -> Any:
        """A connection for the caller alone until :meth:`put`: an idle one that *usable*
        accepts, a new one, or one waited for. Raises ``PoolTimeout`` after ``timeout``
        seconds, ``ConfigurationError`` once closed. Interrupted, it gives back what it held
        first."""
        deadline = time.monotonic() + self.timeout
        conn, waiter, stale = self.state.lend(_ThreadWaiter)
        try:
            _close_all(stale)
        except BaseException:
            self._give_back(conn, waiter)
            raise
        if isinstance(waiter, _ThreadWaiter):
            conn = self._wait(waiter, deadline)
        if conn is not None and not self._usable(conn):
            self.state.forget(conn)  # broken while idle (killed, timed out): its slot is ours
            try:
                _close_all([conn])
            except BaseException:
                self.state.open_failed()  # the slot goes back (or to the next in line)
                raise
            conn = None
        return conn if conn is not None else self._open_one()

    def _give_back(self, conn: Any, waiter: Waiter | None) -> None:
        """What an interrupted :meth:`get` held: its place in line, a connection or a slot."""
        if waiter is not None:
            conn = self.state.abandon(waiter)
        elif conn is None:
            self.state.open_failed()
        if conn is not None:
            self.put(conn)

    def _wait(self, waiter: _ThreadWaiter, deadline: float) -> Any:
        try:
            handed = wait_event(waiter.done, max(0.0, deadline - time.monotonic()))
        except BaseException:  # KeyboardInterrupt, a cancelled task: pass on what we got
            self._give_back(None, waiter)
            raise
        if not handed:
            err = self.state.timed_out(waiter)
            if err is not None:
                raise err
        return self.state.handed(waiter)

    def _open_one(self) -> Any:
        try:
            conn = self._opener()
        except BaseException:
            self.state.open_failed()
            raise
        if not self.state.opened(conn):
            _close_all([conn])
            raise ConfigurationError("this queue was closed")
        return conn

    def put(self, conn: Any, *, broken: bool = False) -> None:
        """Take back a connection from :meth:`get`; closed when *broken*."""
        _close_all(self.state.take_back(conn, broken))

    def close(self) -> None:
        """Close the idle connections now, lent ones when they come back; :meth:`get` raises
        ``ConfigurationError`` from now on."""
        _close_all(self.state.close())


def _close_all(conns: list[Any]) -> None:
    """Close each of *conns*, ignoring errors; interrupted, abort the rest and raise."""
    for i, conn in enumerate(conns):
        try:
            conn.close()
        except Exception:
            with suppress(Exception):
                conn.abort()
        except BaseException:
            for rest in conns[i:]:
                with suppress(Exception):
                    rest.abort()
            raise
