"""A sync view of :class:`skiplock.AsyncQueue`, so that one test body runs on both APIs.

The conformance tests are written against the sync API. For ``api="async"`` the ``queue``
and ``make_queue`` fixtures hand them a :class:`SyncView` of an ``AsyncQueue``: every
coroutine method is run to its end on an event loop of the test's own (in a thread of its
own), ``transaction()`` is entered and left there, and what it yields is viewed the same
way. Threads that race in a test submit their calls to that one loop concurrently, as the
tasks of an asyncio application would. Nothing about the queue is faked: the calls are
the AsyncQueue's, over its own asyncio connections.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any


class Loop:
    """An event loop running in a daemon thread; :meth:`run` waits for a coroutine."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=120)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class SyncView:
    """The async object *target* seen through sync calls on *loop*."""

    def __init__(self, target: Any, loop: Loop) -> None:
        self._target = target
        self._loop = loop

    def __repr__(self) -> str:
        return f"<SyncView of {self._target!r}>"

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name == "transaction":
            return lambda **kw: _TransactionView(attr(**kw), self._loop)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **kw: self._loop.run(attr(*a, **kw))
        return attr

    def __enter__(self) -> SyncView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _TransactionView:
    def __init__(self, cm: Any, loop: Loop) -> None:
        self._cm = cm
        self._loop = loop

    def __enter__(self) -> SyncView:
        return SyncView(self._loop.run(self._cm.__aenter__()), self._loop)

    def __exit__(self, *exc: Any) -> bool:
        return bool(self._loop.run(self._cm.__aexit__(*exc)))
