"""skiplock as a user installs it: the built sdist and wheels hold the whole tree, and the
wheel, installed in a fresh virtual environment of its own, imports every module, runs its
command and its demo, and passes the conformance suite.

An editable install puts a finder on ``sys.meta_path`` that serves any subpackage from the
checkout, so a wheel that lacks one still imports in this process (the in-process wheel test
this replaces passed while the wheel lacked ``skiplock._worker``). So everything about the
installed package runs in a new venv (``python -m venv``, the wheel installed with pip, no
editable install), from a folder outside the checkout, with ``-I`` where the checkout's
folders could reach ``sys.path``; the conformance run proves it tested the installed package
(``SKIPLOCK_TEST_INSTALLED=1``: tests/conftest.py refuses to start on the checkout's).

``SKIPLOCK_TEST_PYTHONS=3.10,3.11,3.12,3.13`` chooses the interpreters (default: only the
one running the tests); one that is missing skips, or fails when ``SKIPLOCK_REQUIRE`` names
it (``python3.10``). Every listed interpreter gets the checks; the conformance runs (see
RUNS) cover each listed interpreter but the running one, whose own suite the rest of the
test run is, and the installed package on PostgreSQL and on MariaDB at least once each.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import _reasons, backend_url, env_var, new_database, required
from integration.test_cli import check_demo
from interpreters import find_python

# one xdist worker runs them all (scripts/test -n 4 --dist loadgroup): the sdist, wheels
# and venvs are built once per session, not once per worker
pytestmark = [pytest.mark.installed, pytest.mark.xdist_group("installed")]

ROOT = Path(__file__).resolve().parents[2]
#: the package's folders and where their files go in the wheel
TREES = {"src/skiplock": "skiplock", "dialects": "skiplock/dialects"}
#: what the venv installs: the extras every module and the conformance suite need (django:
#: skiplock.contrib.django imports it; web: skiplock.web imports Starlette and Jinja2), and
#: the suite's own test dependencies
EXTRAS = "postgresql,mysql,demo,cron,django,prometheus,opentelemetry,web"
TEST_DEPS = ("pytest>=7.4", "hypothesis>=6.80", "opentelemetry-sdk>=1.20")
#: modules the import check leaves out, and why
NOT_IMPORTED = {
    "skiplock.__main__": "runs the command line when imported: `python -m skiplock --version` "
    "runs it instead",
}
RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"
PYTHONS = tuple(
    v.strip() for v in os.environ.get("SKIPLOCK_TEST_PYTHONS", RUNNING).split(",") if v.strip()
)


def _run(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    return done.stdout


def source_files() -> set[str]:
    """Every file git sees under the package's folders (tracked, or new and not ignored),
    as the wheel names it."""
    listed = _ok(
        _run("git", "ls-files", "-co", "--exclude-standard", "--", *TREES, cwd=ROOT)
    ).splitlines()
    found = set()
    for path in listed:
        if not (ROOT / path).is_file():
            continue  # deleted in the work tree, not yet committed
        for tree, target in TREES.items():
            if path.startswith(tree + "/"):
                found.add(target + path[len(tree) :])
    return found


def source_version() -> str:
    tree = ast.parse((ROOT / "src/skiplock/__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__version__":
            return str(ast.literal_eval(node.value))
    raise AssertionError("src/skiplock/__init__.py sets no __version__")


@dataclass(frozen=True)
class Dists:
    sdist: Path
    #: built by ``python -m build`` from the unpacked sdist (what an index would get)
    wheel: Path
    #: built straight from (a clean copy of) the checkout, as ``pip install .`` does
    direct: Path


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and both wheels, built once from a copy of the files git sees, so no
    stale build/ or egg-info folder of the checkout's can change what goes in."""
    top = tmp_path_factory.mktemp("dists")
    copy = top / "skiplock"
    listed = _ok(_run("git", "ls-files", "-co", "--exclude-standard", "-z", cwd=ROOT))
    for name in listed.split("\0"):
        if name and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes((ROOT / name).read_bytes())
    _ok(_run(sys.executable, "-m", "build", "--outdir", top / "index", copy, cwd=top))
    _ok(_run(sys.executable, "-m", "build", "--wheel", "--outdir", top / "direct", copy, cwd=top))
    [sdist] = (top / "index").glob("skiplock-*.tar.gz")
    [wheel] = (top / "index").glob("skiplock-*.whl")
    [direct] = (top / "direct").glob("skiplock-*.whl")
    return Dists(sdist, wheel, direct)


