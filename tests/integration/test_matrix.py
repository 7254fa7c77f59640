"""scripts/matrix end to end: one real backend that passes, one that is not there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_matrix_prints_versions_counts_and_skip_reasons(tmp_path: Path) -> None:
    pg = os.environ.get("SKIPLOCK_TEST_POSTGRESQL_URL")
    if not pg:
        pytest.skip("set SKIPLOCK_TEST_POSTGRESQL_URL (scripts/test sets it) to run the matrix")
    env = {
        **os.environ,
        "SKIPLOCK_REQUIRE": "",
        # a server that cannot answer: the matrix must report the skip, not hide it
        "SKIPLOCK_TEST_MSSQL_URL": "mssql://sa:s3cret@127.0.0.1:1/nowhere",
    }
    command = [sys.executable, "scripts/matrix", "--backends", "postgresql,mssql"]
    command += ["--out", str(tmp_path), "--", "-k", "best_job_first or priorities"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert lines["backend"].split()[:5] == ["backend", "server", "passed", "failed", "skipped"]
    pg_row = lines["postgresql"].split()
    assert pg_row[1] == "PostgreSQL" and pg_row[2][0].isdigit()  # the server's version
    # passed, failed, skipped: two tests, each on the sync and the async API
    assert pg_row[3:6] == ["4", "0", "0"]
    mssql = lines["mssql"].split()
    assert mssql[1:5] == ["-", "0", "0", "4"]
    assert "does not answer" in lines["mssql"] and "SKIPLOCK_TEST_MSSQL_URL" in lines["mssql"]
    assert "s3cret" not in done.stdout + done.stderr
    assert "mssql_rcsi" not in lines
    assert {p.name for p in tmp_path.iterdir()} == {
        "postgresql.xml",
        "postgresql.log",
        "mssql.xml",
        "mssql.log",
    }
