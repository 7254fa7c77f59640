"""The handler of tests/integration/test_fleet_metrics.py's fleets (imported by name in
each process). A job ``{"sleep": s}`` sleeps *s* seconds; ``{"pidfile": path, "hold": s}``
writes its process's pid to *path* and holds its first attempt *s* seconds (a job to kill
its process under). Each returns its process's pid (the job's result)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import skiplock


def work(job: skiplock.Job) -> int:
    payload = job.payload
    if payload.get("pidfile") and job.attempt == 1:
        Path(payload["pidfile"]).write_text(str(os.getpid()))
        time.sleep(payload.get("hold", 0))
    time.sleep(payload.get("sleep", 0))
    return os.getpid()


def wrap(job: skiplock.Job, call_next: object) -> dict[str, object]:
    """A middleware: the job completes with its handler's result wrapped."""
    assert callable(call_next)
    return {"wrapped": call_next(job)}
