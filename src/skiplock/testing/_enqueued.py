"""``assert_enqueued``: the jobs a test expects to find in a queue, or a readable failure."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.checks import dumps, integer
from .._core.job import STATUSES, Job, Stats
from ..app import App, Task
from ..errors import ConfigurationError
from ..queue import Queue
from ..queue_async import AsyncQueue

__all__ = ["assert_enqueued", "assert_enqueued_async"]

#: *payload* left out (None is a payload of its own: JSON null)
ANY: Any = object()
#: jobs listed in a failure message, at most
SHOWN = 20
_PAGE = 1000


@dataclass(frozen=True)
class _Expected:
    task: str | None
    args: list[Any] | None
    kwargs: dict[str, Any] | None
    payload: Any
    count: int | None
    statuses: list[str] | None

    @classmethod
    def of(
        cls,
        task: Task | str | None,
        args: Sequence[Any] | None,
        kwargs: Mapping[str, Any] | None,
        payload: Any,
        count: int | None,
        status: Sequence[str] | str | None,
    ) -> _Expected:
        """The expectation, checked: ConfigurationError for what can never match."""
        if isinstance(task, Task):
            task = task.name
        if task is not None and not isinstance(task, str):
            raise ConfigurationError(f"task must be a Task or its name, not {task!r:.80}")
        if isinstance(args, (str, bytes)) or not isinstance(args, (Sequence, type(None))):
            raise ConfigurationError(f"args must be a list of arguments, not {args!r:.80}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise ConfigurationError(f"kwargs must be a dict, not {kwargs!r:.80}")
        if payload is not ANY and (task, args, kwargs) != (None, None, None):
            raise ConfigurationError("give payload=, or task= / args= / kwargs=, not both")
        if count is not None:
            integer(count, "count", 0, 2**63 - 1)
        statuses = [status] if isinstance(status, str) else None if status is None else list(status)
        if statuses is not None and (not statuses or any(s not in STATUSES for s in statuses)):
            raise ConfigurationError(
                f"status must be one or more of {', '.join(STATUSES)}, or None, not {status!r:.80}"
            )
        return cls(
            task,
            None if args is None else _json(list(args), "args"),
            None if kwargs is None else _json(dict(kwargs), "kwargs"),
            payload if payload is ANY else _json(payload, "payload"),
            count,
            statuses,
        )

    def differs(self, job: Job) -> list[str]:
        if self.payload is not ANY:
            return [] if job.payload == self.payload else ["payload differs"]
        p = job.payload if isinstance(job.payload, dict) else {}
        found: list[str] = []
        if self.task is not None and p.get("task") != self.task:
            found.append("task differs")
        if self.args is not None and p.get("args") != self.args:
            found.append(f"args {p.get('args')!r} != {self.args!r}")
        if self.kwargs is not None and p.get("kwargs") != self.kwargs:
            found.append(f"kwargs {p.get('kwargs')!r} != {self.kwargs!r}")
        return found

    def matching(self, jobs: list[Job]) -> list[Job] | None:
        """The jobs that match, or None when the expectation fails."""
        found = [j for j in jobs if not self.differs(j)]
        wanted = bool(found) if self.count is None else len(found) == self.count
        return found if wanted else None

    def message(self, jobs: list[Job], stats: Stats, table: str) -> str:
        found = sum(1 for j in jobs if not self.differs(j))
        parts = []
        if self.payload is not ANY:
            parts.append(f"payload={self.payload!r}")
        for name in ("task", "args", "kwargs"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)!r}")
        want = "at least 1 job" if self.count is None else f"{self.count} job(s)"
        states = "all the" if self.statuses is None else f"the {'/'.join(self.statuses)}"
        head = (
            f"expected {want} matching {', '.join(parts) or 'anything'} among {states} "
            f"jobs of table {table}; found {found} matching of {len(jobs)}"
        )
        lines = [head + (":" if jobs else ".")]
        for job in jobs[:SHOWN]:
            why = self.differs(job)
            lines.append(
                f"  job {job.id} [{job.status}, queue {job.queue!r}] {describe(job)}"
                f"  <- {'; '.join(why) if why else 'matches'}"
            )
        if len(jobs) > SHOWN:
            lines.append(f"  ... and {len(jobs) - SHOWN} more")
        others = {
            s: getattr(stats, s)
            for s in ("done", "failed", "cancelled", "running")
            if getattr(stats, s) and (self.statuses is not None and s not in self.statuses)
        }
        if others:
            lines.append(
                "  not looked at: " + ", ".join(f"{n} {s}" for s, n in others.items()) + " job(s)"
            )
        return "\n".join(lines)


def describe(job: Job) -> str:
    """A task call as a call (``tasks.send('ada', retries=3)``), any other payload as JSON."""
    p = job.payload
    if isinstance(p, dict) and isinstance(p.get("task"), str):
        args, kwargs = p.get("args"), p.get("kwargs")
        args = args if isinstance(args, list) else []
        kwargs = kwargs if isinstance(kwargs, dict) else {}
        shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"{p['task']}({', '.join(shown)})"
    return "payload " + json.dumps(p, ensure_ascii=False, sort_keys=True)


def _json(value: Any, what: str) -> Any:
    return json.loads(dumps(value, what))


def _queue_of(target: object) -> Queue:
    if isinstance(target, App):
        return target.queue
    if isinstance(target, Queue):
        return target
    raise ConfigurationError(
        f"expected a skiplock.App or Queue (await assert_enqueued_async() for an AsyncQueue), "
        f"not {type(target).__name__}"
    )


def assert_enqueued(
    target: App | Queue,
    *,
    task: Task | str | None = None,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    payload: Any = ANY,
    count: int | None = None,
    status: Sequence[str] | str | None = "pending",
) -> list[Job]:
    """The jobs of *target* (an App: its current queue; or a Queue) in *status* (default
    ``pending``; None: any) that match *task* (a Task or its name), *args*, *kwargs* or
    *payload* after a JSON round trip, oldest first. A value left None matches anything.

    Raises AssertionError when none matches, or not *count* of them; its message lists the
    jobs there are and how each differs. ConfigurationError for arguments that can never
    match.
    """
    expected = _Expected.of(task, args, kwargs, payload, count, status)
    q = _queue_of(target)

    def page(before: int | None) -> list[Job]:
        return q.list_jobs(status=expected.statuses, limit=_PAGE, before_id=before)

    jobs = _read_all(page)
    found = expected.matching(jobs)
    if found is not None:
        return found
    raise AssertionError(expected.message(jobs, q.stats(), q.table.name))


async def assert_enqueued_async(
    target: App | Queue | AsyncQueue,
    *,
    task: Task | str | None = None,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    payload: Any = ANY,
    count: int | None = None,
    status: Sequence[str] | str | None = "pending",
) -> list[Job]:
    """:func:`assert_enqueued` for asyncio code. Same arguments, result and errors."""
    if not isinstance(target, AsyncQueue):
        return await asyncio.to_thread(
            assert_enqueued,
            _queue_of(target),
            task=task,
            args=args,
            kwargs=kwargs,
            payload=payload,
            count=count,
            status=status,
        )
    expected = _Expected.of(task, args, kwargs, payload, count, status)
    aq = target

    def page(before: int | None) -> Awaitable[list[Job]]:
        return aq.list_jobs(status=expected.statuses, limit=_PAGE, before_id=before)

    jobs = await _read_all_async(page)
    found = expected.matching(jobs)
    if found is not None:
        return found
    raise AssertionError(expected.message(jobs, await aq.stats(), aq.table.name))


def _read_all(page: Callable[[int | None], list[Job]]) -> list[Job]:
    jobs: list[Job] = []
    while True:
        got = page(jobs[-1].id if jobs else None)
        jobs += got
        if len(got) < _PAGE:
            return jobs[::-1]


async def _read_all_async(page: Callable[[int | None], Awaitable[list[Job]]]) -> list[Job]:
    jobs: list[Job] = []
    while True:
        got = await page(jobs[-1].id if jobs else None)
        jobs += got
        if len(got) < _PAGE:
            return jobs[::-1]
