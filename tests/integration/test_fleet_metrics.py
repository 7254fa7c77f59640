"""One ``/metrics`` for a whole fleet (``skiplock.Fleet(..., metrics_port=0)`` run in the
test's process, on a thread, against each backend): the supervisor serves the sums of its
processes' counters and histograms, a process killed with SIGKILL and replaced takes none of
its counts away, and the endpoint is gone once the fleet stopped. (The command line's
``--metrics-port``: tests/integration/test_fleet.py.)"""

from __future__ import annotations

import os
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance.conftest import wait_until

import skiplock

parser = pytest.importorskip("prometheus_client.parser")

HERE = __name__.rpartition(".")[0]
PACKAGE = f"{HERE}." if HERE else ""

#: (sample name, its labels sorted) → value
Scrape = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(address: tuple[str, int]) -> Scrape:
    host, port = address
    text = urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10).read().decode()
    found: Scrape = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def total(found: Scrape, name: str, **labels: str) -> float:
    """The sum of *name*'s samples whose labels include *labels*."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= set(ls))


def done(found: Scrape) -> float:
    return total(found, "skiplock_jobs_processed_total", outcome="done")


class Watched:
    """Every scrape taken, to check that no counter ever went down between two."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.seen: list[Scrape] = []

    def __call__(self) -> Scrape:
        found = scrape(self.address)
        self.seen.append(found)
        return found

    def monotonic(self) -> None:
        for before, after in zip(self.seen, self.seen[1:], strict=False):
            for key, value in before.items():
                name = key[0]
                if name.endswith(("_total", "_bucket", "_count", "_sum")):
                    assert after.get(key, 0.0) >= value, (key, value, after.get(key))


@pytest.fixture
def running(queue: skiplock.Queue, url: str) -> Iterator[tuple[skiplock.Fleet, list[int]]]:
    """A fleet of 2 processes on the test's table, its /metrics on a port the system
    chose, run on a thread (stopped at the end if the test did not)."""
    fleet = skiplock.Fleet(
        f"{PACKAGE}fleet_metrics:work",
        2,
        url=url,
        table=queue.table.name,
        concurrency=2,
        lease=2,
        poll_interval=0.05,
        metrics_port=0,
    )
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(fleet.run()), daemon=True)
    thread.start()
    yield fleet, status
    fleet.stop()
    thread.join(90)
    assert not thread.is_alive()


def test_one_endpoint_sums_the_processes_and_keeps_the_counts_of_the_dead(
    queue: skiplock.Queue, running: tuple[skiplock.Fleet, list[int]], tmp_path: Path
) -> None:
    fleet, status = running
    assert fleet.metrics is not None
    wait_until(lambda: fleet.metrics.address is not None, 30, "the fleet's /metrics")  # type: ignore[union-attr]
    address = fleet.metrics.address
    assert address is not None and address[0] == "127.0.0.1"  # loopback unless told
    watch = Watched(address)
    wait_until(lambda: total(watch(), "skiplock_fleet_processes") == 2, 60, "2 processes")
    # both claiming (listed as live workers) before the jobs come: on a loaded machine the
    # first process to claim could otherwise run them all while the second still starts
    wait_until(lambda: len(queue.workers()) == 2, 60, "2 live workers")

    k = 200
    ids = queue.enqueue_many([{"sleep": 0.01}] * k)
    wait_until(lambda: queue.stats().done == k, 90, f"{k} jobs done")
    pids = {queue.get(i).result for i in ids}  # type: ignore[union-attr]
    assert len(pids) == 2  # both processes ran jobs: the endpoint's numbers are their sum
    wait_until(lambda: done(watch()) == k, 30, f"{k} done on the endpoint")
    found = watch.seen[-1]
    assert total(found, "skiplock_job_duration_seconds_count") == k
    assert total(found, "skiplock_job_wait_seconds_count") == k
    assert total(found, "skiplock_job_duration_seconds_bucket", le="+Inf") == k
    assert total(found, "skiplock_jobs_processed_total", outcome="failed") == 0
    assert total(found, "skiplock_fleet_process_restarts_total") == 0

    # a process killed (SIGKILL) while it runs a job: what it counted stays
    pidfile = tmp_path / "pid"
    held = queue.enqueue({"pidfile": str(pidfile), "hold": 60})
    wait_until(pidfile.exists, 30, "the held job running")
    wait_until(lambda: pidfile.read_text().strip() != "", 5, "its pid written")
    victim = int(pidfile.read_text())
    assert victim in pids  # it had done some of the k jobs
    wait_until(lambda: total(watch(), "skiplock_worker_jobs_in_flight") == 1, 10, "in flight")
    os.kill(victim, signal.SIGKILL)
    wait_until(
        lambda: total(watch(), "skiplock_fleet_process_restarts_total") == 1, 30, "a restart"
    )
    assert done(watch.seen[-1]) == k  # nothing of the dead process's share went
    wait_until(lambda: total(watch(), "skiplock_fleet_processes") == 2, 60, "replaced")

    # more jobs, until the new process has run some of them too (it may still be starting)
    n = k + 1  # the held job comes back once its 2 s lease ends, as attempt 2, and is done
    for _ in range(40):
        more = queue.enqueue_many([{"sleep": 0.01}] * 50)
        n += len(more)
        wait_until(lambda: queue.stats().done == n, 90, f"{n} jobs done")  # noqa: B023
        if {queue.get(i).result for i in more} - pids:  # type: ignore[union-attr]
            break
    else:
        raise AssertionError("the new process ran no job")
    wait_until(lambda: done(watch()) == n, 30, "all of them on the endpoint")
    assert queue.get(held).attempt == 2  # type: ignore[union-attr]
    assert total(watch(), "skiplock_worker_jobs_in_flight") == 0
    watch.monotonic()

    # a clean stop: 0, and the endpoint is gone (the supervisor's process still runs)
    fleet.stop()
    wait_until(lambda: status, 60, "the fleet stopped")
    assert status == [0]
    assert fleet.metrics.address is None
    with pytest.raises(urllib.error.URLError):
        scrape(address)


def test_a_fleets_processes_run_the_middleware(queue: skiplock.Queue, url: str) -> None:
    from .fleet_metrics import wrap

    fleet = skiplock.Fleet(
        f"{PACKAGE}fleet_metrics:work", url=url, table=queue.table.name, middleware=[wrap]
    )
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(fleet.run()), daemon=True)
    thread.start()
    try:
        job_id = queue.enqueue({})
        wait_until(lambda: queue.stats().done == 1, 60, "the job done")
    finally:
        fleet.stop()
        thread.join(90)
    record = queue.get(job_id)
    assert record is not None and set(record.result) == {"wrapped"}
    assert record.result["wrapped"] != os.getpid()  # run in the fleet's process
    assert status == [0]
