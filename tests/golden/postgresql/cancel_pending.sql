-- q.cancel() of a job not yet claimed (pending, scheduled or waiting for its parents):
-- it is never claimed.
UPDATE "skiplock_jobs"
SET status = 'cancelled', cancel_requested = TRUE, lease_until = NULL, finished_at = statement_timestamp()
WHERE id = %(id)s AND status IN ('pending', 'waiting')
