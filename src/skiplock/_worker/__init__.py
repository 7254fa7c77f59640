"""The worker's parts, by role: ``state`` (settings, flags, the jobs it holds, the single lock),
``claiming`` (the producer and wake-ups), ``runners`` (where handlers run, middleware),
``outcomes`` (fenced writes, batched completions), ``lifecycle`` (wiring, signals, and the
threads beside the loop: heartbeat, presence, retention, periodic jobs), ``port`` (what they
ask of the queue).

Lock order: ``OutcomeWriter.writes``, then ``HeldJobs._lock``; the single-worker lock's mutex is
never held with either."""
