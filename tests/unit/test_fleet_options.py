"""skiplock.Fleet and ``skiplock worker --processes``: the checks made before any process
starts (no server, no process started)."""

from __future__ import annotations

import logging
import os
import socket

import pytest

import skiplock
from skiplock._fleet import process_count
from skiplock._fleet.metrics import FleetMetrics, Report
from skiplock._fleet.target import load_target, target_name
from skiplock.cli.main import EXIT_CODES, build_parser, main

#: found by its module-level name, as a fleet's processes import it again
app = skiplock.App("postgresql://nobody@127.0.0.1:1/none", table="fleet_unit")


def handler(job: skiplock.Job) -> None:
    pass


def test_processes_is_a_number_or_auto() -> None:
    assert process_count(3) == 3
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert process_count("auto") == cpus >= 1
    for bad in (0, 1001, -1, True, "3", 2.5, None):
        with pytest.raises(skiplock.ConfigurationError, match="processes"):
            process_count(bad)  # type: ignore[arg-type]


def test_the_target_is_named_for_the_processes_to_import() -> None:
    assert skiplock.Fleet(handler).spec.target == f"{__name__}:handler"
    assert skiplock.Fleet(app, 2).spec.target == f"{__name__}:app"  # an App: by its name
    assert load_target(target_name(app)) is app
    assert skiplock.Fleet(f"{__name__}:app").spec.target == f"{__name__}:app"


def test_what_cannot_be_imported_by_name_is_refused() -> None:
    with pytest.raises(skiplock.ConfigurationError, match="top level of a module"):
        skiplock.Fleet(lambda job: None)
    with pytest.raises(skiplock.ConfigurationError, match="top level of a module"):
        skiplock.Fleet(skiplock.App("postgresql://x@h/db"))  # held by no module
    with pytest.raises(skiplock.ConfigurationError, match="cannot import 'no_such_mod'"):
        skiplock.Fleet("no_such_mod:app")
    with pytest.raises(skiplock.ConfigurationError, match="has no attribute 'nope'"):
        skiplock.Fleet(f"{__name__}:nope")
    with pytest.raises(skiplock.ConfigurationError, match="module:app"):
        skiplock.Fleet("no colon")


def test_what_is_neither_an_app_nor_a_function_is_refused_before_any_process() -> None:
    """Before: 5 was found as some module's attribute (small ints are shared) and
    ``os:sep`` imported, and each process then failed to start its worker."""
    for bad in (5, "os:sep", f"{__name__}:__doc__"):
        with pytest.raises(skiplock.ConfigurationError, match=r"neither a skiplock\.App nor"):
            skiplock.Fleet(bad)


def test_options_the_processes_cannot_take_are_refused() -> None:
    with pytest.raises(skiplock.ConfigurationError, match="single mode"):
        skiplock.Fleet(handler, 2, mode="single")
    skiplock.Fleet(handler, 1, mode="single")  # one process: the lock's one worker
    with pytest.raises(skiplock.ConfigurationError, match="metrics_port"):
        skiplock.Fleet(handler, 2, metrics_port=70000)
    with pytest.raises(skiplock.ConfigurationError, match="metrics_host"):
        skiplock.Fleet(handler, 2, metrics_port=9100, metrics_host="")
    # one endpoint for the fleet, served by the supervisor: not passed to the processes
    fleet = skiplock.Fleet(handler, 2, metrics_port=9100)
    assert fleet.metrics is not None and fleet.metrics.address is None  # not yet serving
    assert "metrics_port" not in fleet.spec.options and fleet.spec.report_metrics
    assert skiplock.Fleet(handler, 2).metrics is None
    with pytest.raises(skiplock.ConfigurationError, match="top level of a module"):
        skiplock.Fleet(handler, timeout=lambda job: 1.0)  # cannot be sent to a process
    with pytest.raises(skiplock.ConfigurationError, match="grace"):
        skiplock.Fleet(handler, grace=-1)


