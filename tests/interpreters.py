"""Other Python interpreters for the tests that run skiplock on more than one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_python(version: str) -> str | None:
    """The newest Python *version* (``"3.12"``) under ``$PYENV_ROOT`` (or ``~/.pyenv``),
    else ``python<version>`` on PATH, else None."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(
        root.glob(f"versions/{version}.*/bin/python3"),
        key=lambda p: [int(n) for n in p.parts[-3].split(".") if n.isdigit()],
    )
    if found:
        return str(found[-1])
    return shutil.which(f"python{version}")
