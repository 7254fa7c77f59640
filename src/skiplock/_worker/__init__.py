"""The worker's parts, by role: ``state`` (settings, flags, the jobs it holds), ``claiming``
(the producer and wake-ups), ``runners`` (where handlers run, middleware), ``outcomes`` (fenced
writes, batched completions), ``leases`` (heartbeat, presence), ``lifecycle`` (wiring, signals);
``services/`` beside them.

Lock order: ``OutcomeWriter.writes``, then ``HeldJobs._lock``; the single-worker lock's mutex is
never held with either."""
