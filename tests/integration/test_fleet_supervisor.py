"""The fleet's supervisor from Python (``skiplock.Fleet(...).run()`` in the test's
process, its restart delay shortened): a crash loop stops the fleet with 1 after
CRASH_LIMIT (5) starts. (The SIGSTOP backstop:
tests/reliability/test_fleet_frozen.py.)"""

from __future__ import annotations

import logging

import pytest

import skiplock
from skiplock._fleet import supervisor

HERE = __name__.rpartition(".")[0]
PACKAGE = f"{HERE}." if HERE else ""


def test_a_crash_loop_stops_the_fleet(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(supervisor, "RESTART_DELAY", 0.01)
    caplog.set_level(logging.INFO, logger="skiplock.fleet")
    fleet = skiplock.Fleet(f"{PACKAGE}fleet_crash:handler", url="postgresql://x@127.0.0.1:1/x")
    assert fleet.run() == 1
    # started 5 times, as docs/fleet.md says: 4 restarts, then the fleet stops
    assert supervisor.CRASH_LIMIT == 5
    assert caplog.text.count("process 1 started") == 5, caplog.text
    assert caplog.text.count("exited with code 1 after") == 4
    assert "it died 5 times in a row, each within 30s of its start" in caplog.text
    assert "fleet stopped (exit status 1)" in caplog.text
