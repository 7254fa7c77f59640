"""``manage.py skiplock_worker --processes N``: the handler each process imports by name,
which sets Django up at its first job.
"""

from __future__ import annotations

import os
import threading

from skiplock._core.job import Job

from .runner import TaskRunner

__all__ = ["BACKEND_VARIABLE", "TARGET", "run_task"]

#: the TASKS alias a fleet's processes run (set by the command before they start)
BACKEND_VARIABLE = "SKIPLOCK_DJANGO_BACKEND"
#: the handler's name, for :class:`skiplock.Fleet`
TARGET = f"{__name__}:run_task"


class _ProcessRunner:
    def __init__(self) -> None:
        self._runner: TaskRunner | None = None
        self._lock = threading.Lock()

    def __call__(self, job: Job) -> None:
        runner = self._runner
        if runner is None:
            runner = self._start()
        runner(job)

    def _start(self) -> TaskRunner:
        with self._lock:
            if self._runner is None:
                import django
                from django.utils.crypto import get_random_string

                django.setup()
                from ._compat import tasks

                backend = tasks.task_backends[os.environ.get(BACKEND_VARIABLE, "default")]
                self._runner = TaskRunner(backend, get_random_string(32))
            return self._runner


#: the handler of each process of a fleet
run_task = _ProcessRunner()
