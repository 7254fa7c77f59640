"""bench/peers.py, the table of skiplock against its peers, runs every row end to end on
PostgreSQL: here with skiplock alone (the peers live in venvs of their own, made by
``peers.py --setup``), on a few jobs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "peers.py"
ROWS = (
    "drain, tuned, jobs/s",
    "drain, defaults, jobs/s",
    "enqueue, one job per transaction, jobs/s",
    "enqueue, bulk of 20, jobs/s",
    "enqueue → start p50, ms",
    "enqueue → start p99, ms",
    "enqueue → start max, ms",
    "client CPU per drained job (tuned), µs",
)


def test_every_row_of_the_peers_table(backend: str, url: str, tmp_path: Path) -> None:
    if backend != "postgresql":
        pytest.skip("the peers run on PostgreSQL")
    out = tmp_path / "peers.json"
    argv = [sys.executable, str(SCRIPT), "--url", url, "--systems", "skiplock", "--runs", "1"]
    argv += ["--jobs", "60", "--batch", "20", "--single-jobs", "5", "--samples", "3"]
    argv += ["--gap", "0.01", "--drain-timeout", "60", "--json", str(out)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| figure | skiplock " in run.stdout
    for row in ROWS:
        found = re.search(rf"^\| {re.escape(row)} \| [\d,.]+ \|$", run.stdout, re.M)
        assert found, f"{row!r} missing from:\n{run.stdout}"
    figures = json.loads(out.read_text())
    assert set(figures["rows"]) == set(ROWS)
    assert len(figures["latency_ms"]["skiplock"][0]) == 3
    assert not any("cap" in note for note in figures["notes"]), figures["notes"]
