-- q.cancel() of a job not yet claimed (pending, scheduled or waiting for its parents):
-- it is never claimed.
UPDATE [skiplock_jobs]
SET status = 'cancelled', cancel_requested = 1, lease_until = NULL, finished_at = SYSUTCDATETIME()
WHERE id = %(id)s AND status IN ('pending', 'waiting')
