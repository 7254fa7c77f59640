"""scripts/test, the README's test command: never restarts a server unless asked; the
quick run by default, everything with ``--full`` (what .ci/run runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIRST

ROOT = Path(__file__).resolve().parents[2]


def _handed(tmp_path: Path, *args: str, names: tuple[str, ...], **env: str) -> list[str]:
    """What scripts/test hands pytest as the variables *names* and its arguments: a stand-in
    ``python3`` first on PATH prints them instead of running pytest (so nothing is ever
    restarted)."""
    fake = tmp_path / "python3"
    lines = "".join(f'printf "%s\\n" "${{{n}-unset}}"\n' for n in names)
    fake.write_text(f'#!/bin/sh\n{lines}printf "%s\\n" "$*"\n')
    fake.chmod(0o755)
    # SKIPLOCK_TEST_WORKERS: the caller's own choice of xdist workers is not what is checked
    clean = {k: v for k, v in os.environ.items() if k not in names and k != "SKIPLOCK_TEST_WORKERS"}
    clean.update(env, PATH=f"{tmp_path}:{clean.get('PATH', '')}")
    clean.setdefault("SKIPLOCK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3307/test")
    done = subprocess.run(
        [str(ROOT / "scripts" / "test"), *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def _restart_setting(tmp_path: Path, **env: str) -> str:
    return _handed(tmp_path, names=("SKIPLOCK_RESTART_SERVERS",), **env)[0]


def test_scripts_test_does_not_restart_servers_by_default(tmp_path: Path) -> None:
    assert _restart_setting(tmp_path) == "0"


@pytest.mark.parametrize("asked", ["0", "1"])
def test_scripts_test_restarts_only_when_asked(tmp_path: Path, asked: str) -> None:
    assert _restart_setting(tmp_path, SKIPLOCK_RESTART_SERVERS=asked) == asked


def test_ci_opts_in_to_server_restarts() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "export SKIPLOCK_RESTART_SERVERS=1" in ci
    assert ci.index("SKIPLOCK_RESTART_SERVERS=1") < ci.index("\nscripts/test")


def test_ci_starts_the_galera_cluster_and_requires_its_tests() -> None:
    """.ci/run installs galera-4, starts scripts/galera-cluster and names ``galera`` in
    SKIPLOCK_REQUIRE, so tests/reliability/test_galera.py fails there instead of skipping."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "galera-4" in ci[: ci.index("apt-get install")]
    start = ci.index("scripts/galera-cluster start")
    assert start < ci.index('require="$require,galera"') < ci.index("\nscripts/test")


def test_ci_starts_the_patroni_cluster_and_requires_its_tests() -> None:
    """.ci/run installs patroni and etcd-server, starts scripts/patroni-cluster and names
    ``patroni`` in SKIPLOCK_REQUIRE, so tests/reliability/test_patroni.py fails there
    instead of skipping; the cluster is stopped when CI ends."""
    ci = (ROOT / ".ci" / "run").read_text()
    installed = ci[: ci.index("apt-get install")]
    assert "patroni etcd-server" in installed
    start = ci.index("scripts/patroni-cluster start")
    assert start < ci.index("trap 'scripts/patroni-cluster stop' EXIT")
    assert start < ci.index('require="$require,patroni"') < ci.index("\nscripts/test")


SCOPE = ("SKIPLOCK_TEST_SCOPE", "SKIPLOCK_BACKENDS", "SKIPLOCK_TEST_PYTHONS", "SKIPLOCK_TEST_PHASE")


def test_scripts_test_is_the_quick_run_on_postgresql_and_mariadb(tmp_path: Path) -> None:
    scope, backends, pythons, phase, args = _handed(tmp_path, "-x", names=SCOPE)
    assert (scope, backends, pythons, phase) == ("quick", "postgresql,mariadb", "unset", "unset")
    assert args == "-m pytest -n 4 --dist loadgroup -x"


def test_scripts_test_full_runs_every_backend_and_python(tmp_path: Path) -> None:
    """Two pytest runs: the parallel phase with xdist, then the serial one."""
    out = _handed(tmp_path, "--full", "-x", names=SCOPE)
    assert out == [
        *("full", "unset", "3.10,3.11,3.12,3.13", "parallel"),
        "-m pytest -n 4 --dist loadgroup -x",
        *("full", "unset", "3.10,3.11,3.12,3.13", "serial"),
        "-m pytest -x",
    ]


def _collected(*where: str, **env: str) -> str:
    """Collected for real, with pytest's own selection of this checkout's tests."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *where],
        cwd=ROOT,
        env={**os.environ, "SKIPLOCK_BACKENDS": "postgresql", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


WHERE = (
    "tests/integration/test_django6.py",
    "tests/reliability/test_chaos.py",
    "tests/integration/test_scripts.py",
)


def test_the_quick_run_leaves_out_the_full_runs_own_tests() -> None:
    """The reliability suite, Django 6 and the test scripts' own tests are deselected, and
    counted."""
    out = _collected(*WHERE, "tests/integration/test_cli_bugs.py", SKIPLOCK_TEST_SCOPE="quick")
    assert "test_django6" not in out and "test_chaos" not in out, out
    assert "test_scripts.py::" not in out and "test_cli_bugs.py::" in out, out
    full = _collected(*WHERE, SKIPLOCK_TEST_SCOPE="full")
    left = sum("::" in line for line in full.splitlines())
    assert f"quick run: {left} tests of the full run left out" in out, (out, full)


def test_the_full_runs_phases_split_the_tests_between_them() -> None:
    """Only the restart test runs alone; the rest of the reliability suite, the installed
    package's tests and Django 6 run in the parallel phase, the last and the reliability
    suite first."""
    where = (
        "tests/integration/test_cli_bugs.py",
        *WHERE,
        "tests/reliability/test_failover.py",
        "tests/reliability/test_restart.py",
        "tests/quality/test_installed.py",
    )
    parallel = _collected(*where, SKIPLOCK_TEST_SCOPE="full", SKIPLOCK_TEST_PHASE="parallel")
    serial = _collected(*where, SKIPLOCK_TEST_SCOPE="full", SKIPLOCK_TEST_PHASE="serial")
    assert "test_django6.py::" in parallel and "test_restart.py::" not in parallel, parallel
    for name in ("test_chaos.py::", "test_failover.py::", "test_installed.py::"):
        assert name in parallel and name not in serial, (name, parallel, serial)
    assert "test_restart.py::" in serial and "test_django6" not in serial, serial
    assert "test_scripts.py::" not in serial and "quick run" not in serial, serial
    ids = [line for line in parallel.splitlines() if "::" in line]
    first = [i for i, line in enumerate(ids) if line.startswith(FIRST)]
    assert first == list(range(len(first))) and len(first) > 6, parallel
    assert ids[0].startswith("tests/integration/test_django6.py::"), parallel


GROUPED = """
import os, pathlib, pytest

@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(pathlib.Path(__file__).with_name("workers.txt"), "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.parametrize("i", range(12))
def test_single(i):
    pass
"""


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    """What scripts/test's ``--dist loadgroup`` relies on (the installed-package tests
    build their venvs once, the failover tests run one after another): with the pytest
    and pytest-xdist this project installs, a group's tests all run on one worker."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "3",
         "--dist", "loadgroup", "test_grouped.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    workers = (tmp_path / "workers.txt").read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, workers


def test_ci_runs_the_full_run() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nscripts/test --full\n" in ci
