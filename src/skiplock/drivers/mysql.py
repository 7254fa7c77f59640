"""MySQL / MariaDB drivers: mysql-connector-python, PyMySQL and mysqlclient, and
``mysql.connector.aio``; skiplock's own connections through mysql-connector-python, its C
extension where it loads.

A connection without ``CLIENT_FOUND_ROWS`` is fine: every fenced UPDATE changes a column
of the row it matches.
"""

from __future__ import annotations

import asyncio
import os
import socket
import weakref
from collections.abc import Mapping, Sequence
from contextlib import suppress
from types import ModuleType
from typing import Any, ClassVar

from skiplock.errors import ConfigurationError

from .._core.sql import NOTHING, ErrorInfo, Statement
from .base import Adapter
from .base_async import AsyncCursorAdapter

__all__ = [
    "ASYNC",
    "TIMEOUTS",
    "AsyncMySQLConnectorAdapter",
    "MySQLConnectorAdapter",
    "MySQLdbAdapter",
    "PyMySQLAdapter",
    "abort_mysql_aio",
    "aio_connect",
    "c_extension_error",
    "connect",
    "connect_async",
    "connect_timeout",
    "driver_name",
    "fileno",
    "is_closed",
    "socket_of",
    "use_pure",
]

#: mysql-connector's text for a connection that is gone, whatever class carries it
_NOT_AVAILABLE = "MySQL Connection not available"


def _causes(exc: BaseException) -> list[BaseException]:
    """The errors *exc* was raised from or during, nearest first."""
    out: list[BaseException] = []
    cur = exc.__cause__ or exc.__context__
    while cur is not None and len(out) < 8 and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _cext_error() -> type[BaseException] | None:
    try:
        from _mysql_connector import MySQLError  # type: ignore[import-not-found]
    except ImportError:
        return None
    return MySQLError  # type: ignore[no-any-return]


def _plain_cursor_class(connection: Any) -> Any:
    """The class of a plain cursor of *connection*, or None if unknown."""
    if getattr(connection, "_buffered", True) or getattr(connection, "_raw", True):
        return None
    from mysql.connector.connection import MySQLConnection
    from mysql.connector.cursor import MySQLCursor

    if type(connection) is MySQLConnection:
        return MySQLCursor
    try:
        from mysql.connector.connection_cext import CMySQLConnection
        from mysql.connector.cursor_cext import CMySQLCursor
    except ImportError:
        return None
    return CMySQLCursor if type(connection) is CMySQLConnection else None


class MySQLConnectorAdapter(Adapter):
    """mysql-connector-python: ``MySQLConnection`` and ``CMySQLConnection``."""

    database: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "mysql-connector"

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        super().__init__(connection, module, owned=owned)
        # The C extension's connection lets its own errors escape unwrapped in places
        # (``commit()`` after the server went away raises ``_mysql_connector.
        # MySQLInterfaceError``, which is no ``mysql.connector.Error``): catch them too.
        cext = _cext_error()
        if cext is not None:
            self.errors = (*self.errors, cext)

    def cursor(self) -> Any:
        # mysql-connector's cursor() pings the server first (COM_PING: one more round
        # trip before every statement; see docs/performance.md). The statement itself
        # reports a connection that is gone, as an error of the same kind.
        conn = self.connection
        plain = _plain_cursor_class(conn)
        if plain is None:
            return conn.cursor(buffered=False, raw=False, dictionary=False)
        conn.handle_unread_result()
        return plain(conn)

    def error_kind(self, exc: BaseException) -> str:
        cext = _cext_error()
        if cext is not None and isinstance(exc, cext):
            return "interface" if type(exc).__name__ == "MySQLInterfaceError" else "other"
        return super().error_kind(exc)

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        errno = getattr(exc, "errno", None)
        return frozenset({errno}) if isinstance(errno, int) and errno > 0 else frozenset()

    def error_info(self, exc: BaseException) -> ErrorInfo:
        """As any adapter's; a lost connection hidden in a ``ProgrammingError`` too."""
        info = super().error_info(exc)
        if info.kind in ("operational", "interface") or info.number() >= 1000:
            return info
        for cause in _causes(exc):
            if isinstance(cause, self.errors):
                inner = super().error_info(cause)
                if inner.kind in ("operational", "interface"):
                    return ErrorInfo(inner.codes, inner.kind, info.message)
        if _NOT_AVAILABLE in info.message:
            return ErrorInfo(info.codes, "interface", info.message)
        return info

    def autocommit(self) -> bool:
        # in_transaction is read from the server's status flags; the autocommit property
        # asks the server, so it is asked only outside a transaction.
        if self.connection.in_transaction:
            return False
        return bool(self.connection.autocommit)


class PyMySQLAdapter(Adapter):
    """PyMySQL (``pymysql.connections.Connection``, any cursor class)."""

    database: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "pymysql"

    def cursor(self) -> Any:
        return self.connection.cursor(self.module.cursors.Cursor)

    def autocommit(self) -> bool:
        return bool(self.connection.get_autocommit())


