"""The one core under :class:`~skiplock.Queue` and :class:`~skiplock.AsyncQueue`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from ..errors import ConfigurationError, LeaseLost
from .checks import (
    ClaimOptions,
    EnqueueOptions,
    ListOptions,
    dumps,
    error_text,
    integer,
    milliseconds,
    queue_names,
    seconds_or_none,
    text,
)
from .claim import ClaimParams, claim_token
from .claim import claim as claim_op
from .job import Claimed, Job, Stats, utc
from .params import (
    JobDependParams,
    JobHeartbeatParams,
    JobInsertManyParams,
    JobInsertParams,
    JobPruneParams,
    JobRetryFailedParams,
    JobSetProgressParams,
    JobSetStateParams,
    JobStatsParams,
    Outcome,
    WorkerRegisterParams,
)
from .read_models import QueueOverview, TickInfo, WorkerInfo, overviews
from .roles import Operations, ServerInfo
from .sql import Op, Row

__all__ = ["Call", "backoff"]

log = logging.getLogger("skiplock")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Call(Generic[T, R]):
    """What a queue method runs: ``make(can_copy)`` builds the operation, ``finish`` the
    value."""

    doing: str
    conn: Any
    make: Callable[[bool], Op[T]] | None
    finish: Callable[[T], R]
    check: bool = True
    #: the operation is one statement, atomic alone: where that costs no round trip, it
    #: runs in autocommit (no BEGIN, no COMMIT), and a connection lost during it is not
    #: retried (whether it committed is unknown)
    one_statement: bool = False


def _same(value: Any) -> Any:
    return value


def backoff(attempt: int, *, base: float = 1.0, cap: float = 3600.0, jitter: float = 0.25) -> float:
    """Seconds before retrying after *attempt* failed: exponential, capped, jittered."""
    delay = min(cap, base * 2.0 ** max(0, min(attempt - 1, 62)))
    return max(0.0, delay * (1.0 + random.uniform(-jitter, jitter)))


def uuid4_batch(n: int) -> list[str]:
    """*n* random UUIDs from one read of the OS's random source."""
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
    d: Operations = q.dialect

    def finish(_: Any) -> None:
        q._schema_ok = False

    def drop() -> Op[None]:
        yield from q.schema.version()  # refuses a table found under another name
        yield from d.schema_uninstall()

    doing = f"dropping table {d.table}"
    return Call(doing, None, lambda _: drop(), finish, False)


def enqueue(d: Operations, payload: Any, options: EnqueueOptions, conn: Any) -> Call[int, int]:
    params = replace(
        options.params(), payload=dumps(payload, "payload"), idempotency_key=str(uuid.uuid4())
    )
    if options.after is not None or options.children:
        return Call("enqueueing", conn, lambda copy: _after_one(d, params, options, copy), _same)
    if options.dedupe_key is None:  # with a key, the key's lock goes first
        alone = options.order_key is None
        return Call("enqueueing", conn, lambda _: d.job_insert(params), _same, one_statement=alone)
    params = replace(params, dedupe_key=options.dedupe_key)
    if options.dedupe_ms or options.debounce_ms is not None:
        controlled = _control(params, options, options.dedupe_key)
        return Call("enqueueing", conn, lambda _: d.job_insert_controlled(controlled), _same)
    return Call("enqueueing", conn, lambda _: d.job_insert_dedupe(params), _same)


def enqueue_many(
    d: Operations,
    payloads: Iterable[Any],
    options: EnqueueOptions,
    conn: Any,
    dedupe_keys: Sequence[str | None] | None = None,
) -> Call[list[int], list[int]]:
    common = options.params()
    texts = [dumps(p, "payload") for p in payloads]
    keys = None if dedupe_keys is None else _item_keys(dedupe_keys, len(texts))
    if not texts:
        return Call("enqueueing", None, None, lambda _: [])
    rows = list(zip(texts, uuid4_batch(len(texts)), strict=True))
    if keys is not None:
        items = []
        for (text, ikey), k in zip(rows, keys, strict=True):
            item = replace(common, payload=text, idempotency_key=ikey, dedupe_key=k)
            items.append(item if k is None else _control(item, options, k))
        return Call("enqueueing", conn, lambda _: d.job_insert_keyed_many(items), _same)

    def make(copy: bool) -> Op[list[int]]:
        # (children: a workflow's step with a step after it)
        many = JobInsertManyParams(common, rows, copy, parents=options.children)
        return _waiting(d, options, d.job_insert_many(many), copy)

    return Call("enqueueing", conn, make, _same)


