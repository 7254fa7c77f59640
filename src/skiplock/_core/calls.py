"""The one core under :class:`~skiplock.Queue` and :class:`~skiplock.AsyncQueue`.

Each public method of both queues is one line: it hands its arguments to the builder of
the same name here and runs the :class:`Call` it gets back, the sync queue with
``run_sync``, the async one with ``run_async`` (tests/quality/test_async_parity.py checks the
names, the signatures and the one line). A builder checks every argument (so bad input
raises the same error, before any I/O, from both queues; the keywords of enqueue, claim
and list_jobs come checked already, as one frozen object of :mod:`.arguments`), names
what is being done (for error messages) and builds the dialect operation; ``finish``
turns the operation's value into the method's, after the transaction committed (so a job
is marked done only once its completion is durable).
"""

from __future__ import annotations

import logging
import os
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConfigurationError, PayloadError
from .arguments import ClaimOptions, EnqueueOptions, ListOptions
from .checks import dumps, error_text, integer, loads, milliseconds, queue_names
from .job import Job, Stats, utc
from .ops import ROWCOUNT, Op

if TYPE_CHECKING:  # the contract, for the annotations only
    from ..dialects.contract import Dialect, ServerInfo

__all__ = ["Call", "backoff"]

log = logging.getLogger("skiplock")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Call(Generic[T, R]):
    """What a queue method runs: ``make(can_copy)`` builds a fresh operation (again for
    each retry), on the caller's *conn* or on a pooled connection; ``finish`` makes the
    method's value from the operation's. Without ``make`` there is nothing to send (an
    empty batch): ``finish(None)`` is the value, and no connection is used. With ``check``
    the queue first makes sure the table's schema version is current (once per queue)."""

    doing: str
    conn: Any
    make: Callable[[bool], Op[T]] | None
    finish: Callable[[T], R]
    check: bool = True


def _same(value: Any) -> Any:
    return value


def backoff(attempt: int, *, base: float = 1.0, cap: float = 3600.0, jitter: float = 0.25) -> float:
    """Seconds to wait before retrying after *attempt* failed: ``base * 2**(attempt-1)``,
    capped, spread by ±*jitter* so that jobs failing together do not return together."""
    delay = min(cap, base * 2.0 ** max(0, min(attempt - 1, 62)))
    return max(0.0, delay * (1.0 + random.uniform(-jitter, jitter)))


def uuid4_batch(n: int) -> list[str]:
    """*n* random (version 4) UUIDs as text, from one read of the OS's random source:
    ``str(uuid.uuid4())`` costs a system call per key, a third of a bulk enqueue."""
    raw = bytearray(os.urandom(16 * n))
    raw[6::16] = bytes((b & 0x0F) | 0x40 for b in raw[6::16])  # version 4
    raw[8::16] = bytes((b & 0x3F) | 0x80 for b in raw[8::16])  # RFC 4122 variant
    h = raw.hex()
    return [
        f"{h[o : o + 8]}-{h[o + 8 : o + 12]}-{h[o + 12 : o + 16]}-{h[o + 16 : o + 20]}-"
        f"{h[o + 20 : o + 32]}"
        for o in range(0, 32 * n, 32)
    ]


def nothing() -> Op[None]:
    """An operation of no statement (reaching the server is the point)."""
    return
    yield


def schema_version(q: Any, conn: Any = None) -> Call[int, int]:
    """The table's schema version (0: no table); not itself checked."""
    return Call("reading the schema version", conn, lambda _: q.schema.version(), _same, False)


def uninstall(q: Any) -> Call[Any, None]:
    """Drop the table and what belongs to it; the queue checks the schema again next."""
    d: Dialect = q.dialect

    def finish(_: Any) -> None:
        q._schema_ok = False

    doing = f"dropping table {d.table}"
    return Call(doing, None, lambda _: d.statements_op("uninstall"), finish, False)


def enqueue(d: Dialect, payload: Any, options: EnqueueOptions, conn: Any) -> Call[int, int]:
    params = options.params()
    params["payload"] = dumps(payload, "payload")
    params["idempotency_key"] = str(uuid.uuid4())
    if options.after is not None:
        return Call("enqueueing", conn, lambda _: _after_one(d, params, options), _same)
    if options.dedupe_key is None:
        return Call("enqueueing", conn, lambda _: d.insert(params), _same)
    params["dedupe_key"] = options.dedupe_key
    return Call("enqueueing", conn, lambda _: d.insert_dedupe(params), _same)


