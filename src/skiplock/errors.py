"""Every exception skiplock raises.

::

    SkiplockError
     ├── ConfigurationError     also a ValueError
     ├── UnsupportedServer
     ├── LeaseLost              a fenced write matched no row
     ├── LockNotAcquired
     ├── PayloadError           also a TypeError
     ├── Cancelled              raised in handlers
     ├── Discard                raised by handlers (Snooze too: skiplock.Snooze)
     ├── JobFailed
     └── BackendError           ``retryable``: the same call may succeed again
          └── PoolTimeout

A driver's own exception is kept as ``__cause__``. Messages never contain a password.
Each class's docstring is its default message.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendError",
    "Cancelled",
    "ConfigurationError",
    "Discard",
    "JobFailed",
    "LeaseLost",
    "LockNotAcquired",
    "PayloadError",
    "PoolTimeout",
    "SkiplockError",
    "UnsupportedServer",
]


class SkiplockError(Exception):
    """skiplock failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (type(self).__doc__ or "").strip())


class ConfigurationError(SkiplockError, ValueError):
    """skiplock is configured wrongly: check the URL, the table name and the installed extras."""


class UnsupportedServer(SkiplockError):
    """This database server cannot run skiplock: it needs SKIP LOCKED (PostgreSQL 9.5+,
    MySQL 8.0.1+, MariaDB 10.6+) or READPAST (SQL Server 2016+)."""


class LeaseLost(SkiplockError):
    """The job is no longer held by this worker (its lease expired, or it already finished):
    nothing this write tried counts.
    """

    def __init__(
        self, message: str | None = None, *, job_id: int | None = None, attempt: int | None = None
    ) -> None:
        if message is None and job_id is not None:
            message = (
                f"job {job_id} attempt {attempt} is no longer held by this worker: its lease "
                "expired and it was claimed again, or it already finished; this write was "
                "not applied"
            )
        super().__init__(message)
        self.job_id = job_id
        self.attempt = attempt


class LockNotAcquired(SkiplockError):
    """The single-worker lock is held by another worker; stop that one or wait for it."""


class PayloadError(SkiplockError, TypeError):
    """The payload or result is not JSON: use dicts, lists, strings, numbers (no NaN or
    infinity), booleans and None."""


class Cancelled(SkiplockError):
    """The job was cancelled (q.cancel): stop its work. Raised by a handler, it ends the job
    ``cancelled``.
    """


class Discard(SkiplockError):
    """The job can never succeed. Raised by a handler, it ends the job ``failed`` at once,
    without retries.
    """


class JobFailed(SkiplockError):
    """The job ended failed or cancelled; ``.job`` is its record (``last_error`` says why)."""

    def __init__(self, job: Any) -> None:
        super().__init__(
            f"job {job.id} ended {job.status} after {job.attempt} attempt(s): {job.last_error}"
        )
        self.job = job


class BackendError(SkiplockError):
    """The database failed. If ``retryable`` is true, the same operation may succeed when
    run again (deadlock, lock timeout, lost connection)."""

    def __init__(self, message: str | None = None, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        #: the connection broke; if it broke during COMMIT the outcome is unknown
        self.connection_lost = False


class PoolTimeout(BackendError):
    """No connection of the queue's pool became free within ``pool_timeout`` seconds: raise
    ``max_size`` or ``pool_timeout``, or hold connections for less time. Retryable: nothing
    was sent.
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, retryable=True)
