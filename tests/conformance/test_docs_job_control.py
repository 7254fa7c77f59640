"""The examples of docs/job-control.md, run as written, in order, on every backend they
name (each block's first line: ``# runs on: ...``), with ``URL`` set to the backend's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import skiplock

from .clients import DATABASE

DOC = Path(__file__).parents[2] / "docs" / "job-control.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_RUNS_ON = re.compile(r"# runs on: ([\w, ]+)\n")


def blocks() -> list[tuple[set[str], str]]:
    found = []
    for code in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        m = _RUNS_ON.match(code)
        assert m, f"a python block in {DOC.name} without '# runs on:': {code[:60]!r}"
        found.append(({d.strip() for d in m[1].split(",")}, code))
    return found


def test_the_examples_run_as_written(backend: str, url: str) -> None:
    database = DATABASE.get(backend, backend)
    runnable = [code for where, code in blocks() if database in where]
    if not runnable:
        pytest.skip(f"docs/job-control.md has no example for {database}")
    namespace: dict[str, Any] = {"URL": url}
    try:
        for code in runnable:
            exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        q = skiplock.connect(url, table="control_jobs")
        try:
            q.uninstall()
        finally:
            q.close()
        for name in ("q", "app"):
            obj = namespace.get(name)
            queue = getattr(obj, "queue", obj) if name == "app" else obj
            if queue is not None:
                queue.close()
