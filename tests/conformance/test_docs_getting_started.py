"""The examples of docs/getting-started.md, run as written, in order, as one program, on
every backend but SQL Server, with ``SKIPLOCK_URL`` set. The page uses the default table,
as a newcomer would; each run puts a table of its own in its place."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .doc_blocks import plain_blocks, runnable_example_table

DOC = Path(__file__).parents[2] / "docs" / "getting-started.md"
TABLE = f"start_jobs_{os.getpid()}"
#: where the page names its table (the default one), and what the test puts there
TABLES = {
    "skiplock.App()": f'skiplock.App(table="{TABLE}")',
    "skiplock.connect()": f'skiplock.connect(table="{TABLE}")',
}


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with runnable_example_table(url, backend, TABLE, monkeypatch):
        yield


def test_the_page_teaches_tasks_before_the_queue() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.index("@app.task") < text.index("skiplock.connect()")
    for taught in ("skiplock worker", "@app.periodic", "key=", "skiplock.chain", "max_attempts"):
        assert taught in text, taught


def test_the_examples_run_in_order(doc_env: None) -> None:
    namespace: dict[str, Any] = {"__name__": "tasks"}  # the page's module is tasks.py
    program = plain_blocks(DOC)
    for written, ours in TABLES.items():
        assert sum(written in code for code in program) == 1, written
        program = [code.replace(written, ours) for code in program]
    try:
        for index, code in enumerate(program):
            exec(compile(code, f"{DOC.name}:block{index + 1}", "exec"), namespace)
    finally:
        worker = namespace.get("worker")
        if worker is not None:
            worker.stop()
        q = namespace.get("q")
        if q is not None:
            with q.transaction() as tx:
                tx.execute("DROP TABLE IF EXISTS receipts")
        for name in ("app", "q"):
            obj = namespace.get(name)
            queue = getattr(obj, "queue", obj) if name == "app" else obj
            if queue is not None:
                queue.close()
