"""skiplock: a job queue that lives in the database you already run.

PostgreSQL, MySQL 8 / MariaDB and SQL Server behind one interface, chosen by URL::

    import skiplock
    q = skiplock.connect("postgresql://app@localhost/app")
    q.install()
    q.enqueue({"to": "ada@example.com"}, queue="email")
    for job in q.claim(queues=["email"], lease=30):
        send(job.payload, idempotency_key=job.idempotency_key)
        q.complete(job)          # raises skiplock.LeaseLost if the job was taken away
"""

from __future__ import annotations

from ._core.job import Job, Snooze, Stats
from ._fleet import Fleet
from ._shell.settings import PoolStats
from .app import App, Task
from .drivers.url import mask_password
from .errors import (
    BackendError,
    Cancelled,
    ConfigurationError,
    Discard,
    JobFailed,
    LeaseLost,
    LockNotAcquired,
    PayloadError,
    PoolTimeout,
    SkiplockError,
    UnsupportedServer,
)
from .maintenance import prune, retry_failed
from .periodic import Schedule
from .queue import Queue, Transaction, backoff, connect
from .queue_async import AsyncQueue, AsyncTransaction, connect_async
from .worker import Worker
from .worker_async import AsyncWorker
from .workflow import Chain, Group, Signature, WorkflowFailed, WorkflowHandle, chain, group

__version__ = "0.1.0"

__all__ = [
    "App",
    "AsyncQueue",
    "AsyncTransaction",
    "AsyncWorker",
    "BackendError",
    "Cancelled",
    "Chain",
    "ConfigurationError",
    "Discard",
    "Fleet",
    "Group",
    "Job",
    "JobFailed",
    "LeaseLost",
    "LockNotAcquired",
    "PayloadError",
    "PoolStats",
    "PoolTimeout",
    "Queue",
    "Schedule",
    "Signature",
    "SkiplockError",
    "Snooze",
    "Stats",
    "Task",
    "Transaction",
    "UnsupportedServer",
    "Worker",
    "WorkflowFailed",
    "WorkflowHandle",
    "__version__",
    "backoff",
    "chain",
    "connect",
    "connect_async",
    "group",
    "mask_password",
    "prune",
    "retry_failed",
]
