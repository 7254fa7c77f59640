"""``skiplock worker APP --processes N``: the supervisor and its processes, for real.

Each test runs ``python -m skiplock worker fleet_app:app --processes N`` (see
``fleet_app.py``) as a subprocess against the backend's server, and checks the jobs' rows
and the side tables their handler writes: a drain by three processes (each job's result
row written once), a child killed with SIGKILL (restarted; its job back after its lease),
SIGTERM to the supervisor (exit 0; the children release their unfinished jobs), and a sync
handler past its timeout (its process ends and is replaced; the job is retried, then
failed; a job running beside it is released and later done once).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance.conftest import wait_until

import skiplock

from .test_fleet_metrics import scrape, total

HERE = Path(__file__).parent


def rows(q: skiplock.Queue, table: str) -> list[tuple[int, int, int]]:
    """(job_id, attempt, pid) of every row of *table*."""
    with q.transaction() as tx:
        cur = tx.connection.cursor()
        cur.execute(f"SELECT job_id, attempt, pid FROM {q.dialect.quote(table)}")
        found = [(int(a), int(b), int(c)) for a, b, c in cur.fetchall()]
        cur.close()
    return found


class Running:
    """A ``skiplock worker fleet_app:app --processes N`` under test, its log in a file."""

    def __init__(self, env: dict[str, str], log: Path, target: str, *args: str) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "skiplock", "worker", target, *args],
                cwd=HERE,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the teardown can end the whole group
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.text()))

    def wait_for(self, pattern: str, n: int = 1, timeout: float = 60.0) -> None:
        try:
            wait_until(lambda: self.count(pattern) >= n, timeout, f"{n} x {pattern!r}")
        except AssertionError:
            raise AssertionError(f"no {n} x {pattern!r} in the log:\n{self.text()}") from None

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM to the supervisor alone; its exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the fleet did not stop:\n{self.text()}") from None

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """A scrape of the fleet's /metrics (``--metrics-port 0``: the port from its log)."""
        self.wait_for(r"metrics of the fleet on http://")
        [(host, port)] = re.findall(r"metrics of the fleet on http://([\d.]+):(\d+)/", self.text())
        return scrape((host, int(port)))

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def fleet(queue: skiplock.Queue, url: str, tmp_path: Path) -> Iterator[Any]:
    """``fleet(processes, *options)`` starts one; every one is killed at the end if it
    still runs. The side tables (``queue.started``, ``queue.results``) are made here."""
    base = queue.table.name
    side = {"FLEET_STARTED": f"{base}_st", "FLEET_RESULTS": f"{base}_res"}
    with queue.transaction() as tx:
        for name in side.values():
            tx.execute(f"DROP TABLE IF EXISTS {queue.dialect.quote(name)}")
            tx.execute(
                f"CREATE TABLE {queue.dialect.quote(name)} (job_id BIGINT NOT NULL, "
                "attempt INT NOT NULL, pid INT NOT NULL)"
            )
    env = {**os.environ, "SKIPLOCK_URL": url, "FLEET_TABLE": base, **side}
    started: list[Running] = []

    def start(processes: int, *options: str, target: str = "fleet_app:app") -> Running:
        log = tmp_path / f"fleet{len(started)}.log"
        running = Running(env, log, target, "--processes", str(processes), *options)
        started.append(running)
        return running

    start.started_table, start.results_table = side["FLEET_STARTED"], side["FLEET_RESULTS"]  # type: ignore[attr-defined]
    yield start
    for running in started:
        running.kill()
    with queue.transaction() as tx:
        for name in side.values():
            tx.execute(f"DROP TABLE IF EXISTS {queue.dialect.quote(name)}")


def call(task: str, **kwargs: Any) -> dict[str, Any]:
    return {"task": task, "args": [], "kwargs": kwargs}


