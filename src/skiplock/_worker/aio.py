"""The asyncio runner: ``async def`` handlers as tasks on the loop (cancellable), sync ones on
the runner's threads. Ends are reported on a thread."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._core.job import Job
from ..errors import Cancelled
from .joblog import last_line
from .ledger import Ledger
from .outcome import Outcomes
from .runners import Handler, report, run_handler

__all__ = ["AsyncioRunner", "is_async_handler"]


def _cancelling(task: asyncio.Task[None]) -> bool:
    """Whether *task* itself was asked to cancel (Python 3.11+; False before)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and cancelling() > 0


def is_async_handler(handler: Handler) -> bool:
    """True for an ``async def`` function, or a partial or object of one."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 - the method, not callable()
    )


class AsyncioRunner:
    """Runs handlers on the loop given to :meth:`bind`."""

    def __init__(
        self, handler: Handler, outcomes: Outcomes, ledger: Ledger, concurrency: int
    ) -> None:
        self.handler = handler
        self.outcomes = outcomes
        self.ledger = ledger
        self.is_async = is_async_handler(handler)
        self.loop: asyncio.AbstractEventLoop | None = None
        # one thread per slot: a sync handler and its report run on one; an async
        # handler's report (a failed attempt is written there) on any
        self.threads = ThreadPoolExecutor(concurrency, thread_name_prefix="skiplock-runner")
        #: ``concurrency`` async handlers at once; jobs claimed ahead wait for a slot here
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: dict[int, asyncio.Task[None]] = {}
        #: jobs whose task this runner cancelled (timeout, grace, cancel request)
        self._stopped: set[int] = set()
        # jobs handed over by the producer, spawned by one loop callback per batch (one
        # wake-up of the loop per claim, not per job); the lock is held for a list swap
        self._inbox: list[Job] = []
        self._inbox_lock = threading.Lock()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def submit(self, job: Job) -> None:
        assert self.loop is not None, "bind() the loop before the producer starts"
        with self._inbox_lock:
            self._inbox.append(job)
            if len(self._inbox) > 1:  # a callback is scheduled already
                return
        self.loop.call_soon_threadsafe(self._spawn_inbox)

    def abandon(self, job: Job) -> None:
        if self.is_async and self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._cancel, job.id)

    def timed_out(self, job: Job) -> None:
        self.abandon(job)

    def cancel(self, job: Job) -> None:
        """Cancel *job*'s ``async def`` handler's task; a thread is not stopped."""
        self.abandon(job)

    def close(self) -> None:
        pass  # the pool ends with AsyncWorker.run (see shutdown_threads)

    def shutdown_threads(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)

    async def run_one(self, job: Job) -> None:
        """Run *job*'s handler on the running loop; report its end."""
        await self._execute(job)

    def _run_in_thread(self, job: Job) -> None:
        if self.ledger.begin(job):  # False: given back while it waited
            run_handler(self.handler, self.outcomes, job)

    # -- on the loop ----------------------------------------------------------------------

    def _spawn_inbox(self) -> None:
        assert self.loop is not None
        with self._inbox_lock:
            jobs, self._inbox = self._inbox, []
        for job in jobs:  # each task lists itself in _tasks (see _run)
            self.loop.create_task(self._execute(job), name=f"skiplock-job-{job.id}")

    def _cancel(self, job_id: int) -> None:
        task = self._tasks.get(job_id)
        if task is not None:
            self._stopped.add(job_id)
            task.cancel()

    async def _execute(self, job: Job) -> None:
        assert self.loop is not None
        # Listed by the task itself, not by _spawn_inbox: a task cancelled before its first step
        # would never run this body, and its job would never be reported. A cancel request
        # that comes before this line is seen by raise_if_cancelled below.
        task = asyncio.current_task()
        assert task is not None
        self._tasks[job.id] = task
        try:
            if not self.is_async:  # the handler and its report, on one pool thread
                await self.loop.run_in_executor(self.threads, self._run_in_thread, job)
                return
            result: Any = None
            error: BaseException | None = None
            begun = False
            try:
                async with self._slots:
                    if not self.ledger.begin(job):  # given back while it waited
                        return
                    begun = True
                    job.raise_if_cancelled()
                    result = await self.handler(job)
            except asyncio.CancelledError as exc:
                # cancelled while it waited for a slot (a cancel request of a job claimed
                # ahead): it is begun now, to be reported like one cancelled while running
                if not begun and not self.ledger.begin(job):
                    return
                error = exc  # given up by the worker: nothing is written, the lease brings it back
                if job.cancel_requested and not job.lost:  # stopped on the job's cancel request
                    error = Cancelled(f"job {job.id} was cancelled: its task was cancelled")
                    error.__cause__ = exc
                elif job.id not in self._stopped and not _cancelling(task):
                    # neither this runner nor the loop cancelled the task: the handler's own
                    # CancelledError (it awaited a task cancelled elsewhere), a failed attempt
                    error = RuntimeError(f"the handler raised {last_line(exc)}")
                    error.__cause__ = exc
            except BaseException as exc:
                error = exc
        finally:
            self._tasks.pop(job.id, None)
            self._stopped.discard(job.id)
        if error is None and self.outcomes.returned(job, result):
            return  # queued for the completer: no write, so no thread hop
        # whatever the handler raised (SystemExit too) is its job's outcome, never this
        # task's: a task that raised SystemExit or KeyboardInterrupt would stop the loop
        end = functools.partial(report, self.outcomes, job, result, error)
        try:
            await self.loop.run_in_executor(self.threads, end)
        except RuntimeError:  # the pool has shut down: the worker is gone, the job lost
            end()
