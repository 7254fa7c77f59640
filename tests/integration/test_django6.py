"""Django 6 (its own ``django.tasks``) needs Python 3.12: tests/integration/test_django.py
runs again in a Python 3.12 venv kept in ``.venv-py312`` (git-ignored), against the same
servers.

Python 3.12 is ``$SKIPLOCK_PYTHON312``, else the newest 3.12 under ``$PYENV_ROOT`` (or
``~/.pyenv``), else ``python3.12`` on PATH; without one the test skips, and
``SKIPLOCK_REQUIRE=django6`` (CI) turns that skip into a failure. The venv is built once
and reinstalled only when pyproject.toml or the checkout's folder changes (a stamp file
records them); ``SKIPLOCK_PY312_VENV`` puts it elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BACKENDS as SELECTED
from conftest import backend_url, env_var, required
from interpreters import find_python

ROOT = Path(__file__).resolve().parents[2]
#: CI keeps it outside its fresh clone (SKIPLOCK_PY312_VENV), so that runs share it
VENV = Path(os.environ.get("SKIPLOCK_PY312_VENV") or ROOT / ".venv-py312")
EXTRAS = ".[django,postgresql,mysql,test]"
#: Django's MySQL backend needs mysqlclient (the Django project under test uses it)
ALSO = ("mysqlclient>=2.2.1",)
#: Django's two database backends here (psycopg 3, mysqlclient), one server each: the
#: default Python's run of tests/integration/test_django.py covers every server; this run is about
#: Django 6's framework. SKIPLOCK_DJANGO6_BACKENDS=postgresql,postgresql18,mariadb,mysql
#: runs more.
BACKENDS = tuple(
    os.environ.get("SKIPLOCK_DJANGO6_BACKENDS", "postgresql,mariadb").replace(" ", "").split(",")
)


def python312() -> str | None:
    return os.environ.get("SKIPLOCK_PYTHON312") or find_python("3.12")


def _venv_python(base: str) -> Path:
    """The venv's python, (re)installed when pyproject.toml or the base Python changed."""
    py = VENV / "bin" / "python"
    stamp = VENV / "skiplock-installed"
    want = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes() + f"{base} {ROOT} {ALSO}".encode()
    ).hexdigest()
    if stamp.exists() and py.exists() and stamp.read_text() == want:
        return py
    if not py.exists():
        subprocess.run([base, "-m", "venv", str(VENV)], check=True, timeout=300)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "-e", EXTRAS, *ALSO],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stamp.write_text(want)
    return py


def test_django_6_on_python_312() -> None:
    base = python312()
    if base is None or not Path(base).exists():
        reason = "no Python 3.12 (set SKIPLOCK_PYTHON312, or install 3.12 with pyenv)"
        if required("django6"):
            pytest.fail(f"required django6 unavailable: {reason}", pytrace=False)
        pytest.skip(reason)
    py = _venv_python(base)
    version = subprocess.run(
        [str(py), "-c", "import sys, django; print(sys.version_info[:2], django.VERSION[0])"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert int(version.stdout.split()[-1]) >= 6, version.stdout + version.stderr

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    up = []
    for name in BACKENDS:
        if name not in SELECTED:
            continue
        url = backend_url(name)  # the outer session's servers, the embedded one included
        if url is not None:
            env[env_var(name)] = url
            up.append(name)
    assert up, "no database server is up for the Django 6 run"
    env["SKIPLOCK_BACKENDS"] = ",".join(up)
    done = subprocess.run(
        [
            str(py),
            "-m",
            "pytest",
            "tests/integration/test_django.py",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    tail = "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 0, tail + done.stderr[-3000:]
    sys.stdout.write(tail + "\n")