@pytest.mark.parametrize("which", ["wheel", "direct"])
def test_the_wheel_holds_every_file_of_the_tree_and_nothing_else(dists: Dists, which: str) -> None:
    wheel: Path = getattr(dists, which)
    version = source_version()
    names = set(zipfile.ZipFile(wheel).namelist())
    meta = f"skiplock-{version}.dist-info/"
    package = {n for n in names if not n.startswith(meta)}
    want = source_files()
    assert len(want) > 100  # the tree was found
    assert {"skiplock/py.typed", "skiplock/dialects/postgresql.sql"} <= want
    assert "skiplock/dialects/migrations/mysql/0001_initial.sql" in want
    assert "skiplock/contrib/django/migrations/0001_initial.py" in want
    assert package == want, {"missing": sorted(want - package), "stray": sorted(package - want)}
    assert f"{meta}licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{meta}METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "\nRequires-Python: >=3.10\n" in metadata
    pythons = re.findall(
        r"^Classifier: Programming Language :: Python :: (3\.\d+)$", metadata, re.M
    )
    assert pythons == ["3.10", "3.11", "3.12", "3.13"]
    # the pytest plugin (docs/testing-your-code.md) is found by its entry point
    entry_points = zipfile.ZipFile(wheel).read(f"{meta}entry_points.txt").decode()
    assert "[pytest11]\nskiplock = skiplock.testing.plugin" in entry_points, entry_points


def test_the_sdist_holds_the_tree_license_and_changelog(dists: Dists) -> None:
    top = f"skiplock-{source_version()}/"
    with tarfile.open(dists.sdist) as sdist:
        names = {m.name[len(top) :] for m in sdist.getmembers() if m.isfile()}
    for extra in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "setup.py", "PKG-INFO"):
        assert extra in names
    inside = {
        target + name[len(tree) :]
        for name in names
        for tree, target in TREES.items()
        if name.startswith(tree + "/")
    }
    assert inside == source_files()
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith("tests/")]  # all of it or none: none


# -- a fresh venv per interpreter ------------------------------------------------------------


