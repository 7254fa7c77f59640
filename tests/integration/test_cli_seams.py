"""Where the command line meets an App: ``--url`` and ``--table`` replace the App's own
only when given, so a worker never drains another table than the one its App names."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conformance.conftest import wait_until

import skiplock
from skiplock.cli import EXIT_CODES, main

from .test_cli import cli

MakeQueue = Callable[..., skiplock.Queue]


def _worker(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "skiplock", "worker", *args, "--concurrency", "1"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _until_done(q: skiplock.Queue, n: int, proc: subprocess.Popen[str]) -> None:
    """Wait for *n* jobs of *q* done; fail at once, with its log, if the worker ends."""
    with contextlib.suppress(AssertionError):
        wait_until(lambda: q.stats().done >= n or proc.poll() is not None, 60, f"{n} done")
    if q.stats().done < n:
        raise AssertionError(f"{q.table}: not {n} jobs done; the worker's log:\n{_stop(proc)}")


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return err


@pytest.mark.parametrize("processes", [None, "1"], ids=["one-process", "fleet"])
def test_worker_url_keeps_the_apps_table(
    make_queue: MakeQueue, url: str, tmp_path: Path, processes: str | None
) -> None:
    """``worker APP --url URL``: the App's table, in one process as in a fleet."""
    q = make_queue()
    (tmp_path / "tableapp.py").write_text(
        "import skiplock\n"
        f"app = skiplock.App(table={str(q.table)!r})\n"
        "@app.task(name='add')\n"
        "def add(a, b):\n"
        "    return a + b\n"
    )
    job_id = q.enqueue({"task": "add", "args": [2, 3], "kwargs": {}})
    env = {k: v for k, v in os.environ.items() if k != "SKIPLOCK_URL"}
    more = [] if processes is None else ["--processes", processes]
    proc = _worker(tmp_path, env, "tableapp:app", "--url", url, *more)
    _until_done(q, 1, proc)
    err = _stop(proc)
    assert proc.returncode == 0, err
    job = q.get(job_id)
    assert job is not None and job.result == 5


def test_worker_table_replaces_the_apps_table_when_given(
    make_queue: MakeQueue, url: str, tmp_path: Path
) -> None:
    """``--table T`` wins over the App's table (and the App's URL stays)."""
    apps = make_queue()
    other = make_queue(table=f"{apps.table}_o")
    (tmp_path / "otherapp.py").write_text(
        "import skiplock\n"
        f"app = skiplock.App({url!r}, table={str(apps.table)!r})\n"
        "@app.task(name='add')\n"
        "def add(a, b):\n"
        "    return a + b\n"
    )
    other.install()
    try:
        there = other.enqueue({"task": "add", "args": [1, 1], "kwargs": {}})
        here = apps.enqueue({"task": "add", "args": [1, 2], "kwargs": {}})
        env = {k: v for k, v in os.environ.items() if k != "SKIPLOCK_URL"}
        proc = _worker(tmp_path, env, "otherapp:app", "--table", str(other.table))
        _until_done(other, 1, proc)
        err = _stop(proc)
        assert proc.returncode == 0, err
        done = other.get(there)
        assert done is not None and done.result == 2
        left = apps.get(here)
        assert left is not None and left.status == "pending"
    finally:
        other.uninstall()  # a name chosen here: make_queue drops only its own


def test_pause_refuses_a_queue_nothing_names_unless_forced(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    q.enqueue({"n": 1}, queue="imports")
    code, _, err = cli(capsys, "pause", "imports2", *where)
    assert code == EXIT_CODES["config"], err
    assert "'imports2'" in err and "--force" in err and "imports" in err  # names the known one
    assert q.paused() == set()  # nothing written
    code, out, err = cli(capsys, "pause", "imports", *where)  # a job names it
    assert code == 0 and "paused" in out, err
    code, out, err = cli(capsys, "pause", "imports", *where)  # paused: known, idempotent
    assert code == 0, err
    code, out, err = cli(capsys, "pause", "later", "--force", *where)
    assert code == 0, err
    assert q.paused() == {"imports", "later"}
    code, out, _ = cli(capsys, "resume", "imports", *where)
    assert code == 0 and "'imports' resumed" in out
    code, out, _ = cli(capsys, "resume", "imports", *where)
    assert code == 0 and "was not paused" in out
    q.pause("later")
    assert q.paused() == {"later"}


def test_jobs_filters_by_task(
    make_queue: MakeQueue, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    q = make_queue()
    where = ["--url", url, "--table", str(q.table)]
    wanted = [q.enqueue({"task": "mail.send", "args": [n], "kwargs": {}}) for n in range(2)]
    q.enqueue({"task": "mail.other", "args": [], "kwargs": {}})
    q.enqueue({"not": "a task call"})
    code, out, err = cli(capsys, "jobs", "--task", "mail.send", "--json", *where)
    assert code == 0, err
    assert [job["id"] for job in json.loads(out)] == wanted[::-1]
    code, out, err = cli(capsys, "jobs", "--task", "mail.send", *where)
    assert code == 0 and out.count("mail.send") == 2 and "mail.other" not in out, err


def test_worker_help_states_every_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["worker", "--help"])
    text = capsys.readouterr().out
    blocks = re.split(r"\n  (?=-)", text.split("\noptions:\n", 1)[1])
    for block in blocks:
        option = block.split()[0].rstrip(",")
        if option in ("-h", "-v", "--url"):  # help, the log level, $SKIPLOCK_URL
            continue
        assert "default" in " ".join(block.split()), f"{option} states no default:\n{block}"


def test_web_logs_its_start_up_line_at_info(
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    uvicorn = pytest.importorskip("uvicorn", reason="the web extra")
    served: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    with caplog.at_level(logging.DEBUG, logger="skiplock"):
        assert main(["web", "--url", url, "--port", "8123"]) == 0
    assert served
    [line] = [r for r in caplog.records if "skiplock dashboard on" in r.getMessage()]
    assert line.levelno == logging.INFO and "127.0.0.1:8123" in line.getMessage()


def test_enqueue_writes_an_apps_task_to_the_apps_table(
    make_queue: MakeQueue,
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``skiplock enqueue NAME`` of an App's task: where that App's workers look, unless
    ``--table`` says otherwise; a raw ``--payload`` with ``--app`` too."""
    q = make_queue()
    module = f"enqapp_{os.getpid()}_{q.table.name}"
    (tmp_path / f"{module}.py").write_text(
        "import skiplock\n"
        f"app = skiplock.App(table={str(q.table)!r})\n"
        "@app.task(name='ship', queue='orders')\n"
        "def ship(n):\n"
        "    return n\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SKIPLOCK_URL", url)
    try:
        code, out, err = cli(capsys, "enqueue", "--app", f"{module}:app", "ship", "7")
        assert code == 0, err
        job = q.get(int(out))
        assert job is not None and (job.queue, job.payload["args"]) == ("orders", [7])
        code, out, err = cli(capsys, "enqueue", "--app", f"{module}:app", "--payload", "{}")
        assert code == 0, err
        assert q.get(int(out)) is not None
        assert len(q.list_jobs()) == 2  # both in the App's table
    finally:
        sys.modules.pop(module, None)
