-- The periodic ledger's primary key (schedule, tick) makes a tick's job exactly once.
-- UPDLOCK, HOLDLOCK hold the key range from the check to the insert, so a second insert
-- of the same tick waits, then finds the row and inserts nothing (0 rows).
INSERT INTO [skiplock_jobs_ticks] (schedule, tick)
SELECT %(schedule)s, CAST(%(tick)s AS DATETIME2(6))
WHERE NOT EXISTS (
    SELECT 1 FROM [skiplock_jobs_ticks] WITH (UPDLOCK, HOLDLOCK)
    WHERE schedule = %(schedule)s AND tick = CAST(%(tick)s AS DATETIME2(6)))
