"""The claim for every database: the statements that take a batch of jobs, and the jobs
built from their rows. A dialect (:class:`ClaimSQL`) gives the statements and the steps
that differ by database; limits, rates, keys and undecodable rows are decided here."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any, Protocol

from ..errors import PayloadError
from .checks import error_text, loads
from .job import Claimed, Job
from .params import JobSetStateParams
from .sql import Op, Row, Statement, Tuples

__all__ = [
    "KEY_RATE_PREFIX",
    "LOCK_BUSY_RETRY",
    "ClaimParams",
    "ClaimSQL",
    "claim",
    "claim_token",
]

log = logging.getLogger("skiplock")

#: seconds after which a claim that found a queue's (or key's) lock held looks again (the
#: other claim commits within milliseconds)
LOCK_BUSY_RETRY = 0.01
#: what a key's rate records in <table>_rates are named by (with its key's SHA-256): a
#: queue name is printable text, so none starts with this control character
KEY_RATE_PREFIX = "\x1fkey "


@dataclass(frozen=True, slots=True)
class ClaimParams:
    """One claim: up to *limit* jobs of *queues*, leased for *lease_ms*, written with the
    claim's token *claim_id*."""

    queues: Sequence[str]
    limit: int
    lease_ms: int
    claim_id: int


class ClaimSQL(Protocol):
    """What the claim asks of a dialect. The methods that return a :class:`Statement` build
    it only; the operations run the steps that differ by database."""

    @property
    def two_step_claim(self) -> bool:
        """No ``UPDATE … RETURNING``: :meth:`claim_pick`, then :meth:`claim_take`."""
        ...

    def claim_one(self, p: ClaimParams) -> Statement:
        """Take up to ``p.limit`` claimable jobs in one statement (``TUPLES``): the rows it
        took (``running``) and those whose spent attempts it ended (``failed``)."""
        ...

    def claim_pick(self, p: ClaimParams) -> Statement:
        """Two-step claim: the claimable rows, locked (``ROWS``, each with ``db_now``)."""
        ...

    def claim_take(
        self, picked: Sequence[tuple[int, int]], lease_until: datetime, claim_id: int
    ) -> Statement:
        """Take the ``(id, attempt)`` rows still at that attempt (``ROWCOUNT``)."""
        ...

    def claim_expire(self, picked: Sequence[tuple[int, int]]) -> Statement:
        """End ``failed`` the ``(id, attempt)`` rows whose attempts are spent (``ROWCOUNT``)."""
        ...

    def claim_which(self, ids: Sequence[int]) -> Statement:
        """The ``id``, ``attempt`` and ``claim_id`` of rows *ids* now (``ROWS``)."""
        ...

    def queue_running(self, queue: str) -> Statement:
        """*queue*'s jobs holding a live lease, as one row's ``n`` (``ROWS``)."""
        ...

    def rate_window(self, name: str, per_ms: int) -> Statement:
        """Claims logged under *name* within *per_ms*: one row of ``used``, ``wait_ms`` (until
        the oldest leaves) and the database's ``now`` (``ROWS``)."""
        ...

    def rate_prune(self, name: str, per_ms: int) -> Statement:
        """Delete *name*'s logged claims that left the window."""
        ...

    def rate_record(self, name: str, n: int) -> Statement:
        """Log *n* claims under *name*, at the database's clock."""
        ...

    def key_admit(self, ids: Sequence[int], claim_id: int, lease_until: datetime) -> Statement:
        """Start the leases of this claim's jobs *ids* at *lease_until*."""
        ...

    def key_defer(self, ids: Sequence[int], claim_id: int, delay_ms: int) -> Statement:
        """Give this claim's jobs *ids* back, due in *delay_ms*."""
        ...

    def repair_keys(self) -> Op[None]:
        """When due, give keys whose head waits their head back (before a claim)."""
        ...

    def try_keys(self, keys: Sequence[str]) -> Op[set[str]]:
        """Two-step claim: the *keys* whose enqueue lock it took without waiting."""
        ...

    def unwait_keys(self, keys: Iterable[str]) -> Op[None]:
        """Each of *keys* (a job of it just taken) has its next job as head."""
        ...

    def lock_queue(self, queue: str) -> Op[bool]:
        """Try *queue*'s claim lock for this transaction; False while another holds it."""
        ...

    def settle(self, ended: Sequence[int]) -> Op[None]:
        """Release or cancel the jobs waiting for the jobs *ended*."""
        ...

    def job_set_state_if_running(self, states: Sequence[JobSetStateParams]) -> Op[dict[int, str]]:
        """Write each outcome, fenced; the status of each job still held."""
        ...

    def parent_results(self, children: Sequence[int]) -> Op[dict[int, dict[int, Any]]]:
        """The parents' stored results of *children*, by child, then parent."""
        ...


