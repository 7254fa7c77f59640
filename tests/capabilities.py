"""What a server may lack that a test needs, probed on the server, never read from its name.

A server that speaks a database's protocol may not have all of its semantics: Babelfish for
PostgreSQL speaks TDS and runs T-SQL, but it drops the lock hints ``READPAST`` and
``UPDLOCK``, so a claim waits for the rows another transaction holds instead of skipping
them. A test that needs such a capability says so with ``@pytest.mark.requires(NAME)``; on
a backend whose probe finds the capability missing, it is skipped, the reason naming the
capability and what the probe saw. A probe that fails outright fails the tests that need
it (a broken claim is a bug to see, not a capability to skip).

Capabilities (:data:`PROBES`):

- ``skip_locked``: a claim skips the jobs another open transaction has claimed, at once
  (``FOR UPDATE SKIP LOCKED``, ``WITH (READPAST)``).
- ``lock_timeouts``: a connection goes on working after many requests for an advisory lock
  another connection holds were refused (a wait that timed out, or a request that does
  not wait): single-worker mode, the migration lock, the prune lock and capped queues make
  such requests every second while they wait. Babelfish 4.3 ends the whole server (every
  connection) at the fifth refused ``sp_getapplock`` of one session, so its probe runs
  once per test run, before any test uses the server (:data:`EAGER`), and waits for the
  server to come back.

- ``index_names``: the server's catalog lists a table's indexes under the names they were
  created with (SQL Server's ``sys.indexes``; Babelfish 4.3 lists ``<name><table><hash>``).
  The migrations' ``IF [NOT] EXISTS`` guards and the adoption of a table of version 1
  without a version record look indexes up by name.

A whole backend can lack a capability too: ``mssql_rcsi`` is skipped, with the reason,
where the server cannot turn ``READ_COMMITTED_SNAPSHOT`` on (see tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import skiplock

#: how long the probe's second claim may take before it counts as waiting (a claim that
#: skips returns in milliseconds; a loaded machine gets a wide margin)
PROBE_WAIT = 10.0


def claim_waits(holder: skiplock.Queue, other: skiplock.Queue, wait: float) -> str | None:
    """On the installed table of *holder* and *other*, with no jobs yet: None when
    *other*'s claim skips a job *holder*'s open transaction has claimed; otherwise what
    the probe saw (the claim still waiting after *wait* seconds)."""
    ids = [holder.enqueue("held"), holder.enqueue("free")]
    got: list[int] = []
    errors: list[BaseException] = []

    def claim() -> None:
        try:
            got.extend(j.id for j in other.claim(limit=1, lease=60))
        except BaseException as exc:
            errors.append(exc)

    with holder.transaction() as tx:
        [held] = tx.claim(limit=1, lease=60)
        thread = threading.Thread(target=claim, name="capability-probe", daemon=True)
        thread.start()
        thread.join(wait)
        waited = thread.is_alive()
    thread.join(60)  # the holder committed: a waiting claim goes on
    if errors:
        raise errors[0]
    if waited:
        return (
            f"a claim waited more than {wait:.0f} s for the job another open transaction "
            "had claimed, instead of skipping it"
        )
    assert got == [i for i in ids if i != held.id], (got, held.id)
    return None


def probe_skip_locked(url: str) -> str | None:
    """:func:`claim_waits` on a table of its own, dropped afterwards."""
    table = f"skiplock_cap_{os.getpid() % 10000}_{uuid.uuid4().hex[:6]}"
    holder = skiplock.connect(url, table=table)
    other = skiplock.connect(url, table=table)
    try:
        holder.install()
        return claim_waits(holder, other, PROBE_WAIT)
    finally:
        try:
            holder.uninstall()
        finally:
            holder.close()
            other.close()


#: refused lock requests the ``lock_timeouts`` probe makes on one connection (Babelfish 4.3
#: ends the server at the fifth)
LOCK_TRIES = 8


def wait_for_server(url: str, seconds: float = 120.0) -> None:
    """Return once the server at *url* answers again (after a probe brought it down)."""
    end = time.monotonic() + seconds
    while True:
        try:
            q = skiplock.connect(url, table="skiplock_probe")
            try:
                q.ping()
                return
            finally:
                q.close()
        except skiplock.SkiplockError:
            if time.monotonic() > end:
                raise
            time.sleep(1.0)


def probe_lock_timeouts(url: str) -> str | None:
    """One connection holds an advisory lock; another asks for it :data:`LOCK_TRIES` times
    without waiting, then once waiting 0.2 s: None when every request answers "not
    acquired" and the connection still works."""
    q = skiplock.connect(url, table=f"skiplock_cap_{uuid.uuid4().hex[:8]}")
    d = q.dialect
    key, name = 0x5C1 + os.getpid(), f"skiplock capability probe {uuid.uuid4().hex}"
    holder, other = d.connect(), d.connect()
    try:
        assert d.lock_acquire(holder, key, name, 5.0)
        tries = [0.0] * LOCK_TRIES + [0.2]
        for i, wait in enumerate(tries, 1):
            try:
                got = d.lock_acquire(other, key, name, wait)
            except Exception as exc:
                wait_for_server(url)
                return (
                    f"refused lock request {i} of one connection (another connection held "
                    f"the lock) raised {type(exc).__name__}: {str(exc)[:200]}"
                )
            assert not got, "the probe got a lock another connection holds"
        return None
    finally:
        for conn in (holder, other):
            with contextlib.suppress(Exception):  # a connection the server dropped
                conn.close()
        q.close()


