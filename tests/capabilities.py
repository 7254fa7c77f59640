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

A whole backend can lack a capability too: ``mssql_rcsi`` is skipped, with the reason,
where the server cannot turn ``READ_COMMITTED_SNAPSHOT`` on (see tests/conftest.py).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable

import skiplock

#: how long the probe's second claim may take before it counts as waiting (a claim that
#: skips returns in milliseconds; a loaded machine gets a wide margin)
PROBE_WAIT = 10.0


def claim_waits(holder: skiplock.Queue, other: skiplock.Queue, wait: float) -> str | None:
    """On the installed table of *holder* and *other*, with no jobs yet: None when
    *other*'s claim skips a job *holder*'s open transaction has claimed; otherwise what
    the probe saw (the claim still waiting after *wait* seconds)."""
    ids = holder.enqueue_many(["held", "free"])
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


#: capability name: its probe (None: the server has it; text: why it lacks it)
PROBES: dict[str, Callable[[str], str | None]] = {"skip_locked": probe_skip_locked}

_found: dict[tuple[str, str], str | None] = {}


def lacking(url: str, capability: str) -> str | None:
    """Why the server at *url* lacks *capability* (None: it has it); probed once per
    process and server."""
    if capability not in PROBES:
        raise ValueError(f"unknown capability {capability!r}; known: {sorted(PROBES)}")
    key = (url, capability)
    if key not in _found:
        _found[key] = PROBES[capability](url)
    return _found[key]
