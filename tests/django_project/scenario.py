"""``python scenario.py NAME [ARG...]``: one step of a Django test, run in this project;
prints one JSON document (what the test asserts on)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")

import django

django.setup()

from demoapp import tasks  # noqa: E402
from demoapp.models import Note  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from skiplock.contrib.django._compat import TaskResultDoesNotExist  # noqa: E402

SCENARIOS: dict[str, Callable[..., Any]] = {}


def scenario(fn: Callable[..., Any]) -> Callable[..., Any]:
    SCENARIOS[fn.__name__] = fn
    return fn


def _exists(result_id: str) -> bool:
    try:
        tasks.add.get_result(result_id)
    except TaskResultDoesNotExist:
        return False
    return True


@scenario
def atomic() -> dict[str, Any]:
    """An enqueue commits with the user's row, and rolls back with it."""
    with transaction.atomic():
        Note.objects.create(text="kept")
        kept = tasks.add.enqueue(1, 2)
        seen_inside = _exists(kept.id)  # read through the block's own connection

    class Undo(Exception):
        pass

    try:
        with transaction.atomic():
            Note.objects.create(text="undone")
            undone = tasks.add.enqueue(3, 4)
            raise Undo
    except Undo:
        pass
    outside = tasks.add.enqueue(5, 6)  # autocommit: committed at once
    return {
        "seen_inside": seen_inside,
        "kept": _exists(kept.id),
        "undone": _exists(undone.id),
        "outside": _exists(outside.id),
        "notes": sorted(Note.objects.values_list("text", flat=True)),
        "status": tasks.add.get_result(kept.id).status,
    }


@scenario
def enqueue(name: str, *args: str) -> dict[str, Any]:
    task = getattr(tasks, name)
    values: list[Any] = [json.loads(a) for a in args]
    return {"id": task.enqueue(*values).id}


@scenario
def enqueue_using(backend: str, name: str, *args: str) -> dict[str, Any]:
    """Enqueue through the TASKS backend *backend*; its result as that backend reads it."""
    task = getattr(tasks, name).using(backend=backend)
    found = task.enqueue(*[json.loads(a) for a in args])
    return {"id": found.id, "status": str(task.get_result(found.id).status)}


@scenario
def result_using(backend: str, result_id: str) -> dict[str, Any]:
    return result(result_id, backend)


@scenario
def enqueue_calls(calls: str) -> list[str]:
    """``[[task name, [args...]], ...]`` (JSON): their result ids."""
    return [getattr(tasks, name).enqueue(*args).id for name, args in json.loads(calls)]


@scenario
def enqueue_priorities() -> dict[str, Any]:
    ids = {}
    for p in (-10, 50, 0, 100, -100):
        ids[p] = tasks.note.using(priority=p).enqueue(f"p{p}").id
    later = tasks.note.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("later")
    return {"ids": ids, "later": later.id}


@scenario
def notes() -> list[str]:
    return list(Note.objects.order_by("id").values_list("text", flat=True))


@scenario
def results(*result_ids: str) -> list[dict[str, Any]]:
    return [result(i) for i in result_ids]


@scenario
def result(result_id: str, backend: str | None = None) -> dict[str, Any]:
    task = tasks.add if backend is None else tasks.add.using(backend=backend)
    r = task.get_backend().get_result(result_id)
    out: dict[str, Any] = {
        "status": str(r.status),
        "task": r.task.module_path,
        "priority": r.task.priority,
        "queue_name": r.task.queue_name,
        "args": r.args,
        "kwargs": r.kwargs,
        "attempts": r.attempts,
        "worker_ids": r.worker_ids,
        "errors": [
            {"exception_class_path": e.exception_class_path, "traceback": e.traceback}
            for e in r.errors
        ],
        "is_finished": r.is_finished,
    }
    for name in ("enqueued_at", "started_at", "last_attempted_at", "finished_at"):
        value = getattr(r, name)
        out[name] = None if value is None else value.isoformat()
    if r.status == "SUCCESSFUL":
        out["return_value"] = r.return_value
    if r.errors and r.errors[0].exception_class_path.startswith("builtins."):
        out["exception_class"] = r.errors[0].exception_class.__name__
    return out


@scenario
def bad_input() -> dict[str, Any]:
    """Each bad input raises its own error, writes nothing and leaves the block usable."""
    from skiplock.contrib.django import SkiplockBackend

    backend = tasks.add.get_backend()
    out: dict[str, Any] = {}

    def error_of(fn: Callable[[], Any]) -> str:
        try:
            fn()
        except Exception as exc:
            return type(exc).__name__
        return "nothing raised"

    with transaction.atomic():
        Note.objects.create(text="survives")
        out["not_json"] = error_of(lambda: tasks.add.enqueue(object(), 1))
        out["nan"] = error_of(lambda: tasks.add.enqueue(float("nan"), 1))
        out["priority"] = error_of(lambda: tasks.add.using(priority=101))
        out["queue"] = error_of(lambda: tasks.add.using(queue_name="nope"))
        Note.objects.create(text="after")
    out["ids"] = [
        error_of(lambda i=i: tasks.add.get_result(i))  # type: ignore[misc]
        for i in ("-1", "abc", "99999999999999999999", "")
    ]
    bad = (("MAX_ATTEMPTS", 0), ("LEASE", "x"), ("RETRY_DELAY", float("inf")))
    bad += (("DATABASE", "other"),)
    for key, value in bad:
        out[key] = error_of(lambda k=key, v=value: SkiplockBackend("x", {"OPTIONS": {k: v}}))
    out["notes"] = sorted(Note.objects.values_list("text", flat=True))
    stats = backend.queue.stats()
    out["jobs"] = stats.pending + stats.scheduled + stats.running + stats.done + stats.failed
    return out


@scenario
def missing(result_id: str) -> bool:
    return not _exists(result_id)


if __name__ == "__main__":
    name, *rest = sys.argv[1:]
    print(json.dumps(SCENARIOS[name](*rest)))
