"""The live worker list, by behaviour: a running worker (thread and asyncio) appears with
its host, pid, queues and concurrency, its jobs in flight move with its heartbeat, and it
disappears when it stops; a worker process killed with SIGKILL is shown gone."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import skiplock
from skiplock import Job, Worker

from .conftest import wait_until


def test_a_running_worker_appears_shows_its_jobs_and_leaves(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    release = threading.Event()

    def handler(job: Job) -> None:
        release.wait(30)

    w = worker_cls(
        queue,
        handler,
        queues=["mail", "pdf"],
        concurrency=3,
        lease=3,
        heartbeat=0.2,
        poll_interval=0.05,
    ).start()
    workers.append(w)
    wait_until(lambda: len(queue.workers()) == 1, 10, "the worker to register")
    (row,) = queue.workers()
    assert (row.host, row.pid, row.queues, row.concurrency) == (
        socket.gethostname(),
        os.getpid(),
        ("mail", "pdf"),
        3,
    )
    assert row.in_flight == 0 and not row.gone and row.interval == 0.2
    queue.enqueue_many([{"n": 1}, {"n": 2}], queue="pdf")
    wait_until(lambda: queue.workers()[0].in_flight == 2, 10, "two jobs in flight")
    release.set()
    wait_until(lambda: queue.workers()[0].in_flight == 0, 10, "no job in flight")
    w.stop()
    assert queue.workers() == []


KILLED_WORKER = """
import sys, time, skiplock
q = skiplock.connect(sys.argv[1], table=sys.argv[2])
w = skiplock.Worker(q, lambda job: None, lease=1.5, heartbeat=0.2, poll_interval=0.1)
w.start()
print("started", flush=True)
time.sleep(60)
"""


def test_a_killed_worker_is_shown_gone(queue: skiplock.Queue, url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WORKER, url, str(queue.table)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        wait_until(lambda: [w.pid for w in queue.workers()] == [proc.pid], 20, "it to register")
        assert not queue.workers()[0].gone
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed = time.monotonic()
        wait_until(lambda: queue.workers()[0].gone, 10, "the killed worker to be shown gone")
        assert time.monotonic() - killed < 3
        assert [w.pid for w in queue.workers()] == [proc.pid]  # kept, shown gone
    finally:
        proc.kill()
        proc.wait()
