"""bench/trace.py, the count of skiplock modules and functions one enqueue and one worker
run pass through, runs on PostgreSQL and prints its three figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "trace.py"
#: the most skiplock modules one enqueue and one worker run may pass through, together
MAX_MODULES = 20
LINE = re.compile(r"^(enqueue|worker|both) +(\d+) modules +(\d+) functions$", re.MULTILINE)


def test_the_trace_counts_an_enqueue_and_a_worker_run(backend: str, url: str) -> None:
    if backend != "postgresql":
        pytest.skip("the trace is quoted on PostgreSQL")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--url", url, "--table", f"trace_{os.getpid()}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    counts = {m[1]: (int(m[2]), int(m[3])) for m in LINE.finditer(run.stdout)}
    assert set(counts) == {"enqueue", "worker", "both"}, run.stdout
    for modules, functions in counts.values():
        assert 0 < modules <= functions
    assert counts["both"][0] >= max(counts["enqueue"][0], counts["worker"][0])
    assert counts["both"][1] >= max(counts["enqueue"][1], counts["worker"][1])
    # the path a contributor reads stays short (docs/architecture.md quotes it)
    assert counts["both"][0] <= MAX_MODULES, run.stdout
