"""The Tasks framework's names: ``django.tasks`` (Django 6+), else the ``django-tasks``
backport.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

from skiplock.errors import ConfigurationError


def _module(name: str) -> ModuleType:
    return import_module(f"{FRAMEWORK}.{name}" if name else FRAMEWORK)


try:
    import_module("django.tasks")
    FRAMEWORK = "django.tasks"
    _json: ModuleType = import_module("django.utils.json")
except ImportError:
    try:
        import_module("django_tasks")
    except ImportError as exc:
        raise ConfigurationError(
            "skiplock's Django backend needs Django 6 (django.tasks) or the django-tasks "
            "backport: pip install 'skiplock[django]'"
        ) from exc
    FRAMEWORK = "django_tasks"
    _json = import_module("django_tasks.utils")

_base, _exceptions, _signals = _module("base"), _module("exceptions"), _module("signals")

tasks: ModuleType = _module("")
BaseTaskBackend: Any = _module("backends.base").BaseTaskBackend
Task: Any = _base.Task
TaskContext: Any = _base.TaskContext
TaskError: Any = _base.TaskError
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
InvalidTask: Any = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
TaskResultDoesNotExist: Any = _exceptions.TaskResultDoesNotExist
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished
normalize_json: Any = _json.normalize_json

__all__ = [
    "FRAMEWORK",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_enqueued",
    "task_finished",
    "task_started",
    "tasks",
]