def enqueue_many(
    d: Dialect, payloads: Iterable[Any], options: EnqueueOptions, conn: Any
) -> Call[list[int], list[int]]:
    common = options.params()
    texts = [dumps(p, "payload") for p in payloads]
    if not texts:
        return Call("enqueueing", None, None, lambda _: [])
    rows = list(zip(texts, uuid4_batch(len(texts)), strict=True))
    if options.after is not None:
        after = options.after

        def make(copy: bool) -> Op[list[int]]:
            return _waiting(d, after, options.run_after_failure, d.insert_many(common, rows, copy))

        return Call("enqueueing", conn, make, _same)
    return Call("enqueueing", conn, lambda copy: d.insert_many(common, rows, copy), _same)


def _waiting(d: Dialect, after: Sequence[int], run: bool, insert: Op[list[int]]) -> Op[list[int]]:
    """*insert*, its jobs waiting for *after*: the parents locked and read first (an
    unknown id raises before anything is written), then the jobs and their edges."""
    parents = yield from d.lock_parents(after)
    ids = yield from insert
    yield from d.depend(ids, parents, run)
    return ids


def _after_one(d: Dialect, params: dict[str, Any], options: EnqueueOptions) -> Op[int]:
    """One job enqueued with ``after`` (see :func:`_waiting`)."""
    assert options.after is not None
    parents = yield from d.lock_parents(options.after)
    job_id = yield from d.insert(params)
    yield from d.depend([job_id], parents, options.run_after_failure)
    return job_id


def claim(
    d: Dialect, options: ClaimOptions, limits: dict[str, int], conn: Any
) -> Call[Any, list[Job]]:
    names, n, lease_ms = options.queues, options.limit, options.lease_ms
    return Call("claiming", conn, lambda _: _claim(d, names, n, lease_ms, limits), _same)


def _claim(
    d: Dialect, names: Sequence[str], n: int, lease_ms: int, limits: dict[str, int]
) -> Op[list[Job]]:
    """The dialect's claim, then the jobs built from its rows (an operation)."""
    # A limited queue is claimed on its own, under its lock (see claim_capped); the
    # others together, in one statement, as ever.
    rows: list[dict[str, Any]] = []
    for name in (m for m in names if m in limits):
        rows += yield from d.claim_capped(name, n - len(rows), lease_ms, limits[name])
    free = [m for m in names if m not in limits]
    if free and len(rows) < n:
        rows += yield from d.claim(free, n - len(rows), lease_ms)
    jobs = []
    parented = []  # jobs enqueued with after=[...] (or not known not to be)
    for row in rows:
        try:
            job = Job.from_row(row)
        except PayloadError as exc:
            # A row written behind our back that no worker could ever decode: it fails
            # alone (fenced, in this transaction) and the batch goes on.
            log.error("job %s: %s; it ends failed", row["id"], exc)
            params = {"id": row["id"], "attempt": row["attempt"], "error": error_text(exc)}
            yield d.stmt("fail", params, ROWCOUNT)
            continue
        job.lease = lease_ms / 1000
        jobs.append(job)
        if row.get("has_parents", True):  # a claim that does not say: ask
            parented.append(job.id)
    if parented:  # jobs enqueued with after=[...]: their parents' results
        stored = yield from d.parent_results(parented)
        for job in jobs:
            if job.id in stored:
                job.parent_results = {p: loads(r, "result") for p, r in stored[job.id].items()}
    return jobs


def _job(job: object) -> Job:
    if not isinstance(job, Job):
        raise ConfigurationError(f"expected a skiplock.Job, not {type(job).__name__}")
    return job


def _fenced(
    d: Dialect,
    job: Job,
    name: str,
    extra: dict[str, Any],
    doing: str,
    conn: Any,
    after: Any,
    ends: bool = False,
) -> Call[None, Any]:
    """The fenced write *name*; when it *ends* the job, the jobs waiting for it are
    released or cancelled in the same transaction (``Dialect.settle``)."""
    params = {"id": job.id, "attempt": job.attempt, **extra}
    if ends:
        return Call(f"{doing} job {job.id}", conn, lambda _: _ended(d, name, params), after)
    return Call(f"{doing} job {job.id}", conn, lambda _: d.fenced(name, params), after)


def _ended(d: Dialect, name: str, params: dict[str, Any]) -> Op[None]:
    if (yield from d.end(name, params)):  # the job has children (has_children)
        yield from d.settle([params["id"]])


def heartbeat(d: Dialect, job: Job, lease: float | None, conn: Any) -> Call[Any, None]:
    job = _job(job)
    if lease is None:
        lease = job.lease if job.lease is not None else 30.0
    params = {
        "id": job.id,
        "attempt": job.attempt,
        "lease_ms": milliseconds(lease, "lease", low=0.001),
    }

    def finish(row: Any) -> None:
        job.lease_until = utc(row.get("lease_until"))
        job.cancel_requested = job.cancel_requested or bool(row.get("cancel_requested"))

    return Call(f"heartbeat of job {job.id}", conn, lambda _: d.heartbeat(params), finish)


