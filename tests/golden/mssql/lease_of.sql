-- The heartbeat's answer: the new lease, and whether q.cancel() asked the job to stop.
SELECT lease_until, cancel_requested FROM [skiplock_jobs] WHERE id = %(id)s
