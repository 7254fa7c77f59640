"""Queue tables installed ahead of the tests that need them (see ``make_queue`` in
conftest.py).

Installing a queue's table runs every migration: 25-65 ms (MySQL's DDL commits are the
slow ones), and some 600 tests per backend each need a fresh one. Most tests spend their
time waiting (leases, heartbeats, polls), so one thread per backend installs fresh tables
meanwhile, up to ``size`` ahead, and drops the tables of finished tests. A table taken
from the stock was installed by ``Queue.install()`` and never used by anyone since, as if
the test had installed it itself; when the stock is empty the test installs its own.

The thread touches only the tables it installs (``t_ready_<pid>_<n>``) until a test takes
one, and then only once that test has closed its queues and handed the table back.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time

import skiplock

__all__ = ["Stock"]


def _uninstall(url: str, name: str) -> None:
    q = skiplock.connect(url, table=name)
    try:
        q.uninstall()
    finally:
        q.close()


class Stock:
    """Fresh tables on *url*: :meth:`take` one, :meth:`drop_later` it when done,
    :meth:`close` at the end of the session (drops whatever is left)."""

    def __init__(self, url: str, size: int = 16) -> None:
        #: SKIPLOCK_TEST_TABLE_STOCK=0 turns it off: each test installs and drops its own
        self.url, self.size = url, int(os.environ.get("SKIPLOCK_TEST_TABLE_STOCK", size))
        self._names = (f"t_ready_{os.getpid() % 10000}_{n}" for n in itertools.count())
        self._ready: list[str] = []
        self._doomed: list[str] = []
        self._cond = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="table-stock", daemon=True)
        if self.size > 0:
            self._thread.start()

    def take(self) -> str | None:
        """A freshly installed table's name, or None when none is ready."""
        with self._cond:
            name = self._ready.pop(0) if self._ready else None
            self._cond.notify()
            return name

    def drop_later(self, name: str) -> None:
        """Drop table *name* (its queues are closed) on the stock's thread."""
        if self.size <= 0:
            _uninstall(self.url, name)
            return
        with self._cond:
            self._doomed.append(name)
            self._cond.notify()

    def close(self, timeout: float = 60.0) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._cond:
            left, self._ready, self._doomed = self._ready + self._doomed, [], []
        for name in left:
            with contextlib.suppress(Exception):
                _uninstall(self.url, name)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._closing or self._doomed or len(self._ready) < self.size):
                    self._cond.wait()
                if self._closing:
                    return
                install = len(self._ready) < self.size  # tests waiting come first
                name = next(self._names) if install else self._doomed.pop(0)
            try:
                if install:
                    q = skiplock.connect(self.url, table=name)
                    try:
                        q.install()
                    finally:
                        q.close()
                else:
                    _uninstall(self.url, name)
            except Exception:  # e.g. the server restarting (test_restart): try again later
                with self._cond:
                    self._doomed.append(name)  # a half-installed table, or a failed drop
                time.sleep(1.0)
                continue
            if install:
                with self._cond:
                    self._ready.append(name)
