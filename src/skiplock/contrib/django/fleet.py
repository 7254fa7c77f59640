"""``manage.py skiplock_worker --processes N``: what each process of the fleet runs.

A fleet's processes are spawned, not forked: each imports its handler by name
(``skiplock.contrib.django.fleet:run_task``), and that handler sets Django up in its own
process at its first job (``DJANGO_SETTINGS_MODULE`` and ``sys.path`` come from the
command's process), then runs each job as the one-process worker does: a
:class:`~skiplock.contrib.django.runner.TaskRunner` of the backend the command names
(``$SKIPLOCK_DJANGO_BACKEND``), with a worker id of its own per process.
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
    """A process's TaskRunner, made at its first job (Django set up then)."""

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
