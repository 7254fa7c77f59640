"""Workflows as Celery users write them (docs/workflows.md): ``task.s(...)`` signatures,
:func:`chain`, :func:`group` and :meth:`Group.then` (a chord), over ``enqueue(...,
after=[...])``. In a chain each step gets the previous step's result (a group's: the list of
them) as its first argument, unless made with ``task.si(...)``. ``.enqueue()`` writes every
job in one transaction and returns a :class:`WorkflowHandle`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ._core.checks import EnqueueOptions, seconds, seconds_or_none
from ._core.job import Job
from ._workflow_io import wait_workflow, write_workflow
from ._workflow_io_async import Writer, wait_workflow_async, write_workflow_async
from .errors import ConfigurationError, SkiplockError
from .queue import Queue
from .queue_async import AsyncQueue

__all__ = ["Chain", "Group", "Signature", "WorkflowFailed", "WorkflowHandle", "chain", "group"]

#: the payload key that names the parents whose results go in front of the arguments
PARENT_ARG = "parent_arg"


class _App(Protocol):
    """What a workflow uses of its tasks' app (a :class:`~skiplock.App`)."""

    @property
    def queue(self) -> Queue: ...

    @property
    def async_queue(self) -> AsyncQueue: ...

    def call_of(
        self,
        name: str,
        args: Sequence[Any],
        kwargs: dict[str, Any] | None,
        options: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def payload_of(
        self, name: str, args: Sequence[Any], kwargs: dict[str, Any] | None
    ) -> dict[str, Any]: ...


class _Task(Protocol):
    """What a workflow uses of a task (a :class:`~skiplock.Task`)."""

    @property
    def name(self) -> str: ...

    @property
    def app(self) -> _App: ...


class WorkflowFailed(SkiplockError):
    """A workflow's last job ended failed or cancelled (:meth:`WorkflowHandle.wait`)."""

    def __init__(self, message: str, job: Job) -> None:
        super().__init__(message)
        #: the job that ended failed or cancelled
        self.job = job


@dataclass(frozen=True)
class _Feed:
    """The parents whose results a step gets first (a group's: as a list)."""

    ids: tuple[int, ...]
    as_list: bool


def _options(options: dict[str, Any], after: Sequence[int], children: bool) -> EnqueueOptions:
    """A request's checked options, with parents *after* and *children* (a step follows)."""
    checked = EnqueueOptions.check(**options)
    if not after:
        return replace(checked, children=children)
    # ids this transaction's inserts returned: no check of each one, as ``after`` gets
    return replace(checked, children=children, after=tuple(after), own_parents=True)


class _Node:
    """One part of a workflow: ``_write`` yields its requests and returns its result's ids."""

    def _write(self, after: Sequence[int], feed: _Feed | None, children: bool) -> Writer:
        raise NotImplementedError

    def _is_group(self) -> bool:
        return False

    def enqueue(self, *, conn: Any = None) -> WorkflowHandle:
        """Write every job of the workflow in one transaction (yours with ``conn=``) on the
        app's queue; a handle on them."""
        queue = self._app().queue
        ids, tail = write_workflow(queue, self._write((), None, False), conn)
        return WorkflowHandle(ids, tail, queue, self._is_group())

    async def enqueue_async(self, *, conn: Any = None) -> WorkflowHandle:
        """:meth:`enqueue` on the app's :class:`~skiplock.AsyncQueue`."""
        queue = self._app().async_queue
        ids, tail = await write_workflow_async(queue, self._write((), None, False), conn)
        return WorkflowHandle(ids, tail, queue, self._is_group())

    def _app(self) -> _App:
        raise NotImplementedError


@dataclass(frozen=True)
class Signature(_Node):
    """A call of *task* not yet enqueued (``task.s(...)``); *immutable* (``task.si(...)``):
    it does not get the previous step's result."""

    task: _Task
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    immutable: bool = False

    def _app(self) -> _App:
        return self.task.app

    def _call(self, feed: _Feed | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The job's payload and its task's enqueue options."""
        payload, options = self.task.app.call_of(self.task.name, self.args, self.kwargs, {})
        return self._fed(payload, feed), options

    def _payload(self, feed: _Feed | None) -> dict[str, Any]:
        """The job's payload alone (a group's batch has the options)."""
        return self._fed(self.task.app.payload_of(self.task.name, self.args, self.kwargs), feed)

    def _fed(self, payload: dict[str, Any], feed: _Feed | None) -> dict[str, Any]:
        if feed is not None and not self.immutable:
            payload[PARENT_ARG] = {"ids": list(feed.ids), "list": feed.as_list}
        return payload

    def _write(self, after: Sequence[int], feed: _Feed | None, children: bool) -> Writer:
        payload, options = self._call(feed)
        return (yield [payload], _options(options, after, children))

    def then(self, step: _Node) -> Chain:
        """This call, then *step* (a chain of two)."""
        return chain(self, step)


@dataclass(frozen=True)
class Chain(_Node):
    """Steps run one after another (:func:`chain`)."""

    steps: tuple[_Node, ...]

    def _app(self) -> _App:
        return self.steps[0]._app()

    def _is_group(self) -> bool:
        return self.steps[-1]._is_group()

    def _write(self, after: Sequence[int], feed: _Feed | None, children: bool) -> Writer:
        tail = list(after)
        last = len(self.steps) - 1
        for n, step in enumerate(self.steps):
            tail = yield from step._write(tail, feed, children or n < last)
            feed = _Feed(tuple(tail), step._is_group())
        return tail

    def then(self, step: _Node) -> Chain:
        """This chain, then *step*."""
        return chain(self, step)


@dataclass(frozen=True)
class Group(_Node):
    """Members run side by side (:func:`group`); its result is the list of theirs."""

    members: tuple[_Node, ...]

    def _app(self) -> _App:
        return self.members[0]._app()

    def _is_group(self) -> bool:
        return True

    def _write(self, after: Sequence[int], feed: _Feed | None, children: bool) -> Writer:
        tails: list[list[int]] = [[] for _ in self.members]
        # Plain calls sharing their enqueue options go in one batch (enqueue_many);
        # a chain or group inside is written on its own.
        batches: dict[str, tuple[list[int], list[dict[str, Any]], dict[str, Any]]] = {}
        for n, member in enumerate(self.members):
            if isinstance(member, Signature):
                # a call's options are its task's (call_of), so the name tells them apart:
                # they are read once per batch
                slot = batches.get(member.task.name)
                if slot is None:
                    payload, options = member._call(feed)
                    slot = batches[member.task.name] = ([], [], options)
                else:
                    payload = member._payload(feed)
                slot[0].append(n)
                slot[1].append(payload)
            else:
                tails[n] = yield from member._write(after, feed, children)
        for places, payloads, options in batches.values():
            ids = yield payloads, _options(options, after, children)
            for n, job_id in zip(places, ids, strict=True):
                tails[n] = [job_id]
        return [job_id for tail in tails for job_id in tail]

    def then(self, step: _Node) -> Chain:
        """A chord: *step* runs once every member is done, with the list of their results."""
        return chain(self, step)


def chain(*steps: _Node) -> Chain:
    """Steps run one after another, each getting the previous one's result first (unless
    made with ``task.si``). A step that fails or is cancelled cancels the steps after it."""
    if not steps or not all(isinstance(s, _Node) for s in steps):
        raise ConfigurationError("chain() takes one or more task.s(...), chains or groups")
    return Chain(tuple(steps))


def group(*members: _Node) -> Group:
    """Members run side by side; their result is the list of theirs, in order."""
    if not members or not all(isinstance(m, _Node) for m in members):
        raise ConfigurationError("group() takes one or more task.s(...), chains or groups")
    return Group(tuple(members))


class WorkflowHandle:
    """An enqueued workflow's jobs: ``ids`` (in the order written), ``id`` (the last one),
    and :meth:`wait`."""

    def __init__(self, ids: list[int], tail: list[int], queue: Any, as_list: bool) -> None:
        self.ids = ids
        self.tail = tail
        #: the Queue (``wait``) or AsyncQueue (``wait_async``) that wrote the jobs
        self._queue: Any = queue
        self._as_list = as_list

    @property
    def id(self) -> int:
        return self.ids[-1]

    def __repr__(self) -> str:
        return f"<skiplock.WorkflowHandle ids={self.ids[:5]}{'…' if len(self.ids) > 5 else ''}>"

    def _result(self, jobs: list[Job | None]) -> tuple[bool, Any]:
        """(ended, result) of the tail's jobs as read."""
        results = []
        for job_id, job in zip(self.tail, jobs, strict=True):
            if job is None:
                raise SkiplockError(f"job {job_id} of the workflow no longer exists")
            if job.status in ("failed", "cancelled"):
                why = f": {job.last_error}" if job.last_error else ""
                raise WorkflowFailed(f"job {job.id} of the workflow ended {job.status}{why}", job)
            if job.status != "done":
                return False, None
            results.append(job.result)
        return True, (results if self._as_list else results[0])

    def wait(self, timeout: float | None = None, *, interval: float = 0.5) -> Any:
        """The result of the workflow's last jobs (a list for a group), polled with a
        back-off up to *interval* seconds. Raises :class:`WorkflowFailed` when one ended
        failed or cancelled, ``TimeoutError`` after *timeout* seconds."""
        return wait_workflow(self._queue, self, *_wait_times(timeout, interval))

    async def wait_async(self, timeout: float | None = None, *, interval: float = 0.5) -> Any:
        """:meth:`wait` for a workflow enqueued with ``enqueue_async``."""
        return await wait_workflow_async(self._queue, self, *_wait_times(timeout, interval))


def _wait_times(timeout: object, interval: object) -> tuple[float | None, float]:
    """A wait's checked ``(timeout, interval)``."""
    return seconds_or_none(timeout, "timeout"), seconds(interval, "interval", strict=True)


def parent_argument(payload: dict[str, Any], job: Job) -> tuple[bool, Any]:
    """For the app's handler: ``(True, value)`` when *payload* asks for its parents' results
    in front of its arguments."""
    feed = payload.get(PARENT_ARG)
    if not isinstance(feed, dict) or not isinstance(feed.get("ids"), list):
        return False, None
    results = [job.parent_results.get(int(i)) for i in feed["ids"]]
    if feed.get("list"):
        return True, results
    return True, results[0] if results else None
