"""Restarting the machine's database servers, for the restart tests.

A backend can be restarted from here when its URL is this machine's server that the
development machines and CI run (see docs/testing.md): the PostgreSQL cluster (via
``pg_ctlcluster``), the embedded PostgreSQL 18 started by the test session, MariaDB (via
``mysqladmin shutdown`` and ``start-stop-daemon``) and the MySQL server of
``scripts/mysql-server``. Every restart waits until the server answers again.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from conftest import started_server

import skiplock
from skiplock.drivers.url import parse_url

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ("127.0.0.1", "localhost")


def _sh(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def _run(*args: str) -> None:
    _sh(*args)


def wait_until_up(url: str, timeout: float = 90) -> None:
    q = skiplock.connect(url, table="skiplock_probe")
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                q.ping()
                return
            except skiplock.SkiplockError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
    finally:
        q.close()


def _pg_cluster(port: int) -> Callable[[], None] | None:
    if shutil.which("pg_lsclusters") is None:
        return None
    for line in _sh("pg_lsclusters", "--no-header").splitlines():
        version, name, cluster_port = line.split()[:3]
        if int(cluster_port) == port:
            command = ("pg_ctlcluster", "--skip-systemctl-redirect", version, name, "restart")
            return lambda: _run(*command)
    return None


def _mariadb(port: int) -> Callable[[], None] | None:
    daemon = Path("/usr/sbin/mariadbd")
    if shutil.which("mysqladmin") is None or not daemon.exists():
        return None

    def restart() -> None:
        try:
            _sh("mysqladmin", "-h", "127.0.0.1", "-P", str(port), "-u", "root", "shutdown")
        finally:  # whatever happened, the server is started again
            # mysqladmin returns while the server is still exiting, and --start does nothing
            # while it runs: wait until it is gone (--stop sends it one more clean TERM).
            ssd = ("start-stop-daemon", "--oknodo", "--exec", str(daemon))
            _sh(*ssd, "--stop", "--retry", "TERM/60/KILL/5")
            _sh(*ssd, "--start", "--background")

    return restart


def _mysql(url: str) -> Callable[[], None] | None:
    script = ROOT / "scripts" / "mysql-server"
    if not script.exists():
        return None
    try:
        if _sh(str(script), "url").strip() != url:
            return None
    except RuntimeError:
        return None
    return lambda: _run(str(script), "restart")


def restarter(backend: str, url: str) -> Callable[[], None] | None:
    """A function that restarts *backend*'s server and returns once it answers, or None
    when this machine cannot restart it."""
    u = parse_url(url)
    found: Callable[[], None] | None = None
    if backend == "postgresql18":
        server = started_server(backend)
        found = None if server is None else server.restart
    elif u.host in LOCAL and backend == "postgresql":
        found = _pg_cluster(u.port or 5432)
    elif u.host in LOCAL and backend == "mariadb":
        found = _mariadb(u.port or 3306)
    elif u.host in LOCAL and backend == "mysql":
        found = _mysql(url)
    if found is None:
        return None
    restart = found

    def restart_and_wait() -> None:
        try:
            restart()
        finally:
            wait_until_up(url)

    return restart_and_wait