class MySQLdbAdapter(PyMySQLAdapter):
    """mysqlclient (``MySQLdb.connections.Connection``, any cursor class)."""

    driver: ClassVar[str] = "mysqlclient"


# -- asyncio -----------------------------------------------------------------------------


class AsyncMySQLConnectorAdapter(AsyncCursorAdapter):
    """mysql-connector-python's ``mysql.connector.aio`` connection."""

    sync_class: ClassVar[type[Adapter]] = MySQLConnectorAdapter
    driver: ClassVar[str] = "mysql-connector (aio)"

    async def cursor(self) -> Any:
        return await self.connection.cursor(buffered=False, raw=False, dictionary=False)

    def is_closed(self) -> bool:
        # The event loop reads this driver's socket as data comes: a server that closed it
        # (a killed session, a shutdown, an idle timeout) has left EOF, or bytes nobody
        # asked for, in the stream reader of an idle connection.
        reader = getattr(getattr(self.connection, "_socket", None), "_reader", None)
        if reader is None:
            return True
        return bool(reader.at_eof() or getattr(reader, "_buffer", b""))

    async def plain_cursor(self) -> Any:
        return await self.connection.cursor()

    def abort(self) -> None:
        abort_mysql_aio(self.connection)

    async def autocommit(self) -> bool:
        # in_transaction comes from the server's status flags of the last reply; outside a
        # transaction the session's autocommit setting is asked of the server.
        if self.connection.in_transaction:
            return False
        return bool(await self.connection.get_autocommit())


def abort_mysql_aio(connection: Any) -> None:
    """Close a ``mysql.connector.aio`` connection's socket without an await."""
    writer = getattr(getattr(connection, "_socket", None), "_writer", None)
    transport = getattr(writer, "transport", None)
    if transport is not None:
        transport.abort()


# -- skiplock's own connections ----------------------------------------------------------

#: who refuses an option that the AsyncQueue's driver does not apply
ASYNC = "mysql-connector's asyncio driver (AsyncQueue) "
#: the connect timeout's two names (connect_timeout is mysql-connector's alias, read only
#: where connection_timeout is not given)
TIMEOUTS = ("connect_timeout", "connection_timeout")

#: MySQL's performance_schema view first: its information_schema one fails (3854) while any
#: session runs a query with a 4-byte character; MariaDB has only the information_schema one
_PROCESSLISTS = ("performance_schema.processlist", "information_schema.PROCESSLIST")


def c_extension_error(connector: ModuleType) -> str | None:
    """None if the C extension loads, else why not."""
    if getattr(connector, "HAVE_CEXT", False):
        return None
    try:
        import _mysql_connector  # noqa: F401
    except ImportError as exc:
        return str(exc) or type(exc).__name__
    return "mysql.connector.HAVE_CEXT is false"


def use_pure(connector: ModuleType) -> bool:
    return c_extension_error(connector) is not None


def driver_name(connector: ModuleType) -> str:
    """``mysql-connector-python 9.7.0, C extension`` (or ``pure Python``)."""
    version = getattr(connector, "__version__", "?")
    kind = "pure Python" if use_pure(connector) else "C extension"
    return f"mysql-connector-python {version}, {kind}"


def socket_of(conn: Any) -> int | None:
    """The file descriptor of a C-extension connection's socket, or None if unknown."""
    from mysql.connector import Error

    host = ""
    for view in _PROCESSLISTS:
        cur = conn.cursor()
        try:
            # The session's own row: visible without the PROCESS privilege.
            cur.execute(f"SELECT HOST FROM {view} WHERE ID = CONNECTION_ID()")
            row = cur.fetchone()
        except Error:  # not there (MariaDB), or 3854
            row = None
        finally:
            cur.close()
        conn.rollback()
        if row:
            host = str(row[0])
            break
    _, _, port = host.rpartition(":")
    if not port.isdigit() or not os.path.isdir("/proc/self/fd"):
        return None
    found = [fd for fd in _socket_fds() if _local_port(fd) == int(port)]
    return found[0] if len(found) == 1 else None


def _socket_fds() -> list[int]:
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                fds.append(int(name))
        except OSError:  # closed meanwhile
            continue
    return fds


def _local_port(fd: int) -> int | None:
    try:
        copy = os.dup(fd)
    except OSError:
        return None
    try:
        # A duplicate (family detected from it): closing it leaves the driver's alone.
        s = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        return None
    try:
        with s:
            if s.family not in (socket.AF_INET, socket.AF_INET6):
                return None
            name = s.getsockname()
    except OSError:
        return None
    return int(name[1]) if isinstance(name, tuple) and len(name) >= 2 else None


def connect_timeout(options: Mapping[str, Any]) -> int:
    """The URL's ``connect_timeout`` / ``connection_timeout`` in seconds (default 10)."""
    given = {options[k] for k in TIMEOUTS if k in options}
    if len(given) > 1:
        raise ConfigurationError(
            "the URL gives connect_timeout and connection_timeout with different values: "
            "give one (they are the same option)"
        )
    return int(given.pop()) if given else 10


