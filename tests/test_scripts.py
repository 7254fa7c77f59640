"""scripts/test, the README's test command, never restarts a server unless asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _restart_setting(tmp_path: Path, **env: str) -> str:
    """What scripts/test hands pytest as SKIPLOCK_RESTART_SERVERS: a stand-in ``python3``
    first on PATH prints it instead of running pytest (so nothing is ever restarted)."""
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\nprintf "%s" "${SKIPLOCK_RESTART_SERVERS-unset}"\n')
    fake.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if k != "SKIPLOCK_RESTART_SERVERS"}
    clean.update(env, PATH=f"{tmp_path}:{clean.get('PATH', '')}")
    clean.setdefault("SKIPLOCK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3307/test")
    done = subprocess.run(
        [str(ROOT / "scripts" / "test")],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_scripts_test_does_not_restart_servers_by_default(tmp_path: Path) -> None:
    assert _restart_setting(tmp_path) == "0"


@pytest.mark.parametrize("asked", ["0", "1"])
def test_scripts_test_restarts_only_when_asked(tmp_path: Path, asked: str) -> None:
    assert _restart_setting(tmp_path, SKIPLOCK_RESTART_SERVERS=asked) == asked


def test_ci_opts_in_to_server_restarts() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "export SKIPLOCK_RESTART_SERVERS=1" in ci
    assert ci.index("SKIPLOCK_RESTART_SERVERS=1") < ci.index("\nscripts/test")
