"""The worker's parts, around one ledger of held jobs: producer (claim loop), runners, outcome
(fenced writes), completer, heartbeat, wakeup, lifecycle; services/ beside them.

Lock order: ``Outcomes.writes``, then ``Ledger._lock``; the single-worker lock's mutex is never
held with either.

May import: the queue, :mod:`skiplock._core`, :mod:`skiplock.errors`; the database only through
the queue's methods and :mod:`.port`."""
