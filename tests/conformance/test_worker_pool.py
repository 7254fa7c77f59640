"""The worker's runner threads and its gathering of round trips, on every backend."""

from __future__ import annotations

import logging
import threading
import time

import skiplock
from skiplock import Job, Worker

from .conftest import drained, wait_until, worker_log_handler


def test_runner_threads_are_reused_bounded_and_ended(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    queue.enqueue_many(list(range(40)))
    runners: set[threading.Thread] = set()
    lock = threading.Lock()

    def handler(job: Job) -> None:
        with lock:
            runners.add(threading.current_thread())
        time.sleep(0.005)

    worker = worker_cls(queue, handler, concurrency=3, lease=5).start()
    workers.append(worker)
    wait_until(lambda: worker.counts["done"] == 40, timeout=60, what="40 jobs done")
    assert 1 <= len(runners) <= 3  # 40 jobs on at most `concurrency` threads, not 40
    assert threading.current_thread() not in runners
    worker.stop(timeout=15)
    wait_until(lambda: not any(t.is_alive() for t in runners), 30, "the runners to end")
    assert drained(queue)


def test_one_free_slot_is_refilled_while_the_others_stay_busy(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    # Three jobs hold three of four slots; the quick jobs pass one at a time through the
    # fourth. Gathering (claim when half the slots are free) must not leave it empty. No
    # clock decides: the poll interval is longer than the whole test, so only a claim made
    # because a slot came free can run the quick jobs while the blocking ones still hold.
    queue.enqueue_many(["block"] * 3, priority=0)
    queue.enqueue_many(["quick"] * 10, priority=1)
    release = threading.Event()
    quick_done: list[int] = []

    def handler(job: Job) -> None:
        if job.payload == "block":
            assert release.wait(300)
        else:
            quick_done.append(job.id)

    workers.append(worker_cls(queue, handler, concurrency=4, lease=300, poll_interval=600).start())
    try:
        wait_until(lambda: len(quick_done) == 10, timeout=120, what="the quick jobs")
        assert not release.is_set()
    finally:
        release.set()
    wait_until(lambda: drained(queue), timeout=60, what="the queue to drain")
    assert queue.stats().done == 13


def test_the_helper_threads_have_ended_when_stop_returns(
    queue: skiplock.Queue,
    workers: list[Worker],
    worker_cls: type[Worker],
) -> None:
    """The heartbeat, the wake-up thread (listener or probe), retention and the periodic
    scheduler return before the worker does: a process that exits while one of them is in
    the driver's C code (mysql-connector's SSL connect) could crash in the TLS library's
    exit handlers. Each was waiting (idle, between beats) when the stop came. The
    ``worker stopped:`` line is logged after they end, so a prune or a periodic enqueue
    that was under way is in its counts."""
    before = set(threading.enumerate())
    tick = skiplock.Schedule(name="helpers", cron="0 0 1 1 *", task="never")
    worker = worker_cls(queue, lambda job: None, concurrency=2, lease=5, heartbeat=0.5,
                    retention=3600, periodic=[tick]).start()  # fmt: skip
    workers.append(worker)
    queue.enqueue("one")
    wait_until(lambda: worker.counts["done"] == 1, what="the job done")
    time.sleep(0.3)  # idle: the wake-up thread waits for an enqueue
    helpers = {
        t
        for t in set(threading.enumerate()) - before
        # runners (the thread worker's skiplock-runner, the asyncio worker's pool threads
        # skiplock-runner_N) are the test above's
        if t.name.startswith("skiplock-") and not t.name.startswith("skiplock-runner")
    }
    names = {t.name for t in helpers}
    assert {"skiplock-heartbeat", "skiplock-retention", "skiplock-periodic"} <= names
    assert names & {"skiplock-listen", "skiplock-probe"}  # the thread that crashed a process
    alive_at_summary: list[list[str]] = []

    class Summary(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("worker stopped:"):
                here = threading.current_thread()  # the worker's own thread logs it
                alive_at_summary.append([t.name for t in helpers - {here} if t.is_alive()])

    with worker_log_handler(Summary(), logging.INFO):
        worker.stop(timeout=15)
    assert [t.name for t in helpers if t.is_alive()] == []
    assert alive_at_summary == [[]]