def claim_token() -> int:
    """A new claim's token: random in 1 .. 2**63 - 1, from the OS (never the server: a
    failover to a server that never saw a claim cannot hand its token out again)."""
    return (int.from_bytes(os.urandom(8), "big") >> 1) or 1


def claim(
    d: ClaimSQL,
    p: ClaimParams,
    limits: dict[str, int],
    rates: dict[str, tuple[int, int]],
) -> Op[Claimed]:
    """Claim up to ``p.limit`` jobs of ``p.queues``: a queue of *limits* (at most N with a
    live lease) or *rates* (``(N, per_ms)``) alone, under its lock; the others together;
    then a key's rate. ``retry_in`` says when a limit that held the claim back has room."""
    n, lease_ms, token = p.limit, p.lease_ms, p.claim_id
    rows: list[Row] = []
    waits: list[float] = []
    for name in (m for m in p.queues if m in limits or m in rates):
        if len(rows) >= n:
            break
        one = ClaimParams([name], n - len(rows), lease_ms, token)
        if name in rates:
            got, wait = yield from _rated(d, one, limits.get(name), rates[name])
            rows += got
            if wait is not None:
                waits.append(wait)
        else:
            rows += yield from _capped(d, one, limits[name])
    free = [m for m in p.queues if m not in limits and m not in rates]
    if free and not rows:  # the common claim, in the shape the driver reads cheapest
        taken = yield from _take(d, ClaimParams(free, n, lease_ms, token))
        if not isinstance(taken, Tuples):
            rows = taken
        elif not any(v is not None for v in taken.column("key_rate")):
            return (yield from _claimed(d, taken, lease_ms, token, waits))
        else:
            rows = taken.dicts()  # a key's rate to admit, below
    elif free and len(rows) < n:
        rows += yield from _take_dicts(d, ClaimParams(free, n - len(rows), lease_ms, token))
    if any(row.get("key_rate") is not None for row in rows):
        had = len(rows)
        rows = yield from _admit(d, rows, lease_ms, token, waits)
        if free and len(rows) < had:
            # Jobs given back left room: one more claim for it, so that a key's full window
            # does not hold back other keys' jobs (what was given back is not due yet).
            more = yield from _take_dicts(d, ClaimParams(free, had - len(rows), lease_ms, token))
            if any(row.get("key_rate") is not None for row in more):
                more = yield from _admit(d, more, lease_ms, token, waits)
            rows += more
    return (yield from _claimed(d, rows, lease_ms, token, waits))


def _take(d: ClaimSQL, p: ClaimParams) -> Op[list[Row] | Tuples]:
    """The common claim of ``p.queues``: the taken rows in claim order (priority, run_at,
    id); those whose attempts were spent end ``failed`` and their children settle."""
    yield from d.repair_keys()
    if d.two_step_claim:
        return (yield from _pick_and_take(d, p))
    got: Tuples = yield d.claim_one(p)
    rows, names = got.rows, got.names
    if not rows:  # (an adapter that reads dicts knows no column names then)
        return got
    status = names.index("status")
    taken = [r for r in rows if r[status] == "running"]
    # (the taken rows share their new run_at: the order is (priority, id) within one claim)
    taken.sort(key=itemgetter(names.index("priority"), names.index("id")))
    if "order_key" in names:  # the keys it took a job of (their locks held since)
        at = names.index("order_key")
        keys = [str(r[at]) for r in taken if r[at] is not None]
        if keys:
            yield from d.unwait_keys(keys)
    if len(taken) < len(rows):  # jobs ended failed: their waiting children settle
        ended = [
            r
            for r, children in zip(rows, got.column("has_children"), strict=True)
            if r[status] == "failed" and (children or "has_children" not in names)
        ]
        if ended:
            yield from d.settle([int(r[names.index("id")]) for r in ended])
    return Tuples(names, taken)


def _take_dicts(d: ClaimSQL, p: ClaimParams) -> Op[list[Row]]:
    got = yield from _take(d, p)
    return got.dicts() if isinstance(got, Tuples) else got


