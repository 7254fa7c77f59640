"""The code stays ruff and mypy --strict clean, and the wheel carries every dialect."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIALECTS = sorted(p.name for p in (ROOT / "dialects").glob("*.sql"))


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed ([test] extra)")
def test_ruff_is_clean() -> None:
    lint = _run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    result = _run("bash", "scripts/typecheck")
    assert result.returncode == 0, result.stdout + result.stderr


def test_wheel_holds_and_loads_every_dialect(tmp_path: Path) -> None:
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), ".")
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = tmp_path.glob("skiplock-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "skiplock/py.typed" in names
    for sql in DIALECTS:
        assert f"skiplock/dialects/{sql}" in names
    # Load every statement file from the wheel itself (zipimport), not from the checkout.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import skiplock, skiplock.dialects as d;"
        "from skiplock._sql import load_statements;"
        "assert skiplock.__file__.startswith(sys.argv[1]), skiplock.__file__;"
        "from skiplock.dialects.base import Dialect;"
        "[print(f, len(load_statements('skiplock.dialects', f))) for f in sys.argv[2:]];"
        "need = Dialect.REQUIRED_STATEMENTS;"
        "load = lambda f: load_statements('skiplock.dialects', f);"
        "missing = {f: sorted(need - load(f).keys()) for f in sys.argv[2:]};"
        "assert not any(missing.values()), missing;"
        # ...and every dialect's numbered migrations, from the wheel too
        "from skiplock._schema import load_migrations;"
        "from skiplock.dialects import DIALECT_MODULES, get_dialect;"
        "from skiplock._url import parse_url; from skiplock._sql import TableName;"
        "ms = {n: load_migrations(get_dialect(parse_url(n + '://h/db'), TableName.parse('t')))"
        " for n in DIALECT_MODULES};"
        "assert all(len(m) >= 2 and m[0].name == '0001_initial' for m in ms.values()), ms;"
        "print('migrations', *(len(m) for m in ms.values()))"
    )
    loaded = _run(sys.executable, "-I", "-c", code, str(wheel), *DIALECTS, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert len(loaded.stdout.splitlines()) == len(DIALECTS) + 1
    for name in ("postgresql", "mysql", "mssql"):
        assert f"skiplock/dialects/migrations/{name}/0001_initial.sql" in names