@dataclass(frozen=True)
class Venv:
    version: str
    bin: Path
    #: a folder outside the checkout to run in
    cwd: Path
    env: dict[str, str]

    def run(self, *args: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return _run(self.bin / str(args[0]), *args[1:], cwd=self.cwd, env=self.env, timeout=timeout)


def _clean_env() -> dict[str, str]:
    """This environment without what would reach back into the checkout or this pytest."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_ADDOPTS")
    # this run's choice of tests (scripts/test's quick run or --full phase) is not theirs
    drop += ("SKIPLOCK_TEST_SCOPE", "SKIPLOCK_TEST_PHASE")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _make_venv(version: str, wheel: Path, top: Path) -> Venv | str:
    """A fresh venv of Python *version* with *wheel* installed, or why there is none."""
    base = sys.executable if version == RUNNING else find_python(version)
    if base is None:
        return f"no Python {version} (install it with pyenv, or put python{version} on PATH)"
    env = _clean_env()
    top.mkdir()
    _ok(_run(base, "-m", "venv", top / "venv", cwd=top, env=env))
    bin_ = top / "venv" / "bin"
    _ok(
        _run(
            bin_ / "python", "-m", "pip", "install", "-q", f"{wheel}[{EXTRAS}]", *TEST_DEPS,
            cwd=top, env=env, timeout=1200,
        )
    )  # fmt: skip
    (top / "run").mkdir()
    return Venv(version, bin_, top / "run", env)


@pytest.fixture(scope="session")
def venvs(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Venv | str]:
    """A venv per interpreter of SKIPLOCK_TEST_PYTHONS (or the reason it has none), two
    made at a time."""
    top = tmp_path_factory.mktemp("venvs")
    with ThreadPoolExecutor(2) as pool:
        made = pool.map(lambda v: _make_venv(v, dists.wheel, top / v), PYTHONS)
        return dict(zip(PYTHONS, made, strict=True))


def _present(found: Venv | str, version: str) -> Venv:
    if isinstance(found, str):
        if required(f"python{version}"):
            pytest.fail(f"required python{version} unavailable: {found}", pytrace=False)
        pytest.skip(found)
    return found


@pytest.fixture(params=PYTHONS, ids=lambda v: f"py{v}")
def venv(request: pytest.FixtureRequest, venvs: dict[str, Venv | str]) -> Venv:
    # the conformance runs, when selected, start now and go on while the other checks run
    if any(i.name.startswith(CONFORMANCE + "[") for i in request.session.items):
        request.getfixturevalue("conformance_runs")
    return _present(venvs[request.param], request.param)


#: run in the venv: configure Django (skiplock.contrib.django's models need an app
#: registry), then import every module pkgutil finds in the installed package
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import django
from django.conf import settings
try:
    import django.tasks
    apps = []
except ImportError:
    apps = ["django_tasks"]  # the backport (Django < 6)
settings.configure(INSTALLED_APPS=[*apps, "skiplock.contrib.django"], USE_TZ=True)
django.setup()
import skiplock
names, failed = ["skiplock"], {}
def onerror(name):
    failed[name] = repr(sys.exc_info()[1])
names += [m.name for m in pkgutil.walk_packages(skiplock.__path__, "skiplock.", onerror)]
for name in names:
    if name not in sys.argv[1:]:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed[name] = repr(exc)
print(json.dumps({"file": skiplock.__file__, "names": names, "failed": failed}))
"""


def _modules() -> set[str]:
    """Every module of the source tree, by its installed name."""
    found = set()
    for name in source_files():
        if name.endswith(".py"):
            parts = name[: -len(".py")].split("/")
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_of_the_installed_wheel_imports(venv: Venv) -> None:
    out = _ok(venv.run("python", "-I", "-c", IMPORT_ALL, *NOT_IMPORTED))
    seen = json.loads(out.splitlines()[-1])
    assert seen["file"].startswith(str(venv.bin.parent)), seen["file"]
    assert seen["failed"] == {}
    assert set(seen["names"]) == _modules()  # every module was found, and tried
    assert len(seen["names"]) > 60


def test_the_version_is_the_same_everywhere(venv: Venv) -> None:
    version = source_version()
    assert _ok(venv.run("skiplock", "--version")).strip() == f"skiplock {version}"
    assert _ok(venv.run("python", "-I", "-m", "skiplock", "--version")).strip() == (
        f"skiplock {version}"
    )
    code = "import importlib.metadata as m, skiplock; print(m.version('skiplock'))\n"
    code += "print(skiplock.__version__)"
    assert _ok(venv.run("python", "-I", "-c", code)).split() == [version, version]


MIGRATIONS = ROOT / "dialects" / "migrations"


@pytest.mark.parametrize("dialect", sorted(p.name for p in MIGRATIONS.iterdir()))
def test_every_dialect_loads_its_statements_and_migrations_from_the_wheel(
    venv: Venv, dialect: str
) -> None:
    # `skiplock sql` renders the dialect's statements (each .sql file must hold every
    # required one) and prints every migration's DDL, all read from the installed package
    out = _ok(venv.run("skiplock", "sql", "--dialect", dialect))
    steps = re.findall(r"^-- (\d{4}_\w+): schema version \d+$", out, re.M)
    assert steps == sorted(p.stem for p in (MIGRATIONS / dialect).glob("*.sql"))


def _url(backend: str) -> str:
    url = backend_url(backend)
    if url is None:
        if required(backend):
            pytest.fail(f"required backend unavailable: {_reasons[backend]}", pytrace=False)
        pytest.skip(_reasons[backend])
    return url


def test_the_demo_runs_on_postgresql(venv: Venv) -> None:
    check_demo(venv.run("skiplock", "demo", "--url", _url("postgresql"), timeout=300))


#: the interpreters the conformance runs are for: the listed ones but the running one (the
#: test run around this module is the whole suite on that one, from the checkout), or the
#: running one when it is the only one listed
_OTHERS = [v for v in PYTHONS if v != RUNNING] or list(PYTHONS)
#: the conformance runs: one per interpreter of _OTHERS, the backends taken in turn, and each
#: backend at least once (3.10,3.11,3.12,3.13 run by 3.11: 3.10 on PostgreSQL, 3.12 on
#: MariaDB, 3.13 on PostgreSQL): each interpreter runs the whole suite on the installed
#: package, and the installed package runs it on both dialects that have a server here.
RUN_BACKENDS = ("postgresql", "mariadb")
RUNS = [
    (_OTHERS[i % len(_OTHERS)], RUN_BACKENDS[i % len(RUN_BACKENDS)])
    for i in range(max(len(_OTHERS), len(RUN_BACKENDS)))
]


@dataclass
class Run:
    process: subprocess.Popen[bytes]
    output: Path


@pytest.fixture(scope="session")
def conformance_runs(venvs: dict[str, Venv | str]) -> Iterator[dict[tuple[str, str], Run]]:
    """Every conformance run of RUNS, one pytest process per interpreter and backend, all
    started at once: the suite mostly waits on the database's clock (leases, polls), so the
    runs overlap well, with each other and with the rest of the test run. Each has a
    database of its own on the backend's server: the docs' examples name their tables as a
    user would, so two runs (or a run and this one) in one database could meet on one. A
    run whose interpreter or backend is missing is not started."""
    runs: dict[tuple[str, str], Run] = {}
    with contextlib.ExitStack() as databases:
        for version, backend in RUNS:
            found, server = venvs[version], backend_url(backend)
            if isinstance(found, str) or server is None:
                continue
            url = databases.enter_context(new_database(server, "skiplock_wheel"))
            env = {
                **found.env,
                env_var(backend): url,
                "SKIPLOCK_BACKENDS": backend,
                "SKIPLOCK_REQUIRE": backend,  # the venv has no other driver to require
                "SKIPLOCK_TEST_INSTALLED": "1",
                "SKIPLOCK_RESTART_SERVERS": "0",
            }
            output = found.cwd / f"conformance-{backend}.log"
            with output.open("wb") as out:
                process = subprocess.Popen(
                    [found.bin / "python", "-m", "pytest", ROOT / "tests" / "conformance",
                     "-x", "-p", "no:cacheprovider"],
                    cwd=found.cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True,  # its worker processes are stopped with it
                )  # fmt: skip
            runs[version, backend] = Run(process, output)
        try:
            yield runs
        finally:
            for run in runs.values():
                if run.process.poll() is None:
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()


CONFORMANCE = "test_the_conformance_suite_passes_on_the_installed_package"


@pytest.mark.parametrize(("version", "backend"), RUNS, ids=[f"py{v}-{b}" for v, b in RUNS])
def test_the_conformance_suite_passes_on_the_installed_package(
    venvs: dict[str, Venv | str],
    conformance_runs: dict[tuple[str, str], Run],
    version: str,
    backend: str,
) -> None:
    found = _present(venvs[version], version)
    _url(backend)
    run = conformance_runs[version, backend]
    run.process.wait(timeout=3600)
    out = run.output.read_text(errors="replace")
    header = re.search(r"^skiplock \S+ from (.+)$", out, re.M)
    assert header is not None and header[1].startswith(str(found.bin.parent)), out[:3000]
    failures = out[out.find("= FAILURES =") :][:6000] if "= FAILURES =" in out else ""
    failures += "\n".join(out.splitlines()[-5:])
    assert run.process.returncode == 0, f"{run.output}:\n{failures}"
    summary = out.splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None and int(passed[1]) > 0, summary
    assert not re.search(r"\d+ (failed|errors?)\b", summary), summary
    sys.stdout.write(f"python {version} {backend}: {summary}\n")


def test_the_conformance_suite_refuses_to_test_the_checkout() -> None:
    """The check the installed run relies on can fail: on the checkout's own package
    (``PYTHONPATH=src``) ``SKIPLOCK_TEST_INSTALLED=1`` stops the run before any test."""
    env = {**_clean_env(), "PYTHONPATH": str(ROOT / "src"), "SKIPLOCK_TEST_INSTALLED": "1"}
    done = _run(
        sys.executable, "-m", "pytest", ROOT / "tests" / "conformance", "--collect-only", "-q",
        "-p", "no:cacheprovider", cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "SKIPLOCK_TEST_INSTALLED=1" in done.stderr and str(ROOT / "src") in done.stderr
