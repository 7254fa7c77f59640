"""The dashboard server's ``/metrics``: the queue's state in Prometheus's text format,
read at most once a second.
"""

from __future__ import annotations

import threading
import time

from ..queue import Queue

__all__ = ["MetricsCache", "exposition"]

#: seconds a scrape's answer is served again
TTL = 1.0


class MetricsCache:
    """The text of ``/metrics`` for *queue*, read at most once per :data:`TTL`."""

    def __init__(self, queue: Queue, window: float, cap: int) -> None:
        self.queue = queue
        self.window = window
        self.cap = cap
        self._lock = threading.Lock()
        self._text = ""
        self._at = -TTL

    def text(self) -> str:
        with self._lock:  # one read at a time: scrapes arriving meanwhile get its answer
            if time.monotonic() - self._at >= TTL:
                self._text = exposition(self.queue, self.window, self.cap)
                self._at = time.monotonic()
            return self._text


def exposition(queue: Queue, window: float, cap: int) -> str:
    overview = queue.overview(window=window, cap=cap)
    workers = queue.workers()
    lines = [
        "# HELP skiplock_jobs Active jobs by queue and status, from the database.",
        "# TYPE skiplock_jobs gauge",
    ]
    for o in overview:
        for status, n in (
            ("pending", o.pending),
            ("scheduled", o.scheduled),
            ("running", o.running),
            ("expired", o.expired),
        ):
            lines.append(f'skiplock_jobs{{queue="{_label(o.queue)}",status="{status}"}} {n}')
    lines += [
        f"# HELP skiplock_jobs_finished_recent Jobs that finished in the last {window:.0f} "
        "seconds, by queue and status (a lower bound when the window held very many).",
        "# TYPE skiplock_jobs_finished_recent gauge",
    ]
    for o in overview:
        for status, n in (("done", o.done), ("failed", o.failed)):
            lines.append(
                f'skiplock_jobs_finished_recent{{queue="{_label(o.queue)}",status="{status}"}} {n}'
            )
    lines += [
        "# HELP skiplock_oldest_pending_age_seconds Age of the oldest claimable job by queue "
        "(0: none waits).",
        "# TYPE skiplock_oldest_pending_age_seconds gauge",
    ]
    for o in overview:
        age = o.oldest_pending_age or 0.0
        lines.append(f'skiplock_oldest_pending_age_seconds{{queue="{_label(o.queue)}"}} {age:.3f}')
    alive = sum(not w.gone for w in workers)
    lines += [
        "# HELP skiplock_workers Worker processes in the live worker list, alive or gone.",
        "# TYPE skiplock_workers gauge",
        f'skiplock_workers{{state="alive"}} {alive}',
        f'skiplock_workers{{state="gone"}} {len(workers) - alive}',
    ]
    return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    """A label value escaped for the text format."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
