"""Tasks by name: ``@app.task`` registers a function, ``task.defer(...)`` enqueues a call::

    app = skiplock.App()                       # URL from $SKIPLOCK_URL, or App(url)

    @app.task(queue="email", max_attempts=5, timeout=60)
    def send_welcome(to: str) -> None:
        ...

    send_welcome.defer("ada@example.com")      # {"task": "send_welcome", "args": [...]}
    app.worker(concurrency=8).run()            # or: skiplock worker myapp:app

Any process that knows a task's name can enqueue it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, KeysView, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

from ._core.checks import MAX_KEY_CONCURRENCY, integer, rate, seconds_or_none, text
from ._core.checks import queue_limits as queue_limits_checked
from ._core.checks import rate_limits as rate_limits_checked
from ._core.job import Job
from ._core.sql import TableName
from ._shell.settings import QueueSettings
from ._worker.runners import Middleware, is_async_handler
from .drivers.url import parse_url
from .errors import ConfigurationError, Discard, JobFailed
from .periodic import PERIODIC, Schedule, tick_kwargs
from .queue import DEFAULT_TABLE, Queue
from .queue_async import AsyncQueue
from .worker import Worker
from .worker_async import AsyncWorker
from .workflow import PARENT_ARG, Signature, parent_argument

__all__ = ["App", "Task"]


@dataclass
class Task:
    """A registered function and the options its jobs get."""

    app: App
    fn: Callable[..., Any]
    name: str
    queue: str = "default"
    max_attempts: int = 5
    priority: int = 0
    timeout: float | None = None
    #: pass the :class:`~skiplock.Job` as the first argument (for ``job.idempotency_key``)
    pass_job: bool = False
    #: the ``key_concurrency`` of its jobs enqueued with a ``key`` (None: 1, strict order)
    key_concurrency: int | None = None
    #: the ``key_rate`` ``(N, per)`` of its jobs enqueued with a ``key`` (None: no rate)
    key_rate: tuple[int, float] | None = None
    #: registered with default options by ``@app.periodic`` on a plain function: an
    #: ``@app.task(...)`` above it registers it again with its options
    _by_periodic: bool = field(default=False, repr=False, compare=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function here and now (no queue)."""
        return self.fn(*args, **kwargs)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A call for a workflow (:func:`skiplock.chain`); it gets the previous step's
        result first."""
        return Signature(self, args, kwargs)

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """:meth:`s` that does not get the previous step's result (immutable)."""
        return Signature(self, args, kwargs, immutable=True)

    def defer(self, *args: Any, **kwargs: Any) -> int:
        """Enqueue a call with these arguments (JSON); return the job id."""
        return self.enqueue(args, kwargs)

    def enqueue(
        self,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> int:
        """Enqueue with :meth:`Queue.enqueue`'s options (``delay``, ``key``, ``conn`` …)
        over the task's own: ``task.enqueue(args, kwargs, key="customer-42")``."""
        return self.app.enqueue(self.name, args, kwargs, **options)

    def call(self, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Enqueue a call and wait for it: the function's result. Raises
        :class:`~skiplock.JobFailed` (``.job.last_error``) if the job ended failed or
        cancelled, ``TimeoutError`` after *timeout* seconds (the job stays queued),
        :class:`~skiplock.ConfigurationError` for a bad *timeout*, before enqueueing."""
        limit = seconds_or_none(timeout, "timeout")
        return _result(self.app.queue.wait(self.defer(*args, **kwargs), timeout=limit))

    async def call_async(self, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """:meth:`call` from asyncio code, on the app's :class:`~skiplock.AsyncQueue`."""
        limit = seconds_or_none(timeout, "timeout")
        job_id = await self.defer_async(*args, **kwargs)
        return _result(await self.app.async_queue.wait(job_id, timeout=limit))

    async def defer_async(self, *args: Any, **kwargs: Any) -> int:
        """:meth:`defer` from asyncio code, on the app's :class:`~skiplock.AsyncQueue`."""
        return await self.enqueue_async(args, kwargs)

    async def enqueue_async(
        self,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> int:
        """:meth:`enqueue` on the app's AsyncQueue (``conn=``: an asyncio connection or a
        SQLAlchemy ``AsyncSession``)."""
        payload, options = self.app.call_of(self.name, args, kwargs, options)
        return await self.app.async_queue.enqueue(payload, **options)


def _result(job: Job) -> Any:
    if job.status != "done":
        raise JobFailed(job)
    return job.result


class App:
    """A registry of tasks on one queue table, at ``$SKIPLOCK_URL`` unless given; nothing
    connects before the first use. ``middleware``: ``mw(job, call_next)`` functions around
    every task call (docs/observability.md). Given a queue, the app makes its other half
    from its settings; *table* and limits beside it raise
    :class:`~skiplock.ConfigurationError`."""

    def __init__(
        self,
        url: str | Queue | AsyncQueue | None = None,
        *,
        table: str | None = None,
        queue_limits: Mapping[str, int] | None = None,
        middleware: Sequence[Middleware] = (),
        rate_limits: Mapping[str, tuple[int, float]] | None = None,
    ) -> None:
        self._queue: Queue | None = url if isinstance(url, Queue) else None
        self._async_queue: AsyncQueue | None = url if isinstance(url, AsyncQueue) else None
        given = self._queue or self._async_queue
        self._given = given  # the user's: never closed by the app
        #: the settings of both halves: the given queue's, else made at first use (from
        #: ``$SKIPLOCK_URL`` when no URL is given, read then)
        self._settings: QueueSettings | None = None if given is None else given.settings
        if given is None and url is not None and not isinstance(url, str):
            raise ConfigurationError(
                "App() takes a database URL, a skiplock.Queue or a skiplock.AsyncQueue, not "
                f"{type(url).__name__}"
            )
        self._url: str | None = url if isinstance(url, str) else None
        self._given_database = given is not None or url is not None
        self._table = DEFAULT_TABLE if table is None else table
        #: queue name → most jobs running at once (see :func:`skiplock.connect`); given
        #: with a Queue, that Queue's own limits apply
        self._queue_limits = queue_limits_checked(queue_limits)
        self._rate_limits = rate_limits_checked(rate_limits)
        if given is not None:
            mine = {"table": table, "queue_limits": queue_limits, "rate_limits": rate_limits}
            for name, value in mine.items():
                if value is not None:
                    raise ConfigurationError(
                        f"pass {name} to the queue given to App (skiplock.connect(url, "
                        f"{name}=...)), not to App: the app uses the queue's own"
                    )
        if isinstance(middleware, (str, bytes)) or not isinstance(middleware, Sequence):
            raise ConfigurationError(
                "middleware must be a list of functions mw(job, call_next), not "
                f"{type(middleware).__name__}"
            )
        #: run around every task call by this app's workers (checked by the worker: sync
        #: ones for :meth:`worker`, ``async def`` ones for :meth:`async_worker`), the first
        #: outermost, outside a worker's own ``middleware=``
        self.middleware: list[Middleware] = list(middleware)
        self.tasks: dict[str, Task] = {}
        #: periodic schedules by name; every worker of this app enqueues their ticks
        self.schedules: dict[str, Schedule] = {}

    @property
    def _queue_settings(self) -> QueueSettings:
        """The settings both queues are made with, checked at first use."""
        if self._settings is None:
            self._settings = QueueSettings.check(
                self._url,
                table=self._table,
                queue_limits=self._queue_limits,
                rate_limits=self._rate_limits,
            )
        return self._settings

    @property
    def queue(self) -> Queue:
        """The app's :class:`~skiplock.Queue`: the one given, else made at first use."""
        if self._queue is None:
            self._queue = Queue._of(self._queue_settings)
        return self._queue

    @property
    def async_queue(self) -> AsyncQueue:
        """The app's :class:`~skiplock.AsyncQueue` on the same settings as :attr:`queue`,
        made at first use; it belongs to the event loop that first uses it."""
        if self._async_queue is None:
            self._async_queue = AsyncQueue._of(self._queue_settings)
        return self._async_queue

    @property
    def has_url(self) -> bool:
        """True when given a URL or a queue, not ``$SKIPLOCK_URL``."""
        return self._given_database

    def use(self, url: str | None = None, *, table: str | None = None) -> None:
        """Point the app at another URL or *table* (None: unchanged), as the CLI's ``--url``
        does."""
        if url is None and table is None:
            return
        settings = self._settings
        if settings is not None:  # the given queue's, or made already
            if url is not None:
                settings = replace(settings, given_url=url, url=parse_url(url))
            if table is not None:
                settings = replace(settings, table=TableName.parse(table))
        else:
            if table is not None:
                TableName.parse(table)
            self._url = url if url is not None else self._url
            self._table = table if table is not None else self._table
        if self._queue is not None and self._queue is not self._given:
            self._queue.close()  # made by the app; a queue the user gave stays theirs, open
        self._queue = None
        self._async_queue = None
        self._settings = settings
        self._given_database = self._given_database or url is not None

    @overload
    def task(self, fn: Callable[..., Any], /) -> Task: ...

    @overload
    def task(
        self,
        *,
        name: str | None = None,
        queue: str = "default",
        max_attempts: int = 5,
        priority: int = 0,
        timeout: float | None = None,
        pass_job: bool = False,
        key_concurrency: int | None = None,
        key_rate: tuple[int, float] | None = None,
    ) -> Callable[[Callable[..., Any]], Task]: ...

    def task(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        queue: str = "default",
        max_attempts: int = 5,
        priority: int = 0,
        timeout: float | None = None,
        pass_job: bool = False,
        key_concurrency: int | None = None,
        key_rate: tuple[int, float] | None = None,
    ) -> Task | Callable[[Callable[..., Any]], Task]:
        """Register *fn* as a task (``@app.task`` or ``@app.task(queue=...)``), named
        ``module.function`` unless *name* is given. *timeout*: seconds a call may run;
        *pass_job*: the job comes first; *key_concurrency* and *key_rate* apply to calls
        enqueued with a ``key`` (see :meth:`Queue.enqueue`). Raises
        :class:`~skiplock.ConfigurationError` for an option an enqueue would refuse."""
        timeout = seconds_or_none(timeout, "timeout", strict=True)
        text(queue, "queue")
        integer(max_attempts, "max_attempts", 1)
        integer(priority, "priority", -(2**31))
        if name is not None:
            text(name, "the task's name")
        if key_concurrency is not None:
            integer(key_concurrency, "key_concurrency", 1, MAX_KEY_CONCURRENCY)
        if key_rate is not None:
            key_rate = rate(key_rate, "key_rate")

        def register(f: Callable[..., Any]) -> Task:
            periodic = self._periodic_task(f)
            if periodic is not None:  # @app.task above @app.periodic: this task's options
                f = periodic.fn
                del self.tasks[periodic.name]
            task_name = name or f"{f.__module__}.{f.__qualname__}"
            if task_name in self.tasks:
                if periodic is not None:
                    self.tasks[periodic.name] = periodic
                raise ConfigurationError(f"a task named {task_name!r} is already registered")
            t = Task(
                self,
                f,
                task_name,
                queue,
                max_attempts,
                priority,
                timeout,
                pass_job,
                key_concurrency,
                key_rate,
            )
            self.tasks[task_name] = t
            if periodic is not None:
                self._reschedule(periodic.name, t)
            return t

        return register(fn) if fn is not None else register

    def _periodic_task(self, target: object) -> Task | None:
        """*target* when ``@app.periodic`` registered it with default options, None for a
        function; ``ConfigurationError`` for another Task."""
        if not isinstance(target, Task):
            return None
        if target.app is not self or not target._by_periodic:
            raise ConfigurationError(
                f"{target.name!r} is a task already: @app.task takes a function (put "
                "@app.task once, directly on the function; @app.periodic goes above or below it)"
            )
        return target

    def _reschedule(self, old: str, task: Task) -> None:
        """The schedules of task *old* now run *task*."""
        for key, schedule in list(self.schedules.items()):
            if schedule.task != old:
                continue
            renamed = task.name if schedule.name == old else schedule.name
            if renamed != key and renamed in self.schedules:
                raise ConfigurationError(
                    f"a schedule named {renamed!r} exists already: pass name=... to "
                    "@app.periodic to tell them apart"
                )
            del self.schedules[key]
            self.schedules[renamed] = replace(
                schedule,
                name=renamed,
                task=task.name,
                queue=task.queue,
                priority=task.priority,
                max_attempts=task.max_attempts,
            )

    def periodic(self, *, cron: str, **options: Any) -> Callable[[Task | Callable[..., Any]], Task]:
        """``@app.periodic(cron=...)``: :meth:`schedule` this task (above or below
        ``@app.task``)."""

        def register(target: Task | Callable[..., Any]) -> Task:
            if isinstance(target, Task):
                task = target
            else:
                task = self.task(target)
                task._by_periodic = True
            self.schedule(task, cron=cron, **options)
            return task

        return register

    def schedule(
        self,
        task: Task | str,
        *,
        cron: str,
        timezone: str = "UTC",
        name: str | None = None,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        catch_up: bool | int = False,
        tick_arg: str | None = "tick",
    ) -> Schedule:
        """Enqueue a call of *task* at every tick of *cron* in *timezone*, once per tick
        however many workers run (docs/worker.md). See :class:`~skiplock.Schedule` for
        *name*, *catch_up* and *tick_arg*."""
        found = task if isinstance(task, Task) else self.tasks.get(task)
        if found is None:
            raise ConfigurationError(f"unknown task {task!r}: register it with @app.task first")
        schedule = Schedule(
            name=found.name if name is None else name,
            cron=cron,
            task=found.name,
            timezone=timezone,
            args=tuple(args),
            kwargs=dict(kwargs or {}),
            queue=found.queue,
            priority=found.priority,
            max_attempts=found.max_attempts,
            catch_up=catch_up,
            tick_arg=tick_arg,
        )
        if schedule.name in self.schedules:
            raise ConfigurationError(
                f"a schedule named {schedule.name!r} exists already: pass name=... to tell "
                "them apart"
            )
        self.schedules[schedule.name] = schedule
        return schedule

    def enqueue(
        self,
        name: str,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> int:
        """Enqueue a call of task *name*; a name this app does not know needs ``queue``."""
        payload, options = self.call_of(name, args, kwargs, options)
        return self.queue.enqueue(payload, **options)

    def call_of(
        self,
        name: str,
        args: Sequence[Any],
        kwargs: dict[str, Any] | None,
        options: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The payload of a call of task *name* and its enqueue options, the task's unless
        given."""
        task = self.tasks.get(name)
        if task is None and "queue" not in options:
            raise ConfigurationError(
                f"unknown task {name!r}: register it with @app.task, or pass queue=... "
                f"(known: {', '.join(sorted(self.tasks)) or 'none'})"
            )
        if task is not None:
            options.setdefault("queue", task.queue)
            options.setdefault("max_attempts", task.max_attempts)
            options.setdefault("priority", task.priority)
            if options.get("key") is not None and task.key_concurrency is not None:
                options.setdefault("key_concurrency", task.key_concurrency)
            if options.get("key") is not None and task.key_rate is not None:
                options.setdefault("key_rate", task.key_rate)
        return self.payload_of(name, args, kwargs), options

    @staticmethod
    def payload_of(name: str, args: Sequence[Any], kwargs: dict[str, Any] | None) -> dict[str, Any]:
        """The payload of a call of task *name*."""
        return {"task": name, "args": list(args), "kwargs": dict(kwargs or {})}

    def handle(self, job: Job) -> Any:
        """The worker's handler: call the job's task (an ``async def`` one on a loop of its
        own)."""
        fn, args, kwargs = self._call_of(job)
        if is_async_handler(fn):
            return asyncio.run(fn(*args, **kwargs))
        return fn(*args, **kwargs)

    async def handle_async(self, job: Job) -> Any:
        """The asyncio worker's handler: ``await`` the task, a sync one in a thread."""
        fn, args, kwargs = self._call_of(job)
        if is_async_handler(fn):
            return await fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)

    @property
    def task_names(self) -> KeysView[str]:
        """The registered tasks' names, live: the only names metrics label a job with."""
        return self.tasks.keys()

    @property
    def has_async_tasks(self) -> bool:
        return any(is_async_handler(t.fn) for t in self.tasks.values())

    def _call_of(self, job: Job) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
        """*job*'s task and arguments; Discard for a job that can never run here."""
        payload = job.payload
        if not isinstance(payload, dict) or not isinstance(payload.get("task"), str):
            raise Discard(f"job {job.id} is not a task call: no 'task' name in its payload")
        task = self.tasks.get(payload["task"])
        if task is None:
            known = ", ".join(sorted(self.tasks)) or "none"
            raise Discard(f"no task named {payload['task']!r:.100} in this app (known: {known})")
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise Discard(f"job {job.id}: 'args' must be a list and 'kwargs' an object")
        if PERIODIC in payload:  # a scheduled job: its tick, when the task asks for it
            kwargs = {**kwargs, **tick_kwargs(payload)}
        if PARENT_ARG in payload:  # a workflow step: its parents' results in front
            fed, value = parent_argument(payload, job)
            if fed:
                args = [value, *args]
        return task.fn, ([job, *args] if task.pass_job else list(args)), kwargs

    def timeout_of(self, job: Job) -> float | None:
        """The timeout of the job's task (None: none, or not a task of this app)."""
        name = job.payload.get("task") if isinstance(job.payload, dict) else None
        task = self.tasks.get(name) if isinstance(name, str) else None
        return None if task is None else task.timeout

    def worker(self, *, queues: Sequence[str] | None = None, **options: Any) -> Worker:
        """A :class:`~skiplock.Worker` for this app's tasks, on every queue they name unless
        *queues*; other options go to the Worker."""
        return Worker(self.queue, self.handle, **self._worker_options(queues, options))

    def async_worker(self, *, queues: Sequence[str] | None = None, **options: Any) -> AsyncWorker:
        """An :class:`~skiplock.AsyncWorker` for this app's tasks; options as
        :meth:`worker`."""
        return AsyncWorker(self.queue, self.handle_async, **self._worker_options(queues, options))

    def _worker_options(
        self, queues: Sequence[str] | None, options: dict[str, Any]
    ) -> dict[str, Any]:
        if queues is None:
            queues = self._task_queues()
        options.setdefault("timeout", self.timeout_of)
        options.setdefault("periodic", list(self.schedules.values()))
        if self.middleware:
            options["middleware"] = [*self.middleware, *options.get("middleware", ())]
        return {"queues": list(queues), **options}

    def _task_queues(self) -> list[str]:
        """Every queue a task names (``default`` with none)."""
        return sorted({t.queue for t in self.tasks.values()}) or ["default"]
