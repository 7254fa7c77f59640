"""bench/stages.py, the time from enqueue to handler start split by stage, runs and prints
each stage for jobs that passed them all."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "stages.py"
ROW = re.compile(r"^\| ([a-z ]+) \| (-?[\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \|$", re.MULTILINE)


def test_the_stages_add_up_to_the_whole(backend: str, url: str) -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--url", url, "--jobs", "30",
         "--table", f"stages_{os.getpid()}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    timed = re.search(r"(\d+) of 30 jobs timed at every stage", run.stdout)
    assert timed is not None and int(timed[1]) >= 20, run.stdout
    p50 = {m[1]: float(m[2]) for m in ROW.finditer(run.stdout)}
    assert set(p50) == {"enqueue", "notify", "to claim", "claim", "to handler",
                        "enqueue to handler"}, run.stdout  # fmt: skip
    assert p50["enqueue"] > 0 and p50["claim"] > 0, run.stdout
    # the medians of the parts are not the median of the whole, but none exceeds it
    assert (
        max(v for k, v in p50.items() if k != "enqueue to handler") <= p50["enqueue to handler"]
    ), run.stdout
