"""The code stays ruff and mypy --strict clean (the wheel: tests/quality/test_installed.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed ([test] extra)")
def test_ruff_is_clean() -> None:
    lint = _run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


# Module size follows concern, not a number: what a module may import is what the layer
# contracts check (tests/quality/test_layers.py, scripts/layers).


def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    result = _run("bash", "scripts/typecheck")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_worker_reaches_the_database_only_through_its_port() -> None:
    """``skiplock._worker`` asks the queue's port (``_worker/port.py``) for what it needs:
    it reads no dialect and runs nothing on the queue's private runner or a raw
    connection of its own."""
    import ast

    banned = {"dialect", "_run", "_run_op", "_call", "connection"}
    found = []
    for path in sorted((ROOT / "src" / "skiplock" / "_worker").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or node.attr not in banned:
                continue
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr != "dialect"
            ):
                continue  # a method of the worker's own class
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert not found, "\n".join(found)


def test_only_the_shell_runs_an_operation_by_hand() -> None:
    """Outside ``_shell/``, a module runs an operation on a queue through a call builder of
    ``_core/calls.py`` (``queue._call(calls.…)``), never the session's untyped runners
    ``_run`` / ``_run_op`` with a dialect method and loose arguments."""
    import ast

    banned = {"_run", "_run_op"}
    found = []
    for path in sorted((ROOT / "src" / "skiplock").rglob("*.py")):
        if "_shell" in path.relative_to(ROOT / "src" / "skiplock").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or node.attr not in banned:
                continue
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                continue  # a method of the module's own class
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert not found, "\n".join(found)
