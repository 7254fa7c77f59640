-- q.cancel() of a running job: its worker sees the request at its next heartbeat.
UPDATE [skiplock_jobs] SET cancel_requested = 1 WHERE id = %(id)s AND status = 'running'
