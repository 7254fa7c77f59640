"""Capabilities are fixed once (``skiplock.dialects.capabilities``): no code outside that
loader branches on whether a statement is present (``"name" in ….sql``), and a dialect
object is never changed once made (no ``self.<x> = …`` outside ``__init__`` in dialects/).
Each check is run on a snippet of the old code too, so it cannot pass by finding nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: where what the statements can do is read, once
LOADER = ROOT / "dialects" / "capabilities.py"
#: set after construction still: none
KNOWN: set[str] = set()


def _sources() -> Iterator[Path]:
    for folder in (ROOT / "src" / "skiplock", ROOT / "dialects"):
        yield from sorted(folder.rglob("*.py"))


def _holds_statements(node: ast.expr) -> bool:
    """*node* is a dialect's statements: ``….sql`` or ``….sql.keys()``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value if node.func.attr == "keys" else node
    return isinstance(node, ast.Attribute) and node.attr == "sql"


def presence_branches(source: str) -> list[str]:
    """The tests of a statement's presence in *source*."""
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and any(map(_holds_statements, [node.left, *node.comparators]))
    ]


def late_assignments(source: str) -> list[str]:
    """The assignments to an attribute of ``self`` in *source* outside ``__init__``."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            found += [
                f"{fn.name}: {ast.unparse(t)}"
                for t in targets
                if isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            ]
    return found


def test_the_checks_find_what_the_old_code_did() -> None:
    old = (
        "def settle(self):\n"
        "    if 'deps_children' not in self.sql:\n"
        "        return\n"
        "    self.released += 1\n"
        "def supports_lock(self):\n"
        "    return self.sql.keys() >= self.LOCK_STATEMENTS\n"
        "def __init__(self):\n"
        "    self.repair_due = 0.0\n"
    )
    assert len(presence_branches(old)) == 2
    assert late_assignments(old) == ["settle: self.released"]


def test_no_code_branches_on_a_statement_being_present() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {test}"
        for path in _sources()
        if path != LOADER
        for test in presence_branches(path.read_text(encoding="utf-8"))
    }
    assert not found, "read a capability (dialects/capabilities.py) instead"


def _but_run_state(source: str) -> str:
    """*source* without the class ``RunState`` (the queue's, which is meant to change)."""
    tree = ast.parse(source)
    tree.body = [n for n in tree.body if not (isinstance(n, ast.ClassDef) and n.name == "RunState")]
    return ast.unparse(tree)


def test_no_dialect_attribute_is_assigned_after_construction() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {assignment}"
        for path in sorted((ROOT / "dialects").glob("*.py"))
        for assignment in late_assignments(_but_run_state(path.read_text(encoding="utf-8")))
    }
    assert found == KNOWN, "keep what changes in RunState (dialects/base.py)"
    assert late_assignments((ROOT / "dialects" / "base.py").read_text(encoding="utf-8")), (
        "RunState is no longer in dialects/base.py: exempt it where it is"
    )
