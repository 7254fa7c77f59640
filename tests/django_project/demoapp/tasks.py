"""Tasks of the test project."""

from __future__ import annotations

import os
import time
from typing import Any

from skiplock.contrib.django._compat import tasks

from .models import Note

task = tasks.task


@task()
def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b, "pid": os.getpid()}


@task()
async def add_async(a: int, b: int) -> int:
    return a + b


@task()
def explode(message: str) -> None:
    raise ValueError(message)


@task(takes_context=True)
def which_attempt(context: Any) -> int:
    return int(context.attempt)


@task()
def note(text: str) -> None:
    Note.objects.create(text=text)


@task()
def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


@task(takes_context=True)
def stall_first(context: Any, seconds: float, until: str | None = None) -> str:
    """Attempt 1 sleeps *seconds*, or less when the file *until* appears first (its worker
    is killed or frozen meanwhile)."""
    if context.attempt == 1:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (until and os.path.exists(until)):
            time.sleep(0.05)
        Note.objects.create(text="late")
        return "late"
    return "on time"
