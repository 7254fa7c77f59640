"""The asyncio worker: ``async def`` handlers as tasks on one event loop."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading

from ._worker.lifecycle import on_stop_signal
from ._worker.outcomes import OutcomeWriter
from ._worker.runners import AsyncioRunner, Runner
from ._worker.state import HeldJobs
from .worker import WorkerOptions

__all__ = ["AsyncWorker"]

log = logging.getLogger("skiplock.worker")


class AsyncWorker(WorkerOptions):
    """Run ``await handler(job)`` for jobs claimed from *queues*, on the running loop.

    Same options, outcomes and guarantees as :class:`~skiplock.Worker`, but a job past its
    ``timeout`` (or the ``grace``) has its task cancelled; a sync handler runs in a thread.
    Use ``await worker.run()``, ``async with worker:``, or :meth:`start` / :meth:`stop`.
    """

    _runner: AsyncioRunner
    _takes_async_queue = True
    _also = " or a skiplock.AsyncQueue"
    _task: asyncio.Task[None] | None = None
    _signals = 0

    def _make_runner(self, outcomes: OutcomeWriter, jobs: HeldJobs) -> Runner:
        self._runner = AsyncioRunner(self._chain, outcomes, jobs, self.concurrency)
        return self._runner

    async def run(self, *, install_signals: bool = True) -> None:
        """Work until :meth:`stop` (or SIGTERM / SIGINT), as :meth:`skiplock.Worker.run` does;
        cancelled, it stops the same way. Raises what the Worker raises.
        """
        loop = asyncio.get_running_loop()
        self._runner.bind(loop)
        done: asyncio.Future[None] = loop.create_future()

        def serve() -> None:
            error: BaseException | None = None
            try:
                self._runtime.serve()
            except BaseException as exc:
                error = exc
            finally:
                self._runtime.flags.finished.set()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, done, error)

        installed: list[signal.Signals] = []
        if install_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self._on_signal, signum)
                installed.append(signum)
        log.info("asyncio worker: handlers on the event loop, %d at most", self.concurrency)
        thread = threading.Thread(target=serve, name="skiplock-worker", daemon=True)
        thread.start()
        try:
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                self.request_stop()
                await done
                raise
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
            self._runner.shutdown_threads()
            if done.done():  # settled by the serve thread, whose last step that was
                thread.join()
            if self._own_queue is not None and self._runtime.flags.finished.is_set():
                # the Queue made from an AsyncQueue is the worker's: its pool ends with it
                self._own_queue.close()

    def start(self) -> AsyncWorker:
        """Run as a task of the running loop (no signal handlers)."""
        if self.metrics is not None:  # its address is known (or refused) on return
            self.metrics.start()
        self._task = asyncio.get_running_loop().create_task(
            self.run(install_signals=False), name="skiplock-worker"
        )
        return self

    def request_stop(self) -> None:
        """Ask the worker to stop; returns at once. Safe from any thread."""
        self._runtime.stop()

    async def stop(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Ask the worker to stop; with *wait*, until it has (at most *timeout* seconds).
        Raises the error :meth:`run` ended with, if any.
        """
        self.request_stop()
        task = self._task
        if not wait or task is None:
            return
        await asyncio.wait({task}, timeout=timeout)
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    async def __aenter__(self) -> AsyncWorker:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        on_stop_signal(signum, self._signals - 1, self.grace, self.request_stop)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