def _pick_and_take(d: ClaimSQL, p: ClaimParams) -> Op[list[Row]]:
    """MySQL, MariaDB: pick the rows (``SKIP LOCKED``), then take them with a
    compare-and-set on each row's attempt, so the claim stays safe where the pick's lock
    did not hold; only the rows the take changed come back."""
    picked: list[Row] = yield d.claim_pick(p)
    if not picked:
        return []
    keys = {str(r["order_key"]) for r in picked if r.get("order_key") is not None}
    if keys:
        # A keyed job only with its key's enqueue lock, tried without waiting: the jobs of
        # a key a keyed enqueue holds are left (docs/sql.md).
        held = yield from d.try_keys(sorted(keys))
        picked = [r for r in picked if r.get("order_key") is None or r["order_key"] in held]
        if not picked:
            return []
    spent = {
        r["id"] for r in picked if r["status"] == "running" and r["attempt"] >= r["max_attempts"]
    }
    if spent:
        yield d.claim_expire(_pairs(r for r in picked if r["id"] in spent))
        # their waiting children settle (a row the compare-and-set missed has not ended:
        # its children read it as it is)
        yield from d.settle(sorted(int(i) for i in spent))
    taken = [r for r in picked if r["id"] not in spent]
    if not taken:
        return []
    db_now: datetime = picked[0]["db_now"]
    lease_until = db_now + timedelta(milliseconds=p.lease_ms)
    matched: int = yield d.claim_take(_pairs(taken), lease_until, p.claim_id)
    if matched != len(taken):  # another claim read the same rows and took some first
        taken = (yield from _taken(d, taken, matched, p.claim_id)) if matched else []
    yield from d.unwait_keys(str(r["order_key"]) for r in taken if r.get("order_key"))
    # The lease's end made aware once here (the server's clock is UTC), not per job.
    until = _utc(lease_until)
    for r in taken:
        r.pop("db_now", None)
        r.update(
            attempt=r["attempt"] + 1,
            status="running",
            lease_until=until,
            run_at=until,
            finished_at=None,
            claim_id=p.claim_id,
        )
    return taken


def _pairs(rows: Iterable[Row]) -> list[tuple[int, int]]:
    return [(int(r["id"]), int(r["attempt"])) for r in rows]


def _taken(d: ClaimSQL, picked: Sequence[Row], matched: int, claim_id: int) -> Op[list[Row]]:
    """The picked rows this claim's take changed (at the next attempt, with our token),
    when it matched fewer than it named; none unless all *matched* are found."""
    which: list[Row] = yield d.claim_which([r["id"] for r in picked])
    now = {int(r["id"]): r for r in which}
    mine = [
        r
        for r in picked
        if (row := now.get(int(r["id"]))) is not None
        and int(row["attempt"]) == r["attempt"] + 1
        and row.get("claim_id") == claim_id
    ]
    return mine if len(mine) == matched else []


def _capped(d: ClaimSQL, p: ClaimParams, cap: int) -> Op[list[Row]]:
    """Claim from one queue so that at most *cap* of its jobs hold a live lease: under the
    queue's lock (none taken while another claim holds it), counted in a statement of its
    own, so the count cannot be stale."""
    [queue] = p.queues
    if not (yield from d.lock_queue(queue)):
        return []
    room = cap - (yield from _running(d, queue))
    if room <= 0:
        return []
    return (yield from _take_dicts(d, replace(p, limit=min(p.limit, room))))


def _running(d: ClaimSQL, queue: str) -> Op[int]:
    rows: list[Row] = yield d.queue_running(queue)
    return int(rows[0]["n"]) if rows else 0


def _rated(
    d: ClaimSQL, p: ClaimParams, cap: int | None, rate: tuple[int, int]
) -> Op[tuple[list[Row], float | None]]:
    """Claim from one queue so that no window of ``rate[1]`` ms holds more than ``rate[0]``
    of its claims (and, with *cap*, at most *cap* hold a live lease), under its lock; the
    rows and, when the limit held the claim back, the seconds until it has room."""
    [queue] = p.queues
    if not (yield from d.lock_queue(queue)):
        return [], LOCK_BUSY_RETRY
    n, per_ms = rate
    [row] = yield d.rate_window(queue, per_ms)  # an aggregate: always one row
    used = int(row["used"])
    wait = float(row["wait_ms"]) / 1000 if row["wait_ms"] is not None else None
    room = n - used
    if room <= 0:
        return [], max(0.001, wait or 0.0)
    limit = min(p.limit, room)
    if cap is not None:
        limit = min(limit, cap - (yield from _running(d, queue)))
        if limit <= 0:
            return [], None
    rows = yield from _take_dicts(d, replace(p, limit=limit))
    if rows:
        yield d.rate_prune(queue, per_ms)
        yield d.rate_record(queue, len(rows))
    if len(rows) < room or room >= p.limit:
        return rows, None  # the limit did not hold this claim back
    # The window is full now: room again once its oldest claim (or this one) leaves.
    return rows, max(0.001, per_ms / 1000 if wait is None else wait)


