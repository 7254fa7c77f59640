"""A fleet's process frozen by SIGSTOP while its handler passes its timeout cannot end
itself: the supervisor's backstop kills it, writes that attempt's timeout (a fenced fail
with the Job the process reported) and starts another. ``skiplock.Fleet(...).run()`` runs
on a thread of the test with the backstop's slack shortened to 0.5 s; about 12-19 s per
backend (a fault test: the full run's serial phase). The second test does the same while
the supervisor's own connection hangs (a proxy that holds the server's replies): its
write waits on a thread of its own, and the supervisor goes on restarting its process and
answers the stop."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading

import pytest
from conformance.conftest import wait_until
from conformance.proxy import Proxy

import skiplock
from skiplock._fleet import supervisor


@pytest.fixture
def shortened(
    queue: skiplock.Queue,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The backstop's slack at 0.5 s; fleet_app's URL and table for the processes (what it
    reads as it is imported); the fleet's log captured."""
    monkeypatch.setattr(supervisor, "KILL_SLACK", 0.5)
    monkeypatch.setenv("SKIPLOCK_URL", url)
    monkeypatch.setenv("FLEET_TABLE", queue.table.name)
    caplog.set_level(logging.INFO, logger="skiplock.fleet")


@pytest.mark.usefixtures("shortened")
def test_a_frozen_process_is_killed_by_the_supervisor(
    queue: skiplock.Queue, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fleet = skiplock.Fleet(
        "integration.fleet_app:app",
        url=url,
        table=queue.table.name,
        concurrency=1,
        lease=3,
        timeout=2.0,
        grace=1,
    )
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(fleet.run()))
    runner.start()
    try:
        hang = queue.enqueue({"task": "hang", "args": [], "kwargs": {}}, max_attempts=2)

        def running() -> bool:
            record = queue.get(hang)
            return record is not None and record.status == "running"

        wait_until(running, 60, "the handler running")
        # and its deadline reported (a process frozen before it is a lease's business)
        wait_until(lambda: fleet._children[0].jobs, 30, "the deadline reported")
        process = fleet._children[0].process
        assert process is not None and process.pid is not None
        os.kill(process.pid, signal.SIGSTOP)  # it can no longer end itself
        wait_until(lambda: "did not end itself" in caplog.text, 30, "the backstop")
        assert f"process 1 (pid {process.pid}): job {hang} attempt 1 passed its timeout" in (
            caplog.text
        )
        # the supervisor wrote the timeout, fenced by the Job the process sent it
        wait_until(lambda: f"job {hang} attempt 1: timeout written (pending)" in caplog.text, 30)
        record = queue.get(hang)
        assert record is not None and (record.attempt, record.last_error) == (
            1,
            f"TimeoutError: job {hang} attempt 1 exceeded its timeout (its process did not "
            "end itself and was killed)",
        )

        def failed() -> bool:
            record = queue.get(hang)
            return record is not None and record.status == "failed"

        # attempt 2 ran in the replacement, whose process ended itself
        wait_until(failed, 60, "the job failed")
        record = queue.get(hang)
        assert record is not None and record.attempt == 2
        assert record.last_error == f"TimeoutError: job {hang} attempt 2 exceeded its timeout"
        wait_until(lambda: caplog.text.count("passed its timeout; starting another") == 2, 30)
    finally:
        fleet.stop()
        runner.join(60)
    assert codes == [0], caplog.text


@pytest.mark.usefixtures("shortened")
def test_a_backstop_write_that_hangs_does_not_stop_the_supervisor(
    queue: skiplock.Queue,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(supervisor, "WRITER_JOIN", 0.5)
    with Proxy(url) as proxy:
        # the supervisor's App (this process's): through the proxy, its connection open
        app = importlib.import_module("integration.fleet_app").app
        app.use(proxy.url, table=queue.table.name)
        app.queue.stats()
        fleet = skiplock.Fleet("integration.fleet_app:app", concurrency=1, lease=3, grace=1)
        codes: list[int] = []
        runner = threading.Thread(target=lambda: codes.append(fleet.run()))
        runner.start()
        try:
            hang = queue.enqueue({"task": "hang", "args": [], "kwargs": {}}, max_attempts=2)
            wait_until(lambda: fleet._children[0].jobs, 60, "the deadline reported")
            process = fleet._children[0].process
            assert process is not None and process.pid is not None
            proxy.hold_replies()  # the backstop's write gets no answer, for ever
            os.kill(process.pid, signal.SIGSTOP)
            wait_until(lambda: "did not end itself" in caplog.text, 30, "the backstop")
            # its write hangs, yet the killed process is replaced
            wait_until(lambda: caplog.text.count("process 1 started") == 2, 30, "a restart")
            assert f"job {hang} attempt 1: timeout written" not in caplog.text
            fleet.stop()
            runner.join(60)
            assert not runner.is_alive(), caplog.text
            assert codes == [0], caplog.text
        finally:
            fleet.stop()
            proxy.release_replies()
            runner.join(60)
