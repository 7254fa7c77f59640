"""The examples of docs/tutorial.md, run as written, on every backend but SQL Server, with
``SKIPLOCK_URL`` set: its first block is the file ``tasks.py``, made the module ``tasks``;
where the page starts ``skiplock worker tasks:app`` in a terminal, the test starts the
app's worker on a thread, and ``skiplock web`` as a process (on a free port, in place of
8089); the other blocks run in order, then the file ``test_tasks.py`` (the block that
starts ``# test_tasks.py``) runs with pytest in a folder of its own next to ``tasks.py``.
The systemd unit and the Dockerfile are read, not run (no systemd or Docker here). The page
uses the default table, as a newcomer would; each run puts a table of its own in its
place."""

from __future__ import annotations

import configparser
import json
import os
import re
import socket
import subprocess
import sys
import time
import types
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .doc_blocks import plain_blocks, runnable_example_table

DOC = Path(__file__).parents[2] / "docs" / "tutorial.md"
TEXT = DOC.read_text(encoding="utf-8")
TABLE = f"tutorial_jobs_{os.getpid()}"
TASKS, *_rest = plain_blocks(DOC)
TEST_FILE = "# test_tasks.py\n"
[TESTS] = [code for code in _rest if code.startswith(TEST_FILE)]
SESSION = [code for code in _rest if not code.startswith(TEST_FILE)]
DASHBOARD = "127.0.0.1:8089"


def fenced(kind: str) -> str:
    [block] = re.findall(rf"```{kind}\n(.*?)```", TEXT, re.DOTALL)
    return str(block)


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with runnable_example_table(url, backend, TABLE, monkeypatch):
        yield


def test_the_page_goes_from_install_to_a_worker() -> None:
    for step in (
        "pip install",
        "skiplock install",
        "skiplock worker tasks:app",
        "skiplock web",
        "SKIPLOCK_TEST_URL=$SKIPLOCK_URL python3 -m pytest test_tasks.py",
    ):
        assert step in TEXT, step
    assert "@app.periodic" in TASKS and "max_attempts" in TASKS
    assert any("skiplock.chain" in code for code in SESSION)
    assert any("key=" in code for code in SESSION)
    assert any(DASHBOARD in code for code in SESSION)
    assert "skiplock_queue" in TESTS and "testing.drain" in TESTS


def test_the_systemd_unit_and_the_dockerfile_start_the_worker() -> None:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(fenced("ini"))
    service = unit["Service"]
    assert service["ExecStart"].endswith("/skiplock worker tasks:app")
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) > 30  # more than the worker's default grace
    [cmd] = [line for line in fenced("dockerfile").splitlines() if line.startswith("CMD ")]
    assert json.loads(cmd.removeprefix("CMD ")) == ["skiplock", "worker", "tasks:app"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dashboard(url: str, port: int) -> subprocess.Popen[bytes]:
    """``skiplock web`` on *port*, once it answers."""
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skiplock",
            "web",
            "--url",
            url,
            "--table",
            TABLE,
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/queues", timeout=5):
                return web
        except OSError:
            if web.poll() is not None or time.monotonic() > deadline:
                web.kill()
                _, err = web.communicate()
                pytest.fail(f"skiplock web did not answer: {err!r}")
            time.sleep(0.2)


def test_the_examples_run_as_written(
    doc_env: None, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert TASKS.count("skiplock.App()") == 1
    tasks = types.ModuleType("tasks")
    tasks.__file__ = "tasks.py"
    exec(
        compile(
            TASKS.replace("skiplock.App()", f'skiplock.App(table="{TABLE}")'), "tasks.py", "exec"
        ),
        tasks.__dict__,
    )
    monkeypatch.setitem(sys.modules, "tasks", tasks)
    app = tasks.app
    app.queue.install()  # skiplock install
    worker = app.worker()  # skiplock worker tasks:app
    worker.start()
    port = _free_port()
    web = _dashboard(url, port)  # skiplock web
    try:
        for index, code in enumerate(SESSION):
            namespace: dict[str, Any] = {"__name__": "__main__"}
            code = code.replace(DASHBOARD, f"127.0.0.1:{port}")
            exec(compile(code, f"{DOC.name}:block{index + 2}", "exec"), namespace)
    finally:
        web.terminate()
        web.wait(30)
        worker.stop()
        app.queue.close()

    # SKIPLOCK_TEST_URL=$SKIPLOCK_URL python3 -m pytest test_tasks.py
    (tmp_path / "tasks.py").write_text(TASKS, encoding="utf-8")
    (tmp_path / "test_tasks.py").write_text(TESTS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SKIPLOCK_"))}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-q",
            "test_tasks.py",
        ],
        cwd=tmp_path,
        env={**env, "SKIPLOCK_URL": url, "SKIPLOCK_TEST_URL": url},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout, run.stdout