def _admit(
    d: ClaimSQL, rows: list[Row], lease_ms: int, token: int, waits: list[float]
) -> Op[list[Row]]:
    """The claimed *rows*, less the jobs of a key with a ``key_rate`` whose window has no
    room: those go back to pending, due when it has (one key at a time, in sorted order;
    the seconds until then added to *waits*). A key's rate is its first job's."""
    keyed: dict[str, list[Row]] = {}
    for row in rows:
        if row.get("key_rate") is not None and row.get("order_key") and row["status"] == "running":
            keyed.setdefault(str(row["order_key"]), []).append(row)
    kept: set[int] = set()
    for key in sorted(keyed):
        group = sorted(keyed[key], key=lambda r: int(r["id"]))
        rate = (int(group[0]["key_rate"]), int(group[0]["key_rate_ms"]))
        admitted, wait = yield from _admit_key(d, key, group, rate, lease_ms, token)
        kept.update(int(r["id"]) for r in admitted)
        if wait is not None:
            waits.append(wait)
    held = {int(r["id"]) for group in keyed.values() for r in group} - kept
    return [row for row in rows if int(row["id"]) not in held]


def _admit_key(
    d: ClaimSQL, key: str, rows: Sequence[Row], rate: tuple[int, int], lease_ms: int, token: int
) -> Op[tuple[list[Row], float | None]]:
    """Admit at most ``rate[0]`` of *key*'s *rows* less those admitted in the last
    ``rate[1]`` ms, under the key's lock (busy: all go back for :data:`LOCK_BUSY_RETRY`),
    and give the others back; the admitted rows and, when some went back, the seconds
    until the key has room (docs/control.md, "Rate limits per key")."""
    name = KEY_RATE_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    ids = [int(r["id"]) for r in rows]
    if not (yield from d.lock_queue(name)):
        yield d.key_defer(ids, token, _ms(LOCK_BUSY_RETRY))
        return [], LOCK_BUSY_RETRY
    n, per_ms = rate
    [row] = yield d.rate_window(name, per_ms)  # an aggregate: always one row
    used = int(row["used"])
    wait = float(row["wait_ms"]) / 1000 if row["wait_ms"] is not None else None
    room = max(0, n - used)
    admitted, held = list(rows[:room]), ids[room:]
    if admitted:
        until = _utc(row["now"]) + timedelta(milliseconds=lease_ms)
        yield d.key_admit(ids[:room], token, until)
        yield d.rate_prune(name, per_ms)
        yield d.rate_record(name, len(admitted))
        for r in admitted:
            r["lease_until"] = r["run_at"] = until
    if not held:
        return admitted, None
    # The window is full: room again once its oldest admission (or this one) leaves it.
    retry = max(0.001, wait if wait is not None and used else per_ms / 1000)
    yield d.key_defer(held, token, _ms(retry))
    return admitted, retry


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _utc(when: datetime) -> datetime:
    """*when* aware: MySQL and SQL Server read the database's clock as naive UTC."""
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _claimed(
    d: ClaimSQL, got: list[Row] | Tuples, lease_ms: int, token: int, waits: list[float]
) -> Op[Claimed]:
    """The jobs built from a claim's rows: a row that cannot be decoded ends failed (the
    batch goes on), and the parents' results of jobs enqueued with ``after`` are read."""
    jobs = Claimed()
    jobs.retry_in = min(waits) if waits else None
    parented = []  # jobs enqueued with after=[...] (or not known not to be)
    items: list[Any]
    read: Callable[[Any], Job]
    names: tuple[str, ...] = ()
    if isinstance(got, Tuples):
        items, names = got.rows, got.names
        read = Job.reader(names) if items else Job.from_row
        # a claim that does not say whether a job has parents: ask
        parents = got.column("has_parents") if "has_parents" in names else [True] * len(items)
    else:
        items = got
        read = Job.from_row
        parents = [row.get("has_parents", True) for row in got]
    lease = lease_ms / 1000
    values: Any
    for values, has_parents in zip(items, parents, strict=True):
        try:
            job = read(values)
        except PayloadError as exc:
            # A row written behind our back that no worker could ever decode: it fails
            # alone (fenced, in this transaction) and the batch goes on.
            row = values if isinstance(values, dict) else dict(zip(names, values, strict=True))
            log.error("job %s: %s; it ends failed", row["id"], exc)
            state = JobSetStateParams(
                int(row["id"]), int(row["attempt"]), token, "failed", error=error_text(exc)
            )
            # (just claimed: ours, fenced all the same; its children settle)
            yield from d.job_set_state_if_running([state])
            continue
        job.lease = lease
        jobs.append(job)
        if has_parents:
            parented.append(job.id)
    if parented:  # jobs enqueued with after=[...]: their parents' results
        stored = yield from d.parent_results(parented)
        for job in jobs:
            if job.id in stored:
                job.parent_results = {p: loads(r, "result") for p, r in stored[job.id].items()}
    return jobs
