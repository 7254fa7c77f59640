"""The queue's side of the worker's port (:mod:`skiplock._worker.port`): each method one
operation on the queue's session, or on a connection of the worker's own."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from .._core import calls
from .._core.checks import EnqueueOptions
from .._core.job import Job, utc
from .._core.params import JobLiveLeasesParams, JobPruneParams, TickEnqueueParams
from .._core.sql import StatementError
from ..dialects import Dialect
from .session import Session

__all__ = ["Listening", "LockConnection", "Probe", "QueuePort"]

#: the queue's ``claim`` (keywords ``queues``, ``limit``, ``lease``, ``conn``)
Claim = Callable[..., list[Job]]


class QueuePort:
    """What a worker asks of *session*'s database; *claim* claims on a given connection."""

    def __init__(self, session: Session, claim: Claim) -> None:
        self._session = session
        self._claim = claim

    @property
    def _d(self) -> Dialect:
        return self._session.dialect  # (the server's, once a connection has read it)

    # -- run state ------------------------------------------------------------------------

    def released(self) -> int:
        return self._d.released

    def unclaim(self, job: Job) -> None:
        self._session._call(calls.unclaim(self._d, job, None))

    # -- wake-ups -------------------------------------------------------------------------

    @property
    def wakeup(self) -> Literal["notify", "probe", "none"]:
        return self._d.wakeup

    @property
    def wake_marks(self) -> bool:
        return self._d.wake_marks

    def listen(self) -> Listening:
        return Listening(self._d)

    def mark_waiting(self, pid: int, sweep: bool) -> None:
        self._session._run("marking the worker waiting", None, self._d.wake_mark, pid, sweep)

    def enqueuers_settled(self) -> bool:
        return self._session._run("waiting for enqueuers to settle", None, self._d.wake_settled)

    def unmark_waiting(self, pid: int) -> None:
        self._session._run("unmarking the worker", None, self._d.wake_unmark, pid)

    def notify_listeners(self) -> None:
        self._session._run("waking the listener to end", None, self._d.wake_stop)

    def probe(self) -> Probe:
        return Probe(self._d)

    # -- advisory locks, retention --------------------------------------------------------

    def has_locks(self) -> bool:
        return self._d.supports_lock()

    def lock(self, key: int, name: str, what: str) -> LockConnection:
        return LockConnection(self._session, self._claim, key, name, what)

    def running_jobs(self, ended_within: int, limit: int) -> list[tuple[int, int, int | None]]:
        params = JobLiveLeasesParams(ended_within, limit)
        rows = self._session._run("reading the running jobs", None, self._d.job_live_leases, params)
        return [(int(r["id"]), int(r["attempt"]), r.get("claim_id")) for r in rows]

    def prune_finished(self, statuses: Sequence[str], older_ms: int, limit: int) -> int:
        params = JobPruneParams(tuple(statuses), older_ms, limit)
        n: int = self._session._run("pruning finished jobs", None, self._d.job_prune, params)
        return n

    # -- periodic -------------------------------------------------------------------------

    def now(self) -> datetime:
        found = utc(self._session._run("reading the clock", None, self._d.clock_now))
        assert found is not None
        return found

    def last_tick(self, schedule: str) -> datetime | None:
        return utc(self._session._run("reading ticks", None, self._d.tick_last, schedule))

    def enqueue_tick(
        self,
        schedule: str,
        tick: datetime,
        options: EnqueueOptions,
        payload: str,
        keep_from: datetime,
    ) -> int | None:
        job = replace(options.params(), payload=payload, idempotency_key=str(uuid.uuid4()))
        params = TickEnqueueParams(schedule, tick, keep_from, job)
        doing = f"enqueueing tick {tick.isoformat()} of {schedule!r}"
        job_id: int | None = self._session._run(doing, None, self._d.tick_enqueue, params)
        return job_id


class Listening:
    """A LISTEN connection of its own."""

    def __init__(self, d: Dialect) -> None:
        self._d = d
        self._conn = d.wake_listen()
        try:
            self.pid: int = d.wake_listener_pid(self._conn)
        except BaseException:
            self.close()
            raise

    def wait(self, seconds: float, cancels: list[int]) -> bool:
        woken: bool = self._d.wake_wait(self._conn, seconds, cancels)
        return woken

    def close(self) -> None:
        with suppress(Exception):
            self._conn.close()


class Probe:
    """A connection of its own that reads the table's highest id."""

    def __init__(self, d: Dialect) -> None:
        self._d = d
        self._conn = d.wake_probe_connect()

    def read(self) -> object:
        return self._d.wake_probe(self._conn)

    def close(self) -> None:
        with suppress(Exception):
            self._conn.close()


class LockConnection:
    """A session-level advisory lock (*key*, *name*) on a new connection of its own."""

    def __init__(self, session: Session, claim: Claim, key: int, name: str, what: str) -> None:
        self._claim = claim
        self.key, self.name, self.what = key, name, what
        self._conn: Any = session._connect().connection
        self._d = session.dialect  # (after the connection: the server's)

    def closed(self) -> bool:
        return self._d.is_closed(self._conn)

    def node_local(self) -> bool:
        return self._d.lock_is_node_local(self._conn)

    def acquire(self, wait: float) -> bool:
        try:
            return self._d.lock_acquire(self._conn, self.key, self.name, wait)
        except StatementError as exc:
            raise self._d.wrap(exc, f"taking {self.what}") from exc.cause

    def check(self) -> bool:
        return self._d.lock_check(self._conn, self.key, self.name)

    def release(self) -> None:
        self._d.lock_release(self._conn, self.key, self.name)

    def claim(self, queues: Sequence[str], limit: int, lease: float) -> list[Job]:
        return self._claim(queues=queues, limit=limit, lease=lease, conn=self._conn)

    def commit(self, doing: str) -> None:
        try:
            self._conn.commit()
        except self._d.driver_errors() as exc:
            raise self._d.wrap(exc, doing) from exc

    def rollback(self) -> None:
        with suppress(Exception):
            self._conn.rollback()

    def session_id(self) -> int | None:
        session = self._d.session_id(self._conn)
        self._conn.commit()
        return session

    def close(self) -> None:
        with suppress(Exception):
            self._conn.close()
