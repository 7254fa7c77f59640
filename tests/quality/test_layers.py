"""The layers hold: every import-linter contract of pyproject.toml is kept (scripts/layers),
and a module that breaks one is caught, naming the rule (docs/architecture.md, "Layers")."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .scripts import load_script

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("lint-imports") is None
    and not (Path(sys.executable).parent / "lint-imports").exists(),
    reason="import-linter is not installed ([test] extra)",
)


def _layers() -> ModuleType:
    return load_script("layers")


def test_every_layer_contract_is_kept() -> None:
    done = _layers().check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken", done.stdout), done.stdout


@pytest.mark.parametrize(
    ("module", "imports", "rule"),
    [
        # the no-I/O core reaching up into the shell
        ("skiplock/_core/_upward.py", "from skiplock._shell import session", "layers"),
        # a dialect importing skiplock past its contract
        ("skiplock/dialects/_past.py", "from skiplock._core import calls", "dialect"),
        # the worker talking to a connection instead of through the queue
        ("skiplock/_worker/_around.py", "from skiplock._shell import pool", "worker"),
    ],
)
def test_a_module_that_breaks_a_rule_is_caught(module: str, imports: str, rule: str) -> None:
    done = _layers().check({module: f'"""A module that breaks a rule."""\n\n{imports}\n'})
    assert done.returncode != 0, done.stdout
    broken = [line for line in done.stdout.splitlines() if re.search(r" BROKEN\b", line)]
    assert any(rule in line.lower() for line in broken), done.stdout
    dotted = module.removesuffix(".py").replace("/", ".")
    assert dotted in done.stdout, done.stdout
