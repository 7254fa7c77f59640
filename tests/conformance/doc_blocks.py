"""The runnable examples of a docs page: each ``python`` block, whose first line says where
it runs (``# runs on: postgresql, mysql``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import skiplock

from .clients import DATABASE

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


def plain_blocks(doc: Path) -> list[str]:
    """The code of each python block of *doc*, in order (pages whose blocks all run on
    every database the test runs)."""
    return [str(code) for code in _BLOCK.findall(doc.read_text(encoding="utf-8"))]


@contextmanager
def example_table(url: str, table: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The examples' own table, dropped before and after, with ``SKIPLOCK_URL`` set to
    *url* (the examples read it as a user's code would)."""
    monkeypatch.setenv("SKIPLOCK_URL", url)
    _drop(url, table)
    try:
        yield
    finally:
        _drop(url, table)


@contextmanager
def runnable_example_table(
    url: str, backend: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """:func:`example_table` on every backend but SQL Server, where the test is skipped
    (no SQL Server here to run the examples on)."""
    if DATABASE[backend] == "mssql":
        pytest.skip("no SQL Server here to run the examples on")
    with example_table(url, table, monkeypatch):
        yield


def _drop(url: str, table: str) -> None:
    with skiplock.connect(url, table=table) as q:
        q.uninstall()
