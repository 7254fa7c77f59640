"""``skiplock show`` prints a job's progress and snoozes (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import skiplock
from skiplock.cli.main import main


def test_show_prints_progress_and_snoozes(
    make_queue: Callable[..., skiplock.Queue], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    job_id = q.enqueue("x")
    [job] = q.claim()
    q.snooze(job, 0)
    [job] = q.claim()
    q.set_progress(job, {"done": 7, "of": 9})
    capsys.readouterr()
    assert main(["show", str(job_id), *where]) == 0
    out = capsys.readouterr().out
    assert 'progress:        {"done": 7, "of": 9}' in out and "snoozes:         1" in out
    assert main(["show", str(job_id), "--json", *where]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["progress"] == {"done": 7, "of": 9} and shown["snoozes"] == 1
