"""PostgreSQL URLs that only libpq reads: a socket folder and a multi-host list with
failover, against the real server (PostgreSQL backends only)."""

from __future__ import annotations

import os

import pytest

import skiplock
from skiplock.drivers.url import DatabaseURL, parse_url


def _pg(url: str) -> DatabaseURL:
    u = parse_url(url)
    if u.dialect != "postgresql":
        pytest.skip("libpq URLs are PostgreSQL's")
    return u


def test_a_multi_host_url_fails_over_to_the_host_that_answers(url: str) -> None:
    u = _pg(url)
    if not u.host or u.host.startswith("/") or "," in u.host:
        pytest.skip("the test server is not reached over TCP")
    auth = f"{u.user}@" if u.user else ""
    # 127.0.0.2:1 refuses at once; libpq then tries the next host of the list
    multi = (
        f"postgresql://{auth}127.0.0.2:1,{u.host}:{u.port or 5432}/{u.database}"
        "?target_session_attrs=read-write&connect_timeout=5"
    )
    if u.password:
        pytest.skip("the test server's URL has a password; this test builds its own URL")
    q = skiplock.connect(multi, table="skiplock_probe")
    try:
        assert q.ping().product == "PostgreSQL"
    finally:
        q.close()


def test_a_socket_folder_url(url: str) -> None:
    u = _pg(url)
    folder = "/var/run/postgresql"
    if u.host not in ("127.0.0.1", "localhost") or not os.path.exists(
        f"{folder}/.s.PGSQL.{u.port or 5432}"
    ):
        pytest.skip(f"no local server socket in {folder}")
    auth = f"{u.user}@" if u.user else ""
    q = skiplock.connect(f"postgresql://{auth}/{u.database}?host={folder}&port={u.port or 5432}")
    try:
        assert q.ping().product == "PostgreSQL"
    except skiplock.BackendError as exc:  # the socket's authentication is the server's choice
        pytest.skip(f"the socket refuses this user: {exc}")
    finally:
        q.close()
