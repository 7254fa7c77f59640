"""skiplock.Fleet and ``skiplock worker --processes``: the checks made before any process
starts (no server, no process started)."""

from __future__ import annotations

import os

import pytest

import skiplock
from skiplock._fleet import process_count
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


def test_options_the_processes_cannot_take_are_refused() -> None:
    with pytest.raises(skiplock.ConfigurationError, match="single mode"):
        skiplock.Fleet(handler, 2, mode="single")
    skiplock.Fleet(handler, 1, mode="single")  # one process: the lock's one worker
    with pytest.raises(skiplock.ConfigurationError, match="metrics_port"):
        skiplock.Fleet(handler, 2, metrics_port=9100)  # each process would bind it
    skiplock.Fleet(handler, 1, metrics_port=9100)
    with pytest.raises(skiplock.ConfigurationError, match="top level of a module"):
        skiplock.Fleet(handler, timeout=lambda job: 1.0)  # cannot be sent to a process
    with pytest.raises(skiplock.ConfigurationError, match="grace"):
        skiplock.Fleet(handler, grace=-1)


def test_the_command_line_takes_processes() -> None:
    parse = build_parser().parse_args
    assert parse(["worker", "m:app", "--processes", "4"]).processes == 4
    assert parse(["worker", "m:app", "--processes", "auto"]).processes == "auto"
    assert parse(["worker", "m:app"]).processes is None  # one worker, no supervisor
    for bad in ("0", "many", "1001"):
        with pytest.raises(SystemExit) as exc:
            parse(["worker", "m:app", "--processes", bad])
        assert exc.value.code == 2


def test_the_command_line_needs_a_url_before_it_starts_processes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SKIPLOCK_URL", raising=False)
    assert main(["worker", f"{__name__}:handler", "--processes", "2"]) == EXIT_CODES["config"]
    assert "no database URL: pass --url URL" in capsys.readouterr().err
