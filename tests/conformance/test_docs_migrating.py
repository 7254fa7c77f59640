"""The skiplock examples of docs/migrating.md, run as written on every backend but SQL
Server, with ``SKIPLOCK_URL`` set: the block ``# tasks.py (skiplock)`` is made the module
``tasks``, a worker runs its app, and the blocks ``# skiplock`` run in order. The blocks
``# Celery`` and ``# RQ`` are the other queues' code, shown and not run; every python
block of the page is one of these, so none is left untested by mistake."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .doc_blocks import plain_blocks, runnable_example_table

DOC = Path(__file__).parents[2] / "docs" / "migrating.md"
TABLE = f"migrating_jobs_{os.getpid()}"
BLOCKS = plain_blocks(DOC)
MODULE = "# tasks.py (skiplock)\n"
[TASKS] = [code for code in BLOCKS if code.startswith(MODULE)]
SESSION = [code for code in BLOCKS if code.startswith("# skiplock\n")]


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with runnable_example_table(url, backend, TABLE, monkeypatch):
        yield


def test_every_block_is_run_or_marked_as_another_queue_s() -> None:
    shown = [c for c in BLOCKS if c.startswith(("# Celery\n", "# RQ\n"))]
    assert len(shown) + len(SESSION) + 1 == len(BLOCKS)
    assert len(SESSION) >= 3


def test_the_skiplock_examples_run_as_written(
    doc_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert TASKS.count("skiplock.App()") == 1
    tasks = types.ModuleType("tasks")
    tasks.__file__ = "tasks.py"
    code = TASKS.replace("skiplock.App()", f'skiplock.App(table="{TABLE}")')
    exec(compile(code, "tasks.py", "exec"), tasks.__dict__)
    monkeypatch.setitem(sys.modules, "tasks", tasks)
    app = tasks.app
    app.queue.install()  # skiplock install
    worker = app.worker()  # skiplock worker tasks:app
    worker.start()
    try:
        for index, block in enumerate(SESSION):
            namespace: dict[str, Any] = {"__name__": "__main__"}
            exec(compile(block, f"{DOC.name}:skiplock{index + 1}", "exec"), namespace)
    finally:
        worker.stop()
        app.queue.close()
