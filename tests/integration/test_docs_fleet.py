"""The examples of docs/fleet.md, run as written on every backend: ``tasks.py`` and
``run_fleet.py`` are written to a folder, the script runs as a subprocess, drains jobs in
its two processes, and stops with 0 on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance.conftest import wait_until

import skiplock

# the example names its table (fleet_jobs), as a user's code would
pytestmark = pytest.mark.xdist_group("fleet_jobs")

DOC = Path(__file__).parents[2] / "docs" / "fleet.md"
_FILE = re.compile(r"```python\n# file: (\S+)\n(.*?)```", re.DOTALL)


@pytest.fixture
def jobs(url: str) -> Iterator[skiplock.Queue]:
    q = skiplock.connect(url, table="fleet_jobs")
    q.uninstall()
    q.install()
    yield q
    q.uninstall()
    q.close()


def test_the_fleet_example_runs_as_written(jobs: skiplock.Queue, url: str, tmp_path: Path) -> None:
    files = dict(_FILE.findall(DOC.read_text(encoding="utf-8")))
    assert sorted(files) == ["run_fleet.py", "tasks.py"]
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    env = {**os.environ, "SKIPLOCK_URL": url}
    log = tmp_path / "fleet.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "run_fleet.py"], cwd=tmp_path, env=env, stdout=out, stderr=out
        )
    try:
        ids = jobs.enqueue_many([{"task": "tasks.resize", "args": [i]} for i in range(40)])
        wait_until(lambda: jobs.stats().done == 40, 90, "40 jobs done")
        pids = {record.result for record in map(jobs.get, ids) if record is not None}
        assert proc.pid not in pids and len(pids) in (1, 2)  # run by the fleet's processes
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
        assert len(re.findall(r"process \d \(pid \d+\) stopped", log.read_text())) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
