"""The examples of docs/control.md, run as written on every backend, in order (the first
installs the table the others use)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skiplock

from .doc_blocks import example_table, plain_blocks

# the examples name their table (control_jobs), as a user's code would
pytestmark = pytest.mark.xdist_group("control_jobs")

DOC = Path(__file__).parents[2] / "docs" / "control.md"
BLOCKS = plain_blocks(DOC)


@pytest.fixture
def doc_env(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with example_table(url, "control_jobs", monkeypatch):
        yield


def test_the_examples_run_as_written(doc_env: None) -> None:
    assert len(BLOCKS) == 4
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
