"""The examples of docs/worker.md, run as written on every backend but SQL Server (each
block on its own, with ``SKIPLOCK_URL`` set). They name their table, ``worker_jobs``, as a
user would; each run puts a table of its own in its place."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .doc_blocks import plain_blocks, runnable_example_table

DOC = Path(__file__).parents[2] / "docs" / "worker.md"
EXAMPLES = plain_blocks(DOC)
TABLE = f"worker_jobs_{os.getpid()}"


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with runnable_example_table(url, backend, TABLE, monkeypatch):
        yield


def test_the_page_has_its_examples() -> None:
    assert len(EXAMPLES) == 2
    assert any("AsyncWorker" in code for code in EXAMPLES)
    assert any("@app.periodic" in code for code in EXAMPLES)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"example{i + 1}")
def test_the_example_runs_as_written(doc_env: None, index: int) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_worker"}
    code = EXAMPLES[index].replace('table="worker_jobs"', f'table="{TABLE}"')
    assert TABLE in code
    try:
        exec(compile(code, f"{DOC.name}:example{index + 1}", "exec"), namespace)
    finally:
        app = namespace.get("app")
        if app is not None:
            app.queue.close()