def complete(d: Dialect, job: Job, result: Any, conn: Any) -> Call[None, None]:
    job = _job(job)
    stored = None if result is None else dumps(result, "result")

    def finish(_: None) -> None:
        job.status, job.result = "done", result

    return _fenced(d, job, "complete", {"result": stored}, "completing", conn, finish, True)


def complete_many(
    d: Dialect, items: Iterable[Job | tuple[Job, Any]], conn: Any
) -> Call[set[int], list[Job]]:
    jobs = [(item, None) if isinstance(item, Job) else (_job(item[0]), item[1]) for item in items]
    batch = [(j.id, j.attempt, None if r is None else dumps(r, "result")) for j, r in jobs]

    def finish(held: set[int]) -> list[Job]:
        lost = []
        for job, result in jobs:
            if job.id in held:
                job.status, job.result = "done", result
            else:
                lost.append(job)
        return lost

    if not jobs:
        return Call("completing jobs", None, None, lambda _: [])
    return Call("completing jobs", conn, lambda _: d.complete_many(batch), finish)


def fail(
    d: Dialect, job: Job, error: object, retry_in: float | None, final: bool, conn: Any
) -> Call[None, str]:
    job = _job(job)
    message = error_text(error)
    extra: dict[str, Any]
    if final or job.attempt >= job.max_attempts:
        name, extra, doing, status = "fail", {"error": message}, "failing", "failed"
    else:
        delay = backoff(job.attempt) if retry_in is None else retry_in
        name, doing, status = "retry", "retrying", "pending"
        extra = {"error": message, "delay_ms": milliseconds(delay, "retry_in")}

    def finish(_: None) -> str:
        job.status, job.last_error = status, message
        return status

    return _fenced(d, job, name, extra, doing, conn, finish, name == "fail")


def release(d: Dialect, job: Job, conn: Any) -> Call[None, None]:
    job = _job(job)
    return _back_to_pending(d, job, "release", {}, "releasing", conn)


def unclaim(d: Dialect, job: Job, conn: Any) -> Call[None, None]:
    """Give back a job returned by a claim whose COMMIT outcome is unknown, if that claim
    committed (fenced by its attempt and the lease's end it wrote: the dialect's
    ``unclaim``); ``LeaseLost`` when it did not, or the job has moved on since."""
    job = _job(job)
    extra = {"lease_until": job.lease_until}
    return _back_to_pending(d, job, "unclaim", extra, "giving back", conn)


def _back_to_pending(
    d: Dialect, job: Job, name: str, extra: dict[str, Any], doing: str, conn: Any
) -> Call[None, None]:
    """The fenced statement *name* that puts *job* back to pending, and *job* marked so."""

    def finish(_: None) -> None:
        job.status = "pending"

    return _fenced(d, job, name, extra, doing, conn, finish)


def cancel(d: Dialect, job_id: int, conn: Any) -> Call[str | None, str | None]:
    integer(job_id, "job_id", 1, 2**63 - 1)
    return Call(f"cancelling job {job_id}", conn, lambda _: d.cancel(job_id), _same)


def mark_cancelled(d: Dialect, job: Job, reason: object, conn: Any) -> Call[None, None]:
    job = _job(job)

    def finish(_: None) -> None:
        job.status = "cancelled"

    extra = {"error": error_text(reason)}
    return _fenced(d, job, "cancelled", extra, "cancelling", conn, finish, True)


def list_jobs(d: Dialect, options: ListOptions, conn: Any) -> Call[Any, list[Job]]:
    params = options.params()

    def finish(rows: Any) -> list[Job]:
        return [Job.from_row(r) for r in rows]

    return Call("listing jobs", conn, lambda _: d.fetch_op("list_jobs", params), finish)


def get(d: Dialect, job_id: int, conn: Any) -> Call[Any, Job | None]:
    integer(job_id, "job_id", 1, 2**63 - 1)

    def finish(row: Any) -> Job | None:
        return None if row is None else Job.from_row(row)

    return Call("reading a job", conn, lambda _: d.fetch_one_op("get", {"id": job_id}), finish)


def stats(d: Dialect, queues: Sequence[str] | str | None, conn: Any) -> Call[Any, Stats]:
    names = [""] if queues is None else queue_names(queues)
    params = {"all_queues": queues is None, "queues": names}

    def finish(row: Any) -> Stats:
        return Stats.from_row(row or {})

    return Call("reading stats", conn, lambda _: d.fetch_one_op("stats", params), finish)


def ping(q: Any) -> Call[None, ServerInfo]:
    """Reach the server (a connection reads its version); the queue's ``server``."""

    def finish(_: None) -> ServerInfo:
        server: ServerInfo | None = q.server
        assert server is not None
        return server

    return Call("connecting", None, lambda _: nothing(), finish, False)
