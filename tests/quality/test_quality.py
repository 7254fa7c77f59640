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
