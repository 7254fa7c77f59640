"""Where handlers run. A :class:`Runner` gets each claimed job and reports its end once
(:meth:`~.outcomes.OutcomeWriter.handler_ended`): :class:`ThreadRunner` (the Worker's threads),
:class:`AsyncioRunner` (``async def`` handlers as tasks on a loop, sync ones on its threads).
Around each handler call: the middleware, the worker's layers and the :data:`INSTRUMENTS`."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import queue as queue_module
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from .._core.job import Job
from ..errors import Cancelled, ConfigurationError
from .outcomes import OutcomeWriter, last_line
from .state import HeldJobs

__all__ = [
    "INSTRUMENTS",
    "AsyncioRunner",
    "Handler",
    "Layer",
    "Middleware",
    "Runner",
    "ThreadRunner",
    "add_instrument",
    "chain",
    "check_middleware",
    "is_async_handler",
    "remove_instrument",
    "report",
    "run_handler",
]

log = logging.getLogger("skiplock.worker")


Handler = Callable[[Job], Any]


class Runner(Protocol):
    """Where handlers run. Called from the producer's thread only."""

    def submit(self, job: Job) -> None:
        """Run *job*'s handler once a slot is free; return at once."""

    def abandon(self, job: Job) -> None:
        """*job* was given up: stop its handler if possible."""

    def timed_out(self, job: Job) -> None:
        """*job* passed its timeout: stop it if possible."""

    def cancel(self, job: Job) -> None:
        """A cancel was requested: stop *job*'s handler if possible."""

    def close(self) -> None:
        """No more jobs: threads end once idle."""


class ThreadRunner:
    """Handlers on up to ``concurrency`` reused threads."""

    def __init__(self, handler: Handler, outcomes: OutcomeWriter, jobs: HeldJobs) -> None:
        self.handler = handler
        self.outcomes = outcomes
        self.jobs = jobs
        self._jobs: queue_module.SimpleQueue[Job | None] = queue_module.SimpleQueue()
        self._threads = 0

    def submit(self, job: Job) -> None:
        # Only the producer adds to ``active`` and only it calls this: a runner that ends
        # a job meanwhile is idle and takes the next one, so this count is enough.
        spawn = self._threads < min(self.jobs.active, self.jobs.concurrency)
        if spawn:
            self._threads += 1
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._serve, name="skiplock-runner", daemon=True).start()

    def abandon(self, job: Job) -> None:
        pass  # a thread cannot be stopped: it keeps its slot until the handler returns

    def timed_out(self, job: Job) -> None:
        pass  # the same

    def cancel(self, job: Job) -> None:
        pass  # the handler sees job.cancel_requested (or job.raise_if_cancelled())

    def close(self) -> None:
        for _ in range(self._threads):
            self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self.jobs.begin(job):  # False: given back while it waited
                self.run_one(job)

    def run_one(self, job: Job) -> None:
        run_handler(self.handler, self.outcomes, job)


def run_handler(handler: Handler, outcomes: OutcomeWriter, job: Job) -> None:
    """Run a sync handler here and report its end. Never raises."""
    try:
        if job.cancel_requested:
            job.raise_if_cancelled()
        result = handler(job)
    except asyncio.CancelledError as exc:
        # no worker cancels a thread: this is the handler's own failure (an asyncio.run
        # inside it was cancelled, say), not a task given up, which writes nothing
        failure = RuntimeError(f"the handler raised {last_line(exc)}")
        failure.__cause__ = exc
        report(outcomes, job, error=failure)
    except BaseException as exc:
        report(outcomes, job, error=exc)
    else:
        report(outcomes, job, result)


def report(
    outcomes: OutcomeWriter, job: Job, result: Any = None, error: BaseException | None = None
) -> None:
    """Report *job*'s end; errors are logged, never raised."""
    try:
        if error is not None or not outcomes.returned(job, result):  # returned: the common end
            outcomes.handler_ended(job, result, error)
    except BaseException:
        log.exception("job %d: reporting its end failed; its lease brings it back", job.id)
        try:
            outcomes.settled(job, None)  # no longer held: its heartbeat stops
        except BaseException:
            log.exception("job %d: could not stop holding it", job.id)


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
        self, handler: Handler, outcomes: OutcomeWriter, jobs: HeldJobs, concurrency: int
    ) -> None:
        self.handler = handler
        self.outcomes = outcomes
        self.jobs = jobs
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
        if self.jobs.begin(job):  # False: given back while it waited
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
                    if not self.jobs.begin(job):  # given back while it waited
                        return
                    begun = True
                    job.raise_if_cancelled()
                    result = await self.handler(job)
            except asyncio.CancelledError as exc:
                # cancelled while it waited for a slot (a cancel request of a job claimed
                # ahead): it is begun now, to be reported like one cancelled while running
                if not begun and not self.jobs.begin(job):
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


