"""The examples of docs/workflows.md, run as written on every backend (each block on its
own, with ``SKIPLOCK_URL`` set; they name their table, ``workflow_jobs``, as a user would)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skiplock

from .clients import DATABASE

# one xdist worker runs every example: they share the table name
pytestmark = pytest.mark.xdist_group("workflow_jobs")

DOC = Path(__file__).parents[2] / "docs" / "workflows.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def _drop(url: str) -> None:
    q = skiplock.connect(url, table="workflow_jobs")
    try:
        q.uninstall()
    finally:
        q.close()


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if DATABASE[backend] == "mssql":
        pytest.skip("no SQL Server here to run the examples on")
    monkeypatch.setenv("SKIPLOCK_URL", url)
    _drop(url)
    yield
    _drop(url)


def test_the_page_has_its_examples() -> None:
    assert len(EXAMPLES) == 3
    assert any("async def" in code and ".then(" in code for code in EXAMPLES)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"example{i + 1}")
def test_the_example_runs_as_written(doc_env: None, index: int) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_workflows"}
    exec(compile(EXAMPLES[index], f"{DOC.name}:example{index + 1}", "exec"), namespace)
