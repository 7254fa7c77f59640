"""The examples of docs/tutorial.md, run as written, on every backend but SQL Server, with
``SKIPLOCK_URL`` set: its first block is the file ``tasks.py``, made the module ``tasks``;
where the page starts ``skiplock worker tasks:app`` in a terminal, the test starts the
app's worker on a thread; then the other blocks run in order. The page uses the default
table, as a newcomer would; each run puts a table of its own in its place."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .doc_blocks import plain_blocks, runnable_example_table

DOC = Path(__file__).parents[2] / "docs" / "tutorial.md"
TABLE = f"tutorial_jobs_{os.getpid()}"
TASKS, *SESSION = plain_blocks(DOC)


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with runnable_example_table(url, backend, TABLE, monkeypatch):
        yield


def test_the_page_goes_from_install_to_a_worker() -> None:
    text = DOC.read_text(encoding="utf-8")
    for step in ("pip install", "skiplock install", "skiplock worker tasks:app"):
        assert step in text, step
    assert "@app.periodic" in TASKS and "max_attempts" in TASKS
    assert any("skiplock.chain" in code for code in SESSION)


def test_the_examples_run_as_written(doc_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
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
    try:
        for index, code in enumerate(SESSION):
            namespace: dict[str, Any] = {"__name__": "__main__"}
            exec(compile(code, f"{DOC.name}:block{index + 2}", "exec"), namespace)
    finally:
        worker.stop()
        app.queue.close()
