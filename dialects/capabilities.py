"""What a dialect can do, fixed once when it is made: :class:`Capabilities`."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["LOCK_STATEMENTS", "Capabilities"]

#: what the single-worker lock (``mode="single"``) runs
LOCK_STATEMENTS = frozenset(
    {"lock_acquire", "lock_check", "lock_release", "live_leases", "session_id", "kill_session"}
)


@dataclass(frozen=True)
class Capabilities:
    """The features a dialect's statements have; each field says which statements."""

    #: one key's jobs claimed in order, its first pending job flagged (``key_next``,
    #: ``key_of``: the key-wait migration)
    key_order: bool = False
    #: flagged heads of keys given back (``key_repair``)
    key_repair: bool = False
    #: MySQL's claim of keyed jobs tries each key's lock first (``key_try``)
    key_try: bool = False
    #: workflows: dependencies marked, settled, their results read (``deps_mark``,
    #: ``deps_children``, ``deps_results``: the workflows migration)
    workflows: bool = False
    #: a prune drops its children's edges (``deps_prune``)
    workflow_prune: bool = False
    #: PostgreSQL writes many edges with COPY (``deps_copy``)
    deps_copy: bool = False
    #: PostgreSQL enqueues many children with COPY (``enqueue_copy_parents``)
    copy_parents: bool = False
    #: paused queues are read (``queues_paused``: the queue-control migration)
    queue_pause: bool = False
    #: a resume wakes idle workers (``resume_notify``)
    resume_notify: bool = False
    #: a prune's last batch forgets old rate records (``rates_forget``)
    rates_forget: bool = False
    #: ``q.wait`` is woken by the job's end (``listen_finished`` and ``wait_mark``)
    finish_notify: bool = False
    #: a parent's end counts the jobs it released for the idle probe (``count_released``)
    release_counter: bool = False
    #: idle workers probe for new jobs (``wake_probe``)
    wake_probe: bool = False
    #: the enqueue trigger notifies only marked waiters (``wake_mark``: schema version 6)
    wake_mark: bool = False
    #: MySQL reads a batch's ids by range (``ids_in_range``)
    ids_in_range: bool = False
    #: the single-worker lock can run (:data:`LOCK_STATEMENTS`)
    single_lock: bool = False

    @classmethod
    def of(cls, statements: Collection[str]) -> Capabilities:
        """The capabilities of a release whose statements are named *statements*."""
        has = set(statements)
        return cls(
            key_order="key_next" in has and "key_of" in has,
            key_repair="key_repair" in has,
            key_try="key_try" in has,
            workflows={"deps_mark", "deps_children", "deps_results"} <= has,
            workflow_prune="deps_prune" in has,
            deps_copy="deps_copy" in has,
            copy_parents="enqueue_copy_parents" in has,
            queue_pause="queues_paused" in has,
            resume_notify="resume_notify" in has,
            rates_forget="rates_forget" in has,
            finish_notify="listen_finished" in has and "wait_mark" in has,
            release_counter="count_released" in has,
            wake_probe="wake_probe" in has,
            wake_mark="wake_mark" in has,
            ids_in_range="ids_in_range" in has,
            single_lock=has >= LOCK_STATEMENTS,
        )