def _waiting(
    d: Operations, options: EnqueueOptions, insert: Op[list[int]], copy: bool = False
) -> Op[list[int]]:
    """*insert*, its jobs waiting for ``options.after``."""
    if options.after is None:
        return (yield from insert)
    if options.own_parents:
        parents = dict.fromkeys(options.after, "pending")
    else:
        parents = yield from d.job_lock_parents(options.after)
    ids = yield from insert
    yield from d.job_depend(JobDependParams(ids, parents, options.run_after_failure, copy))
    return ids


def _after_one(
    d: Operations, params: JobInsertParams, options: EnqueueOptions, copy: bool
) -> Op[int]:
    [job_id] = yield from _waiting(d, options, _one(d, params, options.children), copy)
    return job_id


def _one(d: Operations, params: JobInsertParams, children: bool) -> Op[list[int]]:
    job_id = yield from d.job_insert(params)
    if children:
        yield from d.job_mark_parents([job_id])
    return [job_id]


def claim(
    d: Operations,
    options: ClaimOptions,
    limits: dict[str, int],
    rates: dict[str, tuple[int, float]],
    conn: Any,
) -> Call[Any, Claimed]:
    per_ms = {name: (k, max(1, round(per * 1000))) for name, (k, per) in rates.items()}

    def make(_: bool) -> Op[Claimed]:
        # A new token for each try: a claim retried after a rollback is another claim.
        p = ClaimParams(options.queues, options.limit, options.lease_ms, claim_token())
        return claim_op(d, p, limits, per_ms)

    return Call("claiming", conn, make, _same)


def _job(job: object) -> Job:
    if not isinstance(job, Job):
        raise ConfigurationError(f"expected a skiplock.Job, not {type(job).__name__}")
    return job


def _outcome(
    d: Operations,
    job: Job,
    doing: str,
    conn: Any,
    after: Callable[[str], R],
    state: JobSetStateParams,
) -> Call[str, R]:
    """Write *job*'s outcome *state* (``Dialect.job_set_state_if_running``); ``LeaseLost``
    when the job is no longer ours."""

    def write(_: bool) -> Op[str]:
        got = yield from d.job_set_state_if_running([state])
        if job.id not in got:
            raise LeaseLost(job_id=job.id, attempt=job.attempt)
        return got[job.id]

    return Call(f"{doing} job {job.id}", conn, write, after)


def _state(job: Job, outcome: Outcome, **extra: Any) -> JobSetStateParams:
    return JobSetStateParams(job.id, job.attempt, job.claim_id, outcome, **extra)


def heartbeat(d: Operations, job: Job, lease: float | None, conn: Any) -> Call[Any, None]:
    job = _job(job)
    if lease is None:
        lease = job.lease if job.lease is not None else 30.0
    params = JobHeartbeatParams(
        job.id, job.attempt, job.claim_id, milliseconds(lease, "lease", low=0.001)
    )

    def finish(row: Any) -> None:
        job.lease_until = utc(row.get("lease_until"))
        job.cancel_requested = job.cancel_requested or bool(row.get("cancel_requested"))

    return Call(f"heartbeat of job {job.id}", conn, lambda _: d.job_heartbeat(params), finish)


def complete(d: Operations, job: Job, result: Any, conn: Any) -> Call[str, None]:
    job = _job(job)
    stored = None if result is None else dumps(result, "result")

    def finish(_: str) -> None:
        job.status, job.result = "done", result

    return _outcome(d, job, "completing", conn, finish, _state(job, "done", result=stored))


def complete_many(
    d: Operations, items: Iterable[Job | tuple[Job, Any]], conn: Any
) -> Call[dict[int, str], list[Job]]:
    jobs = [(item, None) if isinstance(item, Job) else (_job(item[0]), item[1]) for item in items]
    batch = [_state(j, "done", result=None if r is None else dumps(r, "result")) for j, r in jobs]

    def finish(held: dict[int, str]) -> list[Job]:
        lost = []
        for job, result in jobs:
            if job.id in held:
                job.status, job.result = "done", result
            else:
                lost.append(job)
        return lost

    if not jobs:
        return Call("completing jobs", None, None, lambda _: [])
    return Call("completing jobs", conn, lambda _: d.job_set_state_if_running(batch), finish)


