"""The worker's parts, around one ledger of held jobs.

=============  ===========================================================  ==========
part           job                                                          thread
=============  ===========================================================  ==========
ledger         held jobs, completions waiting, counts (one lock, no I/O)    any
producer       claim loop, batching/gather, single-mode hand-over           the loop
runners        where handlers run: :class:`~.runners.Runner` (the seam)     runners
outcome        a handler's end -> fenced write, retry, read-back            runners
completer      batched completions, during the next claim                   flush
heartbeat      leases, timeouts, single-lock checks                         heartbeat
wakeup         LISTEN/NOTIFY + waiting marks, or the idle probe             its own
lifecycle      wiring (:class:`~.lifecycle.Crew`), lock, helpers, shutdown  the loop
=============  ===========================================================  ==========

Lock order (a thread holding one may take only those below it):

1. ``Outcomes.writes``: one fenced write at a time (fail, completion batch, heartbeat,
   release, read-back), held across that write's I/O.
2. ``Ledger._lock``: a few dictionary operations; no I/O, no callbacks, nothing else taken.

The single-worker lock's own mutex (:class:`.services.lock.SingleLock`) is held across
the lock connection's I/O (acquire, check, the claim in single mode) and is never held
together with either of the two: the producer and the heartbeat call it with neither
held, and it calls nothing of the worker. The thread runner has no lock (only the
producer's thread touches its counters); flags are :class:`threading.Event` objects.
"""
