"""The examples of docs/job-control.md, run as written, in order, on every backend they
name (each block's first line: ``# runs on: ...``), with ``URL`` set to the backend's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import skiplock

from .clients import DATABASE
from .doc_blocks import python_blocks

DOC = Path(__file__).parents[2] / "docs" / "job-control.md"
#: the examples name their table (jobctl_jobs), as a user's code would: one at a time
pytestmark = pytest.mark.xdist_group("jobctl_jobs")


def test_the_examples_run_as_written(backend: str, url: str) -> None:
    database = DATABASE.get(backend, backend)
    runnable = [code for where, code in python_blocks(DOC) if database in where]
    if not runnable:
        pytest.skip(f"docs/job-control.md has no example for {database}")
    namespace: dict[str, Any] = {"URL": url}
    try:
        for code in runnable:
            exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        q = skiplock.connect(url, table="jobctl_jobs")
        try:
            q.uninstall()
        finally:
            q.close()
        for name in ("q", "app"):
            obj = namespace.get(name)
            queue = getattr(obj, "queue", obj) if name == "app" else obj
            if queue is not None:
                queue.close()
