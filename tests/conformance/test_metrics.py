"""The worker's Prometheus metrics, scraped over HTTP after real jobs ran, on every
backend and both worker kinds."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

import skiplock
from skiplock import Discard, Job, Worker

from .conftest import drained, wait_until

parser = pytest.importorskip("prometheus_client.parser")


def scrape(worker: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the worker's /metrics: (name, sorted labels) -> value."""
    address = worker.metrics.address
    assert address is not None, "the worker serves no metrics"
    host, port = address
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
        assert response.status == 200
        text = response.read().decode()
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_the_worker_serves_its_counts_times_and_waits(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    queue.enqueue_many([{"n": i} for i in range(3)], queue="m")  # done
    queue.enqueue({"fail": True}, queue="m", max_attempts=1)  # failed
    queue.enqueue({"retry": True}, queue="m", max_attempts=2)  # retried, then done
    queue.enqueue({"discard": True}, queue="m")  # discarded
    # done: a plain Worker registers no task, so a payload's "task" is never a label
    queue.enqueue({"task": "send", "args": []}, queue="m")
    time.sleep(0.4)  # every job waits at least this long between due and claim

    def handler(job: Job) -> Any:
        if "fail" in job.payload or ("retry" in job.payload and job.attempt == 1):
            raise ValueError("no")
        if "discard" in job.payload:
            raise Discard("never")
        return None

    worker = worker_cls(queue, handler, queues=["m"], metrics_port=0, poll_interval=0.05)
    workers.append(worker.start())
    wait_until(lambda: drained(queue), timeout=15, what="the jobs to end")
    name = handler.__qualname__
    wait_until(
        lambda: (
            value(
                scrape(worker),
                "skiplock_jobs_processed_total",
                queue="m",
                task=name,
                outcome="done",
            )
            == 5
        ),
        what="five jobs counted done",
    )
    s = scrape(worker)
    processed = {labels: v for (n, labels), v in s.items() if n == "skiplock_jobs_processed_total"}
    assert processed == {
        (("outcome", "done"), ("queue", "m"), ("task", name)): 5.0,
        (("outcome", "failed"), ("queue", "m"), ("task", name)): 1.0,
        (("outcome", "retried"), ("queue", "m"), ("task", name)): 1.0,
        (("outcome", "discarded"), ("queue", "m"), ("task", name)): 1.0,
    }
    # one observation per handler run: 8 runs (the retried job ran twice)
    assert value(s, "skiplock_job_duration_seconds_count", queue="m", task=name) == 8
    assert not [labels for _, labels in s if ("task", "send") in labels]
    assert value(s, "skiplock_job_wait_seconds_count", queue="m") == 8
    # the seven first attempts waited >= 0.4 s on the database's clock; the retry ~1 s
    assert value(s, "skiplock_job_wait_seconds_sum", queue="m") >= 7 * 0.35
    assert value(s, "skiplock_job_wait_seconds_bucket", queue="m", le="0.1") <= 1
    assert value(s, "skiplock_worker_jobs_in_flight") == 0


def test_jobs_in_flight_and_the_server_ends_with_the_worker(
    queue: skiplock.Queue, worker_cls: type[Worker]
) -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def handler(job: Job) -> None:
        started.release()
        release.wait(10)

    queue.enqueue_many(["a", "b"])
    one = worker_cls(queue, handler, concurrency=2, metrics_port=0, poll_interval=0.05)
    two = worker_cls(queue, handler, metrics_port=0, poll_interval=0.05)  # its own registry
    one.start()
    two.start()
    try:
        wait_until(lambda: one.metrics.address and two.metrics.address, what="two servers")
        assert started.acquire(timeout=10) and started.acquire(timeout=10)
        both = value(scrape(one), "skiplock_worker_jobs_in_flight") + value(
            scrape(two), "skiplock_worker_jobs_in_flight"
        )
        assert both == 2
        host, port = one.metrics.address
    finally:
        release.set()
        one.stop(timeout=15)
        two.stop(timeout=15)
    assert one.metrics.address is None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=2)