def fail(
    d: Operations, job: Job, error: object, retry_in: float | None, final: bool, conn: Any
) -> Call[str, str]:
    job = _job(job)
    message = error_text(error)
    if final or job.attempt >= job.max_attempts:
        state, doing = _state(job, "failed", error=message), "failing"
    else:
        # the back-off counts claims that were not snoozed (a snooze is no failure)
        delay = backoff(job.attempt - job.snoozes) if retry_in is None else retry_in
        delay_ms = milliseconds(delay, "retry_in")
        state, doing = _state(job, "retry", error=message, delay_ms=delay_ms), "retrying"

    def finish(status: str) -> str:
        job.status, job.last_error = status, message
        return status

    return _outcome(d, job, doing, conn, finish, state)


def release(d: Operations, job: Job, conn: Any) -> Call[str, None]:
    job = _job(job)
    return _outcome(d, job, "releasing", conn, _pending(job), _state(job, "release"))


def unclaim(d: Operations, job: Job, conn: Any) -> Call[str, None]:
    """Give back a job of a claim whose COMMIT outcome is unknown; ``LeaseLost`` when that
    claim did not commit."""
    job = _job(job)
    state = _state(job, "unclaim", lease_until=job.lease_until)
    return _outcome(d, job, "giving back", conn, _pending(job), state)


def _pending(job: Job) -> Callable[[str], None]:
    def finish(_: str) -> None:
        job.status = "pending"

    return finish


def cancel(d: Operations, job_id: int, conn: Any) -> Call[str | None, str | None]:
    integer(job_id, "job_id", 1, 2**63 - 1)
    return Call(f"cancelling job {job_id}", conn, lambda _: d.job_cancel(job_id), _same)


def mark_cancelled(d: Operations, job: Job, reason: object, conn: Any) -> Call[str, None]:
    job = _job(job)

    def finish(_: str) -> None:
        job.status = "cancelled"

    state = _state(job, "cancelled", error=error_text(reason))
    return _outcome(d, job, "cancelling", conn, finish, state)


def list_jobs(d: Operations, options: ListOptions, conn: Any) -> Call[Any, list[Job]]:
    params = options.params()

    def finish(rows: Any) -> list[Job]:
        return [Job.from_row(r) for r in rows]

    return Call("listing jobs", conn, lambda _: d.job_list(params), finish)


def get(d: Operations, job_id: int, conn: Any) -> Call[Any, Job | None]:
    integer(job_id, "job_id", 1, 2**63 - 1)

    def finish(row: Any) -> Job | None:
        return None if row is None else Job.from_row(row)

    return Call("reading a job", conn, lambda _: d.job_get(job_id), finish)


def stats(d: Operations, queues: Sequence[str] | str | None, conn: Any) -> Call[Any, Stats]:
    names = None if queues is None else tuple(queue_names(queues))
    params = JobStatsParams(names)

    def finish(found: tuple[Any, set[str]]) -> Stats:
        row, paused = found
        if names is not None:
            paused &= set(names)
        return Stats.from_row(row or {}, tuple(sorted(paused)))

    return Call("reading stats", conn, lambda _: _stats(d, params), finish)


def _stats(d: Operations, params: JobStatsParams) -> Op[tuple[Any, set[str]]]:
    row = yield from d.job_stats(params)
    paused = yield from d.queue_paused_list()
    return row, paused


def ping(q: Any) -> Call[None, ServerInfo]:
    """Reach the server (a connection reads its version); the queue's ``server``."""

    def finish(_: None) -> ServerInfo:
        server: ServerInfo | None = q.server
        assert server is not None
        return server

    return Call("connecting", None, lambda _: nothing(), finish, False)


# ==== pause and rate limits ====


def pause(d: Operations, queue: str, paused: bool, conn: Any) -> Call[None, None]:
    name = text(queue, "queue")
    doing = f"{'pausing' if paused else 'resuming'} queue {name!r}"
    return Call(doing, conn, lambda _: d.queue_pause(name, paused), _same)


def paused(d: Operations, conn: Any) -> Call[set[str], set[str]]:
    return Call("reading the paused queues", conn, lambda _: d.queue_paused_list(), _same)


# -- the live worker list and the dashboard's reads -------------------------------------

