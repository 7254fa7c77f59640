"""The worker's parts, by role: ``state`` (settings, flags, the jobs it holds), ``claiming``
(the producer and wake-ups), ``runners`` (where handlers run, middleware), ``outcomes`` (fenced
writes, batched completions), ``lifecycle`` (wiring, signals, heartbeat, presence),
``services`` (the single lock, retention, periodic jobs), ``port`` (what they ask of the queue).

Lock order: ``OutcomeWriter.writes``, then ``HeldJobs._lock``; the single-worker lock's mutex is
never held with either."""
