-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once:
-- a second insert of the same tick waits for the first's transaction, then inserts
-- nothing (0 rows) if it committed.
INSERT INTO "skiplock_jobs_ticks" (schedule, tick) VALUES (%(schedule)s, %(tick)s)
ON CONFLICT (schedule, tick) DO NOTHING