#: rows of workers not seen for this long are deleted when a worker registers
FORGET_WORKERS_S = 86400


def register_worker(
    d: Operations,
    worker_id: str,
    host: str,
    pid: int,
    queues: Sequence[str],
    concurrency: int,
    interval: float,
) -> Call[None, None]:
    """A worker's row in the live worker list (written again if it is there)."""
    params = WorkerRegisterParams(
        id=text(worker_id, "worker_id"),
        host=text(host, "host"),
        pid=integer(pid, "pid", 0, 2**31 - 1),
        queues=json.dumps(queue_names(queues)),
        concurrency=integer(concurrency, "concurrency", 1, 2**31 - 1),
        beat_ms=milliseconds(interval, "interval", low=0.001),
        forget_s=FORGET_WORKERS_S,
    )
    doing = f"registering worker {worker_id}"
    return Call(doing, None, lambda _: d.worker_register(params), _none)


def beat_worker(d: Operations, worker_id: str, in_flight: int) -> Call[int, bool]:
    """Refresh a worker's row; False when it is no longer there (forgotten meanwhile)."""
    wid, n = text(worker_id, "worker_id"), integer(in_flight, "in_flight", 0)
    doing = f"refreshing worker {worker_id}"
    return Call(doing, None, lambda _: d.worker_beat(wid, n), lambda n: n > 0)


def unregister_worker(d: Operations, worker_id: str) -> Call[int, None]:
    wid = text(worker_id, "worker_id")
    doing = f"unregistering worker {worker_id}"
    return Call(doing, None, lambda _: d.worker_unregister(wid), _none)


def workers(d: Operations, conn: Any) -> Call[Any, list[WorkerInfo]]:
    def finish(rows: Any) -> list[WorkerInfo]:
        return [WorkerInfo.from_row(r) for r in rows]

    return Call("listing workers", conn, lambda _: d.worker_list(), finish)


def overview(d: Operations, window: float, cap: int, conn: Any) -> Call[Any, list[QueueOverview]]:
    """Every queue's active counts, what finished in the last *window* seconds, and which
    are paused."""
    window_s = max(60, round(milliseconds(window, "window", low=60) / 1000))
    cap = integer(cap, "cap", 1, 10_000_000)

    def op(_: bool) -> Op[tuple[Any, Any, set[str]]]:
        active, recent = yield from d.queue_overview(window_s, cap)
        paused = yield from d.queue_paused_list()
        return active, recent, paused

    def finish(rows: tuple[Any, Any, set[str]]) -> list[QueueOverview]:
        return overviews(rows[0], rows[1], window_s, cap, rows[2])

    return Call("reading the queues' state", conn, op, finish)


def ticks(d: Operations, conn: Any) -> Call[Any, list[TickInfo]]:
    def finish(rows: Any) -> list[TickInfo]:
        return [TickInfo.from_row(r) for r in rows]

    return Call("reading the periodic ledger", conn, lambda _: d.tick_list(), finish)


def _none(_: Any) -> None:
    return None


# -- many jobs at once: retry the failed ones, prune the finished ones -------------------------


def retry_failed(
    d: Operations,
    ids: Sequence[int] | None,
    queues: Sequence[str] | str | None,
    attempts: int | None,
) -> Call[int, int]:
    """Make the failed jobs of *ids* and *queues* (None: all) pending again; how many."""
    params = JobRetryFailedParams(
        ids=None if ids is None else tuple(integer(i, "a job id", 1, 2**63 - 1) for i in ids),
        queues=None if queues is None else tuple(queue_names(queues)),
        attempts=None if attempts is None else integer(attempts, "attempts", 1),
    )
    return Call("retrying jobs", None, lambda _: d.job_retry_failed(params), _same)


def prune_batch(
    d: Operations, statuses: Sequence[str], older_than: float, batch: int
) -> Call[int, int]:
    """Delete up to *batch* jobs finished (in *statuses*) more than *older_than* seconds
    ago; how many. One transaction: the caller runs it again until fewer than *batch*."""
    wanted = list(dict.fromkeys(statuses))
    if not wanted or any(s not in ("done", "failed") for s in wanted):
        raise ConfigurationError(f"statuses must be 'done' and/or 'failed', not {statuses!r:.80}")
    limit = integer(batch, "batch", 1, 1_000_000)
    params = JobPruneParams(tuple(wanted), milliseconds(older_than, "older_than"), limit)
    return Call("pruning jobs", None, lambda _: d.job_prune(params), _same)