def test_three_processes_drain_each_job_once(queue: skiplock.Queue, fleet: Any) -> None:
    run = fleet(3, "--concurrency", "2", "--lease", "5", "--metrics-port", "0")
    run.wait_for(r"worker started", 3)
    ids = queue.enqueue_many([call("record", sleep=0.01)] * 300)
    wait_until(lambda: queue.stats().done == 300, 90, "300 jobs done")
    # one endpoint, served by the supervisor: the three processes' counts summed
    done = {"outcome": "done", "task": "record"}
    processed = "skiplock_jobs_processed_total"
    wait_until(lambda: total(run.metrics(), processed, **done) == 300, 30, "300 on /metrics")
    # its server's thread blocks SIGTERM and SIGINT, so they reach the main thread (a
    # signal the kernel gave that thread would be lost while a process starts)
    stops = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    seen = []
    for task in Path(f"/proc/{run.proc.pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except FileNotFoundError:  # a thread that ended meanwhile (one that served a scrape)
            continue
        blocked = int(re.findall(r"SigBlk:\s*([0-9a-f]+)", status)[0], 16)
        main = task.name == str(run.proc.pid)
        assert (blocked & stops == stops) != main, (task.name, hex(blocked))
        seen.append(main)
    assert True in seen and False in seen, seen  # the main thread and the server's
    assert total(run.metrics(), "skiplock_job_duration_seconds_count", task="record") == 300
    assert run.stop() == 0, run.text()
    results = rows(queue, fleet.results_table)
    assert Counter(job for job, _, _ in results) == Counter(ids)  # each once, none missing
    assert len({pid for _, _, pid in results}) == 3  # every process ran jobs
    text = run.text()
    assert len(re.findall(r"process \d \(pid \d+\) stopped", text)) == 3
    assert "fleet stopped (exit status 0)" in text


def test_a_killed_process_is_restarted_and_its_job_comes_back(
    queue: skiplock.Queue, fleet: Any
) -> None:
    run = fleet(2, "--concurrency", "1", "--lease", "2")
    run.wait_for(r"worker started", 2)
    job_id = queue.enqueue(call("record", sleep=1.5))
    wait_until(lambda: rows(queue, fleet.started_table), 30, "the job started")
    [(_, attempt, pid)] = rows(queue, fleet.started_table)
    assert attempt == 1
    os.kill(pid, signal.SIGKILL)
    run.wait_for(rf"\(pid {pid}\) was killed by SIGKILL after [\d.]+s; restarting it in")
    run.wait_for(r"worker started", 3)  # its replacement
    wait_until(lambda: queue.stats().done == 1, 60, "the job done")
    record = queue.get(job_id)
    assert record is not None and record.attempt == 2  # taken again once its lease ended
    [(_, attempt, by)] = rows(queue, fleet.results_table)
    assert (attempt, by != pid) == (2, True)
    assert run.stop() == 0, run.text()


def test_sigterm_stops_the_fleet_and_releases_unfinished_jobs(
    queue: skiplock.Queue, fleet: Any
) -> None:
    run = fleet(2, "--concurrency", "2", "--lease", "60", "--grace", "0.5")
    run.wait_for(r"worker started", 2)
    ids = queue.enqueue_many([call("record", sleep=60)] * 4)
    wait_until(lambda: len(rows(queue, fleet.started_table)) == 4, 30, "4 jobs running")
    assert len({pid for _, _, pid in rows(queue, fleet.started_table)}) == 2
    began = time.monotonic()
    assert run.stop() == 0, run.text()
    assert time.monotonic() - began < 15
    for job_id in ids:
        record = queue.get(job_id)
        assert record is not None
        # released: pending now (its 60 s lease would keep it running), the attempt kept
        # and not counted (max_attempts grew by one from 5), no error recorded
        assert (record.status, record.attempt, record.max_attempts) == ("pending", 1, 6)
        assert record.last_error is None
    assert rows(queue, fleet.results_table) == []
    assert run.count(r"released job \d+ attempt 1") == 4


def test_repeated_sigterms_to_the_group_do_not_kill_the_processes(
    queue: skiplock.Queue, fleet: Any
) -> None:
    """GNU timeout signals the supervisor, then the whole group: each process gets SIGTERM
    twice, the supervisor too. Neither counts it as a second signal."""
    run = fleet(2, "--concurrency", "1", "--lease", "60", "--grace", "1")
    run.wait_for(r"worker started", 2)
    ids = queue.enqueue_many([call("record", sleep=60)] * 2)
    wait_until(lambda: len(rows(queue, fleet.started_table)) == 2, 30, "2 jobs running")
    for _ in range(2):
        os.killpg(run.proc.pid, signal.SIGTERM)
        time.sleep(0.3)  # apart, so that each is delivered (pending ones merge)
    assert run.proc.wait(60) == 0, run.text()
    text = run.text()
    assert "signal 15 again: still stopping" in text, text
    assert "exiting now" not in text and "killing process" not in text, text
    for job_id in ids:  # released at the end of the grace, not left to their leases
        record = queue.get(job_id)
        assert record is not None and (record.status, record.attempt) == ("pending", 1)
    assert run.count(r"process \d \(pid \d+\) stopped") == 2


def gone(pid: int) -> bool:
    """*pid* has ended (a zombie no one reaps counts: the supervisor that would is dead)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_a_signal_to_the_whole_group_as_the_processes_start(fleet: Any) -> None:
    run = fleet(2)
    run.wait_for(r"process 2 started")  # importing, far from running their workers
    os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole group
    assert run.proc.wait(60) == 0, run.text()
    assert run.count(r"process \d \(pid \d+\) stopped") == 2
    assert "Traceback" not in run.text()


def test_a_sigterm_during_the_first_start_is_not_lost(
    queue: skiplock.Queue, url: str, tmp_path: Path
) -> None:
    """The first ``process.start()`` launches multiprocessing's resource tracker, which
    unblocks SIGINT and SIGTERM as it returns: a SIGTERM that came while the supervisor had
    them ignored around that start was discarded, and the fleet ran on. Here the start
    lasts until the new interpreter has read its large spec (fleet_big_spec.py), and the
    SIGTERM is sent as soon as the supervisor logs that it begins."""
    env = {**os.environ, "SKIPLOCK_URL": url, "FLEET_TABLE": queue.table.name}
    log = tmp_path / "fleet.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "fleet_big_spec.py"],
            cwd=HERE,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while b"supervises)" not in log.read_bytes():  # logged just before the first start
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.001)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the SIGTERM was lost:\n{log.read_text()}") from None
        text = log.read_text()
        assert code == 0, text
        assert "signal 15: stopping 1 process" in text, text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_processes_stop_when_the_supervisor_dies(queue: skiplock.Queue, fleet: Any) -> None:
    run = fleet(2, "--concurrency", "1", "--lease", "60", "--grace", "0.5")
    run.wait_for(r"worker started", 2)
    ids = queue.enqueue_many([call("record", sleep=60)] * 2)
    wait_until(lambda: len(rows(queue, fleet.started_table)) == 2, 30, "2 jobs running")
    pids = {pid for _, _, pid in rows(queue, fleet.started_table)}
    os.kill(run.proc.pid, signal.SIGKILL)  # the supervisor alone
    run.proc.wait()
    wait_until(lambda: all(gone(pid) for pid in pids), 30, "its processes ended")
    assert run.count(r"the fleet's supervisor is gone: stopping") == 2
    for job_id in ids:  # released, not left to their 60 s leases
        record = queue.get(job_id)
        assert record is not None and (record.status, record.attempt) == ("pending", 1)


def hang_beside(queue: skiplock.Queue, run: Running, beside: Any) -> tuple[int, int, int]:
    """Enqueue ``hang`` (timeout 1 s, 2 attempts) and *beside* in one commit, so that one
    claim of the fleet's one process takes both; wait for ``hang`` to fail at its second
    attempt. The first process's pid, ``hang``'s id and *beside*'s."""
    run.wait_for(r"worker started", 1)
    first = int(re.findall(r"process 1 started \(pid (\d+)\)", run.text())[0])
    with queue.transaction() as tx:
        hang = tx.enqueue(call("hang"), max_attempts=2)
        other = tx.enqueue(beside)
    wait_until(lambda: queue.stats().failed == 1, 90, "the hanging job failed")
    record = queue.get(hang)
    assert record is not None and (record.status, record.attempt) == ("failed", 2)
    assert record.last_error is not None and record.last_error.startswith("TimeoutError")
    return first, hang, other


def test_a_handler_past_its_timeout_ends_its_process(queue: skiplock.Queue, fleet: Any) -> None:
    run = fleet(1, "--concurrency", "2", "--lease", "3", "--metrics-port", "0")
    first, _, beside = hang_beside(queue, run, call("record", sleep=3))
    wait_until(lambda: queue.stats().done == 1, 90, "the job beside it done")
    # the job beside it ran in the first process, was released when that ended, and was
    # done once, by another process, never failed
    assert (beside, 1, first) in rows(queue, fleet.started_table)
    [(_, _, by)] = [r for r in rows(queue, fleet.results_table) if r[0] == beside]
    assert by != first
    done = queue.get(beside)
    assert done is not None and done.status == "done" and done.last_error is None
    # the job's end is written before its process ends: the second restart's line may
    # follow the failed row by a moment
    run.wait_for(r"ended after a handler passed its timeout; starting another", 2)
    text = run.text()
    assert f"released job {beside} attempt 1" in text
    assert f"process 1 (pid {first}) ended after a handler passed its timeout" in text
    assert run.count(r"ended after a handler passed its timeout; starting another") == 2
    # each process that ended at a timeout sent its last counts first
    processed = "skiplock_jobs_processed_total"
    done_on = lambda: total(run.metrics(), processed, task="record", outcome="done")  # noqa: E731
    wait_until(lambda: done_on() == 1, 30, "the job beside it done on /metrics")
    found = run.metrics()
    assert total(found, processed, task="hang", outcome="retried") == 1
    assert total(found, processed, task="hang", outcome="failed") == 1
    assert total(found, "skiplock_job_timeouts_total", task="hang") == 2
    # released as each process ended (once or twice: it may have run beside attempt 2)
    released = run.count(rf"released job {beside} attempt")
    assert total(found, processed, task="record", outcome="released") == released >= 1
    assert total(found, "skiplock_fleet_process_restarts_total") == 2
    assert run.stop() == 0, run.text()


def test_a_handler_past_its_timeout_during_a_stop_ends_its_process_and_the_fleet_exits_0(
    queue: skiplock.Queue, fleet: Any
) -> None:
    """Stopped while a handler hangs (grace 120 s): at its timeout (4 s) the process
    writes it and ends itself; the fleet exits 0 without waiting out the grace, and
    without its backstop's SIGKILL (a heartbeat and 10 s past the deadline)."""
    run = fleet(1, "--lease", "30", "--grace", "120")
    run.wait_for(r"worker started", 1)
    hang = queue.enqueue(call("hang_long"))
    wait_until(lambda: rows(queue, fleet.started_table), 30, "the handler to start")
    began = time.monotonic()
    assert run.stop() == 0, run.text()
    assert time.monotonic() - began < 12, run.text()
    record = queue.get(hang)
    assert record is not None and (record.status, record.attempt) == ("pending", 1)
    assert record.last_error is not None and record.last_error.startswith("TimeoutError")
    text = run.text()
    assert "stopped (ended under a handler past its timeout)" in text, text
    assert "SIGKILL" not in text and "starting another" not in text, text


def test_an_app_with_async_tasks_runs_an_async_worker_in_each_process(
    queue: skiplock.Queue, fleet: Any
) -> None:
    run = fleet(2, "--concurrency", "5", "--metrics-port", "0", target="fleet_async_app:app")
    run.wait_for(r"worker started", 2)
    assert run.count(r"handlers on the event loop") == 2
    ids = queue.enqueue_many([call("pid", sleep=0.3)] * 40)  # long enough for both
    wait_until(lambda: queue.stats().done == 40, 60, "40 jobs done")
    pids = {record.result for record in map(queue.get, ids) if record is not None}
    assert len(pids) == 2 and run.proc.pid not in pids
    counted = lambda: total(run.metrics(), "skiplock_jobs_processed_total", outcome="done")  # noqa: E731
    wait_until(lambda: counted() == 40, 30, "40 on /metrics")
    assert run.stop() == 0, run.text()


def test_a_sync_task_past_its_timeout_ends_its_process_in_an_async_fleet(
    queue: skiplock.Queue, fleet: Any
) -> None:
    """An App with an ``async def`` task runs an AsyncWorker in each process, and its sync
    tasks in threads: one past its timeout ends its process as in a sync fleet (its thread
    would run on, and the timeout would stop nothing), while an async job beside it is
    released and done once, elsewhere."""
    run = fleet(1, "--concurrency", "2", "--lease", "3", target="fleet_async_app:app")
    first, _, beside = hang_beside(queue, run, call("pid", sleep=2))
    run.wait_for(r"ended after a handler passed its timeout; starting another", 2)
    assert f"process 1 (pid {first}) ended after a handler passed its timeout" in run.text()
    assert f"released job {beside} attempt 1" in run.text()
    wait_until(lambda: queue.stats().done == 1, 60, "the job beside it done")
    done = queue.get(beside)
    assert done is not None and done.result != first and done.last_error is None
    assert "killing" not in run.text()  # it ended itself: no backstop
    assert run.stop() == 0, run.text()


def test_a_handler_holding_the_gil_is_killed_before_its_lease_can_end(
    queue: skiplock.Queue, fleet: Any
) -> None:
    """A handler in C code that holds the GIL past its timeout (``hold_gil``) freezes its
    process: no heartbeat, so its 3 s lease runs out. The supervisor kills the process
    before that (not a heartbeat and 10 s after the deadline), so the next attempt, in the
    other process, starts only once the first process is dead (it writes whether the first
    one still lived)."""
    run = fleet(2, "--concurrency", "1", "--lease", "3", "--heartbeat", "1")
    run.wait_for(r"worker started", 2)
    job_id = queue.enqueue(call("hold_gil"), max_attempts=2)
    wait_until(lambda: queue.stats().done == 1, 60, "the second attempt done")
    [(first_pid_if_alive_then, attempt)] = [
        (pid, attempt) for job, attempt, pid in rows(queue, fleet.results_table) if job == job_id
    ]
    assert attempt == 2
    assert first_pid_if_alive_then == 0, f"attempt 1's process still ran:\n{run.text()}"
    text = run.text()
    assert f"job {job_id} attempt 1 passed its timeout" in text, text
    assert f"job {job_id} attempt 1: timeout written (pending)" in text, text
    assert run.stop() == 0, run.text()


def test_a_worker_that_cannot_start_stops_the_fleet(fleet: Any) -> None:
    run = fleet(1, "--lease", "0")  # refused by the process's Worker
    assert run.proc.wait(60) == 3, run.text()
    assert "could not run its worker (exited with code 3: configuration" in run.text()
    assert "lease must be" in run.text()
