"""A TCP proxy on the loopback interface that can cut its connections, for outage tests.

The server stays up: :meth:`Proxy.cut` closes every connection through the proxy, and
until :meth:`Proxy.restore` each new one is closed as soon as it is accepted, so the
client's drivers fail at once, as when a network path is cut and reset. At most
``max_connections`` connections at a time; more are refused. :meth:`Proxy.hold_replies`
keeps the server's bytes from the clients (counted in :attr:`Proxy.held`) until
:meth:`Proxy.release_replies`: a client then waits for a reply the server has sent.
:meth:`Proxy.freeze_on` freezes the one connection whose client next sends a given text
(that text is not forwarded, nor anything after it, either way, while both sockets stay
open): the server sees the session idle, as with a client frozen by SIGSTOP or a path
that drops packets.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Proxy"]

_DEFAULT_PORTS = {"postgresql": 5432, "postgres": 5432, "mysql": 3306, "mariadb": 3306}


class Proxy:
    """Forward 127.0.0.1:<port> to the server of *url*; :attr:`url` is *url* through it."""

    def __init__(self, url: str, *, max_connections: int = 64) -> None:
        parts = urlsplit(url)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or _DEFAULT_PORTS[parts.scheme.split("+")[0]]
        self._upstream = (host, port)
        self._max = max_connections
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        auth = parts.netloc.rpartition("@")[0]
        netloc = f"{auth}@" if auth else ""
        netloc += f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.url = urlunsplit(parts._replace(netloc=netloc))
        self._open: set[socket.socket] = set()
        self._mutex = threading.Lock()
        self._cut = False
        self._replies = threading.Event()
        self._replies.set()
        self._freeze_marker: bytes | None = None
        self._hold_after: bytes | None = None
        #: set once a connection was frozen by :meth:`freeze_on`
        self.frozen = threading.Event()
        #: bytes from the server held back since :meth:`hold_replies`
        self.held = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="test-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        """Close every connection now, and each new one until :meth:`restore`."""
        with self._mutex:
            self._cut = True
            doomed, self._open = self._open, set()
        for s in doomed:
            _close(s)

    def hold_replies(self, *, after: bytes | None = None) -> None:
        """From now on the server's bytes wait in the proxy (see :attr:`held`); with
        *after*, from the moment a client sends bytes containing it in any case (its reply
        is held)."""
        with self._mutex:
            self.held = 0
            self._hold_after = after
        if after is None:
            self._replies.clear()

    def _starts_hold(self, data: bytes) -> None:
        with self._mutex:
            if self._hold_after is None or self._hold_after.lower() not in data.lower():
                return
            self._hold_after = None
        self._replies.clear()

    def freeze_on(self, marker: bytes) -> None:
        """Freeze the first connection whose client sends bytes containing *marker*."""
        with self._mutex:
            self._freeze_marker = marker

    def _freezes(self, data: bytes) -> bool:
        with self._mutex:
            if self._freeze_marker is None or self._freeze_marker not in data:
                return False
            self._freeze_marker = None
        self.frozen.set()
        return True

    def release_replies(self) -> None:
        self._replies.set()

    def restore(self) -> None:
        with self._mutex:
            self._cut = False

    def close(self) -> None:
        self._closed.set()
        self._replies.set()
        self._thread.join(5)
        self.cut()
        _close(self._listener)

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._mutex:
                refuse = self._cut or len(self._open) + 2 > 2 * self._max
            if refuse:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._upstream, timeout=10)
            except OSError:
                _close(client)
                continue
            client.settimeout(None)
            server.settimeout(None)
            with self._mutex:
                if self._cut:  # cut while connecting
                    _close(client)
                    _close(server)
                    continue
                self._open.update((client, server))
            for a, b, replies in ((client, server, False), (server, client, True)):
                threading.Thread(target=self._pump, args=(a, b, replies), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool = False) -> None:
        try:
            while data := src.recv(65536):
                if not replies:
                    if self._freezes(data):
                        self._closed.wait()  # until close(): the session stays open, silent
                        break
                    self._starts_hold(data)
                if replies and not self._replies.is_set():
                    with self._mutex:
                        self.held += len(data)
                    self._replies.wait()
                dst.sendall(data)
        except OSError:
            pass
        with self._mutex:
            self._open.discard(src)
            self._open.discard(dst)
        _close(src)
        _close(dst)


def _close(s: socket.socket) -> None:
    with suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        s.close()
