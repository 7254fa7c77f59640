-- On the worker's heartbeat: jobs in flight, and when it was last seen (0 rows: its row
-- was forgotten meanwhile, and the worker writes it again).
UPDATE [skiplock_jobs_workers] SET in_flight = %(in_flight)s, last_seen = SYSUTCDATETIME()
WHERE id = %(id)s
