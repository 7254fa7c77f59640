"""The examples of docs/application.md, run as written on every backend they name.

Each ``python`` block's first line says where it runs (``# runs on: postgresql, mysql``);
the first block is the set-up the others share.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import skiplock
from skiplock.drivers.url import parse_url

from .clients import DATABASE, need
from .doc_blocks import python_blocks

# the examples name their table (app_jobs), as a user's code would: one xdist worker runs
# every test of both files, so no two of them share it at once (scripts/test -n 4)
pytestmark = pytest.mark.xdist_group("app_jobs")

DOC = Path(__file__).parents[2] / "docs" / "application.md"
SETUP, *EXAMPLES = python_blocks(DOC)


def _sqlalchemy_url(url: str) -> str:
    u = parse_url(url)
    driver = "postgresql+psycopg" if u.dialect == "postgresql" else "mysql+pymysql"
    auth = "" if u.user is None else quote(u.user, safe="")
    auth += "" if not u.password else ":" + quote(u.password, safe="")
    auth += "@" if auth else ""
    port = "" if u.port is None else f":{u.port}"
    return f"{driver}://{auth}{u.host}{port}/{u.database}"


def _drop(url: str) -> None:
    q = skiplock.connect(url, table="app_jobs")
    try:
        with q.transaction() as tx:
            tx.execute("DROP TABLE IF EXISTS app_orders")
        q.uninstall()  # the jobs table and all that belongs to it, its version table too
    finally:
        q.close()


@pytest.fixture
def doc_env(url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    database = DATABASE[backend]
    if database == "mssql":
        pytest.skip("the examples are written for PostgreSQL and MySQL/MariaDB")
    need("sqlalchemy")
    need("psycopg" if database == "postgresql" else "pymysql")
    monkeypatch.setenv("SKIPLOCK_URL", url)
    monkeypatch.setenv("DATABASE_URL", _sqlalchemy_url(url))
    _drop(url)
    yield database
    _drop(url)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"example{i + 1}")
def test_the_example_runs_as_written(doc_env: str, index: int) -> None:
    runs_on, code = EXAMPLES[index]
    if doc_env not in runs_on:
        pytest.skip(f"this example is for {', '.join(sorted(runs_on))}")
    if "psycopg_pool" in code:
        need("psycopg_pool")
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(SETUP[1], f"{DOC.name}:setup", "exec"), namespace)
    # the SQLAlchemy blocks after the first one use its engine
    if "engine" in code and "create_engine" not in code:
        exec(compile(EXAMPLES[0][1], f"{DOC.name}:sqlalchemy", "exec"), namespace)
        _reset(namespace)
    try:
        exec(compile(code, f"{DOC.name}:example{index + 1}", "exec"), namespace)
    finally:
        namespace["q"].close()
        if "engine" in namespace:
            namespace["engine"].dispose()


def _reset(namespace: dict[str, Any]) -> None:
    """Clear the tables between a block and the block that builds on it."""
    with namespace["q"].transaction() as tx:
        tx.execute("DELETE FROM app_orders")
        tx.execute("DELETE FROM app_jobs")
