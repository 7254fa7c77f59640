"""``isolate(app, queue)``: point an App's tasks at a test's queue for a block."""

from __future__ import annotations

import threading
import weakref
from types import TracebackType

from ..app import App
from ..errors import ConfigurationError
from ..queue import Queue
from ..queue_async import AsyncQueue, twin

__all__ = ["Isolation", "isolate"]

_lock = threading.Lock()
#: the blocks holding for each App, innermost last
_blocks: weakref.WeakKeyDictionary[App, list[Isolation]] = weakref.WeakKeyDictionary()


def isolate(app: App, queue: Queue | AsyncQueue) -> Isolation:
    """A context manager (``with`` or ``async with``) under which *app*'s tasks enqueue into,
    and are run from, *queue*, in every thread; the app's own queues are back at the end.

    Blocks nest and must end in reverse order. *queue* is never closed. Raises
    ConfigurationError for anything but an App and a queue, or while another thread
    isolates the same App.
    """
    if not isinstance(app, App):
        raise ConfigurationError(f"isolate() takes a skiplock.App, not {type(app).__name__}")
    if not isinstance(queue, (Queue, AsyncQueue)):
        raise ConfigurationError(
            f"isolate() takes a skiplock.Queue or AsyncQueue, not {type(queue).__name__}"
        )
    return Isolation(app, queue)


class Isolation:
    """One ``isolate()`` block; enter it once."""

    def __init__(self, app: App, queue: Queue | AsyncQueue) -> None:
        self.app = app
        self.queue = queue
        self._thread: int | None = None
        self._saved: tuple[Queue | None, AsyncQueue | None] = (None, None)
        self._made: Queue | AsyncQueue | None = None  # the twin made here, closed here

    def __enter__(self) -> Queue | AsyncQueue:
        app, me = self.app, threading.get_ident()
        with _lock:
            if self._thread is not None:
                raise ConfigurationError("this isolate() block was entered already")
            blocks = _blocks.setdefault(app, [])
            if blocks and blocks[-1]._thread != me:
                raise ConfigurationError(
                    "this App is isolated by another thread's isolate() block: isolate it "
                    "in one thread at a time (tests sharing an App cannot run at once)"
                )
            if isinstance(self.queue, Queue):
                sync, aio = self.queue, twin(self.queue)
                self._made = aio
            else:
                sync, aio = self.queue.sync_queue(), self.queue
                self._made = sync
            self._thread = me
            self._saved = (app._queue, app._async_queue)
            app._queue, app._async_queue = sync, aio
            blocks.append(self)
        return self.queue

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._restore()
        if isinstance(self._made, Queue):
            self._made.close()

    async def __aenter__(self) -> Queue | AsyncQueue:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(kind, exc, tb)
        if isinstance(self._made, AsyncQueue):
            await self._made.close()

    def _restore(self) -> None:
        app = self.app
        with _lock:
            blocks = _blocks.get(app, [])
            if not blocks or blocks[-1] is not self:
                raise ConfigurationError(
                    "isolate() blocks of one App must end in the reverse order they began"
                )
            blocks.pop()
            if not blocks:
                del _blocks[app]
            app._queue, app._async_queue = self._saved
