"""Run one claimed task for ``manage.py skiplock_worker``: its outcome and attempt row
commit together on Django's connection, or not at all when the lease was lost.
"""

from __future__ import annotations

import traceback
from contextlib import nullcontext
from typing import Any

from django.db import close_old_connections, transaction
from django.utils import timezone

from skiplock._core.checks import dumps as _dumps
from skiplock._core.job import Job

from ._compat import TaskContext, normalize_json, task_finished, task_started
from .backend import SkiplockBackend

__all__ = ["TaskRunner"]


def _class_path(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


class TaskRunner:
    """``runner(job)`` runs the job's task for *backend*, as worker *worker_id*."""

    def __init__(self, backend: SkiplockBackend, worker_id: str) -> None:
        self.backend = backend
        self.worker_id = worker_id

    def __call__(self, job: Job) -> None:
        # Each task is a unit of work like a request: connections past CONN_MAX_AGE, or
        # broken, are closed before and after it (runner threads each have their own).
        close_old_connections()
        try:
            self._run(job)
        finally:
            close_old_connections()

    def _run(self, job: Job) -> None:
        from .models import Attempt

        b = self.backend
        Attempt.objects.using(b.database).update_or_create(
            table=b.table,
            job_id=job.id,
            attempt=job.attempt,
            defaults={"worker_id": self.worker_id, "started_at": timezone.now()},
        )
        outer = transaction.atomic(using=b.database) if b.atomic else nullcontext()
        error: Exception | None = None
        with outer:
            try:
                with transaction.atomic(using=b.database) if b.atomic else nullcontext():
                    value = self._call(job)
            except Exception as exc:
                error = exc
                self._write(job, exc, None)
            else:
                self._write(job, None, value)
        if error is None:
            self._finished(job)
            return
        try:  # receivers of task_finished log a failure with logger.exception: give them it
            raise error
        except Exception:
            self._finished(job)

    def _finished(self, job: Job) -> None:
        b = self.backend
        final = b.result_of(b.read(job.id) or job, b.attempts_of(job.id))
        task_finished.send(type(b), task_result=final)

    def _call(self, job: Job) -> Any:
        b = self.backend
        result = b.result_of(job, b.attempts_of(job.id), status="RUNNING")
        task = result.task
        task_started.send(type(b), task_result=result)
        args, kwargs = result.args, result.kwargs
        if task.takes_context:
            value = task.call(TaskContext(task_result=result), *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
        value = normalize_json(value)
        _dumps(value, "return value of the task")
        return value

    def _write(self, job: Job, exc: Exception | None, value: Any) -> None:
        from .models import Attempt

        b = self.backend
        row: dict[str, Any] = {"finished_at": timezone.now()}
        if exc is not None:
            row["exception_class_path"] = _class_path(exc)
            row["traceback"] = "".join(traceback.format_exception(exc))
        with transaction.atomic(using=b.database):
            rows = Attempt.objects.using(b.database)
            rows.filter(table=b.table, job_id=job.id, attempt=job.attempt).update(**row)
            if exc is None:
                b.queue.complete(job, result=value, conn=b.connection())
            else:
                b.queue.fail(job, row["traceback"], retry_in=b.retry_delay, conn=b.connection())
