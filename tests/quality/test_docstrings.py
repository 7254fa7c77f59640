"""Docstrings stay short: the package's docstrings hold at most 15,000 words in all."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 15_000
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_words(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(
        len((ast.get_docstring(node) or "").split())
        for node in ast.walk(tree)
        if isinstance(node, DOCUMENTED)
    )


def package_files() -> list[Path]:
    return sorted([*(ROOT / "src" / "skiplock").rglob("*.py"), *(ROOT / "dialects").glob("*.py")])


def test_docstring_words_are_counted() -> None:
    assert len(package_files()) > 50
    assert docstring_words(ROOT / "src" / "skiplock" / "__main__.py") > 0


def test_docstrings_hold_at_most_15000_words() -> None:
    counts = {path: docstring_words(path) for path in package_files()}
    total = sum(counts.values())
    largest = sorted(counts.items(), key=lambda item: -item[1])[:10]
    listing = "\n".join(f"{words:6d} {path.relative_to(ROOT)}" for path, words in largest)
    assert total <= LIMIT, f"{total} words of docstrings (at most {LIMIT}); the largest:\n{listing}"
