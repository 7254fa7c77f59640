"""A user's connection for each accepted driver (and framework) of a backend's database.

Each client opens what an application would hold: a plain driver connection, one from a
pool, a SQLAlchemy ``Session`` or ``Connection`` over a driver. ``conn`` is what the
application passes as ``conn=``; ``commit``/``rollback`` end the application's
transaction; ``execute`` runs the application's own SQL (no parameters, so every driver's
style fits).

A driver that is not installed skips its tests with a reason naming what to install;
``SKIPLOCK_REQUIRE=driver:<name>`` (or ``all``) turns that skip into a failure.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

import skiplock
from skiplock.drivers.url import DatabaseURL, parse_url

#: backend → its database (dialect) name
DATABASE = {
    "postgresql": "postgresql",
    "postgresql18": "postgresql",
    "mariadb": "mysql",
    "mysql": "mysql",
    "mssql": "mssql",
    "mssql_rcsi": "mssql",
}

#: driver requirement name → (module to import, what to install)
DRIVERS: dict[str, tuple[str, str]] = {
    "psycopg": ("psycopg", "pip install 'skiplock[postgresql]'"),
    "psycopg_pool": ("psycopg_pool", "pip install psycopg-pool"),
    "psycopg2": ("psycopg2", "pip install psycopg2-binary"),
    "mysql-connector": ("mysql.connector", "pip install 'skiplock[mysql]'"),
    "mysql-connector-cext": (
        "_mysql_connector",
        "a mysql-connector-python release whose C extension loads here (9.x on Debian 12)",
    ),
    "pymysql": ("pymysql", "pip install PyMySQL"),
    "mysqlclient": (
        "MySQLdb",
        "apt-get install libmariadb-dev pkg-config && pip install mysqlclient",
    ),
    "pymssql": ("pymssql", "pip install 'skiplock[mssql]'"),
    "pyodbc": ("pyodbc", "apt-get install unixodbc-dev && pip install pyodbc"),
    "sqlalchemy": ("sqlalchemy", "pip install 'skiplock[sqlalchemy]'"),
    "asyncpg": ("asyncpg", "pip install 'skiplock[asyncpg]'"),
    "greenlet": (
        "greenlet",
        "pip install 'skiplock[sqlalchemy]' (SQLAlchemy's asyncio needs greenlet)",
    ),
}


def driver_required(name: str) -> bool:
    names = {n.strip().lower() for n in os.environ.get("SKIPLOCK_REQUIRE", "").split(",")}
    return f"driver:{name}" in names or "all" in names


def need(name: str) -> Any:
    """Import driver *name*'s module, or skip (fail when required) naming what to install."""
    module_name, how = DRIVERS[name]
    try:
        return importlib.import_module(module_name)
    except Exception as exc:
        reason = f"driver {name} is not available ({type(exc).__name__}: {exc}): {how}"
        if driver_required(name):
            pytest.fail(f"required {reason}", pytrace=False)
        pytest.skip(reason)


@dataclass
class Client:
    """One application connection; see the module docstring."""

    name: str
    conn: Any
    commit: Callable[[], None]
    rollback: Callable[[], None]
    execute: Callable[[str], None]
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self.closers):
            with contextlib.suppress(Exception):
                close()


def _cursor_execute(raw: Any) -> Callable[[str], None]:
    def execute(sql: str) -> None:
        cur = raw.cursor()
        try:
            cur.execute(sql)
            if cur.description is not None:
                cur.fetchall()
        finally:
            cur.close()

    return execute


def _plain(name: str, raw: Any) -> Client:
    return Client(name, raw, raw.commit, raw.rollback, _cursor_execute(raw), [raw.close])


def _sqlalchemy_url(u: DatabaseURL, driver: str) -> str:
    auth = "" if u.user is None else quote(u.user, safe="")
    auth += "" if not u.password else ":" + quote(u.password, safe="")
    auth += "@" if auth else ""
    port = "" if u.port is None else f":{u.port}"
    return f"{driver}://{auth}{u.host}{port}/{u.database}"


#: SQLAlchemy driver name → the DB-API driver it loads (skipped like that driver's own client)
_SA_DBAPI = {
    "postgresql+psycopg": "psycopg",
    "postgresql+psycopg2": "psycopg2",
    "mysql+pymysql": "pymysql",
    "mysql+mysqldb": "mysqlclient",
    "mysql+mysqlconnector": "mysql-connector",
}


def _sqlalchemy(name: str, u: DatabaseURL, sa_driver: str, kind: str) -> Client:
    sa = need("sqlalchemy")
    need(_SA_DBAPI[sa_driver])
    from sqlalchemy.orm import Session

    engine = sa.create_engine(_sqlalchemy_url(u, sa_driver), poolclass=sa.pool.NullPool)
    if kind == "session":
        session = Session(engine)

        def run(sql: str) -> None:
            session.execute(sa.text(sql))

        return Client(
            name, session, session.commit, session.rollback, run, [engine.dispose, session.close]
        )
    connection = engine.connect()

    def run_c(sql: str) -> None:
        connection.execute(sa.text(sql))

    return Client(
        name,
        connection,
        connection.commit,
        connection.rollback,
        run_c,
        [engine.dispose, connection.close],
    )


