"""The documentation site builds: ``mkdocs build --strict`` (mkdocs.yml) fails on a link to
a page or anchor that does not exist, on a page left out of the navigation and on an API
reference page (docs/reference/, mkdocstrings) naming an object that does not exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / "tutorial" / "index.html").is_file()
    reference = (tmp_path / "reference" / "queue" / "index.html").read_text(encoding="utf-8")
    assert 'id="skiplock.Queue.enqueue"' in reference  # generated from the docstrings


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    docs = ROOT / "docs"
    pages = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_docs_say_what_is_true_now_not_how_it_was_built() -> None:
    """No page of docs/ keeps a journal (issue numbers, sessions), and the performance page
    stays the current figures: at most 500 lines (the history goes in CHANGELOG.md)."""
    marker = re.compile(r"\b(Issue \d+|this session|what this session)", re.IGNORECASE)
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if marker.search(line)
    ]
    assert not found, "\n".join(found)
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 500, f"docs/performance.md has {lines} lines"