def test_the_command_line_takes_processes() -> None:
    parse = build_parser().parse_args
    assert parse(["worker", "m:app", "--processes", "4"]).processes == 4
    assert parse(["worker", "m:app", "--processes", "auto"]).processes == "auto"
    assert parse(["worker", "m:app"]).processes is None  # one worker, no supervisor
    for bad in ("0", "many", "1001", "+2", "\u0662", " 3"):
        with pytest.raises(SystemExit) as exc:
            parse(["worker", "m:app", "--processes", bad])
        assert exc.value.code == 2


def test_the_command_line_needs_a_url_before_it_starts_processes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SKIPLOCK_URL", raising=False)
    assert main(["worker", f"{__name__}:handler", "--processes", "2"]) == EXIT_CODES["config"]
    assert "no database URL: pass --url URL" in capsys.readouterr().err


def test_a_metrics_port_in_use_is_refused_before_any_process_starts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        fleet = skiplock.Fleet(handler, 2, url="postgresql://x@127.0.0.1:1/x", metrics_port=port)
        with (
            caplog.at_level(logging.INFO, logger="skiplock.fleet"),
            pytest.raises(skiplock.ConfigurationError, match=f"127.0.0.1:{port}"),
        ):
            fleet.run()
    assert "started" not in caplog.text  # no process was


def report(done: float, in_flight: float, bucket: float) -> Report:
    """What a process sends: a counter, a gauge and a histogram's samples."""
    queue = (("queue", "default"),)
    return (
        (
            ("skiplock_jobs_processed", "counter", "attempts"),
            (("skiplock_jobs_processed_total", (("outcome", "done"), *queue), done),),
        ),
        (
            ("skiplock_worker_jobs_in_flight", "gauge", "running"),
            (("skiplock_worker_jobs_in_flight", (), in_flight),),
        ),
        (
            ("skiplock_job_wait_seconds", "histogram", "wait"),
            (
                ("skiplock_job_wait_seconds_bucket", (("le", "+Inf"), *queue), bucket),
                ("skiplock_job_wait_seconds_count", queue, bucket),
            ),
        ),
    )


def samples(metrics: FleetMetrics) -> dict[str, float]:
    return {s.name: s.value for m in metrics.collect() for s in m.samples}


def test_the_fleets_metrics_sum_the_processes_and_keep_what_ended_ones_counted() -> None:
    metrics = FleetMetrics(0, "127.0.0.1")
    metrics.started(1)
    metrics.started(2)
    metrics.report(1, report(done=5, in_flight=2, bucket=6))
    metrics.report(2, report(done=3, in_flight=1, bucket=4))
    metrics.report(1, report(done=7, in_flight=1, bucket=8))  # a process's totals: replaced
    assert samples(metrics) == {
        "skiplock_jobs_processed_total": 10,
        "skiplock_worker_jobs_in_flight": 2,
        "skiplock_job_wait_seconds_bucket": 12,
        "skiplock_job_wait_seconds_count": 12,
        "skiplock_fleet_processes": 2,
        "skiplock_fleet_process_restarts_total": 0,
    }
    metrics.ended(1)  # killed: its counts stay, its gauge goes
    metrics.started(1)
    found = samples(metrics)
    assert found["skiplock_jobs_processed_total"] == 10
    assert found["skiplock_worker_jobs_in_flight"] == 1
    assert found["skiplock_fleet_process_restarts_total"] == 1
    metrics.report(1, report(done=1, in_flight=1, bucket=1))  # the new one counts from 0
    found = samples(metrics)
    assert found["skiplock_jobs_processed_total"] == 11
    assert found["skiplock_job_wait_seconds_count"] == 13
    assert found["skiplock_worker_jobs_in_flight"] == 2
    metrics.ended(1)
    metrics.ended(2)
    found = samples(metrics)
    assert found["skiplock_jobs_processed_total"] == 11
    assert (found["skiplock_fleet_processes"], found.get("skiplock_worker_jobs_in_flight")) == (
        0,
        None,
    )