def probe_index_names(url: str) -> str | None:
    """Install a table, then read its index names from the server's catalog (the statement
    ``schema_catalog``): None when it lists, under their own names, the indexes version 1
    gave the table and later versions kept (the migrations' guards and the adoption of a
    version-1 table look indexes up by name)."""
    q = skiplock.connect(url, table=f"skiplock_cap_{os.getpid() % 10000}_{uuid.uuid4().hex[:6]}")
    try:
        q.install()
        found = q._run("reading the catalog", None, q.schema.catalog, check=False)["index"]
        _, named = q.schema.v1_shape()
        if named & found:  # (a later version replaced the claim index)
            return None
        return (
            f"the catalog lists none of the index names {', '.join(sorted(named))}, but "
            f"{', '.join(sorted(found))}"
        )
    finally:
        try:
            q.uninstall()
        finally:
            q.close()


#: capability name: its probe (None: the server has it; text: why it lacks it)
PROBES: dict[str, Callable[[str], str | None]] = {
    "skip_locked": probe_skip_locked,
    "lock_timeouts": probe_lock_timeouts,
    "index_names": probe_index_names,
}

#: probes that may bring the server down: run once per test run (all xdist workers
#: together), when a backend is first asked for, before any test uses its server
EAGER = ("lock_timeouts",)

_found: dict[tuple[str, str], str | None] = {}


def lacking(url: str, capability: str) -> str | None:
    """Why the server at *url* lacks *capability* (None: it has it); probed once per
    process and server."""
    if capability not in PROBES:
        raise ValueError(f"unknown capability {capability!r}; known: {sorted(PROBES)}")
    key = (url, capability)
    if key not in _found:
        if capability in EAGER:
            _found[key] = _once_per_run(url, capability)
        else:
            _found[key] = PROBES[capability](url)
    return _found[key]


def _once_per_run(url: str, capability: str) -> str | None:
    """*capability*'s probe, run by one process of this test run (pytest-xdist's workers
    share the answer through a file, the others waiting on its lock meanwhile)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:  # one process: its own memo is enough
        return PROBES[capability](url)
    tag = hashlib.sha256(f"{run} {url} {capability}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"skiplock-capability-{tag}.json"
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            found: str | None = json.loads(path.read_text())["lacking"]
            return found
        found = PROBES[capability](url)
        path.write_text(json.dumps({"lacking": found}))
        return found