@pytest.mark.one_table
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"metrics_port": -1}, "metrics_port must be an integer from 0 to 65535"),
        ({"metrics_port": "80"}, "metrics_port must be an integer"),
        ({"metrics_port": 0, "metrics_host": ""}, "metrics_host"),
    ],
)
def test_bad_metrics_options_are_refused(
    queue: skiplock.Queue, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(skiplock.ConfigurationError, match=message):
        Worker(queue, print, **options)


def test_a_port_in_use_is_a_configuration_error(queue: skiplock.Queue) -> None:
    first = Worker(queue, print, metrics_port=0, poll_interval=0.05).start()
    try:
        wait_until(lambda: first.metrics.address, what="the first server")
        _, port = first.metrics.address
        second = Worker(queue, print, metrics_port=port)
        with pytest.raises(skiplock.ConfigurationError, match=f"127.0.0.1:{port}"):
            second.run(install_signals=False)
    finally:
        first.stop(timeout=15)


def test_timeouts_and_an_async_handler(queue: skiplock.Queue) -> None:
    import asyncio

    async def handler(job: Job) -> None:
        if job.payload == "slow":
            await asyncio.sleep(5)  # cancelled at its timeout

    queue.enqueue("slow", max_attempts=1)
    queue.enqueue("quick")

    async def main() -> dict[Any, float]:
        worker = skiplock.AsyncWorker(
            queue, handler, timeout=0.3, lease=3, metrics_port=0, poll_interval=0.05
        )
        async with worker:
            for _ in range(200):
                if drained(queue):
                    break
                await asyncio.sleep(0.05)
            name = handler.__qualname__
            for _ in range(200):
                s = await asyncio.to_thread(scrape, worker)
                # both jobs counted and both runs observed (the cancelled run's time is
                # observed once its task has unwound: it may come after the quick job's)
                if (
                    value(
                        s,
                        "skiplock_jobs_processed_total",
                        queue="default",
                        task=name,
                        outcome="done",
                    )
                    == 1
                    and value(s, "skiplock_job_duration_seconds_count", queue="default", task=name)
                    == 2
                ):
                    return s
                await asyncio.sleep(0.05)
        raise AssertionError("the two jobs were never counted and observed")

    s = asyncio.run(main())
    name = handler.__qualname__
    assert value(s, "skiplock_job_timeouts_total", queue="default", task=name) == 1
    assert (
        value(s, "skiplock_jobs_processed_total", queue="default", task=name, outcome="failed") == 1
    )
    # both handler runs observed, the cancelled one too
    assert value(s, "skiplock_job_duration_seconds_count", queue="default", task=name) == 2


def test_a_snooze_is_its_own_outcome(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    queue.enqueue({"n": 1}, queue="s")

    def handler(job: Job) -> None:
        if job.snoozes == 0:
            raise skiplock.Snooze(0)

    worker = worker_cls(queue, handler, queues=["s"], metrics_port=0, poll_interval=0.05)
    workers.append(worker.start())
    wait_until(lambda: drained(queue), timeout=15, what="the job to end")
    name = handler.__qualname__

    def counted() -> dict[str, float]:
        return {
            dict(labels)["outcome"]: v
            for (n, labels), v in scrape(worker).items()
            if n == "skiplock_jobs_processed_total"
        }

    wait_until(lambda: counted().get("done") == 1, what="the job counted done")
    assert counted() == {"snoozed": 1.0, "done": 1.0}
    assert value(scrape(worker), "skiplock_job_duration_seconds_count", queue="s", task=name) == 2


def test_a_task_label_is_a_registered_tasks_name_never_a_payloads(
    queue: skiplock.Queue, workers: list[Worker], worker_cls: type[Worker]
) -> None:
    """Anyone who can enqueue may write any "task" into a payload: only the names of the
    App's registered tasks become labels, every other job is counted under the handler's
    name (an App's, or a plain Worker's), so the series stay bounded."""
    app = skiplock.App(queue)

    @app.task(queue="t")
    def send() -> str:
        return "sent"

    for i in range(3):
        queue.enqueue({"task": f"made-up-{i}", "args": [], "kwargs": {}}, queue="t")
    send.defer()
    make = app.worker if worker_cls is Worker else app.async_worker
    worker: Any = make(metrics_port=0, poll_interval=0.05)
    if worker_cls is not Worker:  # an AsyncWorker: on a loop of its own, as LoopWorker runs it
        from .conftest import LoopWorker

        loop_worker = LoopWorker.__new__(LoopWorker)
        loop_worker.aw, loop_worker._thread = worker, None
        worker = loop_worker
    workers.append(worker.start())
    wait_until(lambda: drained(queue), timeout=15, what="the jobs to end")

    def processed() -> dict[tuple[str, str], float]:
        return {
            (dict(labels)["task"], dict(labels)["outcome"]): v
            for (n, labels), v in scrape(worker).items()
            if n == "skiplock_jobs_processed_total"
        }

    handler = (app.handle if worker_cls is Worker else app.handle_async).__qualname__
    wait_until(lambda: len(processed()) == 2, what="both outcomes counted")
    assert processed() == {(send.name, "done"): 1.0, (handler, "discarded"): 3.0}
    tasks = {dict(labels)["task"] for _, labels in scrape(worker) if "task" in dict(labels)}
    assert tasks == {send.name, handler}

    def plain_handler(job: Job) -> None:
        return None

    plain = worker_cls(queue, plain_handler, queues=["p"], metrics_port=0, poll_interval=0.05)
    queue.enqueue({"task": send.name}, queue="p")
    workers.append(plain.start())
    wait_until(lambda: drained(queue), timeout=15, what="the plain worker's job to end")
    wait_until(
        lambda: value(
            scrape(plain), "skiplock_jobs_processed_total", queue="p",
            task=plain_handler.__qualname__,
            outcome="done",
        ) == 1,
        what="the plain worker's job counted under its handler's name",
    )  # fmt: skip
