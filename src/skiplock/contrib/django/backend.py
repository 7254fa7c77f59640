"""``SkiplockBackend``: Django's Tasks framework over a skiplock table (docs/django.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import connections
from django.utils import timezone
from django.utils.module_loading import import_string

from skiplock._core.checks import integer, seconds_or_none
from skiplock._core.job import Job
from skiplock.errors import ConfigurationError
from skiplock.queue import Queue

from ._compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from ._urls import queue_url

__all__ = ["SkiplockBackend"]

DEFAULT_TABLE = "skiplock_tasks"

_STATUS = {
    "pending": "READY",
    "running": "RUNNING",
    "done": "SUCCESSFUL",
    "failed": "FAILED",
}

#: one Queue (and its connection pool) per database and table, shared by every thread:
#: Django makes one backend object per thread
_queues: dict[tuple[str, str], Queue] = {}
_queues_lock = threading.Lock()


def _option_int(options: dict[str, Any], name: str, default: int, low: int) -> int:
    return integer(options.get(name, default), f"TASKS OPTIONS[{name!r}]", low)


def _option_seconds(options: dict[str, Any], name: str, default: float | None) -> float | None:
    return seconds_or_none(options.get(name, default), f"TASKS OPTIONS[{name!r}]")


def _shown(value: datetime | None) -> datetime | None:
    """A database time as Django shows it: aware in UTC, or naive local without USE_TZ."""
    if value is None or settings.USE_TZ:
        return value
    naive: datetime = timezone.make_naive(value)
    return naive


class SkiplockBackend(BaseTaskBackend):  # type: ignore[misc]
    """Tasks in a skiplock table of a Django database, enqueued in Django's current
    transaction.

    ``OPTIONS``: ``DATABASE`` (default ``"default"``), ``URL``, ``TABLE`` (default
    ``"skiplock_tasks"``), ``MAX_ATTEMPTS`` (3), ``RETRY_DELAY``, ``LEASE`` (30 s) and
    ``ATOMIC`` (False); see docs/django.md.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        options: dict[str, Any] = self.options
        self.database: str = options.get("DATABASE", "default")
        if self.database not in settings.DATABASES:
            raise ConfigurationError(
                f"TASKS[{alias!r}] OPTIONS['DATABASE'] names {self.database!r}, which is not "
                f"in DATABASES ({', '.join(settings.DATABASES)})"
            )
        self.table: str = options.get("TABLE", DEFAULT_TABLE)
        self.max_attempts = _option_int(options, "MAX_ATTEMPTS", 3, 1)
        self.retry_delay = _option_seconds(options, "RETRY_DELAY", None)
        self.lease = _option_seconds(options, "LEASE", 30.0) or 30.0
        self.atomic = bool(options.get("ATOMIC", False))
        self._url: str | None = options.get("URL")

    # -- the queue and the connections ----------------------------------------------------

    @property
    def queue(self) -> Queue:
        """The skiplock queue, on its own connections."""
        key = (self.database, self.table)
        with _queues_lock:
            found = _queues.get(key)
            if found is None:
                url = self._url or queue_url(connections[self.database])
                found = _queues[key] = Queue(url, table=self.table)
            return found

    def connection(self) -> Any:
        """Django's connection of the backend's database, in its current transaction."""
        return connections[self.database]

    # -- enqueue --------------------------------------------------------------------------

    def enqueue(self, task: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Write the task's job in Django's current transaction; a ``TaskResult`` (READY).

        Raises ``InvalidTask`` for a task this backend cannot run, skiplock's ``PayloadError`` for
        arguments that are not JSON.
        """
        self.validate_task(task)
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):
            run_after = timezone.make_aware(run_after)
        payload = {
            "task": task.module_path,
            "args": list(args),
            "kwargs": dict(kwargs),
            "priority": task.priority,
            "run_after": None if run_after is None else run_after.isoformat(),
        }
        job_id = self.queue.enqueue(
            payload,
            queue=task.queue_name,
            priority=-task.priority,
            run_at=run_after,
            max_attempts=self.max_attempts,
            conn=self.connection(),
        )
        result = TaskResult(
            task=task,
            id=str(job_id),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    # -- results --------------------------------------------------------------------------

    def get_result(self, result_id: str) -> Any:
        """The task's result as the database has it now. Raises ``TaskResultDoesNotExist``
        for an id that names no task of this backend.
        """
        try:
            job_id = int(result_id)
            job = self.read(job_id) if 0 < job_id < 2**63 else None
        except (TypeError, ValueError):
            job = None
        if job is None or not isinstance(job.payload, dict) or "task" not in job.payload:
            raise TaskResultDoesNotExist(result_id)
        return self.result_of(job, self.attempts_of(job.id))

    def read(self, job_id: int) -> Job | None:
        """The job as Django's connection sees it, uncommitted writes of its block included."""
        return self.queue.get(job_id, conn=self.connection())

    def attempts_of(self, job_id: int) -> list[Any]:
        from .models import Attempt

        rows = Attempt.objects.using(self.database).filter(table=self.table, job_id=job_id)
        return list(rows.order_by("attempt"))

    def task_of(self, job: Job) -> Any:
        payload = job.payload
        found = import_string(payload["task"])
        if not isinstance(found, Task):
            raise InvalidTask(f"job {job.id}: {payload['task']!r} is not a Task")
        run_after = payload.get("run_after")
        return found.using(
            priority=payload.get("priority", -job.priority),
            queue_name=job.queue,
            run_after=None if run_after is None else datetime.fromisoformat(run_after),
            backend=self.alias,
        )

    def result_of(self, job: Job, attempts: Iterable[Any], *, status: str | None = None) -> Any:
        rows = {a.attempt: a for a in attempts}
        worker_ids = [rows[n].worker_id if n in rows else "" for n in range(1, job.attempt + 1)]
        errors = [
            TaskError(exception_class_path=a.exception_class_path, traceback=a.traceback)
            for _, a in sorted(rows.items())
            if a.exception_class_path
        ]
        if job.status == "failed" and (job.attempt not in rows or not rows[job.attempt].traceback):
            # its last attempt's worker died: the claim that found the lease expired said so
            errors.append(
                TaskError(
                    exception_class_path="skiplock.errors.LeaseLost",
                    traceback=job.last_error or "lease expired",
                )
            )
        starts = [a.started_at for _, a in sorted(rows.items())]
        finished = job.finished_at if job.status in ("done", "failed") else None
        result = TaskResult(
            task=self.task_of(job),
            id=str(job.id),
            status=TaskResultStatus[status or _STATUS[job.status]],
            enqueued_at=_shown(job.created_at),
            started_at=starts[0] if starts else None,
            last_attempted_at=starts[-1] if starts else None,
            finished_at=_shown(finished),
            args=job.payload.get("args", []),
            kwargs=job.payload.get("kwargs", {}),
            backend=self.alias,
            errors=errors,
            worker_ids=worker_ids,
        )
        if job.status == "done":
            object.__setattr__(result, "_return_value", job.result)
        return result

    def check(self, **kwargs: Any) -> Iterable[Any]:
        yield from super().check(**kwargs)
        from django.apps import apps

        if not apps.is_installed("skiplock.contrib.django"):
            yield checks.Error(
                f"{type(self).__name__} is a TASKS backend, but its app is not installed",
                hint="add 'skiplock.contrib.django' to INSTALLED_APPS and run migrate",
                id="skiplock.E001",
            )
