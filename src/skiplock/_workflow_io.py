# Generated from src/skiplock/_workflow_io_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The I/O of :mod:`skiplock.workflow`: write a workflow's jobs in one transaction, wait
for its last jobs.

Generated from ``_workflow_io_async.py`` by ``scripts/async_to_sync``; edit that file.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any, Protocol

from ._core.checks import EnqueueOptions
from ._core.job import Job
from ._shell.acompat import sleep
from .queue import Queue

__all__ = ["Writer", "wait_workflow", "write_workflow"]

#: a workflow's writer: yields requests (payloads, their options), is sent each request's
#: new ids, and returns the ids whose results are the workflow's
Writer = Generator[tuple[list[dict[str, Any]], EnqueueOptions], list[int], list[int]]


class _Handle(Protocol):
    """What a wait reads of a :class:`~skiplock.workflow.WorkflowHandle`."""

    @property
    def tail(self) -> list[int]: ...

    def _result(self, jobs: list[Job | None]) -> tuple[bool, Any]: ...


def write_workflow(queue: Queue, writer: Writer, conn: Any) -> tuple[list[int], list[int]]:
    """Write *writer*'s jobs in one transaction (*conn*'s when given); every id, and its
    tail."""
    ids: list[int] = []
    request = next(writer)  # a bad task or option raises before any connection is used
    with queue.transaction(conn=conn) as tx:
        while True:
            payloads, options = request
            new = queue._enqueue_checked(payloads, options, tx.adapter)
            ids += new
            try:
                request = writer.send(new)
            except StopIteration as stop:
                return ids, stop.value


def wait_workflow(queue: Queue, handle: _Handle, timeout: float | None, interval: float) -> Any:
    """:meth:`WorkflowHandle.wait` on *queue*."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.005
    while True:
        jobs = [queue.get(i) for i in handle.tail]
        ended, result = handle._result(jobs)
        if ended:
            return result
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"workflow {handle!r} did not end within {timeout} s")
        sleep(pause)
        pause = min(interval, pause * 2)