def _pg(u: DatabaseURL) -> dict[str, Any]:
    kw: dict[str, Any] = {"host": u.host, "dbname": u.database}
    if u.port:
        kw["port"] = u.port
    if u.user:
        kw["user"] = u.user
    if u.password:
        kw["password"] = u.password
    return kw


def _my(u: DatabaseURL) -> dict[str, Any]:
    return {
        "host": u.host,
        "port": u.port or 3306,
        "user": u.user or "root",
        "password": u.password or "",
        "database": u.database,
    }


def _psycopg(u: DatabaseURL, **options: Any) -> Any:
    psycopg = need("psycopg")
    return psycopg.connect(**_pg(u), **options)


def _psycopg_dict_row(u: DatabaseURL) -> Any:
    from psycopg.rows import dict_row

    return _psycopg(u, row_factory=dict_row)


def _psycopg_pool(name: str, u: DatabaseURL) -> Client:
    need("psycopg")
    pool_module = need("psycopg_pool")
    from psycopg.conninfo import make_conninfo

    pool = pool_module.ConnectionPool(make_conninfo(**_pg(u)), min_size=1, max_size=2, open=True)
    raw = pool.getconn()
    client = _plain(name, raw)
    client.closers = [pool.close, lambda: pool.putconn(raw)]
    return client


def _mysql_connector(u: DatabaseURL, pure: bool) -> Any:
    need("mysql-connector")
    if not pure:
        need("mysql-connector-cext")
    import mysql.connector

    return mysql.connector.connect(**_my(u), use_pure=pure, autocommit=False)


def _pymysql(u: DatabaseURL) -> Any:
    pymysql = need("pymysql")
    return pymysql.connect(**_my(u), autocommit=False)


def _mysqldb(u: DatabaseURL) -> Any:
    mysqldb = need("mysqlclient")
    kw = _my(u)
    kw["db"] = kw.pop("database")
    kw["passwd"] = kw.pop("password")
    return mysqldb.connect(**kw, autocommit=False, charset="utf8mb4")


#: database → client name → maker(name, url)
CLIENTS: dict[str, dict[str, Callable[[str, DatabaseURL], Client]]] = {
    "postgresql": {
        "psycopg": lambda n, u: _plain(n, _psycopg(u)),
        "psycopg-dict_row": lambda n, u: _plain(n, _psycopg_dict_row(u)),
        "psycopg_pool": _psycopg_pool,
        "psycopg2": lambda n, u: _plain(n, need("psycopg2").connect(**_pg(u))),
        "sqlalchemy-session-psycopg": lambda n, u: _sqlalchemy(
            n, u, "postgresql+psycopg", "session"
        ),
        "sqlalchemy-connection-psycopg2": lambda n, u: _sqlalchemy(
            n, u, "postgresql+psycopg2", "connection"
        ),
    },
    "mysql": {
        "mysql-connector": lambda n, u: _plain(n, _mysql_connector(u, pure=True)),
        "mysql-connector-cext": lambda n, u: _plain(n, _mysql_connector(u, pure=False)),
        "pymysql": lambda n, u: _plain(n, _pymysql(u)),
        "mysqlclient": lambda n, u: _plain(n, _mysqldb(u)),
        "sqlalchemy-session-pymysql": lambda n, u: _sqlalchemy(n, u, "mysql+pymysql", "session"),
        "sqlalchemy-connection-mysqldb": lambda n, u: _sqlalchemy(
            n, u, "mysql+mysqldb", "connection"
        ),
        "sqlalchemy-session-mysqlconnector": lambda n, u: _sqlalchemy(
            n, u, "mysql+mysqlconnector", "session"
        ),
    },
    # pymssql and pyodbc run wherever a SQL Server is up
    "mssql": {
        "pymssql": lambda n, u: _plain(n, _pymssql(u)),
    },
}


def _pymssql(u: DatabaseURL) -> Any:
    pymssql = need("pymssql")
    return pymssql.connect(
        server=u.host,
        port=str(u.port or 1433),
        user=u.user,
        password=u.password,
        database=u.database,
        autocommit=False,
        tds_version="7.4",
    )


def client_pairs(backends: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every (backend, client) pair this session can run, sync and asyncio clients."""
    from .aio_clients import ASYNC_CLIENTS

    return [(b, c) for b in backends for c in [*CLIENTS[DATABASE[b]], *ASYNC_CLIENTS[DATABASE[b]]]]


def is_async(name: str) -> bool:
    """An asyncio client: its test runs on the AsyncQueue."""
    return name.startswith("async-")


def open_client(backend: str, name: str, url: str, loop: Any = None) -> Client:
    if is_async(name):
        from .aio_clients import ASYNC_CLIENTS

        return ASYNC_CLIENTS[DATABASE[backend]][name](name, parse_url(url), loop)
    return CLIENTS[DATABASE[backend]][name](name, parse_url(url))


def queue_database(q: skiplock.Queue) -> str:
    return q.dialect.name


def by_client() -> pytest.MarkDecorator:
    """Parametrise a test (or a module's ``pytestmark``) by every (backend, client) pair."""
    from conftest import BACKENDS

    pairs = client_pairs(BACKENDS)
    return pytest.mark.parametrize(
        ("backend", "client_name"),
        pairs,
        indirect=["backend"],
        ids=[f"{b}-{c}" for b, c in pairs],
        scope="session",
    )