Middleware = Callable[[Job, Callable[[Job], Any]], Any]
AsyncMiddleware = Callable[[Job, Callable[[Job], Awaitable[Any]]], Awaitable[Any]]


class Layer(Protocol):
    """A part of skiplock run around handlers, sync and async."""

    def around(self, job: Job, call_next: Callable[[Job], Any]) -> Any: ...

    async def around_async(self, job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any: ...


#: process-wide layers (tracing), outermost first; replaced whole, never changed in place,
#: so a running worker reads one consistent tuple per job
INSTRUMENTS: tuple[Layer, ...] = ()


def add_instrument(layer: Layer) -> None:
    """Run *layer* around every handler of this process."""
    global INSTRUMENTS
    INSTRUMENTS = (*INSTRUMENTS, layer)


def remove_instrument(layer: Layer) -> None:
    global INSTRUMENTS
    INSTRUMENTS = tuple(x for x in INSTRUMENTS if x is not layer)


def check_middleware(middleware: object, *, is_async: bool) -> tuple[Middleware, ...]:
    """*middleware*, checked against the handler; else ConfigurationError."""
    if middleware is None:
        return ()
    if isinstance(middleware, (str, bytes)) or not isinstance(middleware, Sequence):
        raise ConfigurationError(
            "middleware must be a list of functions mw(job, call_next), not "
            f"{type(middleware).__name__}"
        )
    for mw in middleware:
        if not callable(mw):
            raise ConfigurationError(
                f"middleware must be functions mw(job, call_next); {mw!r:.80} is not callable"
            )
        name = getattr(mw, "__qualname__", repr(mw))
        if is_async and not is_async_handler(mw):
            raise ConfigurationError(
                f"middleware {name} is not an async def, but the handler is: around an async "
                "handler write `async def mw(job, call_next): return await call_next(job)`"
            )
        if not is_async and is_async_handler(mw):
            raise ConfigurationError(
                f"middleware {name} is an async def, but the handler is sync: use a sync "
                "middleware (or an async handler on an AsyncWorker)"
            )
        _takes_two(mw, name)
    return tuple(middleware)


def _takes_two(mw: Callable[..., Any], name: str) -> None:
    try:
        inspect.signature(mw).bind(None, None)
    except TypeError:
        raise ConfigurationError(
            f"middleware {name} must take two arguments: (job, call_next)"
        ) from None
    except ValueError:  # no signature to read (a builtin): let it be
        pass


def chain(
    handler: Callable[[Job], Any],
    middleware: Sequence[Middleware],
    layers: Sequence[Layer] = (),
) -> Callable[[Job], Any]:
    """The handler wrapped in *middleware*, *layers* and :data:`INSTRUMENTS`."""
    if is_async_handler(handler):
        inner_async: Callable[[Job], Awaitable[Any]] = handler
        for mw in reversed(middleware):
            inner_async = _async_step(mw, inner_async)
        for layer in reversed(layers):
            inner_async = _async_step(layer.around_async, inner_async)
        core_async = inner_async

        async def run_async(job: Job) -> Any:
            outer = INSTRUMENTS
            if not outer:
                return await core_async(job)
            call = core_async
            for layer in reversed(outer):
                call = _async_step(layer.around_async, call)
            return await call(job)

        return run_async

    inner: Callable[[Job], Any] = handler
    for mw in reversed(middleware):
        inner = _step(mw, inner)
    for layer in reversed(layers):
        inner = _step(layer.around, inner)
    core = inner

    def run(job: Job) -> Any:
        outer = INSTRUMENTS
        if not outer:
            return core(job)
        call = core
        for layer in reversed(outer):
            call = _step(layer.around, call)
        return call(job)

    return run


def _step(mw: Middleware, call_next: Callable[[Job], Any]) -> Callable[[Job], Any]:
    def call(job: Job) -> Any:
        return mw(job, call_next)

    return call


def _async_step(
    mw: Callable[[Job, Callable[[Job], Awaitable[Any]]], Awaitable[Any]],
    call_next: Callable[[Job], Awaitable[Any]],
) -> Callable[[Job], Awaitable[Any]]:
    async def call(job: Job) -> Any:
        return await mw(job, call_next)

    return call
