"""The examples of docs/control.md, run as written on every backend, in order (the first
installs the table the others use)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skiplock

# the examples name their table (control_jobs), as a user's code would
pytestmark = pytest.mark.xdist_group("control_jobs")

DOC = Path(__file__).parents[2] / "docs" / "control.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def _drop(url: str) -> None:
    with skiplock.connect(url, table="control_jobs") as q:
        q.uninstall()


@pytest.fixture
def doc_env(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SKIPLOCK_URL", url)
    _drop(url)
    yield
    _drop(url)


def test_the_examples_run_as_written(doc_env: None) -> None:
    assert len(BLOCKS) == 3
    for index, code in enumerate(BLOCKS, 1):
        namespace: dict[str, Any] = {"__name__": "docs_example"}
        try:
            exec(compile(code, f"{DOC.name}:example{index}", "exec"), namespace)
        finally:
            for value in namespace.values():
                if isinstance(value, skiplock.Queue):
                    value.close()
                elif isinstance(value, skiplock.App):
                    value.queue.close()
