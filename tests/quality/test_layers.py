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


#: a word of the name of each contract; each has a case below that breaks it
RULES = ("layers", "dialect", "worker", "i/o", "cycles")
_TYPED = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    "


@pytest.mark.parametrize(
    ("modules", "rule", "named"),
    [
        # the no-I/O core reaching up into the shell
        ({"skiplock/_core/_upward.py": "from skiplock._shell import session"}, "layers", None),
        # a dialect importing skiplock past its contract
        # (a module of the rule's list: a new one must be listed first, see below)
        (
            {"skiplock/dialects/capabilities.py": "from skiplock._core import calls"},
            "dialect",
            None,
        ),
        # the worker talking to a connection instead of through the queue
        ({"skiplock/_worker/_around.py": "from skiplock._shell import pool"}, "worker", None),
        # the core opening a socket
        ({"skiplock/_core/_socket.py": "import socket"}, "i/o", None),
        # an annotation-only import up a layer: the shell naming the queue it serves
        (
            {"skiplock/_shell/_typed.py": _TYPED + "from skiplock.queue import Queue"},
            "layers",
            None,
        ),
        # ... which closes a cycle, queue -> _shell -> queue
        (
            {"skiplock/_shell/_typed.py": _TYPED + "from skiplock.queue import Queue"},
            "cycles",
            "No cycles are allowed in skiplock.\n",
        ),
        # two modules of one folder importing each other, one only for its annotations
        (
            {
                "skiplock/_core/_loop/__init__.py": "",
                "skiplock/_core/_loop/a.py": "from skiplock._core._loop import b",
                "skiplock/_core/_loop/b.py": _TYPED + "from skiplock._core._loop import a",
            },
            "cycles",
            "No cycles are allowed in skiplock._core._loop.\n",
        ),
    ],
    ids=["upward", "dialect", "worker", "core-io", "typed-upward", "typed-cycle", "cycle"],
)
def test_a_module_that_breaks_a_rule_is_caught(
    modules: dict[str, str], rule: str, named: str | None
) -> None:
    extra = {
        path: f'"""A module that breaks a rule."""\n\n{text}\n' for path, text in modules.items()
    }
    done = _layers().check(extra)
    assert done.returncode != 0, done.stdout
    broken = [line for line in done.stdout.splitlines() if re.search(r" BROKEN\b", line)]
    assert any(rule in line.lower() for line in broken), done.stdout
    if named is None:  # the module that broke the rule, by its full name
        named = next(iter(modules)).removesuffix(".py").replace("/", ".")
    assert named in done.stdout, done.stdout


def test_every_contract_is_proved_to_catch_a_break() -> None:
    """Each contract has a case above that breaks it (a word of its name), and imports
    made only for annotations (``if TYPE_CHECKING:``) count like any other."""
    config = (ROOT / "pyproject.toml").read_text()
    assert not re.search(r"^exclude_type_checking_imports\s*=\s*true", config, re.M)
    done = _layers().check()
    names = re.findall(r"^(.+) KEPT\b", done.stdout, re.M)
    assert names, done.stdout
    for name in names:
        assert [w for w in RULES if w in name.lower()], name


def test_the_dialect_rule_covers_every_dialect_module_but_the_contract() -> None:
    """The rule lists its modules one by one (``as_packages = false``, so that
    ``contract.py`` alone may import skiplock, with no ignored import): a new module of
    ``dialects/`` must be listed."""
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [rule] = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("a dialect imports")
    ]
    modules = {
        "skiplock.dialects" if f.stem == "__init__" else f"skiplock.dialects.{f.stem}"
        for f in (ROOT / "dialects").glob("*.py")
    }
    assert set(rule["source_modules"]) == modules - {"skiplock.dialects.contract"}
    assert rule["as_packages"] is False and "ignore_imports" not in rule
