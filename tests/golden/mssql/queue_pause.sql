-- q.pause / q.resume: the queue's flag, its row made the first time. UPDLOCK and
-- SERIALIZABLE hold the key (or the gap where it goes) until the end of the transaction,
-- so two first pauses of a queue cannot both insert. The claim reads the flag: a claim that
-- starts after this commits takes nothing from a paused queue.
UPDATE [skiplock_jobs_queues] WITH (UPDLOCK, SERIALIZABLE)
SET paused = %(paused)s, updated_at = SYSUTCDATETIME()
WHERE queue = %(queue)s;
IF @@ROWCOUNT = 0
INSERT INTO [skiplock_jobs_queues] (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, SYSUTCDATETIME())
