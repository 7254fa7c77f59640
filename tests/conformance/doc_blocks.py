"""The runnable examples of a docs page: each ``python`` block, whose first line says where
it runs (``# runs on: postgresql, mysql``)."""

from __future__ import annotations

import re
from pathlib import Path

_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_RUNS_ON = re.compile(r"# runs on: ([\w, ]+)\n")


def python_blocks(doc: Path) -> list[tuple[set[str], str]]:
    """``(databases, code)`` of each python block of *doc*, in order."""
    found = []
    for code in _BLOCK.findall(doc.read_text(encoding="utf-8")):
        m = _RUNS_ON.match(code)
        assert m, f"a python block in {doc.name} without '# runs on:': {code[:60]!r}"
        found.append(({d.strip() for d in m[1].split(",")}, code))
    return found
