# Generated from src/skiplock/_flow_async.py by scripts/async_to_sync; do not edit.
# Edit the source and run scripts/async_to_sync (tests/quality/test_generated.py checks).
"""The I/O of :mod:`skiplock.workflow`: write a workflow's jobs in one transaction, wait
for its last jobs. The asyncio source: ``scripts/async_to_sync`` makes ``_flow.py`` (the
sync one) from it.

May import: :mod:`skiplock._shell.acompat` and the standard library (the workflow
module only for the annotations). The queue's ``_enqueue_checked`` writes each request.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._shell.acompat import sleep

if TYPE_CHECKING:
    from .workflow import WorkflowHandle, _Writing

__all__ = ["wait_workflow", "write_workflow"]


def write_workflow(queue: Any, writing: _Writing, conn: Any) -> None:
    """Answer each request of *writing* (its jobs, one statement or a batch) in one
    transaction on *queue* (the caller's open one with *conn*)."""
    with queue.transaction(conn=conn) as tx:
        while writing.request is not None:
            payloads, options = writing.request
            writing.answer(queue._enqueue_checked(payloads, options, tx.adapter))


def wait_workflow(handle: WorkflowHandle, timeout: float | None, interval: float) -> Any:
    """:meth:`WorkflowHandle.wait` on the handle's queue."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.005
    while True:
        jobs = [handle._queue.get(i) for i in handle.tail]
        ended, result = handle._result(jobs)
        if ended:
            return result
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"workflow {handle!r} did not end within {timeout} s")
        sleep(pause)
        pause = min(interval, pause * 2)