async def aio_connect(connector: ModuleType, kwargs: dict[str, Any]) -> Any:
    try:
        try:
            return await _aio_connect_within(connector, kwargs)
        except TypeError as exc:
            # mysql-connector 26.x's aio connect reads the TLS cipher after the handshake
            # even when the server offered no TLS (MariaDB without ssl) and fails on None.
            # The sync driver goes on in plain text there; so do we.
            if "ssl_disabled" in kwargs or ("cipher" not in str(exc) and "unpack" not in str(exc)):
                raise
            return await _aio_connect_within(connector, {**kwargs, "ssl_disabled": True})
    except AttributeError as exc:  # the aio driver's check of ssl_ca / ssl_cert / ssl_key
        raise ConfigurationError(
            f"{ASYNC}refuses these TLS options: {exc} (ssl_ca needs them too there)"
        ) from None
    except OSError as exc:  # a unix_socket that is not there, a TLS check: the sync 2002
        where = kwargs.get("unix_socket") or f"{kwargs['host']}:{kwargs['port']}"
        raise connector.errors.InterfaceError(
            msg=f"Can't connect to MySQL server on {where} ({exc})", errno=2002
        ) from exc


async def _aio_connect_within(connector: ModuleType, kwargs: dict[str, Any]) -> Any:
    """Connect within the connect timeout, greeting and login included."""
    from mysql.connector import aio

    timeout = kwargs["connection_timeout"]
    conn = aio.MySQLConnection(**{k: v for k, v in kwargs.items() if k != "use_pure"})
    connecting = asyncio.ensure_future(conn.connect())
    try:
        # asyncio.wait, not wait_for: before Python 3.12 wait_for loses a cancel that comes
        # as the connect ends, and the driver bounds only the TCP connect by the timeout
        done, _ = await asyncio.wait((connecting,), timeout=timeout or None)
        if done:
            connecting.result()  # the connect's own error, if it failed
            return conn
    except BaseException:
        _give_up(conn, connecting)
        raise
    _give_up(conn, connecting)
    raise connector.errors.InterfaceError(
        msg=f"Can't connect to MySQL server on {kwargs['host']}:{kwargs['port']} "
        f"(no answer within connect_timeout={timeout} s)",
        errno=2003,
    )


def _give_up(conn: Any, connecting: asyncio.Future[None]) -> None:
    """Close *conn*'s socket now and again when *connecting* ends."""

    def ended(task: asyncio.Future[None]) -> None:
        if not task.cancelled():
            task.exception()
        abort_mysql_aio(conn)

    connecting.cancel()
    abort_mysql_aio(conn)
    connecting.add_done_callback(ended)


#: C-extension connections' sockets (None: not found), kept while the connections live
_SOCKETS: weakref.WeakKeyDictionary[Any, int | None] = weakref.WeakKeyDictionary()


def connect(
    connector: ModuleType,
    kwargs: Mapping[str, Any],
    session: Sequence[str],
    autocommit: bool = False,
) -> Any:
    """A new connection with ``CLIENT_FOUND_ROWS``, *session* run and *autocommit* set."""
    from mysql.connector.constants import ClientFlag

    flags = {"use_pure": use_pure(connector), "client_flags": [ClientFlag.FOUND_ROWS]}
    conn = connector.connect(**{**flags, **kwargs})
    try:
        cur = conn.cursor()
        try:
            for sql in session:
                cur.execute(sql)
        finally:
            cur.close()
        if not hasattr(conn, "_socket"):  # the C extension hides its socket
            _SOCKETS[conn] = socket_of(conn)
        if autocommit:
            conn.autocommit = True
    except BaseException:  # a failure or KeyboardInterrupt: not left open
        with suppress(Exception):
            conn.close()
        raise
    return conn


async def connect_async(
    connector: ModuleType, kwargs: Mapping[str, Any], session: Sequence[str]
) -> AsyncMySQLConnectorAdapter:
    from mysql.connector.constants import ClientFlag

    # the aio API takes the flags as one number, not a list
    flags = {"client_flags": ClientFlag.get_default() | ClientFlag.FOUND_ROWS}
    conn = await aio_connect(connector, {**flags, **kwargs})
    own = AsyncMySQLConnectorAdapter(conn, connector, owned=True)
    try:
        for sql in session:
            await own.execute(Statement(sql, None, NOTHING))
    except BaseException:  # a failure or a cancelled task: not left open
        with suppress(Exception):
            own.abort()
        raise
    return own


def is_closed(conn: Any) -> bool:
    try:
        return not conn.is_connected()
    except Exception:
        return True


def fileno(conn: Any) -> int | None:
    """The socket of *conn* (-1 once closed; None if unknown)."""
    if conn in _SOCKETS:  # C extension: the socket found at connect time
        fd = _SOCKETS[conn]
        return fd if fd is None or conn._cmysql.connected() else -1
    sock = getattr(getattr(conn, "_socket", None), "sock", None)
    return -1 if sock is None else int(sock.fileno())