# -- job control: snooze, progress, dedupe windows, debounce, wait ----------------------------

#: the largest progress value, as JSON text (a fenced write of the running job)
MAX_PROGRESS = 65_536


def _item_keys(keys: object, n: int) -> list[str | None]:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise ConfigurationError("dedupe_keys must be a list with one key (or None) per payload")
    if len(keys) != n:
        raise ConfigurationError(
            f"dedupe_keys has {len(keys)} keys for {n} payloads: give one each"
        )
    return [None if k is None else text(k, "dedupe_keys item") for k in keys]


def _control(params: JobInsertParams, options: EnqueueOptions, key: str | None) -> JobInsertParams:
    assert key is not None
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    out = replace(params, dedupe_ms=options.dedupe_ms, control_lock=f"skiplock dedupe {digest}")
    if options.debounce_ms is not None:
        out = replace(out, debounce_key=key, dedupe_key=None, delay_ms=options.debounce_ms)
    return out


def snooze(d: Operations, job: Job, seconds: float, max_snoozes: int, conn: Any) -> Call[str, str]:
    job = _job(job)
    cap = integer(max_snoozes, "max_snoozes", 1)
    error = (
        f"snoozed {cap} times (max_snoozes={cap}): it ends failed; pass a larger "
        "max_snoozes to Snooze / snooze(), or let the handler fail"
    )
    delay_ms = milliseconds(seconds, "seconds")
    state = _state(job, "snooze", delay_ms=delay_ms, max_snoozes=cap, error=error)

    def finish(status: str) -> str:
        job.status = status
        if status == "failed":
            job.last_error = error
        else:
            job.snoozes += 1
        return status

    return _outcome(d, job, "snoozing", conn, finish, state)


def set_progress(d: Operations, job: Job, value: Any, conn: Any) -> Call[None, None]:
    job = _job(job)
    stored = dumps(value, "progress")
    if len(stored.encode()) > MAX_PROGRESS:
        raise ConfigurationError(
            f"progress is {len(stored.encode())} bytes of JSON, more than {MAX_PROGRESS}: "
            "store a summary (a count, a percentage), not the data"
        )

    def finish(_: None) -> None:
        job.progress = value

    params = JobSetProgressParams(job.id, job.attempt, job.claim_id, stored)
    doing = f"setting progress of job {job.id}"
    return Call(doing, conn, lambda _: d.job_set_progress(params), finish)


#: the statuses a job ends in (q.wait returns once it has one)
FINISHED = frozenset({"done", "failed", "cancelled"})


def wait_check(job_id: int, timeout: float | None) -> float | None:
    """*timeout* checked (None: no limit)."""
    integer(job_id, "job_id", 1, 2**63 - 1)
    return seconds_or_none(timeout, "timeout")


def wait_look(d: Operations, ids: Sequence[int]) -> Call[Any, dict[int, Job | None]]:
    """``q.wait`` polling: the waited jobs that ended, as read, and None for those gone."""
    wanted = list(ids)

    def look(_: bool) -> Op[tuple[list[Row], list[Row]]]:
        rows = yield from d.job_status_many(wanted)
        ended = [int(r["id"]) for r in rows if str(r["status"]) in FINISHED]
        full = (yield from d.job_get_many(ended)) if ended else []
        return rows, full

    def finish(read: tuple[list[Row], list[Row]]) -> dict[int, Job | None]:
        rows, full = read
        active = {int(r["id"]) for r in rows if str(r["status"]) not in FINISHED}
        out: dict[int, Job | None] = {i: None for i in wanted if i not in active}
        for r in full:
            out[int(r["id"])] = Job.from_row(r)
        return out

    return Call("looking at waited jobs", None, look, finish)


def waited(job_id: int, job: Job | None, timeout: float | None, left: float | None) -> bool:
    """True when *job* has finished. Raises ``ConfigurationError`` for no such job,
    ``TimeoutError`` when no time is *left*."""
    if job is None:
        raise ConfigurationError(
            f"there is no job {job_id} to wait for (check the id; a pruned job is gone)"
        )
    if job.status in FINISHED:
        return True
    if left is not None and left <= 0:
        raise TimeoutError(f"job {job_id} is still {job.status} after {timeout} s")
    return False
